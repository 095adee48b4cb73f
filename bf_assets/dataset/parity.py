"""Docker ↔ Daytona parity (``review-rules.md`` §8 P-SCHEMA / P-REWARD, ``artifacts.md`` §6).

The same logical trial (task, harness, model, skill mode) run on both backends is paired by
trial index when every attempt on both sides records one, else by attempt order (oldest
first).  Each pair is compared on three things, one :class:`ParityRow` per difference:

* ``file``: an artifact path present on one side only.  The systematic differences of
  ``artifacts.md`` §6 are labelled ``expected`` (``sandbox.json`` only on Daytona;
  ``agent/*`` such as ``agent/oracle.txt`` and ``artifacts/*`` only on Docker).  Telemetry
  files (:data:`TELEMETRY_FILES`) present on one side only are ``telemetry`` rows instead.
  Anything else is ``unexpected`` (e.g. a verifier file set that differs).
* ``outcome``: the outcome classes differ.  Two healthy outcomes (pass vs fail) are model
  ``variance``; a healthy vs unhealthy/incomplete difference is ``unexpected``.
* ``telemetry``: a telemetry file or field is populated on one side only (the gate's
  ``GATE_*_MISSING``-style findings say which fields are empty).  These rows have
  ``blocker=True`` and ``lacking`` naming the backend without the telemetry: that backend's
  new data cannot be trusted to carry the same training signal.

P-REWARD (equal oracle rewards) needs rewards, which reviews do not carry: oracle lanes are
paired like any other trial and compared on files and outcome class only.

No check id is added to the contract: the report lists the rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bf_assets.contract import HEALTHY_OUTCOMES
from bf_assets.dataset.common import TrialKey, cell_of, is_noop, recency_key, trial_key
from bf_assets.review.record import TrialReview

DOCKER, DAYTONA = "docker", "daytona"
TELEMETRY_FILES = {
    "trajectory/llm_trajectory.jsonl": "LLM trajectory",
    "trajectory/acp_trajectory.jsonl": "ACP trajectory",
    "results.jsonl": "results.jsonl training row",
    "result.json": "result.json",
    "rewards.jsonl": "rewards.jsonl",
    "timing.json": "timing.json",
}
# Gate findings that mean "this telemetry is not populated" → (item, file it lives in).
TELEMETRY_CHECKS = {
    "GATE_LLM_MISSING": ("LLM trajectory", "trajectory/llm_trajectory.jsonl"),
    "GATE_LLM_EMPTY": ("LLM trajectory", "trajectory/llm_trajectory.jsonl"),
    "GATE_LLM_NO_USAGE": ("provider token usage", None),
    "GATE_TOKENS_MISSING": ("token usage in result.json", None),
    "GATE_TIMING_MISSING": ("timing", None),
    "GATE_REWARD_MISSING": ("reward", None),
    "GATE_TOOLS_MISSING": ("tool-usage count", None),
    "GATE_ACP_MISSING": ("ACP trajectory", "trajectory/acp_trajectory.jsonl"),
    "GATE_ACP_EMPTY": ("ACP trajectory", "trajectory/acp_trajectory.jsonl"),
    "GATE_ROWS_MISSING": ("results.jsonl training row", "results.jsonl"),
}


@dataclass(frozen=True, slots=True)
class ParityPair:
    task: str | None
    harness: str | None
    model: str | None
    skill_mode: str | None
    index: int  # trial index, or 1-based attempt order
    docker: TrialKey
    daytona: TrialKey

    def label(self) -> str:
        parts = (self.task, self.harness, self.model, self.skill_mode)
        return " / ".join(p or "?" for p in parts) + f" #{self.index}"


@dataclass(frozen=True, slots=True)
class ParityRow:
    pair: ParityPair
    kind: str  # file | outcome | telemetry
    item: str
    docker: str
    daytona: str
    label: str  # expected | unexpected | variance
    blocker: bool = False
    lacking: str | None = None  # the backend without the telemetry
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "pair": self.pair.label(),
            "docker_trial": list(self.pair.docker),
            "daytona_trial": list(self.pair.daytona),
            "kind": self.kind,
            "item": self.item,
            "docker": self.docker,
            "daytona": self.daytona,
            "label": self.label,
            "blocker": self.blocker,
            "lacking": self.lacking,
            "note": self.note,
        }


@dataclass(slots=True)
class ParityReport:
    pairs: list[ParityPair] = field(default_factory=list)
    rows: list[ParityRow] = field(default_factory=list)
    unpaired: list[tuple[TrialKey, str]] = field(default_factory=list)  # (trial, backend)

    @property
    def blockers(self) -> list[ParityRow]:
        return [r for r in self.rows if r.blocker]


def _expected_file(path: str, only_on: str) -> bool:
    if only_on == DAYTONA:
        return path == "sandbox.json"
    return path.startswith(("agent/", "artifacts/"))


def _present(flag: bool) -> str:
    return "present" if flag else "absent"


def _telemetry_gaps(r: TrialReview) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for f in r.findings:
        if f.check in TELEMETRY_CHECKS:
            item, path = TELEMETRY_CHECKS[f.check]
            out.setdefault(item, path)
    return out


def compare_pair(pair: ParityPair, docker: TrialReview, daytona: TrialReview) -> list[ParityRow]:
    rows: list[ParityRow] = []
    dk = {f.path for f in docker.files if not f.path.endswith(".tmp")}
    dt = {f.path for f in daytona.files if not f.path.endswith(".tmp")}
    for path in sorted(dk ^ dt):
        only = DOCKER if path in dk else DAYTONA
        other = DAYTONA if only == DOCKER else DOCKER
        vals = (_present(path in dk), _present(path in dt))
        if path in TELEMETRY_FILES:
            rows.append(
                ParityRow(
                    pair,
                    "telemetry",
                    path,
                    *vals,
                    label="unexpected",
                    blocker=True,
                    lacking=other,
                    note=f"{TELEMETRY_FILES[path]} missing on {other}",
                )
            )
        elif _expected_file(path, only):
            rows.append(
                ParityRow(
                    pair,
                    "file",
                    path,
                    *vals,
                    label="expected",
                    note=f"systematic: only {only} keeps it",
                )
            )
        else:
            rows.append(
                ParityRow(pair, "file", path, *vals, label="unexpected", note=f"only on {only}")
            )
    if docker.outcome != daytona.outcome:
        both_healthy = docker.outcome in HEALTHY_OUTCOMES and daytona.outcome in HEALTHY_OUTCOMES
        rows.append(
            ParityRow(
                pair,
                "outcome",
                "outcome",
                docker.outcome,
                daytona.outcome,
                label="variance" if both_healthy else "unexpected",
                note="model variance" if both_healthy else "health class differs",
            )
        )
    gaps_dk, gaps_dt = _telemetry_gaps(docker), _telemetry_gaps(daytona)
    file_rows = {r.item for r in rows if r.kind == "telemetry"}
    for item in sorted(set(gaps_dk) ^ set(gaps_dt)):
        path = gaps_dk.get(item) or gaps_dt.get(item)
        if path in file_rows:
            continue
        lacking = DOCKER if item in gaps_dk else DAYTONA
        rows.append(
            ParityRow(
                pair,
                "telemetry",
                item,
                "missing" if lacking == DOCKER else "populated",
                "missing" if lacking == DAYTONA else "populated",
                label="unexpected",
                blocker=True,
                lacking=lacking,
                note=f"{item} not populated on {lacking}",
            )
        )
    return rows


def _pair_up(
    dks: list[TrialReview], dts: list[TrialReview]
) -> tuple[list[tuple[int, TrialReview, TrialReview]], list[TrialReview]]:
    everyone = dks + dts
    if everyone and all(r.identity.trial_index is not None for r in everyone):
        by_dt: dict[int, list[TrialReview]] = defaultdict(list)
        for r in sorted(dts, key=recency_key):
            by_dt[int(r.identity.trial_index or 0)].append(r)
        matched, left = [], []
        for r in sorted(dks, key=recency_key):
            idx = int(r.identity.trial_index or 0)
            if by_dt.get(idx):
                matched.append((idx, r, by_dt[idx].pop(0)))
            else:
                left.append(r)
        left.extend(x for xs in by_dt.values() for x in xs)
        return matched, left
    a, b = sorted(dks, key=recency_key), sorted(dts, key=recency_key)
    n = min(len(a), len(b))
    matched = [(i + 1, a[i], b[i]) for i in range(n)]
    return matched, a[n:] + b[n:]


def sandbox_parity(reviews: Sequence[TrialReview]) -> ParityReport:
    groups: dict[tuple[Any, ...], dict[str, list[TrialReview]]] = defaultdict(
        lambda: {DOCKER: [], DAYTONA: []}
    )
    for r in reviews:
        c = cell_of(r)
        if c.sandbox not in (DOCKER, DAYTONA) or is_noop(r):
            continue
        groups[(c.task, c.harness, c.model, c.skill_mode)][c.sandbox].append(r)
    report = ParityReport()
    for key in sorted(groups, key=lambda k: tuple(x or "" for x in k)):
        sides = groups[key]
        if not sides[DOCKER] or not sides[DAYTONA]:
            continue  # a one-backend logical trial is not a parity question
        matched, left = _pair_up(sides[DOCKER], sides[DAYTONA])
        for idx, dk, dt in matched:
            pair = ParityPair(*key, index=idx, docker=trial_key(dk), daytona=trial_key(dt))
            report.pairs.append(pair)
            report.rows.extend(compare_pair(pair, dk, dt))
        report.unpaired.extend((trial_key(r), cell_of(r).sandbox or "?") for r in left)
    return report
