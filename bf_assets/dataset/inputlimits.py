"""The files a person writes (the experiment plan, the quarantine registry), read within limits.

A plan or quarantine file is small, but it is user input: a file of hundreds of megabytes,
YAML nested ten thousand levels deep, an alias bomb ("billion laughs": a few lines whose
aliases repeat a list a billion times) or a list of a million entries must be refused with
a one-line error naming the file and the limit, before it costs memory or time.  The
limits (``docs/plan-format.md``):

* a file is at most ``BF_INPUT_MAX_BYTES`` bytes (default 8 MiB) and must be a regular
  file; it is never read past the limit;
* a document is nested at most :data:`MAX_DEPTH` levels (a plan needs four, a quarantine
  file two);
* a document holds at most a fixed number of values (scalars, lists and mappings), each
  alias counted as every value it repeats (:data:`MAX_PLAN_VALUES`, and for a quarantine
  file :func:`quarantine_values` of its entry limit);
* a top-level list (the quarantine file's entries) holds at most its own limit.

YAML is read event by event (libyaml's parser when PyYAML has it) and built into plain
Python values here: every limit is checked as the events arrive, so nothing past a limit
is ever built.  Scalars are resolved and built exactly as ``yaml.safe_load`` does (the
same resolver and constructors); anchors, aliases and merge keys (``<<``) work as there.
JSON (a ``.json`` file) is parsed by :mod:`json` and checked against the same limits.
"""

from __future__ import annotations

import json
import os
import reprlib
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_BYTES_ENV = "BF_INPUT_MAX_BYTES"
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 32
MAX_PLAN_VALUES = 100_000

ErrorType = Callable[[str], Exception]


@dataclass(frozen=True, slots=True)
class DocumentLimits:
    """What one document may hold; ``*_env`` name the variable that raises a limit (shown
    in the message when it is exceeded)."""

    max_bytes: int
    max_values: int
    max_depth: int = MAX_DEPTH
    max_items: int | None = None  # items of a top-level list
    items_what: str = "entries"
    items_env: str | None = None
    kind: str = "plan"  # what the file is, in messages


