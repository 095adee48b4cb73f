"""In-memory :class:`TrialReview` builders for the dataset-review tests.

Nothing here touches the disk: the reviews are built with the dataclass constructors, with
the fields the dataset-level review reads (identity, outcome, health, verdict, findings and
the file inventory).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from bf_assets.contract import Outcome, Verdict
from bf_assets.findings import Finding, finding
from bf_assets.ingest.discovery import TrialRef
from bf_assets.ingest.identity import Identity
from bf_assets.ingest.scan import FileEntry
from bf_assets.review.record import TrialReview

_SERIAL = itertools.count(1)  # distinct, deterministic default rollout names
DOCKER_FILES = (
    "config.json",
    "result.json",
    "timing.json",
    "prompts.json",
    "results.jsonl",
    "rewards.jsonl",
    "trajectory/acp_trajectory.jsonl",
    "trajectory/llm_trajectory.jsonl",
    "trainer/verifiers.jsonl",
    "trainer/adp.jsonl",
    "trainer/atif.json",
    "verifier/test-stdout.txt",
    "verifier/reward.txt",
    "agent/install-stdout.txt",
    "artifacts/output.csv",
)
DAYTONA_FILES = tuple(p for p in DOCKER_FILES if not p.startswith(("agent/", "artifacts/"))) + (
    "sandbox.json",
)


def make_review(
    task: str = "demo-task",
    *,
    harness: str = "codex-acp",
    model: str = "openai/gpt-5",
    skill_mode: str = "with-skill",
    sandbox: str = "docker",
    rollout: str | None = None,
    job: str = "2026-06-01__00-00-00",
    root: str = "/runs/jobs",
    started_at: str | None = "2026-06-01T10:00:00",
    outcome: str = Outcome.PASS.value,
    healthy: bool | None = None,
    training_ready: bool | None = None,
    verdict: str | None = None,
    findings: Sequence[Finding] = (),
    checks: Iterable[str] = (),
    files: Sequence[str] | None = None,
    source_ref: str | None = None,
    task_digest: str | None = None,
    trial_index: int | None = None,
) -> TrialReview:
    """A review; ``checks`` adds findings with the contract's default severities."""
    rollout = rollout or f"{task}__{next(_SERIAL):08x}"
    all_findings = list(findings) + [finding(c, f"{c} (sample)") for c in checks]
    sev = {f.severity for f in all_findings}
    if healthy is None:
        healthy = (
            outcome in (Outcome.PASS, Outcome.FAIL, Outcome.NORMAL_TIMEOUT) and "blocker" not in sev
        )
    if verdict is None:
        verdict = (
            Verdict.REJECTED.value
            if "blocker" in sev or not healthy
            else Verdict.QUARANTINED.value
            if "quarantine" in sev
            else Verdict.PUBLISHABLE.value
        )
    if training_ready is None:
        training_ready = healthy
    if files is None:
        files = DAYTONA_FILES if sandbox == "daytona" else DOCKER_FILES
    rel = f"{job}/{rollout}"
    ref = TrialRef(
        root=root,
        path=f"{root}/{rel}",
        rel_path=rel,
        job_key=f"{root.rstrip('/').rsplit('/', 1)[-1]}/{job}",
        job=job,
        rollout=rollout,
        layout="production",
    )
    ident = Identity(
        task_id=task,
        harness=harness,
        model=model,
        skill_mode=skill_mode,
        sandbox=sandbox,
        trial_index=trial_index,
        job=job,
        rollout=rollout,
        source_ref=source_ref,
        task_digest=task_digest,
        started_at=started_at,
    )
    return TrialReview(
        ref=ref,
        identity=ident,
        layout="production",
        outcome=outcome,
        healthy=healthy,
        training_ready=training_ready,
        verdict=verdict,
        attribution="n/a" if outcome == Outcome.PASS else "model_capability",
        findings=all_findings,
        files=[FileEntry(p, 10, None, 1) for p in files],
    )
