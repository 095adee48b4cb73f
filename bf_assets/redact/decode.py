"""Decoded views of a text, so that any span finder sees through encodings.

A secret can reach a text in an encoded form no rule matches: URL-encoded (``%5F``),
``\\u``- or ``\\x``-escaped, written with HTML entities (``&#95;``, ``&#x5f;``, ``&lowbar;``),
a PEM whose line breaks are ``<br>`` or whose lines are quoted with ``> ``, base64 of a text
that holds it (a ``.env``, an SVG or JSON payload in a ``data:`` URI, a PNG ``tEXt`` chunk),
or a token cut in two by a terminal's wrap or a log line's end.  :func:`decoded_views` gives
the texts worth scanning besides the text itself, each a :class:`View` that maps every
decoded position back to the characters of the original it came from;
:func:`spans_through_decodings` runs a span finder (``text -> [(start, end, priority,
kind)]``, such as :meth:`bf_assets.redact.engine.RuleSet.spans`) on the text and on every
view and maps what the views find back to the smallest original spans covering it:

* an escape, entity or ``%XX`` run: the whole escape;
* base64: the 4-character groups that hold the decoded bytes (the rest of the blob stays,
  and still decodes to the rest of the payload);
* a deleted stretch (a wrapped token's line break and the next line's prefix, a base64 line
  break): never covered, the pieces either side are separate spans; a ``> `` quote prefix
  inside a span is covered (a quoted key block is one span).

Views are made only where a cheap marker occurs (:func:`may_hold_encoding`: character tests
and one regex search on a text with none), and
each view is scanned only in windows around what it decoded (the rest of it is the original
text, already scanned).  A view's decoded parts are looked at again for encodings they
reveal (base64 of URL-encoded text, ``%2541``), at most :data:`MAX_DEPTH` levels and
:data:`MAX_VIEWS` views per text.
"""

from __future__ import annotations

import binascii
import html
import re
import string
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence

from bf_assets.redact.engine import Span, merge_spans

__all__ = [
    "MAX_DEPTH",
    "MAX_VIEWS",
    "View",
    "decoded_views",
    "iter_decoded_views",
    "may_hold_encoding",
    "spans_through_decodings",
]

MAX_DEPTH = 3  # a decoding of a decoding of a decoding
MAX_VIEWS = 12  # views of one text, at all depths
CONTEXT = 64  # characters around a decoded stretch that a finder sees in a view (then
# widened to the line before and the line's end)
LINE_REACH = 2048  # a window is widened to a line's end when one is this close
MIN_BASE64 = 24  # characters of a base64 run worth decoding
WRAP_MIN_LINE = 60  # a line this long may be cut by a wrap (a terminal's is 80 or more)
MIN_BINARY_RUN = 16  # printable ASCII bytes of a binary payload scanned as text
MAX_BASE64 = 8 << 20  # a longer blob is not decoded

# piece modes: how one piece of a view maps back to its parent
_COPY = 0  # the parent's characters, one for one
_ATOM = 1  # every character comes from the parent's [a, b) (an escape, an entity)
_B64 = 2  # character k is byte b + k of a base64 line starting at a, ending at c

# --------------------------------------------------------------------------- markers

_INLINE_MARK = (
    r"%[0-9A-Fa-f]{2}"
    r"|\\(?:u[0-9A-Fa-f]{4}|u\{[0-9A-Fa-f]|x[0-9A-Fa-f]{2}|U[0-9A-Fa-f]{8})"
    r"|&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});"
    r"|<[bB][rR][ \t]*/?>"
)
_B64_MARK = r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{24}"
_TOKEN_CHARS = r"[A-Za-z0-9_+/=.-]"
# a line break after six token characters (a ``\`` between them allowed), found from the
# break: a search runs at the speed of a search for the character
_JOIN_MARK = (
    r"\n(?:"
    + "|".join(rf"(?<={_TOKEN_CHARS}{{6}}{brk})" for brk in (r"\n", r"\r\n", r"\\\n", r"\\\r\n"))
    + ")"
)
_QUOTE_MARK = r"(?:^|\n)[ \t]*>"
_MARKS: dict[str, re.Pattern[str]] = {
    "inline": re.compile(_INLINE_MARK),
    "base64": re.compile(_B64_MARK),
    "join": re.compile(_JOIN_MARK),
    "quote": re.compile(_QUOTE_MARK),
    "wrap": re.compile(r"[^\n]{60}\n"),
}
# how far around a decoded stretch a nested encoding's marker is looked for (a base64 run
# decoded from ``%2B``/``%3D`` reaches well beyond the decoded character)
_NEST_MARGIN = {"inline": 8, "base64": 48, "join": 8, "quote": 8, "wrap": 8}


