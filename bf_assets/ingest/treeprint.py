"""Stat digests of directory trees: what changed under a trial, a task tree, a job.

One walk, two users: the review cache and ``bf-assets release`` (is this trial as it was
when it was last reviewed?) and the ``new_job_dirs`` sensor (did anything land in this job
directory?).  A tree's digest covers every entry below it, depth first in name order: a
file by its mode, size, mtime, ctime and inode (``ctime`` moves on every write and cannot be
set back by a user, so a rewritten file is caught even when its mtime was restored), a link
by its target and the target's own ``stat``, a directory by whether it was entered.  No file
is opened.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from typing import Any

# A tree with more entries than this is not digested (the caller decides what that means).
MAX_TREE_ENTRIES = 200_000


class TreeTooBig(Exception):
    """The tree has more than :data:`MAX_TREE_ENTRIES` entries."""


def enc(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def stat_state(st: os.stat_result) -> str:
    return f"{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}"


def digest_tree(
    h: Any,
    base: str,
    *,
    descend: Callable[[os.DirEntry[str], str], bool],
    follow: Callable[[str], bool],
    on_link: Callable[[str], None] | None = None,
) -> None:
    """Feed ``h`` one line per entry under ``base``, depth first in name order.

    A file counts by its ``stat`` (a link adds its target and the target's ``stat``); a
    directory is entered when ``descend(entry, rel)`` says so, a linked one only when
    ``follow(path)`` does too, and each real directory (device and inode) at most once.
    ``on_link(rel)`` is told of every link met.  Raises :class:`TreeTooBig` past
    :data:`MAX_TREE_ENTRIES` entries."""
    try:
        top = os.stat(base)
    except OSError:
        h.update(b"unlistable\n")
        return
    seen = {(top.st_dev, top.st_ino)}
    stack = [(base, "")]
    count = 0
    while stack:
        d, prefix = stack.pop()
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            h.update(enc(f"{prefix}\0unlistable {exc.errno}\n"))
            continue
        for e in entries:
            count += 1
            if count > MAX_TREE_ENTRIES:
                raise TreeTooBig(base)
            rel = prefix + e.name
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            target = ""
            if stat.S_ISLNK(st.st_mode):
                if on_link is not None:
                    on_link(rel)
                try:
                    target = os.readlink(e.path)
                except OSError:
                    target = "?"
                try:
                    st = os.stat(e.path)
                except OSError:
                    h.update(enc(f"{rel}\0link {target}\0dangling\n"))
                    continue
                if stat.S_ISDIR(st.st_mode) and not follow(e.path):
                    h.update(enc(f"{rel}\0link {target}\0{stat_state(st)}\n"))
                    continue
            if stat.S_ISDIR(st.st_mode):
                key = (st.st_dev, st.st_ino)
                entered = key not in seen and descend(e, rel)
                h.update(enc(f"{rel}/\0link {target}\0{'in' if entered else 'out'}\n"))
                if entered:
                    seen.add(key)
                    stack.append((e.path, rel + "/"))
                continue
            h.update(enc(f"{rel}\0link {target}\0{stat_state(st)}\n"))


def within(root: str) -> Callable[[str], bool]:
    """Whether a path resolves inside ``root`` (the readers follow only such links)."""
    real_root = os.path.realpath(root)
    prefix = real_root.rstrip(os.sep) + os.sep

    def inside(p: str) -> bool:
        real = os.path.realpath(p)
        return real == real_root or real.startswith(prefix)

    return inside


def in_context(context: str, tree: str) -> str:
    """A tree digest under a context (what else the result depends on)."""
    return hashlib.sha256(enc(f"{context}\0{tree}")).hexdigest()
