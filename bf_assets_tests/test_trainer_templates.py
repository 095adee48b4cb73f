"""A built release through real trainer code: ``transformers``' ``apply_chat_template``.

The ``trl_sft`` and ``prime_sft`` rows are read back with ``datasets.load_dataset`` from the
published folder (as users do) and rendered through chat templates of the styles trainers
ship: a Qwen2.5 / Hermes one that writes ``arguments | tojson`` inside ``<tool_call>``, a
Llama-3.2 one that writes them as ``parameters``, one that iterates the arguments as a
mapping (GLM / Nemotron style) and raises on anything else, and a TRL training template with
``{% generation %}`` blocks for the assistant-token mask.  The tokenizer is a word-level one
built here from the rendered text: nothing is downloaded.

Every template must render every row without error, with each tool call's arguments written
once as a JSON object (never a JSON string holding JSON), the tokens of the prompt must be a
prefix of the tokens of prompt + completion (TRL's prompt-completion check, so the loss
lands on the completion), and the assistant mask must cover exactly the completion.  The
last tests feed the same rows with string arguments to show the checks fail then.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_card_release import no_progress_threads  # noqa: F401 (autouse fixture)
from trialkit import healthy_spec, oracle_spec

from bf_assets.publish.bundle import BundleOptions, bundle_reviews

datasets = pytest.importorskip("datasets")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

# Qwen2.5 / Hermes style: tools as JSON lines in the system turn, calls as <tool_call> JSON.
QWEN_STYLE = """\
{%- if tools %}<|im_start|>system
{{ messages[0].content if messages[0].role == 'system' else 'You are a helpful assistant.' }}

