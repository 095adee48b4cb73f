"""Private reasoning written inline in text: the tags and channels of every common model family.

Reasoning models that are served raw (no reasoning parser in front of them) write their
chain of thought into the message text itself.  Each family marks it its own way
(:data:`FAMILIES`):

* ``<think>…</think>``: DeepSeek-R1, Qwen3/QwQ, GLM, MiniMax, Kimi K2, Phi-4, Nemotron…
  (their templates often open the tag themselves, so the output starts mid-reasoning and
  holds only the closing ``</think>``);
* ``<thinking>``, ``<reasoning>``, ``<reflection>``, ``<thought>`` (prompted reasoning, the
  Reflection format);
* Kimi ``◁think▷…◁/think▷``; Mistral/Magistral ``[THINK]…[/THINK]``; OpenThoughts and
  Bespoke-Stratos ``<|begin_of_thought|>…<|end_of_thought|>``; ByteDance Seed
  ``<seed:think>…</seed:think>``; Cohere ``<|START_THINKING|>…<|END_THINKING|>``;
* gpt-oss (harmony): a message on the ``analysis`` channel,
  ``<|start|>assistant<|channel|>analysis<|message|>…<|end|>`` (only ``analysis`` is the
  private chain of thought; ``commentary`` and ``final`` are shown), and its form decoded
  without special tokens, ``analysis…assistantfinal``.

Tags are recognised plain and in the spellings an encoder gives them: JSON-escaped
(``<\\/think>``, ``\\u003cthink\\u003e``) and HTML-escaped (``&lt;think&gt;``).

A span is removed (tags and content), every other byte stays.  Text that only *mentions* a
tag stays: a span is reasoning when

* a pair: an opening tag that starts a segment (the text's start, a line's start, after a
  chat template's special token, or the first thing in a JSON string value ``"key": "``)
  and the first closing tag of its family after it; a JSON string value's span must not
  run past that string's closing quote;
* the closing tag alone, as the first tag of the text and at the end of a line, not quoted
  (the template opened the tag): from the text's start (or the start of the JSON string
  value it is in) through it;
* an opening tag never closed where it is (the output was cut off): one that starts a JSON
  string value, to that string's end; one that starts the text, to the text's end (for
  harmony, to the next message);

and its content holds words (two letters in a row): ``<think>(.*?)</think>`` in code, an
empty ``<think>\\n\\n</think>`` block and a tag quoted inside code (``split("</think>")``)
are not reasoning.  A text is cleaned until no span is left, and the publish gate looks for
spans with the same function (:func:`reasoning_spans`).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple

import ahocorasick

# (kind, opening tag regex, closing tag regex); ``<``, ``>`` and ``/`` in any encoding
_LT = r"(?:<|\\u003[cC]|&lt;)"
_GT = r"(?:>|\\u003[eE]|&gt;)"
_SL = r"(?:/|\\/)"


def _tag(name: str) -> tuple[str, str]:
    return _LT + name + _GT, _LT + _SL + name + _GT


def _special(name: str) -> str:
    return _LT + r"\|" + name + r"\|" + _GT


THINK = "inline think tags"
THINKING = "inline thinking tags"
REASONING = "inline reasoning tags"
REFLECTION = "inline reflection tags"
THOUGHT = "inline thought tags"
KIMI = "kimi think markers"
MISTRAL = "mistral THINK markers"
OPEN_THOUGHTS = "begin_of_thought markers"
SEED = "seed think tags"
COHERE = "cohere thinking markers"
HARMONY = "gpt-oss analysis channel"

_HARMONY_OPEN = (
    r"(?:" + _special("start") + r"assistant)?" + _special("channel") + r"analysis"
    r"(?:[ \t][^<>|\n]{0,200})?" + _special("message")
)
_HARMONY_CLOSE = r"(?:" + "|".join(_special(t) for t in ("end", "call", "return")) + r")"
# the harmony message that follows an unclosed analysis message
_HARMONY_NEXT = re.compile(_special("start"))

FAMILIES: tuple[tuple[str, str, str], ...] = (
    (THINK, *_tag("(?i:think)")),
    (THINKING, *_tag("(?i:thinking)")),
    (REASONING, *_tag("(?i:reasoning)")),
    (REFLECTION, *_tag("(?i:reflection)")),
    (THOUGHT, *_tag("(?i:thought)")),
    (KIMI, "◁think▷", "◁/think▷"),
    (MISTRAL, r"\[THINK\]", r"\[" + _SL + r"THINK\]"),
    (OPEN_THOUGHTS, _special("begin_of_thought"), _special("end_of_thought")),
    (SEED, *_tag("seed:think")),
    (COHERE, _special("START_THINKING"), _special("END_THINKING")),
    (HARMONY, _HARMONY_OPEN, _HARMONY_CLOSE),
)

# one alternation over every tag: group ``o<i>`` an opening tag, ``c<i>`` a closing one
_TOKEN = re.compile(
    "|".join(f"(?P<o{i}>{o})|(?P<c{i}>{c})" for i, (_, o, c) in enumerate(FAMILIES))
)
# gpt-oss decoded without its special tokens: ``analysis<text>assistantfinal<answer>``
_PLAIN_HARMONY = re.compile(r"\A(\s*)analysis(?=\S)(.*?)assistantfinal", re.S)

# what a text must hold for any span to be in it: a tag's closing bracket in one of its
# spellings, then (in the lower-cased text) the core of a tag, its name and closing bracket,
# or of a harmony header
_MARKS = (">", "]", "◁", "u003", "&gt;", "assistantfinal")


def _core_automaton() -> ahocorasick.Automaton:
    automaton = ahocorasick.Automaton()
    for gt in (">", "\\u003e", "&gt;"):
        for name in ("think", "thinking", "reasoning", "reflection", "thought"):
            automaton.add_word(name + gt, True)
        automaton.add_word(gt + "analysis", True)
    for core in ("think]", "◁", "_thought|", "_thinking|", "assistantfinal"):
        automaton.add_word(core, True)
    automaton.make_automaton()
    return automaton


_CORE = _core_automaton()
_WORDS = re.compile(r"[^\W\d_]{2}")
# a segment start before an opening tag: horizontal space back to a line break (real or
# escaped), the text's start, or a chat template's special token
_LINE_START = re.compile(r"(?:\A|[\r\n]|\\[nr]|\|>|｜>|\])[ \t]*\Z")
# the first thing in a JSON (or Python) string value: ``"key": "`` (escaped quotes too)
_VALUE_START = re.compile(r"\\*([\"'])\s*:\s*(\\*)\1\Z")
_VALUE_STARTS = re.compile(r"\\*([\"'])\s*:\s*(\\*)\1")
# the end of a line after a closing tag (the closing-only form)
_LINE_END = re.compile(r"[ \t]*(?:\Z|[\r\n]|\\[nr]|\\*\"|<|\\u003[cC])")
_QUOTES = "\"'`("
_LOOKBEHIND = 240  # how far back a segment start is looked for


class Span(NamedTuple):
    start: int
    end: int
    kind: str


def _may_hold(text: str) -> bool:
    if not any(m in text for m in _MARKS):
        return False
    return next(_CORE.iter(text.lower()), None) is not None


def _family(m: re.Match[str]) -> tuple[int, bool]:
    """The family index of a tag match and whether it is an opening tag."""
    name = m.lastgroup
    assert name is not None
    return int(name[1:]), name[0] == "o"


def _segment_start(text: str, i: int) -> tuple[bool, str | None]:
    """Whether an opening tag at ``i`` starts a segment, and the quote that closes the JSON
    string value it starts (None: not in a JSON string value)."""
    before = text[max(0, i - _LOOKBEHIND) : i]
    if i <= _LOOKBEHIND and not before.strip(" \t"):
        return True, None
    if _LINE_START.search(before):
        return True, None
    m = _VALUE_START.search(before)
    if m is not None:
        return True, m.group(2) + m.group(1)
    return False, None


def _closes_string(content: str, quote: str | None) -> bool:
    """True when ``content`` runs past the end of the string value it started in, whose
    closing quote is ``quote`` (a quote after its escaping backslashes)."""
    return quote is not None and _string_end(content, 0, quote) is not None


def _string_end(text: str, start: int, quote: str) -> int | None:
    """Where the string value whose closing quote is ``quote`` (a quote after its escaping
    backslashes) ends in ``text`` from ``start``: the position of that closing quote."""
    k, q = len(quote) - 1, quote[-1]
    for m in re.finditer(r"(\\*)" + q, text[start:]):
        b = len(m.group(1))
        if b == k or (k == 0 and b % 2 == 0):
            return start + m.end() - 1 - k
    return None


def reasoning_spans(text: str) -> list[Span]:
    """The inline reasoning spans of ``text``, in order, not overlapping (see the module's
    rules)."""
    return _scan(text)[0]


class OpenSpan(NamedTuple):
    """How a text ends inside an unclosed reasoning span: its family, and the quote that
    ends the string value it is in (None: not in one)."""

    family: int
    quote: str | None


def open_span_at_end(text: str) -> OpenSpan | None:
    """Whether ``text`` (what comes before a window into a long line) ends inside a
    reasoning span that is not closed in it (:func:`after_open_span` removes the span's
    rest from the window)."""
    return _scan(text)[1]


def after_open_span(text: str, span: OpenSpan) -> str:
    """``text`` (a window that starts inside the reasoning span ``span`` describes) from
    where the span ends: after its closing tag, or at the end of the string value it is in;
    nothing when it ends in neither."""
    end = _close_of(text, 0, span.family)
    stop = end[1] if end is not None else len(text)
    if span.quote is not None:
        q = _string_end(text, 0, span.quote)
        if q is not None and q < stop:
            return text[q:]
    return text[stop:]


def _scan(text: str) -> tuple[list[Span], OpenSpan | None]:
    if not _may_hold(text):
        return [], None
    spans: list[Span] = []
    plain = _PLAIN_HARMONY.match(text)
    pos = 0
    if plain is not None and _WORDS.search(plain.group(2)):
        spans.append(Span(len(plain.group(1)), plain.end(), HARMONY))
        pos = plain.end()
    first = True  # no tag seen yet (the closing-only form)
    trailing: OpenSpan | None = None
    while True:
        m = _TOKEN.search(text, pos)
        if m is None:
            break
        fam, opening = _family(m)
        kind, _, _ = FAMILIES[fam]
        if not opening:
            span = _closing_only(text, m, kind) if first and not spans else None
            first = False
            if span is not None:
                spans.append(span)
            pos = m.end()
            continue
        first = False
        starts, quote = _segment_start(text, m.start())
        if not starts:
            pos = m.end()
            continue
        end = _close_of(text, m.end(), fam)
        if end is not None:
            content = text[m.end() : end[0]]
            if _WORDS.search(content) and not _closes_string(content, quote):
                spans.append(Span(m.start(), end[1], kind))
                pos = end[1]
                continue
        span = _unclosed(text, m, kind, quote, None if end is None else end[0])
        if span is not None:
            spans.append(span)
            if span.end == len(text):
                trailing = OpenSpan(fam, quote)
            pos = span.end
            continue
        pos = m.end()
    return spans, trailing


def _close_of(text: str, start: int, fam: int) -> tuple[int, int] | None:
    """The first closing tag of family ``fam`` from ``start``: (its start, its end)."""
    for m in _TOKEN.finditer(text, start):
        f, opening = _family(m)
        if f == fam and not opening:
            return m.start(), m.end()
    return None


def _closing_only(text: str, m: re.Match[str], kind: str) -> Span | None:
    """The text's start through its first tag, a closing one at a line's end, when the text
    before it holds words and the tag is not quoted (code that mentions it)."""
    if kind == HARMONY:  # ``<|end|>`` closes every harmony message, not only analysis
        return None
    i = m.start()
    if i == 0 or text[i - 1] in _QUOTES or not _LINE_END.match(text, m.end()):
        return None
    start, quote = 0, None
    for v in _VALUE_STARTS.finditer(text, 0, i):  # inside a string value: from its start
        start, quote = v.end(), v.group(2) + v.group(1)
    content = text[start:i]
    if not _WORDS.search(content) or _closes_string(content, quote):
        return None
    return Span(start, m.end(), kind)


def _unclosed(
    text: str, m: re.Match[str], kind: str, quote: str | None, close: int | None
) -> Span | None:
    """An opening tag never closed where it is (``close``: where the first closing tag of
    its family after it starts, if any): in a string value, to that string's end; at the
    text's start and closed nowhere, to the text's end (harmony: to the next message)."""
    if quote is not None:
        end = _string_end(text, m.end(), quote)
        stop = len(text) if end is None else end
        if close is not None and close < stop:  # closed in its string: a pair, not words
            return None
    elif close is None and not text[: m.start()].strip():
        stop = len(text)
        if kind == HARMONY:
            nxt = _HARMONY_NEXT.search(text, m.end())
            if nxt is not None:
                stop = nxt.start()
    else:
        return None
    if not _WORDS.search(text, m.end(), stop):
        return None
    return Span(m.start(), stop, kind)


MAX_PASSES = 8


def strip_inline_reasoning(text: str, counts: Counter[str] | None = None) -> str:
    """``text`` without its inline reasoning spans, counted per kind into ``counts``; again
    until none is left (removing one can make the text's start a segment start)."""
    out = text
    for _ in range(MAX_PASSES):
        spans = reasoning_spans(out)
        if not spans:
            return out
        parts: list[str] = []
        last = 0
        for s in spans:
            parts.append(out[last : s.start])
            last = s.end
            if counts is not None:
                counts[s.kind] += 1
        parts.append(out[last:])
        out = "".join(parts)
    return out


def reasoning_kinds_in(text: str) -> list[str]:
    """The kinds of the inline reasoning spans in ``text`` (what the publish gate reports)."""
    return sorted({s.kind for s in reasoning_spans(text)})
