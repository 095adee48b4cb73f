"""Secrets in encoded form: the redactor and the second look see through URL encoding,
``\\u`` escapes, HTML entities, base64 (text and binary payloads), ``<br>``-split and
``> ``-quoted PEM blocks and tokens cut by a wrap; look-alikes stay byte for byte.

Every secret is generated at run time from a seeded random source (no credential-shaped
literal here)."""

from __future__ import annotations

import base64
import html
import re
import struct
import urllib.parse
import zlib
from collections import Counter
from dataclasses import dataclass

import pytest
from leakproof_corpus import ALNUM, B64, B64URL, HEX, Gen

from bf_assets.curate.detect_secrets_scan import detect
from bf_assets.redact import redact_text, secret_spans
from bf_assets.redact.clean import clean_document, clean_value, redact_text_stable

G = Gen(36)
PLACEHOLDER = re.compile(r"\[REDACTED:[A-Za-z0-9_.-]+\]")


@dataclass(frozen=True)
class Encoded:
    name: str
    text: str  # what is planted: the secret, encoded, in its context
    core: str  # the secret's random part: no 8 characters of it may survive
    before: str  # context that must survive verbatim
    after: str
    budget: int  # at most this many characters may be redacted


def _github() -> tuple[str, str]:
    core = G.s(36)
    return "ghp_" + core, core


def _anthropic() -> tuple[str, str]:
    core = G.s(93, B64URL)
    return "sk-ant-api03-" + core + "AA", core


def _openai() -> tuple[str, str]:
    core = G.s(100, B64URL)
    return "sk-proj-" + core, core


def _pct_all(s: str) -> str:
    return "".join(f"%{b:02X}" for b in s.encode())


def _u_all(s: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in s)


def _pem(kind: str = "RSA PRIVATE KEY", lines: int = 6) -> tuple[list[str], str]:
    body = [G.s(64, B64) for _ in range(lines)]
    return [f"-----BEGIN {kind}-----", *body], "".join(body)


def _png_with_text(keyword: str, value: str) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    pixels = bytes(G.rng.getrandbits(8) for _ in range(600))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 10, 20, 8, 2, 0, 0, 0))
        + chunk(b"tEXt", keyword.encode() + b"\x00" + value.encode())
        + chunk(b"IDAT", zlib.compress(pixels))
        + chunk(b"IEND", b"")
    )


def encoded_secrets() -> list[Encoded]:
    out: list[Encoded] = []

    def add(name: str, enc: str, core: str, before: str = "BEFORE ", after: str = " AFTER"):
        out.append(Encoded(name, before + enc + after, core, before, after, len(enc) + 4))

    key, core = _github()
    add("url-encoded, every byte", _pct_all("GITHUB_TOKEN=" + key), core, "GET /cb?state=")
    key, core = _github()
    add("url-encoded underscore", key.replace("_", "%5F"), core, "sent ")
    key, core = _anthropic()
    add(
        "url-encoded in a query",
        urllib.parse.quote(f"ANTHROPIC_API_KEY={key}", safe=""),
        core,
        "https://example.com/run?env=",
        "&x=1",
    )
    key, core = _github()
    add("\\u-escaped prefix", _u_all(key[:4]) + key[4:], core, '{"t": "', '"}')
    key, core = _anthropic()
    add("\\u-escaped, every char", _u_all(key), core, 'print("', '")')
    key, core = _github()
    add("\\x-escaped", "".join(f"\\x{ord(c):02x}" for c in key), core, "b'", "'")
    key, core = _github()
    add("named entity", key.replace("_", "&lowbar;"), core, "<td>", "</td>")
    key, core = _github()
    add("decimal entity", key.replace("_", "&#95;"), core, "<td>", "</td>")
    key, core = _github()
    add("hex entity", key.replace("_", "&#x5f;"), core, "<td>", "</td>")
    key, core = _anthropic()
    add("every char an entity", "".join(f"&#{ord(c)};" for c in key), core, "<p>", "</p>")
    key, core = _github()
    add("double-encoded", key.replace("_", "%255F"), core, "next=")

    key, core = _anthropic()
    env = f"# settings\nANTHROPIC_API_KEY={key}\nDEBUG=0\n"
    add("base64 .env", base64.b64encode(env.encode()).decode(), core, "echo ", " | base64 -d")
    key, core = _openai()
    env = f"OPENAI_API_KEY={key}\nMODEL=gpt\nTIMEOUT=30\nREGION=us-east-1\n" * 2
    wrapped = base64.encodebytes(env.encode()).decode().rstrip("\n")  # 76-char lines
    add("base64 wrapped at 76", wrapped, core, "$ base64 .env\n", "\n$ ")
    key, core = _github()
    svg = f'<svg xmlns="http://www.w3.org/2000/svg"><text x="1" y="2">{key}</text></svg>'
    add(
        "base64 SVG data URI",
        "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode(),
        core,
        "![chart](",
        ")",
    )
    key, core = _github()
    payload = base64.b64encode(urllib.parse.quote(f"token={key}", safe="").encode()).decode()
    add("base64 of url-encoded", payload, core, "blob=", ";")
    key, core = _github()
    png = _png_with_text("Comment", f"uploaded with {key}")
    add(
        "PNG tEXt chunk in a data URI",
        "data:image/png;base64," + base64.b64encode(png).decode(),
        core,
        '<img src="',
        '">',
    )

    lines, core = _pem()
    add("PEM split by <br>, no END", "<br>".join(lines), core, "<p>key:<br>", "</p>")
    lines, core = _pem()
    add(
        "PEM split by <br/>",
        "<br/>".join([*lines, "-----END RSA PRIVATE KEY-----"]),
        core,
        "<div>",
        "</div>",
    )
    lines, core = _pem("OPENSSH PRIVATE KEY")
    add(
        "PEM quoted with > , no END",
        "\n".join("> " + ln for ln in lines),
        core,
        "you wrote:\n",
        "\n\n(sent from my phone)",
    )
    lines, core = _pem("PRIVATE KEY")
    add("PEM as entities", "&#10;".join(lines), core, "<pre>", "</pre>")

    key, core = _openai()
    first = 80 - len("OPENAI_API_KEY=")
    add(
        "wrapped at 80 columns",
        "OPENAI_API_KEY=" + key[:first] + "\n" + key[first:],
        core,
        "$ env | grep KEY\n",
        "\n$ ",
    )
    key, core = _github()
    add("wrapped with \\ continuation", key[:19] + "\\\n    " + key[19:], core, "export T=", "\n")
    key, core = _anthropic()
    p1, p2 = "2026-01-02T10:00:01Z app[7]: ", "2026-01-02T10:00:02Z app[7]: "
    add("split over two log lines", key[:40] + "\n" + p2 + key[40:], core, p1 + "key=", "\n")
    return out


