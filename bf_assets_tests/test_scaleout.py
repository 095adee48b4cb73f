"""Scale-out: a release split into partition ranges on two Celery workers publishes the same
bytes as the one-process ``bf-assets release`` (``bench/scaleout.py``).

The end-to-end test generates a four-job corpus (``bf_sample.generator``), runs
``bf-assets release`` on it (the reference), then the split of ``bench/scaleout.py``: a fresh
PostgreSQL database with the deploy profile shared by every process, a claimed Redis database
as broker, two ``dagster-celery`` workers (solo pool), the two partition ranges launched at once
as one ``dagster job execute`` run each, pinned to one worker each, then ``release_job``.  It
fails when a range is not exactly one run, when a step ran anywhere but in a worker (its engine
event's node and its ``STEP_START`` pid), or when any published file differs.  Skipped when
dagster-celery, redis-py, psycopg2, dagster-postgres, Redis or PostgreSQL is missing
(``$BF_TEST_REDIS_URL``, default ``redis://127.0.0.1:6379``; ``$BF_TEST_PG_HOST``/``_PORT``/
``_USER``).  The other tests need no service.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from benchkit import script_module

from bf_assets.defs.ranges import PARTITION, RANGE_END, RANGE_START, range_run_tags, split_ranges
from bf_sample.generator import generate_corpus

REPO_ROOT = Path(__file__).resolve().parents[1]
N_TRIALS = 310  # four jobs of 100, 100, 100 and 10 trials: two ranges of two jobs

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:dagster_celery.executor")


def _load_scaleout() -> ModuleType:
    return script_module("bf_scaleout", REPO_ROOT / "bench" / "scaleout.py")


scaleout = _load_scaleout()


# --------------------------------------------------------------------------- ranges


def test_split_ranges_are_consecutive_and_cover_every_partition() -> None:
    order = [f"jobs/{i:02d}" for i in range(7)]
    for n in range(1, 9):
        ranges = split_ranges(order, n)
        assert [k for r in ranges for k in r] == order
        assert len(ranges) == min(n, len(order)) and all(ranges)
    assert split_ranges(order, 2) == [order[:4], order[4:]]
    assert split_ranges([], 2) == []
    with pytest.raises(ValueError):
        split_ranges(order, 0)


def test_split_ranges_balance_trials() -> None:
    order = ["a", "b", "c", "d"]
    weights = {"a": 100, "b": 100, "c": 100, "d": 10}
    assert split_ranges(order, 2, weights) == [["a", "b"], ["c", "d"]]
    # one heavy job makes its own range
    assert split_ranges(order, 2, {"a": 1000, "b": 1, "c": 1, "d": 1}) == [["a"], ["b", "c", "d"]]
    # never an empty range, even when all the weight sits at the end
    assert split_ranges(order, 3, {"a": 0, "b": 0, "c": 0, "d": 9}) == [["a", "b"], ["c"], ["d"]]


def test_split_ranges_bound_the_trials_of_a_range() -> None:
    """A range's run holds every trial of it: with ``max_weight`` no range passes it (unless
    one job alone does), however few ranges were asked for, and still at least that many."""
    import random

    rng = random.Random(7)
    for _ in range(300):
        order = [f"jobs/{i:03d}" for i in range(rng.randint(1, 60))]
        weights = {k: rng.choice([0, 1, 10, 100, 250, 900, 3000]) for k in order}
        n = rng.randint(1, 5)
        most = rng.choice([1, 50, 500, 2000])
        ranges = split_ranges(order, n, weights, most)
        assert [k for r in ranges for k in r] == order and all(ranges)
        assert len(ranges) >= min(n, len(order))
        for r in ranges:
            assert len(r) == 1 or sum(weights[k] for k in r) <= most, (r, most)
    # 100,000 trials in jobs of 100, two workers: 50 ranges of 2,000, not two of 50,000
    jobs = [f"jobs/{i:04d}" for i in range(1000)]
    ranges = split_ranges(jobs, 2, dict.fromkeys(jobs, 100), 2000)
    assert [len(r) for r in ranges] == [20] * 50
    # no bound: exactly the ranges asked for
    assert len(split_ranges(jobs, 2, dict.fromkeys(jobs, 100))) == 2
    with pytest.raises(ValueError):
        split_ranges(jobs, 2, None, 0)


def test_ingest_run_trials_is_one_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scale-out's ranges and ``bf-assets release``'s runs read one bound."""
    from bf_assets.cli import release
    from bf_assets.defs import ranges

    assert release.ingest_run_trials is ranges.ingest_run_trials
    monkeypatch.delenv(ranges.INGEST_RUN_TRIALS_ENV, raising=False)
    assert ranges.ingest_run_trials() == ranges.DEFAULT_INGEST_RUN_TRIALS
    for raw, want in (("150", 150), ("0", 1), ("many", ranges.DEFAULT_INGEST_RUN_TRIALS)):
        monkeypatch.setenv(ranges.INGEST_RUN_TRIALS_ENV, raw)
        assert ranges.ingest_run_trials() == want
    monkeypatch.setenv(ranges.INGEST_RUN_TRIALS_ENV, "150")
    assert ranges._bound(None) == 150 and ranges._bound(0) is None and ranges._bound(40) == 40


