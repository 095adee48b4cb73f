"""Secrets found by their structure, with no vendor name.

The vendor rules (:mod:`bf_assets.redact.generic`, gitleaks) know the formats someone wrote
down; these rules find the credentials nobody listed, by what every credential looks like:

* ``structural-token``: a short prefix, one or more separators and a random body
  (``abcd_...``, ``ab-cd-...``, ``abc1_xy_...``) anywhere in text; the body must look random
  (length, entropy, letters and digits interleaved), and ids that only look like this
  (tool-call, message and completion ids, rollout ids, hashes named by their algorithm,
  bundle file names) are left alone; a bare run of 32+ upper- and lowercase letters and
  digits interleaved as in a random draw is one too;
* ``credential-assignment``: a value next to a credential word (key, token, secret, password,
  auth, signature, credential, ...) in any syntax: env, YAML (a list under the key too),
  JSON, XML elements and attributes, INI, ``.netrc``, URL userinfo and query parameters in
  any position, code calls (``auth=("u", "p")``, ``BasicAuth("u", "p")``), a ``name``/``key``
  entry naming a credential followed by its ``value``, markdown and HTML tables.  A value
  must look random unless the word is a password's (a human password is short and plain);
* ``secret-flag``: command-line flags that take a secret, from a table of flag meanings per
  tool (``mysql -p...``, ``redis-cli -a``, ``htpasswd -b``, ``openssl -k``/``-pass pass:``,
  ``gh secret set --body``, ``docker login -p``, ``sshpass -p``, ``curl -u u:p``, ...) and the
  long flags every tool spells alike (``--password``, ``--token``, ``--api-key``, ...);
* ``private-key``: PEM armour whose lines are separated by junk (``<br>``, ``> `` quoting,
  literal ``\\n``, string concatenation), and bare DER bodies (base64 of a PKCS#1, PKCS#8,
  SEC1, encrypted PKCS#8 or PKCS#12 structure, recognised by decoding its first bytes);
  opaque binary base64 blobs with no file signature (a bare session token) are
  ``structural-token`` too.

Values known to be safe are kept byte for byte: UUIDs, hex digests, ``sha256:`` and
``sha512-`` digests, data URIs, file paths, identifiers, placeholders and our own markers.

Every rule is gated: by keywords in the engine's automaton, or (the token and blob rule,
which has no keyword) by one compiled regex over the text.

:func:`credential_shapes` serves the publish gate's second look: the kinds that need no
context.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Iterator

from bf_assets.redact.engine import Context, Rule, is_marker

KIND_TOKEN = "structural-token"
KIND_ASSIGN = "credential-assignment"
KIND_FLAG = "secret-flag"
KIND_KEY = "private-key"

_A = re.ASCII


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, _A | flags)


def entropy(data: str) -> float:
    n = len(data)
    if not n:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(data).values())


# --------------------------------------------------------------------------- value shapes

_UUID = _rx(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = _rx(r"(?:0x)?[0-9a-fA-F]+")
_DIGEST = _rx(r"(?i)(?:sha\d*|md5|blake2[bs]?|sha3-\d+|crc32)[:\-=]")
_NUMBER = _rx(r"[+-]?\d[\d.,_:eE+-]*")
_PLACEHOLDER = _rx(
    r"(?i)(?:|null|none|nil|true|false|undefined|yes|no|on|off|required|optional|string|str|"
    r"int|integer|bool|boolean|number|secret|password|token|redacted|hidden|masked|empty|"
    r"changeme|example|dummy|placeholder|sample|test|todo|tbd|n/?a|\*+|x{3,}|\.{2,}|"
    r"[x*#•]+|<[^<>]*>|\[[^\[\]]*\]|\$\{[^}]*\}|\$\(.*\)|\$[A-Za-z_][A-Za-z0-9_]*|"
    r"\{\{.*\}\}|\{[A-Za-z_][A-Za-z0-9_.]*\}|%[A-Za-z_][A-Za-z0-9_]*%|"
    r"(?:your|my|the|an?|some|insert|enter|put|replace|add)[-_ ].*|.*[-_ ](?:here|goes|placeholder)|"
    r"(?:sk|pk|key|token|secret)[-_]?(?:x+|\*+|\.+|0+|1234.*|abc.*|test|example|dummy|fake|xxx.*))"
)
_DOTTED = _rx(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*){2,}")
_CODE = _rx(
    r"(?:os\.(?:environ|getenv)|process\.env|getenv|env(?:iron)?\[|System\.getenv|"
    r"ENV\[|Deno\.env|import\.meta\.env|self\.|this\.|config\.|settings\.|args\.|"
    r"secrets\.|vars\.|inputs\.|params\.|req\.|request\.|ctx\.|options\.|opts\.)"
)
_IDENT_WORDS = _rx(r"_*[A-Za-z]+(?:[_\-. ][A-Za-z]+)*")  # words joined: an identifier or prose
_CAMEL_PIECES = _rx(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_PATHLIKE = _rx(r"(?:[~.]{0,2}/|[A-Za-z]:\\|\\\\)[^\s]*|[^\s/]+(?:/[^\s/]+)+/?")
_EMAIL = _rx(r"[^@\s]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_URLISH = _rx(r"(?i)(?:[a-z][a-z0-9+.-]*:)?//")


_EXAMPLE_WORDS = frozenset(
    {"pass", "pw", "pwd", "passwd", "user", "username", "foo", "bar", "baz", "qux", "value"}
)


def is_placeholder(value: str) -> bool:
    """Values that stand for a secret without being one (``${VAR}``, ``<token>``, ``xxxx``,
    ``your-api-key``, our markers, an environment lookup)."""
    whole = value.strip()
    v = whole.strip("()[]{}")
    return (
        not v
        or bool(_PLACEHOLDER.fullmatch(whole))
        or v.lower() in _EXAMPLE_WORDS
        or is_marker(v)
        or "REDACTED" in v
        or bool(_PLACEHOLDER.fullmatch(v))
        or bool(_CODE.match(v))
        or bool(_DOTTED.fullmatch(v))
        or v.startswith(("$", "`"))
    )


def given_secret(value: str) -> bool:
    """A value given where a secret goes (a flag's, a call's password argument) that is one:
    not a placeholder and not a single letter or two (``curl -u u:p`` in documentation)."""
    v = value.strip("`'\" ")
    return len(v) >= 3 and not is_placeholder(v)


def is_safe_shape(value: str) -> bool:
    """Values known to be safe whatever word they sit next to: UUIDs, hex digests,
    ``algo:``/``algo-`` digests, numbers, data/image URIs, URLs, paths, e-mail addresses."""
    v = value
    return bool(
        _UUID.fullmatch(v)
        or _NUMBER.fullmatch(v)
        or _DIGEST.match(v)
        or v.startswith(("data:", "image/", "blob:"))
        or _URLISH.match(v)
        or _EMAIL.fullmatch(v)
        or (_PATHLIKE.fullmatch(v) and not _looks_base64_run(v))
    )


def _looks_base64_run(v: str) -> bool:
    """A path-like value that is really base64 (``/`` and ``+`` inside a random run)."""
    if " " in v or "." in v.rsplit("/", 1)[-1][-6:]:
        return False
    parts = [p for p in v.split("/") if p]
    return len(v) >= 16 and any(_random_piece(p) for p in parts) and not v.startswith(("/", "~"))


_WORD_NUMBER = _rx(r"([A-Za-z]{1,12})\d{1,8}[A-Za-z]{0,2}|\d{1,8}[A-Za-z]{1,3}|v\d+(?:[a-z]+\d*)?")


def _is_wordish(piece: str) -> bool:
    """A piece of an identifier that reads as a word, a number or a version."""
    n = len(piece)
    if n <= 3:
        return True
    if piece.isdigit():
        return n <= 14
    if piece.isalpha():
        if piece.islower() or piece.isupper() or piece[1:].islower():
            return True
        # camelCase: words of 3+ letters after the first, acronyms of up to 5 capitals
        pieces = _CAMEL_PIECES.findall(piece)
        return all(
            (p.isupper() and len(p) <= 5)
            or len(p) >= 3
            or i == 0
            or (len(p) == 2 and (p[1] in "aeiouy" or p[0] in "AEIOUY"))  # To, Of, By, In
            for i, p in enumerate(pieces)
        )
    # letters then a few digits (python3, gpt4o, v20240229), or digits then letters (32b)
    m = _WORD_NUMBER.fullmatch(piece)
    if m:
        return not m.group(1) or _is_wordish(m.group(1))
    # CamelCase with numbers: ``Ed25519PrivateKey``, ``PKCS12KeyTypes``, ``MLKEM768X25519``
    pieces = _CAMEL_PIECES.findall(piece)
    words = [p for p in pieces if not p.isdigit()]
    lower_words = [p for p in words if not p.isupper()]
    return (
        sum(p.isdigit() for p in pieces) <= 2
        and len(piece) >= 3.5 * len(pieces)
        and any(len(p) >= 3 for p in lower_words)
        and all(len(p) <= 5 for p in words if p.isupper())
        and all(
            (len(p) >= 3 or p[0] in "AEIOUY" or p[1:2] in ("a", "e", "i", "o", "u", "y"))
            and any(c in "aeiouy" for c in p.lower())
            for p in lower_words
        )
    )


def _transitions(piece: str) -> int:
    """How often the character class (lower, upper, digit) changes along ``piece``."""
    last, n = "", 0
    for c in piece:
        k = "d" if c.isdigit() else "u" if c.isupper() else "l" if c.islower() else "o"
        if last and k != last:
            n += 1
        last = k
    return n


_CONSONANTS = _rx(r"[b-df-hj-np-tv-z]{5}")


def _random_piece(piece: str) -> bool:
    """A piece that reads as random: long enough, and classes interleaved as in a random
    draw (a word, a number, a version or camelCase does not)."""
    n = len(piece)
    if n < 8 or _is_wordish(piece):
        return False
    if _transitions(piece) >= max(3, n // 6):
        return True
    # a long lowercase draw with few digits: few vowels among its letters (words have many)
    letters = [c for c in piece.lower() if c.isalpha()]
    vowels = sum(c in "aeiou" for c in letters)
    if n < 20 or n == len(letters):
        return False
    return vowels < 0.32 * len(letters) or bool(_CONSONANTS.search(piece.lower()))


def looks_random(value: str, *, min_len: int = 16, hex_ok: bool = False) -> bool:
    """``value`` reads as a random credential: long, high entropy, classes interleaved, not
    words joined (an identifier), not a safe shape.  Hex is random only when ``hex_ok``."""
    core = re.sub(r"[^A-Za-z0-9]", "", value)
    if len(core) < min_len or len(value) > 4096:
        return False
    if _HEX.fullmatch(core):
        return hex_ok and len(core) >= 16 and _transitions(core) >= len(core) // 6
    if _IDENT_WORDS.fullmatch(value) and _is_wordish_all(value):
        return False
    pieces = [p for p in re.split(r"[^A-Za-z0-9]+", value) if p]
    rand = sum(len(p) for p in pieces if _random_piece(p) or (len(p) >= 4 and _hex_mix(p)))
    odd = [p for p in pieces if len(p) >= 4 and not _is_wordish(p) and _transitions(p) >= 1]
    if len(odd) >= 3 and sum(map(len, odd)) >= 16:  # short random pieces: ``ab1cd-e2fgh-...``
        rand = max(rand, sum(map(len, odd)))
    if rand < min(12, len(core)):
        return False
    ent = entropy(core)
    return ent >= min(3.3, math.log2(len(core)) - 0.7)


def _hex_mix(piece: str) -> bool:
    return bool(_HEX.fullmatch(piece)) and _transitions(piece) >= 3


def _is_wordish_all(value: str) -> bool:
    return all(_is_wordish(p) for p in re.split(r"[^A-Za-z0-9]+", value) if p)


def looks_password(value: str) -> bool:
    """A value under a password's word: any non-placeholder that is not code, a path or a
    single plain word (``hunter2`` is one, ``required`` and ``string`` are not)."""
    v = value.strip()
    if len(v) < 4 or len(v) > 512 or is_placeholder(v) or is_safe_shape(v):
        return False
    if _IDENT_WORDS.fullmatch(v) and " " not in v:
        return False  # a plain word or identifier (``password: required``)
    if " " in v and len(v.split()) > 3:
        return False  # prose
    return not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*\(.*\)?", v)  # a call


# --------------------------------------------------------------------------- tokens

# ids that only look like credentials: API object ids, our contract's ids, digests named by
# their algorithm, build and cache names
_ID_PREFIXES = frozenset(
    {
        "call", "toolu", "srvtoolu", "msg", "msgbatch", "chatcmpl", "cmpl", "req", "request",
        "resp", "response", "run", "file", "asst", "thread", "batch", "ft", "ftjob", "org",
        "user", "proj", "item", "fc", "rs", "ws", "mcp", "ctc", "cua", "ci", "ig", "lc", "gen",
        "conv", "vs", "vsfb", "step", "span", "trace", "evt", "cus", "pi", "ch", "in", "sub",
        "prod", "price", "acct", "txn", "src", "pm", "seti", "si", "ii", "py", "tool", "toolcall",
        "tc", "task", "trial", "job", "rollout", "session", "sess", "id", "uuid", "guid", "tmp",
        "temp", "cache", "test", "mock", "dummy", "example", "fake", "sample", "css", "sc",
        "chunk", "app", "main", "index", "vendor", "polyfills", "runtime", "styles", "workbox",
        "framework", "webpack", "module", "nonce", "salt", "iv", "seed", "i", "vpc", "subnet",
        "sg", "ami", "vol", "snap", "eni", "igw", "rtb", "acl", "nat", "eipalloc", "lt",
        "sandbox",
    }
)  # fmt: skip
# words that name a hash or a version: after them a hex (or numeric) body is a digest or an id
_HEX_ID_PREFIXES = frozenset(
    {
        "build", "commit", "sha", "sha1", "sha224", "sha256", "sha384", "sha512", "sha3", "md5",
        "blake2b", "hash", "digest", "checksum", "etag", "rev", "revision", "ver", "version",
        "node", "pod", "container", "layer", "blob", "img", "image", "obj", "object", "doc",
        "page", "ref", "data", "pkg", "package", "lib", "release", "tag", "branch", "feature",
        "fix", "bugfix", "hotfix", "dependabot", "renovate", "snyk", "event", "block",
        "cell", "tx", "sig",
    }
)  # fmt: skip
# API object ids written with ``_`` only (``fc_...`` is an OpenAI item, ``fc-...`` a key)
_ID_UNDERSCORE = frozenset(
    {
        "fc", "rs", "ws", "ci", "ig", "lc", "vs", "pi", "ch", "in", "si", "ii", "py", "pm", "tc",
        "mcp", "ctc", "cua", "cus", "evt", "txn", "src", "acct", "prod", "price", "sub", "seti",
        "item", "conv", "vsfb",
    }
)  # fmt: skip
_CRED_WORD = _rx(r"(?i)[a-z]*(?:key|token|tok|secret|sec|pat|api|auth|cred|pass)|sk|pk|rk|ak")


def _cred_prefix(prefix: str) -> bool:
    """A prefix holding a credential word (``sk-lf-``, ``abc_pat_``, ``mykey-``)."""
    return any(_CRED_WORD.fullmatch(w) for w in re.split(r"[^A-Za-z0-9]+", prefix) if w)


_ROLLOUT_ID = _rx(r"[A-Za-z0-9][A-Za-z0-9._-]*__[A-Za-z0-9]{4,12}")


def _prefix_split(token: str) -> tuple[str, str] | None:
    """``(prefix, body)``: the leading short word pieces (each ended by a separator) and the
    rest, or ``None`` when the token has no word-like prefix."""
    parts = re.split(r"([_\-]+)", token)
    prefix = ""
    i = 0
    while i + 1 < len(parts) and len(prefix) < 24:
        piece = parts[i]
        if not piece or len(piece) > 12 or _random_piece(piece):
            break
        if i > 0 and (len(piece) > 8 or not piece.isalnum() or not _is_wordish(piece)):
            break
        if i > 0 and not (piece.islower() or piece.isdigit()):
            break  # a vendor's prefix is one case: ``ab-CD9EF-`` starts the body
        prefix += piece + parts[i + 1]
        i += 2
        # stop once what follows is long and random (the body begins)
        if i < len(parts) and (_random_piece(parts[i]) or len(parts[i]) >= 12):
            break
    body = "".join(parts[i:])
    if not prefix or len(body) < 12:
        return None
    return prefix, body


# a calendar date written as digits (``20260602``): a piece of an id with a clock in it
_DATE_PIECE = _rx(r"(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])")
_DIGEST_LENGTHS = frozenset((*range(7, 13), 16, 20, 32, 40, 56, 64, 96, 128))


def token_is_credential(token: str) -> bool:
    """A prefixed token whose body reads as a random credential."""
    if _ROLLOUT_ID.fullmatch(token):
        return False
    m = _UUID.search(token)
    if m and not _cred_prefix(token[: m.start()]):
        return False  # a UUID, or an id made of one (``run-<uuid>``)
    split = _prefix_split(token)
    if split is None:
        return False
    prefix, body = split
    words = [w for w in re.split(r"[_\-]+", prefix.lower()) if w]
    if not words or (len(words) > 1 and "".join(words) in _ID_PREFIXES):
        return False
    if words[0] in _ID_PREFIXES and (
        words[0] not in _ID_UNDERSCORE or prefix[len(words[0])] == "_"
    ):
        return False
    core = re.sub(r"[^A-Za-z0-9]", "", body)
    if (words[0] in _HEX_ID_PREFIXES or "".join(words) in _HEX_ID_PREFIXES) and _HEX.fullmatch(
        core
    ):
        return False
    first = prefix.split("_")[0].split("-")[0]
    if first.isupper() and re.match(r"[A-Z]{2,}[_\-]", body):
        return False  # CONSTANT_NAME_<suffix>: a name, not a vendor's code
    if len(first) >= 6 and _HEX.fullmatch(first):
        return False  # hex pieces joined: an id or a digest, not a vendor's code
    if not (first.isalnum() and first[0].isalpha() and (first.islower() or first.isupper())):
        return False  # a vendor's code is one case (``Ab3_...`` is a piece of base64)
    cred = _cred_prefix(prefix)
    if _UUID.fullmatch(body):
        return cred
    hexy = bool(_HEX.fullmatch(core))
    if hexy:  # a hex body is a key after a code (short, or with a digit) or a credential word
        if not cred and any(
            (p.isdigit() and len(p) >= 6) or _DATE_PIECE.fullmatch(p)
            for p in re.split(r"[_\-]+", token)
        ):
            return False  # ``name-<timestamp>-<hex>``, ``name_<yyyymmdd>_<hhmmss>_<hex>``: an id with a clock in it
        # after a word (``build-``, ``commit-``), a digest's length is a digest
        code = len(words[0]) <= 4 or any(c.isdigit() for c in prefix)
        code = code or not any(c in "aeiouy" for c in words[0])
        digest = len(core) in _DIGEST_LENGTHS
        return (cred or code or not digest) and looks_random(body, hex_ok=True)
    return looks_random(body, min_len=16)


def _ends_in_extension(text: str, end: int) -> bool:
    """The token is a file name: ``.ext`` follows (a sentence's full stop does not count)."""
    m = re.match(r"\.[A-Za-z][A-Za-z0-9]{0,5}\b", text[end : end + 8])
    return bool(m) and not text[end + 1 : end + 2].isupper()


_DIGEST_BEFORE = _rx(
    r"(?i)(?:sha\d*|md5|blake2[bs]?|integrity|digest|hash)[\"']?[=:\- ]{1,3}[\"']?\Z"
)


# --------------------------------------------------------------------------- opaque blobs

_MAGIC = (
    b"\x89PNG",
    b"\xff\xd8\xff",
    b"GIF8",
    b"RIFF",
    b"%PDF",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"BZh",
    b"\xfd7zXZ",
    b"\x28\xb5\x2f\xfd",
    b"\x00asm",
    b"\x7fELF",
    b"OggS",
    b"ID3",
    b"fLaC",
    b"wOF",
    b"\x00\x01\x00\x00",
    b"OTTO",
    b"II*\x00",
    b"MM\x00*",
    b"BM",
    b"\x00\x00\x01\x00",
)


def _b64decode(s: str) -> bytes | None:
    s = s.rstrip("=")
    try:
        if "-" in s or "_" in s:
            return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
        return base64.b64decode(s + "=" * (-len(s) % 4))
    except (binascii.Error, ValueError):
        return None


def _printable_ratio(raw: bytes) -> float:
    if not raw:
        return 1.0
    ok = sum(1 for b in raw if 32 <= b < 127 or b in (9, 10, 13))
    return ok / len(raw)


def _blob_is_credential(text: str, s: int, e: int) -> bool:
    """Opaque binary base64 of a credential's size with no file signature (a session
    token); text, images, archives, fonts and DER structures are left to their own rules."""
    blob = text[s:e]
    if text[max(0, s - 8) : s].lower().endswith(("base64,", "base64 ")) or _HEX.fullmatch(blob):
        return False
    raw = _b64decode(blob)
    if raw is None or len(raw) < 60:
        return False
    if raw.startswith(_MAGIC) or raw[4:8] == b"ftyp" or raw[:1] == b"\x30":
        return False
    return _printable_ratio(raw) <= 0.85 and entropy(blob.rstrip("=")) >= 5.0


# a run of token or base64 characters: every candidate of both rules is one (a regex that
# scans the text once; the runs are judged in Python)
_RUN = _rx(r"[A-Za-z0-9+/=_\-]{16,}")
_DIGIT = _rx(r"\d")
_TOKEN_START = _rx(r"(?:\\[nrt])?(=*)([A-Za-z][A-Za-z0-9]{0,15}[_\-][A-Za-z0-9_\-]{14,600})$")


_B64_LINE = _rx(r"(?:\r?\n|\\r?\\n)[ \t>]*[A-Za-z0-9+/]{40,}={0,2}(?:\r?\n|\\r?\\n|$)")
_B64_LINE_BEFORE = _rx(r"(?:^|\n|\\n)[ \t>]*[A-Za-z0-9+/]{40,}={0,2}(?:\r?\n|\\r?\\n)[ \t>]*\Z")


def bare_token_is_credential(run: str) -> bool:
    """A bare base62 run of a key's length that reads as a random draw: all three classes,
    interleaved throughout, high entropy (no word, number, hex digest or camelCase name)."""
    if not run.isalnum() or run.isdigit() or _HEX.fullmatch(run) or "=" in run:
        return False
    if run.islower() or run.isupper() or not _DIGIT.search(run):
        return False
    n = len(run)
    return _transitions(run) >= n // 3 and entropy(run) >= min(4.4, math.log2(n) - 0.75)


def _in_base64_block(text: str, s: int, e: int) -> bool:
    """The run is a line of a base64 block (a certificate, a MIME body): a neighbouring
    line is base64 too."""
    for m in (_B64_LINE.match(text, e), _B64_LINE_BEFORE.search(text, max(0, s - 90), s)):
        if m:
            return True
    return False


def find_random_runs(ctx: Context, positions: list[int]) -> Iterator[tuple[int, int]]:
    """Prefixed random tokens, and opaque binary base64 blobs."""
    text = ctx.text
    if len(text) < 16:
        return
    for m in _RUN.finditer(text):
        s, e = m.span()
        before = text[s - 1 : s]
        if before and before in "./@%":
            continue
        run = m.group(0)
        if len(run) >= 100 and e - s <= 8194 and _blob_is_credential(text, s, e):
            yield s, e
            continue
        if "+" in run or "/" in run:
            continue
        if "_" not in run and "-" not in run:
            if (
                32 <= len(run) <= 128
                and bare_token_is_credential(run)
                and not _in_base64_block(text, s, e)
            ):
                yield s, e  # a bare random key: upper, lower and digits interleaved
            continue
        if text[e : e + 1] in ("@", "[", "(", "{"):
            continue
        if (run.islower() or run.isupper()) and not _DIGIT.search(run):
            continue  # a snake_case or kebab-case name, a CONSTANT
        if before == "\\" and run[0] in "nrt":
            run, s = run[1:], s + 1
        inner = run.rstrip("=").rfind("=")
        if inner >= 0:  # ``key=value`` glued into one run: the value
            run, s = run[inner + 1 :], s + inner + 1
        t = _TOKEN_START.match(run)
        if t is None:
            continue
        s += t.start(2)
        token = t.group(2)
        if _ends_in_extension(text, e) or _DIGEST_BEFORE.search(text, max(0, s - 16), s):
            continue
        if token_is_credential(token):
            yield s, e


# --------------------------------------------------------------------------- private keys

_ARMOUR_HEAD = _rx(
    r"-{3,5}[ \t]*BEGIN[ \t]+(?:[A-Z0-9]+[ \t]+){0,4}PRIVATE[ \t]+KEY(?:[ \t]+BLOCK)?[ \t]*-{3,5}",
    re.I,
)
_ARMOUR_END = _rx(
    r"-{3,5}[ \t]*END[ \t]+(?:[A-Z0-9]+[ \t]+){0,4}PRIVATE[ \t]+KEY(?:[ \t]+BLOCK)?[ \t]*-{3,5}",
    re.I,
)
# what may sit between two lines of key material: line breaks (real, escaped, HTML), quote
# markers, comment leaders, string concatenation
_JUNK = (
    r"(?:\s|\\+[nrt]|<br\s*/?>|</?p>|</?div>|&gt;|>|\"\s*\+?\s*\"|'\s*\+?\s*'|\"\s*,|"
    r"'\s*,|\+|#|//|\*|;)"
)
_DER_BODY = _rx(r"M[A-Za-z0-9+/]{39,}=*(?:" + _JUNK + r"{1,12}[A-Za-z0-9+/]{16,}=*)*", re.M)
_DER_STARTS = ("mii", "mig", "mhc", "mhq", "mc4", "mfm", "mfa", "mgg", "mih", "mij", "mik")
MAX_KEY_CHARS = 65536
_PBE_OIDS = (
    bytes.fromhex("2a864886f70d01050d"),  # PBES2
    bytes.fromhex("2a864886f70d010c01"),  # PKCS#12 PBE
    bytes.fromhex("2a864886f70d0105"),  # PKCS#5 PBE
)


def der_private_key(raw: bytes) -> bool:
    """``raw`` starts a DER private key: PKCS#1 (RSA, DSA), PKCS#8 (plain or encrypted),
    SEC1 (EC) or PKCS#12, told apart from certificates and public keys by the version
    integer or the encryption algorithm right after the outer SEQUENCE."""
    if len(raw) < 8 or raw[0] != 0x30:
        return False
    n = raw[1]
    o = 2 if n < 0x80 else 2 + (n & 0x7F)
    head = raw[o : o + 4]
    if head[:3] in (b"\x02\x01\x00", b"\x02\x01\x01", b"\x02\x01\x03"):
        return len(head) == 4 and head[3] in (0x02, 0x04, 0x30)
    if head[:1] == b"\x30":
        window = raw[o : o + 40]
        return any(oid in window for oid in _PBE_OIDS)
    return False


_KEY_CHUNK = _rx(
    r"(?:" + _JUNK + r")+(?:(?P<hdr>[A-Za-z][A-Za-z0-9-]{0,40}:[ \t][^\r\n<\\\"']{0,200})|"
    r"(?P<b64>[A-Za-z0-9+/=]{4,}))"
)


def _truncated_body_end(text: str, start: int) -> int:
    """Where the key material after a header with no END line stops: after the lines of
    base64 (and PEM header lines), ending with the first line shorter than the ones before
    (a key's last line), so the words that follow are kept."""
    pos, width = start, 0
    limit = min(len(text), start + MAX_KEY_CHARS)
    while pos < limit:
        m = _KEY_CHUNK.match(text, pos, limit)
        if not m:
            break
        if m.group("hdr") is not None:
            pos = m.end()
            continue
        n = len(m.group("b64"))
        if width and n > width:
            break
        pos = m.end()
        if (width and n < width) or m.group("b64").endswith("="):
            break  # the last, short (or padded) line
        width = max(width, n)
    return pos


def find_armoured_keys(ctx: Context, positions: list[int]) -> Iterator[tuple[int, int]]:
    text = ctx.text
    pos = 0
    while True:
        m = _ARMOUR_HEAD.search(text, pos)
        if not m:
            return
        end = _ARMOUR_END.search(text, m.end(), m.end() + MAX_KEY_CHARS)
        if end:
            yield m.start(), end.end()
            pos = end.end()
            continue
        stop = _truncated_body_end(text, m.end())
        yield m.start(), stop
        pos = max(stop, m.end())


def find_der_keys(ctx: Context, positions: list[int]) -> Iterator[tuple[int, int]]:
    text = ctx.text
    last = -1
    for p in sorted(set(positions)):
        if p < last or (p > 0 and (text[p - 1].isalnum() or text[p - 1] in "+/")):
            continue
        m = _DER_BODY.match(text, p, p + MAX_KEY_CHARS)
        if not m:
            continue
        raw = _b64decode(re.sub(r"[^A-Za-z0-9+/]", "", m.group(0)[:64])[:48])
        if raw is not None and der_private_key(raw):
            yield m.span()
            last = m.end()


# --------------------------------------------------------------------------- assignments

# credential words: (pattern on a key's last words, strength) where a strong word's value is
# a secret when it looks random (hex too); a password's when it looks like a password; a weak
# word's only when it looks random and is not hex
CRED_KEYWORDS = (
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "auth",
    "sig",
    "credential",
    "access",
    "private",
    "license",
    "sas",
    "pat",
    "bearer",
)
_KEY_IDENT = _rx(r"[A-Za-z0-9_.\-]{1,80}")
_SPLIT_WORDS = _rx(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_PASSWORD_WORDS = frozenset({"password", "passwd", "pwd", "pass", "passphrase", "passwort", "pw"})
_STRONG_END = frozenset(
    {"token", "secret", "apikey", "credential", "credentials", "signature", "sig", "sas", "pat"}
)
_KEY_QUALIFIERS = frozenset(
    {
        "api", "access", "secret", "private", "auth", "client", "account", "master", "signing",
        "encryption", "license", "licence", "service", "app", "consumer", "admin", "root",
        "deploy", "ingest", "sdk", "subscription", "storage", "shared", "session", "webhook",
        "hmac", "jwt", "personal", "user", "write", "read", "management", "project", "server",
        "dev", "prod",
    }
)  # fmt: skip
_NOT_SECRET_NEAR = frozenset(
    {
        "max", "min", "num", "total", "input", "output", "prompt", "completion", "reasoning",
        "cache", "cached", "count", "eos", "bos", "pad", "unk", "sep", "cls", "mask", "special",
        "next", "page", "csrf", "xsrf", "public", "pub", "primary", "foreign", "sort",
        "partition", "idempotency", "row", "hash", "dict", "map", "lookup", "join", "unique",
        "object", "file", "bucket", "group", "index", "cursor", "message", "i18n", "translation",
        "label", "type", "kind", "name", "id", "ids", "length", "limit", "usage", "budget",
        "path", "url", "uri", "env", "var", "field", "header", "prefix", "format", "policy",
        "manager", "store", "vault", "rotation", "expiry", "expires", "expiration", "ttl",
        "scope", "scopes", "method", "mode", "provider", "required", "enabled", "strength",
        "hint", "reset", "hotkey", "keyboard", "shortcut", "dataset", "public_key", "fingerprint",
        "salt", "algorithm", "algo", "size", "bits", "response", "first", "last", "stop", "start",
        "end",
    }
)  # fmt: skip


def key_strength(ident: str) -> str | None:
    """How strongly a key names a credential: ``"password"``, ``"strong"``, ``"weak"`` or
    ``None`` (not a credential: ``max_tokens``, ``cache_key``, ``token_count``, ``author``)."""
    words = [w.lower() for w in _SPLIT_WORDS.findall(ident)]
    if not words:
        return None
    while words and words[-1].isdigit():
        words.pop()
    if not words:
        return None
    last = words[-1]
    before = words[-2] if len(words) > 1 else ""
    if before in _NOT_SECRET_NEAR or last in _NOT_SECRET_NEAR:
        return None
    if last in _PASSWORD_WORDS or last.startswith("passw"):
        # ``pass`` alone is mostly the word (``| pass | fail |``, ``--pass``'s are flags)
        return None if len(words) == 1 and last in ("pass", "pw") else "password"
    if any(w in ("password", "passwd") for w in words[:-1]) and last not in ("hint", "policy"):
        return None if last in _NOT_SECRET_NEAR else "password"
    if last in _STRONG_END or last.endswith(("token", "secret", "apikey", "passwd")):
        return "strong"
    if last in ("key", "keys"):
        if before in _KEY_QUALIFIERS or before.endswith(("api", "secret", "access")):
            return "strong"
        return "weak" if len(words) <= 2 else None
    if last in ("auth", "authorization", "bearer", "license", "licence"):
        return "strong" if last != "auth" else "weak"
    if last in ("access", "private") and len(words) == 1:
        return "weak"
    return None


# between a key and its value: closing quotes, separators, tags, table bars
_GAP = _rx(
    r"(?:\\?[\"'`]|\]|\))?[ \t]*"
    r"(?P<sep></[A-Za-z][A-Za-z0-9:-]{0,20}>|[ \t]+(?:is|was|equals|set[ \t]+to)[ \t]*:?(?=[ \t])|"
    r":=|=>|==|=|:|\||>|\(|,|[ \t](?=[^\s]))"
    r"(?:[ \t]*(?:<(?!/?(?:br|p)\b)[A-Za-z/][^<>\n]{0,60}>|\||\(|\[))*[ \t]*"
)
_UNQUOTED_END = frozenset(" \t\r\n\"'`,;&|<>(){}[]")


def _value_at(text: str, i: int, limit: int) -> tuple[int, int] | None:
    """The value starting at ``i``: inside its quotes, or a run of value characters."""
    if i >= limit:
        return None
    c = text[i]
    q = None
    if c == "\\" and text[i + 1 : i + 2] in ('"', "'"):
        q, i = text[i : i + 2], i + 2
    elif c in "\"'`":
        q, i = c, i + 1
    if q is not None:
        j = text.find(q, i, min(limit, i + 4096))
        if j < 0:
            return None
        nl = text.find("\n", i, j)
        return (i, j) if nl < 0 else None
    j = i
    while j < limit and text[j] not in _UNQUOTED_END:
        if text[j] == "\\" and text[j + 1 : j + 2] in ("n", "r", "t", '"', "'"):
            break
        j += 1
    while j > i and text[j - 1] in ".:":
        j -= 1
    return (i, j) if j > i else None


def _accept(value: str, strength: str, sep: str) -> bool:
    if is_placeholder(value) or is_marker(value):
        return False
    if strength == "password":
        if sep.isspace():  # ``password hunter2``: prose unless the value looks like one
            return looks_random(value, min_len=8, hex_ok=True)
        return looks_password(value)
    if is_safe_shape(value) and not (strength == "strong" and _UUID.fullmatch(value)):
        return False
    if strength == "strong":
        return looks_random(value, min_len=12, hex_ok=True)
    return looks_random(value, min_len=16)


_YAML_ITEM = _rx(r"\n([ \t]*)-[ \t]+")


def _yaml_list(ctx: Context, start: int) -> Iterator[tuple[int, int]]:
    """The items of a YAML list that starts on the line after ``start`` (a key's ``:``)."""
    text = ctx.text
    eol = text.find("\n", start)
    if eol < 0 or text[start:eol].strip():
        return
    pos = eol
    indent = None
    while True:
        m = _YAML_ITEM.match(text, pos)
        if not m or (indent is not None and m.group(1) != indent):
            return
        indent = m.group(1)
        v = _value_at(text, m.end(), min(len(text), m.end() + 1024))
        if v is None:
            return
        value = text[v[0] : v[1]]
        if looks_password(value) or looks_random(value, min_len=8, hex_ok=True):
            yield v
        pos = text.find("\n", v[1]) if text.find("\n", v[1]) >= 0 else len(text)
        if pos >= len(text):
            return


_QUOTED = _rx(r"(?:[A-Za-z_][A-Za-z0-9_]*[ \t]*=[ \t]*)?(\\?[\"'])(.{0,512}?)\1[ \t]*(,|\))")


def _call_args(ctx: Context, ident_end: int) -> Iterator[tuple[int, int]]:
    """``auth=("user", "pw")``, ``BasicAuth("user", "pw")``: the second string argument."""
    text = ctx.text
    m = re.compile(r"[ \t]*=?[ \t]*\([ \t]*").match(text, ident_end)
    if not m:
        return
    pos = m.end()
    args: list[tuple[int, int]] = []
    for _ in range(3):
        a = _QUOTED.match(text, pos)
        if not a:
            break
        args.append(a.span(2))
        pos = a.end()
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if a.group(3) == ")":
            break
    if len(args) >= 2:
        s, e = args[1]
        if given_secret(text[s:e]):
            yield s, e
    elif len(args) == 1:
        s, e = args[0]
        if looks_random(text[s:e], min_len=16, hex_ok=True):
            yield s, e


def find_credential_values(ctx: Context, positions: list[int]) -> Iterator[tuple[int, int]]:
    """Values next to a credential word, in any syntax."""
    text = ctx.text
    n = len(text)
    seen: set[int] = set()
    for p in sorted(set(positions)):
        s = p
        while s > 0 and p - s < 80 and (text[s - 1].isalnum() or text[s - 1] in "_.-"):
            s -= 1
        km = _KEY_IDENT.match(text, s)
        if km is None or km.start() in seen:
            continue
        seen.add(km.start())
        ident = km.group(0).strip("._-")
        e = km.end()
        while e > s and text[e - 1] in ".-":
            e -= 1
        strength = key_strength(ident)
        if strength != "password" and ident.isalpha():
            # words of prose or a label: ``API key``, ``Secret Key``, ``access token``
            pw = _PREV_WORD.search(text, max(0, s - 24), s)
            if pw and pw.group(1).lower() in _KEY_QUALIFIERS:
                strength = key_strength(f"{pw.group(1)}_{ident}") or strength
        if strength is None:
            continue
        # a code call: auth=("u", "p"), HTTPBasicAuth("u", "p")
        if ident.lower().endswith(("auth", "credentials", "login")):
            yield from _call_args(ctx, e)
        # .NET / XML / JSON name-value pairs: key="ApiKey" value="...", "name": "X", "value": ...
        prev = text[max(0, s - 12) : s]
        if _NAMED.search(prev):
            close = text.find(text[s - 1], e, e + 2)
            if close == e:
                am = re.compile(
                    r"\\?[\"'][ \t]*[,;]?[ \t\r\n]*\\?[\"']?(?:value|val|content|data)\\?[\"']?[ \t]*[:=][ \t]*"
                ).match(text, e - (1 if text[e - 1 : e] == "\\" else 0))
                if am:
                    v = _value_at(text, am.end(), min(n, am.end() + 4096))
                    if v and _accept(text[v[0] : v[1]], _named_strength(strength), "="):
                        yield v
                        continue
        gm = _GAP.match(text, e)
        if gm is None or gm.end() - e > 96:
            continue
        sep = gm.group("sep")
        if sep[:1] in " \t" and sep.strip():
            sep = ":"  # ``the API key is X``
        if sep in ("(", ","):
            continue
        if sep == ":" and strength == "password":
            yield from _yaml_list(ctx, gm.start("sep") + 1)
        if sep == ">" and text[max(0, s - 1) : s] != "<":
            continue  # ``>`` binds only an XML element's own name: ``<password>v</password>``
        if sep == "|" and strength == "weak":
            continue
        if sep.startswith("</") and strength == "weak":
            continue  # ``<td>api key</td><td>value</td>``: a cell names the next one
        if sep == "|" or text[e : e + 2].strip(" \t").startswith("|"):
            yield from _table_column(ctx, s, e, strength)
        if sep.isspace():
            quoted = text[gm.end() : gm.end() + 1] in ("'", '"')
            if strength == "password" and not (quoted or _netrc_like(text, s)):
                continue
            if strength == "weak" and not _strongly_random(text, gm.end()):
                continue
        vstart = gm.end()
        if sep in (":", "=") and text[vstart : vstart + 1] in ("|", ">", "\n"):
            vstart = _next_line_value(text, vstart)  # YAML block scalar, value below
        v = _value_at(text, vstart, min(n, vstart + 4096))
        if v is None:
            continue
        value = text[v[0] : v[1]]
        if sep == ">" and not text.startswith("</", v[1]):
            continue  # an element holds the value: ``<password>v</password>``
        if sep.isspace() and strength == "password" and v[0] > vstart:
            if looks_password(value):  # quoted after the word: ``PASSWORD 'x'``
                yield v
            continue
        if text[v[1] : v[1] + 1] in ("(", "[") or (
            text[v[1] : v[1] + 1] == "." and text[v[1] + 1 : v[1] + 2].isalpha()
        ):
            continue  # code: ``password = get_secret(...)``, ``token = cfg.token``
        if sep.isspace() and strength == "password" and _netrc_like(text, s):
            if not is_placeholder(value) and len(value) >= 1:
                yield v
            continue
        if _accept(value, strength, sep):
            yield v


def _strongly_random(text: str, i: int) -> bool:
    """A long random value right after a credential word and a space (``mistral key X``)."""
    v = _value_at(text, i, min(len(text), i + 512))
    return v is not None and looks_random(text[v[0] : v[1]], min_len=24)


_PREV_WORD = _rx(r"([A-Za-z]{2,16})[ \t]\Z")
_BLOCK = _rx(r"[|>][+-]?[ \t]*\r?\n|[ \t]*\r?\n")


def _next_line_value(text: str, i: int) -> int:
    """Where the value of ``key:`` starts when it is on the next line (a YAML block scalar
    or a key on a line of its own), or ``i`` when there is none."""
    m = _BLOCK.match(text, i)
    if not m:
        return i
    j = m.end()
    k = j
    while k < len(text) and text[k] in " \t":
        k += 1
    return k if k > j and k < len(text) and text[k] not in "-#\n" else i


_ROW_SEP = _rx(r"[ \t]*\|?(?:[ \t]*:?-{2,}:?[ \t]*\|)+[ \t]*:?-*:?[ \t]*$")


def _table_column(ctx: Context, s: int, e: int, strength: str) -> Iterator[tuple[int, int]]:
    """A markdown table whose header cell is the key: the cells of its column below."""
    text = ctx.text
    ls, le = ctx.line_bounds(s)
    line = text[ls:le]
    if not line.lstrip().startswith("|") or text[s:e].count("|"):
        return
    before, after = text[ls:s], text[e:le]
    if before.rstrip()[-1:] != "|" or not after.lstrip().startswith("|"):
        return
    col = before.count("|")
    nxt = le + 1
    if nxt >= len(text):
        return
    _, sep_end = ctx.line_bounds(nxt)
    if not _ROW_SEP.match(text, nxt, sep_end):
        return
    pos = sep_end + 1
    for _ in range(200):
        if pos >= len(text):
            return
        rs, re_ = ctx.line_bounds(pos)
        row = text[rs:re_]
        if not row.lstrip().startswith("|"):
            return
        bars = [rs + i for i, c in enumerate(row) if c == "|"]
        if len(bars) > col:
            cs = bars[col - 1] + 1
            ce = bars[col] if col < len(bars) else re_
            while cs < ce and text[cs] in " \t`":
                cs += 1
            while ce > cs and text[ce - 1] in " \t`":
                ce -= 1
            if ce > cs and _accept(text[cs:ce], _named_strength(strength), "|"):
                yield cs, ce
        pos = re_ + 1


_NAMED = _rx(r"(?:name|key|id|param|property|variable|setting)\\?[\"']?\s*[:=]\s*\\?[\"']$", re.I)


def _named_strength(strength: str) -> str:
    return "password" if strength == "password" else "strong"


_NETRC = _rx(r"(?:machine|default)\s+\S+(?:\s+login\s+\S+)?\s+$|login\s+\S+\s+$")


def _netrc_like(text: str, key_start: int) -> bool:
    """``machine h login u password p``: the word before the password is netrc's."""
    return bool(_NETRC.search(text, max(0, key_start - 200), key_start))


# URL userinfo whose password holds a quote, and secret query parameters in any position
_URL_PW = _rx(
    r"(?i)\b[a-z][a-z0-9+.-]{0,30}:(?:\\?/){2}[^\s/?#@\"<>`:\\]{0,256}:"
    r"(?P<pw>[^\s\"<>`]{1,512})@(?=[A-Za-z0-9\[])[A-Za-z0-9.\-\[\]%_]{1,256}(?=[:/?#\s\"'<>`),;|\\\]}]|$)"
)


_URL_USER = _rx(
    r"(?i)\b[a-z][a-z0-9+.-]{0,30}:(?:\\?/){2}(?P<user>[A-Za-z0-9_\-.~%]{16,512})@(?=[A-Za-z0-9])"
)


def find_url_secrets(ctx: Context, positions: list[int]) -> Iterator[tuple[int, int]]:
    text = ctx.text
    for s, _e, line_end in ctx.windows(positions):
        lo = max(0, s - 256)
        if text.find("@", s, line_end) < 0:
            continue  # userinfo ends with ``@``
        for m in _URL_PW.finditer(text, lo, line_end):
            pw = m.group("pw")
            if not re.match(r"\d{1,5}/", pw) and not is_marker(pw):
                yield m.span("pw")
        for m in _URL_USER.finditer(text, lo, line_end):
            web = m.group(0).lower().startswith(("http", "git"))
            if looks_random(m.group("user"), min_len=16, hex_ok=web):
                yield m.span("user")


# --------------------------------------------------------------------------- flags

NEXT, GLUED, USERPASS, PASSARG, HTPASSWD = "next", "glued", "userpass", "passarg", "htpasswd"
NEXT_USER_ONLY = "user-only"
# tool -> {flag: how its secret is given}; the long flags every tool spells alike are below
TOOL_FLAGS: dict[str, dict[str, str]] = {
    **{
        t: {"-p": GLUED}
        for t in (
            "mysql",
            "mysqldump",
            "mysqladmin",
            "mysqlimport",
            "mysqlcheck",
            "mysqlshow",
            "mysqlsh",
            "mariadb",
            "mariadb-dump",
            "mariadb-admin",
        )
    },
    "redis-cli": {"-a": NEXT, "--pass": NEXT},
    "valkey-cli": {"-a": NEXT, "--pass": NEXT},
    "keydb-cli": {"-a": NEXT, "--pass": NEXT},
    "htpasswd": {"-b": HTPASSWD},
    "openssl": {
        "-k": NEXT,
        "-K": NEXT,
        "-pass": PASSARG,
        "-passin": PASSARG,
        "-passout": PASSARG,
        "-password": PASSARG,
    },
    "sshpass": {"-p": NEXT},
    "curl": {"-u": USERPASS, "--user": USERPASS, "--proxy-user": USERPASS, "-U": USERPASS},
    **{t: {"-p": NEXT} for t in ("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport")},
    **{t: {"-P": NEXT} for t in ("sqlcmd", "bcp", "osql", "mosquitto_pub", "mosquitto_sub")},
    **{t: {"-w": NEXT} for t in ("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete")},
    "zip": {"-P": NEXT},
    "unzip": {"-P": NEXT},
    **{t: {"-p": GLUED} for t in ("7z", "7za", "7zr", "rar", "unrar")},
    "ssh-keygen": {"-N": NEXT, "-P": NEXT},
    "smbclient": {"-U": USERPASS},
    "lftp": {"-u": USERPASS},
    "xfreerdp": {"/p:": GLUED},
    "twine": {"-p": NEXT},
    "keytool": {
        f: NEXT
        for f in ("-storepass", "-keypass", "-srcstorepass", "-deststorepass", "-srckeypass")
    },
    **{
        t: {"-p": NEXT, "--password": NEXT} for t in ("psexec", "crackmapexec", "nxc", "evil-winrm")
    },
}
# subcommands whose flag takes a secret: (tool, subcommand words) -> flags
SUBCOMMAND_FLAGS: dict[tuple[str, str], dict[str, str]] = {
    ("gh", "secret set"): {"--body": NEXT, "-b": NEXT},
    **{
        (t, "login"): {"-p": NEXT, "--password": NEXT, "-u": NEXT_USER_ONLY}
        for t in ("docker", "podman", "nerdctl", "buildah", "helm registry", "oras", "crane")
    },
}
_LONG_FLAG = _rx(
    r"(?i)--?(?:[a-z0-9]+-)*(?:password|passwd|pass|pwd|passphrase|token|secret|api-?key|"
    r"access-key|secret-key|private-key|auth-token|access-token|client-secret|credentials?|"
    r"creds|storepass|keypass|license-key|sas|signature)$"
)
_WORD_BEFORE = frozenset(" \t\n\"'`;|&(=$\\/")
_CMD_END = frozenset("\n;|&")
_ARG = _rx(r"""\\?"(?:[^"\\\n]|\\.)*\\?"|'[^'\n]*'|[^\s;|&"'`]+(?:['"][^'"\n]*['"])?""")


def _args_from(text: str, pos: int, limit: int) -> list[tuple[str, int, int]]:
    """Shell words from ``pos`` to the end of the command: ``(word, start, end)`` with the
    span of the word's content (inside its quotes)."""
    out: list[tuple[str, int, int]] = []
    i = pos
    while i < limit and len(out) < 64:
        while i < limit and text[i] in " \t":
            i += 1
        if i >= limit or text[i] in _CMD_END:
            break
        if text.startswith("\\\n", i) or text.startswith("\\\\n", i):
            i += 2
            continue
        if text.startswith("\\n", i):
            break
        m = _ARG.match(text, i)
        if not m:
            break
        s, e = m.span()
        word = m.group(0)
        if word.startswith('\\"') and word.endswith('\\"') and len(word) >= 4:
            s, e = s + 2, e - 2
        elif word[:1] in "\"'" and word[-1:] == word[:1] and len(word) >= 2:
            s, e = s + 1, e - 1
        out.append((text[s:e], s, e))
        i = m.end()
    return out


def _flag_value(
    text: str, args: list[tuple[str, int, int]], k: int, flag: str, how: str
) -> Iterator[tuple[int, int]]:
    word, s, e = args[k]
    if how == GLUED:
        if word.startswith(flag) and len(word) > len(flag):
            vs = s + len(flag)
            if text[vs : vs + 1] in "\"'":
                vs += 1
            ve = e - (1 if text[e - 1 : e] in "\"'" and e - 1 > vs else 0)
            if given_secret(text[vs:ve]):
                yield vs, ve
        return
    if word != flag and not word.startswith(flag + "="):
        return
    if word.startswith(flag + "="):
        vs, ve = s + len(flag) + 1, e
        value = word[len(flag) + 1 :]
        if value[:1] in "\"'" and value[-1:] == value[:1]:
            vs, ve, value = vs + 1, ve - 1, value[1:-1]
    elif k + 1 < len(args):
        value, vs, ve = args[k + 1]
    else:
        return
    if not value or value.startswith("-") and how != NEXT or is_placeholder(value):
        return
    if how == NEXT and value.startswith("-") and len(value) < 3:
        return
    if how == USERPASS:
        i = value.find(":") if ":" in value else value.find("%") if "%" in value else -1
        if i < 0 and "," in value:
            i = value.find(",")
        if i < 0 or i == len(value) - 1:
            return
        if given_secret(value[i + 1 :]):
            yield vs + i + 1, ve
        return
    if how == PASSARG:
        if value.startswith("pass:") and given_secret(value[5:]):
            yield vs + 5, ve
        return
    if how == NEXT_USER_ONLY or not given_secret(value):
        return
    yield vs, ve


def _htpasswd(args: list[tuple[str, int, int]], k: int) -> Iterator[tuple[int, int]]:
    flags = ""
    positional: list[tuple[str, int, int]] = []
    for word, s, e in args[k:]:
        if word.startswith("-") and not positional:
            flags += word[1:]
        else:
            positional.append((word, s, e))
    if "b" not in flags:
        return
    want = 1 if "n" in flags else 2
    if len(positional) > want and not is_placeholder(positional[want][0]):
        yield positional[want][1], positional[want][2]


TOOL_WORDS = tuple(sorted({*TOOL_FLAGS, *(t for t, _ in SUBCOMMAND_FLAGS)}))
_TOOLS = frozenset(w.split(" ")[0] for w in TOOL_WORDS)


def _tool_flags(word: str, args: list[tuple[str, int, int]]) -> dict[str, str]:
    base = word.rsplit("/", 1)[-1]
    flags = dict(TOOL_FLAGS.get(base, {}))
    rest = " ".join(a[0] for a in args[:3])
    for (tool, sub), more in SUBCOMMAND_FLAGS.items():
        head, *subtool = tool.split(" ")
        if base == head and (" ".join(subtool + [sub]).strip() in rest or rest.startswith(sub)):
            flags.update(more)
    return flags


_WORD = _rx(r"[A-Za-z0-9_.\-/:]+")


def find_secret_flags(ctx: Context, positions: list[int]) -> Iterator[tuple[int, int]]:
    """Flags that take a secret, in shell commands (tool-call arguments included)."""
    text = ctx.text
    n = len(text)
    done: set[int] = set()
    for p in sorted(set(positions)):
        # the start of the word the keyword is in
        s = p
        while s > 0 and text[s - 1] not in _WORD_BEFORE:
            s -= 1
        if s in done:
            continue
        done.add(s)
        word_m = _WORD.match(text, s)
        if not word_m:
            continue
        word = word_m.group(0)
        limit = min(n, s + 8192)
        if word.startswith("-"):  # a long flag, whatever the tool
            name = word.split("=", 1)[0]
            if _LONG_FLAG.match(name):
                own = _args_from(text, s, limit)
                if own:
                    yield from _long_flag(text, own, 0, name)
            continue
        if word.rsplit("/", 1)[-1] not in _TOOLS:
            continue  # the keyword inside another word (``gh`` in ``high``)
        args = _args_from(text, word_m.end(), limit)
        flags = _tool_flags(word, args)
        for k, (w, _a, _b) in enumerate(args):
            if not (w.startswith("-") or w.startswith("/p:")):
                continue
            for flag, how in flags.items():
                if how == HTPASSWD:
                    if (w.startswith("-") and "b" in w and k == 0) or w == flag:
                        yield from _htpasswd(args, k)
                    continue
                if w == flag or w.startswith(flag):
                    yield from _flag_value(text, args, k, flag, how)
            name = w.split("=", 1)[0]
            if _LONG_FLAG.match(name) and name not in flags:
                yield from _long_flag(text, args, k, name)


def _long_flag(
    text: str, args: list[tuple[str, int, int]], k: int, name: str
) -> Iterator[tuple[int, int]]:
    word, s, e = args[k]
    if "=" in word:
        value, vs, ve = word[len(name) + 1 :], s + len(name) + 1, e
        if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) >= 2:
            value, vs, ve = value[1:-1], vs + 1, ve - 1
    elif k + 1 < len(args):
        value, vs, ve = args[k + 1]
    else:
        return
    if not value or value.startswith("-") or is_placeholder(value) or is_safe_shape(value):
        return
    if value.startswith(("env:", "file:", "fd:", "stdin", "@")):
        return  # a secret named by where it is, not given
    if value.startswith("pass:"):
        value, vs = value[5:], vs + 5
    if not given_secret(value):
        return
    pw = any(w in name.lower() for w in ("pass", "pwd"))
    if (pw and looks_password(value)) or looks_random(value, min_len=12, hex_ok=True):
        yield vs, ve


# --------------------------------------------------------------------------- the rules

FLAG_KEYWORDS = (
    *TOOL_WORDS,
    "--pass",
    "-pass",
    "-password",
    "--token",
    "-token",
    "--secret",
    "-secret",
    "--api-key",
    "--apikey",
    "-apikey",
    "-key",
    "--credential",
    "--creds",
    "-storepass",
    "-keypass",
    "--sas",
    "--signature",
    "--body",
    "/p:",
)

# ``min_len``: a shorter string is never handed to the finder
STRUCTURAL_RULES: list[Rule] = [
    Rule(
        kind=KIND_KEY,
        keywords=("private key", "private\tkey", "privatekey"),
        finder=find_armoured_keys,
        whole_text=True,
        min_len=32,
    ),
    Rule(kind=KIND_KEY, keywords=_DER_STARTS, finder=find_der_keys, min_len=40),
    Rule(kind=KIND_FLAG, keywords=FLAG_KEYWORDS, finder=find_secret_flags, min_len=6),
    Rule(kind=KIND_ASSIGN, keywords=("://", ":\\/\\/"), finder=find_url_secrets, min_len=10),
    Rule(kind=KIND_ASSIGN, keywords=CRED_KEYWORDS, finder=find_credential_values, min_len=6),
    Rule(kind=KIND_TOKEN, keywords=(), finder=find_random_runs, min_len=16),
]


_DER_AT = _rx(r"(?<![A-Za-z0-9+/])M[A-Za-z0-9]{2}")


def credential_shapes(text: str) -> list[tuple[str, int, int]]:
    """``(kind, start, end)`` of every credential-shaped string in ``text`` that needs no
    context: prefixed random tokens, opaque binary blobs, private keys with or without
    armour (for a second look at published bytes, which reports the kind, never the value)."""
    if len(text) < 16:
        return []
    ctx = Context(text)
    out = [(KIND_TOKEN, s, e) for s, e in find_random_runs(ctx, [])]
    if "PRIVATE" in text.upper():
        out.extend((KIND_KEY, s, e) for s, e in find_armoured_keys(ctx, []))
    starts = [m.start() for m in _DER_AT.finditer(text) if m.group(0).lower() in _DER_STARTS]
    if starts:
        out.extend((KIND_KEY, s, e) for s, e in find_der_keys(ctx, starts))
    return out
