"""Simple commands of a shell string read with a real bash grammar (tree-sitter-bash).

:func:`parse_simples` returns the same :class:`~bf_assets.audit.shlexer.Simple` records as
the ``shlex`` reader, but finds every simple command wherever bash would run it: inside
``$(…)`` and backticks, ``{ …; }`` groups, ``( … )`` subshells, ``if``/``elif``/``else``,
``for``/``while``/``until`` bodies, ``case`` arms, function bodies, ``!`` negations,
process substitutions ``<(…)``/``>(…)``, here-strings, assignments and ``export`` values,
and ``$(…)`` inside unquoted here-doc bodies.  Here-doc bodies stay content, comments and
quoted text stay text.

It never raises.  It returns ``None`` - and the caller falls back to the ``shlex`` reader -
when tree-sitter is not installed, the string is too long, parsing exceeds its time budget,
or bash's grammar does not accept the string (an unterminated quote, a stray ``fi``, junk),
and always with ``BF_ASSETS_SHELL_PARSER=shlex`` in the environment.
The walk is iterative, with caps on nesting depth and on the number of nodes visited.
"""

from __future__ import annotations

import os
import re
import time
from typing import TYPE_CHECKING, Any

from bf_assets.audit.shlexer import Simple

if TYPE_CHECKING:
    from tree_sitter import Node

MAX_BYTES = 1 << 19  # longer strings go to the shlex reader
MAX_NODES = 200_000  # nodes visited per string
MAX_DEPTH = 200  # nesting of visited nodes
PARSE_SECONDS = 0.5  # tree-sitter's budget per string

_parser: Any = None
_unavailable = False


def _get_parser() -> Any:
    global _parser, _unavailable
    if os.environ.get("BF_ASSETS_SHELL_PARSER") == "shlex":
        return None  # the shlex reader only (comparisons, or a grammar problem in the field)
    if _parser is None and not _unavailable:
        try:
            import tree_sitter
            import tree_sitter_bash

            _parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
        except Exception:  # not installed, or an ABI the bindings do not accept
            _unavailable = True
    return _parser


def available() -> bool:
    """Whether the bash grammar can be used here."""
    return _get_parser() is not None


def _parse(data: bytes) -> Any:
    parser = _get_parser()
    if parser is None:
        return None
    deadline = time.monotonic() + PARSE_SECONDS
    step = 1 << 16

    def read(offset: int, _point: Any) -> bytes:
        return data[offset : offset + step]

    def progress(*_state: Any) -> bool:  # True cancels the parse (ValueError)
        return time.monotonic() > deadline

    try:
        return parser.parse(read, progress_callback=progress)
    except TypeError:  # bindings without progress callbacks (tree-sitter < 0.25)
        return parser.parse(data)
    except ValueError:  # cancelled at the deadline
        return None


_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_SKIP = frozenset({"comment", "heredoc_start", "heredoc_end", "heredoc_content"})
_SUBST = frozenset({"process_substitution"})
_UNESCAPE_WORD = re.compile(r"\\(.)", re.S)
_UNESCAPE_DQ = re.compile(r"\\([$`\"\\\n])")


def _raw(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _word(node: Node) -> str:
    """A word as the shell passes it on: quotes removed, escapes resolved, expansions kept."""
    t = node.type
    if t == "word":
        return _UNESCAPE_WORD.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), _raw(node))
    if t == "raw_string":
        return _raw(node)[1:-1]
    if t == "string":
        return _UNESCAPE_DQ.sub(
            lambda m: "" if m.group(1) == "\n" else m.group(1), _raw(node)[1:-1]
        )
    if t in ("ansi_c_string", "translated_string"):
        return _raw(node)[2:-1]
    if t == "concatenation":
        return "".join(_word(c) for c in node.children)
    return _raw(node)


