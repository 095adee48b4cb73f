"""Values written into Markdown that is rendered as HTML: the review report and the dataset
card.

Every value that comes from trial data or user input (task ids, rollout and job names, model
and harness names, plan names, quarantine reasons and names, finding messages, file names)
goes through one of these before it is interpolated:

* :func:`md_text` for running text: each character that can start Markdown or HTML markup
  is backslash-escaped, and a line break becomes a space, so the value renders as its own
  text and never as a tag, an attribute, a link, an entity, emphasis or a block;
* :func:`md_cell` for a table cell: the same, and an empty value shows a dash;
* :func:`md_code` for a code span, and :func:`md_fence` for a code block: the fence is longer
  than any run of backticks the value holds, so the value can never close it.

Escaping is the last step: a value is cleaned first (:class:`MarkdownValues` with a cleaning
function), so a secret is found in the value as written, never split by a backslash.
Markdown this package writes itself is a :class:`Markdown` and is taken as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

LINE_BREAK = re.compile(r"\r\n?|\n")
# Characters that can open markup anywhere in a line: escapes, code spans, emphasis,
# strikethrough, links and images, raw HTML and autolinks, entities, table cells; and runs
# of ``_``, which open emphasis only next to a character that is not a letter or digit:
# inside a word (``sk_live_x``, ``task__aaaa1111``) they are left as they are, so
# identifiers and tokens read, and are scanned, unchanged.
SPECIAL = re.compile(r"[\\`*~\[\]<>&|]|_+")
# A value starting a line (a list item's text) could start a block: a heading, a list, a
# thematic break or a setext underline (``>`` is escaped everywhere).
LINE_START = re.compile(r"[#=+-]|\d{1,9}[.)](?=[ \t]|$)")
BACKTICKS = re.compile(r"`+")
MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


class Markdown(str):
    """Markdown this package wrote, its values already escaped: interpolated as it is."""

    __slots__ = ()


def one_line(text: str) -> str:
    """``text`` with every line break a space (a value never starts a block)."""
    return LINE_BREAK.sub(" ", text) if "\n" in text or "\r" in text else text


def md_text(value: Any) -> str:
    """``value`` as Markdown text that renders as ``value`` itself (a :class:`Markdown` is
    returned as it is)."""
    if isinstance(value, Markdown):
        return value
    text = one_line(str(value))

    def escaped(m: re.Match[str]) -> str:
        run = m.group()
        if run[0] != "_":
            return "\\" + run
        i, j = m.start(), m.end()
        if i > 0 and j < len(text) and text[i - 1].isalnum() and text[j].isalnum():
            return run  # inside a word: never emphasis
        return "\\_" * len(run)

    out = SPECIAL.sub(escaped, text)
    m = LINE_START.match(out)
    if m is not None:  # the character that would start a block: ``#``, ``-``, ``1.`` ...
        end = m.end() - 1
        out = out[:end] + "\\" + out[end:]
    return out


def md_cell(value: Any, empty: str = "–") -> str:
    """``value`` as the text of a table cell (``|`` escaped, one line); ``empty`` for
    ``None`` or ``""``."""
    if value is None or value == "":
        return empty
    if isinstance(value, Markdown):
        return one_line(value)
    return md_text(value)


def md_code(value: Any, *, in_table: bool = False) -> Markdown:
    """``value`` as a code span: its fence is one backtick longer than its longest run of
    backticks; ``in_table`` escapes ``|`` (a table splits cells before code spans)."""
    text = one_line(str(value))
    if not text:
        return Markdown("")
    fence = "`" * (max((len(r) for r in BACKTICKS.findall(text)), default=0) + 1)
    edge = text[0] == "`" or text[-1] == "`" or (text[0] == " " and text[-1] == " ")
    pad = " " if edge and text.strip(" ") else ""
    if in_table:
        text = text.replace("|", "\\|")
    return Markdown(f"{fence}{pad}{text}{pad}{fence}")


def md_fence(text: str, info: str = "") -> Markdown:
    """``text`` as a fenced code block (ending in a line break): the fence is longer than
    any run of backticks in ``text``, so no line of it closes the block."""
    fence = "`" * max(3, max((len(r) for r in BACKTICKS.findall(text)), default=0) + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return Markdown(f"{fence}{info}\n{body}{fence}\n")


def md_link(target: str) -> str:
    """A relative link target: percent-encoded but for ``/ . _ - ~ #``, so it can hold no
    scheme (``javascript:``), no space and nothing that ends the link."""
    return quote(target, safe="/._-~#")


def markdown_unescaped(text: str) -> str:
    """``text`` without its backslash escapes: what a reader of the rendered Markdown sees
    of an escaped value (the publish scan reads this too)."""
    return MARKDOWN_ESCAPE.sub(r"\1", text)


def _same(text: str) -> str:
    return text


@dataclass(frozen=True, slots=True)
class MarkdownValues:
    """Values from trial data or user input, cleaned by ``clean`` (the published report:
    secrets, host paths) and then escaped for where they are written."""

    clean: Callable[[str], str] | None = None

    @property
    def plain(self) -> Callable[[str], str]:
        """The cleaning alone (for a picture's labels or a code block), or no change."""
        return self.clean or _same

    def raw(self, value: Any) -> str:
        """``value`` cleaned, not escaped."""
        text = str(value)
        return self.clean(text) if self.clean is not None else text

    def text(self, value: Any) -> str:
        return value if isinstance(value, Markdown) else md_text(self.raw(value))

    def cell(self, value: Any, empty: str = "?") -> str:
        if value is None or value == "" or isinstance(value, Markdown):
            return md_cell(value, empty)
        return md_cell(self.raw(value), empty)

    def code(self, value: Any) -> Markdown:
        return md_code(self.raw(value))

    def fence(self, value: Any, info: str = "") -> Markdown:
        return md_fence(self.raw(value), info)
