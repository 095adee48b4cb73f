"""The dataset card (``README.md``): YAML metadata, then what the data is and how it was made.

Rendered only from release facts (counts, exclusions, cleaning stats, schema), never from
wall-clock time, so an unchanged release renders byte-identically.  Values that come from
trial data (task ids, model names, refs) are cleaned like the rows before they are written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from bf_assets.curate.clean import CleanStats, clean_value
from bf_assets.curate.schema import CONFIG_DESCRIPTIONS, CONFIGS, DEFAULT_CONFIG, SCHEMA_VERSION
from bf_assets.dataset.decide import Exclusion
from bf_assets.dataset.report import RESIDUAL_RISK
from bf_assets.publish.manifest import CHECKSUMS_PATH, MANIFEST_PATH, pipeline_version

TAGS = ["agents", "trajectories", "tool-use", "sft", "rl", "benchflow", "skillsbench"]


@dataclass(slots=True)
class CardFacts:
    pretty_name: str
    license: str
    verdict: str
    split: str
    configs: dict[str, int]  # rows per config
    rows: Sequence[dict[str, Any]]  # selected trials: task_id, harness, model, skill_mode, outcome
    excluded: Sequence[Exclusion]
    stats: CleanStats
    jobs: Sequence[str]
    source_refs: Sequence[str]
    repo_id: str | None = None
    not_ingested: Sequence[str] = field(default_factory=list)
    dataset_reasons: Sequence[str] = field(default_factory=list)
    decisions: Sequence[dict[str, Any]] = field(default_factory=list)  # quarantine entries


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < limit:
            return name
    return "100K<n<1M"


def _header(f: CardFacts) -> str:
    meta: dict[str, Any] = {"license": f.license}
    if f.license == "other":
        meta["license_name"] = "benchflow-trajectories"
        meta["license_link"] = "LICENSE"
    meta.update(
        {
            "pretty_name": f.pretty_name,
            "language": ["en"],
            "task_categories": ["text-generation"],
            "tags": TAGS,
            "size_categories": [_size_category(f.configs.get(DEFAULT_CONFIG, 0))],
            "configs": [
                {
                    "config_name": name,
                    **({"default": True} if name == DEFAULT_CONFIG else {}),
                    "data_files": [{"split": f.split, "path": f"data/{name}/{f.split}-*.parquet"}],
                }
                for name in f.configs
            ],
        }
    )
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def _cell(v: Any) -> str:
    return "–" if v is None or v == "" else str(v).replace("|", "\\|").replace("\n", " ")


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    if not rows:
        return "_none_\n"
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(_cell(v) for v in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def _counts(rows: Sequence[dict[str, Any]], key: str) -> list[tuple[Any, int]]:
    return sorted(Counter(r.get(key) for r in rows).items(), key=lambda kv: str(kv[0]))


def _cleaned(facts: CardFacts) -> CardFacts:
    """The facts with every trial-derived value cleaned like an export row."""
    excluded = [
        Exclusion(
            **{k: clean_value(getattr(e, k)) for k in e.__slots__ if k != "slot"},
            slot=tuple(clean_value(list(e.slot))),
        )
        for e in facts.excluded
    ]
    return CardFacts(
        pretty_name=clean_value(facts.pretty_name),
        license=clean_value(facts.license),
        verdict=facts.verdict,
        split=facts.split,
        configs=dict(facts.configs),
        rows=clean_value([dict(r) for r in facts.rows]),
        excluded=excluded,
        stats=facts.stats,
        jobs=clean_value(list(facts.jobs)),
        source_refs=clean_value(list(facts.source_refs)),
        repo_id=clean_value(facts.repo_id),
        not_ingested=clean_value(list(facts.not_ingested)),
        dataset_reasons=clean_value(list(facts.dataset_reasons)),
        decisions=clean_value([dict(d) for d in facts.decisions]),
    )


def render_card(facts: CardFacts) -> str:
    f = _cleaned(facts)
    n = f.configs.get(DEFAULT_CONFIG, 0)
    load_target = f.repo_id or "path/to/this/folder"
    p = [_header(f), f"\n# {f.pretty_name}\n\n"]
    p.append(
        "Agent-benchmark trajectories from Benchflow / SkillsBench runs, reviewed trial by "
        "trial by bf-assets and curated for training. "
        f"This release holds **{n}** rollouts.\n\n"
        f"Release verdict: **{f.verdict}**.\n\n"
    )
    if f.dataset_reasons:
        p.append("Why: " + "; ".join(f.dataset_reasons) + ".\n\n")
    p.append("## Load it\n\n```python\nfrom datasets import load_dataset\n\n")
    p.extend(
        f'{name} = load_dataset("{load_target}", "{name}", split="{f.split}")\n'
        for name in f.configs
    )
    p.append("```\n\n## Configs\n\n")
    p.append(
        _table(
            ["config", "rows", "what"],
            [(c, k, CONFIG_DESCRIPTIONS[c]) for c, k in f.configs.items()],
        )
    )
    p.append(f"\n## Dataset structure (schema version {SCHEMA_VERSION})\n\n")
    p.append(
        "A message is `{role, content, tool_calls, tool_call_id, name}` (OpenAI chat); "
        '`tool_calls` items are `{id, type: "function", function: {name, arguments}}` with '
        "`arguments` a JSON string.\n"
    )
    for name in f.configs:
        p.append(f"\n### `{name}`\n\n")
        p.append(
            _table(
                ["column", "type", "null", "description"],
                [
                    (c.name, f"`{c.type_text}`", "yes" if c.nullable else "no", c.description)
                    for c in CONFIGS[name]
                ],
            )
        )
    p.append("\n## Counts\n\n")
    for key, title in (
        ("task_id", "task"),
        ("harness", "harness"),
        ("model", "model"),
        ("skill_mode", "skill mode"),
        ("outcome", "outcome"),
    ):
        p.append(f"By {title}:\n\n" + _table([title, "rollouts"], _counts(f.rows, key)) + "\n")
    p.append("## How it was built\n\n")
    p.append(
        "- Every trial passed the hard trajectory gate and the audits of the review contract "
        "(`checks.md`): healthy outcome (`pass` / `fail` attributed to the model), "
        "`training_ready`, verdict `publishable`.\n"
        "- One dataset review decides every trial: the newest healthy attempts of each cell of "
        "the experiment plan fill its slots (by start time, then rollout name); older attempts "
        "are `superseded`, cells the plan does not list are `unplanned`. Oracle and no-op "
        "lanes, errored, partial, timed-out, quarantined and rejected trials are never "
        "exported. The review report that decided this release ships with it in `report/`.\n"
        "- Rows are ordered by `rollout_id`; the shards are deterministic (same input, same bytes).\n"
    )
    p.append(f"\n## Excluded trials ({len(f.excluded)})\n\n")
    by_reason = Counter(e.reason for e in f.excluded)
    p.append(_table(["reason", "trials"], sorted(by_reason.items())) + "\n")
    p.append(
        _table(
            ["job", "rollout", "outcome", "verdict", "reason", "detail"],
            [(e.job, e.rollout, e.outcome, e.verdict, e.reason, e.detail) for e in f.excluded],
        )
    )
    if f.not_ingested:
        p.append(
            "\nFound under the run roots but not reviewed (nothing of them is included): "
            + ", ".join(f"`{j}`" for j in f.not_ingested)
            + "\n"
        )
    p.append(f"\n## Manual review decisions ({len(f.decisions)})\n\n")
    p.append(
        _table(
            ["trial", "action", "reason", "by", "at"],
            [
                tuple(d.get(k) for k in ("trial", "action", "reason", "by", "at"))
                for d in f.decisions
            ],
        )
    )
    p.append("\n## Personal and sensitive information\n\n")
    p.append(
        "Secrets are redacted on parsed values (API keys of the major providers, tokens, JWTs, "
        "private keys, URL credentials, secret-named fields) until a pass changes nothing; "
        "absolute host paths (home and temp directories, the benchmark root, file URIs, "
        "rollout and skills directories) are replaced with placeholders; banned keys (gold "
        "solutions, verifier sources, private reasoning, provider-specific fields) are removed; "
        "raw provider response bodies are dropped. The published files are scanned again "
        "before release.\n\n"
    )
    st = f.stats.to_dict()
    p.append(
        _table(
            ["what", "kind", "count"],
            [
                (w, d["kind"], d["count"])
                for w in ("redactions", "host_paths", "banned_keys")
                for d in st[w]
            ],
        )
    )
    p.append(
        "\nNot covered: personal data such as names or e-mail addresses in task content is not detected.\n"
    )
    p.append("\n## Residual risk\n\n" + "".join(f"- {r}\n" for r in RESIDUAL_RISK))
    p.append("\n## Provenance\n\n")
    p.append(f"- Pipeline: bf-assets {pipeline_version()}\n")
    p.append("- Jobs: " + (", ".join(f"`{j}`" for j in f.jobs) or "_none_") + "\n")
    p.append(
        "- Task source refs: "
        + (", ".join(f"`{r}`" for r in f.source_refs) or "_none recorded_")
        + "\n"
    )
    p.append(
        f"- Manifest with per-file sha256 and every source trial: `{MANIFEST_PATH}`; checksums: `{CHECKSUMS_PATH}`.\n"
    )
    p.append(
        "\n## Licensing\n\nTask content follows the task source's license. Model outputs are "
        "subject to each model provider's terms, some of which restrict training competing "
        "models.\n"
    )
    return "".join(p)
