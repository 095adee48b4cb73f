"""gitleaks-format rules (TOML ``[[rules]]``) converted to the rule data the engine loads.

:func:`convert` turns a gitleaks configuration into the document ``rules/gitleaks.json``
holds: every RE2 pattern translated to Python (:mod:`bf_assets.redact.golang`) and compiled,
the allowlists that can apply to text, and the literal words an anchored rule starts with.
It serves a custom rules file at run time and the maintainer's regeneration of the shipped
rules (``tools/update_gitleaks_rules.py``).  A pattern that does not translate or compile
stops the conversion.
"""

from __future__ import annotations

import re
from typing import Any

from bf_assets.redact.golang import TranslationError, compile_go

# gitleaks' semi-generic rules start with an identifier prefix that only widens the match:
# ``(?i)[\w.-]{0,50}?(?:keyword)...``.  Python's backtracking engine pays for it at every
# position, so it is dropped and the rule is matched at its keyword positions instead
# (``anchored``); the engine rebuilds the prefix when an allowlist looks at the whole match.
_PREFIX = r"[\w.-]{0,50}?"
_PREFIX_FORMS = ((f"(?i){_PREFIX}", "(?i)"), (f"{_PREFIX}(?i:{_PREFIX}", "(?i:"))


def lead_literals(pattern: str) -> list[str] | None:
    """The lowercase literal words every match of ``pattern`` starts with (one per
    alternative of its leading group), or ``None`` when an alternative has none of at least
    two characters.  ``[Mm]eraki`` counts as the literal ``meraki``."""
    import re._constants as c
    import re._parser as p

    def lead(items: list[Any]) -> list[str] | None:
        word = ""
        for op, av in items:
            if op is c.LITERAL:
                word += chr(av).lower()
            elif op is c.IN and all(o is c.LITERAL for o, _ in av):
                letters = {chr(v).lower() for _, v in av}
                if len(letters) != 1:
                    break
                word += letters.pop()
            elif op is c.SUBPATTERN and not word:
                return lead(list(av[3]))
            elif op is c.BRANCH and not word:
                out: list[str] = []
                for alt in av[1]:
                    sub = lead(list(alt))
                    if sub is None:
                        return None
                    out.extend(sub)
                return out
            else:
                break
        return [word] if len(word) >= 2 else None

    return lead(list(p.parse(pattern)))


def _strip_prefix(go: str) -> tuple[str, bool]:
    for head, repl in _PREFIX_FORMS:
        if go.startswith(head):
            return repl + go[len(head) :], True
    return go, False


def _allowlists(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Allowlists that can apply to text with no file path or commit (path- and commit-only
    ones, and ``AND`` ones that need a path, never match here)."""
    out = []
    for a in raw:
        regexes, stopwords = a.get("regexes", []), a.get("stopwords", [])
        needs_location = bool(a.get("paths") or a.get("commits"))
        if not regexes and not stopwords:
            continue
        if needs_location and a.get("condition", "OR").upper() == "AND":
            continue
        for rx in regexes:
            compile_go(rx)
        out.append(
            {
                "target": a.get("regexTarget", "secret"),
                "condition": a.get("condition", "OR").upper(),
                "go_regexes": regexes,
                "regexes": [compile_go(rx).pattern for rx in regexes],
                "stopwords": [w.lower() for w in stopwords],
            }
        )
    return out


def convert(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The rule document for a parsed gitleaks config, and the ids left out (with why)."""
    rules, skipped = [], []
    for r in config.get("rules", []):
        rid = r["id"]
        go = r.get("regex")
        if not go:
            skipped.append(f"{rid}: matches file paths only")
            continue
        body, anchored = _strip_prefix(go)
        try:
            py = compile_go(body).pattern
            allow = _allowlists(r.get("allowlists", []))
        except (TranslationError, re.error) as exc:
            raise SystemExit(f"{rid}: {exc}") from exc
        anchors = lead_literals(py) if anchored else None
        rules.append(
            {
                "id": rid,
                "description": r.get("description", ""),
                "go_regex": go,
                "regex": py,
                "anchored": anchored,
                "anchors": sorted(set(anchors)) if anchors else None,
                "keywords": sorted({k.lower() for k in r.get("keywords", [])}),
                "entropy": float(r.get("entropy", 0.0)),
                "secret_group": int(r.get("secretGroup", 0)),
                "allowlists": allow,
                "path": r.get("path"),
            }
        )
    glob = config.get("allowlist", {})
    doc = {
        "global_allowlist": {
            "go_regexes": glob.get("regexes", []),
            "regexes": [compile_go(rx).pattern for rx in glob.get("regexes", [])],
            "stopwords": [w.lower() for w in glob.get("stopwords", [])],
        },
        "rules": rules,
    }
    return doc, skipped
