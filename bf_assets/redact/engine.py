"""The matching engine: keyword prefilter, rules run only where their keywords occur.

A :class:`RuleSet` holds every rule's keywords in one Aho-Corasick automaton.  Scanning a
string lowercases it once, walks the automaton once, and runs a rule only if one of its
keywords occurs, and only near the occurrences:

* ``anchored`` rules (gitleaks' semi-generic ``keyword ... = value`` rules and our own
  assignment rules) are tried with ``match`` at each keyword position: cost grows with the
  number of keyword hits, not with the length of the text;
* window rules are searched in the lines around each hit (the line before to the line after,
  at most a few KB either side; a match touching the window's end is searched again to the end
  of the line, so a long secret is never cut);
* ``whole_text`` rules (patterns that span lines, such as private-key blocks) search the text.

Every match becomes a secret span (the rule's secret group, gitleaks' choice of group, or a
custom finder's span), filtered by the rule's entropy floor and allowlists; overlapping spans
are merged (the earlier rule names the merged span) so a secret is always replaced whole.
"""

from __future__ import annotations

import bisect
import math
import re
import re._parser as re_parser  # the parser ``re.compile`` uses: the width of a pattern
import string
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import ahocorasick

PLACEHOLDER = "[REDACTED:{kind}]"
MARKER_PREFIXES = ("[REDACTED", "***REDACTED***", "<XXX-benchflow-key-values-XXX>", "<HOST_PATH>")
WINDOW_BEFORE = 2048
WINDOW_AFTER = 4096
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_IDENT = frozenset(string.ascii_letters + string.digits + "_.-")

# (start, end, priority, kind) of one secret in a text
Span = tuple[int, int, int, str]
Finder = Callable[["Context", list[int]], Iterable[tuple[int, int]]]


