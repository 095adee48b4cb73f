"""The verifier's test report: ``verifier/ctrf.json`` (Common Test Report Format).

A task's ``test.sh`` writes it with ``pytest --ctrf /logs/verifier/ctrf.json`` (Benchflow does
not; Harbor trials carry it too): ``results{tool, summary{tests, passed, failed, skipped,
pending, other}, tests[{name, status, ...}]}``.  Only the counts and the names of the tests
that did not pass are kept: the trial's story, not its test log.  A report that cannot be
read is no finding (the file is optional and never the verifier's score): its counts stay
unknown and :attr:`CtrfFacts.problem` says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CTRF_FILE = "verifier/ctrf.json"
MAX_FAILING = 20  # names of failing tests kept
MAX_NAME = 200  # characters of one test name kept
FAILING_STATUSES = frozenset({"failed", "error", "broken"})


@dataclass(slots=True)
class CtrfFacts:
    total: int | None = None
    passed: int | None = None
    failed: int | None = None
    skipped: int | None = None
    failing: list[str] = field(default_factory=list)  # names, at most MAX_FAILING
    problem: str | None = None


def _count(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def ctrf_facts(value: Any) -> CtrfFacts:
    """The counts and failing test names of a parsed CTRF document."""
    results = value.get("results") if isinstance(value, dict) else None
    if not isinstance(results, dict):
        return CtrfFacts(problem="no 'results' object (not a CTRF report)")
    facts = CtrfFacts()
    tests = results.get("tests")
    tests = tests if isinstance(tests, list) else []
    statuses = [t.get("status") for t in tests if isinstance(t, dict)]
    summary = results.get("summary")
    if isinstance(summary, dict):
        facts.total = _count(summary.get("tests"))
        facts.passed = _count(summary.get("passed"))
        facts.failed = _count(summary.get("failed"))
        facts.skipped = _count(summary.get("skipped"))
    if facts.total is None and tests:
        facts.total = len(statuses)
    if facts.passed is None and tests:
        facts.passed = sum(s == "passed" for s in statuses)
    if facts.failed is None and tests:
        facts.failed = sum(s in FAILING_STATUSES for s in statuses)
    if facts.skipped is None and tests:
        facts.skipped = sum(s == "skipped" for s in statuses)
    for t in tests:
        if len(facts.failing) >= MAX_FAILING:
            break
        if isinstance(t, dict) and t.get("status") in FAILING_STATUSES:
            name = t.get("name")
            if isinstance(name, str) and name.strip():
                facts.failing.append(name.strip()[:MAX_NAME])
    if facts.total is None:
        facts.problem = "no test summary and no tests"
    return facts
