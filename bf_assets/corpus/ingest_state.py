"""What the last ``bf-assets release`` ingested, so the next one reads again only what changed.

A release ingests its run roots job partition by job partition into the warehouse's tables
(``raw_trials``, ``validated_trials``, ``findings``, ``skill_audit``, ``trial_audits``,
``trial_rows``).  A scheduled release over a growing corpus finds most job directories as
they were last time: reading and reviewing them again gives the same tables.
:class:`IngestState` remembers, per
job partition, what its tables were made from and what the tables themselves were when they
were written, in ``.ingest-state.json`` beside them; a partition is left as it is only when
both still hold:

* its **content**: the sorted trials of the job directory, each with its review-cache
  fingerprint (every file's path, size, mtime, ctime and inode, through the links the readers
  follow; :func:`bf_assets.ingest.discovery.trial_fingerprint`), under a context that holds the
  source of the whole package, the review options and the task tree's state.  The
  fingerprints are taken before the trials are read, so an edit during the read is a change
  next time.  A trial without a fingerprint (unlistable, too many files) makes its partition
  always read;
* its **tables**: size, mtime, ctime and inode of each of the five files, as they were just
  after the run that wrote them succeeded.  A table written since by anyone else (a
  materialization from the UI, a backfill, a deleted or restored file) is a change.

Anything unreadable (no file, bad JSON, another format or context) means nothing is reused;
the state never decides that a partition *is* unchanged on its own.  Only a local warehouse
has a state (an object-store warehouse is always read in full).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from bf_assets.corpus.cache import code_digest
from bf_assets.files import write_atomic
from bf_assets.ingest.discovery import TrialRef, trial_fingerprint
from bf_assets.ingest.treeprint import in_context

STATE_FILE = ".ingest-state.json"
FORMAT = 1
INGEST_TABLES = (
    "raw_trials",
    "validated_trials",
    "findings",
    "skill_audit",
    "trial_audits",
    "trial_rows",
)
MAX_STATE_BYTES = 256 * 1024 * 1024  # a larger file is not read (nothing is reused)
FINGERPRINT_CHUNK = 256  # trials per task of the fingerprint pool
PARALLEL_MIN = 512  # fewer trials are fingerprinted in this process

Stamp = list[int]  # size, mtime_ns, ctime_ns, inode


def _encode_segment(segment: str) -> str:
    """One partition-key segment as a path component: ``%`` → ``%25``, then ``""``, ``.``
    and ``..`` (which a filesystem would collapse or follow) → ``%``, ``%2E``, ``%2E%2E``."""
    seg = segment.replace("%", "%25")
    if seg == "":
        return "%"
    if seg in (".", ".."):
        return seg.replace(".", "%2E")
    return seg


def partition_relpath(partition_key: str) -> tuple[str, ...]:
    """Path components for a partition key: one sub-folder per ``/``-separated segment.

    Injective: every ``%`` in the key is escaped, so the escapes for empty, ``.`` and ``..``
    segments cannot collide with a literal segment, and no component can leave the asset's
    folder.
    """
    return tuple(_encode_segment(s) for s in partition_key.split("/"))


def table_file(base: str | os.PathLike[str], table: str, key: str) -> Path:
    """The Parquet file of partition ``key`` of ``table`` in the warehouse folder ``base``
    (the IO manager's layout)."""
    *dirs, name = partition_relpath(key)
    return Path(base, table, *dirs, name + ".parquet")


def ingest_context(review_context: str) -> str:
    """The context of an ingest's fingerprints: the package source and the review's."""
    return hashlib.sha256(f"ingest\0{code_digest()}\0{review_context}".encode()).hexdigest()


def _fingerprint(ref: TrialRef, context: str) -> str | None:
    """The review-cache fingerprint of a trial under ``context`` (None when it has none)."""
    fp = trial_fingerprint(ref)
    return in_context(context, fp) if fp else None


JobPrints = tuple[str, str | None]  # job key, content digest


def _job_prints(jobs: Sequence[Sequence[TrialRef]], context: str | None) -> list[JobPrints]:
    out: list[JobPrints] = []
    for refs in jobs:
        fps = [_fingerprint(r, context) if context is not None else None for r in refs]
        out += job_contents(refs, fps).items()
    return out


def job_prints(trials: Sequence[TrialRef], context: str | None) -> list[JobPrints]:
    """Per job directory of ``trials``: its key and the digest of its trials' review-cache
    fingerprints under ``context`` (None where a trial has none, or without a context).  A
    large batch on every core, whole jobs to a task: only the per-job digests come back
    (bounded memory)."""
    by_job: dict[str, list[TrialRef]] = {}
    for t in trials:
        by_job.setdefault(t.job_key, []).append(t)
    jobs = list(by_job.values())
    if context is None or len(trials) < PARALLEL_MIN or (os.cpu_count() or 1) < 2:
        parts = [_job_prints(jobs, context)]
    else:
        from bf_assets.corpus.run import worker_pool

        tasks: list[list[list[TrialRef]]] = [[]]
        size = 0
        for refs in jobs:
            if size >= FINGERPRINT_CHUNK:
                tasks.append([])
                size = 0
            tasks[-1].append(refs)
            size += len(refs)
        with worker_pool(os.cpu_count() or 1) as pool:
            futures = [pool.submit(_job_prints, task, context) for task in tasks]
            parts = [pool.result(f) for f in futures]
    return [jp for prints in parts for jp in prints]


def job_contents(refs: Iterable[TrialRef], fps: Iterable[str | None]) -> dict[str, str | None]:
    """Per job partition, a digest of its trials and their fingerprints (None when a trial
    has no fingerprint)."""
    lines: dict[str, list[str]] = defaultdict(list)
    unknown: set[str] = set()
    for ref, fp in zip(refs, fps, strict=True):
        if fp is None:
            unknown.add(ref.job_key)
        lines[ref.job_key].append(f"{ref.rel_path}\0{fp}\n")
    out: dict[str, str | None] = {}
    for key, rows in lines.items():
        if key in unknown:
            out[key] = None
            continue
        h = hashlib.sha256()
        for row in sorted(rows):
            h.update(row.encode("utf-8", "surrogateescape"))
        out[key] = h.hexdigest()
    return out


def _stamp(path: Path) -> Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


class IngestState:
    """The ingest state of the tables in one local warehouse folder (the run roots' own:
    ``<warehouse>/roots-…``); ``folder`` None: no state, nothing reused."""

    def __init__(self, folder: Path | None, context: str) -> None:
        self.folder = folder
        self.context = context
        self._entries: dict[str, dict[str, object]] = {}
        if folder is not None:
            self._load(folder / STATE_FILE)

    def _load(self, path: Path) -> None:
        """The entries of the state file at ``path``; none when it is missing, too large,
        unreadable, of another format or made under another context."""
        try:
            if path.stat().st_size > MAX_STATE_BYTES:
                return
            doc = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            return
        if doc.get("context") != self.context:
            return  # other code, options or task tree: nothing of it applies
        parts = doc.get("partitions")
        if isinstance(parts, dict):
            self._entries = {k: v for k, v in parts.items() if _valid(v)}

    def _paths(self, key: str) -> list[Path]:
        assert self.folder is not None
        return [table_file(self.folder, table, key) for table in INGEST_TABLES]

    def unchanged(self, key: str, content: str | None) -> bool:
        """True when the partition's trials and its tables are as the state recorded them."""
        entry = self._entries.get(key)
        if entry is None or content is None or entry["content"] != content:
            return False
        stamps = entry["tables"]
        assert isinstance(stamps, list)
        return all(_stamp(p) == s for p, s in zip(self._paths(key), stamps, strict=True))

    def unchanged_keys(self, contents: Mapping[str, str | None]) -> set[str]:
        return {k for k, c in contents.items() if self.unchanged(k, c)}

    def record(self, keys: Iterable[str], contents: Mapping[str, str | None]) -> None:
        """The partitions ``keys`` were just ingested from ``contents``: remember them with
        their tables as they are now (a partition without a content or a table, forgotten)."""
        for key in keys:
            stamps = [_stamp(p) for p in self._paths(key)]
            content = contents.get(key)
            if content is None or any(s is None for s in stamps):
                self._entries.pop(key, None)
            else:
                self._entries[key] = {"content": content, "tables": stamps}

    def forget(self, keys: Iterable[str]) -> None:
        for key in keys:
            self._entries.pop(key, None)

    def save(self, keep: Collection[str] | None = None) -> bool:
        """Write the state (only the partitions in ``keep`` when given), replacing the file
        at once; False when it could not be written (the old file is removed then: a state
        that lags its tables is never trusted, but one that cannot be updated is dropped)."""
        if self.folder is None:
            return False
        if keep is not None:
            self._entries = {k: v for k, v in self._entries.items() if k in keep}
        path = self.folder / STATE_FILE
        doc = {"format": FORMAT, "context": self.context, "partitions": self._entries}
        try:
            write_atomic(path, orjson.dumps(doc))
            return True
        except OSError:
            with contextlib.suppress(OSError):
                path.unlink()
            return False

    def __len__(self) -> int:
        return len(self._entries)


def _valid(entry: object) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
        return False
    tables = entry.get("tables")
    return (
        isinstance(tables, list)
        and len(tables) == len(INGEST_TABLES)
        and all(
            isinstance(s, list) and len(s) == 4 and all(type(v) is int for v in s) for s in tables
        )
    )


@dataclass(slots=True)
class IngestPlan:
    """Which job partitions a release reads, and the state it keeps up to date as it goes."""

    state: IngestState
    contents: dict[str, str | None]  # job key -> content digest, taken before any read
    unchanged: set[str] = field(default_factory=set)  # left as the last release made them

    def to_read(self, keys: Iterable[str]) -> list[str]:
        return [k for k in keys if k not in self.unchanged]

    def keep_only_materialized(self, materialized: Iterable[Collection[str]]) -> None:
        """Read again every partition missing from one of ``materialized`` (per table, the
        partitions the instance holds a materialization of): the tables belong to the
        instance that made them."""
        for keys in materialized:
            self.unchanged &= set(keys)

    def done(self, keys: Sequence[str], ok: bool) -> None:
        """An ingest run over ``keys`` ended: remember them (forget them when it failed) and
        write the state, so a release stopped later keeps what it finished."""
        if ok:
            self.state.record(keys, self.contents)
        else:
            self.state.forget(keys)
        self.state.save(keep=self.contents.keys())


def plan_ingest(
    folder: Path | None,
    trials: Sequence[TrialRef],
    review_context: str,
    *,
    reread: bool = False,
) -> IngestPlan:
    """Fingerprint ``trials`` (before anything reads them) and find the job partitions whose
    trials and tables are as the last release over ``folder`` left them (none with
    ``reread``, or without a local ``folder``)."""
    context = ingest_context(review_context)
    state = IngestState(folder, context)
    contents = dict(job_prints(trials, context if folder else None))
    unchanged = set() if reread else state.unchanged_keys(contents)
    return IngestPlan(state, contents, unchanged)
