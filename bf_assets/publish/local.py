"""Publishing into a local folder, all or nothing.

``--out DIR`` is a symbolic link to one complete release directory in ``DIR.releases/``:

1. the new release is written in full into ``DIR.releases/.tmp-<unique>`` (hard links to the
   staged bundle where the filesystem allows, copies otherwise), every file checked against
   the manifest, then renamed to ``DIR.releases/<manifest sha256[:16]>``;
2. a new link is made beside ``DIR`` and renamed over it: one ``rename(2)``, so at any
   instant ``DIR`` is the old release or the new one, never a mix;
3. releases other than the current and the previous one are removed.

:meth:`LocalFolderTarget.staged` splits this in two (step 1, then ``switch()`` for steps 2
and 3), so that the Hub is published and verified in between: a stage left without switching
leaves ``DIR`` as it was and removes the release directory it wrote.

A kill at any point leaves ``DIR`` on the previous complete release; the next run removes the
leftovers (``.tmp-*`` directories, stray links).  A full disk or a permission error while
writing leaves ``DIR`` untouched and raises :class:`PublishError` with the reason.  One
publisher at a time: an exclusive lock on ``.DIR.lock`` beside the folder.

Entries of the current release that the publisher does not own (anything but ``README.md``,
``LICENSE``, ``data/``, ``meta/``, ``report/`` and whatever else the bundle holds) are
carried over into the new release.  A ``DIR`` that
is still a plain folder (an older layout) is swapped for the link atomically with
``renameat2(RENAME_EXCHANGE)`` where the kernel has it, and kept as the previous release.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

from bf_assets.files import exclusive_lock
from bf_assets.publish.manifest import MANIFEST_PATH
from bf_assets.publish.shards import sha256_file
from bf_assets.publish.targets import (
    OWNED_DIRS,
    OWNED_FILES,
    BundleFiles,
    PublishError,
    PublishResult,
)

RELEASES_SUFFIX = ".releases"
TMP_PREFIX = ".tmp-"
KEEP_RELEASES = 2  # the current release and the one before it
_OWNED_TOP = {*OWNED_FILES, *OWNED_DIRS}


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2`` with ``RENAME_EXCHANGE``)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return rc == 0


def _place(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        shutil.copyfile(src, dst)


def _carry(src: Path, dst: Path) -> None:
    """A foreign entry of the current release, into the new one (linked where possible)."""
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
    elif src.is_dir():
        shutil.copytree(src, dst, symlinks=True, copy_function=_link_or_copy)
    else:
        _place(src, dst)


def _link_or_copy(src: str, dst: str) -> None:
    _place(Path(src), Path(dst))


class LocalFolderTarget:
    """Publish a verified bundle into a local folder (default ``data/published``)."""

    def __init__(self, path: str | Path, *, keep: int = KEEP_RELEASES) -> None:
        self.path = Path(os.path.abspath(path))
        self.store = self.path.parent / f"{self.path.name}{RELEASES_SUFFIX}"
        self.lock_path = self.path.parent / f".{self.path.name}.lock"
        self.keep = max(1, keep)

    # -- what is there now
    def current(self) -> Path | None:
        """The directory ``--out`` shows now (a release directory or a plain folder)."""
        if self.path.is_symlink():
            target = self.path.resolve()
            return target if target.is_dir() else None
        if self.path.is_dir():
            return self.path
        if self.path.exists():
            raise PublishError(f"{self.path} exists and is not a folder")
        return None

    @staticmethod
    def _holds(folder: Path, bundle: BundleFiles, *, full: bool) -> bool:
        """Does ``folder`` hold exactly the bundle's files?  Release directories are written
        once, so sizes and the manifest's checksum decide; a plain folder is hashed."""
        for rel, (sha, size) in bundle.files.items():
            p = folder / rel
            if not p.is_file() or p.stat().st_size != size:
                return False
            if (full or rel == MANIFEST_PATH) and sha256_file(p) != sha:
                return False
        return True

    def check(self) -> None:
        """The preconditions, before anything is written: ``--out`` is a folder, a link to
        one, or absent, and its parent can be written."""
        if self.path.exists() and not self.path.is_dir():
            raise PublishError(f"{self.path} exists and is not a folder")
        parent = self.path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not os.access(parent, os.W_OK | os.X_OK):
            raise PublishError(f"{parent} is not writable: cannot publish into {self.path}")

    # -- publishing
    def publish(self, bundle_dir: Path, tag: str | None = None) -> PublishResult:
        with self.staged(bundle_dir, tag) as release:
            return release.switch()

    @contextmanager
    def staged(self, bundle_dir: Path, tag: str | None = None) -> Iterator[StagedRelease]:
        """The new release written in full and checked beside ``--out``, not shown yet:
        :meth:`StagedRelease.switch` makes ``--out`` show it (one rename).  Leaving the block
        without switching leaves ``--out`` as it was and removes what this call wrote.  The
        folder's lock is held throughout; raises :class:`PublishError` (``--out`` untouched)."""
        bundle = BundleFiles.read(bundle_dir)  # raises when the bundle is not what it says
        with ExitStack() as stack:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                stack.enter_context(exclusive_lock(self.lock_path))
                release = self._stage(bundle, tag)
            except OSError as exc:
                raise self._error(exc) from None
            stack.callback(release.discard)
            yield release

    def _error(self, exc: OSError, doing: str = "publish into") -> PublishError:
        return PublishError(
            f"could not {doing} {self.path}: {exc.strerror or exc}"
            f"{f' ({exc.filename})' if exc.filename else ''}; the previous release is "
            "untouched"
        )

    def _stage(self, bundle: BundleFiles, tag: str | None) -> StagedRelease:
        self._clean_leftovers()
        cur = self.current()
        if cur is not None and self._holds(cur, bundle, full=cur == self.path):
            return StagedRelease(self, bundle, tag, None, written=False)
        self.store.mkdir(parents=True, exist_ok=True)
        final = self.store / bundle.manifest_sha256[:16]
        written = False
        if not (final.is_dir() and self._holds(final, bundle, full=False)):
            self._write_release(bundle, cur, final)
            written = True
        return StagedRelease(self, bundle, tag, final, written=written)

    def _write_release(self, bundle: BundleFiles, cur: Path | None, final: Path) -> None:
        tmp = self.store / f"{TMP_PREFIX}{uuid.uuid4().hex}"
        try:
            tmp.mkdir()
            for rel in bundle.ordered():
                _place(bundle.root / rel, tmp / rel)
            if cur is not None:
                ours = _OWNED_TOP | {rel.split("/", 1)[0] for rel in bundle.files}
                for entry in sorted(cur.iterdir()):
                    if entry.name not in ours and not entry.name.startswith("."):
                        _carry(entry, tmp / entry.name)
            for rel, (sha, _) in bundle.files.items():
                if sha256_file(tmp / rel) != sha:
                    raise PublishError(f"verification failed: {rel} does not match the manifest")
            if final.exists():  # an incomplete directory of that name: not a release
                shutil.rmtree(final)
            os.rename(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    def _switch_link(self, final: Path) -> Path | None:
        """Point ``--out`` at the release directory ``final`` (a new link renamed over the
        old one: a switch of directories, not a file write); return the directory it showed
        before."""
        link = self.path.parent / f".{self.path.name}.link-{uuid.uuid4().hex}"
        os.symlink(os.path.relpath(final, self.path.parent), link)
        try:
            if self.path.is_symlink() or not self.path.exists():
                before = self.path.resolve() if self.path.is_symlink() else None
                os.replace(link, self.path)  # the one atomic step
                return before
            # an older plain folder: exchange it with the link, keep it as the previous release
            legacy = self.store / f"folder-{uuid.uuid4().hex[:12]}"
            if _exchange(link, self.path):
                os.rename(link, legacy)
            else:  # no RENAME_EXCHANGE: a moment without DIR, once, on the first release
                os.rename(self.path, legacy)
                os.replace(link, self.path)
            return legacy
        finally:
            if link.is_symlink():
                link.unlink()

    def _clean_leftovers(self) -> None:
        """What a killed run left: half-written release directories and stray links."""
        if self.store.is_dir():
            for p in self.store.iterdir():
                if p.name.startswith(TMP_PREFIX):
                    shutil.rmtree(p, ignore_errors=True)
        for p in self.path.parent.glob(f".{self.path.name}.link-*"):
            if p.is_symlink():
                p.unlink()

    def _prune(self, keep: set[Path]) -> None:
        if not self.store.is_dir():
            return
        keep_resolved = {p.resolve() for p in keep}
        dirs = [p for p in self.store.iterdir() if p.is_dir() and not p.name.startswith(".")]
        dirs.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        kept = [p for p in dirs if p.resolve() in keep_resolved][: self.keep]
        for p in dirs:
            if p not in kept:
                shutil.rmtree(p, ignore_errors=True)


class StagedRelease:
    """A release written beside ``--out`` (:meth:`LocalFolderTarget.staged`); ``final`` is
    None when ``--out`` already shows the bundle."""

    def __init__(
        self,
        target: LocalFolderTarget,
        bundle: BundleFiles,
        tag: str | None,
        final: Path | None,
        *,
        written: bool,
    ) -> None:
        self.target = target
        self.bundle = bundle
        self.tag = tag
        self.final = final
        self.written = written  # this stage wrote ``final`` (not a leftover of an earlier run)
        self.switched = False

    @property
    def changed(self) -> bool:
        return self.final is not None

    def switch(self) -> PublishResult:
        """Make ``--out`` show the release (one atomic rename), prune old releases."""
        t = self.target
        if self.final is not None:
            try:
                previous = t._switch_link(self.final)
            except OSError as exc:
                raise t._error(exc, "switch") from None
            self.switched = True
            with suppress(OSError):  # the switch is done; an old release left is harmless
                t._prune(keep={self.final, *([previous] if previous is not None else [])})
        self.switched = True
        return PublishResult(
            target="local",
            location=str(t.path),
            changed=self.changed,
            files=len(self.bundle.files),
            manifest_sha256=self.bundle.manifest_sha256,
            verified=True,
            tag=self.tag,
        )

    def discard(self) -> None:
        """Unless switched: remove what this stage wrote (``--out`` never showed it)."""
        final = self.final
        if self.switched or not self.written or final is None or not final.is_dir():
            return
        with suppress(OSError, PublishError):
            if self.target.current() != final.resolve():
                shutil.rmtree(final, ignore_errors=True)


def check_targets(out: str | Path, hub_repo: str | None, *, token: str | None = None) -> None:
    """Every publish precondition, before any work starts: a writable output folder and,
    with ``hub_repo``, a token in ``HF_TOKEN`` and a valid repo id (raises
    :class:`PublishError`)."""
    LocalFolderTarget(out).check()
    if hub_repo:
        from bf_assets.publish.hub import HubTarget

        HubTarget(hub_repo, token=token).check()
