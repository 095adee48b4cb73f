"""Trial discovery over one or more run roots.

Every directory that looks like a trial is reported exactly once with its layout: the
production layout and its variants (model-matrix ``trial-NN/``, worker shards, skill-eval
trees, SkillsBench config folders), the flat fixture layout, the Harbor layout, and
incomplete trials (config or trajectories without ``result.json``).  Job-level files are
not trials.  Hidden (``.x``) and ``*.tmp`` directories are walked like any other (a trial in
one is reported; the gate flags it: a copy or a write in progress is never exported).

Nothing is dropped silently.  A directory the walk cannot look into may be a trial (or hold
trials), so outside a trial it is reported as a trial that cannot be read, and the gate
rejects it with ``GATE_UNREADABLE`` saying why (the review, the report and the release all
list it):

* a directory that cannot be listed (permission denied, an I/O error);
* a directory link that leaves the run root (never followed; ``TrialRef.link_escape``);
* a link whose target does not exist or cannot be reached (a dangling link, a loop);
* an entry whose type cannot be read.

Directory links that stay inside the run root are followed (once: a trial is reported under
its real path).  Inside a trial these cases are the trial's own files: its scan reports
them (``bf_assets.ingest.scan``), and a link leaving the root there is a trial of its own
only when it holds trial markers.  A run root that cannot be listed raises ``OSError``.

Names are kept as the file system gives them in ``TrialRef.path`` (what is opened) and
shown through :func:`~bf_assets.ingest.readers.escape_name` everywhere else (``rel_path``,
``job_key``, ``job``, ``rollout``, the near-miss paths), so a name that is not UTF-8 never
reaches an output as a lone surrogate.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bf_assets.contract import Layout
from bf_assets.ingest.layout import (
    detect_layout,
    is_harbor_job_config,
    is_harbor_job_result,
    layout_of_result,
)
from bf_assets.ingest.readers import READ_FLAGS, ReadLimits, escape_name, read_document
from bf_assets.ingest.treeprint import TreeTooBig, digest_tree, enc, within

# Sub-directories of a trial that hold its artifacts; never searched for nested trials
# (an agent can write anything, including a ``result.json``, under ``artifacts/``).
TRIAL_ARTIFACT_DIRS = frozenset(
    {"agent", "verifier", "artifacts", "trajectory", "trainer", "hosted_env", "loop", "sessions"}
)
SKIP_DIRS = frozenset({"__pycache__", "node_modules"})
TRIAL_MARKERS = ("result.json", "config.json", "run_config.json")
TRAJECTORY_FILES = ("acp_trajectory.jsonl", "llm_trajectory.jsonl")
# Discovery only needs to classify; cap what it reads per marker file.
_PEEK_LIMITS = ReadLimits(max_document_bytes=8 * 1024 * 1024)


@dataclass(frozen=True, slots=True, init=False)
class TrialRef:
    """Where a trial is and what shape it has; cheap to pickle and to send to a worker.

    ``root`` and ``path`` are the names to open; every other name is escaped for output.
    ``path`` is kept only when it is not ``root`` joined with ``rel_path`` (a name that is
    not UTF-8, say): a review batch holds one ref per trial, and the path is the longest
    of its names."""

    root: str  # the run root it was found under (absolute)
    rel_path: str  # relative to the root, posix ('.' when the root is the trial), escaped
    job_key: (
        str  # stable job id (the Dagster partition key): the job dir relative to the root's parent
    )
    job: str  # job directory name (escaped)
    rollout: str  # trial directory name (escaped)
    layout: str
    link_escape: bool = False  # the trial directory is a link that leaves the run root
    own_path: str | None = None  # ``path`` when it is not the joined one

    def __init__(
        self,
        root: str,
        path: str,
        rel_path: str,
        job_key: str,
        job: str,
        rollout: str,
        layout: str,
        link_escape: bool = False,
    ) -> None:
        own = None if path == _joined(root, rel_path) else path
        for name, value in (
            ("root", root),
            ("rel_path", rel_path),
            ("job_key", job_key),
            ("job", job),
            ("rollout", rollout),
            ("layout", layout),
            ("link_escape", link_escape),
            ("own_path", own),
        ):
            object.__setattr__(self, name, value)

    @property
    def path(self) -> str:
        """The trial directory (absolute, as reached from the root)."""
        own = self.own_path
        return own if own is not None else _joined(self.root, self.rel_path)

    def to_dict(self) -> dict[str, object]:
        return {
            "root": self.root,
            "path": self.path,
            "rel_path": self.rel_path,
            "job_key": self.job_key,
            "job": self.job,
            "rollout": self.rollout,
            "layout": self.layout,
            "link_escape": self.link_escape,
        }


def _joined(root: str, rel_path: str) -> str:
    if rel_path == ".":
        return root
    return (root if root.endswith("/") else root + "/") + rel_path


@dataclass(slots=True)
class Discovery:
    trials: list[TrialRef] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason) for near-misses


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _rel(path: str, base: str) -> str:
    """``path`` relative to ``base`` (both absolute and normalised, ``path`` within ``base``)."""
    if path == base:
        return "."
    prefix = base if base.endswith(os.sep) else base + os.sep
    if path.startswith(prefix):
        return path[len(prefix) :].replace(os.sep, "/")
    return os.path.relpath(path, base).replace(os.sep, "/")


def _job_key(job_dir: str, root: str) -> str:
    base = os.path.dirname(root)
    name = os.path.basename(job_dir)
    if not _within(job_dir, base):
        return name or "root"
    key = _rel(job_dir, base)
    return name if key in ("", ".") else key


_PRODUCTION_HEAD = re.compile(rb'\A\s*\{\s*"task_name"\s*:\s*"[^"\\]*"\s*,\s*"rollout_name"\s*:')


def _sniff_production(path: str) -> bool:
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return False  # links and special files go through the checked reader
        fd = os.open(path, READ_FLAGS)
        try:
            head = os.read(fd, 512)
        finally:
            os.close(fd)
    except OSError:
        return False
    return bool(_PRODUCTION_HEAD.match(head))


def _classify(dirpath: str, names: set[str], root: str) -> tuple[str | None, str | None]:
    """Return ``(layout, None)`` for a trial, ``(None, reason)`` for a near-miss, else ``(None, None)``."""
    # Fast path: Benchflow writes result.json with "task_name" then "rollout_name" as its
    # first keys; seeing both at the start of a regular file settles the layout without
    # parsing the document (anything else takes the full path below).
    if (
        "result.json" in names
        and "run_config.json" not in names
        and _sniff_production(os.path.join(dirpath, "result.json"))
    ):
        return Layout.PRODUCTION.value, None
    has_traj = False
    if "trajectory" in names:
        has_traj = any(
            os.path.lexists(os.path.join(dirpath, "trajectory", f)) for f in TRAJECTORY_FILES
        )
    markers = [m for m in TRIAL_MARKERS if m in names]
    if not markers and not has_traj:
        if "trial.log" in names:
            # A Harbor trial whose run died before it wrote result.json or config.json.
            return Layout.HARBOR.value, None
        return None, None
    # Read lazily: a trial result.json alone settles the layout of almost every trial.
    docs = {}
    if "result.json" in names:
        docs["result.json"] = read_document(
            os.path.join(dirpath, "result.json"), root, _PEEK_LIMITS
        )
    result = docs["result.json"].value if "result.json" in docs else None
    if (
        layout_of_result(result) is not None
        and not is_harbor_job_result(result)
        and "run_config.json" not in names
    ):
        return detect_layout(result, None, None).value, None
    for m in ("config.json", "run_config.json"):
        if m in names:
            docs[m] = read_document(os.path.join(dirpath, m), root, _PEEK_LIMITS)
    config = docs["config.json"].value if "config.json" in docs else None
    run_config = docs["run_config.json"].value if "run_config.json" in docs else None
    harbor_job = is_harbor_job_result(result) or is_harbor_job_config(config)
    if harbor_job and not has_traj and "run_config.json" not in names:
        return None, None  # a Harbor job directory
    layout = detect_layout(result, config, run_config)
    if layout is not Layout.UNKNOWN:
        return layout.value, None
    if has_traj:
        return Layout.UNKNOWN.value, None
    if any(d.present and d.value is None for d in docs.values()):
        # A marker that cannot be parsed: report it rather than lose a possible trial.
        return Layout.UNKNOWN.value, None
    return None, f"{', '.join(markers)} present but not a trial's"


def discover(roots: Sequence[str | os.PathLike[str]]) -> Discovery:
    """Walk every root; return each trial once (sorted by root, then path) and near-misses."""
    out = Discovery()
    per_root: list[list[TrialRef]] = [[] for _ in roots]
    for i, ref in walk_roots(roots, out.skipped):
        per_root[i].append(ref)
    for refs in per_root:
        out.trials.extend(sort_refs(refs))
    return out


def roots_overlap(roots: Sequence[str | os.PathLike[str]]) -> bool:
    """Whether a run root lies inside another (or is given twice), by real path: then a
    trial's root is whichever the whole walk reaches it from first."""
    real = [os.path.realpath(os.path.abspath(r)) for r in roots]
    return any(i != j and _within(a, b) for i, a in enumerate(real) for j, b in enumerate(real))


