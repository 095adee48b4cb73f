"""Experiment coverage: which planned slots have their healthy latest trial.

Rules (``checks.md`` §2 dataset level, ``plan-format.md``):

* A slot is a planned cell plus a trial index ``1..trials``.  All model attempts of a cell
  are pooled (retries and repeats alike): the healthy ones, newest first (``started_at``
  through ``datetime.fromisoformat``, naive = UTC, unknown = oldest; ties broken by rollout
  then job), fill the slots in order.  Slots left over take the newest unhealthy attempts
  (state ``unhealthy``, ``COVERAGE_UNHEALTHY``), then stay ``missing`` (``COVERAGE_MISSING``);
  both are blockers for a ``required`` cell, warnings otherwise.  An infra-failed attempt
  (unhealthy with attribution ``experiment_fidelity``, a ``GATE_INFRA_ERROR``, or
  ``incomplete``) followed by a newer healthy attempt of its cell is that attempt's retry's
  predecessor: it never fills a slot.  Every attempt that fills nothing is *superseded*
  (``COVERAGE_DUPLICATE`` info on it) and is attached, round-robin, to the cell's slots,
  which then carry the ``duplicate`` marker.
* Stale (``COVERAGE_STALE`` warning on the trial): the sha after ``@`` in ``source_ref``
  differs from the plan's ``resolved_sha`` (a prefix of at least 7 characters matches), or
  the repo before ``@`` is another than the plan's; without a plan source the sha is compared
  with the newest attempt of the same cell that records one.  The ``task_digest`` is always
  compared with the newest attempt of the cell that records one.  A trial recording neither
  cannot be judged (``PROVENANCE_MISSING`` is the gate's finding).  A slot whose filling
  trial is stale has state ``stale``: it is still filled and exported (a warning never
  changes a verdict) but does not count toward ``coverage_ratio``, which is fresh healthy
  slots over planned slots.
* Trials of a cell the plan does not list are ``unplanned``: reported, never exported.
  Without a plan the cells are the observed ones, none required, and every attempt of a
  cell is a trial of its own (benchmarks run k attempts on purpose: pass@k): ``trials`` is
  the number of its attempts but the infra-failed ones a healthy retry followed.  Only a
  plan asks for fewer (``trials: 1``: the newest healthy attempt; the others superseded).
* Oracle and no-op trials are probe lanes, not model data.  ``TASK_ORACLE_FAILED``: an
  oracle reward (``oracle_rewards[task]``, given by the caller: reviews carry no reward)
  below 1.0 or missing.  ``TASK_NOOP_PASSED``: a ``nop``/``null``/``noop`` trial whose
  outcome is ``pass``, or a ``noop_rewards[task]`` value >= 1.0.  Both put a blocker on
  every model trial of the task.  ``oracle_tasks`` / ``noop_tasks`` name the tasks whose
  probe produced a score; for the others both probes stay residual risk.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bf_assets.contract import Outcome, Severity
from bf_assets.dataset.common import (
    Cell,
    TrialKey,
    cell_of,
    is_model_trial,
    is_noop,
    newest_first,
    show_key,
    trial_key,
)
from bf_assets.dataset.plan import Plan, PlannedCell
from bf_assets.findings import Finding, finding, sort_findings
from bf_assets.review.record import TrialReview

HEALTHY, STALE, UNHEALTHY, MISSING, UNPLANNED = (
    "healthy",
    "stale",
    "unhealthy",
    "missing",
    "unplanned",
)
DUPLICATE = "duplicate"  # a marker on a slot (it has superseded attempts), not a fill state
FILLED = frozenset({HEALTHY, STALE})
RewardMap = Mapping[str, Sequence[float | None]]


@dataclass(frozen=True, slots=True)
class SlotRow:
    cell: Cell
    trial_index: int
    state: str
    trial: TrialKey | None  # the filling attempt (or the unhealthy / unplanned one shown)
    attempts: int  # model attempts of the cell
    required: bool
    planned: bool
    superseded: tuple[TrialKey, ...] = ()

    @property
    def duplicate(self) -> bool:
        return bool(self.superseded)

    def label(self) -> str:
        return f"{self.cell.label()} #{self.trial_index}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.cell.task,
            "harness": self.cell.harness,
            "model": self.cell.model,
            "skill_mode": self.cell.skill_mode,
            "sandbox": self.cell.sandbox,
            "trial_index": self.trial_index,
            "state": self.state,
            "duplicate": self.duplicate,
            "trial": list(self.trial) if self.trial else None,
            "attempts": self.attempts,
            "required": self.required,
            "planned": self.planned,
            "superseded": [list(k) for k in self.superseded],
        }


@dataclass(slots=True)
class Coverage:
    plan: Plan | None
    rows: list[SlotRow]
    trial_findings: dict[TrialKey, list[Finding]]
    findings: list[Finding]  # dataset level: one per slot or task
    stale: dict[TrialKey, str]
    superseded: list[TrialKey]
    unplanned: list[TrialKey]
    oracle_tasks: set[str] = field(default_factory=set)
    noop_tasks: set[str] = field(default_factory=set)
    min_coverage: float | None = None
    summary: dict[str, int] = field(default_factory=dict)

    @property
    def coverage_ratio(self) -> float | None:
        expected = self.summary.get("expected", 0)
        return None if expected == 0 else self.summary.get(HEALTHY, 0) / expected

    @property
    def below_floor(self) -> bool:
        if self.min_coverage is None:
            return False
        ratio = self.coverage_ratio
        return ratio is None or ratio < self.min_coverage

    @property
    def filled(self) -> dict[TrialKey, SlotRow]:
        """Trials that fill a planned slot: the only export candidates."""
        return {r.trial: r for r in self.rows if r.state in FILLED and r.trial is not None}

    def blocking_rows(self) -> list[SlotRow]:
        return [r for r in self.rows if r.required and r.state in (MISSING, UNHEALTHY)]

    def planned_rows(self) -> list[SlotRow]:
        return [r for r in self.rows if r.planned]


def _sha_and_repo(source_ref: str | None) -> tuple[str | None, str | None]:
    if not source_ref:
        return None, None
    if "@" in source_ref:
        repo, sha = source_ref.rsplit("@", 1)
        return (sha.strip().lower() or None), (repo.strip() or None)
    return source_ref.strip().lower() or None, None


def _same_sha(a: str, b: str) -> bool:
    a, b = a.lower(), b.lower()
    if a == b:
        return True
    short = min(len(a), len(b))
    return short >= 7 and (a.startswith(b) or b.startswith(a))


def _norm_repo(repo: str) -> str:
    r = repo.strip().lower()
    for prefix in ("https://", "http://", "ssh://", "git@"):
        r = r.removeprefix(prefix)
    r = r.replace("github.com:", "github.com/").removeprefix("github.com/")
    return r.removesuffix("/").removesuffix(".git")


def _same_repo(a: str, b: str) -> bool:
    x, y = _norm_repo(a), _norm_repo(b)
    return x == y or x.endswith("/" + y) or y.endswith("/" + x)


def _stale_reason(
    r: TrialReview, ref_sha: str | None, ref_repo: str | None, ref_digest: str | None, vs: str
) -> str | None:
    sha, repo = _sha_and_repo(r.identity.source_ref)
    if sha and ref_sha and not _same_sha(sha, ref_sha):
        return f"source sha {sha[:12]} differs from {vs} {ref_sha[:12]}"
    if repo and ref_repo and not _same_repo(repo, ref_repo):
        return f"source repo {repo} differs from the plan's {ref_repo}"
    digest = r.identity.task_digest
    if digest and ref_digest and digest != ref_digest:
        return f"task digest {digest[:12]} differs from the newest attempt's {ref_digest[:12]}"
    return None


def _stale_trials(
    by_cell: Mapping[Cell, list[TrialReview]], plan: Plan | None
) -> dict[TrialKey, str]:
    src = plan.source if plan is not None else None
    out: dict[TrialKey, str] = {}
    for attempts in by_cell.values():
        ordered = newest_first(attempts)
        newest_sha = next(
            (s for s in (_sha_and_repo(a.identity.source_ref)[0] for a in ordered) if s), None
        )
        newest_digest = next(
            (a.identity.task_digest for a in ordered if a.identity.task_digest), None
        )
        if src is not None and src.resolved_sha:
            ref_sha, vs = src.resolved_sha.lower(), "the plan's resolved_sha"
        else:
            ref_sha, vs = newest_sha, "the newest attempt's"
        ref_repo = src.repo if src is not None else None
        for a in ordered:
            why = _stale_reason(a, ref_sha, ref_repo, newest_digest, vs)
            if why:
                out[trial_key(a)] = why
    return out


def _infra_failed(r: TrialReview) -> bool:
    """An attempt the experiment broke (a rerun is its remedy), not the model."""
    if r.healthy:
        return False
    if r.outcome == Outcome.INCOMPLETE or r.attribution == "experiment_fidelity":
        return True
    return any(f.check == "GATE_INFRA_ERROR" for f in r.findings)


def retried_attempts(attempts: list[TrialReview]) -> set[TrialKey]:
    """The infra-failed attempts of one cell that a newer healthy attempt followed."""
    out: set[TrialKey] = set()
    healthy_seen = False
    for a in newest_first(attempts):
        if a.healthy:
            healthy_seen = True
        elif healthy_seen and _infra_failed(a):
            out.add(trial_key(a))
    return out


def _fill_cell(
    pc: PlannedCell,
    attempts: list[TrialReview],
    stale: Mapping[TrialKey, str],
    retried: set[TrialKey] | frozenset[TrialKey] = frozenset(),
) -> tuple[list[SlotRow], list[TrialKey]]:
    ordered = newest_first(attempts)
    healthy = [a for a in ordered if a.healthy]
    others = [a for a in ordered if not a.healthy and trial_key(a) not in retried]
    replaced = [a for a in ordered if not a.healthy and trial_key(a) in retried]
    fill: list[tuple[str, TrialReview | None]] = []
    used_other = 0
    for i in range(pc.trials):
        if i < len(healthy):
            key = trial_key(healthy[i])
            fill.append((STALE if key in stale else HEALTHY, healthy[i]))
        elif used_other < len(others):
            fill.append((UNHEALTHY, others[used_other]))
            used_other += 1
        else:
            fill.append((MISSING, None))
    surplus = [trial_key(a) for a in healthy[pc.trials :] + others[used_other:] + replaced]
    attached: list[list[TrialKey]] = [[] for _ in range(pc.trials)]
    for n, key in enumerate(surplus):
        attached[n % pc.trials].append(key)
    rows = [
        SlotRow(
            cell=pc.cell,
            trial_index=i + 1,
            state=state,
            trial=None if rev is None else trial_key(rev),
            attempts=len(attempts),
            required=pc.required,
            planned=True,
            superseded=tuple(attached[i]),
        )
        for i, (state, rev) in enumerate(fill)
    ]
    return rows, surplus


def _failed_probe(values: Sequence[float | None], *, oracle: bool) -> list[float | None]:
    if oracle:
        return [v for v in values if v is None or v < 1.0]
    return [v for v in values if v is not None and v >= 1.0]


def _probe_findings(
    reviews: Sequence[TrialReview],
    model: Sequence[TrialReview],
    oracle_rewards: RewardMap | None,
    noop_rewards: RewardMap | None,
) -> tuple[list[Finding], dict[TrialKey, list[Finding]], set[str], set[str]]:
    noop: dict[str, list[float | None]] = defaultdict(list)
    for task, values in (noop_rewards or {}).items():
        noop[task].extend(values)
    for r in reviews:
        if is_noop(r) and r.identity.task_id:
            scored = {Outcome.PASS: 1.0, Outcome.FAIL: 0.0, Outcome.NORMAL_TIMEOUT: 0.0}
            noop[r.identity.task_id].append(scored.get(r.outcome))
    # tasks whose probe actually produced a score (an errored probe proves nothing)
    oracle_tasks = {t for t, vs in (oracle_rewards or {}).items() if any(v is not None for v in vs)}
    noop_tasks = {t for t, vs in noop.items() if any(v is not None for v in vs)}
    dataset: list[Finding] = []
    per_trial: dict[TrialKey, list[Finding]] = defaultdict(list)
    probes = [("TASK_ORACLE_FAILED", oracle_rewards or {}, True), ("TASK_NOOP_PASSED", noop, False)]
    for check, table, is_oracle_lane in probes:
        for task in sorted(table):
            bad = _failed_probe(list(table[task]), oracle=is_oracle_lane)
            if not bad:
                continue
            what = (
                "the oracle lane scored below 1.0 (or not at all)"
                if is_oracle_lane
                else "a no-op agent lane scored 1.0"
            )
            msg = f"task {task}: {what}; no model result of this task can be trusted"
            victims = [r for r in model if r.identity.task_id == task]
            dataset.append(finding(check, msg, evidence={"task": task, "rewards": bad}))
            shared = finding(check, msg, evidence={"rewards": bad})  # one object, every victim
            for r in victims:
                per_trial[trial_key(r)].append(shared)
    return dataset, per_trial, oracle_tasks, noop_tasks


def shared_lists(per_trial: dict[TrialKey, list[Finding]]) -> dict[TrialKey, list[Finding]]:
    """Each trial's findings sorted; equal lists are one list object (many trials of a task
    share the same probe finding).  The lists are never written to.  In place (a second map
    of every trial would double the peak): returns ``per_trial``."""
    seen: dict[tuple[Finding, ...], list[Finding]] = {}
    for key, fs in per_trial.items():
        ordered = sort_findings(fs)
        per_trial[key] = seen.setdefault(tuple(ordered), ordered)
    return per_trial


SUPERSEDED_SHOWN = 10  # superseded attempts a slot's summary names (the rest are counted)


def superseded_text(row: SlotRow, limit: int = SUPERSEDED_SHOWN) -> str:
    """The slot's superseded attempts for a report cell or a tooltip: the first ``limit``
    named, the rest counted (a slot of a large corpus has thousands; the report JSON and the
    ``coverage`` table list them all)."""
    shown = ", ".join(show_key(k) for k in row.superseded[:limit])
    more = len(row.superseded) - limit
    return shown + (f", … {more} more" if more > 0 else "")


def superseded_reason(row: SlotRow) -> str:
    """Why an attempt attached to ``row`` is superseded, as the slot really stands."""
    holder = show_key(row.trial) if row.trial else "none"
    if row.state in FILLED:
        return (
            f"superseded: slot {row.label()} is filled by the healthy attempt {holder}; "
            "this trial is not exported"
        )
    if row.state == UNHEALTHY:
        return (
            f"superseded: slot {row.label()} has no healthy attempt; the newer unhealthy "
            f"attempt {holder} stands for it; this trial is not exported"
        )
    return f"superseded: slot {row.label()} is {row.state}; this trial is not exported"


def _slot_finding(row: SlotRow) -> Finding:
    sev = Severity.BLOCKER if row.required else Severity.WARNING
    need = "required" if row.required else "optional"
    if row.state == MISSING:
        msg = f"{need} slot {row.label()} has no trial"
        return finding("COVERAGE_MISSING", msg, severity=sev)
    msg = f"{need} slot {row.label()} has {row.attempts} attempt(s) but no healthy one"
    ev = show_key(row.trial) if row.trial else None
    return finding("COVERAGE_UNHEALTHY", msg, severity=sev, evidence=ev)


def compute_coverage(
    reviews: Sequence[TrialReview],
    plan: Plan | None = None,
    oracle_rewards: RewardMap | None = None,
    noop_rewards: RewardMap | None = None,
) -> Coverage:
    model = [r for r in reviews if is_model_trial(r)]
    by_cell: dict[Cell, list[TrialReview]] = defaultdict(list)
    for r in model:
        by_cell[cell_of(r)].append(r)
    retried = {c: retried_attempts(attempts) for c, attempts in by_cell.items()}
    if plan is not None:
        planned = plan.cells()
    else:  # every attempt a trial, but those a healthy retry replaced
        planned = [
            PlannedCell(c, max(1, len(by_cell[c]) - len(retried[c])), False)
            for c in sorted(by_cell, key=_sort_cell)
        ]
    stale = _stale_trials(by_cell, plan)
    rows: list[SlotRow] = []
    superseded: list[TrialKey] = []
    for pc in planned:
        done = retried.get(pc.cell, frozenset())
        cell_rows, surplus = _fill_cell(pc, by_cell.get(pc.cell, []), stale, done)
        rows.extend(cell_rows)
        superseded.extend(surplus)
    planned_set = {pc.cell for pc in planned}
    unplanned: list[TrialKey] = []
    for c in sorted(set(by_cell) - planned_set, key=_sort_cell):
        attempts = newest_first(by_cell[c])
        for i, a in enumerate(attempts, start=1):
            unplanned.append(trial_key(a))
            rows.append(SlotRow(c, i, UNPLANNED, trial_key(a), len(attempts), False, False))

    trial_findings: dict[TrialKey, list[Finding]] = {}
    slot_of = {k: r for r in rows for k in r.superseded}
    by_row: dict[int, Finding] = {}  # one finding per slot row: its message is the row's
    for key in superseded:
        row = slot_of[key]
        dup = by_row.get(id(row))
        if dup is None:
            dup = by_row[id(row)] = finding("COVERAGE_DUPLICATE", superseded_reason(row))
        trial_findings.setdefault(key, []).append(dup)
    del slot_of, by_row  # one entry per superseded trial: not kept through the rest
    for key, why in stale.items():
        trial_findings.setdefault(key, []).append(finding("COVERAGE_STALE", why))
    dataset = [_slot_finding(r) for r in rows if r.state in (MISSING, UNHEALTHY)]
    probe_ds, probe_trials, oracle_tasks, noop_tasks = _probe_findings(
        reviews, model, oracle_rewards, noop_rewards
    )
    dataset.extend(probe_ds)
    for key, fs in probe_trials.items():
        trial_findings.setdefault(key, []).extend(fs)

    cov = Coverage(
        plan=plan,
        rows=rows,
        trial_findings=shared_lists(trial_findings),
        findings=sort_findings(dataset),
        stale=stale,
        superseded=superseded,
        unplanned=unplanned,
        oracle_tasks=oracle_tasks,
        noop_tasks=noop_tasks,
        min_coverage=plan.min_coverage if plan is not None else None,
    )
    cov.summary = _summary(cov, len(model), len(reviews) - len(model))
    return cov


def _sort_cell(c: Cell) -> tuple[str, ...]:
    return tuple(x or "" for x in c.astuple())


def _summary(cov: Coverage, n_model: int, n_probe: int) -> dict[str, int]:
    planned = cov.planned_rows()
    return {
        "expected": len(planned),
        HEALTHY: sum(r.state == HEALTHY for r in planned),
        STALE: sum(r.state == STALE for r in planned),
        MISSING: sum(r.state == MISSING for r in planned),
        UNHEALTHY: sum(r.state == UNHEALTHY for r in planned),
        DUPLICATE: sum(r.duplicate for r in planned),
        "superseded": len(cov.superseded),
        UNPLANNED: len(cov.unplanned),
        "required_blocking": len(cov.blocking_rows()),
        "model_trials": n_model,
        "probe_trials": n_probe,
    }
