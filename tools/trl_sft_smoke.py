"""Train on a release with TRL's own ``SFTTrainer``: every chat template TRL ships, one step.

Not part of the test suite (TRL needs torch). Two steps, see ``tools/README.md``:

    .venv/bin/python tools/trl_sft_smoke.py build OUT            # project venv: sample release
    TRL_PY tools/trl_sft_smoke.py check OUT [--template NAME]   # a venv with trl and torch

``build`` reviews ``data/runs/jobs`` (the sample runs) and publishes the release to ``OUT``.
``check`` loads ``OUT``'s two SFT configs with ``datasets.load_dataset`` as a user would:
``trl_sft`` (prompt-completion, tool-call arguments as objects) and ``prime_sft`` (Prime-RL's
``messages``, arguments and ``tools`` as JSON strings, which ``SFTTrainer`` also takes). Then
for every ``*.jinja`` template in the installed TRL's ``chat_templates`` folder and each
config:

1. renders every row with ``apply_chat_template(conversation, tools=tools)``: it must not
   raise, and each tool call's arguments must be written once, in the config's form, never
   as a JSON string holding JSON (the double encoding that silently corrupts the targets);
2. runs ``SFTTrainer`` for one optimizer step on a tiny randomly initialised Llama model
   with a word-level tokenizer built from the rendered rows (nothing is downloaded), with
   ``assistant_only_loss`` for the ``*_training`` templates (their ``{% generation %}``
   blocks), and checks the loss is finite and some tokens were targets.

A template that fails on one config is rendered again with the arguments in the other form.
When that works, it takes only the other form: it is skipped on this config ("use
``prime_sft``" or "use ``trl_sft``") and must pass on the other one; a template that takes
only string arguments must also be named in the release's card (``STRING_ARGUMENT_TEMPLATES``
in ``bf_assets/publish/card.py``). Templates that cannot take these rows whatever the
argument form are skipped, with why: vision templates that expect content-part lists,
templates without system or tool turns (Cohere, Gemma 1-3 insist on alternating
user/assistant roles) and templates that drop tool calls. The exit status is 1 when any
template fails. The last lines are a table: one row per template, one column per config.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

SAMPLE_RUNS = Path(__file__).resolve().parents[1] / "data" / "runs" / "jobs"
VISION = ("idefics3", "llava_next", "qwen2_5_vl", "qwen3_vl", "smolvlm", "lfm2_2_5_vl")
# Errors of templates that cannot take these rows whatever the argument type: (text, why)
NOT_APPLICABLE = (
    ("roles must alternate", "no tool or system turns in this template"),
    ("System role not supported", "no system turn in this template"),
)
# The SFT configs, and the other one, whose tool-call arguments have the other form
SFT_CONFIGS = {"trl_sft": "prime_sft", "prime_sft": "trl_sft"}
ARGUMENTS = {"trl_sft": "object", "prime_sft": "string"}


def build(out: Path) -> int:
    from bf_assets.corpus.run import review_roots
    from bf_assets.publish.bundle import bundle_reviews

    reviews = review_roots([SAMPLE_RUNS]).trials
    with tempfile.TemporaryDirectory() as staging:
        b = bundle_reviews(reviews, staging)
        shutil.copytree(b.path, out)  # the release folder, as published
    print(f"release {b.tag} in {out}: {b.split_rows}")
    return 0


def _tokenizer(template: str, corpus: list[str]) -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["[UNK]", "[PAD]", "<s>", "</s>"]
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    words = [t.replace("<s>", " ").replace("</s>", " ") for t in corpus]
    tok.train_from_iterator(words or [""], trainers.WordLevelTrainer(special_tokens=specials))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        bos_token="<s>",
        eos_token="</s>",
    )
    fast.chat_template = template
    return fast


def _calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [tc["function"] for m in messages for tc in m.get("tool_calls") or []]


def _conversation(config: str, row: dict[str, Any]) -> list[dict[str, Any]]:
    return row["messages"] if config == "prime_sft" else row["prompt"] + row["completion"]


def _tools(row: dict[str, Any]) -> Any:
    tools = row["tools"]  # a JSON string in prime_sft, which SFTTrainer json.loads too
    return json.loads(tools) if isinstance(tools, str) else tools


def _arguments_problem(args: Any, want: type, text: str) -> tuple[str | None, bool]:
    """What is wrong with how one call's ``args`` rendered in ``text``, and whether its
    keys show in it."""
    if not isinstance(args, want):
        return f"arguments loaded as {type(args).__name__}, not a {want.__name__}", False
    obj = json.loads(args) if isinstance(args, str) else args
    once = json.dumps(obj) if isinstance(args, dict) else args  # the JSON written once
    if json.dumps(once)[1:-1] in text and json.dumps(once)[1:-1] != once:
        return "double-encoded arguments", False  # the JSON text escaped inside a string
    return None, any(str(k) in text for k in obj)


def _render_all(
    template: str, config: str, rows: list[dict[str, Any]], want: type | None = None
) -> tuple[list[str], str | None]:
    """Rendered rows (with each ``trl_sft`` prompt's generation prompt, for the tokenizer's
    words) and the problem found, if any.  ``want``: the arguments' type (the config's)."""
    want = want or (str if config == "prime_sft" else dict)
    tok = _tokenizer(template, [])
    texts = []
    rendered_calls = 0
    for r in rows:
        conv = _conversation(config, r)
        try:
            text = tok.apply_chat_template(conv, tools=_tools(r), tokenize=False)
            if config == "trl_sft":
                texts.append(
                    tok.apply_chat_template(
                        r["prompt"], tools=_tools(r), tokenize=False, add_generation_prompt=True
                    )
                )
        except Exception as exc:  # jinja raises several types
            return texts, f"error: {type(exc).__name__}: {str(exc)[:120]}"
        for fn in _calls(conv):
            problem, shown = _arguments_problem(fn["arguments"], want, text)
            if problem:
                return texts, problem
            rendered_calls += shown
        texts.append(text)
    if not rendered_calls and any(_calls(_conversation(config, r)) for r in rows):
        return texts, "no tool call rendered (the template does not support tool calls)"
    return texts, None


def _train_one_step(template: str, texts: list[str], ds: Any, generation: bool) -> float:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from trl import SFTConfig, SFTTrainer

    torch.manual_seed(0)
    tok = _tokenizer(template, texts)
    longest = max(len(tok(t)["input_ids"]) for t in texts) + 8
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tok),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=max(longest, 128),
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
        )
    )
    with tempfile.TemporaryDirectory() as out:
        args = SFTConfig(
            output_dir=out,
            max_steps=1,
            per_device_train_batch_size=2,
            learning_rate=1e-3,
            logging_steps=1,
            save_strategy="no",
            report_to=[],
            max_length=longest,
            assistant_only_loss=generation,
            use_cpu=True,
        )
        trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok)
        targets = [x != -100 for row in trainer.train_dataset for x in row["labels"]]
        assert any(targets), "no token is a training target"
        result = trainer.train()
    return float(result.training_loss)


def _with_other_arguments(config: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with each tool call's arguments in the other config's form."""
    out = []
    for r in rows:
        r = json.loads(json.dumps(r))
        for fn in _calls(_conversation(config, r)):
            args = fn["arguments"]
            fn["arguments"] = json.loads(args) if isinstance(args, str) else json.dumps(args)
        out.append(r)
    return out


