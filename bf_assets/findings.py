"""Findings: the one record every check produces (``{check, severity, message, file, line, evidence}``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bf_assets.contract import SEVERITY_RANK, Severity, default_severity

EVIDENCE_MAX_CHARS = 240


def clip(text: Any, limit: int = EVIDENCE_MAX_CHARS) -> str:
    """A short single-line excerpt for evidence and messages."""
    s = text if isinstance(text, str) else _show(text)
    s = " ".join(s.split())
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return s


@dataclass(frozen=True, slots=True)
class Finding:
    check: str
    severity: str
    message: str
    file: str | None = None
    line: int | None = None
    evidence: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "severity": self.severity,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "evidence": self.evidence,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(
            check=d["check"],
            severity=d["severity"],
            message=d["message"],
            file=d.get("file"),
            line=d.get("line"),
            evidence=d.get("evidence"),
        )


def _show(value: Any) -> str:
    import orjson

    try:
        return orjson.dumps(value, default=str).decode()[: 4 * EVIDENCE_MAX_CHARS]
    except TypeError:
        return f"<{type(value).__name__}>"


def finding(
    check: str,
    message: str,
    *,
    file: str | None = None,
    line: int | None = None,
    evidence: Any = None,
    severity: Severity | str | None = None,
) -> Finding:
    """Build a finding with the contract's default severity for ``check``.

    Evidence is clipped to a short excerpt and redacted of secrets; pass the raw text.
    """
    from bf_assets.redact import redact_text  # local import: redact depends on nothing here

    sev = Severity(severity) if severity is not None else default_severity(check)
    ev = (
        None
        if evidence is None
        else clip(redact_text(evidence if isinstance(evidence, str) else _show(evidence)))
    )
    return Finding(check, sev.value, message, file, line, ev)


_RANK = {s.value: r for s, r in SEVERITY_RANK.items()}


def _rank(severity: str) -> int:
    """``SEVERITY_RANK`` of a severity's value (an unknown one raises as ``Severity`` does)."""
    try:
        return _RANK[severity]
    except KeyError:
        return SEVERITY_RANK[Severity(severity)]


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Report order: worst severity first, then check id, then file and line."""
    return sorted(
        findings,
        key=lambda f: (_rank(f.severity), f.check, f.file or "", f.line or 0),
    )