class WholeWalkNeeded(Exception):
    """A pruned walk met a directory link inside the root on its way."""


class _JobPaths:
    """Which directories of a root a walk for the trials of ``wanted`` job partitions enters:
    a directory whose key (the job key its trials would have) is a wanted key or leads to one,
    and every child of a wanted job directory (each may be one of its trials)."""

    __slots__ = ("root", "wanted", "ways")

    def __init__(self, root: str, wanted: set[str]) -> None:
        self.root = root
        self.wanted = wanted
        self.ways = {k.rsplit("/", n)[0] for k in wanted for n in range(k.count("/") + 1)}

    def _key(self, d: str) -> str:
        return escape_name(_job_key(d, self.root))

    def holds_trials(self, d: str) -> bool:
        return self._key(d) in self.wanted

    def on_the_way(self, d: str) -> bool:
        return self._key(d) in self.ways


def trials_in_jobs(
    roots: Sequence[str | os.PathLike[str]], job_keys: Iterable[str]
) -> list[TrialRef]:
    """The trials of the job partitions ``job_keys``: exactly ``[t for t in
    discover_trials(roots) if t.job_key in job_keys]``, in that order, but walking only the
    directories on the way to those job directories and their children (a run of twenty job
    partitions of a 100,000-trial root reads a few hundred directories, not a million).
    Where only the whole walk can tell (run roots inside one another, a directory link
    inside a root on the way), it is the whole walk."""
    wanted = set(job_keys)
    if not wanted:
        return []
    if not roots_overlap(roots):
        try:
            out: list[TrialRef] = []
            for root_in in roots:
                root_s = os.path.abspath(root_in)
                if not os.path.isdir(root_s):
                    raise NotADirectoryError(f"run root {root_in} is not a directory")
                walk = _walk_root(root_s, [], set(), _JobPaths(root_s, wanted))
                out.extend(sort_refs(t for t in walk if t.job_key in wanted))
            return out
        except WholeWalkNeeded:
            pass
    return [t for t in discover_trials(roots) if t.job_key in wanted]


