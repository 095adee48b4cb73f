"""``posix_name`` is ``PurePosixPath(path).name`` (the task directory's name of a
``task_path``), with string operations only."""

from __future__ import annotations

import random
from pathlib import PurePosixPath

import pytest

from bf_assets.ingest.identity import posix_name

PARTS = ["a", "task-1", ".", "..", "/", "//", "x.y", " ", "", "é"]


@pytest.mark.parametrize("seed", range(20))
def test_posix_name_is_the_pure_path_name(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(500):
        path = "".join(rng.choice(PARTS) for _ in range(rng.randrange(0, 9)))
        assert posix_name(path) == PurePosixPath(path).name, path


@pytest.mark.parametrize(
    ("path", "name"),
    [("tasks/citation-check", "citation-check"), ("a/b/", "b"), ("a/.", "a"), ("/", ""), ("", "")],
)
def test_posix_name_examples(path: str, name: str) -> None:
    assert posix_name(path) == name


def test_escape_name_shortcut_for_printable_ascii_agrees_with_the_pattern() -> None:
    from bf_assets.ingest.readers import _PLAIN_NAME, escape_name

    codes = [*range(0x300), 0x85, 0xA0, 0x2028, 0xD800, 0xDC80, 0xDCFF, 0xDFFF, 0xFEFF, 0x10FFFF]
    for o in codes:
        name = f"ab{chr(o)}cd"
        assert (escape_name(name) == name) is (_PLAIN_NAME.match(name) is not None), hex(o)
    assert escape_name("") == ""
    assert escape_name("a\\b") == "a\\\\b"
