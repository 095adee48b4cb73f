"""``results``: the clean results table of the dataset review (``bf_assets.dataset.results``).

One row per task × harness × model × skill mode with trials, healthy trials, pass rate,
mean reward and pass@k over every scored trial and over the accepted ones, side by side.
Its metadata holds the headline figures as numbers the UI plots across materializations
(pass rates, trials, and each overall skill lift with its interval), the lift heatmap and
the whole table as Markdown.
"""

import dagster as dg
import pandas as pd

from bf_assets.dataset.assemble import DatasetReview
from bf_assets.dataset.coverage_svg import svg_data_uri
from bf_assets.dataset.lift_svg import lift_svg
from bf_assets.dataset.reportmarkup import md_cell, md_text
from bf_assets.dataset.results import (
    ACCEPTED,
    POPULATIONS,
    RESULT_COLUMNS,
    SCORED,
    ResultsTable,
    cell_rows,
    results_markdown,
)
from bf_assets.defs.conventions import code_version, column_schema, owners
from bf_assets.defs.ingest import PARQUET_IO
from bf_assets.defs.review import flat_frame

# Overall lifts given as numeric metadata entries of their own (the table holds every one).
PLOTTED_LIFTS = 20
MARKDOWN_CHARS = 100_000


def results_metadata(table: ResultsTable) -> dict[str, dg.MetadataValue]:
    """The headline figures as numbers, the heatmaps and the table as Markdown."""
    s = table.summary()
    meta: dict[str, dg.MetadataValue] = {
        "dagster/row_count": dg.MetadataValue.int(len(table.cells)),
        "lifts": dg.MetadataValue.int(len(table.lifts)),
        "seed": dg.MetadataValue.int(table.seed),
        "resamples": dg.MetadataValue.int(table.resamples),
    }
    for p in POPULATIONS:
        meta[f"{p}_trials"] = dg.MetadataValue.int(s[f"{p}_trials"])
        rate = s[f"{p}_pass_rate"]
        if rate is not None:
            meta[f"{p}_pass_rate"] = dg.MetadataValue.float(rate)
    for entry in s["overall_lifts"][:PLOTTED_LIFTS]:
        name = f"lift {entry['harness']} / {entry['model']} / {entry['treatment']}"
        for p in POPULATIONS:
            lf = entry[p]
            if lf is not None:
                meta[f"{name} ({p})"] = dg.MetadataValue.float(lf["lift"])
        if entry["difference"] is not None:
            meta[f"{name} (difference)"] = dg.MetadataValue.float(entry["difference"])
    pictures = "".join(
        f"![skill lift, {p} trials]({svg_data_uri(lift_svg(table, population=p))})\n\n"
        for p in (SCORED, ACCEPTED)
    )
    md = results_markdown(table, md_cell, md_text)
    if len(md) > MARKDOWN_CHARS:
        md = md[: md.rfind("\n", 0, MARKDOWN_CHARS) + 1] + "\n_… the table goes on._\n"
    meta["lift_heatmap"] = dg.MetadataValue.md(pictures)
    meta["table"] = dg.MetadataValue.md(md)
    meta["summary"] = dg.MetadataValue.json(s)
    return meta


@dg.asset(
    ins={"review_report": dg.AssetIn()},
    group_name="dataset",
    kinds={"pandas", "parquet"},
    io_manager_key=PARQUET_IO,
    owners=owners(),
    code_version=code_version(__name__),
    metadata=column_schema(RESULT_COLUMNS),
)
def results(review_report: DatasetReview) -> dg.Output[pd.DataFrame]:
    """Does the skill help: pass rate, mean reward and pass@k per task × harness × model ×
    skill mode, and the with-skill (and self-generated) minus no-skill lift with a seeded
    bootstrap interval, over every scored trial and over the trials the review exports, side
    by side (computed from the review's export decision)."""
    table = review_report.results()
    frame = flat_frame(cell_rows(table), RESULT_COLUMNS)
    return dg.Output(frame, metadata=results_metadata(table))