CASES = encoded_secrets()


def _pieces(core: str) -> list[str]:
    return [core[i : i + 8] for i in range(len(core) - 7)]


def _readable_forms(text: str) -> list[str]:
    """The text as a reader could decode it: itself, URL-decoded, entity-decoded, escapes
    decoded, with line breaks and prefixes removed, and every base64 run decoded."""
    forms = [text, urllib.parse.unquote(urllib.parse.unquote(text)), html.unescape(text)]
    forms.append(re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text))
    forms.append(re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), text))
    forms.append(re.sub(r"\\?\n(?:[0-9TZ:.-]+ app\[7\]: |[ >]*)", "", text))
    for run in re.findall(r"[A-Za-z0-9+/=\n]{16,}", text):
        body = run.replace("\n", "").rstrip("=")
        body = body[: len(body) - len(body) % 4]
        raw = base64.b64decode(body + "=" * (-len(body) % 4))
        forms.append(raw.decode("latin-1"))
        forms.append(urllib.parse.unquote(raw.decode("latin-1")))
    return forms


def _outside_spans_kept(original: str, out: str) -> int:
    """Check ``out`` is ``original`` with stretches replaced by placeholders, every other
    character kept in order; return how many characters were replaced."""
    pos = 0
    parts = PLACEHOLDER.split(out)
    for i, part in enumerate(parts):
        at = original.find(part, pos) if i else (0 if original.startswith(part) else -1)
        assert at >= 0, f"{part!r} is not the original's own text"
        if i == len(parts) - 1:
            assert original.endswith(part)
        pos = at + len(part)
    return len(original) - sum(len(p) for p in parts)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_an_encoded_secret_loses_every_piece(case: Encoded) -> None:
    counts: Counter[str] = Counter()
    out = redact_text(case.text, counts)
    assert counts, case.name
    for form in _readable_forms(out):
        for piece in _pieces(case.core):
            assert piece not in form, (case.name, piece, out)
    replaced = _outside_spans_kept(case.text, out)
    assert 0 < replaced <= case.budget, (case.name, replaced, out)
    assert out.startswith(case.before) and out.endswith(case.after), out


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_second_look_sees_the_encoded_secret(case: Encoded) -> None:
    """An encoded secret that reached a published byte blocks the release."""
    assert detect(case.text), case.name


def test_cleaning_sees_through_encodings_in_documents() -> None:
    key, core = _github()
    doc = {"messages": [{"role": "tool", "content": "state=" + _pct_all(key)}], "n": 1}
    cleaned = clean_value(doc)
    assert core[:8] not in urllib.parse.unquote(str(cleaned))
    assert cleaned["n"] == 1 and cleaned["messages"][0]["role"] == "tool"
    assert cleaned["messages"][0]["content"].startswith("state=[REDACTED:")
    text = "report\n" + base64.b64encode(f"GH={key}\n".encode()).decode() + "\nend"
    out = clean_document(text)
    assert out.startswith("report\n") and out.endswith("\nend") and "[REDACTED:" in out


def _png_data_uri() -> str:
    png = _png_with_text("Software", "matplotlib version 3.8.2, https://matplotlib.org/")
    return "data:image/png;base64," + base64.b64encode(png).decode()


