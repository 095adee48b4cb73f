"""The review report files (Markdown and JSON) of a release build.

The report itself is rendered by the dataset layer (``bf_assets.dataset.report``) in the
order ``checks.md`` §3 prescribes: Blockers, Coverage, Evidence, Residual risk, verdict.
This module writes it next to the dataset, from the ``validated_trials`` table, so the
release build, the ``review_report`` asset and ``bf-assets review`` report the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import orjson
import pandas as pd


def write_report(
    validated: pd.DataFrame,
    *,
    roots: Sequence[str],
    out_dir: Path,
    plan_path: str | None = None,
    quarantine_path: str | None = None,
) -> tuple[Path, Path, str]:
    """Write ``review.md`` and ``review.json``; return their paths and the release verdict."""
    from bf_assets.dataset.assemble import assemble, report_markdown
    from bf_assets.review.tables import reviews_from_frame

    ds = assemble(
        reviews_from_frame(validated), plan_path=plan_path, quarantine_path=quarantine_path
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    md, js = out_dir / "review.md", out_dir / "review.json"
    md.write_text(
        report_markdown(ds, roots, plan_path=plan_path, quarantine_path=quarantine_path),
        encoding="utf-8",
    )
    payload = {
        "release_verdict": ds.release_verdict,
        "roots": list(roots),
        "summary": ds.summary(),
        "trials": [t.to_json() for t in ds.trials],
    }
    js.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2, default=str))
    return md, js, ds.release_verdict
