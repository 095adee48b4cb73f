"""Train on a release with TRL's own ``SFTTrainer``: every chat template TRL ships, one step.

Not part of the test suite (TRL needs torch). Two steps, see ``tools/README.md``:

    .venv/bin/python tools/trl_sft_smoke.py build OUT            # project venv: sample release
    TRL_PY tools/trl_sft_smoke.py check OUT [--template NAME]   # a venv with trl and torch

``build`` reviews ``data/runs/jobs`` (the sample runs) and publishes the release to ``OUT``.
``check`` loads ``OUT``'s ``trl_sft`` config with ``datasets.load_dataset`` as a user would,
then for every ``*.jinja`` template in the installed TRL's ``chat_templates`` folder:

1. renders every row with ``apply_chat_template(prompt + completion, tools=tools)``: it must
   not raise, and each tool call's arguments must appear as a JSON object, never as a JSON
   string holding JSON (the double encoding that silently corrupts the targets);
2. runs ``SFTTrainer`` for one optimizer step on a tiny randomly initialised Llama model
   with a word-level tokenizer built from the rendered rows (nothing is downloaded), with
   ``assistant_only_loss`` for the ``*_training`` templates (their ``{% generation %}``
   blocks), and checks the loss is finite and some tokens were targets.

Templates that cannot take these rows whatever the argument type are reported as skipped,
not failed: vision templates that expect content-part lists, templates without system or
tool turns (Cohere, Gemma 1-3 insist on alternating user/assistant roles), templates that
drop tool calls, and the original DeepSeek-V3 template, which concatenates ``arguments`` as
a string (TRL ships ``deepseekv3_training`` for the dict form transformers documents; use
``prime_sft``'s JSON-string arguments for the original). The exit status is 1 when any other
template fails.
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
    (
        "can only concatenate str",
        "the original template joins arguments as a string; TRL's *_training patch takes "
        "the documented dict form",
    ),
)


def build(out: Path) -> int:
    from bf_assets.batch.run import review_roots
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


def _render_all(template: str, rows: list[dict[str, Any]]) -> tuple[list[str], str | None]:
    """Rendered rows and the problem found, if any."""
    tok = _tokenizer(template, [])
    texts = []
    rendered_calls = 0
    for r in rows:
        conv = r["prompt"] + r["completion"]
        try:
            text = tok.apply_chat_template(conv, tools=r["tools"], tokenize=False)
        except Exception as exc:  # jinja raises several types
            return texts, f"error: {type(exc).__name__}: {str(exc)[:120]}"
        for fn in _calls(conv):
            args = fn["arguments"]
            if not isinstance(args, dict):
                return texts, f"arguments loaded as {type(args).__name__}, not a dict"
            if json.dumps(json.dumps(args))[1:-1] in text:  # the object's JSON, escaped
                return texts, "double-encoded arguments"
            if any(str(k) in text for k in args):
                rendered_calls += 1
        texts.append(text)
    if not rendered_calls and any(_calls(r["completion"]) for r in rows):
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
        labels = [x for row in trainer.train_dataset for x in (row.get("completion_mask") or [])]
        assert not labels or any(labels), "no completion token is a training target"
        result = trainer.train()
    return float(result.training_loss)


def check(release: Path, only: list[str]) -> int:
    import datasets
    import trl

    ds = datasets.load_dataset(str(release), "trl_sft", split="train")
    rows = [dict(r) for r in ds]
    folder = Path(trl.__file__).parent / "chat_templates"
    names = sorted(p.stem for p in folder.glob("*.jinja"))
    if only:
        names = [n for n in names if n in only]
    print(
        f"trl {trl.__version__}, datasets {datasets.__version__}: {len(rows)} rows, "
        f"{len(names)} templates"
    )
    failed = []
    for name in names:
        template = (folder / f"{name}.jinja").read_text()
        texts, problem = _render_all(template, rows)
        why = next((w for text, w in NOT_APPLICABLE if problem and text in problem), None)
        if why:
            problem = f"{problem} ({why})"
        tolerated = problem and (
            why or name.startswith(VISION) or problem.startswith("no tool call rendered")
        )
        if problem and not tolerated:
            failed.append(name)
            print(f"FAIL {name}: {problem}")
            continue
        if problem:
            print(f"skip {name}: {problem}")
            continue
        try:
            loss = _train_one_step(template, texts, ds, "{% generation %}" in template)
        except Exception as exc:
            failed.append(name)
            print(f"FAIL {name}: SFTTrainer: {type(exc).__name__}: {str(exc)[:160]}")
            continue
        ok = math.isfinite(loss)
        if not ok:
            failed.append(name)
        print(
            f"{'ok  ' if ok else 'FAIL'} {name}: rendered {len(texts)} rows, one step, loss {loss:.3f}"
        )
    print(f"{len(names) - len(failed)} of {len(names)} templates passed or were skipped")
    return 1 if failed else 0


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