def look_alikes() -> list[str]:
    rng = G.rng
    digests = "\n".join(
        f"sha256:{G.s(64, HEX)}  pkg-{i}.whl" for i in range(4)
    )  # consecutive lines of digests
    return [
        f"![plot]({_png_data_uri()})",
        f'<img src="{_png_data_uri()}" alt="loss curve">',
        digests,
        "\n".join(G.s(40, HEX) for _ in range(3)),
        "id=" + "-".join(G.s(n, HEX) for n in (8, 4, 4, 4, 12)) + " status=ok",
        "GET /search?q=hello%20world%21&lang=en%2DUS&page=2 HTTP/1.1",
        "https://example.com/a%2Fb%3Fc%3Dd?next=%2Fhome%3Ftab%3D1",
        "<p>Fish &amp; chips &lt;b&gt;cost&lt;/b&gt; &pound;5 &mdash; &#169; 2024 &#x2014; ok</p>",
        'print("caf\\u00e9 \\u2014 na\\u00efve \\x41BC")',
        "> On Monday you wrote:\n> the build failed again\n> with exit code 2",
        "the quick brown fox jumps over the lazy dog and then\nruns away into the forest",
        "echo " + base64.b64encode(b"hello world, this is a plain message\n").decode(),
        "eyJ0eXBlIjoibWVzc2FnZSJ9 is base64 of a small JSON object",
        "call_" + G.s(24) + "\ntoolu_" + G.s(24),
        "\n".join(f"  {G.s(8, HEX)} {w}" for w in ("fix parser", "add tests", "bump version")),
        "tokenizer vocabulary: " + " ".join(rng.choice(("the", "of", "and")) for _ in range(20)),
    ]


@pytest.mark.parametrize("text", look_alikes())
def test_look_alikes_stay_byte_for_byte(text: str) -> None:
    assert redact_text(text) == text
    assert detect(text) == []


def test_a_text_without_a_marker_has_no_view() -> None:
    from bf_assets.redact.decode import decoded_views

    assert decoded_views("a plain sentence; nothing encoded here at all.") == []
    assert decoded_views("") == []


def test_a_base64_hit_maps_to_its_covering_groups() -> None:
    from bf_assets.redact.decode import decoded_views

    key, _ = _github()
    blob = base64.b64encode(f"x={key}\n".encode()).decode()
    text = "a " + blob + " b"
    (view,) = [v for v in decoded_views(text) if v.kind == "base64"]
    start = view.text.index(key)
    ((s, e),) = view.to_original(start, start + len(key))
    # the key's bytes are 2..2+len(key): groups 0 (bytes 0-2) to the one holding the last
    assert s == 2 and (e - 2) % 4 == 0 and e <= 2 + len(blob)
    assert base64.b64decode(text[s:e])[2 : 2 + len(key)] == key.encode()


def test_a_wrapped_token_becomes_two_spans_and_keeps_the_break() -> None:
    key, _ = _github()
    head = "2026-01-02T10:00:01Z worker[3]: token="
    text = head + key[:24] + "\n    " + key[24:]
    spans = secret_spans(text)
    cut = len(head) + 24
    assert [(s, e) for s, e, _, _ in spans] == [(len(head), cut), (cut + 5, len(text))]
    assert redact_text(text) == head + "[REDACTED:github_token]\n    [REDACTED:github_token]"
    short = "T=" + key[:20] + "\n" + key[20:]  # a short line is whole: ids one a line
    assert all(e <= len("T=") + 20 for _, e, _, _ in secret_spans(short))  # line 2 untouched


def test_the_second_look_marks_what_only_a_decoding_showed() -> None:
    key, _ = _github()
    assert detect("t=" + key) == ["GitHubTokenDetector (GitHub Token)"]
    assert detect("t=" + key.replace("_", "%5F")) == [
        "GitHubTokenDetector (GitHub Token) (decoded)"
    ]


def test_redaction_settles_on_encoded_text() -> None:
    """Cleaning's redaction (until a pass changes nothing) settles on every encoded secret,
    and what it leaves is still the original's own text outside its placeholders."""
    for case in CASES:
        counts: Counter[str] = Counter()
        out = redact_text_stable(case.text, counts)
        assert secret_spans(out) == [], case.name
        _outside_spans_kept(case.text, out)
        assert out.startswith(case.before) and out.endswith(case.after), case.name


def test_many_markers_many_lines_stay_bounded() -> None:
    """Views are bounded in number and depth whatever the text holds."""
    from bf_assets.redact.decode import MAX_VIEWS, decoded_views

    key, _ = _github()
    nested = key
    for _ in range(6):
        nested = base64.b64encode(urllib.parse.quote(nested, safe="").encode()).decode()
    views = decoded_views(nested + "\n" + "%41&#66;\\u0043 " * 50 + "\n> q\n" + ALNUM)
    assert 0 < len(views) <= MAX_VIEWS
