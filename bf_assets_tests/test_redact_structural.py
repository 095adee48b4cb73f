"""Secrets found by structure: vendors and shapes no rule names, in every syntax.

Every secret is generated at run time (``unlisted_corpus``, seeded); the corpus the bench
reports on uses another seed, so these tests are not the figures the rules were tuned on.
"""

from __future__ import annotations

import base64
import re
from collections import Counter

import pytest
from unlisted_corpus import Gen, Planted, corpus, look_alikes

from bf_assets.curate.detect_secrets_scan import STRUCTURAL, detect
from bf_assets.curate.scan import scan_value
from bf_assets.redact import redact_text
from bf_assets.redact.engine import RuleSet
from bf_assets.redact.structural import (
    KIND_ASSIGN,
    KIND_FLAG,
    KIND_KEY,
    KIND_TOKEN,
    STRUCTURAL_RULES,
    der_private_key,
    token_is_credential,
)

CORPUS = corpus(seed=101, rounds=2)
STRUCTURAL_ONLY = RuleSet(STRUCTURAL_RULES)
_MARK = re.compile(r"\[REDACTED:[a-z0-9_\-]+\]")


def _outside_spans_unchanged(text: str, out: str) -> bool:
    """``out`` is ``text`` with some spans replaced by markers, every other byte the same."""
    pieces = _MARK.split(out)
    pos = 0
    for i, piece in enumerate(pieces):
        j = text.find(piece, pos) if i else (0 if text.startswith(piece) else -1)
        if j < 0:
            return False
        pos = j + len(piece)
    return text.endswith(pieces[-1])


@pytest.mark.parametrize("planted", CORPUS, ids=[f"{i}-{p.name}" for i, p in enumerate(CORPUS)])
def test_unlisted_secret_is_redacted_and_nothing_else(planted: Planted) -> None:
    counts: Counter[str] = Counter()
    out = redact_text(planted.text, counts)
    assert planted.leak(out) is None, out
    assert _outside_spans_unchanged(planted.text, out), out
    # the structural rules take only the secret: each of their spans lies inside the
    # secret's own place in the text (or, for a key block, inside the block)
    where = planted.text.find(planted.secret)
    for s, e, _, _ in STRUCTURAL_ONLY.spans(planted.text):
        if where >= 0:
            assert where <= s and e <= where + len(planted.secret), planted.text[s:e]
        else:
            assert planted.text[:s].startswith("cat key.pem") and e <= len(planted.text) - 4


@pytest.mark.parametrize("text", look_alikes())
def test_look_alikes_survive_byte_for_byte(text: str) -> None:
    assert redact_text(text) == text
    assert not [d for d in detect(text) if d.startswith(STRUCTURAL)]


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda g, s: f"token={s}", None),
        (lambda g, s: f"printed {s} here", KIND_TOKEN),
        (lambda g, s: f"<secretToken>{g.s(32)}</secretToken>", KIND_ASSIGN),
        (lambda g, s: f"sshpass -p {g.password()} ssh host", KIND_FLAG),
    ],
)
def test_kinds_name_what_was_found(make: object, kind: str | None) -> None:
    g = Gen(5)
    token, _ = g.token()
    text = make(g, token)  # type: ignore[operator]
    counts: Counter[str] = Counter()
    out = redact_text(text, counts)
    assert out != text and sum(counts.values()) >= 1
    if kind is not None:
        assert kind in counts, counts


def test_flags_that_take_no_secret_are_left_alone() -> None:
    for text in (
        "mysql -u root -p app_db",
        "docker run -p 8080:80 -v data:/data nginx",
        "ssh -p 2222 deploy@host",
        "redis-cli -h cache -p 6379 PING",
        "openssl enc -aes-256-cbc -pass env:KEY_PASS -in a -out b",
        "gh secret set DEPLOY_KEY < key.txt",
        "curl -u admin https://example.com",
        "htpasswd -c /etc/nginx/.htpasswd admin",
    ):
        assert redact_text(text) == text, text


def test_private_key_bodies_are_told_from_public_ones() -> None:
    g = Gen(9)
    material = bytes(g.rng.getrandbits(8) for _ in range(64))
    rsa = b"\x30\x82\x01\x00\x02\x01\x00\x02\x81\x81" + material  # PKCS#1: version 0, modulus
    ec = b"\x30\x77\x02\x01\x01\x04\x20" + material  # SEC1: version 1, the private octets
    cert = b"\x30\x82\x03\x00\x30\x82\x02\x00\xa0\x03\x02\x01\x02" + material
    spki = b"\x30\x82\x01\x22\x30\x0d\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x01\x01" + material
    assert der_private_key(rsa) and der_private_key(ec)
    assert not der_private_key(cert) and not der_private_key(spki)
    body = base64.b64encode(rsa + material * 4).decode()
    out = redact_text(f"der:\n{body}\nend")
    assert out == f"der:\n[REDACTED:{KIND_KEY}]\nend"
    public = base64.b64encode(spki + material * 4).decode()
    assert redact_text(f"pub:\n{public}\nend") == f"pub:\n{public}\nend"


def test_ids_that_look_like_tokens_are_not_credentials() -> None:
    g = Gen(13)
    for token in (
        "call_" + g.s(24),
        "toolu_01" + g.s(22),
        "write_file-1769377569883-54215b85bdc32",
        "build-" + g.s(40, "0123456789abcdef"),
        "claude-3-5-sonnet-20241022",
        "reserves-at-risk-calc__yo7qFCk",
    ):
        assert not token_is_credential(token), token
    for _ in range(50):
        token, _ = g.token()
        assert token_is_credential(token), token


def test_second_look_flags_a_surviving_structural_token() -> None:
    """A prefixed random token that reached published bytes blocks the release, named by
    the detector and the kind, never by its value."""
    g = Gen(21)
    token, _ = g.token()
    hits = detect(f"the tool printed {token} and exited")
    assert f"{STRUCTURAL} ({KIND_TOKEN})" in hits
    found = scan_value({"content": f"echo {token}"}, "data/rollouts/train-00000.parquet row 1")
    assert {f.check for f in found} == {"PUBLISH_SECRET"}
    assert all(token not in f.message + (f.evidence or "") for f in found)
    # what the redactor wrote is not flagged again
    assert not [d for d in detect(redact_text(f"echo {token}")) if d.startswith(STRUCTURAL)]


def test_every_context_and_shape_is_caught_on_a_larger_corpus() -> None:
    """The bench's measure (a), on a seed of its own: no whole or partial leak."""
    leaks = [(p.name, p.leak(redact_text(p.text))) for p in corpus(seed=202, rounds=6)]
    assert [x for x in leaks if x[1]] == []
