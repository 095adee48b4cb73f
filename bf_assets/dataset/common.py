"""Shared pieces of the dataset-level review: trial keys, cells, lanes and time ordering."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, BinaryIO, ParamSpec

from bf_assets.contract import Outcome
from bf_assets.ingest.identity import normalize_harness, normalize_skill_mode
from bf_assets.ingest.models import canonical_model
from bf_assets.review.record import TrialReview

# A trial's identity across the whole review: ``(job_key, rollout)``.
TrialKey = tuple[str, str]

ORACLE_HARNESSES = frozenset({"oracle"})
NOOP_HARNESSES = frozenset({"nop", "null", "noop"})
_EPOCH = datetime.min.replace(tzinfo=UTC)


def trial_key(review: TrialReview) -> TrialKey:
    return review.key


def show_key(key: TrialKey) -> str:
    return f"{key[0]}/{key[1]}" if not key[0].endswith(key[1]) else key[0]


@dataclass(frozen=True, slots=True, order=True)
class Cell:
    """``(task, harness, model, skill_mode, sandbox)``: one cell of the experiment matrix."""

    task: str | None
    harness: str | None
    model: str | None
    skill_mode: str | None
    sandbox: str | None

    def label(self) -> str:
        return " / ".join(show(x) for x in self.astuple())

    def astuple(self) -> tuple[str | None, ...]:
        return (self.task, self.harness, self.model, self.skill_mode, self.sandbox)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    s = str(value).strip()
    return s or None


def make_cell(task: Any, harness: Any, model: Any, skill_mode: Any, sandbox: Any) -> Cell:
    """A cell with the same normalisation for plan entries and trials."""
    sb = _text(sandbox)
    return Cell(
        task=_text(task),
        harness=normalize_harness(harness),
        model=canonical_model(_text(model)),
        skill_mode=normalize_skill_mode(skill_mode),
        sandbox=sb.lower() if sb else None,
    )


def cell_of(review: TrialReview) -> Cell:
    i = review.identity
    return make_cell(i.task_id, i.harness, i.model, i.skill_mode, i.sandbox)


def show(value: Any) -> str:
    return "?" if value is None or value == "" else str(value)


def is_oracle(review: TrialReview) -> bool:
    return (
        review.outcome == Outcome.ORACLE
        or normalize_harness(review.identity.harness) in ORACLE_HARNESSES
    )


def is_noop(review: TrialReview) -> bool:
    return normalize_harness(review.identity.harness) in NOOP_HARNESSES


def is_model_trial(review: TrialReview) -> bool:
    """Model data, as opposed to the oracle and no-op probe lanes."""
    return not is_oracle(review) and not is_noop(review)


def parse_time(value: Any) -> datetime | None:
    """``datetime.fromisoformat`` on ``started_at``; naive times are taken as UTC."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        t = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def recency_key(review: TrialReview) -> tuple[datetime, str, str]:
    """Sort key, oldest first: start time (unknown = oldest), then rollout, then job."""
    t = parse_time(review.identity.started_at) or _EPOCH
    return (t, review.ref.rollout, review.ref.job_key)


def newest_first(reviews: list[TrialReview]) -> list[TrialReview]:
    return sorted(reviews, key=recency_key, reverse=True)


PICKLE_CHUNK = 2000  # items pickled by one pickler (pickled_chunks)


def pickled_chunks(items: Sequence[Any], n: int | None = None) -> list[bytes]:
    """``items`` as pickles of ``n`` each, made one after the other: one pickler over every
    item of a long list keeps a memo entry, and the state it made, for each of their objects
    until the whole list is written; a pickler per chunk lets go of them chunk by chunk.
    Objects shared across chunks are shared again only within a chunk once loaded."""
    n = n or PICKLE_CHUNK
    return [
        pickle.dumps(list(items[i : i + n]), protocol=pickle.HIGHEST_PROTOCOL)
        for i in range(0, len(items), n)
    ]


def unpickled(chunks: Sequence[bytes]) -> list[Any]:
    """The items of :func:`pickled_chunks`, in order."""
    return [item for chunk in chunks for item in pickle.loads(chunk)]  # noqa: S301 (ours)


@dataclass(frozen=True, slots=True)
class PartedHead:
    """The first pickle of a parted file (:func:`dump_parted`): the object without its long
    parts, how many chunks each part has, and the function that puts it back together."""

    head: Any
    chunks: tuple[int, ...]
    rebuild: Callable[[Any, list[list[Any]]], Any]


def dump_parted(obj: Any, fh: BinaryIO) -> None:
    """Pickle ``obj`` into ``fh``.  An object with a ``pickle_parts()`` method (giving its
    head, its long sequences and a module-level ``rebuild(head, parts)``) is written as the
    head, then each sequence in chunks of :data:`PICKLE_CHUNK` items, every chunk by a
    pickler of its own written straight to the file: no pickle of the whole is ever held,
    and the memo of one pickler covers one chunk.
    :func:`load_parted` reads either kind of file."""
    parts_of = getattr(obj, "pickle_parts", None)
    if parts_of is None:
        pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL)
        return
    head, parts, rebuild = parts_of()
    n = PICKLE_CHUNK
    counts = tuple(-(-len(part) // n) for part in parts)
    pickle.dump(PartedHead(head, counts, rebuild), fh, protocol=pickle.HIGHEST_PROTOCOL)
    for part in parts:
        for i in range(0, len(part), n):
            pickle.dump(list(part[i : i + n]), fh, protocol=pickle.HIGHEST_PROTOCOL)


def load_parted(fh: BinaryIO) -> Any:
    """The object :func:`dump_parted` wrote into ``fh`` (or any single pickle)."""
    first = pickle.load(fh)  # noqa: S301 (our own warehouse file)
    if not isinstance(first, PartedHead):
        return first
    parts: list[list[Any]] = []
    for count in first.chunks:
        items: list[Any] = []
        for _ in range(count):
            items.extend(pickle.load(fh))  # noqa: S301 (our own warehouse file)
        parts.append(items)
    return first.rebuild(first.head, parts)


P = ParamSpec("P")


def joined(pieces: Callable[P, Iterable[str]]) -> Callable[P, str]:
    """A function giving what ``pieces`` gives, as one string (same arguments)."""

    def whole(*args: P.args, **kwargs: P.kwargs) -> str:
        return "".join(pieces(*args, **kwargs))

    whole.__doc__ = f"``{pieces.__name__}`` (same arguments) as one string."
    return whole