def env_limit(name: str, default: int, error: ErrorType) -> int:
    """The whole number ``>= 1`` in ``$name``, else ``default``."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw.replace("_", "").replace(",", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise error(f"{name}={raw!r}: must be a whole number >= 1")
    return value


def max_bytes(error: ErrorType) -> int:
    return env_limit(MAX_BYTES_ENV, DEFAULT_MAX_BYTES, error)


def quarantine_values(max_entries: int) -> int:
    """The values a quarantine file of ``max_entries`` entries may hold: an entry is a
    mapping of five keys and five values (eleven values), with room to spare."""
    return 16 * max_entries + 64


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 60
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxdict = _SHOWN.maxset = 4
_SHOWN.maxlevel = 3
SHOWN_CHARS = 120


def shown(value: Any) -> str:
    """``repr(value)`` cut short (at most :data:`SHOWN_CHARS` characters, built without
    the whole repr): a value quoted in a one-line error message."""
    text = _SHOWN.repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def read_text(path: str | os.PathLike[str], error: ErrorType, limit: int) -> str:
    """The UTF-8 text of the regular file ``path``, read no further than ``limit`` bytes."""
    p = os.fspath(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the open
    except OSError as exc:
        raise error(f"{p}: cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{p}: cannot read: not a regular file")
        if st.st_size > limit:
            raise error(_too_big(p, st.st_size, limit))
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise error(f"{p}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > limit:  # it grew while it was read
        raise error(_too_big(p, size, limit, at_least=True))
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{p}: cannot read: not UTF-8 text (byte {exc.start})") from None


def _too_big(p: str, size: int, limit: int, *, at_least: bool = False) -> str:
    more = "more than " if at_least else ""
    return (
        f"{p}: {more}{size:,} bytes, over the limit of {limit:,} bytes for a plan or "
        f"quarantine file ({MAX_BYTES_ENV} raises it)"
    )


def load_limited(path: str | os.PathLike[str], error: ErrorType, limits: DocumentLimits) -> Any:
    """The document in ``path`` (YAML, or JSON by a ``.json`` suffix) within ``limits``;
    every problem raises ``error`` with one line naming the file."""
    p = Path(path)
    text = read_text(p, error, limits.max_bytes)
    if p.suffix.lower() == ".json":
        return parse_json(text, str(p), error, limits)
    return parse_yaml(text, str(p), error, limits)


# --------------------------------------------------------------------------- JSON


def parse_json(text: str, where: str, error: ErrorType, limits: DocumentLimits) -> Any:
    try:
        value = json.loads(text)
    except RecursionError:
        raise error(f"{where}: nested deeper than {limits.max_depth} levels") from None
    except ValueError as exc:  # a JSONDecodeError, or an integer of too many digits
        raise error(f"{where}: not valid JSON: {exc}") from None
    _check_tree(value, where, error, limits)
    return value


def _check_tree(value: Any, where: str, error: ErrorType, limits: DocumentLimits) -> None:
    """The limits of a parsed JSON value (no aliases: every value is its own)."""
    items = limits.max_items
    if items is not None and isinstance(value, list) and len(value) > items:
        raise error(_items_message(where, len(value), limits))
    count = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        count += 1
        if count > limits.max_values:
            raise error(_values_message(where, limits, None))
        if isinstance(v, dict | list):
            if depth > limits.max_depth:
                raise error(f"{where}: nested deeper than {limits.max_depth} levels")
            children = v.values() if isinstance(v, dict) else v
            stack.extend((c, depth + 1) for c in children)
            count += len(v) if isinstance(v, dict) else 0  # the keys


def _items_message(where: str, n: int | None, limits: DocumentLimits) -> str:
    """``n`` items over the limit (None: more than the limit, the reading stopped there)."""
    env = f" ({limits.items_env} raises it)" if limits.items_env else ""
    if n is None:
        return f"{where}: more than {limits.max_items:,} {limits.items_what}: over the limit{env}"
    return f"{where}: {n:,} {limits.items_what}, over the limit of {limits.max_items:,}{env}"


def _values_message(where: str, limits: DocumentLimits, line: int | None) -> str:
    at = f" (line {line})" if line is not None else ""
    return (
        f"{where}: more than {limits.max_values:,} values, each alias counted as all it "
        f"repeats{at}: over the limit for a {limits.kind}"
    )


# --------------------------------------------------------------------------- YAML

_TAG = "tag:yaml.org,2002:"
SCALAR_TAGS = frozenset(
    _TAG + t for t in ("null", "bool", "int", "float", "binary", "timestamp", "str")
)
MAP_TAGS = frozenset({"!", _TAG + "map"})
SEQ_TAGS = frozenset({"!", _TAG + "seq"})


class _Merge:
    """The ``<<`` merge key of a mapping."""


_MERGE = _Merge()


@dataclass(slots=True)
class _Frame:
    is_map: bool
    anchor: str | None
    start: int  # values counted before this collection
    line: int
    items: list[Any]
    merges: list[dict[Any, Any]]
    key: Any = None
    has_key: bool = False


def _line(event: Any) -> int:
    mark = getattr(event, "start_mark", None)
    return (mark.line + 1) if mark is not None else 0


def _one_line(exc: Exception) -> str:
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem:
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        context = getattr(exc, "context", None)
        lead = f"{context}: " if context else ""
        return f"{lead}{problem}{at}"
    return " ".join(str(exc).split())


class _Builder:
    """Plain values from YAML events, each limit checked as the events arrive."""

    def __init__(self, where: str, error: ErrorType, limits: DocumentLimits, scalars: Any) -> None:
        self.where = where
        self.error = error
        self.limits = limits
        self.scalars = scalars  # a SafeLoader: its resolver and scalar constructors
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.open: set[str] = set()
        self.values = 0
        self.documents = 0
        self.root: Any = None

    def fail(self, what: str, event: Any) -> Exception:
        return self.error(f"{self.where}: {what} (line {_line(event)})")

    def count(self, n: int, event: Any) -> None:
        self.values += n
        if self.values > self.limits.max_values:
            raise self.error(_values_message(self.where, self.limits, _line(event)))

    def feed(self, event: Any) -> None:
        import yaml

        if isinstance(event, yaml.ScalarEvent):
            self.count(1, event)
            value = self.scalar(event)
            self.define(event.anchor, value, 1, event)
            self.add(value, event)
        elif isinstance(event, yaml.AliasEvent):
            name = event.anchor
            if name in self.open:
                raise self.fail(f"the alias *{name} refers to a collection that holds it", event)
            if name not in self.anchors:
                raise self.fail(f"the alias *{name} names no anchor before it", event)
            value, weight = self.anchors[name]
            self.count(weight, event)
            self.add(value, event)
        elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            is_map = isinstance(event, yaml.MappingStartEvent)
            allowed = MAP_TAGS if is_map else SEQ_TAGS
            if event.tag is not None and event.tag not in allowed:
                raise self.fail(f"the tag {event.tag} is not allowed here", event)
            if len(self.stack) >= self.limits.max_depth:
                raise self.fail(f"nested deeper than {self.limits.max_depth} levels", event)
            start = self.values
            self.count(1, event)
            if event.anchor is not None:
                self.open.add(event.anchor)
            self.stack.append(_Frame(is_map, event.anchor, start, _line(event), [], []))
        elif isinstance(event, yaml.CollectionEndEvent):
            frame = self.stack.pop()
            value = self.finish(frame, event)
            if frame.anchor is not None:
                self.open.discard(frame.anchor)
            self.define(frame.anchor, value, self.values - frame.start, event)
            self.add(value, event)
        elif isinstance(event, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise self.fail("holds more than one YAML document", event)

    def define(self, anchor: str | None, value: Any, weight: int, event: Any) -> None:
        if anchor is None:
            return
        if anchor in self.anchors:
            raise self.fail(f"the anchor &{anchor} is defined twice", event)
        self.anchors[anchor] = (value, weight)

    def scalar(self, event: Any) -> Any:
        import yaml

        tag = event.tag
        if tag is None or tag == "!":
            tag = self.scalars.resolve(yaml.ScalarNode, event.value, event.implicit)
        if tag == _TAG + "merge":
            return _MERGE
        if tag == _TAG + "value":
            tag = _TAG + "str"
        if tag not in SCALAR_TAGS:
            raise self.fail(f"the tag {tag} is not allowed", event)
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        try:
            return self.scalars.yaml_constructors[tag](self.scalars, node)
        except (ValueError, OverflowError, yaml.YAMLError) as exc:
            raise self.fail(f"cannot read the value {shown(event.value)}: {exc}", event) from None

    def add(self, value: Any, event: Any) -> None:
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        if not top.is_map:
            top.items.append(value)
            items = self.limits.max_items
            if len(self.stack) == 1 and items is not None and len(top.items) > items:
                raise self.error(_items_message(self.where, None, self.limits))
            return
        if not top.has_key:
            if isinstance(value, dict | list):
                raise self.fail("a mapping key must be a plain value", event)
            top.key, top.has_key = value, True
            return
        key, top.key, top.has_key = top.key, None, False
        if key is _MERGE:
            merged = value if isinstance(value, list) else [value]
            if not all(isinstance(m, dict) for m in merged):
                raise self.fail("a merge key (<<) takes a mapping or a list of them", event)
            top.merges.extend(reversed(merged))  # the first of a list wins
            return
        top.items.append((key, value))

    def finish(self, frame: _Frame, event: Any) -> Any:
        if not frame.is_map:
            return frame.items
        out: dict[Any, Any] = {}
        for m in frame.merges:
            out.update(m)
        for key, value in frame.items:
            out[key] = value
        return out


def parse_yaml(text: str, where: str, error: ErrorType, limits: DocumentLimits) -> Any:
    """One YAML document as ``yaml.safe_load`` reads it, within ``limits``."""
    import yaml

    parser = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    builder = _Builder(where, error, limits, yaml.SafeLoader(""))
    try:
        for event in yaml.parse(text, Loader=parser):
            builder.feed(event)
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml's own cap, met while it looks ahead
            raise error(f"{where}: nested deeper than {limits.max_depth} levels") from None
        raise error(f"{where}: not valid YAML: {_one_line(exc)}") from None
    return builder.root
