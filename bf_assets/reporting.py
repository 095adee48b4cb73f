"""The review report, in the order ``checks.md`` §3 prescribes.

Blockers, Coverage, Evidence, Residual risk, then the verdict.  Built from the
``validated_trials`` and ``findings`` tables, so the CLI, the release build and the Dagster
UI show the same report.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

import orjson
import pandas as pd

from bf_assets.contract import ReleaseVerdict

RESIDUAL_RISK = (
    "Sandbox network policy: no artifact proves what the sandbox could reach during the agent phase.",
    "Git scrubbing: no artifact proves that history past the base commit was removed.",
    "Hidden-test placement: no artifact proves hidden tests were absent from agent-readable paths.",
    "Verifier process isolation: Benchflow records no timestamp proving the verifier ran after the agent.",
)


def release_verdict_of(validated: pd.DataFrame) -> str:
    if validated.empty:
        return ReleaseVerdict.NOT_PUBLISHABLE.value
    model = validated[validated["outcome"] != "oracle"]
    ok = model[(model["verdict"] == "publishable") & (model["training_ready"].astype(bool))]
    if ok.empty:
        return ReleaseVerdict.NOT_PUBLISHABLE.value
    if len(ok) < len(model):
        return ReleaseVerdict.PUBLISHABLE_WITH_QUARANTINES.value
    return ReleaseVerdict.PUBLISHABLE.value


def _cell(x: object) -> str:
    if x is None or (isinstance(x, float) and x != x) or x is pd.NA:
        return "–"
    return str(x).replace("|", "\\|").replace("\n", " ")


def _md_table(df: pd.DataFrame, columns: Sequence[str], limit: int = 200) -> str:
    if df.empty:
        return "_none_\n"
    head = "| " + " | ".join(columns) + " |\n| " + " | ".join("---" for _ in columns) + " |\n"
    rows = []
    for rec in df[list(columns)].head(limit).itertuples(index=False):
        rows.append(
            "| " + " | ".join(str(x).replace("|", "\\|").replace("\n", " ") for x in rec) + " |"
        )
    more = f"\n… {len(df) - limit} more rows in the JSON report\n" if len(df) > limit else "\n"
    return head + "\n".join(rows) + more


def render_markdown(validated: pd.DataFrame, findings: pd.DataFrame, roots: Sequence[str]) -> str:
    verdict = release_verdict_of(validated)
    parts = ["# bf-assets review report\n\n"]
    parts.append("## Blockers\n\n")
    blockers = findings[findings["severity"] == "blocker"] if not findings.empty else findings
    if blockers.empty:
        parts.append("No blocker findings.\n")
    else:
        by_check = blockers.groupby("check").size().sort_values(ascending=False)
        parts.append(_md_table(by_check.rename("trials").reset_index(), ["check", "trials"]))
        parts.append("\n")
        parts.append(
            _md_table(
                blockers.sort_values(["job", "rollout", "check"]),
                ["job", "rollout", "check", "message"],
            )
        )
    parts.append("\n## Coverage\n\n")
    if validated.empty:
        parts.append("No trials found.\n")
    else:
        cells = validated.assign(
            healthy_i=validated["healthy"].astype(int),
            ready_i=validated["training_ready"].astype(int),
        )
        cov = (
            cells.groupby(["task_id", "skill_mode", "harness", "model", "sandbox"], dropna=False)
            .agg(
                trials=("rollout", "count"),
                healthy=("healthy_i", "sum"),
                training_ready=("ready_i", "sum"),
            )
            .reset_index()
        )
        parts.append(
            "Observed cells (no experiment plan given: every observed cell is expected once, none required).\n\n"
        )
        parts.append(
            _md_table(
                cov,
                [
                    "task_id",
                    "skill_mode",
                    "harness",
                    "model",
                    "sandbox",
                    "trials",
                    "healthy",
                    "training_ready",
                ],
            )
        )
        outcomes = validated.groupby("outcome").size()
        parts.append("\nOutcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.items()) + "\n")
    parts.append("\n## Evidence\n\n")
    parts.append("Run roots:\n" + "".join(f"- `{r}`\n" for r in roots))
    parts.append(f"\nTrials reviewed: {len(validated)}; findings: {len(findings)}.\n")
    if not validated.empty and "source_ref" in validated:
        refs = sorted({str(x) for x in validated["source_ref"].dropna()})
        parts.append(
            "Source refs: "
            + (", ".join(f"`{r}`" for r in refs) if refs else "_none recorded_")
            + "\n"
        )
    parts.append(
        "\nReproduce: `bf-assets review " + " ".join(shlex.quote(r) for r in roots) + " --json`\n"
    )
    parts.append("\n## Residual risk\n\n")
    parts.extend(f"- {r}\n" for r in RESIDUAL_RISK)
    parts.append(f"\n## Verdict\n\n**{verdict}**\n")
    return "".join(parts)


def write_report(
    validated: pd.DataFrame, findings: pd.DataFrame, *, roots: Sequence[str], out_dir: Path
) -> tuple[Path, Path, str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / "review.md"
    js = out_dir / "review.json"
    verdict = release_verdict_of(validated)
    md.write_text(render_markdown(validated, findings, roots), encoding="utf-8")
    payload = {
        "release_verdict": verdict,
        "roots": list(roots),
        "trials": validated.to_dict(orient="records") if not validated.empty else [],
        "findings": findings.to_dict(orient="records") if not findings.empty else [],
    }
    js.write_bytes(
        orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY, default=str)
    )
    return md, js, verdict