# Tools
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{{ message.content or '' }}
{%- for tool_call in message.tool_calls or [] %}
{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
<tool_call>
{"name": "{{ tool_call.name }}", "arguments": {{ tool_call.arguments | tojson }}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

# Llama-3.2 style: tools and calls as JSON, a call's arguments written as "parameters".
LLAMA_STYLE = """\
{{- bos_token }}
{%- if messages[0].role == 'system' %}{%- set system = messages[0].content %}{%- set messages = messages[1:] %}{%- else %}{%- set system = '' %}{%- endif %}
<|start_header_id|>system<|end_header_id|>

{{ system }}
{%- if tools %}
You have access to the following functions:
{%- for t in tools %}
{{ t | tojson(indent=4) }}
{%- endfor %}
{%- endif %}<|eot_id|>
{%- for message in messages %}
{%- if message.role == 'assistant' and message.tool_calls %}
{%- if message.tool_calls | length != 1 %}{{ raise_exception('one tool call per turn') }}{%- endif %}
{%- set tool_call = message.tool_calls[0].function %}<|start_header_id|>assistant<|end_header_id|>

{"name": "{{ tool_call.name }}", "parameters": {{ tool_call.arguments | tojson }}}<|eot_id|>
{%- elif message.role == 'tool' %}<|start_header_id|>ipython<|end_header_id|>

{{ message.content }}<|eot_id|>
{%- else %}<|start_header_id|>{{ message.role }}<|end_header_id|>

{{ message.content }}<|eot_id|>
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>

{% endif %}"""

# GLM / Nemotron style: arguments iterated as key/value pairs; anything else is refused.
MAPPING_STYLE = """\
{%- for tool in tools or [] %}
{%- if tool is not mapping %}{{ raise_exception('tools must be a list of mappings') }}{%- endif %}
<tool>{{ tool.function.name }}: {{ tool.function.parameters | tojson }}</tool>
{%- endfor %}
{%- for message in messages %}
<|{{ message.role }}|>
{{ message.content or '' }}
{%- for tc in message.tool_calls or [] %}
{%- if tc.function.arguments is not mapping %}{{ raise_exception('arguments must be a mapping') }}{%- endif %}
<tool_call>{{ tc.function.name }}
{%- for key, value in tc.function.arguments | items %}
<arg_key>{{ key }}</arg_key><arg_value>{{ value if value is string else value | tojson }}</arg_value>
{%- endfor %}
</tool_call>
{%- endfor %}
{%- endfor %}
{%- if add_generation_prompt %}
<|assistant|>
{% endif %}"""

# A TRL training template: assistant turns inside {% generation %} for the loss mask.
TRAINING_STYLE = """\
{%- for tool in tools or [] %}[tool] {{ tool.function.name }}
{% endfor %}
{%- for message in messages %}
{%- if message.role == 'assistant' %}[assistant]
{% generation %}{{ message.content or '' }}
{%- for tc in message.tool_calls or [] %}
{%- if tc.function.arguments is not mapping %}{{ raise_exception('arguments must be a mapping') }}{%- endif %}
[call] {{ tc.function.name }} {{ tc.function.arguments | tojson }}
{%- endfor %} [end]
{% endgeneration %}
{%- else %}[{{ message.role }}]
{{ message.content }} [end]
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}[assistant]
{% endif %}"""

TEMPLATES = {
    "qwen2_5_style": QWEN_STYLE,
    "llama3_2_style": LLAMA_STYLE,
    "mapping_style": MAPPING_STYLE,
    "training_style": TRAINING_STYLE,
}
ARGS = {
    "command": "grep -n 'total' report.csv",
    "timeout": 30,
    "flags": ["-q", "--no-color"],
    "env": {"LANG": "C", "DRY": True},
}


def _with_arguments(spec: Any, args: dict[str, Any]) -> Any:
    """The trial's tool call made with ``args`` (in its responses and later requests)."""
    text = json.dumps(args)
    for ex in spec.llm:
        msgs = [*ex["request"]["body"]["messages"], ex["response"]["body"]["choices"][0]["message"]]
        for m in msgs:
            for tc in m.get("tool_calls") or []:
                tc["function"]["arguments"] = text
    return spec.rebuild_steps().sync()


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A published release of four tasks (one with nested, typed arguments), split."""
    root = tmp_path_factory.mktemp("runs") / "jobs"
    root.mkdir()
    trials = [
        healthy_spec(task=f"task-{i}", rollout_id=f"aaaa000{i}").write(root) for i in range(3)
    ]
    trials.append(
        _with_arguments(healthy_spec(task="task-args", rollout_id="bbbb0001"), ARGS).write(root)
    )
    trials.append(oracle_spec().write(root))
    tmp = tmp_path_factory.mktemp("release")
    b = bundle_reviews(
        [t.review() for t in trials], tmp / "staging", BundleOptions(test_fraction=0.5)
    )
    assert b.rows["rollouts"] == 4 and set(b.split_rows["trl_sft"]) == {"train", "test"}, b.excluded
    out = tmp / "published"  # a copy of the release folder, read as users read it
    shutil.copytree(b.path, out)
    return out


def _rows(release: Path, config: str) -> list[dict[str, Any]]:
    cache = str(release.parent / "hf-cache")
    dd = datasets.load_dataset(str(release), config, cache_dir=cache)
    return [dict(r) for split in sorted(dd) for r in dd[split]]


def _conversation(row: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if "messages" in row:
        return row["messages"], []
    return row["prompt"], row["completion"]


def _calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [tc["function"] for m in messages for tc in m.get("tool_calls") or []]


def _tokenizer(template: str, corpus: list[str]) -> Any:
    """A word-level fast tokenizer trained on ``corpus`` (or empty), with ``template``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    specials = ["[UNK]", "<s>", "</s>"]
    words = [t.replace("<s>", " ").replace("</s>", " ") for t in corpus]  # split off as specials
    tok.train_from_iterator(words or [""], trainers.WordLevelTrainer(special_tokens=specials))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", bos_token="<s>", eos_token="</s>"
    )
    fast.chat_template = template
    return fast


def _render(tok: Any, messages: list[dict[str, Any]], tools: Any, **kw: Any) -> Any:
    return tok.apply_chat_template(messages, tools=tools, **kw)


def assert_arguments_are_objects(text: str, calls: list[dict[str, Any]], style: str) -> None:
    """Each call's arguments appear as a JSON object, never double-encoded."""
    assert '"{\\"' not in text and "\\\\\\" not in text, f"{style}: double-encoded arguments"
    for fn in calls:
        args = fn["arguments"]
        assert isinstance(args, dict), f"{style}: arguments are {type(args).__name__}"
        if style == "mapping_style":
            for key in args:
                assert f"<arg_key>{key}</arg_key>" in text
        else:  # transformers' tojson is json.dumps keeping the key order
            assert json.dumps(args, ensure_ascii=False) in text, f"{style}: {args} not an object"
        assert json.dumps(json.dumps(args)) not in text


def as_prime_rl_reads(row: dict[str, Any]) -> dict[str, Any]:
    """A ``prime_sft`` row as Prime-RL's SFT loader turns it into chat-template input: the
    ``tools`` JSON string and each tool call's JSON-string ``arguments`` parsed."""
    assert isinstance(row["tools"], str)  # what the config publishes (Prime-RL's form)
    messages = []
    for m in row["messages"]:
        calls = m.get("tool_calls")
        if calls:
            assert all(isinstance(tc["function"]["arguments"], str) for tc in calls)
            calls = [
                {**tc, "function": {**tc["function"], "arguments": json.loads(args)}}
                for tc in calls
                for args in (tc["function"]["arguments"],)
            ]
            m = {**m, "tool_calls": calls}
        messages.append(m)
    return {**row, "messages": messages, "tools": json.loads(row["tools"])}


@pytest.mark.parametrize("style", sorted(TEMPLATES))
@pytest.mark.parametrize("config", ["trl_sft", "prime_sft"])
def test_rows_render_with_arguments_as_objects(release: Path, config: str, style: str) -> None:
    rows = _rows(release, config)
    if config == "prime_sft":  # JSON strings, parsed by the trainer that reads them
        rows = [as_prime_rl_reads(r) for r in rows]
    assert rows and any(_calls(sum(_conversation(r), [])) for r in rows)
    template = TEMPLATES[style]
    plain = _tokenizer(template, [])
    texts = []
    for row in rows:
        prompt, completion = _conversation(row)
        assert isinstance(row["tools"], list) and isinstance(row["tools"][0], dict)
        text = _render(plain, prompt + completion, row["tools"], tokenize=False)
        assert_arguments_are_objects(text, _calls(prompt + completion), style)
        texts.append(text)
    nested = [t for t in texts if "--no-color" in t]
    assert nested, "the trial with nested arguments is in every config"
    if style != "mapping_style":
        assert any(json.dumps(ARGS) in t for t in nested)  # as the model wrote them, in order


@pytest.mark.parametrize("style", sorted(TEMPLATES))
def test_trl_prompt_is_a_token_prefix_of_prompt_plus_completion(release: Path, style: str) -> None:
    """What TRL's prompt-completion tokenization relies on: the completion tokens (the loss
    targets) are exactly what follows the prompt's tokens."""
    rows = _rows(release, "trl_sft")
    template = TEMPLATES[style]
    plain = _tokenizer(template, [])
    corpus = [
        _render(plain, r["prompt"] + r["completion"], r["tools"], tokenize=False) for r in rows
    ]
    corpus += [
        _render(plain, r["prompt"], r["tools"], tokenize=False, add_generation_prompt=True)
        for r in rows
    ]
    tok = _tokenizer(template, corpus)
    for r in rows:
        assert [m["role"] for m in r["completion"]] == ["assistant"]
        p = _render(
            tok,
            r["prompt"],
            r["tools"],
            tokenize=True,
            add_generation_prompt=True,
            return_dict=True,
        )
        full = _render(
            tok, r["prompt"] + r["completion"], r["tools"], tokenize=True, return_dict=True
        )
        p_ids, ids = p["input_ids"], full["input_ids"]
        assert ids[: len(p_ids)] == p_ids and len(ids) > len(p_ids)
        assert tok.unk_token_id not in ids


def test_assistant_mask_covers_exactly_the_completion(release: Path) -> None:
    rows = _rows(release, "trl_sft")
    plain = _tokenizer(TRAINING_STYLE, [])
    corpus = [
        _render(plain, r["prompt"] + r["completion"], r["tools"], tokenize=False) for r in rows
    ]
    tok = _tokenizer(TRAINING_STYLE, corpus)
    for r in rows:
        out = _render(
            tok,
            r["prompt"] + r["completion"],
            r["tools"],
            tokenize=True,
            return_dict=True,
            return_assistant_tokens_mask=True,
        )
        ids, mask = out["input_ids"], out["assistant_masks"]
        conversation = r["prompt"] + r["completion"]
        expected = " ".join(_trained_text(m) for m in conversation if m["role"] == "assistant")
        trained = tok.decode([i for i, m in zip(ids, mask, strict=True) if m])
        assert trained.split() == expected.split()  # every assistant turn, nothing else
        start = len(
            _render(
                tok,
                r["prompt"],
                r["tools"],
                tokenize=True,
                add_generation_prompt=True,
                return_dict=True,
            )["input_ids"]
        )
        tail = [i for i, m in zip(ids[start:], mask[start:], strict=True) if m]
        assert tok.decode(tail).split() == _trained_text(r["completion"][0]).split()


def _trained_text(message: dict[str, Any]) -> str:
    """What TRAINING_STYLE puts inside an assistant turn's generation block."""
    calls = "".join(
        f"\n[call] {fn['name']} {json.dumps(fn['arguments'])}" for fn in _calls([message])
    )
    return f"{message['content'] or ''}{calls} [end]"


# ------------------------------------------------------------------ the checks bite


def _stringified(row: dict[str, Any]) -> dict[str, Any]:
    """The row as it was published before arguments and tools were typed: JSON strings."""
    bad = copy.deepcopy(row)
    for col in ("prompt", "completion", "messages"):
        for m in bad.get(col) or []:
            for tc in m.get("tool_calls") or []:
                tc["function"]["arguments"] = json.dumps(tc["function"]["arguments"])
    bad["tools"] = json.dumps(bad["tools"])
    return bad


def test_string_arguments_fail_these_checks(release: Path) -> None:
    from jinja2.exceptions import TemplateError

    row = next(r for r in _rows(release, "trl_sft") if _calls(r["completion"]))
    bad = _stringified(row)
    calls = _calls(bad["completion"])
    for style in ("mapping_style", "training_style"):
        with pytest.raises(TemplateError, match="must be"):
            _render(
                _tokenizer(TEMPLATES[style], []),
                bad["prompt"] + bad["completion"],
                row["tools"],
                tokenize=False,
            )
    for style in ("qwen2_5_style", "llama3_2_style"):
        text = _render(
            _tokenizer(TEMPLATES[style], []),
            bad["prompt"] + bad["completion"],
            row["tools"],
            tokenize=False,
        )
        with pytest.raises(AssertionError):
            assert_arguments_are_objects(text, calls, style)
    # tools as one JSON string: transformers itself refuses them (it iterates the string)
    with pytest.raises(ValueError, match="Tools should either be a JSON schema"):
        _render(_tokenizer(MAPPING_STYLE, []), row["prompt"], bad["tools"], tokenize=False)
