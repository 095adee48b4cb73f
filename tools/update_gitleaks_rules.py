"""Regenerate ``rules/gitleaks.json`` (and its test samples) from a gitleaks checkout.

    python tools/update_gitleaks_rules.py --gitleaks PATH [--rev REV]

``PATH`` is a gitleaks work tree or git directory (``git clone
https://github.com/gitleaks/gitleaks``).  The converter reads ``config/gitleaks.toml`` (the
generated default configuration) and the rule sources under ``cmd/generate/config/rules/``
(for the literal true/false-positive samples each rule is validated with upstream), translates
every RE2 pattern to Python (:mod:`bf_assets.redact.convert`), compiles it, checks every literal
sample against its rule, and writes:

* ``bf_assets/redact/rules/gitleaks.json``: the rules as data (id, description, the original
  and the translated pattern, keywords, entropy, secret group, allowlists);
* ``bf_assets/redact/rules/gitleaks-samples.json``: the literal samples, base64-encoded so the
  repository itself does not look like it holds credentials to a scanner;
* ``bf_assets/redact/rules/LICENSE-gitleaks``: the upstream MIT license.

The converter refuses to write anything if a pattern does not translate or compile.
"""

from __future__ import annotations

import argparse
import ast
import base64
import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bf_assets.redact.convert import convert

RULES_DIR = Path(__file__).resolve().parents[1] / "bf_assets" / "redact" / "rules"
RULES_FILE = RULES_DIR / "gitleaks.json"
SAMPLES_FILE = RULES_DIR / "gitleaks-samples.json"
LICENSE_FILE = RULES_DIR / "LICENSE-gitleaks"
CONFIG_PATH = "config/gitleaks.toml"
RULE_SOURCES = "cmd/generate/config/rules"
UPSTREAM = "https://github.com/gitleaks/gitleaks"


class Source:
    """Files of a gitleaks checkout: a work tree, or a git directory at ``rev``."""

    def __init__(self, path: Path, rev: str) -> None:
        self.path, self.rev = path, rev
        self.worktree = (path / CONFIG_PATH).is_file()

    def read(self, rel: str) -> str:
        if self.worktree:
            return (self.path / rel).read_text(encoding="utf-8")
        return self._git("show", f"{self.rev}:{rel}")

    def list(self, rel: str) -> list[str]:
        if self.worktree:
            return sorted(p.relative_to(self.path).as_posix() for p in (self.path / rel).glob("*"))
        return self._git("ls-tree", "--name-only", self.rev, f"{rel}/").split()

    def commit(self) -> str | None:
        try:
            git_dir = ["--git-dir", str(self.path)] if not self.worktree else ["-C", str(self.path)]
            return subprocess.run(
                ["git", *git_dir, "rev-parse", self.rev], capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    def _git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", str(self.path), *args], capture_output=True, text=True, check=True
        ).stdout


@dataclass
class Samples:
    tps: list[str] = field(default_factory=list)
    fps: list[str] = field(default_factory=list)


_GO_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|`[^`]*`|//[^\n]*|[A-Za-z_][\w.]*|:=|\S', re.S)


def _go_string(tok: str) -> str | None:
    if tok.startswith("`"):
        return tok[1:-1]
    try:
        value = ast.literal_eval(tok)  # Go's interpreted string escapes are Python's
    except (SyntaxError, ValueError):
        return None
    return value if isinstance(value, str) else None


def _literal_samples(body: str) -> Samples:
    """The standalone string literals of a rule function's ``tps`` and ``fps`` lists: elements
    of a ``[]string{...}`` or ``append(tps, ...)``, never concatenated, never a call argument."""
    out = Samples()
    toks = [t for t in _GO_TOKEN.findall(body) if not t.startswith("//")]
    target: list[str] | None = None
    stack: list[str] = []  # "{" or the name of the call a "(" opens
    for i, tok in enumerate(toks):
        prev = toks[i - 1] if i else ""
        if tok in ("tps", "fps") and toks[i + 1 : i + 2] in ([":="], ["="]):
            target = out.tps if tok == "tps" else out.fps
        elif tok == "return":
            target = None
        if tok == "{":
            stack.append("{")
        elif tok == "(":
            stack.append(prev)
        elif tok in ("}", ")") and stack:
            stack.pop()
        elif tok[0] in '"`' and target is not None and stack:
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            if prev == "+" or nxt in ("+", ":") or stack[-1] not in ("{", "append"):
                continue
            value = _go_string(tok)
            if value:
                target.append(value)
    return out


def extract_samples(src: Source) -> dict[str, Samples]:
    found: dict[str, Samples] = {}
    for rel in src.list(RULE_SOURCES):
        if not rel.endswith(".go") or rel.endswith("_test.go"):
            continue
        for body in re.split(r"\nfunc ", src.read(rel)):
            m = re.search(r'RuleID:\s*"([^"]+)"', body)
            if m:
                s = _literal_samples(body)
                if s.tps or s.fps:
                    found.setdefault(m.group(1), Samples()).tps.extend(s.tps)
                    found[m.group(1)].fps.extend(s.fps)
    return found


def _encode(values: list[str]) -> list[str]:
    return [base64.b64encode(v.encode()).decode() for v in values]


def check_samples(doc: dict[str, Any], samples: dict[str, Samples]) -> list[str]:
    """Problems: a true-positive sample its own rule does not find."""
    from bf_assets.redact.engine import RuleSet
    from bf_assets.redact.gitleaks import rules_from_doc

    problems = []
    by_id = {r.kind: r for r in rules_from_doc(doc)}
    for rid, s in samples.items():
        rule = by_id.get(rid)
        if rule is None:
            continue
        one = RuleSet([rule])
        for tp in s.tps:
            if not one.spans(tp):
                problems.append(f"{rid}: a true-positive sample is not found")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gitleaks", type=Path, required=True, help="gitleaks work tree or git dir")
    ap.add_argument("--rev", default="HEAD", help="revision to read from a git dir")
    ap.add_argument("--out", type=Path, default=RULES_DIR)
    args = ap.parse_args(argv)
    src = Source(args.gitleaks, args.rev)
    config = tomllib.loads(src.read(CONFIG_PATH))
    doc, skipped = convert(config)
    samples = extract_samples(src)
    doc = {
        "source": {
            "repository": UPSTREAM,
            "commit": src.commit(),
            "file": CONFIG_PATH,
            "license": "MIT (see LICENSE-gitleaks)",
            "generated_by": "python tools/update_gitleaks_rules.py",
            "skipped": skipped,
        },
        **doc,
    }
    problems = check_samples(doc, samples)
    for p in problems:
        print("warning:", p, file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / RULES_FILE.name).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    encoded = {
        rid: {"tps": _encode(s.tps), "fps": _encode(s.fps)}
        for rid, s in sorted(samples.items())
        if rid in {r["id"] for r in doc["rules"]}
    }
    (args.out / SAMPLES_FILE.name).write_text(
        json.dumps({"encoding": "base64", "samples": encoded}, indent=1) + "\n", encoding="utf-8"
    )
    (args.out / LICENSE_FILE.name).write_text(src.read("LICENSE"), encoding="utf-8")
    n_tp = sum(len(s["tps"]) for s in encoded.values())
    print(
        f"{len(doc['rules'])} rules ({len(skipped)} skipped), {n_tp} literal samples for "
        f"{len(encoded)} rules, {len(problems)} sample problems -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
