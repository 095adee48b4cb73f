"""Gitleaks' rules compiled on first use (``LazyRule``) read and match exactly as the rules
compiled up front: same patterns, widths, allowlists and spans."""

from __future__ import annotations

import dataclasses

from leakproof_corpus import corpus, look_alikes

from bf_assets.redact import default_rules
from bf_assets.redact.engine import _PATTERN_SLOT, LazyRule, Rule, RuleSet
from bf_assets.redact.generic import GENERIC_RULES, VENDOR_RULES
from bf_assets.redact.gitleaks import global_allow_from_doc, load_doc, load_samples, rules_from_doc

DOC = load_doc()
SAMPLES = [s for v in load_samples().values() for s in v.get("tps", []) + v.get("fps", [])]
TEXTS = SAMPLES + [p.text for p in corpus()] + look_alikes()


def _rule_set(lazy: bool) -> RuleSet:
    rules = [*VENDOR_RULES, *rules_from_doc(DOC, lazy=lazy), *GENERIC_RULES]
    return RuleSet(rules, global_allow_from_doc(DOC))


def test_lazy_rules_read_as_the_compiled_ones() -> None:
    eager = rules_from_doc(DOC)
    lazy = rules_from_doc(DOC, lazy=True)
    assert all(type(r) is Rule for r in eager)
    assert all(isinstance(r, LazyRule) for r in lazy)
    for a, b in zip(eager, lazy, strict=True):
        assert _PATTERN_SLOT.__get__(b) is None  # nothing compiled yet
        assert (a.kind, a.keywords, a.group, a.entropy, a.anchors, a.whole_text) == (
            b.kind,
            b.keywords,
            b.group,
            b.entropy,
            b.anchors,
            b.whole_text,
        )
        assert b.pattern.pattern == a.pattern.pattern and b.pattern.flags == a.pattern.flags
        assert b.min_len == a.min_len
        assert [(x.target, [r.pattern for r in x.regexes], x.stopwords) for x in a.allows] == [
            (x.target, [r.pattern for r in x.regexes], x.stopwords) for x in b.allows
        ]


def test_lazy_rule_set_finds_the_same_spans() -> None:
    eager, lazy = _rule_set(False), _rule_set(True)
    for text in TEXTS:
        assert lazy.spans(text) == eager.spans(text), text


def test_only_triggered_rules_are_compiled() -> None:
    rs = _rule_set(True)
    assert rs.spans("nothing secret in this sentence at all") == []
    gitleaks = [r for r in rs.rules if isinstance(r, LazyRule)]
    compiled = [r.kind for r in gitleaks if _PATTERN_SLOT.__get__(r) is not None]
    assert len(compiled) < len(gitleaks) // 4


def test_the_default_rules_are_lazy() -> None:
    assert any(isinstance(r, LazyRule) for r in default_rules().rules)


def _eager(rule: Rule) -> Rule:
    """``rule`` built up front (a plain ``Rule`` compiled now), field for field."""
    if not isinstance(rule, LazyRule):
        return rule
    names = [f.name for f in dataclasses.fields(Rule) if f.name != "min_len"]
    return Rule(**{n: getattr(rule, n) for n in names})


def test_vendor_and_generic_rules_are_lazy_and_find_the_same_spans() -> None:
    lazy = [*VENDOR_RULES, *GENERIC_RULES]
    assert sum(isinstance(r, LazyRule) for r in lazy) >= 30
    fresh = [_eager(r) for r in lazy]
    assert [r.min_len for r in fresh] == [r.min_len for r in lazy]
    eager_set, lazy_set = RuleSet(fresh), RuleSet(lazy)
    for text in TEXTS:
        assert lazy_set.spans(text) == eager_set.spans(text), text
