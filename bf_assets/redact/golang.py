"""Translating Go RE2 regular expressions (gitleaks' dialect) into Python ``re`` patterns.

RE2 and Python's ``re`` agree on most syntax; the differences that occur in gitleaks' rules
are handled here and every translated pattern is compiled with ``re.ASCII`` so that ``\\w``,
``\\d``, ``\\s`` and ``\\b`` keep RE2's ASCII meaning:

* inline flags in the middle of a pattern (``p8e-(?i)[a-z0-9]{32}``) apply up to the end of
  the enclosing group in RE2; Python only accepts global flags at the very start, so they
  become scoped groups ``(?i:...)``, closed before every ``|`` of that group and reopened
  after it (the alternation keeps its structure);
* ``\\z`` (end of text) is Python's ``\\Z``;
* POSIX classes inside a set (``[[:alnum:]]``) are spelled out;
* a literal ``[`` inside a set is escaped (Python reserves nested sets);
* ``(?<name>`` is Python's ``(?P<name>``.

Anything else RE2 has and Python lacks (``\\p{..}``, ``\\Q..\\E``, the ``U`` flag) raises
:class:`TranslationError`, so a new gitleaks construct fails the converter instead of
silently changing meaning.
"""

from __future__ import annotations

import re

__all__ = ["TranslationError", "compile_go", "go_to_python"]

_POSIX = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "ascii": "\\x00-\\x7f",
    "blank": " \\t",
    "digit": "0-9",
    "lower": "a-z",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "word": "a-zA-Z0-9_",
    "xdigit": "0-9A-Fa-f",
}
_FLAG_GROUP = re.compile(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?\)")
_UNSUPPORTED_ESCAPES = frozenset("pPQEC")


class TranslationError(ValueError):
    """A Go pattern uses a construct this translator does not handle."""


def _flags(on: str, off: str, src: str) -> str:
    for f in on + off:
        if f not in "ims":
            raise TranslationError(f"flag {f!r} has no Python equivalent in {src!r}")
    return on + (f"-{off}" if off else "")


def go_to_python(src: str) -> str:
    """The Python spelling of the RE2 pattern ``src`` (compile it with ``re.ASCII``)."""
    out: list[str] = []
    # For every open group (the outermost is the pattern itself): the scoped flag groups
    # opened inside it by a mid-pattern ``(?flags)``, to close at ``|`` and at its end.
    stack: list[list[str]] = [[]]
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            if i + 1 >= n:
                raise TranslationError(f"trailing backslash in {src!r}")
            nxt = src[i + 1]
            if nxt in _UNSUPPORTED_ESCAPES:
                raise TranslationError(f"escape \\{nxt} is not supported: {src!r}")
            if nxt == "x" and src.startswith("{", i + 2):
                raise TranslationError(f"\\x{{...}} is not supported: {src!r}")
            out.append("\\Z" if nxt == "z" else src[i : i + 2])
            i += 2
            continue
        if c == "[":
            i = _copy_class(src, i, out)
            continue
        if c == "(":
            m = _FLAG_GROUP.match(src, i)
            if m:
                flags = _flags(m.group(1), m.group(2) or "", src)
                if not out and len(stack) == 1:
                    if m.group(1):
                        out.append(f"(?{m.group(1)})")  # global flags at the very start
                else:
                    out.append(f"(?{flags}:")
                    stack[-1].append(flags)
                i = m.end()
                continue
            if src.startswith("(?<", i) and not src.startswith(("(?<=", "(?<!"), i):
                out.append("(?P<")
                i += 3
            else:
                out.append("(")
                i += 1
            stack.append([])
            continue
        if c == ")":
            if len(stack) == 1:
                raise TranslationError(f"unbalanced ')' in {src!r}")
            out.append(")" * len(stack.pop()))
            out.append(")")
            i += 1
            continue
        if c == "|":
            scoped = stack[-1]
            out.append(")" * len(scoped) + "|" + "".join(f"(?{f}:" for f in scoped))
            i += 1
            continue
        out.append(c)
        i += 1
    if len(stack) != 1:
        raise TranslationError(f"unbalanced '(' in {src!r}")
    out.append(")" * len(stack[0]))
    return "".join(out)


def _copy_class(src: str, i: int, out: list[str]) -> int:
    """Copy the set starting at ``src[i] == '['``; return the index after its ``]``."""
    n = len(src)
    out.append("[")
    i += 1
    if i < n and src[i] == "^":
        out.append("^")
        i += 1
    first = True
    while i < n:
        c = src[i]
        if c == "]" and not first:
            out.append("]")
            return i + 1
        first = False
        if c == "\\":
            if i + 1 < n and src[i + 1] in _UNSUPPORTED_ESCAPES:
                raise TranslationError(f"escape \\{src[i + 1]} is not supported: {src!r}")
            out.append("\\Z" if src[i + 1 : i + 2] == "z" else src[i : i + 2])
            i += 2
            continue
        if src.startswith("[:", i):
            end = src.find(":]", i + 2)
            name = src[i + 2 : end] if end > 0 else ""
            if name not in _POSIX:
                raise TranslationError(f"POSIX class {name!r} is not supported: {src!r}")
            out.append(_POSIX[name])
            i = end + 2
            continue
        if c == "]" or c == "[":
            out.append("\\" + c)
        elif c in "&~|-" and src[i + 1 : i + 2] == c:
            out.append("\\" + c)  # Python warns on doubled set operators
        else:
            out.append(c)
        i += 1
    raise TranslationError(f"unterminated set in {src!r}")


def compile_go(src: str, extra_flags: int = 0) -> re.Pattern[str]:
    """Translate and compile an RE2 pattern with RE2's ASCII classes."""
    return re.compile(go_to_python(src), re.ASCII | extra_flags)