def lower_same_length(text: str) -> str:
    """``text`` lowercased with every index unchanged (ASCII-only folding when full Unicode
    lowercasing would change the length)."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def min_width(pattern: re.Pattern[str] | None) -> int:
    """The fewest characters any match of ``pattern`` takes (0 when unknown)."""
    if pattern is None:
        return 0
    try:
        low = re_parser.parse(pattern.pattern, pattern.flags).getwidth()[0]
    except (re.error, TypeError, ValueError, OverflowError, RecursionError):
        return 0
    return max(0, min(int(low), 1 << 30))


def shannon_entropy(data: str) -> float:
    if not data:
        return 0.0
    n = len(data)
    return -sum(c / n * math.log2(c / n) for c in Counter(data).values())


def is_marker(value: str) -> bool:
    return value.startswith(MARKER_PREFIXES) or "[REDACTED:" in value


class Context:
    """One text being scanned, with its newline index built on first use."""

    __slots__ = ("text", "_newlines")

    def __init__(self, text: str) -> None:
        self.text = text
        self._newlines: list[int] | None = None

    @property
    def newlines(self) -> list[int]:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        return self._newlines

    def line_bounds(self, pos: int, before: int = 0, after: int = 0) -> tuple[int, int]:
        """Start of the line ``before`` lines above ``pos``'s line, end of the line ``after``
        lines below it."""
        nl = self.newlines
        i = bisect.bisect_left(nl, pos)  # nl[i-1] < pos <= nl[i]
        lo = i - 1 - before
        start = nl[lo] + 1 if lo >= 0 else 0
        hi = i + after
        end = nl[hi] if hi < len(nl) else len(self.text)
        return start, end

    def windows(self, positions: Iterable[int]) -> list[tuple[int, int, int]]:
        """Merged ``(start, end, line_end)`` windows around ``positions``."""
        out: list[list[int]] = []
        for p in sorted(set(positions)):
            if out and p + 1 < out[-1][1] - WINDOW_AFTER // 2:
                continue  # well inside the previous window
            ls, le = self.line_bounds(p, 1, 1)
            s, e = max(ls, p - WINDOW_BEFORE), min(le, p + WINDOW_AFTER)
            if out and s <= out[-1][1]:
                out[-1][1] = max(out[-1][1], e)
                out[-1][2] = max(out[-1][2], le)
            else:
                out.append([s, e, le])
        return [(s, e, le) for s, e, le in out]


@dataclass(frozen=True, slots=True)
class Allow:
    """A gitleaks allowlist: the finding is dropped when it applies."""

    target: str = "secret"  # "secret", "match" or "line"
    regexes: tuple[re.Pattern[str], ...] = ()
    stopwords: tuple[str, ...] = ()
    all_of: bool = False  # condition AND

    def applies(self, secret: str, match: str, line: str) -> bool:
        subject = match if self.target == "match" else line if self.target == "line" else secret
        rx = any(r.search(subject) for r in self.regexes)
        low = secret.lower()
        sw = any(w in low for w in self.stopwords)
        if self.all_of:
            checks = ([rx] if self.regexes else []) + ([sw] if self.stopwords else [])
            return bool(checks) and all(checks)
        return rx or sw


@dataclass(slots=True)
class Rule:
    kind: str  # the placeholder's kind and the per-kind count's key
    keywords: tuple[str, ...]  # lowercase; a rule without keywords runs on every text
    pattern: re.Pattern[str] | None = None
    group: int | None = None  # None: gitleaks' choice (first non-empty group, else the match)
    entropy: float = 0.0  # the secret must have more bits per character than this
    allows: tuple[Allow, ...] = ()
    anchored: bool = False  # the match starts at an anchor (or, without anchors, a keyword)
    anchors: tuple[str, ...] = ()  # lowercase words every match starts with
    ident_prefix: bool = False  # gitleaks' match starts up to 50 identifier chars earlier
    whole_text: bool = False
    finder: Finder | None = None  # a custom matcher instead of ``pattern``
    source: str = "bf-assets"
    description: str = ""
    samples: tuple[str, ...] = field(default=(), repr=False)
    # the fewest characters a match of ``pattern`` takes: a shorter text is never searched
    min_len: int = field(default=-1, repr=False)

    def __post_init__(self) -> None:
        if self.min_len < 0:
            self.min_len = min_width(self.pattern) if self.finder is None else 0

    def find(
        self, ctx: Context, positions: list[int], allow: Allow | None
    ) -> list[tuple[int, int]]:
        if self.finder is not None:
            return [(s, e) for s, e in self.finder(ctx, positions) if e > s]
        assert self.pattern is not None
        text, rx = ctx.text, self.pattern
        matches: list[re.Match[str]] = []
        if self.anchored:
            for p in sorted(set(positions)):
                m = rx.match(text, p)
                if m:
                    matches.append(m)
        elif self.whole_text or not positions:
            matches.extend(rx.finditer(text))
        else:
            for s, e, line_end in ctx.windows(positions):
                for m in rx.finditer(text, s, e):
                    if m.end() == e and e < line_end:  # may be cut by the window: look again
                        m = rx.match(text, m.start(), line_end) or m
                    matches.append(m)
        out = []
        for m in matches:
            span = self._secret_span(m)
            if span is not None and self._accepted(ctx, m, span, allow):
                out.append(span)
        return out

    def _secret_span(self, m: re.Match[str]) -> tuple[int, int] | None:
        if self.group is not None:
            return m.span(self.group) if m.group(self.group) else None
        for g in range(1, (m.re.groups or 0) + 1):
            if m.group(g):
                return m.span(g)
        return m.span() if m.end() > m.start() else None

    def _accepted(
        self, ctx: Context, m: re.Match[str], span: tuple[int, int], allow: Allow | None
    ) -> bool:
        text = ctx.text
        secret = text[span[0] : span[1]].strip("\n")
        if not secret or is_marker(secret):
            return False
        if self.entropy and shannon_entropy(secret) <= self.entropy:
            return False
        checks = ((allow,) if allow is not None else ()) + self.allows
        if not checks:
            return True
        start = m.start()
        if self.ident_prefix:
            while start > 0 and m.start() - start < 50 and text[start - 1] in _IDENT:
                start -= 1
        match = text[start : m.end()].strip("\n")
        ls, le = ctx.line_bounds(m.start())
        line = text[ls : max(le, min(m.end(), len(text)))]
        return not any(a.applies(secret, match, line) for a in checks)


_PATTERN_SLOT = Rule.__dict__["pattern"]  # the slots LazyRule fills on first use
_MIN_LEN_SLOT = Rule.__dict__["min_len"]
_ALLOWS_SLOT = Rule.__dict__["allows"]


class LazyRule(Rule):
    """A rule whose pattern (``regex``, compiled with ``flags``), width and allowlists are
    built the first time they are read: a process compiles only the rules whose keywords
    some text it cleans holds (most of gitleaks' rules never trigger in a review), and the
    same rule set is built as with :class:`Rule` (every attribute reads the same)."""

    __slots__ = ("regex", "flags", "allow_builder")

    def __init__(
        self,
        regex: str,
        flags: int,
        allow_builder: Callable[[], tuple[Allow, ...]],
        **fields: object,
    ) -> None:
        self.regex = regex
        self.flags = flags
        self.allow_builder: Callable[[], tuple[Allow, ...]] | None = allow_builder
        Rule.__init__(self, **fields)  # type: ignore[arg-type]

    def __post_init__(self) -> None:  # the width is measured on first use
        return None

    @property  # type: ignore[override]
    def pattern(self) -> re.Pattern[str]:
        rx = _PATTERN_SLOT.__get__(self)
        if rx is None:
            rx = re.compile(self.regex, self.flags)
            _PATTERN_SLOT.__set__(self, rx)
        return rx

    @pattern.setter
    def pattern(self, value: re.Pattern[str] | None) -> None:
        _PATTERN_SLOT.__set__(self, value)

    @property  # type: ignore[override]
    def min_len(self) -> int:
        n = _MIN_LEN_SLOT.__get__(self)
        if n < 0:
            n = min_width(self.pattern)
            _MIN_LEN_SLOT.__set__(self, n)
        return n

    @min_len.setter
    def min_len(self, value: int) -> None:
        _MIN_LEN_SLOT.__set__(self, value)

    @property  # type: ignore[override]
    def allows(self) -> tuple[Allow, ...]:
        build = self.allow_builder
        if build is not None:
            _ALLOWS_SLOT.__set__(self, build())
            self.allow_builder = None
        return _ALLOWS_SLOT.__get__(self)

    @allows.setter
    def allows(self, value: tuple[Allow, ...]) -> None:
        _ALLOWS_SLOT.__set__(self, value)


def uses_positions(rule: Rule) -> bool:
    """Whether a rule looks at its keywords' positions (else a keyword only gates it): a
    rule with anchors looks at the anchors', an anchored rule without anchors matches at
    the keywords, a pattern searched over the whole text looks at none; a custom finder is
    always given them."""
    if rule.finder is not None:
        return True
    if rule.anchors:
        return False  # its positions are the anchors'
    return rule.anchored or not rule.whole_text


class RuleSet:
    """Rules in priority order (earlier rules name a merged span) behind one automaton."""

    def __init__(self, rules: Sequence[Rule], global_allow: Allow | None = None) -> None:
        self.rules = list(rules)
        self.global_allow = global_allow
        self.always = [i for i, r in enumerate(self.rules) if not r.keywords]
        # word → (rules it gates at its positions, rules it only gates, rules it anchors).
        # A rule that looks at no keyword position (a pattern searched over the whole text,
        # a rule with anchors) is only gated: its keywords' positions are not collected.
        words: dict[str, tuple[list[int], list[int], list[int]]] = {}
        for i, r in enumerate(self.rules):
            gated = uses_positions(r)
            for k in r.keywords:
                words.setdefault(k, ([], [], []))[0 if gated else 1].append(i)
            for a in r.anchors:
                words.setdefault(a, ([], [], []))[2].append(i)
        # one-character words that only gate (``:``, ``.``): a substring test, not one
        # automaton hit per character of the text
        self._char_words = [
            (k, tuple(only))
            for k, (gates, only, anchors) in words.items()
            if len(k) == 1 and not gates and not anchors
        ]
        self._automaton = ahocorasick.Automaton()
        n_words = 0
        for k, (gates, only, anchors) in words.items():
            if len(k) == 1 and not gates and not anchors:
                continue
            self._automaton.add_word(k, (len(k), tuple(gates), tuple(only), tuple(anchors)))
            n_words += 1
        self._has_keywords = n_words > 0
        if self._has_keywords:
            self._automaton.make_automaton()
        self._anchored = frozenset(i for i, r in enumerate(self.rules) if r.anchors)

    def __len__(self) -> int:
        return len(self.rules)

    def triggered(self, text: str) -> dict[int, list[int]]:
        """Rule index → positions to look at, for every rule one of whose keywords occurs in
        ``text``: its anchors' start positions for an anchored rule with anchors, the
        keywords' start positions for a rule that uses them, else none."""
        hits: dict[int, list[int]] = {i: [] for i in self.always}
        anchor_hits: dict[int, list[int]] = {}
        low = lower_same_length(text)
        if self._has_keywords:
            for end, (n, gates, only, anchors) in self._automaton.iter(low):
                start = end - n + 1
                for i in gates:
                    got = hits.get(i)
                    if got is None:
                        hits[i] = [start]
                    else:
                        got.append(start)
                for i in only:
                    if i not in hits:
                        hits[i] = []
                for i in anchors:
                    got = anchor_hits.get(i)
                    if got is None:
                        anchor_hits[i] = [start]
                    else:
                        got.append(start)
        for k, only in self._char_words:
            if k in low:
                for i in only:
                    if i not in hits:
                        hits[i] = []
        for i in self._anchored.intersection(hits):
            hits[i] = anchor_hits.get(i, [])
        return hits

    def spans(self, text: str) -> list[Span]:
        """Merged secret spans of ``text``, sorted by position."""
        if not text:
            return []
        hits = self.triggered(text)
        ctx = Context(text)
        n = len(text)
        rules = self.rules
        found: list[Span] = []
        for i in sorted(hits):
            rule = rules[i]
            if n < rule.min_len:
                continue  # too short for any match of the rule's pattern
            allow = self.global_allow if rule.source == "gitleaks" else None
            got = rule.find(ctx, hits[i], allow)
            if got:
                kind = rule.kind
                found.extend([(s, e, i, kind) for s, e in got])
        return merge_spans(found) if found else found

    def redact(
        self, text: str, counts: Counter[str] | None = None, spans: list[Span] | None = None
    ) -> str:
        """``text`` with every span (by default this rule set's spans of it) replaced by
        ``[REDACTED:<kind>]``; replacements counted per kind."""
        if spans is None:
            spans = self.spans(text)
        if not spans:
            return text
        parts, last = [], 0
        for s, e, _, kind in spans:
            parts.append(text[last:s])
            parts.append(PLACEHOLDER.format(kind=kind))
            last = e
            if counts is not None:
                counts[kind] += 1
        parts.append(text[last:])
        return "".join(parts)


def merge_spans(spans: list[Span]) -> list[Span]:
    spans.sort(key=lambda x: (x[0], -x[1]))
    out: list[Span] = []
    for s, e, prio, kind in spans:
        if out and s < out[-1][1]:
            ps, pe, pprio, pkind = out[-1]
            if prio < pprio:
                pprio, pkind = prio, kind
            out[-1] = (ps, max(pe, e), pprio, pkind)
        else:
            out.append((s, e, prio, kind))
    return out
