"""The generic forms, the look-alikes, and the second look's independence."""

from __future__ import annotations

from collections import Counter

import pytest
from leakproof_corpus import Gen, corpus, look_alikes

import bf_assets.redact as redact
from bf_assets.curate.detect_secrets_scan import PLUGIN_NAMES, detect
from bf_assets.curate.scan import scan_value
from bf_assets.redact import find_secrets, is_secret_key, redact_text

G = Gen(3)
PW = G.s(14)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"MYSQL_ROOT_PASSWORD={PW}", PW),
        (f"export API_TOKEN={PW}", PW),
        (f"  password: {PW} # prod", PW),
        (f"password: correct horse {PW}", f"correct horse {PW}"),
        (f'{{"api_key": "{PW}"}}', PW),
        (f'{{\\"passwd\\": \\"{PW}\\"}}', PW),
        (f'secret = "{PW}"', PW),
        (f"x-api-key: {PW}", PW),
        (f"curl -H 'Authorization: Bearer {PW}' https://x", f"Bearer {PW}"),
        (f"--password={PW}", PW),
        (f"login --token {PW}", PW),
        (f'if password == "{PW}":', PW),
        (f'"{PW}" == db_password', PW),
        (f"postgresql+psycopg2://u:p@ss{PW}@host/db", f"p@ss{PW}"),
        (f"postgres:\\/\\/u:{PW}@host\\/db", PW),
        (f"redis://:{PW}@cache:6379", PW),
        (f"https://a:{PW}:x/y@example.com/r", f"{PW}:x/y"),
    ],
)
def test_generic_forms_lose_the_whole_value(text: str, secret: str) -> None:
    counts: Counter[str] = Counter()
    out = redact_text(text, counts)
    assert secret not in out and PW not in out, out
    assert sum(counts.values()) >= 1 and "[REDACTED:" in out


@pytest.mark.parametrize("text", look_alikes())
def test_look_alikes_are_left_alone(text: str) -> None:
    assert redact_text(text) == text
    assert detect(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "http://localhost:8080/@scope/pkg",
        "it takes ~5 minutes and the token is valid",
        "eos_token: </s>",
        "password: ${DB_PASSWORD}",
        'api_key = os.environ["API_KEY"]',
        "def f(token: Optional[str] = None):",
        "The key insight is simple: keep it.",
    ],
)
def test_code_and_prose_are_left_alone(text: str) -> None:
    assert redact_text(text) == text


def test_private_key_blocks_of_every_kind() -> None:
    for p in corpus():
        if "key" in p.name.lower() and "BEGIN" in p.text:
            out = redact_text(p.text)
            assert "PRIVATE KEY" not in out and p.core[-8:] not in out, p.name
    assert redact_text('grep "BEGIN RSA PRIVATE KEY" x') == 'grep "[REDACTED:private_key]" x'


def test_counts_and_kinds() -> None:
    counts: Counter[str] = Counter()
    text = f"a sk-ant-api03-{G.s(40)} b MYSQL_PASSWORD={PW}"
    assert redact_text(redact_text(text, counts)) == redact_text(text)  # stable
    assert counts == Counter({"anthropic_key": 1, "secret_assignment": 1})
    assert [k for k, _ in find_secrets(text)] == ["anthropic_key", "secret_assignment"]


def test_secret_key_names() -> None:
    for k in ("api_key", "x-api-key", "Authorization", "githubToken", "db_password", "passphrase"):
        assert is_secret_key(k), k
    for k in ("max_tokens", "eos_token", "next_token", "tokens", "n_tokens", "keyboard"):
        assert not is_secret_key(k), k


def test_the_second_look_does_not_use_the_redactor(monkeypatch: pytest.MonkeyPatch) -> None:
    """PUBLISH_SECRET fires with the redactor's rules gone, names the detector and where,
    never the secret."""
    monkeypatch.setattr(redact, "redact_text", lambda t, c=None: t)
    monkeypatch.setattr(redact, "secret_spans", lambda t: [])
    secrets = [p for p in corpus() if p.name in ("stripe live", "github pat", "json api_key")]
    for p in secrets:
        found = scan_value({"content": p.text}, "data/rollouts/train-00000.parquet row 3")
        assert found and {f.check for f in found} == {"PUBLISH_SECRET"}, p.name
        f = found[0]
        assert f.file == "data/rollouts/train-00000.parquet row 3"
        assert f.evidence and f.evidence.split(" (")[0] in PLUGIN_NAMES
        assert p.secret not in f.message + (f.evidence or "")