def test_range_run_tags() -> None:
    assert range_run_tags(["a", "b", "c"]) == {RANGE_START: "a", RANGE_END: "c"}
    assert range_run_tags(["a"]) == {PARTITION: "a"}
    with pytest.raises(ValueError):
        range_run_tags([])


# --------------------------------------------------------------------------- the checks


def _run(job: str, rng: list[str] | None, steps: dict[str, dict[str, Any]], queue: str) -> dict:
    return {
        "run_id": f"{job}-{rng}",
        "job": job,
        "status": "SUCCESS",
        "range": rng,
        "queue": queue,
        "steps": steps,
    }


PIDS = {"bf-w1": 101, "bf-w2": 102}
PINNED = {"bf-w1-only": "bf-w1", "bf-w2-only": "bf-w2"}
RANGES = [["a", "b"], ["c", "d"]]


def _good_runs() -> list[dict]:
    return [
        _run(
            "ingest_job",
            ["a", "b"],
            {
                "ingest_trials": {"worker": "bf-w1@h", "pid": 101},
                "trial_rows": {"worker": "bf-w1@h", "pid": 101},
            },
            "bf-w1-only",
        ),
        _run(
            "ingest_job",
            ["c", "d"],
            {
                "ingest_trials": {"worker": "bf-w2@h", "pid": 102},
                "trial_rows": {"worker": "bf-w2@h", "pid": 102},
            },
            "bf-w2-only",
        ),
        _run(
            "release_job",
            None,
            {
                "review": {"worker": "bf-w2@h", "pid": 102},
                "publish": {"worker": "bf-w1@h", "pid": 101},
            },
            "dagster",
        ),
    ]


def test_check_on_workers_accepts_a_split_on_the_workers() -> None:
    assert (
        scaleout.check_on_workers(_good_runs(), PIDS, expected_ranges=RANGES, pinned=PINNED) == []
    )


def test_check_on_workers_flags_what_did_not_run_on_a_worker() -> None:
    def problems(runs: list[dict]) -> list[str]:
        return scaleout.check_on_workers(runs, PIDS, expected_ranges=RANGES, pinned=PINNED)

    runs = _good_runs()
    runs[2]["steps"]["publish"] = {"worker": None, "pid": 999}  # in the run worker
    assert any("publish ran in pid 999" in p for p in problems(runs))

    runs = _good_runs()
    runs[0]["steps"]["ingest_trials"] = {"worker": "bf-w2@h", "pid": 102}  # off its pinned worker
    assert any("pinned to bf-w1" in p for p in problems(runs))

    runs = _good_runs()
    runs[1] = _run("ingest_job", ["c", "c"], runs[1]["steps"], "bf-w2-only")
    runs.append(_run("ingest_job", ["d", "d"], runs[1]["steps"], "bf-w2-only"))
    assert any("not one run per range" in p for p in problems(runs))

    runs = _good_runs()  # both ranges' rows built on one worker
    runs[1]["steps"]["trial_rows"] = {"worker": "bf-w1@h", "pid": 101}
    assert "ingest step trial_rows ran on ['bf-w1'] only" in problems(runs)

    runs = _good_runs()
    runs[2]["status"] = "FAILURE"
    assert any("status FAILURE" in p for p in problems(runs))


