"""The rule data: gitleaks' rules translated, compiled and checked against their samples."""

from __future__ import annotations

import random
import re
import re._constants as C  # noqa: N812
import re._parser as P  # noqa: N812
from typing import Any

import pytest

from bf_assets.redact import default_rules, load_custom, redact_text
from bf_assets.redact.convert import _strip_prefix, convert
from bf_assets.redact.engine import Rule, RuleSet
from bf_assets.redact.gitleaks import global_allow_from_doc, load_doc, load_samples, rules_from_doc
from bf_assets.redact.golang import TranslationError, go_to_python

DOC = load_doc()
RULES = {r.kind: r for r in rules_from_doc(DOC)}
GLOBAL = global_allow_from_doc(DOC)
SAMPLES = load_samples()
PATH_RULES = {r["id"] for r in DOC["rules"] if r.get("path")}


@pytest.mark.parametrize(
    ("go", "py"),
    [
        (r"\b(p8e-(?i)[a-z0-9]{32})", r"\b(p8e-(?i:[a-z0-9]{32}))"),
        (r"a(?i)b|c(d|e)", r"a(?i:b)|(?i:c(d|e))"),
        (r"(?i)x(?-i:Y)", r"(?i)x(?-i:Y)"),
        (r"curl(?:\z|x)", r"curl(?:\Z|x)"),
        (r"[[:alnum:]_]+", r"[a-zA-Z0-9_]+"),
        (r"[a[b]", r"[a\[b]"),
        (r"(?<name>x)", r"(?P<name>x)"),
    ],
)
def test_go_translation(go: str, py: str) -> None:
    assert go_to_python(go) == py
    re.compile(py)


@pytest.mark.parametrize("go", [r"\p{L}+", r"(?U)a+", r"\Qa.b\E", r"[[:foo:]]"])
def test_untranslatable_constructs_fail_loudly(go: str) -> None:
    with pytest.raises(TranslationError):
        go_to_python(go)


def test_every_gitleaks_rule_is_converted_and_compiles() -> None:
    assert DOC["source"]["repository"].endswith("gitleaks/gitleaks")
    assert len(RULES) >= 200
    assert DOC["source"]["skipped"] == ["pkcs12-file: matches file paths only"]
    for r in DOC["rules"]:
        body, anchored = _strip_prefix(r["go_regex"])
        assert go_to_python(body) == r["regex"], r["id"]  # the data is the converter's output
        assert anchored == r["anchored"]
        if r["anchors"]:  # an anchored rule is matched where its leading words occur
            assert anchored and all(len(a) >= 2 for a in r["anchors"])
        assert r["keywords"], r["id"]  # every rule is gated by keywords
    assert len(default_rules()) > len(RULES)


@pytest.mark.parametrize("rid", sorted(SAMPLES))
def test_gitleaks_samples(rid: str) -> None:
    """Upstream's literal true positives are found by their own rule; its false positives
    are not (rules that gitleaks restricts to a file path take the path's negatives along)."""
    one = RuleSet([RULES[rid]], GLOBAL)
    for tp in SAMPLES[rid]["tps"]:
        assert one.spans(tp), (rid, tp[:40])
    if rid not in PATH_RULES:
        for fp in SAMPLES[rid]["fps"]:
            assert not one.spans(fp), (rid, fp[:40])


# --------------------------------------------------------------------------- generated samples

_PRINTABLE = [chr(c) for c in range(0x21, 0x7F)]


def _emit(sub: Any, rng: random.Random, groups: dict[int, str]) -> str:
    out = []
    for op, av in sub:
        if op is C.LITERAL:
            out.append(chr(av))
        elif op is C.NOT_LITERAL:
            out.append(rng.choice([c for c in "aZ7q" if ord(c) != av]))
        elif op is C.ANY:
            out.append(rng.choice("abcXYZ019"))
        elif op is C.IN:
            out.append(_pick(av, rng))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
            lo, hi, item = av
            hi = lo + 6 if hi is C.MAXREPEAT else hi
            n = rng.randint(lo, max(lo, hi))
            out.extend(_emit(item, rng, groups) for _ in range(n))
        elif op is C.SUBPATTERN:
            gid, _, _, item = av
            text = _emit(item, rng, groups)
            if gid:
                groups[gid] = text
            out.append(text)
        elif op is C.BRANCH:
            out.append(_emit(rng.choice(av[1]), rng, groups))
        elif op is C.GROUPREF:
            out.append(groups.get(av, ""))
        elif op is C.AT and av is C.AT_END:
            out.append("")
        # lookarounds and other assertions emit nothing
    return "".join(out)


def _pick(items: list[tuple[Any, Any]], rng: random.Random) -> str:
    negate = any(op is C.NEGATE for op, _ in items)
    allowed: set[str] = set()
    for op, av in items:
        if op is C.LITERAL:
            allowed.add(chr(av))
        elif op is C.RANGE:
            allowed.update(chr(c) for c in range(av[0], av[1] + 1) if c < 0x7F)
        elif op is C.CATEGORY:
            probe = {
                C.CATEGORY_DIGIT: "0123456789",
                C.CATEGORY_WORD: "abcxyzABCXYZ0189_",
                C.CATEGORY_SPACE: " ",
            }
            allowed.update(probe.get(av, ""))
    if negate:
        allowed = {c for c in "aZ7q" if c not in allowed}
    return rng.choice(sorted(allowed)) if allowed else "a"


def generate(rule: Rule, rng: random.Random) -> str:
    assert rule.pattern is not None
    return _emit(P.parse(rule.pattern.pattern, rule.pattern.flags), rng, {})


@pytest.mark.parametrize("rid", sorted(RULES))
def test_a_sample_generated_from_each_rule_is_found(rid: str) -> None:
    """A string drawn from the rule's own pattern goes through the keyword prefilter, the
    anchoring or windows, the secret group, entropy and allowlists, and is found."""
    rule = RULES[rid]
    one = RuleSet([rule], GLOBAL)
    rng = random.Random(rid)
    for _ in range(60):
        sample = generate(rule, rng)
        context = " ".join(rule.keywords)  # gitleaks gates a rule on its keywords alone
        if rule.pattern.search(sample) and one.spans(f"{context}\n {sample} \n"):
            return
    pytest.fail(f"no generated sample of {rid} is found")


def test_custom_rules_in_gitleaks_format(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "extra.toml"
    f.write_text(
        "[[rules]]\nid = \"acme-key\"\nregex = '''\\bacme_[a-z0-9]{24}\\b'''\nkeywords = [\"acme_\"]\n"
    )
    (rule,) = load_custom(f)
    assert rule.kind == "acme-key" and rule.source == "custom:extra.toml"
    secret = "acme_" + "k3y9" * 6
    assert secret in redact_text(f"use {secret} now")  # not loaded unless named
    monkeypatch.setenv("BF_ASSETS_SECRET_RULES", str(f))
    assert redact_text(f"use {secret} now") == "use [REDACTED:acme-key] now"
    doc, skipped = convert({"rules": [{"id": "p", "path": "x"}]})
    assert doc["rules"] == [] and skipped
