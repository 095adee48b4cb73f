"""Credential-shaped strings in a trial's identity: its task id, rollout name, trial and job
directory names, job name and path, and the model, harness and sandbox of its slot.

These names key the trial everywhere (rows, the excluded-trials file, the report, the card,
the manifest), so a secret in one of them cannot be redacted away without losing which
trial it is.  Such a trial is rejected with an ``IDENTITY_SECRET`` finding that names the
field, its value shown redacted; the other trials publish.  Detection is the redactor's
(:func:`bf_assets.redact.secret_spans`), so what counts as a secret here is what the export
would redact.
"""

from __future__ import annotations

from bf_assets.findings import Finding, finding
from bf_assets.ingest.discovery import TrialRef
from bf_assets.ingest.identity import Identity

CHECK = "IDENTITY_SECRET"


def identity_fields(ref: TrialRef, ident: Identity) -> list[tuple[str, str | None]]:
    """``(field name, value)`` of every identity name a trial is shown by, in report order."""
    return [
        ("task id", ident.task_id),
        ("rollout name", ident.rollout),
        ("trial directory name", ref.rollout),
        ("job name", ident.job),
        ("job directory name", ref.job),
        ("job key", ref.job_key),
        ("trial path", ref.rel_path),
        ("model name", ident.model),
        ("harness name", ident.harness),
        ("sandbox name", ident.sandbox),
    ]


def identity_secret_findings(ref: TrialRef, ident: Identity) -> list[Finding]:
    """One blocker per identity field holding a credential-shaped string not already reported
    in an earlier field (a secret in the directory name is in the path too)."""
    from bf_assets.redact import redact_text, secret_spans

    out: list[Finding] = []
    reported: set[str] = set()
    for name, value in identity_fields(ref, ident):
        if not isinstance(value, str) or not value:
            continue
        spans = secret_spans(value)
        secrets = {value[a:b] for a, b, _, _ in spans}
        new = {s for s in secrets if not any(s in r or r in s for r in reported)}
        if not new:
            continue
        reported |= secrets
        kinds = ", ".join(sorted({kind for _, _, _, kind in spans}))
        out.append(
            finding(
                CHECK,
                f"the {name} carries a credential-shaped string ({kinds}): "
                f"{redact_text(value)!r}; the trial cannot be named without it",
            )
        )
    return out