class _Walk:
    def __init__(self) -> None:
        self.out: list[Simple] = []
        self.budget = MAX_NODES
        self.stack: list[tuple[Node, int]] = []
        # redirects of a compound statement that belong to its last command (by node id)
        self.attach: dict[int, tuple[list[tuple[str, str]], str | None]] = {}
        # `cat <<EOF | sh`: the pipeline after a here-doc reads the command that owns it
        self.pipe_from: dict[int, Simple] = {}

    def push_children(self, node: Node, depth: int) -> None:
        self.stack.extend((c, depth + 1) for c in reversed(node.children))

    def run(self, root: Node) -> bool:
        self.stack.append((root, 0))
        while self.stack:
            node, depth = self.stack.pop()
            self.budget -= 1
            if self.budget < 0:
                return False
            if depth > MAX_DEPTH:
                return False  # deeper than any real command: the shlex reader instead
            t = node.type
            if t in _SKIP:
                continue
            if t == "command":
                self.command(node, [], None, depth)
            elif t == "redirected_statement":
                self.redirected(node, depth)
            elif t == "heredoc_body":
                self.push_children(node, depth)  # $(…) in an unquoted here-doc runs
            elif t == "pipeline":
                self.pipeline(node, depth)
            else:
                self.push_children(node, depth)
        return True

    def redirects(
        self, nodes: list[Node], depth: int
    ) -> tuple[list[tuple[str, str]], str | None, list[Node]]:
        """(operator, target) pairs, the here-doc/here-string text, nodes still to walk."""
        pairs: list[tuple[str, str]] = []
        heredoc: str | None = None
        rest: list[Node] = []
        todo = list(reversed(nodes))
        while todo:
            r = todo.pop()
            if r.type == "file_redirect":
                op = ""
                target: list[str] = []
                for c in r.children:
                    if not c.is_named:
                        op = op or _raw(c)
                    elif c.type in _SUBST:
                        rest.append(c)  # `< <(ls)`: the inner command, not a path
                    elif c.type != "file_descriptor":
                        target.append(_word(c))
                        rest.append(c)
                dest = " ".join(target)
                if op == ">&" and dest and not dest.isdigit() and dest != "-":
                    op = "&>"  # `>& file` sends both streams to the file
                if op and dest and op not in (">&", "<&"):
                    pairs.append((op, dest))
            elif r.type == "heredoc_redirect":
                for c in r.children:
                    if c.type == "heredoc_body":
                        body = _raw(c)
                        heredoc = body[:-1] if body.endswith("\n") else body
                        rest.append(c)
                    elif c.type in _REDIRECTS:
                        todo.append(c)
                    elif c.is_named and c.type not in _SKIP:
                        rest.append(c)  # a pipeline or list continuing after `<<EOF`
            elif r.type == "herestring_redirect":
                words = [c for c in r.children if c.is_named]
                heredoc = " ".join(_word(c) for c in words)
                rest.extend(words)
            else:
                rest.append(r)
        return pairs, heredoc, rest

    def command(
        self,
        node: Node,
        outer: list[tuple[str, str]],
        heredoc: str | None,
        depth: int,
        upstream: Simple | None = None,
    ) -> Simple:
        s = Simple(upstream=upstream)
        if node.id in self.attach:
            more, hd_outer = self.attach.pop(node.id)
            outer = outer + more
            heredoc = heredoc if heredoc is not None else hd_outer
        own: list[Node] = []
        walk: list[Node] = []
        for c in node.children:
            t = c.type
            if t in _REDIRECTS:
                own.append(c)
            elif t == "command_name":
                s.argv.append(_word(c.children[0]) if c.children else _raw(c))
                walk.append(c)
            elif t == "variable_assignment":
                walk.append(c)  # a prefix assignment: its value may run $(…)
            elif t in _SUBST:
                walk.append(c)  # <(…) / >(…): the inner command, not a path
            elif c.is_named and t not in _SKIP:
                s.argv.append(_word(c))
                walk.append(c)
        pairs, hd, rest = self.redirects(own, depth)
        s.redirects = pairs + outer
        s.heredoc = heredoc if heredoc is not None else hd
        if s.argv or s.redirects:
            self.out.append(s)
        self.pipes(rest, s)
        for c in reversed(walk + rest):
            self.stack.append((c, depth + 1))
        return s

    def redirected(self, node: Node, depth: int, upstream: Simple | None = None) -> Simple | None:
        body = node.child_by_field_name("body")
        reds = [c for c in node.children if c.type in _REDIRECTS]
        pairs, heredoc, rest = self.redirects(reds, depth)
        for c in reversed(rest):
            self.stack.append((c, depth + 1))
        target = body
        while target is not None and target.type in ("list", "pipeline") and target.children:
            target = target.children[-1]  # `a && b > f`: the redirect is b's
        if body is not None and target is not None and target.type == "command":
            if target.id == body.id:
                s = self.command(body, pairs, heredoc, depth, upstream)
                self.pipes(rest, s)
                return s
            self.attach[target.id] = (pairs, heredoc)
        elif pairs or heredoc is not None:  # `( … ) > f`, `done < list`: the group's
            self.out.append(Simple(redirects=pairs, heredoc=heredoc))
        if body is not None:
            self.stack.append((body, depth + 1))
        return None

    def pipes(self, nodes: list[Node], s: Simple) -> None:
        for c in nodes:
            if c.type == "pipeline":
                self.pipe_from[c.id] = s

    def pipeline(self, node: Node, depth: int) -> None:
        prev: Simple | None = self.pipe_from.pop(node.id, None)
        parts = [c for c in node.children if c.is_named]
        for c in parts:
            if c.type == "command":
                prev = self.command(c, [], None, depth, prev)
            elif c.type == "redirected_statement":
                prev = self.redirected(c, depth, prev)
            else:
                self.stack.append((c, depth + 1))
                prev = None


def parse_simples(text: str) -> list[Simple] | None:
    """The simple commands of ``text`` in source order, or ``None`` to use the shlex reader."""
    try:
        data = text.encode("utf-8", "surrogatepass")
        if len(data) > MAX_BYTES:
            return None
        tree = _parse(data)
        if tree is None or tree.root_node.has_error:
            return None
        if getattr(tree.root_node, "descendant_count", 0) > MAX_NODES:
            return None  # too big to walk within budget: the shlex reader is linear
        w = _Walk()
        return w.out if w.run(tree.root_node) else None
    except (RecursionError, MemoryError, ValueError, TypeError, UnicodeError):
        return None