def sort_refs(refs: Iterable[TrialRef]) -> list[TrialRef]:
    """The order ``discover`` reports one root's trials in."""
    return sorted(refs, key=lambda t: t.rel_path)


def walk_roots(
    roots: Sequence[str | os.PathLike[str]], skipped: list[tuple[str, str]]
) -> Iterator[tuple[int, TrialRef]]:
    """``(root index, trial)`` for every trial, one at a time in walk order (a caller can
    review trials while the walk goes on; ``discover`` sorts them).  Near-misses go to
    ``skipped``.  The walk works on plain strings (no ``Path`` per directory: pathlib interns
    every component it parses, which would grow with the corpus)."""
    seen_real: set[str] = set()
    for i, root_in in enumerate(roots):
        root_s = os.path.abspath(root_in)
        if not os.path.isdir(root_s):
            raise NotADirectoryError(f"run root {root_in} is not a directory")
        for ref in _walk_root(root_s, skipped, seen_real):
            yield i, ref


def _walk_root(
    root_s: str,
    skipped: list[tuple[str, str]],
    seen_real: set[str],
    prune: _JobPaths | None = None,
) -> Iterator[TrialRef]:
    """The trials under one root, in walk order; with ``prune``, only the directories that
    may hold a trial of its job partitions are entered (:func:`trials_in_jobs`), and a
    directory link inside the root raises ``WholeWalkNeeded``."""
    real_root = os.path.realpath(root_s)
    # (directory, its real path, whether it is inside a trial)
    stack: list[tuple[str, str, bool]] = [(root_s, real_root, False)]
    # Linked directories inside the root are walked after every real one, so a trial is
    # reported under its real path whatever the link is called ("0-latest" -> job).
    linked: list[tuple[str, str, bool]] = []
    while stack or linked:
        d, real, inside = stack.pop() if stack else linked.pop(0)
        if real in seen_real:
            continue
        seen_real.add(real)
        try:
            entries = list(os.scandir(d))
        except OSError as exc:
            if d == root_s:
                raise
            if inside:  # a folder of a trial: that trial's scan reports it
                skipped.append((escape_name(d), f"cannot list directory: {exc.strerror}"))
            else:  # it may be a trial, or hold trials: reported, never dropped
                yield _ref(root_s, d, Layout.UNKNOWN.value)
            continue
        names = {e.name for e in entries if not e.name.endswith(".tmp")}
        layout, reason = _classify(d, names, root_s)
        if reason:
            skipped.append((escape_name(d), reason))
        is_trial = layout is not None
        if is_trial:
            yield _ref(root_s, d, layout or Layout.UNKNOWN.value)
        below_trial = inside or is_trial
        every = prune is None or prune.holds_trials(d)
        for e in sorted(_subdirs(entries), key=_entry_name, reverse=True):
            if e.name in SKIP_DIRS:
                continue
            if is_trial and e.name in TRIAL_ARTIFACT_DIRS:
                continue
            child = e.path
            if not every and not prune.on_the_way(child):  # type: ignore[union-attr]
                continue
            try:
                is_link = e.is_symlink()
                is_dir = not is_link and e.is_dir(follow_symlinks=False)
            except OSError:  # its type cannot be read
                if not below_trial:
                    yield _ref(root_s, child, Layout.UNKNOWN.value)
                continue
            if is_link:
                target = os.path.realpath(child)
                if not os.path.isdir(target):
                    if not below_trial and not os.path.exists(child):
                        # dangling, a loop, or a target that cannot be reached
                        yield _ref(root_s, child, Layout.UNKNOWN.value)
                    continue  # a link to a file is a file
                if not _within(target, real_root):
                    escaped = _escaping_link(skipped, root_s, child, below_trial)
                    if escaped is not None:
                        yield escaped
                    continue
                if prune is not None:
                    # whether the whole walk reaches the target by a real path first
                    # (then the link adds nothing) only the whole walk can tell
                    raise WholeWalkNeeded(child)
                linked.append((child, target, below_trial))
                continue
            if not is_dir:
                continue
            stack.append((child, os.path.join(real, e.name), below_trial))


