"""The published release as a user meets it: splits, typed JSON, verifiers fields, the card.

Everything is read back the way users read it: ``datasets.load_dataset`` on the published
folder, the card through a CommonMark renderer with tables (markdown-it, what the Hub's
renderer follows) and ``huggingface_hub.DatasetCard``.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from benchkit import script_module
from test_publish_bundle import cands, files_of
from trialkit import Trial, healthy_spec, oracle_spec

from bf_assets.contract import BANNED_MESSAGE_KEYS
from bf_assets.curate.rows import example_id
from bf_assets.curate.schema import CONFIGS, VERIFIERS_TASK
from bf_assets.dataset.plan import PlanError, parse_plan
from bf_assets.publish.bundle import Bundle, BundleOptions, bundle_reviews
from bf_assets.publish.card import LICENSE_PATH, STRING_ARGUMENT_TEMPLATES, VERIFIERS_MARKER
from bf_assets.publish.manifest import MANIFEST_PATH
from bf_assets.publish.splits import SplitSpec, assign_splits, resolve_spec
from bf_assets.publish.verify import verify_bundle

datasets = pytest.importorskip("datasets")


@pytest.fixture(autouse=True, scope="module")
def no_progress_threads() -> Any:
    """No tqdm monitor thread while reading releases back: it outlives the test, and the
    later tests fork worker processes, which must not inherit a lock it holds."""
    import threading

    from tqdm import tqdm

    before = tqdm.monitor_interval
    tqdm.monitor_interval = 0  # read by every tqdm subclass (datasets, huggingface_hub)
    yield
    tqdm.monitor_interval = before
    for t in threading.enumerate():
        if t.name == "tqdm_monitor" and hasattr(t, "exit"):
            t.exit()


TASKS = [f"task-{c}" for c in "abcdefgh"]
ARGS_TASK = "task-args"  # a trial whose tool call has arguments that need cleaning
ALL_TASKS = {*TASKS, ARGS_TASK}


def _with_arguments(spec: Any, args: dict[str, Any]) -> Any:
    text = json.dumps(args)
    for ex in spec.llm:
        for m in [
            *ex["request"]["body"]["messages"],
            ex["response"]["body"]["choices"][0]["message"],
        ]:
            for tc in m.get("tool_calls") or []:
                tc["function"]["arguments"] = text
    return spec.rebuild_steps().sync()


@pytest.fixture(scope="module")
def trials(tmp_path_factory: pytest.TempPathFactory) -> list[Trial]:
    root = tmp_path_factory.mktemp("runs") / "jobs"
    root.mkdir()
    out = [healthy_spec(task=t, rollout_id=f"{i:04d}aaaa").write(root) for i, t in enumerate(TASKS)]
    secret_args = {"command": "echo hi > hello.txt", "env": {"api_key": "plaintext-value-123"}}
    other = healthy_spec(task=ARGS_TASK, rollout_id="0000bbbb")
    out.append(_with_arguments(other, secret_args).write(root))
    out.append(oracle_spec().write(root))
    return out


@pytest.fixture(scope="module")
def split_release(
    trials: list[Trial], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Bundle, Path]:
    tmp = tmp_path_factory.mktemp("rel")
    b = bundle_reviews(cands(*trials), tmp / "staging", BundleOptions(repo_id="org/agents"))
    out = tmp / "published"  # a copy of the release folder, read as users read it
    shutil.copytree(b.path, out)
    return b, out


def _load(out: Path, config: str, **kw: Any) -> Any:
    return datasets.load_dataset(str(out), config, cache_dir=str(out.parent / "hf-cache"), **kw)


# ------------------------------------------------------------------ splits


def test_every_config_splits_by_task_and_no_task_is_in_both(
    split_release: tuple[Bundle, Path],
) -> None:
    b, out = split_release
    manifest = json.loads((out / MANIFEST_PATH).read_text())
    sp = manifest["splits"]
    assert sp["names"] == ["train", "test"] and sp["source"] == "default"
    assert (sp["test_fraction"], sp["seed"], sp["method"]) == (0.2, 0, "task_hash")
    assert set(sp["tasks"]["train"]) | set(sp["tasks"]["test"]) == ALL_TASKS
    for config in CONFIGS:
        dd = _load(out, config)
        assert sorted(dd) == ["test", "train"]
        by_split = {s: set(dd[s]["task_id"]) for s in dd}
        assert not by_split["train"] & by_split["test"]
        assert by_split == {s: set(sp["tasks"][s]) for s in ("train", "test")}
        assert {s: dd[s].num_rows for s in dd} == manifest["configs"][config]
    # the trl_sft rows of a trial are in its rollouts row's split
    rollouts = _load(out, "rollouts")
    trl = _load(out, "trl_sft")
    for s in ("train", "test"):
        assert set(trl[s]["rollout_id"]) == set(rollouts[s]["rollout_id"])


def test_the_card_lists_each_splits_files(split_release: tuple[Bundle, Path]) -> None:
    b, out = split_release
    meta = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    on_disk = sorted(p for p in files_of(out) if p.startswith("data/"))
    listed = []
    for cfg in meta["configs"]:
        splits = [d["split"] for d in cfg["data_files"]]
        assert splits == ["train", "test"]
        for d in cfg["data_files"]:
            for path in d["path"]:
                assert path.startswith(f"data/{cfg['config_name']}/{d['split']}-")
                listed.append(path)
    assert sorted(listed) == on_disk


def test_split_of_a_task_does_not_depend_on_the_other_tasks() -> None:
    spec = SplitSpec(test_fraction=0.3, seed=5, source="options")
    small = assign_splits([f"t{i}" for i in range(40)], spec)
    large = assign_splits([f"t{i}" for i in range(400)], spec)
    assert small.note is None and large.note is None
    assert all(large.split_of(t) == s for t, s in small.assignment.items())
    assert 0.15 < len(large.tasks("test")) / 400 < 0.45
    assert assign_splits([f"t{i}" for i in range(40)], spec).assignment == small.assignment
    other_seed = assign_splits([f"t{i}" for i in range(40)], SplitSpec(0.3, 6, "options"))
    assert other_seed.assignment != small.assignment


def test_tiny_releases_still_hold_one_task_out_or_get_one_split() -> None:
    spec = SplitSpec(test_fraction=0.01, seed=0, source="default")
    two = assign_splits(["a", "b"], spec)
    assert two.names == ["train", "test"] and len(two.tasks("test")) == 1 and two.note
    assert assign_splits(["a"], spec).names == ["train"]
    assert assign_splits(["a", "b"], SplitSpec(0.0, 0, "options")).names == ["train"]
    every = assign_splits(["a", "b", "c"], SplitSpec(0.999999, 0, "options"))
    assert len(every.tasks("train")) == 1 and len(every.tasks("test")) == 2


def test_fraction_and_seed_from_the_plan_and_options_override_it(tmp_path: Path) -> None:
    doc = {
        "name": "p",
        "matrix": [
            {
                "tasks": ["t"],
                "harnesses": ["codex-acp"],
                "models": ["m"],
                "skill_modes": ["no-skill"],
                "sandboxes": ["docker"],
            }
        ],
        "splits": {"test_fraction": 0.5, "seed": 3},
    }
    plan = parse_plan(doc)
    assert resolve_spec(test_fraction=None, seed=None, plan=plan) == SplitSpec(0.5, 3, "plan")
    assert resolve_spec(test_fraction=0, seed=None, plan=plan) == SplitSpec(0.0, 3, "options")
    assert resolve_spec(test_fraction=None, seed=None, plan=None) == SplitSpec(0.2, 0, "default")
    for bad, msg in (
        ({"test_fraction": 1}, "must be >= 0 and < 1"),
        ({"test_fraction": "x"}, "must be a number"),
        ({"seed": 1.5}, "must be an integer"),
        ({"fraction": 0.1}, "unknown key"),
    ):
        with pytest.raises(PlanError, match=msg):
            parse_plan({**doc, "splits": bad})


def test_one_split_on_request(trials: list[Trial], tmp_path: Path) -> None:
    b = bundle_reviews(cands(*trials), tmp_path / "s", BundleOptions(test_fraction=0))
    assert set(b.split_rows["rollouts"]) == {"train"}
    assert not [p for p in files_of(b.path) if "/test-" in p]
    card = (b.path / "README.md").read_text()
    assert "One split, `train`" in card and "Nothing is held out" in card
    assert verify_bundle(b.path).ok


def test_same_input_same_bytes_with_splits(trials: list[Trial], tmp_path: Path) -> None:
    one = bundle_reviews(cands(*trials), tmp_path / "a")
    two = bundle_reviews(list(reversed(cands(*trials))), tmp_path / "b")
    assert one.tag == two.tag and files_of(one.path) == files_of(two.path)
    reseeded = bundle_reviews(cands(*trials), tmp_path / "c", BundleOptions(split_seed=11))
    assert reseeded.tag != one.tag


# ------------------------------------------------------------------ typed JSON, verifiers


def test_each_config_gives_arguments_in_its_trainers_form(
    split_release: tuple[Bundle, Path],
) -> None:
    _, out = split_release
    # rollouts (and prime_sft): JSON strings, as Prime-RL and verifiers read them
    row = next(r for r in _load(out, "rollouts", split="train") if r["n_tool_calls"])
    call = next(m for m in row["messages"] if m["tool_calls"])["tool_calls"][0]
    assert isinstance(json.loads(call["function"]["arguments"]), dict)
    assert isinstance(json.loads(row["tools"]), list)
    assert isinstance(json.loads(row["metrics"]), dict)
    steps = json.loads(row["trajectory"])
    step_call = next(m["tool_calls"][0] for s in steps for m in s["completion"] if m["tool_calls"])
    assert isinstance(step_call["function"]["arguments"], dict)  # objects inside the JSON
    # trl_sft: objects (Arrow JSON), as TRL chat templates take them
    trl = next(r for r in _load(out, "trl_sft", split="train") if r["completion"][0]["tool_calls"])
    assert isinstance(trl["completion"][0]["tool_calls"][0]["function"]["arguments"], dict)
    assert isinstance(trl["tools"], list)
    # plain Parquet readers see the JSON text (the Parquet JSON logical type) ...
    shard = next(p for p in files_of(out) if p.startswith("data/trl_sft/train-"))
    t = pq.read_table(out / shard)
    assert str(t.schema.field("tools").type) == "extension<arrow.json>"
    assert isinstance(t.column("tools").to_pylist()[0], str)
    # ... and every other config has no extension type a datasets 4.x cannot read
    for config in ("rollouts", "prime_sft", "tasks"):
        shard = next(p for p in files_of(out) if p.startswith(f"data/{config}/train-"))
        assert "extension" not in str(pq.read_schema(out / shard)), config


def test_arguments_are_cleaned_as_values(split_release: tuple[Bundle, Path]) -> None:
    _, out = split_release
    text = "".join(p.read_text(errors="replace") for p in out.rglob("*.md"))
    rows = [r for s in ("train", "test") for r in _load(out, "prime_sft", split=s)]
    calls = [
        tc["function"]["arguments"]
        for r in rows
        for m in r["messages"]
        for tc in m["tool_calls"] or []
    ]
    calls = [json.loads(a) for a in calls]  # JSON strings in prime_sft
    masked = [a for a in calls if "env" in a]
    assert masked and all(a["env"]["api_key"] != "plaintext-value-123" for a in masked)
    assert "plaintext-value-123" not in text


def _load_checker() -> Any:
    """``tools/check_datasets_load.py`` (what CI runs on the oldest datasets) as a module."""
    path = Path(__file__).resolve().parents[1] / "tools" / "check_datasets_load.py"
    return script_module("check_datasets_load", path)


def test_the_cards_fallback_loads_trl_sft_with_string_features(
    split_release: tuple[Bundle, Path],
) -> None:
    """The card's line for a datasets without the Json feature (run here on the newest)."""
    _, out = split_release
    card = (out / "README.md").read_text()
    ds = _load_checker().load_config(out, "trl_sft", card, fallback=True)
    assert {s: len(d) for s, d in ds.items()} == {
        s: len(_load(out, "trl_sft", split=s)) for s in ds
    }
    row = next(r for r in ds["train"] if r["completion"][0]["tool_calls"])
    args = row["completion"][0]["tool_calls"][0]["function"]["arguments"]
    assert isinstance(args, str) and isinstance(json.loads(args), dict)
    assert isinstance(row["tools"], str) and isinstance(json.loads(row["tools"]), list)