def _status(
    name: str, template: str, config: str, problem: str | None, rows: list[dict[str, Any]]
) -> str:
    """``ok`` (to train), ``args`` (the template takes the other argument form), ``skip: why``
    (it cannot take these rows at all) or ``FAIL: problem``."""
    if not problem:
        return "ok"
    why = next((w for text, w in NOT_APPLICABLE if text in problem), None)
    if why:
        return f"skip: {problem} ({why})"
    other = dict if config == "prime_sft" else str
    if _render_all(template, config, _with_other_arguments(config, rows), other)[1] is None:
        return "args"
    if name.startswith(VISION):
        return f"skip: {problem} (vision template: content must be a list of parts)"
    if problem.startswith("no tool call rendered"):
        return f"skip: {problem}"
    return f"FAIL: {problem}"


def check(release: Path, only: list[str]) -> int:
    import datasets
    import trl

    folder = Path(trl.__file__).parent / "chat_templates"
    templates = {p.stem: p.read_text() for p in sorted(folder.glob("*.jinja"))}
    names = [n for n in templates if not only or n in only]
    card = (release / "README.md").read_text(encoding="utf-8")
    loaded = {c: datasets.load_dataset(str(release), c, split="train") for c in SFT_CONFIGS}
    rows = {c: [dict(r) for r in ds] for c, ds in loaded.items()}
    print(
        f"trl {trl.__version__}, datasets {datasets.__version__}: "
        + ", ".join(f"{c} {len(r)} rows" for c, r in rows.items())
        + f", {len(names)} templates"
    )
    results: dict[str, dict[str, str]] = {n: {} for n in names}
    for name in names:
        for config in SFT_CONFIGS:
            texts, problem = _render_all(templates[name], config, rows[config])
            status = _status(name, templates[name], config, problem, rows[config])
            if status == "ok":
                generation = "{% generation %}" in templates[name]
                try:
                    loss = _train_one_step(templates[name], texts, loaded[config], generation)
                    status = f"ok: one step, loss {loss:.3f}"
                    if not math.isfinite(loss):
                        status = f"FAIL: loss {loss}"
                except Exception as exc:
                    status = f"FAIL: SFTTrainer: {type(exc).__name__}: {str(exc)[:160]}"
            results[name][config] = status
            print(f"{status.split(':')[0]:4} {name} on {config}: {status.partition(': ')[2]}")
    failed = _verdicts(results, card)
    print(f"{len(names) - len(failed)} of {len(names)} templates passed or were skipped")
    return 1 if failed else 0


def _verdicts(results: dict[str, dict[str, str]], card: str) -> list[str]:
    """Print one line per template and return the failed ones: a template fails when it fails
    on a config, or takes only the other config's argument form and fails there too, or
    takes only string arguments and the release's card does not name it."""
    failed = []
    print("\ntemplate | trl_sft (object arguments) | prime_sft (string arguments)")
    for name, by_config in results.items():
        cells = []
        for config, status in by_config.items():
            other = SFT_CONFIGS[config]
            if status == "args":
                if not by_config[other].startswith("ok"):
                    status = f"FAIL: takes only {ARGUMENTS[other]} arguments, and {other} fails"
                elif config == "trl_sft" and f"`{name}`" not in card:
                    status = "FAIL: takes only string arguments; the card does not name it"
                else:
                    status = f"skip: takes only {ARGUMENTS[other]} arguments (use {other})"
            if status.startswith("FAIL") and name not in failed:
                failed.append(name)
            cells.append(status)
        print(f"{name} | " + " | ".join(cells))
    return failed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="publish the sample release (project venv)")
    b.add_argument("out", type=Path)
    c = sub.add_parser("check", help="render and train under every TRL template (trl venv)")
    c.add_argument("release", type=Path)
    c.add_argument("--template", action="append", default=[], help="only this template")
    a = p.parse_args(argv)
    return build(a.out) if a.cmd == "build" else check(a.release, a.template)


if __name__ == "__main__":
    sys.exit(main())