def _entry_name(e: os.DirEntry[str]) -> str:
    return e.name


def _subdirs(entries: list[os.DirEntry[str]]) -> list[os.DirEntry[str]]:
    """The entries the walk may descend into (directories and links; an entry whose type
    cannot be read is kept: the walk's own checks decide); a trial's files are not sorted."""
    out = []
    for e in entries:
        try:
            if not e.is_dir(follow_symlinks=False) and not e.is_symlink():
                continue
        except OSError:
            pass
        out.append(e)
    return out


def _escaping_link(
    skipped: list[tuple[str, str]], root: str, link: str, in_trial: bool
) -> TrialRef | None:
    """A directory link leaving the root: a trial that is not read (``link_escape``).  In a
    trial, only a link whose names say it is a trial is one (the trial's scan reports its
    other links); the rest are near-misses."""
    if in_trial:
        try:
            names = set(os.listdir(link))
        except OSError:
            names = set()
        if not (any(m in names for m in TRIAL_MARKERS) or "trajectory" in names):
            skipped.append((escape_name(link), "directory link leaves the run root; not followed"))
            return None
    ref = _ref(root, link, Layout.UNKNOWN.value)
    return TrialRef(**{**ref.to_dict(), "link_escape": True})  # type: ignore[arg-type]


def _ref(root: str, d: str, layout: str) -> TrialRef:
    rel = _rel(d, root)
    job_dir = os.path.dirname(d)
    return TrialRef(
        root=root,
        path=d,
        rel_path=escape_name(rel),
        # shared by every trial of the job
        job_key=sys.intern(escape_name(_job_key(job_dir, root))),
        job=sys.intern(escape_name(os.path.basename(job_dir))),
        rollout=escape_name(os.path.basename(d)),
        layout=layout,
    )


def hidden_parts(ref: TrialRef) -> list[str]:
    """The hidden (``.x``) or ``*.tmp`` directories on the trial's path below its root."""
    return [
        p
        for p in ref.rel_path.split("/")
        if p not in ("", ".", "..") and (p.startswith(".") or p.endswith(".tmp"))
    ]


def discover_trials(roots: Sequence[str | os.PathLike[str]]) -> list[TrialRef]:
    return discover(roots).trials


# --------------------------------------------------------------------------- jobs


@dataclass(frozen=True, slots=True)
class JobDir:
    key: str  # partition key
    path: str
    n_trials: int
    fingerprint: str  # changes when a trial is added or removed or a trial file changes


