"""Private reasoning written inline and host paths, in every family's shape and every
encoding, are removed from published text span by span (every other byte kept); text that
only mentions a tag or looks like a path stays; the publish gate blocks a shape that
survives; trial pages clean them with the same functions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from test_publish_bundle import cands, published_text
from trialkit import healthy_spec

from bf_assets.curate.scan import scan_value
from bf_assets.findings import finding
from bf_assets.pages.evidence import build_window
from bf_assets.pages.lines import TrialFiles
from bf_assets.pages.scrub import Scrub
from bf_assets.publish.bundle import bundle_reviews
from bf_assets.publish.verify import VERDICT_CHECK, verify_bundle, verify_reviews
from bf_assets.redact.clean import CleanStats, clean_document, clean_text, clean_value
from bf_assets.redact.inline_reasoning import (
    COHERE,
    HARMONY,
    KIMI,
    MISTRAL,
    OPEN_THOUGHTS,
    REASONING,
    REFLECTION,
    SEED,
    THINK,
    THINKING,
    THOUGHT,
    strip_inline_reasoning,
)

PRIVATE = "PRIVATE plan: list the files first"  # what no published byte may hold

# (text, what cleaning leaves, the kind counted)
REASONING_SHAPES = [
    (f"<think>\n{PRIVATE}\n</think>\n\nDone.", "\n\nDone.", THINK),
    # DeepSeek-R1 / Qwen3: the template opened the tag, the output starts mid-reasoning
    (f"{PRIVATE}\n</think>\n\nDone.", "\n\nDone.", THINK),
    (f"{PRIVATE}</think>\nDone.", "\nDone.", THINK),
    (f"<THINK>{PRIVATE}</THINK>Done.", "Done.", THINK),
    (f"<thinking>\n{PRIVATE}\n</thinking>\nDone.", "\nDone.", THINKING),
    (f"<reasoning>{PRIVATE}</reasoning>\n<answer>4</answer>", "\n<answer>4</answer>", REASONING),
    (f"<reflection>{PRIVATE}</reflection>\nDone.", "\nDone.", REFLECTION),
    (f"<thought>{PRIVATE}</thought>Done.", "Done.", THOUGHT),
    (f"<THOUGHT>{PRIVATE}</THOUGHT>Done.", "Done.", THOUGHT),
    (f"<Reflection>{PRIVATE}</REFLECTION>Done.", "Done.", REFLECTION),
    (f"◁think▷{PRIVATE}◁/think▷Done.", "Done.", KIMI),
    (f"[THINK]{PRIVATE}[/THINK]Done.", "Done.", MISTRAL),
    (
        f"<|begin_of_thought|>\n\n{PRIVATE}\n\n<|end_of_thought|>\n\n"
        "<|begin_of_solution|>\n\nDone.\n\n<|end_of_solution|>",
        "\n\n<|begin_of_solution|>\n\nDone.\n\n<|end_of_solution|>",
        OPEN_THOUGHTS,
    ),
    (f"<seed:think>{PRIVATE}</seed:think>Done.", "Done.", SEED),
    (f"{PRIVATE}</seed:think>\nDone.", "\nDone.", SEED),
    (
        f"<|START_THINKING|>{PRIVATE}<|END_THINKING|><|START_RESPONSE|>Done.<|END_RESPONSE|>",
        "<|START_RESPONSE|>Done.<|END_RESPONSE|>",
        COHERE,
    ),
    (  # gpt-oss: only the analysis channel is private; final and commentary stay
        f"<|channel|>analysis<|message|>{PRIVATE}<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Done.<|return|>",
        "<|start|>assistant<|channel|>final<|message|>Done.<|return|>",
        HARMONY,
    ),
    (
        f"<|start|>assistant<|channel|>analysis<|message|>{PRIVATE}<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.ls <|constrain|>json"
        '<|message|>{"path": "."}<|call|>',
        '<|start|>assistant<|channel|>commentary to=functions.ls <|constrain|>json<|message|>{"path": "."}<|call|>',
        HARMONY,
    ),
    (  # a built-in tool called from the analysis channel
        f"<|channel|>analysis to=python code<|message|>{PRIVATE}<|call|>then",
        "then",
        HARMONY,
    ),
    (f"analysis{PRIVATE}.assistantfinalDone.", "Done.", HARMONY),  # special tokens skipped
    # JSON-escaped inside a string (a raw body or a log line that is not itself JSON)
    (
        f'resp={{"content": "<think>\\n{PRIVATE}\\n<\\/think>\\n\\nDone."}}',
        'resp={"content": "\\n\\nDone."}',
        THINK,
    ),
    (
        f'log {{\\"content\\": \\"<think>{PRIVATE}</think>Done.\\"}}',
        'log {\\"content\\": \\"Done.\\"}',
        THINK,
    ),
    (f"\\u003cthink\\u003e{PRIVATE}\\u003c/think\\u003eDone.", "Done.", THINK),
    (f"&lt;think&gt;{PRIVATE}&lt;/think&gt;Done.", "Done.", THINK),
    (f"{{'role': 'assistant', 'content': '<think>{PRIVATE}</think>Done.'}}", None, THINK),
    # never closed: the output was cut off mid-reasoning
    (f"<think>\n{PRIVATE}", "", THINK),
    (f'{{"content": "<think>{PRIVATE}", "n": 1}}', '{"content": "", "n": 1}', THINK),
    (f"<|channel|>analysis<|message|>{PRIVATE}", "", HARMONY),
]

# text that mentions a tag and is no reasoning: left byte for byte
REASONING_LOOK_ALIKES = [
    're.sub(r"<think>.*?</think>", "", text, flags=re.S)',
    'answer = text.split("</think>")[-1].strip()',
    's.replace("<think>", "").replace("</think>", "")',
    '{"start": "<think>", "end": "</think>"}',
    '{"pattern": "<think>(.*?)</think>"}',
    "<think>(.*?)</think>",
    "<think>\n\n</think>\n\nQwen3 with thinking off writes an empty block.",
    "The model wraps its reasoning in <think> and </think> tags.",
    "Qwen closes its reasoning with `</think>`\nand then answers.",
    "def end_tag() -> str:\n    return '</think>'\n",
    "analysis of the data shows the assistant final answer",
    "if tok == '[THINK]': state = THINKING  # [/THINK] ends it",
    "<|channel|>commentary<|message|>Listing the files now.<|end|>",
    "<reasoning_effort>high</reasoning_effort>",
]


@pytest.mark.parametrize(("text", "left", "kind"), REASONING_SHAPES)
def test_every_family_s_inline_reasoning_is_removed_span_by_span(
    text: str, left: str | None, kind: str
) -> None:
    counts: Counter[str] = Counter()
    out = strip_inline_reasoning(text, counts)
    assert "PRIVATE" not in out
    if left is not None:
        assert out == left  # the span out, every other byte kept
    assert counts == Counter({kind: 1})
    assert strip_inline_reasoning(out) == out
    # the cleaner does it to any string, and counts it per kind
    stats = CleanStats()
    assert clean_value({"k": text}, stats) == {"k": clean_text(text)[0]}
    assert "PRIVATE" not in clean_text(text)[0]
    assert stats.reasoning == Counter({kind: 1})


@pytest.mark.parametrize("text", REASONING_LOOK_ALIKES)
def test_text_that_mentions_a_tag_stays(text: str) -> None:
    counts: Counter[str] = Counter()
    assert strip_inline_reasoning(text, counts) == text and not counts
    assert not [f for f in scan_value(text, "x") if f.check == "PUBLISH_REASONING"]


def _message_row() -> dict[str, object]:
    """Reasoning where an exported row carries it: assistant content, a raw response body
    held as a JSON string, a tool call's arguments, a step's extras."""
    body = {
        "choices": [{"message": {"role": "assistant", "content": f"<think>{PRIVATE}</think>ok"}}]
    }
    return {
        "messages": [
            {"role": "user", "content": "List the files."},
            {"role": "assistant", "content": f"{PRIVATE}\n</think>\n\nListing them."},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "note",
                            "arguments": json.dumps({"text": f"[THINK]{PRIVATE}[/THINK]saved"}),
                        },
                    }
                ],
            },
        ],
        "trajectory": json.dumps([{"response": json.dumps(body)}]),
        "extra": {"raw": f"<|channel|>analysis<|message|>{PRIVATE}<|end|>"},
    }


def test_reasoning_anywhere_in_a_row_is_removed_and_the_gate_agrees() -> None:
    row = _message_row()
    before = {f.check for f in scan_value(row, "row")}
    assert "PUBLISH_REASONING" in before  # the gate sees every planted span
    stats = CleanStats()
    out = clean_value(row, stats)
    assert PRIVATE not in json.dumps(out)
    assert stats.reasoning == Counter({THINK: 2, MISTRAL: 1, HARMONY: 1})
    assert out["messages"][1]["content"] == "\n\nListing them."
    args = json.loads(out["messages"][2]["tool_calls"][0]["function"]["arguments"])
    assert args == {"text": "saved"}
    assert clean_value(out) == out
    assert not [f for f in scan_value(out, "row") if f.check == "PUBLISH_REASONING"]


# --------------------------------------------------------------------------- host paths

# (text, what cleaning leaves)
HOST_PATH_SHAPES = [
    ("\\\\fileserver\\projects\\q3\\plan.xlsx", "<HOST_PATH>\\q3\\plan.xlsx"),
    ("\\\\fileserver\\home\\alice7\\plan.xlsx", "<HOST_PATH>\\plan.xlsx"),
    ("\\\\\\\\fileserver\\\\share\\\\plan.xlsx", "<HOST_PATH>\\\\plan.xlsx"),  # JSON-escaped
    ("%5C%5Cfileserver%5Cshare%5Cplan.xlsx", "<HOST_PATH>%5Cplan.xlsx"),
    ("\\\\?\\UNC\\fileserver\\share\\plan.xlsx", "<HOST_PATH>\\plan.xlsx"),
    ("\\\\?\\C:\\Users\\alice7\\x", "\\\\?\\<HOME>\\x"),
    ("/c/Users/alice7/proj/a.py", "<HOME>/proj/a.py"),  # Git Bash
    ("/cygdrive/c/Users/alice7/proj", "<HOME>/proj"),
    ("/cygdrive/d/datasets/x.csv", "<HOST_PATH>/datasets/x.csv"),
    ("/export/home/alice7/x", "<HOME>/x"),  # Solaris
    ("/usr/home/alice7/x", "<HOME>/x"),  # FreeBSD
    ("/usr/local/home/alice7/x", "<HOME>/x"),
    ("/nfs/homes/alice7/x", "<HOME>/x"),
    ("/net/nas1/home/alice7/x", "<HOME>/x"),
    ("/mnt/data/users/alice7/x", "<HOME>/x"),
    ("/Volumes/Disk/Users/alice7/x", "<HOME>/x"),
    ("/Volumes/Macintosh HD/Users/alice7/x", "<HOME>/x"),
    ("/Volumes/Backup2/photos", "<HOST_PATH>/photos"),
    ("/var/home/alice7/x", "<HOME>/x"),  # Fedora Silverblue
    ("/homes/alice7/x", "<HOME>/x"),
    ("/home2/alice7/x", "<HOME>/x"),
    ("cd /root && ls", "cd <HOME> && ls"),
    ("cat /root/.bashrc", "cat <HOME>/.bashrc"),
    ("/var/root/x", "<HOME>/x"),  # macOS root
    ("//home/alice7/x", "<HOME>/x"),
    ("/home//alice7/x", "<HOME>/x"),
    ("path=%2Fhome%2Falice7%2Fx", "path=<HOME>%2Fx"),
    ("%252Fhome%252Falice7", "<HOME>"),
    ('"\\u002fhome\\u002falice7\\u002fx"', '"<HOME>\\u002fx"'),
    ("&#47;home&#47;alice7&#47;x", "<HOME>&#47;x"),
    ('p="\\/Users\\/alice7\\/x"', 'p="<HOME>\\/x"'),
    ("C:\\Users\\alice7\\x", "<HOME>\\x"),
    ("c:/users/alice7/x", "<HOME>/x"),
    ("C://Users//alice7//x", "<HOME>//x"),
    ("C:\\\\USERS\\\\alice7\\\\x", "<HOME>\\\\x"),
    ("C%3A%5CUsers%5Calice7%5Cx", "<HOME>%5Cx"),
    ("C:\\cygwin64\\home\\alice7\\x", "<HOME>\\x"),
    ("/mnt/c/Users/alice7/x", "<HOME>/x"),
    ("/mnt/d/games", "<HOST_PATH>/games"),
    ("/media/alice7/USB/x", "<HOST_PATH>/USB/x"),
    ("/run/media/alice7/USB", "<HOST_PATH>/USB"),
    ("/run/user/1000/bus", "<HOST_PATH>/bus"),
    ("/private/var/folders/zz/ab12/T/x", "<TMP>/T/x"),
    ("smb://nas1/share/x", "<HOST_PATH>"),
    ("file%3A%2F%2F%2Fhome%2Falice7", "<FILE_URI>"),
]

HOST_PATH_LOOK_ALIKES = [
    "https://example.com/home/alice7/x",
    "http://home/x",
    "/usr/homebrew/bin/python3",
    "/opt/homebrew",
    "/rooted/x",
    "/root_dir/x",
    "ls /Volumes",
    "ls /Volumes/",
    "home/user/x",
    "./home/user/x",
    "/app/users/views.py",
    "/api/v1/users/42",
    "/data/users.csv",
    "/workspace/src/home/page.tsx",
    "/var/www/home/index.html",
    "/data/home/index.csv",
    "/usr/share/doc/users/guide.txt",
    "/tests/test_outputs.py",
    "escaped \\\\n and \\\\t in text",
    "a\\\\b\\\\c",
    "open('\\\\.\\NUL')",
    "prefix = '\\\\?\\UNC\\'",
    'pattern = re.compile(r"\\\\text\\s*{([^{}]*)}")',
    'text = re.sub(r"\\\\mbox{ ?\\\\boldmath\\$(.*?)\\$}", "", text)',
    "newline = '\\\\n\\u0085'",
    "PATH=/usr/bin:/usr/local/bin",
]


@pytest.mark.parametrize(("text", "left"), HOST_PATH_SHAPES)
def test_every_host_path_spelling_is_replaced_and_nothing_else(text: str, left: str) -> None:
    out, _, paths = clean_text(text)
    assert out == left
    assert "alice7" not in out and sum(paths.values()) >= 1
    assert clean_text(out)[0] == out
    # the publish gate sees it in a published value, and nothing once cleaned
    assert "PUBLISH_HOST_PATH" in {f.check for f in scan_value({"v": text}, "x")}
    assert not scan_value({"v": out}, "x")


@pytest.mark.parametrize("text", HOST_PATH_LOOK_ALIKES)
def test_paths_that_are_not_the_host_s_stay(text: str) -> None:
    out, _, paths = clean_text(text)
    assert out == text and not paths
    assert not scan_value({"v": text}, "x")


# --------------------------------------------------------------------------- end to end

HOST_SHAPES_IN_TEXT = " ".join(t for t, _ in HOST_PATH_SHAPES if "alice7" in t)


def _shapes_trial(root: Path):  # type: ignore[no-untyped-def]
    """A publishable trial whose tool output holds every host-path shape and whose raw
    responses hold every reasoning shape."""
    spec = healthy_spec()
    assert spec.llm is not None
    follow = spec.llm[1]["request"]["body"]["messages"]
    follow[-1]["content"] = f"ok\n{HOST_SHAPES_IN_TEXT}\n"
    for ex, (text, _, _) in zip(spec.llm, REASONING_SHAPES[:2], strict=True):
        ex["response"]["body"]["choices"][0]["message"]["content"] = text
    spec.rebuild_steps().sync()
    return spec.write(root)


def test_no_shape_reaches_a_published_byte_and_the_gate_blocks_one_that_would(
    tmp_path: Path, runs_root: Path
) -> None:
    trial = _shapes_trial(runs_root)
    source = "\n".join(p.read_text(errors="replace") for p in trial.path.rglob("*") if p.is_file())
    assert "alice7" in source and "PRIVATE" in source  # really planted
    b = bundle_reviews(cands(trial), tmp_path / "staging")
    assert b.rows["rollouts"] == 1, b.excluded
    text = published_text(b.path)
    assert "alice7" not in text and "PRIVATE" not in text
    assert b.stats.reasoning[THINK] >= 2
    assert verify_reviews(b.path, cands(trial)).ok
    # a shape that got past cleaning blocks the release
    readme = b.path / "README.md"
    readme.write_text(readme.read_text() + f"\n<think>{PRIVATE}</think>\n")
    report = verify_bundle(b.path)
    assert not report.passed("PUBLISH_REASONING")
    assert not report.passed(VERDICT_CHECK) and report.verdict == "not_publishable"


def test_clean_document_removes_inline_reasoning_from_a_card() -> None:
    stats = CleanStats()
    md = f"# Card\n\n<thinking>{PRIVATE}</thinking>\nran in /root\n"
    assert clean_document(md, stats) == "# Card\n\n\nran in <HOME>\n"
    assert stats.reasoning == Counter({THINKING: 1}) and stats.n_host_paths == 1


# --------------------------------------------------------------------------- trial pages


def test_pages_clean_inline_reasoning_and_host_paths_like_the_export() -> None:
    scrub = Scrub()
    for text, _, _ in REASONING_SHAPES:
        assert scrub.text(text) == clean_text(text)[0]
    for text, left in HOST_PATH_SHAPES:
        assert scrub.text(text) == left
    # a raw fragment: the clipped head of a line whose reasoning runs past the clip
    head = f'{{"choices": [{{"message": {{"content": "<think>\\n{PRIVATE} and more'
    shown, _ = scrub.fragment(head)
    assert "PRIVATE" not in shown and shown.startswith('{"choices"')


def test_a_page_window_inside_long_inline_reasoning_shows_none_of_it(tmp_path: Path) -> None:
    trial = tmp_path / "jobs" / "job-1" / "trial-1"
    (trial / "trajectory").mkdir(parents=True)
    needle = "needle-phrase-0123456789"
    thought = f"{PRIVATE} " * 3000 + needle + f" {PRIVATE}" * 6000
    line = {"response": {"content": f"<think>\n{thought}\n</think>\n\nthe visible answer"}}
    rel = "trajectory/llm_trajectory.jsonl"
    (trial / rel).write_text(json.dumps(line) + "\n")
    assert (trial / rel).stat().st_size > 256 * 1024  # past what a page parses as a value
    files = TrialFiles(str(trial), str(tmp_path))
    f = finding("NOSKILL_LEAK", "cited", file=rel, line=1, evidence=needle)
    files.want(rel, [1])
    [cited] = [ln for ln in build_window(files, f, "ev1", Scrub()).lines if ln.cited]
    assert "PRIVATE" not in cited.text and needle not in cited.text
    [raw] = [ln for ln in build_window(files, f, "ev1", Scrub(clean=False)).lines if ln.cited]
    assert needle in raw.text  # the window is the one around the evidence
