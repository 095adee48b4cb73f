"""The string-only path helpers and the lowercasing cache of the audits' prefilter give
exactly what the slower forms they replace gave."""

from __future__ import annotations

import itertools
from pathlib import PurePosixPath

from bf_assets.audit import prefilter
from bf_assets.audit.fileops import _last_part, _parts, hidden_kind
from bf_assets.audit.paths import _basename

ALPHABET = ["/", ".", "a", "..", "B", " ", "solve.sh", "tests"]


def _paths() -> list[str]:
    return ["".join(t) for n in range(6) for t in itertools.product(ALPHABET, repeat=n)]


def test_basename_is_purepath_name() -> None:
    for v in _paths():
        assert _basename(v) == (PurePosixPath(v).name if v.strip("/") else None), v
    assert _basename(None) is None and _basename(3) is None


def test_last_part_is_the_last_of_parts() -> None:
    for v in _paths():
        assert _last_part(v) == _parts(v)[1], v


def test_hidden_kind_roots_and_names() -> None:
    assert hidden_kind("/tests") == "/tests"
    assert hidden_kind("/tests/test_x.py") == "/tests"
    assert hidden_kind("/logs/verifier/out") == "/logs/verifier"
    assert hidden_kind("/testsuite/x") is None
    assert hidden_kind("/app/SOLVE.SH/") == "solve.sh"
    assert hidden_kind("/app/Expected_output.txt") == "expected*"
    assert hidden_kind("/app/answers") == "answer*"
    assert hidden_kind("/app/data.csv") is None


def test_may_contain_cache_never_changes_an_answer() -> None:
    texts = ["Cat TESTS", "nothing", "ſ is s", "x" * (prefilter._KEEP_CHARS + 1) + "Tests"]
    for _ in range(2):  # the second round is served from the cache
        for text in texts:
            for needles in (("tests",), ("dog", "cat"), ("zzz",)):
                want = (not text.isascii()) or any(n in text.lower() for n in needles)
                assert prefilter.may_contain(text, needles) == want
    for i in range(prefilter._LOWERED_MAX * 2):  # bounded
        prefilter.may_contain(f"text {i}", ("q",))
    assert len(prefilter._LOWERED) <= prefilter._LOWERED_MAX
