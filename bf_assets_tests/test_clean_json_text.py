"""A JSON document inside a string (tool-call ``arguments``) stays valid JSON when cleaned.

The rules also run over the serialized document (a flag and its value sit in two strings
of an argument list), so a redaction there must stay inside one string literal and never
split an escape sequence; everything outside the redacted spans is kept.
"""

from __future__ import annotations

import json
import random
import string

import pytest

from bf_assets.redact.clean import clean_value, json_text_spans

ALNUM = string.ascii_letters + string.digits


def _secret(seed: int, n: int = 28) -> str:
    rng = random.Random(seed)
    while True:
        s = "".join(rng.choice(ALNUM) for _ in range(n))
        if any(c.isdigit() for c in s) and any(c.isupper() for c in s):
            return s


def _wrapped_at_80(line: str) -> str:
    """``line`` after a 53-column prompt, wrapped by an 80-column terminal."""
    full = "$ " + "-" * 50 + " " + line
    return "\n".join(full[i : i + 80] for i in range(0, len(full), 80))


CASES = {
    "argv flag and value": lambda k: ["mysql", "-u", "root", "--password", k, "shop"],
    "token wrapped by a terminal": lambda k: {"env": _wrapped_at_80(f"X-Service-Token: qzv-{k}")},
    "escaped quotes around a value": lambda k: {"cmd": f'export QZV_API_KEY="qzv_{k}"'},
    "unicode escape beside a key": lambda k: {"cmd": f"echo \u00e9 KEY=qzv_{k}\u00e9"},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_arguments_stay_valid_json_and_lose_the_secret(name: str) -> None:
    key = _secret(len(name))
    raw = json.dumps(CASES[name](key))
    cleaned = clean_value({"arguments": raw})["arguments"]
    doc = json.loads(cleaned)  # still JSON
    text = json.dumps(doc)
    for piece in (key[:8], key[10:18], key[-8:]):
        assert piece not in text, (name, cleaned)
    assert "[REDACTED:" in cleaned


def test_spans_are_cut_to_string_literals_and_whole_escapes() -> None:
    text = '["a", "b\\nsecretvalue", "c"]'
    start = text.index("b\\n") + 2  # inside the escape ``\n``
    end = text.index('"c"') + 2  # past the next literal's quote, into ``c``
    spans = json_text_spans(text, [(start, end, 0, "k")])
    assert [text[s:e] for s, e, _, _ in spans] == ["\\nsecretvalue", "c"]


def test_a_line_a_terminal_wrapped_is_read_whole() -> None:
    """An 80-column terminal cuts ``git clone https://user:pw@host`` between ``https`` and
    ``://``: neither line holds a URL, the two joined do."""
    from bf_assets.redact.clean import clean_text

    password = _secret(3, 14)
    line = "$ " + "-" * 62 + " git clone https://deploy:" + password + "@git.example.net/r.git"
    wrapped = "\n".join(line[i : i + 80] for i in range(0, len(line), 80))
    assert wrapped.split("\n")[0].endswith("https")
    out = clean_text(wrapped)[0]
    assert password[:8] not in out and password[-8:] not in out
    assert out.startswith(wrapped.split("\n")[0] + "\n://deploy:[REDACTED:")