# --------------------------------------------------------------------------- views


class View:
    """A decoded text, with the map from its positions to its parent's (the original text,
    or the view it was decoded from)."""

    __slots__ = ("text", "kind", "parent", "regions", "_ds", "_mode", "_a", "_b", "_c", "_bridge")

    def __init__(self, text: str, kind: str, parent: View | None, builder: _Builder) -> None:
        self.text = text
        self.kind = kind  # the decodings, in the order applied: "base64>inline"
        self.parent = parent
        self.regions = builder.regions  # decoded stretches (or deletion points), merged
        self._ds = builder.ds
        self._mode = builder.mode
        self._a = builder.a
        self._b = builder.b
        self._c = builder.c
        self._bridge = builder.bridge

    def __repr__(self) -> str:
        return f"View({self.kind!r}, {len(self.text)} chars, {len(self.regions)} regions)"

    def to_parent(self, start: int, end: int) -> list[tuple[int, int]]:
        """The parent's spans that the view's ``[start, end)`` comes from: one per stretch of
        the parent with nothing deleted in it."""
        ds = self._ds
        n = len(ds)
        i = max(0, bisect_right(ds, start) - 1)
        out: list[tuple[int, int]] = []
        limit = len(self.text)
        while i < n and ds[i] < end:
            ps = ds[i]
            pe = ds[i + 1] if i + 1 < n else limit
            lo, hi = max(start, ps), min(end, pe)
            if hi > lo:
                mode, a = self._mode[i], self._a[i]
                if mode == _COPY:
                    os_, oe = a + lo - ps, a + hi - ps
                elif mode == _ATOM:
                    os_, oe = a, self._b[i]
                else:
                    first = self._b[i] + lo - ps
                    last = self._b[i] + hi - 1 - ps
                    os_ = a + 4 * (first // 3)
                    oe = min(a + 4 * (last // 3) + 4, self._c[i])
                if oe > os_:
                    if out and (os_ <= out[-1][1] or (lo == ps and i in self._bridge)):
                        out[-1] = (min(out[-1][0], os_), max(out[-1][1], oe))
                    else:
                        out.append((os_, oe))
            i += 1
        return out

    def to_original(self, start: int, end: int) -> list[tuple[int, int]]:
        """The original text's spans that the view's ``[start, end)`` comes from."""
        spans = self.to_parent(start, end)
        view = self.parent
        while view is not None:
            spans = [s for ps, pe in spans for s in view.to_parent(ps, pe)]
            view = view.parent
        return spans

    def windows(self, context: int = CONTEXT) -> list[tuple[int, int]]:
        """The stretches of :attr:`text` worth scanning: ``context`` characters around each
        decoded region, widened to whole lines (or, on a very long line, to whitespace)."""
        text = self.text
        n = len(text)
        near: list[list[int]] = []  # regions with their context, merged, then widened
        for rs, re_ in self.regions:
            if near and rs - context <= near[-1][1]:
                near[-1][1] = re_ + context
            else:
                near.append([rs - context, re_ + context])
        out: list[list[int]] = []
        for ns, ne in near:
            s, e = _widen(text, max(0, ns), min(n, ne))
            if out and s <= out[-1][1]:
                out[-1][1] = max(out[-1][1], e)
            else:
                out.append([s, e])
        return [(s, e) for s, e in out]


def _widen(text: str, s: int, e: int) -> tuple[int, int]:
    """``[s, e)`` widened to line bounds when near, else to whitespace, so that no token is
    cut at a window's edge."""
    n = len(text)
    if s > 0:
        lo = max(0, s - LINE_REACH)
        nl = text.rfind("\n", lo, s)
        if nl >= 0:  # the line before too: a rule's keyword may be there
            lo = max(0, nl - LINE_REACH)
            prev = text.rfind("\n", lo, nl)
            s = prev + 1 if prev >= 0 else 0 if lo == 0 else nl + 1
        elif lo == 0:
            s = 0
        else:
            sp = max(text.rfind(" ", max(0, s - 256), s), text.rfind("\t", max(0, s - 256), s))
            s = sp + 1 if sp >= 0 else max(0, s - 256)
    if e < n:
        nl = text.find("\n", e, e + LINE_REACH)
        if nl >= 0:
            e = nl
        elif e + LINE_REACH >= n:
            e = n
        else:
            m = _SPACE.search(text, e, min(n, e + 256))
            e = m.start() if m else min(n, e + 256)
    return s, e


_SPACE = re.compile(r"\s")


class _Builder:
    """Assembles a view's text from copied and decoded pieces."""

    __slots__ = ("src", "parts", "n", "ds", "mode", "a", "b", "c", "regions", "bridge", "_gap")

    def __init__(self, src: str) -> None:
        self.src = src
        self.parts: list[str] = []
        self.n = 0
        # one entry a piece: where it starts in the view, how it maps, its parameters
        self.ds = array("q")
        self.mode = array("b")
        self.a = array("q")
        self.b = array("q")
        self.c = array("q")
        self.regions: list[tuple[int, int]] = []
        self.bridge: set[int] = set()  # pieces a span reaching them covers the gap before
        self._gap = False

    def _piece(self, out: str, mode: int, a: int, b: int = 0, c: int = 0) -> None:
        if not out:
            return
        if self._gap:
            self.bridge.add(len(self.ds))
            self._gap = False
        self.ds.append(self.n)
        self.mode.append(mode)
        self.a.append(a)
        self.b.append(b)
        self.c.append(c)
        self.parts.append(out)
        self.n += len(out)

    def _region(self, s: int, e: int) -> None:
        if self.regions and s <= self.regions[-1][1]:
            self.regions[-1] = (self.regions[-1][0], max(self.regions[-1][1], e))
        else:
            self.regions.append((s, e))

    def copy(self, s: int, e: int) -> None:
        if e > s:
            self._piece(self.src[s:e], _COPY, s)

    def atom(self, out: str, s: int, e: int, *, quiet: bool = False) -> None:
        """``out`` decoded from the parent's ``[s, e)``; a ``quiet`` one (a simple escape
        such as ``\\n``) is no region of its own: it is scanned only near another."""
        start = self.n
        self._piece(out, _ATOM, s, e)
        if not quiet:
            self._region(start, self.n)

    def base64(self, out: str, line_start: int, byte: int, line_end: int) -> None:
        start = self.n
        self._piece(out, _B64, line_start, byte, line_end)
        self._region(start, self.n)

    def deleted(self, *, bridged: bool = False) -> None:
        """The parent's characters from here to the next piece are left out; a span across
        them becomes two spans, or with ``bridged`` one covering them too."""
        self._region(self.n, self.n)
        self._gap = bridged

    def view(self, kind: str, parent: View | None) -> View | None:
        if not self.regions:
            return None
        return View("".join(self.parts), kind, parent, self)


# --------------------------------------------------------------------------- inline codes

_INLINE = re.compile(
    r"(?=[%\\&<])(?:(?P<pct>(?:%[0-9A-Fa-f]{2})+)"
    r"|(?P<hex>(?:\\x[0-9A-Fa-f]{2})+)"
    r"|\\u(?P<hi>[dD][89abAB][0-9A-Fa-f]{2})\\u(?P<lo>[dD][c-fC-F][0-9A-Fa-f]{2})"
    r"|\\u(?P<u4>[0-9A-Fa-f]{4})"
    r"|\\U(?P<u8>[0-9A-Fa-f]{8})"
    r"|\\u\{(?P<ub>[0-9A-Fa-f]{1,6})\}"
    r"|\\(?P<simple>[nrt\"'\\/])"
    r"|(?P<ent>&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});)"
    r"|(?P<br><[bB][rR][ \t]*/?>))"
)
_SIMPLE = {"n": "\n", "r": "\r", "t": "\t"}


def _bytes_run(b: _Builder, data: bytes, start: int, width: int) -> None:
    """``data`` (each byte written in ``width`` characters from ``start``) decoded as UTF-8;
    a byte that is not part of a character is kept as written."""
    text = data.decode("utf-8", "surrogateescape")
    pos = start
    for ch in text:
        if "\udc80" <= ch <= "\udcff":
            b.copy(pos, pos + width)
            pos += width
            continue
        w = width * len(ch.encode("utf-8"))
        b.atom(ch, pos, pos + w, quiet=_control(ch))
        pos += w


def _control(ch: str) -> bool:
    """A control character (a terminal's colour escape): part of no token, no separator a
    rule looks for."""
    return ch < " " and ch not in "\n\r\t" or "\x7f" <= ch <= "\x9f"


def _chr(code: int) -> str | None:
    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        return None
    return chr(code)


def _inline_view(text: str, parent: View | None, kind: str) -> View | None:
    """``%XX``, ``\\u``/``\\x`` escapes (and the simple ones next to them), HTML entities and
    ``<br>`` decoded in one pass."""
    b = _Builder(text)
    last = 0
    for m in _INLINE.finditer(text):
        s, e = m.span()
        b.copy(last, s)
        last = e
        g = m.lastgroup
        if g == "pct":
            _bytes_run(b, bytes.fromhex(m.group(0).replace("%", "")), s, 3)
        elif g == "hex":
            _bytes_run(b, bytes.fromhex(m.group(0).replace("\\x", "")), s, 4)
        elif g in ("hi", "lo"):
            hi, lo = int(m.group("hi"), 16), int(m.group("lo"), 16)
            b.atom(chr(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)), s, e)
        elif g in ("u4", "u8", "ub"):
            ch = _chr(int(m.group(g), 16))
            if ch is None:
                b.copy(s, e)
            else:
                b.atom(ch, s, e, quiet=_control(ch))
        elif g == "simple":
            c = m.group("simple")
            b.atom(_SIMPLE.get(c, c), s, e, quiet=True)
        elif g == "ent":
            out = html.unescape(m.group(0))
            if out == m.group(0):
                b.copy(s, e)
            else:
                b.atom(out, s, e)
        else:  # <br>
            b.atom("\n", s, e)
    b.copy(last, len(text))
    return b.view(kind, parent)


# --------------------------------------------------------------------------- base64

_B64_RUN = re.compile(
    r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{" + str(MIN_BASE64) + r",}={0,2}"
    r"(?:(?:\r?\n|\\r\\n|\\n)[A-Za-z0-9+/_-]{4,}={0,2})*"
)
_B64_SEP = re.compile(r"\r?\n|\\r\\n|\\n")
_HEX_ONLY = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_UUID_LIKE = re.compile(r"[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}")
_URLSAFE = str.maketrans("-_", "+/")
_NONPRINTING = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")
_BINARY_RUN = re.compile(rb"[\t\x20-\x7e]{%d,}" % MIN_BINARY_RUN)
_DROP_ASCII_LEADS = str.maketrans("", "", string.ascii_uppercase + "abcdef")
MIN_BINARY_BLOB = 128  # characters of a shorter run are decoded only when they can be text
_WRAP_WIDTH = 40  # a base64 line at least this long, a multiple of 4, may continue


def _ascii_leads(chunk: str) -> bool:
    """Whether ``chunk`` can be the base64 of (mostly) ASCII text: each 4-character group's
    first character then encodes a byte's top six bits, below 32 (``A``-``Z``, ``a``-``f``)."""
    leads = chunk[::4]
    bad = len(leads.translate(_DROP_ASCII_LEADS))
    return bad * 10 <= len(leads)


def _decode_line(chunk: str) -> bytes | None:
    body = chunk.rstrip("=").translate(_URLSAFE)
    if len(body) % 4 == 1:
        body = body[:-1]
    body += "=" * (-len(body) % 4)
    try:
        return binascii.a2b_base64(body)
    except (binascii.Error, ValueError):
        return None


def _blobs(text: str, start: int, end: int) -> Iterable[list[tuple[int, int]]]:
    """The base64 blobs in a run of base64 lines, each as its lines' ``(start, end)``: lines
    of one width (a multiple of 4) continue into the next; every other line is a blob of its
    own when long enough."""
    lines: list[tuple[int, int]] = []
    pos = start
    for m in _B64_SEP.finditer(text, start, end):
        lines.append((pos, m.start()))
        pos = m.end()
    lines.append((pos, end))
    blob: list[tuple[int, int]] = []
    for ls, le in lines:
        if blob:
            w = blob[0][1] - blob[0][0]
            prev = blob[-1][1] - blob[-1][0]
            full = w >= _WRAP_WIDTH and w % 4 == 0 and prev == w and text[blob[-1][1] - 1] != "="
            if full and le - ls <= w:
                blob.append((ls, le))
                continue
            yield blob
        blob = [(ls, le)]
    if blob:
        yield blob


def _decoded_blob(text: str, lines: list[tuple[int, int]]) -> list[tuple[int, bytes]] | None:
    """``(line start, bytes)`` per line of a blob worth decoding, else None."""
    size = sum(le - ls for ls, le in lines)
    if size < MIN_BASE64 or size > MAX_BASE64:
        return None
    if len(lines) == 1:
        one = text[lines[0][0] : lines[0][1]]
        if _HEX_ONLY.fullmatch(one) or _UUID_LIKE.search(one):
            return None  # a digest or an id: decodes to nothing readable
        if size < MIN_BINARY_BLOB and not _ascii_leads(one):
            return None  # too short for a binary payload, and not the base64 of a text
    out = []
    for ls, le in lines:
        data = _decode_line(text[ls:le])
        if data is None:
            return None
        out.append((ls, data))
    return out


def _base64_view(text: str, parent: View | None, kind: str) -> View | None:
    """Every base64 blob that decodes to text replaced by the text; a binary payload by its
    printable ASCII runs (one a line)."""
    b: _Builder | None = None  # made for the first blob worth decoding (most texts have none)
    last = 0
    for m in _B64_RUN.finditer(text):
        run = m.group(0)
        if run.islower() or run.isupper():
            continue  # a path, a name, a constant, a digest, a UUID: base64 mixes cases
        if len(run) < MIN_BINARY_BLOB and "\n" not in run and not _ascii_leads(run):
            continue  # one short line that cannot be the base64 of a text
        for lines in _blobs(text, m.start(), m.end()):
            decoded = _decoded_blob(text, lines)
            if decoded is None:
                continue
            if b is None:
                b = _Builder(text)
            first = lines[0][0]
            b.copy(last, first)
            before = b.n
            _emit_blob(b, decoded, lines)
            if b.n == before:
                b.copy(first, lines[-1][1])  # nothing readable: the blob as it is
            last = lines[-1][1]
    if b is None or not b.regions:
        return None
    b.copy(last, len(text))
    return b.view(kind, parent)


def _emit_blob(b: _Builder, decoded: list[tuple[int, bytes]], lines: list[tuple[int, int]]) -> None:
    data = b"".join(d for _, d in decoded)
    # (byte offset of each line's first byte, line start, line end)
    starts: list[int] = []
    pos = 0
    for _, d in decoded:
        starts.append(pos)
        pos += len(d)
    ends = [le for _, le in lines]
    line_starts = [ls for ls, _ in decoded]

    def ascii_bytes(lo: int, hi: int) -> None:
        """Bytes ``[lo, hi)`` (all ASCII) as characters, one piece a base64 line."""
        i = max(0, bisect_right(starts, lo) - 1)
        while lo < hi:
            line_hi = starts[i + 1] if i + 1 < len(starts) else len(data)
            cut = min(hi, line_hi)
            if cut > lo:
                b.base64(data[lo:cut].decode("ascii"), line_starts[i], lo - starts[i], ends[i])
            lo = cut
            i += 1

    try:
        decoded_text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        decoded_text = None
    if decoded_text is not None and decoded_text:
        bad = len(_NONPRINTING.findall(decoded_text))
        if bad <= len(decoded_text) // 20:
            if decoded_text.isascii():
                ascii_bytes(0, len(data))
            else:
                _non_ascii(b, decoded_text, starts, line_starts, ends)
            return
    runs = list(_BINARY_RUN.finditer(data))
    for k, r in enumerate(runs):
        if k:
            b.atom("\n", line_starts[0], line_starts[0])
        ascii_bytes(r.start(), r.end())


def _non_ascii(
    b: _Builder, text: str, starts: list[int], line_starts: list[int], ends: list[int]
) -> None:
    """A decoded text with non-ASCII characters: each character maps to the groups of its
    bytes."""

    def group(byte: int) -> tuple[int, int]:
        i = max(0, bisect_right(starts, byte) - 1)
        off = line_starts[i] + 4 * ((byte - starts[i]) // 3)
        return off, min(off + 4, ends[i])

    pos = 0
    for ch in text:
        w = len(ch.encode("utf-8"))
        s, _ = group(pos)
        _, e = group(pos + w - 1)
        b.atom(ch, s, e)
        pos += w


# --------------------------------------------------------------------------- quotes, wraps

_QUOTE = re.compile(r"(?m)^[ \t]*(?:>[ \t]?)+")


def _quote_view(text: str, parent: View | None, kind: str) -> View | None:
    """Every line's ``> `` quote prefix (any depth) left out."""
    b = _Builder(text)
    last = 0
    for m in _QUOTE.finditer(text):
        b.copy(last, m.start())
        b.deleted(bridged=True)
        last = m.end()
    b.copy(last, len(text))
    return b.view(kind, parent)


# A line break (after a ``\\`` continuation or not) after six token characters that are not
# all digits, whose token's last piece (after a ``.`` or ``=``) holds, among its last 16
# characters, a digit or a capital, and a letter (a random piece does; a word, a snake_case
# name, a number does not): where a wrap is worth a look.  The pattern starts with the break
# (a search runs at the speed of a search for it) and tests the cheap conditions first.
_BREAKS = (r"\n", r"\r\n", r"\\\n", r"\\\r\n")


def _before_break(chars: str, width: str = "") -> str:
    return "|".join(rf"(?<={chars}{width}{brk})" for brk in _BREAKS)


def _within_tail(chars: str) -> str:
    return "|".join(_before_break(chars, f"[A-Za-z0-9_+/-]{{{k}}}") for k in range(16))


_JOIN_BREAK = re.compile(
    rf"\n(?:{_before_break(_TOKEN_CHARS, '{6}')})"
    + "".join(rf"(?<![0-9.,:-]{{6}}{brk})" for brk in _BREAKS)
    + f"(?:{_within_tail('[0-9A-Z]')})(?:{_within_tail('[A-Za-z]')})"
)


# the characters of the last piece of a token (after its last ``=`` or ``.``)
_TAIL_CHAR = frozenset(string.ascii_letters + string.digits + "_+/-")
_TOKEN = re.compile(_TOKEN_CHARS + r"+")
_LEAD = re.compile(r"[ \t]*(?:(?:>|#|//)[ \t]*)*")
_DIGITS = str.maketrans("0123456789", "0000000000")
_TOKEN_CHAR = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/=.-")
_PREFIX_SPAN = 200  # how much of two lines is compared for a shared log prefix


_SYMBOLS = str.maketrans("", "", "_-+/=.")


def _random_looking(token: str) -> bool:
    """A token that mixes letters and digits, or lowercase and inner uppercase letters, the
    way a key's random part does (a word, a capitalised word, a snake_case name, a constant
    or a number does not)."""
    core = token.translate(_SYMBOLS)
    if not core or core.isdigit():
        return False
    if core.isalpha():
        return len(core) > 1 and not core[1:].islower() and not core.isupper()
    return True


def _continuation(text: str, line1: int, brk: int, line2: int) -> int | None:
    """Where the token continues on the line starting at ``line2``, when the line before
    (starting at ``line1``, broken at ``brk``) ends in a token cut by a wrap; else None.  The
    next line may repeat the first one's prefix (a log line's time and source, digits
    aside), be indented, or be quoted."""
    end2 = text.find("\n", line2)
    end2 = len(text) if end2 < 0 else end2
    candidates: list[int] = []
    a = text[line1 : min(brk, line1 + _PREFIX_SPAN)].translate(_DIGITS)
    b = text[line2 : min(end2, line2 + _PREFIX_SPAN)].translate(_DIGITS)
    same = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        same += 1
    while same > 0 and text[line2 + same - 1] in _TOKEN_CHAR:
        same -= 1
    if same > 0:
        candidates.append(line2 + same)
    lead = _LEAD.match(text, line2, end2)
    candidates.append(lead.end() if lead else line2)
    for at in candidates:
        t = _TOKEN.match(text, at, end2)
        if not t or not _random_looking(t.group(0)):
            continue
        # a short piece is a tail only when it ends the line
        n = t.end() - t.start()
        if n >= 8 or (n >= 4 and not text[t.end() : end2].strip()):
            return at
    return None


def _join_view(text: str, parent: View | None, kind: str) -> View | None:
    """Tokens cut by a line break joined: the break (with a ``\\`` before it) and the next
    line's prefix left out, where both sides look like parts of one random token and the
    first line is long enough to have been wrapped (or ends with a ``\\``)."""
    b: _Builder | None = None  # made for the first join (most texts have none)
    last = 0
    for m in _JOIN_BREAK.finditer(text):
        nl = m.start()
        brk = nl - 1 if text[nl - 1] == "\r" else nl
        if text[brk - 1] == "\\":
            brk -= 1
        i, lo = brk, max(0, brk - 512)
        while i > lo and text[i - 1] in _TAIL_CHAR:
            i -= 1
        tail = text[i:brk]
        if not _random_looking(tail) or _HEX_ONLY.fullmatch(tail):
            continue  # a word, a number, a digest
        line1 = text.rfind("\n", 0, brk) + 1
        if brk - line1 < WRAP_MIN_LINE and text[brk] != "\\":
            continue  # a short line is whole: a list of ids, one a line, is no wrapped token
        at = _continuation(text, line1, brk, nl + 1)
        if at is None:
            continue
        if b is None:
            b = _Builder(text)
        b.copy(last, brk)
        b.deleted()
        last = at
    if b is None:
        return None
    b.copy(last, len(text))
    return b.view(kind, parent)


# The widths a terminal commonly wraps at: a line of exactly one of them, or as long as the
# line after it (a run of wrapped lines is one width), was cut by the terminal, anywhere in
# its content (between ``https`` and ``://``, after ``KEY=``), not only inside a token.
TERMINAL_WIDTHS = frozenset((80, 100, 120, 132, 140, 150, 160, 180, 200, 220, 240, 250, 256))
_LONG_LINE = _MARKS["wrap"]  # a line of WRAP_MIN_LINE characters or more


def _wrap_view(text: str, parent: View | None, kind: str) -> View | None:
    """Lines a terminal wrapped joined again: the break after a line of a terminal's width
    (:data:`TERMINAL_WIDTHS`, or the width of the wrapped line after it) left out."""
    b: _Builder | None = None
    last = 0
    start = 0
    n = len(text)
    while start < n:
        nl = text.find("\n", start)
        if nl < 0:
            break
        width = nl - start
        nxt = text.find("\n", nl + 1)
        width2 = (n if nxt < 0 else nxt) - (nl + 1)
        if width >= WRAP_MIN_LINE and (width in TERMINAL_WIDTHS or (width == width2 and nxt >= 0)):
            if b is None:
                b = _Builder(text)
            b.copy(last, nl)
            b.deleted()
            last = nl + 1
        start = nl + 1
    if b is None:
        return None
    b.copy(last, len(text))
    return b.view(kind, parent)


# --------------------------------------------------------------------------- entry points

_BUILDERS: dict[str, Callable[[str, View | None, str], View | None]] = {
    "inline": _inline_view,
    "base64": _base64_view,
    "quote": _quote_view,
    "join": _join_view,
    "wrap": _wrap_view,
}
_KINDS = tuple(_BUILDERS)


def _marked_kinds(text: str) -> list[str]:
    """The decodings whose markers ``text`` may hold: a character test for each, and a
    regex search only where the character occurs (base64: its builder's search for runs)."""
    kinds = []
    if ("%" in text or "\\" in text or "&" in text or "<" in text) and _MARKS["inline"].search(
        text
    ):
        kinds.append("inline")
    if len(text) >= MIN_BASE64:
        kinds.append("base64")  # its builder's one search is its marker's
    if ">" in text and _MARKS["quote"].search(text):
        kinds.append("quote")
    if "\n" in text and _MARKS["join"].search(text):
        kinds.append("join")
    if len(text) > WRAP_MIN_LINE and "\n" in text and _LONG_LINE.search(text):
        kinds.append("wrap")
    return kinds


def iter_decoded_views(text: str, max_depth: int = MAX_DEPTH) -> Iterator[View]:
    """The decoded views of ``text`` worth scanning (none without a marker of an encoding),
    depth first: a caller that drops each view when it has scanned it holds at most one
    view per level."""
    kinds = _marked_kinds(text) if text else []
    if kinds:
        yield from _views_of(text, None, kinds, 1, max_depth, [0])


def decoded_views(text: str, max_depth: int = MAX_DEPTH) -> list[View]:
    """:func:`iter_decoded_views` as a list."""
    return list(iter_decoded_views(text, max_depth))


def _views_of(
    text: str,
    parent: View | None,
    kinds: Sequence[str],
    depth: int,
    max_depth: int,
    made: list[int],
) -> Iterator[View]:
    for kind in kinds:
        if made[0] >= MAX_VIEWS:
            return
        name = kind if parent is None else f"{parent.kind}>{kind}"
        view = _BUILDERS[kind](text, parent, name)
        if view is None:
            continue
        made[0] += 1
        yield view
        if depth >= max_depth:
            continue
        nested = [k for k in _KINDS if _marked_near(view, k)]
        if nested:
            yield from _views_of(view.text, view, nested, depth + 1, max_depth, made)


def _marked_near(view: View, kind: str) -> bool:
    """Whether ``kind``'s marker occurs near what ``view`` decoded."""
    margin = _NEST_MARGIN[kind]
    rx = _MARKS[kind]
    end = -1
    for s, e in view.regions:
        if e <= s or e + margin <= end:
            continue
        lo = max(s - margin, end, 0)
        end = e + margin
        if rx.search(view.text, lo, end):
            return True
    return False


def may_hold_encoding(text: str) -> bool:
    """False when ``text`` can have no decoded view (most texts): a few character tests and,
    for a text as long as a base64 run, one regex search."""
    if len(text) < 8:
        return False
    return (
        "%" in text
        or "\\" in text
        or "&" in text
        or "<" in text
        or ">" in text
        or "\n" in text
        or (len(text) >= MIN_BASE64 and _MARKS["base64"].search(text) is not None)
    )


def spans_through_decodings(text: str, find: Callable[[str], list[Span]]) -> list[Span]:
    """``find``'s spans of ``text`` and of every decoded view of it (mapped back to the
    smallest spans of ``text`` covering them), merged and sorted."""
    spans = find(text) if text else []
    if not text or not may_hold_encoding(text):
        return spans
    found = list(spans)
    for view in iter_decoded_views(text):
        for ws, we in view.windows():
            for s, e, prio, kind in find(view.text[ws:we]):
                for os_, oe in view.to_original(ws + s, ws + e):
                    found.append((os_, oe, prio, kind))
    return merge_spans(found) if len(found) > len(spans) else spans
