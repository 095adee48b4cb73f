"""Load every config of a release with the installed ``datasets``, as the card says to.

Two steps (CI: ``./dev test-oldest-datasets``, a venv with the oldest supported datasets):

    .venv/bin/python tools/check_datasets_load.py build OUT     # project venv: sample release
    OTHER_PY tools/check_datasets_load.py check OUT             # any venv with datasets

``check`` needs only ``datasets`` (no bf_assets import): it reads the card (``README.md``)
of ``OUT``, loads each config listed in its YAML with ``load_dataset(OUT, config)``, and for a
config the card gives a string-features fallback for (the ``### `<config>` with `datasets`
older than …`` block) runs that block's code when the installed ``datasets`` is older than
the version the card names.  Each split must have the rows the card's ``dataset_info``
states, every ``rollouts`` row must have ``messages == prompt + completion``, and tool-call
``arguments`` must come back as objects in ``trl_sft`` (strings with the fallback) and as
JSON strings everywhere else.  Exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

SAMPLE_RUNS = Path(__file__).resolve().parents[1] / "data" / "runs" / "jobs"
FALLBACK = re.compile(
    r"### `(?P<config>[a-z_]+)` with `datasets` older than (?P<version>[0-9.]+)\n.*?"
    r"```python\n(?P<code>.*?)```",
    re.S,
)


def build(out: Path) -> int:
    from bf_assets.corpus.run import review_roots
    from bf_assets.publish.bundle import bundle_reviews

    reviews = review_roots([SAMPLE_RUNS]).trials
    with tempfile.TemporaryDirectory() as staging:
        b = bundle_reviews(reviews, staging)
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(b.path, out)
    print(f"release {b.tag} in {out}: {b.split_rows}")
    return 0


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def needs_fallback(config: str, card: str) -> bool:
    """Whether the card gives ``config`` a fallback line for the installed datasets."""
    import datasets

    return any(
        m["config"] == config and _version(datasets.__version__) < _version(m["version"])
        for m in FALLBACK.finditer(card)
    )


def load_config(root: Path, config: str, card: str, *, fallback: bool = False) -> Any:
    """``config`` of the release at ``root`` loaded as the card says for this datasets
    (``fallback``: with the card's fallback line whatever the version)."""
    import datasets

    for m in FALLBACK.finditer(card):
        if m["config"] == config and (fallback or needs_fallback(config, card)):
            scope: dict[str, Any] = {}
            code = m["code"].replace("REPO", repr(str(root))).replace(", revision=TAG", "")
            exec(code, scope)  # the card's own fallback line
            return scope[config]
    return datasets.load_dataset(str(root), config)


def arguments_types(ds: Any) -> set[str]:
    """The Python types the tool-call ``arguments`` of every message column come back as."""
    found: set[str] = set()
    for d in ds.values():
        cols = [c for c in ("prompt", "completion", "messages") if c in d.column_names]
        for row in d:
            for c in cols:
                for m in row[c] or []:
                    for tc in m["tool_calls"] or []:
                        found.add(type(tc["function"]["arguments"]).__name__)
    return found


def check(root: Path) -> int:
    import datasets
    import yaml

    card = (root / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(card.split("---\n", 2)[1])
    infos = {i["config_name"]: i for i in meta.get("dataset_info", [])}
    failed = 0
    print(f"datasets {datasets.__version__}")
    for cfg in meta["configs"]:
        name = cfg["config_name"]
        try:
            ds = load_config(root, name, card)
            want = {s["name"]: s["num_examples"] for s in infos[name]["splits"]}
            got = {split: len(d) for split, d in ds.items()}
            if got != want:
                raise AssertionError(f"rows {got}, the card says {want}")
            if name == "rollouts":
                for d in ds.values():
                    for row in d:
                        if row["messages"] != row["prompt"] + row["completion"]:
                            raise AssertionError("messages is not prompt + completion")
            # objects where the card promises them (trl_sft), JSON strings elsewhere
            objects = name == "trl_sft" and not needs_fallback(name, card)
            types = arguments_types(ds)
            if types - {"dict" if objects else "str"}:
                raise AssertionError(f"tool-call arguments come back as {sorted(types)}")
            print(f"ok   {name}: {got}, arguments as {sorted(types) or 'none'}")
        except Exception as exc:  # report every config, then fail
            failed += 1
            print(f"FAIL {name}: {type(exc).__name__}: {exc}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build").add_argument("out", type=Path)
    sub.add_parser("check").add_argument("out", type=Path)
    args = ap.parse_args(argv)
    return build(args.out) if args.cmd == "build" else check(args.out)


if __name__ == "__main__":
    sys.exit(main())