def test_the_card_names_each_template_that_needs_string_arguments_and_its_config(
    split_release: tuple[Bundle, Path],
) -> None:
    """``tools/trl_sft_smoke.py check`` finds TRL's original ``deepseekv3`` template cannot
    take ``trl_sft``'s object arguments: the card names it, and ``prime_sft`` for it."""
    _, out = split_release
    card = (out / "README.md").read_text()
    trainers = card.split("## Use with trainers", 1)[1].split("\n## ", 1)[0]
    assert "deepseekv3" in STRING_ARGUMENT_TEMPLATES
    for name in STRING_ARGUMENT_TEMPLATES:
        row = next(line for line in trainers.splitlines() if line.startswith(f"| `{name}` |"))
        assert "`prime_sft`" in row, row


def test_the_release_checker_loads_every_config(split_release: tuple[Bundle, Path]) -> None:
    _, out = split_release
    assert _load_checker().check(out) == 0


def test_the_cards_verifiers_example_builds_an_environment(
    split_release: tuple[Bundle, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The card's verifiers example, run against the release with a stand-in ``verifiers``
    that checks what a verifiers environment requires of its dataset rows."""
    import sys
    import types

    _, out = split_release
    card = (out / "README.md").read_text()
    code = card.split(VERIFIERS_MARKER, 1)[1].split("```", 1)[0]
    built: list[Any] = []

    class Rubric:
        def __init__(self, funcs: list[Any]) -> None:
            self.funcs = funcs

    class SingleTurnEnv:
        def __init__(self, dataset: Any, rubric: Rubric) -> None:
            ids = [r["example_id"] for r in dataset]
            assert all(isinstance(i, int) for i in ids) and len(set(ids)) == len(ids)
            for r in dataset:
                assert r["prompt"] and all(
                    m["role"] in ("system", "user") and isinstance(m["content"], str)
                    for m in r["prompt"]
                )
                assert r["answer"] == "" and r["task"] == VERIFIERS_TASK
                assert isinstance(json.loads(r["info"]), dict)  # verifiers takes a JSON string
                for f in rubric.funcs:
                    assert f(completion=[], answer=r["answer"], info=r["info"]) == 0.0
            built.append(dataset)

    monkeypatch.setitem(
        sys.modules, "verifiers", types.SimpleNamespace(SingleTurnEnv=SingleTurnEnv, Rubric=Rubric)
    )
    code = re.sub(r'load_dataset\("[^"]*"', f"load_dataset({str(out)!r}", code)
    code = re.sub(r", revision=\"[^\"]*\"", "", code)
    exec(code, {})
    assert len(built) == 1 and len(built[0]) == len(_load(out, "tasks", split="train")) > 0


def test_rollouts_carry_the_verifiers_fields_without_the_gold_answer(
    split_release: tuple[Bundle, Path],
) -> None:
    _, out = split_release
    rows = [r for s in ("train", "test") for r in _load(out, "rollouts", split=s)]
    by_task: dict[str, set[int]] = {}
    for r in rows:
        assert isinstance(r["example_id"], int) and r["example_id"] == example_id(r["task_id"])
        by_task.setdefault(r["task_id"], set()).add(r["example_id"])
        assert r["task"] == VERIFIERS_TASK and r["answer"] == ""
        info = json.loads(r["info"])  # verifiers takes info as a JSON string
        assert info["task_id"] == r["task_id"] and info["rollout_id"] == r["rollout_id"]
        assert isinstance(r["prompt"], list) and isinstance(r["completion"], list)
        assert r["messages"] == r["prompt"] + r["completion"]
        assert r["prompt"][0]["role"] in ("system", "user")
        assert all(m["role"] in ("system", "user") for m in r["prompt"])
        assert isinstance(r["is_completed"], bool) and isinstance(r["is_truncated"], bool)
        assert "error" in r and all("name" in t for t in json.loads(r["tool_defs"]))
        assert isinstance(r["reward"], float)
        assert not BANNED_MESSAGE_KEYS & set(info)
    assert all(len(ids) == 1 for ids in by_task.values())
    assert len({i for ids in by_task.values() for i in ids}) == len(by_task)
    assert set(by_task) == ALL_TASKS and max(by_task[TASKS[0]]) < 2**53


def _rewrite_shard(path: Path, change: Any, **write: Any) -> None:
    """The shard's rows changed by ``change`` and written back with the same schema
    (``write``: more ``pq.write_table`` options, such as ``row_group_size``)."""
    pf = pq.ParquetFile(path)
    table = pf.read()
    rows = change(table.to_pylist())
    import pyarrow as pa

    from bf_assets.curate.schema import storage_schema

    config = path.parent.name
    new = pa.Table.from_pylist(rows, schema=storage_schema(config)).cast(table.schema)
    pq.write_table(new, path, store_schema=True, **write)


def test_verify_decodes_arguments(split_release: tuple[Bundle, Path], tmp_path: Path) -> None:
    b, _ = split_release
    for arguments, check in (
        ('{"gold_solution": "42"}', "PUBLISH_BANNED_KEY"),
        ('{"password": "hunter2-hunter2"}', "PUBLISH_SECRET"),
        ("[1, 2]", "PUBLISH_SCHEMA"),
    ):
        bad = tmp_path / check
        shutil.copytree(b.path, bad)
        shard = next(p for p in sorted((bad / "data" / "trl_sft").glob("*.parquet")))

        def change(rows: list[dict[str, Any]], a: str = arguments) -> list[dict[str, Any]]:
            rows = copy.deepcopy(rows)
            row = next(r for r in rows if r["completion"][0]["tool_calls"])
            row["completion"][0]["tool_calls"][0]["function"]["arguments"] = a
            return rows

        _rewrite_shard(shard, change)
        report = verify_bundle(bad)
        assert not report.passed(check), (check, report.summary())
        assert any(
            "tool-call arguments" in f.message or "JSON object" in f.message
            for f in report.findings[check]
        )


def test_verify_checks_one_tasks_row_per_exported_task(
    split_release: tuple[Bundle, Path], tmp_path: Path
) -> None:
    b, _ = split_release
    for name, change, message in (
        ("twice", lambda rows: rows + rows[:1], "a second row of task"),
        ("missing", lambda rows: rows[1:], "has rollouts but no tasks row"),
        (
            "foreign",
            lambda rows: [{**rows[0], "task_id": "not-exported"}, *rows[1:]],
            "a task of no exported rollout",
        ),
    ):
        bad = tmp_path / name
        shutil.copytree(b.path, bad)
        _rewrite_shard(bad / "data" / "tasks" / "train-00000-of-00001.parquet", change)
        report = verify_bundle(bad)
        found = [f.message for fs in report.findings.values() for f in fs]
        assert any(message in m for m in found), (name, found)
    assert verify_bundle(b.path).ok


# ------------------------------------------------------------------ the card


def _markdown(text: str) -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table")


def _body(card: str) -> str:
    return card.split("---\n", 2)[2]


@pytest.fixture(scope="module")
def leaky_card(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The card of a release whose cleaning stats name placeholders such as ``<HOME>``."""
    from test_curate_rows import leaky_trial

    root = tmp_path_factory.mktemp("leaky") / "jobs"
    root.mkdir()
    b = bundle_reviews(cands(leaky_trial(root)), tmp_path_factory.mktemp("leaky-staging"))
    return (b.path / "README.md").read_text()


@pytest.mark.parametrize("which", ["split", "leaky"])
def test_the_card_renders_without_broken_markup(
    which: str, split_release: tuple[Bundle, Path], leaky_card: str
) -> None:
    card = (split_release[1] / "README.md").read_text() if which == "split" else leaky_card
    body = _body(card)
    md = _markdown(body)
    tokens = md.parse(body)
    assert not [t for t in tokens if t.type == "html_block"]
    inline = [c for t in tokens if t.type == "inline" for c in t.children or []]
    assert not [c.content for c in inline if c.type == "html_inline"]  # e.g. a bare <HOME>
    stray = [c.content for c in inline if c.type == "text" and "`" in c.content]
    assert not stray, stray  # a backtick left as text: a code span that did not close
    # every table row has as many cells as its header
    rows: list[int] = []
    for t in tokens:
        if t.type in ("tr_open",):
            rows.append(0)
        elif t.type in ("th_open", "td_open"):
            rows[-1] += 1
        elif t.type == "table_close":
            assert len(set(rows)) == 1, rows
            rows = []
    html = md.render(body)
    assert "<code>string (sha256:&lt;64 hex&gt;)</code>" in html
    if which == "leaky":  # a placeholder is shown, not swallowed as an HTML tag
        assert "<td><code>&lt;HOME&gt;</code></td>" in html
    for heading in (
        "Load it",
        "Splits",
        "Use with trainers",
        "Dataset structure (schema version 3)",
        "Intended use",
        "Out-of-scope use",
        "How it was built and reviewed",
        "Limitations and biases",
        "Residual risk",
        "Licensing",
        "Citation",
    ):
        assert f"<h2>{heading}</h2>" in html, heading


def test_the_card_metadata_license_and_pinned_load_snippet(
    split_release: tuple[Bundle, Path],
) -> None:
    from huggingface_hub import DatasetCard

    b, out = split_release
    card = (out / "README.md").read_text()
    data = DatasetCard(card).data.to_dict()
    assert data["license"] == "other" and data["license_link"] == LICENSE_PATH
    assert (out / LICENSE_PATH).is_file()
    manifest = json.loads((out / MANIFEST_PATH).read_text())
    assert LICENSE_PATH in {f["path"] for f in manifest["files"]}
    assert manifest["release_tag"] == b.tag
    assert 'REPO = "org/agents"' in card and f'TAG = "{b.tag}"' in card
    loads = re.findall(r"load_dataset\(REPO, \"(\w+)\"[^)]*revision=TAG\)", card)
    assert sorted(set(loads)) == sorted(CONFIGS)
    bib = re.search(r"```bibtex\n(@misc\{[^`]+)```", card)
    assert bib and b.tag in bib.group(1) and "org/agents" in bib.group(1)
    # dataset_info from the data: every config's split sizes, and features where every
    # datasets 4.x can parse them (not for trl_sft's Json columns)
    infos = {i["config_name"]: i for i in data["dataset_info"]}
    assert set(infos) == set(CONFIGS)
    for config, info in infos.items():
        assert {s["name"]: s["num_examples"] for s in info["splits"]} == manifest["configs"][config]
        shards = [f for f in manifest["files"] if f.get("config") == config]
        assert info["download_size"] == sum(f["bytes"] for f in shards)
    assert "features" not in infos["trl_sft"]
    names = [f["name"] for f in infos["rollouts"]["features"]]
    assert names == [c.name for c in CONFIGS["rollouts"]]
    # the minimum datasets, a recipe without a revision
    assert "Needs `datasets` 4.6.1 or later" in card
    assert "### Without a revision" in card and "hf://datasets/" in card


def test_another_license_links_nothing(trials: list[Trial], tmp_path: Path) -> None:
    b = bundle_reviews(cands(*trials), tmp_path / "s", BundleOptions(license="cc-by-4.0"))
    meta = yaml.safe_load((b.path / "README.md").read_text().split("---\n")[1])
    assert meta["license"] == "cc-by-4.0" and "license_link" not in meta
    assert not (b.path / LICENSE_PATH).exists()


def test_the_tag_follows_every_byte_but_itself(trials: list[Trial], tmp_path: Path) -> None:
    one = bundle_reviews(cands(*trials), tmp_path / "a")
    renamed = bundle_reviews(cands(*trials), tmp_path / "b", BundleOptions(pretty_name="Other"))
    assert one.tag != renamed.tag and one.digest != renamed.digest
    card = (one.path / "README.md").read_text()
    assert card.count(one.tag) >= 3  # summary, load snippet, citation
