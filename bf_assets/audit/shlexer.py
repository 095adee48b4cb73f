"""Tokenising shell commands for :mod:`.shell`: here-docs set aside, comments dropped,
``shlex`` tokens grouped into simple commands with their redirections."""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field

REDIRECT_OUT = frozenset({">", ">>", ">|", "&>", "&>>"})
REDIRECT_IN = frozenset({"<", "<>"})
REDIRECT_DUP = frozenset({">&", "<&"})
HEREDOC = frozenset({"<<", "<<-"})
PUNCT = set("();<>|&\n")
NULL_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


@dataclass(frozen=True, slots=True)
class Op:
    """One effect of an agent action on a path (or a URL / git command)."""

    kind: str  # read | list | write | delete | move | chmod | link | exec | git | net
    path: str
    via: str  # the command or tool that does it
    evidence: str  # the exact command (or tool call) text
    content: str = ""  # what is written, when known (echo/printf text, here-doc, sed script)
    old: str = ""  # what an edit replaces, when known


@dataclass(slots=True)
class Simple:
    argv: list[str] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)
    heredoc: str | None = None
    # the command whose output this one reads through a pipe (``find … | xargs cat``)
    upstream: Simple | None = None


def norm_path(p: str, cwd: str | None = None) -> str:
    """Normalise a path as written: quotes, ``$HOME``/``~``, ``.``/``..``; relative stays relative."""
    s = p.strip().strip("'\"`")
    if not s:
        return ""
    for home in ("${HOME}", "$HOME"):
        if s.startswith(home):
            s = "~" + s[len(home) :]
    if cwd and not s.startswith(("/", "~", "$")):
        s = posixpath.join(cwd, s)
    out = posixpath.normpath(s)
    return "" if out == "." else out


def _strip_comment(line: str) -> str:
    quote: str | None = None
    prev = " "
    for i, ch in enumerate(line):
        if quote:
            if ch == quote and (quote == "'" or prev != "\\"):
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and prev in " \t;&|(":
            return line[:i]
        prev = ch
    return line


_HEREDOC_RE = re.compile(r"(?<!<)<<(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")


def split_heredocs(cmd: str) -> tuple[str, list[str]]:
    lines = cmd.replace("\\\n", " ").split("\n")
    out: list[str] = []
    bodies: list[str] = []
    i = 0
    while i < len(lines):
        line = _strip_comment(lines[i])
        out.append(line)
        i += 1
        for m in _HEREDOC_RE.finditer(line):
            tabs, delim = m.group(1) == "-", m.group(3)
            body: list[str] = []
            while i < len(lines):
                cur = lines[i]
                i += 1
                if (cur.lstrip("\t") if tabs else cur).strip() == delim:
                    break
                body.append(cur)
            bodies.append("\n".join(body))
    return "\n".join(out), bodies


SHLEX_MAX = 100_000  # shlex grows each token char by char (quadratic): longer text is split


def _tokens(text: str) -> list[str]:
    if len(text) > SHLEX_MAX:
        return _plain_tokens(text)
    lex = shlex.shlex(text, posix=True, punctuation_chars="();<>|&\n")
    lex.whitespace_split = True
    lex.whitespace = " \t\r"
    lex.commenters = ""
    try:
        return list(lex)
    except ValueError:  # unbalanced quotes: fall back to a plain split
        return _plain_tokens(text)


def _plain_tokens(text: str) -> list[str]:
    return re.findall(r"&>>|&>|>>|>&|<<-?|[;&|()<>\n]+|[^\s;&|()<>]+", text)


def simples(text: str, bodies: list[str]) -> list[Simple]:
    out: list[Simple] = []
    cur = Simple()
    toks = _tokens(text)
    body_iter = iter(bodies)
    i = 0
    while i < len(toks):
        tok = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if tok in HEREDOC:
            cur.heredoc = next(body_iter, "")
            i += 2
            continue
        if tok == "<<<":
            cur.heredoc = nxt
            i += 2
            continue
        if tok in REDIRECT_OUT or tok in REDIRECT_IN:
            if cur.argv and cur.argv[-1].isdigit() and tok in (">", ">>"):
                cur.argv.pop()  # an fd number: 2> file
            cur.redirects.append((tok, nxt))
            i += 2
            continue
        if tok in REDIRECT_DUP:
            if cur.argv and cur.argv[-1].isdigit():
                cur.argv.pop()
            i += 2
            continue
        if tok and set(tok) <= PUNCT:
            if cur.argv or cur.redirects:
                out.append(cur)
            cur = Simple(upstream=out[-1] if tok == "|" and out else None)
            i += 1
            continue
        cur.argv.append(tok)
        i += 1
    if cur.argv or cur.redirects:
        out.append(cur)
    return out
