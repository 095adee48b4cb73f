"""The engine's shortcuts never skip a match: a pattern's narrowest match, one-character gate
words, positions only where a rule reads them, the finders' literal prechecks."""

from __future__ import annotations

import pytest
from leakproof_corpus import corpus, look_alikes

from bf_assets.redact import default_rules, redact_text
from bf_assets.redact.engine import lower_same_length, uses_positions
from bf_assets.redact.gitleaks import load_samples

SAMPLES = [s for v in load_samples().values() for s in v.get("tps", []) + v.get("fps", [])]
TEXTS = SAMPLES + [p.text for p in corpus()] + look_alikes()


def test_no_match_is_narrower_than_its_rules_min_len() -> None:
    rules = default_rules().rules
    for text in TEXTS:
        for r in rules:
            if r.pattern is None:
                continue
            for m in r.pattern.finditer(text):
                assert m.end() - m.start() >= r.min_len, (r.kind, text)


def _occurrences(low: str, word: str) -> list[int]:
    out, i = [], low.find(word)
    while i >= 0:
        out.append(i)
        i = low.find(word, i + 1)
    return out


@pytest.mark.parametrize("text", TEXTS[:400] + ["a: b. c", "no gate here", "x.y", "1:2"])
def test_triggered_is_every_gated_rule_with_the_positions_it_reads(text: str) -> None:
    rs = default_rules()
    low = lower_same_length(text)
    got = rs.triggered(text)
    want: dict[int, list[int]] = {}
    for i, r in enumerate(rs.rules):
        if r.keywords and not any(k in low for k in r.keywords):
            continue
        if r.anchors:
            want[i] = sorted(p for a in r.anchors for p in _occurrences(low, a))
        elif uses_positions(r):
            want[i] = sorted(p for k in r.keywords for p in _occurrences(low, k))
        else:
            want[i] = []
    assert {i: sorted(p) for i, p in got.items()} == want


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ('if "Zq8-s3cret-Value" == db_password:', "Zq8-s3cret-Value"),
        ('private_key "Zq8s3cretValue77";', "Zq8s3cretValue77"),
        ("postgres://admin:Zq8pw0rd77@db.internal/x", "Zq8pw0rd77"),
        ('{"u": "postgres:\\/\\/admin:Zq8pw0rd77@db.internal\\/x"}', "Zq8pw0rd77"),
        (
            "auth eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlMTIzNDU2Nzg",
            "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
        ),
    ],
)
def test_the_finders_prechecks_keep_their_matches(text: str, gone: str) -> None:
    assert gone not in redact_text(text)