def test_compare_trees_finds_a_changed_byte(tmp_path: Path) -> None:
    for side in ("a", "b"):
        (tmp_path / side / "data").mkdir(parents=True)
        (tmp_path / side / "data" / "train.parquet").write_bytes(b"PAR1" + b"\0" * 100)
        (tmp_path / side / "README.md").write_text("card\n")
    assert scaleout.compare_trees(tmp_path / "a", tmp_path / "b").same
    (tmp_path / "b" / "data" / "train.parquet").write_bytes(b"PAR1" + b"\0" * 99 + b"\1")
    (tmp_path / "b" / "extra").write_text("x")
    cmp = scaleout.compare_trees(tmp_path / "a", tmp_path / "b")
    assert not cmp.same
    assert cmp.differ == ["data/train.parquet"] and cmp.only_b == ["extra"]


# --------------------------------------------------------------------------- end to end


def _pg_users() -> list[str]:
    users = [os.environ.get("BF_TEST_PG_USER", ""), "postgres", "root", os.environ.get("USER", "")]
    return list(dict.fromkeys(u for u in users if u))


@pytest.fixture
def services() -> Iterator[tuple[Any, str]]:
    """A fresh PostgreSQL database and an empty Redis database, or skip."""
    for module in ("dagster_celery", "redis", "psycopg2", "dagster_postgres"):
        pytest.importorskip(module)
    host = os.environ.get("BF_TEST_PG_HOST", "127.0.0.1")
    port = int(os.environ.get("BF_TEST_PG_PORT", "5432"))
    redis_url = os.environ.get("BF_TEST_REDIS_URL", "redis://127.0.0.1:6379")
    with contextlib.ExitStack() as stack:
        errors = []
        pg = None
        for user in _pg_users():
            try:
                pg = stack.enter_context(scaleout.postgres_database(host, port, user))
                break
            except scaleout.ScaleoutError as exc:
                errors.append(str(exc).splitlines()[0])
        if pg is None:
            pytest.skip(f"PostgreSQL not usable: {'; '.join(errors)}")
        try:
            broker = stack.enter_context(scaleout.redis_database(redis_url))
        except scaleout.ScaleoutError as exc:
            pytest.skip(str(exc))
        yield pg, broker


def test_split_on_two_celery_workers_publishes_the_same_bytes(
    services: tuple[Any, str], tmp_path: Path
) -> None:
    pg, broker = services
    generate_corpus(tmp_path / "corpus", N_TRIALS, seed=0)
    jobs = tmp_path / "corpus" / "jobs"
    assert len(list(jobs.iterdir())) == 4

    one = scaleout.run_one_process(jobs, tmp_path / "A", timeout_s=600)
    assert one.usage.exit_code == 0 and one.exported, one  # published (exit 0), rows exported
    split = scaleout.run_split(jobs, tmp_path / "B", pg, broker, timeout_s=600)

    # two ranges of two partitions, each exactly one run, each on its own worker
    assert [r.partitions for r in split.ranges] == [
        sorted(p.relative_to(jobs.parent).as_posix() for p in jobs.iterdir())[i : i + 2]
        for i in (0, 2)
    ]
    assert split.problems == [], split.problems
    ingest = [r for r in split.runs if r["job"] == "ingest_job"]
    assert len(ingest) == 2 and all(r["steps"] for r in ingest)
    steps = {s for r in split.runs for s in r["steps"]}
    assert "ingest_trials" in steps and "published_dataset" in steps
    # the per-trial work (the review, the rows) ran on both workers; the release step only
    # assembles the rows the partitions built
    for step in scaleout.PER_TRIAL_STEPS:
        on = {
            split.runs[i]["steps"][step]["worker"].split("@")[0]
            for i in range(len(split.runs))
            if step in split.runs[i]["steps"]
        }
        assert on == {"bf-w1", "bf-w2"}, (step, on)

    cmp = scaleout.compare_trees(Path(one.out), Path(split.out))
    assert cmp.same, (cmp.differ, cmp.only_a, cmp.only_b)
    published = scaleout._files(Path(split.out).resolve())
    assert "meta/manifest.json" in published
    assert any(rel.startswith("data/") and rel.endswith(".parquet") for rel in published)
    assert scaleout.exported_rows(Path(split.out)) == one.exported
