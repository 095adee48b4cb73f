"""Reviewing one trial: the scan, the hard gate and every per-trial audit, merged into one
verdict.  Never raises for anything the trial contains: an unexpected error while reading
becomes a ``GATE_UNREADABLE`` finding on that trial.
"""

from __future__ import annotations

from pathlib import Path

from bf_assets.audit import AuditContext, audit_trial
from bf_assets.contract import Outcome, Verdict
from bf_assets.findings import Finding, finding, sort_findings
from bf_assets.gate.cite import locate_findings
from bf_assets.gate.identity_secret import identity_secret_findings
from bf_assets.gate.run import run_gate
from bf_assets.gate.verdict import verdict_of
from bf_assets.ingest.discovery import TrialRef
from bf_assets.ingest.identity import Identity
from bf_assets.ingest.scan import TrialData, scan_trial
from bf_assets.review.options import ReviewOptions
from bf_assets.review.record import TRIAL_ERRORS, TrialReview
from bf_assets.review.source_secrets import source_secret_findings
from bf_assets.review.story import trial_story


def review_data(data: TrialData, options: ReviewOptions | None = None) -> TrialReview:
    """The hard gate, then every per-trial audit, merged into one verdict."""
    opts = options or ReviewOptions()
    gate = run_gate(data)
    c = gate.classification
    story = trial_story(data, gate.view)
    secrets = source_secrets(data)
    if not opts.audits or data.unread:
        return TrialReview(
            ref=data.ref,
            identity=data.identity,
            layout=data.layout,
            outcome=c.outcome,
            healthy=c.healthy,
            training_ready=c.training_ready,
            verdict=gate.verdict,
            attribution=c.attribution,
            findings=locate_findings(
                data,
                gate.view,
                sort_findings([*gate.findings, *secrets]) if secrets else gate.findings,
            ),
            files=data.files,
            reward=gate.view.reward,
            story=story,
        )
    ctx = AuditContext(tasks_dir=Path(opts.tasks_dir) if opts.tasks_dir else None)
    audit = audit_trial(
        data,
        ctx,
        outcome=c.outcome,
        attribution=c.attribution,
        existing_checks=frozenset(f.check for f in gate.findings),
    )
    findings, attribution = merge_findings(
        gate.findings, [*audit.findings, *secrets], c.outcome, c.attribution
    )
    findings = locate_findings(data, gate.view, findings)
    healthy = c.healthy and attribution in ("n/a", "model_capability")
    return TrialReview(
        ref=data.ref,
        identity=data.identity,
        layout=data.layout,
        outcome=c.outcome,
        healthy=healthy,
        training_ready=c.training_ready and healthy,
        verdict=verdict_of(findings),
        attribution=attribution,
        findings=findings,
        files=data.files,
        skills=audit.skills,
        reward=gate.view.reward,
        story=story,
    )


def source_secrets(data: TrialData) -> list[Finding]:
    """``SOURCE_SECRET`` findings of the files the scan read (none for a trial not read)."""
    if data.unread or not data.read_files:
        return []
    docs = {
        rel: doc.value
        for rel, doc in (
            ("result.json", data.result),
            ("config.json", data.config),
            ("run_config.json", data.run_config),
            ("prompts.json", data.prompts),
        )
        if doc.present
    }
    return source_secret_findings(data.ref.path, data.ref.root, data.read_files, docs)


def merge_findings(
    gate: list[Finding], audit: list[Finding], outcome: str, attribution: str
) -> tuple[list[Finding], str]:
    """Gate and audit findings together; the audit's attribution is the more specific one."""
    audit_attr = any(f.check == "ATTR_EXPERIMENT_FIDELITY" for f in audit)
    if audit_attr:
        gate = [f for f in gate if f.check not in ("ATTR_EXPERIMENT_FIDELITY", "ATTR_UNKNOWN")]
        if outcome in ("fail", "normal_timeout", "unhealthy"):
            attribution = "experiment_fidelity"
    return sort_findings([*gate, *audit]), attribution


def crashed(review: TrialReview) -> bool:
    return any("could not be reviewed safely" in f.message for f in review.findings)


def review_uncached(ref: TrialRef, opts: ReviewOptions) -> TrialReview:
    try:
        return review_data(scan_trial(ref, opts.limits, hash_files=opts.hash_files), opts)
    except TRIAL_ERRORS as exc:
        f = finding(
            "GATE_UNREADABLE",
            f"the trial could not be reviewed safely: {type(exc).__name__}: {exc}",
            file=".",
        )
        ident = Identity(job=ref.job, rollout=ref.rollout)
        return TrialReview(
            ref=ref,
            identity=ident,
            layout=ref.layout,
            outcome=Outcome.UNHEALTHY.value,
            healthy=False,
            training_ready=False,
            verdict=Verdict.REJECTED.value,
            attribution="unknown",
            findings=sort_findings([f, *identity_secret_findings(ref, ident)]),
        )