def trial_fingerprint(ref: TrialRef) -> str | None:
    """The fingerprint of a trial: the stat digest of every file of it
    (:func:`~bf_assets.ingest.treeprint.digest_tree`) with its place in the run root.  The
    review cache keys a review by it (under the review's context), the ingest state a job
    partition's content, the ``new_job_dirs`` sensor a job directory, the trial pages a page.
    None when the trial cannot be listed or has more than ``MAX_TREE_ENTRIES`` entries.
    Nested trials (a directory holding trial markers) are left out: they are trials of their
    own.  A directory link is followed while it stays in the run root (the readers refuse the
    others: they count by their target)."""
    h = hashlib.sha256(enc(f"{ref.root}\0{ref.rel_path}\0{ref.job_key}\0{ref.layout}\n"))

    def descend(e: os.DirEntry[str], rel: str) -> bool:
        return (
            "/" in rel
            or e.name in TRIAL_ARTIFACT_DIRS
            or not any(os.path.lexists(os.path.join(e.path, m)) for m in TRIAL_MARKERS)
        )

    try:
        os.scandir(ref.path).close()  # an unlistable trial has no digest
        digest_tree(h, ref.path, descend=descend, follow=within(ref.root))
    except (OSError, TreeTooBig):
        return None
    _job_report_state(h, ref)
    return h.hexdigest()


def _job_report_state(h: Any, ref: TrialRef) -> None:
    """The job directory's ``review_report.json`` is read with the trial
    (:mod:`bf_assets.ingest.upstream`): its stat is part of the trial's digest."""
    from bf_assets.ingest.upstream import REVIEW_REPORT_FILE

    parent = os.path.dirname(ref.path.rstrip("/"))
    if not parent.startswith(ref.root.rstrip("/") + "/"):
        return
    try:
        st = os.stat(os.path.join(parent, REVIEW_REPORT_FILE))
    except OSError:
        return
    h.update(enc(f"job review report {st.st_size} {st.st_mtime_ns} {st.st_ino}\n"))


def _watched(ref: TrialRef, fingerprint: str | None) -> str:
    """What the ``new_job_dirs`` sensor compares a trial by: its :func:`trial_fingerprint`,
    so a file landing or changing anywhere in the trial (``artifacts/``, ``sessions/``, an
    agent's log folders) is a change; for a trial too big or unlistable for that, the names,
    sizes and times of its top-level, ``trajectory/``, ``verifier/`` and ``agent/`` files
    (one level down)."""
    if fingerprint is not None:
        return fingerprint
    return "inventory " + _inventory_print(ref.path)


def _inventory_print(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    for sub in ("", "trajectory", "verifier", *_agent_dirs(path)):
        d = Path(path) / sub if sub else Path(path)
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=True)
            except OSError:
                try:
                    st = e.stat(follow_symlinks=False)  # a dangling link
                except OSError:
                    continue
            if stat.S_ISDIR(st.st_mode):
                continue
            line = f"{sub}/{e.name}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\n"
            h.update(line.encode("utf-8", "surrogateescape"))
    return h.hexdigest()


AGENT_DIR = "agent"


def _agent_dirs(path: str | os.PathLike[str]) -> list[str]:
    """``agent`` and its folders (``agent/command-0``…), in name order; none without it."""
    try:
        with os.scandir(os.path.join(path, AGENT_DIR)) as it:
            entries = list(it)
    except OSError:
        return []
    subs = []
    for e in entries:
        try:
            if e.is_dir():
                subs.append(e.name)
        except OSError:
            continue
    return [AGENT_DIR, *(f"{AGENT_DIR}/{name}" for name in sorted(subs))]


def group_jobs(
    trials: Iterable[TrialRef], prints: Mapping[str, str | None] | None = None
) -> list[JobDir]:
    """The job directories of ``trials``, each with its fingerprint (from the trials'
    :func:`trial_fingerprint`; ``prints`` maps a trial's path to one already taken)."""
    by_key: dict[str, list[TrialRef]] = {}
    for t in trials:
        by_key.setdefault(t.job_key, []).append(t)
    jobs = []
    for key in sorted(by_key):
        refs = sorted(by_key[key], key=lambda t: t.rel_path)
        h = hashlib.sha256()
        for t in refs:
            fp = prints[t.path] if prints and t.path in prints else trial_fingerprint(t)
            h.update(enc(f"{t.rel_path}\0{_watched(t, fp)}\n"))
        jobs.append(
            JobDir(
                key=key,
                path=str(Path(refs[0].path).parent),
                n_trials=len(refs),
                fingerprint=h.hexdigest(),
            )
        )
    return jobs


def discover_jobs(roots: Sequence[str | os.PathLike[str]]) -> list[JobDir]:
    return group_jobs(discover_trials(roots))
