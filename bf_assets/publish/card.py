"""The dataset card (``README.md``): YAML metadata, then what the data is and how it was made.

Rendered only from release facts (counts, exclusions, cleaning stats, schema, splits, the
release tag), never from wall-clock time, so an unchanged release renders byte-identically.
Values that come from trial data or user input (task ids, model names, refs, job and rollout
names, quarantine reasons and names, the pretty name, the repository id) are cleaned like the
rows before they are written, then escaped for Markdown and HTML wherever they are written
(:mod:`bf_assets.dataset.reportmarkup`: text, table cells, code spans and code blocks whose
fence no value can close), so none of them renders as a tag, an attribute or a link.  The
YAML ``configs`` list every shard of every split by name.

With ``license: other`` the bundle ships :func:`render_license` as ``LICENSE`` and the
metadata links it (``license_link``); any other license id links nothing.

The YAML metadata is ``huggingface_hub``'s ``DatasetCardData`` (with ``dataset_info``: each
config's features, generated from the published Arrow schema, and its split sizes) and the
card is rendered through its ``DatasetCard``.  ``trl_sft``'s ``dataset_info`` carries split
sizes only: its Arrow JSON columns have a ``datasets`` feature (``Json``) that older
``datasets`` releases cannot parse, and they parse every config's ``dataset_info`` whichever
config is loaded.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from huggingface_hub import DatasetCard, DatasetCardData

from bf_assets.curate.schema import (
    ARGUMENTS_FORM,
    CONFIG_CONSUMERS,
    CONFIG_DESCRIPTIONS,
    CONFIGS,
    DEFAULT_CONFIG,
    MIN_DATASETS,
    MIN_DATASETS_JSON,
    SCHEMA_VERSION,
    VERIFIERS_TASK,
    arrow_schema,
    storage_schema,
    uses_json_type,
)
from bf_assets.dataset.decide import Exclusion
from bf_assets.dataset.report import RESIDUAL_RISK
from bf_assets.dataset.reportmarkup import (
    Markdown,
    md_cell,
    md_code,
    md_fence,
    md_link,
    md_text,
    one_line,
)
from bf_assets.dataset.results import ResultsTable, card_markdown
from bf_assets.publish.changes import changes_markdown
from bf_assets.publish.excluded import EXCLUDED_PATH
from bf_assets.publish.manifest import CHECKSUMS_PATH, MANIFEST_PATH, pipeline_version
from bf_assets.redact.clean import CleanStats, clean_value

TAGS = ["agents", "trajectories", "tool-use", "sft", "rl", "benchflow", "skillsbench"]
LICENSE_PATH = "LICENSE"
LICENSE_NAME = "benchflow-trajectories"
TAG_PLACEHOLDER = "<this release's tag>"  # in the draft the release digest is computed over


@dataclass(slots=True)
class CardFacts:
    pretty_name: str
    license: str
    verdict: str
    configs: dict[str, int]  # rows per config
    rows: Sequence[dict[str, Any]]  # exported trials: task_id, harness, model, skill_mode, outcome
    excluded: Sequence[Exclusion]
    stats: CleanStats
    jobs: Sequence[str]
    source_refs: Sequence[str]
    repo_id: str | None = None
    not_ingested: Sequence[str] = field(default_factory=list)
    dataset_reasons: Sequence[str] = field(default_factory=list)
    decisions: Sequence[dict[str, Any]] = field(default_factory=list)  # quarantine entries
    # config -> split -> shard paths / rows (splits in order, training split first)
    split_files: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    split_rows: dict[str, dict[str, int]] = field(default_factory=dict)
    splits: dict[str, Any] | None = None  # ``SplitPlan.to_dict()``
    tag: str | None = None  # None while the draft the tag is derived from is rendered
    license_file: str | None = None  # the bundle's license file, when it ships one
    year: str | None = None  # year of the newest exported trial (for the citation)
    changes: dict[str, Any] | None = None  # since the previous release (publish.changes)
    results: ResultsTable | None = None  # the review's results table (dataset.results)
    # config -> split -> Parquet bytes (the split sizes of ``dataset_info``)
    split_bytes: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def split_names(self) -> list[str]:
        names: list[str] = []
        for per in self.split_files.values():
            names += [s for s in per if s not in names]
        return names or ["train"]


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < limit:
            return name
    return "100K<n<1M"


_DTYPES = {
    pa.string(): "string",
    pa.int64(): "int64",
    pa.float64(): "float64",
    pa.bool_(): "bool",
}


def _feature_yaml(t: pa.DataType) -> dict[str, Any]:
    """A ``datasets`` feature in the card's YAML form (``dataset_info.features``)."""
    if pa.types.is_struct(t):
        return {"struct": [{"name": f.name, **_feature_yaml(f.type)} for f in t]}
    if pa.types.is_list(t):
        inner = _feature_yaml(t.value_type)
        if list(inner) == ["dtype"]:
            return {"list": inner["dtype"]}
        if list(inner) == ["struct"]:
            return {"list": inner["struct"]}
        return {"list": inner}
    return {"dtype": _DTYPES[t]}


def features_yaml(config: str) -> list[dict[str, Any]]:
    """``config``'s columns as ``datasets`` features (YAML form), from its Arrow schema."""
    return [{"name": f.name, **_feature_yaml(f.type)} for f in arrow_schema(config)]


def dataset_info(f: CardFacts) -> list[dict[str, Any]]:
    """The card's ``dataset_info``: per config its features (not for configs with Arrow JSON
    columns, see the module docstring), its splits with their row counts, and sizes in
    Parquet bytes."""
    out = []
    for name in f.configs:
        info: dict[str, Any] = {"config_name": name}
        if not uses_json_type(name):
            info["features"] = features_yaml(name)
        sizes = f.split_bytes.get(name, {})
        info["splits"] = [
            {"name": split, "num_bytes": sizes.get(split, 0), "num_examples": n}
            for split, n in f.split_rows.get(name, {}).items()
        ]
        info["download_size"] = sum(sizes.values())
        info["dataset_size"] = sum(sizes.values())
        out.append(info)
    return out


def card_data(f: CardFacts) -> DatasetCardData:
    """The card's YAML metadata as ``huggingface_hub`` card data."""
    extra: dict[str, Any] = {}
    if f.license == "other":
        extra["license_name"] = LICENSE_NAME
        if f.license_file:
            extra["license_link"] = f.license_file
    return DatasetCardData(
        license=f.license,
        pretty_name=f.pretty_name,
        language=["en"],
        task_categories=["text-generation"],
        tags=list(TAGS),
        size_categories=[_size_category(f.configs.get(DEFAULT_CONFIG, 0))],
        configs=[
            {
                "config_name": name,
                **({"default": True} if name == DEFAULT_CONFIG else {}),
                "data_files": [
                    {"split": split, "path": list(paths)}
                    for split, paths in f.split_files.get(name, {}).items()
                ],
            }
            for name in f.configs
        ],
        dataset_info=dataset_info(f),
        **extra,
    )


def _header(f: CardFacts) -> str:
    return "---\n" + card_data(f).to_yaml() + "\n---\n"


def _prose(text: str) -> Markdown:
    """Markdown text of this package (a column's description): its code spans kept, ``<``
    outside them written ``&lt;``, ``|`` escaped for a table cell."""
    if text.count("`") % 2:  # an unpaired backtick would open a span that never closes
        text = text.replace("`", "'")
    parts = text.split("`")
    out = "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))
    return Markdown(one_line(out).replace("|", "\\|"))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    if not rows:
        return "_none_\n"
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(md_cell(v) for v in r) + " |" for r in rows]
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
        for e in _excluded_sample(facts.excluded)  # only what the card shows
    ]
    return CardFacts(
        pretty_name=clean_value(facts.pretty_name),
        license=clean_value(facts.license),
        verdict=facts.verdict,
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
        split_files={c: dict(per) for c, per in facts.split_files.items()},
        split_rows={c: dict(per) for c, per in facts.split_rows.items()},
        splits=clean_value(facts.splits) if facts.splits is not None else None,
        tag=facts.tag,
        license_file=facts.license_file,
        year=facts.year,
        changes=clean_value(facts.changes) if facts.changes is not None else None,
        results=(
            facts.results.accepted_only().relabelled(clean_value)
            if facts.results is not None
            else None
        ),
        split_bytes={c: dict(per) for c, per in facts.split_bytes.items()},
    )


def _py(text: str) -> str:
    """A Python string literal of ``text`` (for the card's code)."""
    return json.dumps(text, ensure_ascii=False)


def _features_code(t: pa.DataType) -> str:
    if pa.types.is_struct(t):
        return "{" + ", ".join(f"{_py(f.name)}: {_features_code(f.type)}" for f in t) + "}"
    if pa.types.is_list(t):
        return f"List({_features_code(t.value_type)})"
    return f"Value({_py(_DTYPES[t])})"


def string_features_code(config: str) -> str:
    """Python for ``config``'s features with every JSON column as a string (what a
    ``datasets`` without the ``Json`` feature loads it with)."""
    fields = [f"    {_py(f.name)}: {_features_code(f.type)}," for f in storage_schema(config)]
    return "Features(\n    {\n" + "\n".join("    " + x for x in fields) + "\n    }\n)"


VERIFIERS_MARKER = "# verifiers environment over the tasks config"


def verifiers_snippet(repo: str, tag: str) -> str:
    """The card's verifiers example (a test runs it against a local release)."""
    return "\n".join(
        [
            VERIFIERS_MARKER,
            "import verifiers as vf",
            "from datasets import load_dataset",
            "",
            f'tasks = load_dataset({_py(repo)}, "tasks", split="train", revision={_py(tag)})',
            "",
            "",
            "def solved(completion, answer, info, **kwargs) -> float:",
            "    # the gold answer is withheld (answer is empty): score with the task's own",
            '    # verifier, which info["task_id"] names',
            "    return 0.0",
            "",
            "",
            "env = vf.SingleTurnEnv(dataset=tasks, rubric=vf.Rubric(funcs=[solved]))",
        ]
    )


def _load_section(f: CardFacts) -> str:
    repo = f.repo_id or "<namespace>/<name>"
    tag = f.tag or TAG_PLACEHOLDER
    names = f.split_names
    code = [
        "from datasets import load_dataset",
        "",
        f"REPO = {_py(repo)}",
        f"TAG = {_py(tag)}  # this release",
        "",
    ]
    shown = one_line(", ".join(names))
    for name in f.configs:
        code.append(f"{name} = load_dataset(REPO, {_py(name)}, revision=TAG)  # {shown}")
    first = next(iter(f.configs), DEFAULT_CONFIG)
    code.append(f"train = load_dataset(REPO, {_py(first)}, split={_py(names[0])}, revision=TAG)")
    json_names = ", ".join(md_code(c) for c in f.configs if uses_json_type(c))
    out = [
        "## Load it\n\n"
        "Pin the release tag: the repository's `main` moves on with every release, a tag "
        "never does. Tags are `release-<YYYYMMDD>-<HHMMSS>-<digest>` (the release's time in "
        "UTC, by default its newest trial's), so the newest release is the last tag in sorted "
        "order.\n\n"
        f"Needs `datasets` {MIN_DATASETS} or later. "
        f"Configs with Arrow JSON columns ({json_names or 'none'}) load as they are from "
        f"`datasets` {MIN_DATASETS_JSON} on (its `Json` feature); older releases load them "
        "with the string features below.\n\n" + md_fence("\n".join(code), "python"),
        "\nA local copy of this folder loads the same way with its path in place of `REPO` "
        "and no `revision`.\n\n",
    ]
    json_configs = [c for c in f.configs if uses_json_type(c)]
    for name in json_configs:
        fallback = [
            f"# datasets {MIN_DATASETS} and other releases older than {MIN_DATASETS_JSON}: "
            f"{name}'s JSON columns as strings",
            "from datasets import Features, List, Value, load_dataset",
            "",
            f"{name.upper()}_STRINGS = {string_features_code(name)}",
            f"{name} = load_dataset(REPO, {_py(name)}, revision=TAG, "
            f"features={name.upper()}_STRINGS)",
        ]
        out.append(
            f"### `{name}` with `datasets` older than {MIN_DATASETS_JSON}\n\n"
            "Those releases do not know the Arrow JSON type; pass string features (tool-call "
            "`arguments` and `tools` are then JSON strings, as in `prime_sft`):\n\n"
            + md_fence("\n".join(fallback), "python")
            + "\n"
        )
    no_rev = [
        "from datasets import load_dataset",
        "from huggingface_hub import snapshot_download",
        "",
        "# 1. files of the tag, by URL (any reader that takes data_files or hf:// paths)",
        f'data_files = {{split: f"hf://datasets/{{REPO}}@{{TAG}}/data/{first}/{{split}}-*.parquet"'
        f" for split in {_py_tuple(names)}}}",
        f'{first} = load_dataset("parquet", data_files=data_files)',
        "",
        "# 2. a local snapshot of the tag: its folder is a dataset name any trainer takes",
        'path = snapshot_download(REPO, repo_type="dataset", revision=TAG)',
        f"{first} = load_dataset(path, {_py(first)})",
    ]
    out.append(
        "### Without a revision\n\n"
        "For a trainer that takes a dataset name but no revision (or whose config has no "
        "field for one), point it at the tag's files or at a local snapshot of the tag, "
        "never at `main`:\n\n" + md_fence("\n".join(no_rev), "python") + "\n"
    )
    return "".join(out)


def _splits_section(f: CardFacts) -> str:
    names = f.split_names
    sp = f.splits or {}
    rows = []
    for name in names:
        tasks = (sp.get("tasks") or {}).get(name, [])
        rows.append(
            (
                name,
                len(tasks),
                *(f.split_rows.get(c, {}).get(name, 0) for c in f.configs),
                ", ".join(tasks),
            )
        )
    out = ["## Splits\n\n"]
    if len(names) > 1:
        out.append(
            f"Split by task, never by trial: no task is in both {md_code(names[0])} and "
            f"{md_code(names[1])}, and every config splits the same way. A task is held out when "
            f"the sha256 of `<seed>:<task id>`, read as a fraction of 2^64, is below the test "
            f"fraction ({md_text(sp.get('test_fraction'))}, seed {md_text(sp.get('seed'))}, "
            f"from the {md_text(sp.get('source'))}), so a task keeps its split from release "
            "to release. "
            "Evaluate on the held-out tasks only.\n\n"
        )
    else:
        out.append(
            f"One split, {md_code(names[0])} (test fraction "
            f"{md_text(sp.get('test_fraction'))}, from the {md_text(sp.get('source'))}). "
            "Nothing is held out: do not report evaluation results on "
            "these tasks as held-out results.\n\n"
        )
    if sp.get("note"):
        out.append(f"Note: {md_text(sp['note'])}.\n\n")
    out.append(_table(["split", "tasks", *f.configs, "task ids"], rows))
    return "".join(out) + "\n"


def _py_tuple(names: Sequence[str]) -> str:
    return "(" + ", ".join(f'"{n}"' for n in names) + ")"


# TRL chat templates (``trl/chat_templates/<name>.jinja``) that cannot take ``trl_sft``'s
# object arguments: why, and what to train with instead.  ``tools/trl_sft_smoke.py check``
# fails when a template needs string arguments and the card does not name it.
STRING_ARGUMENT_TEMPLATES: dict[str, tuple[str, str]] = {
    "deepseekv3": (
        "the original DeepSeek-V3 template joins `arguments` to text with `+`",
        "`prime_sft`; or `trl_sft` with TRL's `deepseekv3_training`, which takes objects",
    ),
}


def _trainers_section(f: CardFacts) -> str:
    out = [
        "## Use with trainers\n\n",
        "Each config gives tool-call `arguments` in the form its trainer reads: JSON strings "
        "for Prime-RL and verifiers (`rollouts`, `prime_sft`; `tools`, `tool_defs`, "
        "`metrics`, `trajectory` and `info` are JSON strings there too), objects for TRL chat "
        "templates (`trl_sft`: `arguments` and `tools` have the Arrow JSON type, so "
        '`row["completion"][0]["tool_calls"][0]["function"]["arguments"]` is a dict). '
        "In `rollouts`, `prompt` is the initial prompt (system prompt and instruction) and "
        "`messages == prompt + completion` on every row.\n\n",
    ]
    out.append(
        _table(
            ["config", "for", "tool-call arguments"],
            [(c, _prose(CONFIG_CONSUMERS[c]), ARGUMENTS_FORM[c]) for c in f.configs],
        )
    )
    out.append(
        "\nTRL's chat templates take `trl_sft`'s object arguments, except those that need "
        "string arguments; with them, train on `prime_sft` (`SFTTrainer` takes its "
        "`messages` and its JSON-string `tools` as they are):\n\n"
    )
    out.append(
        _table(
            ["TRL chat template", "why it needs string arguments", "use"],
            [
                (md_code(name, in_table=True), _prose(why), _prose(use))
                for name, (why, use) in STRING_ARGUMENT_TEMPLATES.items()
            ],
        )
    )
    out.append(
        "\nThe other way round, most templates write string arguments double-encoded or "
        "refuse them: train those on `trl_sft`, not `prime_sft`.\n\n"
        "For SFT on demonstrations, filter on `reward` (or `outcome` in `rollouts`): "
        "failed trials the review attributed to the model are exported too.\n\n"
    )
    if "tasks" in f.configs:
        out.append(
            "### A verifiers environment\n\n"
            "The `tasks` config is a verifiers environment dataset, one row per task "
            "(`example_id`, `prompt`, `answer`, `info`, `task`):\n\n"
            + md_fence(
                verifiers_snippet(f.repo_id or "<namespace>/<name>", f.tag or TAG_PLACEHOLDER),
                "python",
            )
            + "\n"
        )
    return "".join(out)


def _structure_section(f: CardFacts) -> str:
    return schema_markdown(f.configs)


def schema_markdown(configs: Iterable[str]) -> str:
    """The published schema of ``configs`` as Markdown (the card's "Dataset structure";
    ``docs/dataset.md`` holds it for every config)."""
    out = [f"## Dataset structure (schema version {SCHEMA_VERSION})\n\n"]
    out.append(
        "A message is `{role, content, tool_calls, tool_call_id, name}` (OpenAI chat) with "
        '`content` a string; `tool_calls` items are `{id, type: "function", function: '
        "{name, arguments}}` with `arguments` a JSON object, written as its JSON text "
        "(`string`) or with the Arrow JSON type (`json`) as the column's type says. A type "
        "`json (…)` is the Arrow JSON type, `string (JSON …)` the JSON text.\n"
    )
    for name in configs:
        out.append(f"\n### `{name}`\n\n")
        out.append(
            _table(
                ["column", "type", "null", "description"],
                [
                    (
                        md_code(c.name, in_table=True),
                        md_code(c.type_text, in_table=True),
                        "yes" if c.nullable else "no",
                        _prose(c.description),
                    )
                    for c in CONFIGS[name]
                ],
            )
        )
    return "".join(out)


def _uses_section() -> str:
    return (
        "## Intended use\n\n"
        "- Supervised fine-tuning of tool-using agents on reviewed, healthy trajectories "
        "(`trl_sft` for TRL, `prime_sft` for Prime-RL).\n"
        "- RL and evaluation reuse of the prompts and outcomes (`rollouts`, with the fields "
        f"verifiers datasets carry; `task` is `{VERIFIERS_TASK}`).\n"
        "- Evaluation on the held-out tasks of the test split, and analysis of agent "
        "behaviour across harnesses, models and skill modes.\n\n"
        "## Out-of-scope use\n\n"
        "- Reporting results on training-split tasks as held-out results, or these rewards "
        "as official benchmark scores.\n"
        "- Recovering gold answers, verifier sources or hidden tests: they are withheld "
        "(`answer` is always empty), and the task's verifier is the only judge.\n"
        "- Training models that compete with a model provider whose terms forbid it (see "
        "Licensing).\n"
        "- Identifying or profiling people who appear in task content.\n\n"
    )


def _limitations_section(f: CardFacts) -> str:
    n_tasks = len({r.get("task_id") for r in f.rows})
    n_models = len({r.get("model") for r in f.rows})
    return (
        "## Limitations and biases\n\n"
        f"- Small and planned, not sampled: {n_tasks} task(s), {n_models} model(s), the "
        "harnesses and skill modes of one experiment matrix (see Counts); nothing here "
        "reflects how agents are used in the wild.\n"
        "- A reward is one verifier's judgement: a passing trial can still hold wrong or "
        "unsafe steps the verifier does not test, and a failing one useful ones.\n"
        "- Private reasoning is removed, so assistant turns lack the reasoning that led to "
        "them; raw provider bodies are dropped.\n"
        "- Redaction is pattern-based (secrets, host paths); personal data in task content "
        "is not detected.\n"
        "- The held-out split is drawn by task hash, not balanced by difficulty or skill, "
        "and is small when there are few tasks.\n\n"
    )


def _citation_section(f: CardFacts) -> str:
    tag = f.tag or TAG_PLACEHOLDER
    owner = (f.repo_id or "").split("/", 1)[0] or "bf-assets"
    key = re.sub(r"[^A-Za-z0-9]+", "_", f"{owner}_{tag}").strip("_").lower()
    where = f"Hugging Face Hub dataset {f.repo_id}, " if f.repo_id else ""
    fields = [
        ("title", f.pretty_name),
        ("author", owner),
        *([("year", f.year)] if f.year else []),
        ("howpublished", f"{where}revision {tag}"),
        ("note", f"Reviewed and curated with bf-assets {pipeline_version()}"),
    ]
    body = ",\n".join(f"  {k} = {{{_bib(v)}}}" for k, v in fields)
    return (
        "## Citation\n\n"
        "Cite the release you used (its tag), and the task source and models as their own "
        "terms ask.\n\n" + md_fence(f"@misc{{{key},\n{body}\n}}", "bibtex")
    )


def _bib(v: str) -> str:
    return one_line(str(v)).replace("{", "(").replace("}", ")").replace("\\", "/")


def render_license(facts: CardFacts) -> str:
    """The bundle's ``LICENSE`` (for ``license: other``): the terms the card's Licensing
    section states, as a file the ``license_link`` can point at."""
    f = _cleaned(facts)
    models = sorted({str(r.get("model")) for r in f.rows if r.get("model")})
    refs = ", ".join(f.source_refs) or "none recorded"
    lines = [
        f"{f.pretty_name}: terms of use ({LICENSE_NAME})",
        "",
        "This dataset combines material under different terms; no single license covers it.",
        "",
        "1. Task content (instructions, files and tool outputs from the benchmark tasks)",
        "   follows the license of the task source it came from. Task source refs of this",
        f"   release: {refs}.",
        "2. Model outputs (assistant turns and tool calls) are subject to the terms of the",
        "   provider of each model, some of which restrict using outputs to train models",
        "   that compete with theirs. Models in this release: "
        + (", ".join(models) or "none")
        + ".",
        "3. The curation (selection, cleaning, schema, card, manifest and review report) is",
        "   provided as is, without warranty of any kind.",
        "",
        "Check the terms that apply to your use before training on or redistributing it.",
        "",
    ]
    return "\n".join(lines)


CARD_EXCLUDED_PER_REASON = 50


def _excluded_sample(excluded: Sequence[Any]) -> list[Any]:
    """The first :data:`CARD_EXCLUDED_PER_REASON` excluded trials of each reason, in order."""
    seen: Counter[str] = Counter()
    out = []
    for e in excluded:
        seen[e.reason] += 1
        if seen[e.reason] <= CARD_EXCLUDED_PER_REASON:
            out.append(e)
    return out


def render_card(facts: CardFacts) -> str:
    n_excluded = len(facts.excluded)
    by_reason = Counter(e.reason for e in facts.excluded)  # our own reason names
    f = _cleaned(facts)
    n = f.configs.get(DEFAULT_CONFIG, 0)
    p = [_header(f), f"\n# {md_text(f.pretty_name)}\n\n"]
    p.append(
        "Agent-benchmark trajectories from Benchflow / SkillsBench runs, reviewed trial by "
        "trial by bf-assets and curated for training. "
        f"This release holds **{n}** rollouts"
        + (f" (tag {md_code(f.tag)})" if f.tag else "")
        + ".\n\n"
        f"Release verdict: **{md_text(f.verdict)}**.\n\n"
    )
    if f.dataset_reasons:
        p.append("Why: " + md_text("; ".join(f.dataset_reasons)) + ".\n\n")
    p.append(_load_section(f))
    p.append("## Configs\n\n")
    p.append(
        _table(
            ["config", "rows", "what"],
            [(c, k, _prose(CONFIG_DESCRIPTIONS[c])) for c, k in f.configs.items()],
        )
    )
    p.append("\n" + _splits_section(f))
    p.append("\n" + changes_markdown(f.changes))
    p.append(_trainers_section(f))
    p.append(_structure_section(f))
    p.append("\n## Counts\n\n")
    for key, title in (
        ("task_id", "task"),
        ("harness", "harness"),
        ("model", "model"),
        ("skill_mode", "skill mode"),
        ("outcome", "outcome"),
    ):
        p.append(f"By {title}:\n\n" + _table([title, "rollouts"], _counts(f.rows, key)) + "\n")
    if f.results is not None:
        p.append(card_markdown(f.results, md_cell))
    p.append(_uses_section())
    p.append("## How it was built and reviewed\n\n")
    reviewed = len(f.rows) + n_excluded
    p.append(
        f"- {reviewed} trial(s) reviewed: {len(f.rows)} exported, {n_excluded} "
        f"excluded (listed below with their reasons); release verdict **{md_text(f.verdict)}** "
        "(`checks.md` §3).\n"
        "- Every exported trial passed the hard trajectory gate and the audits of the review "
        "contract (`checks.md`: skills, reward hacking, verifier isolation, attribution, "
        "paths): healthy outcome (`pass` / `fail` attributed to the model), "
        "`training_ready`, verdict `publishable`.\n"
        "- One dataset review decides every trial: the newest healthy attempts of each cell of "
        "the experiment plan fill its slots (by start time, then rollout name); older attempts "
        "are `superseded`, cells the plan does not list are `unplanned`. Oracle and no-op "
        "lanes, errored, partial, timed-out, quarantined and rejected trials are never "
        "exported. The review report that decided this release ships with it in `report/`.\n"
        "- Rows are ordered by `rollout_id`; the shards are deterministic (same input, same bytes).\n"
    )
    p.append(f"\n## Excluded trials ({n_excluded})\n\n")
    p.append(_table(["reason", "trials"], sorted(by_reason.items())) + "\n")
    # The card stays readable (and its size bounded) on any corpus: the per-trial table
    # names the first trials of each reason; meta/excluded.jsonl lists every excluded trial.
    shown = f.excluded
    p.append(
        _table(
            ["job", "rollout", "outcome", "verdict", "reason", "detail"],
            [(e.job, e.rollout, e.outcome, e.verdict, e.reason, e.detail) for e in shown],
        )
    )
    if len(shown) < n_excluded:
        p.append(
            f"\n{len(shown)} of {n_excluded} excluded trials are listed here (at most "
            f"{CARD_EXCLUDED_PER_REASON} per reason); `{EXCLUDED_PATH}` (one line per trial) "
            "and `report/review.json` list every one with its reason.\n"
        )
    if f.not_ingested:
        p.append(
            "\nFound under the run roots but not reviewed (nothing of them is included): "
            + ", ".join(md_code(j) for j in f.not_ingested)
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
        "raw provider response bodies are dropped. Tool-call arguments are parsed before "
        "cleaning, so they are cleaned as values too. The published files are scanned again "
        "before release.\n\n"
    )
    st = f.stats.to_dict()
    p.append(
        _table(
            ["what", "kind", "count"],
            [
                (w, md_code(d["kind"], in_table=True), d["count"])
                for w in ("redactions", "host_paths", "banned_keys", "reasoning")
                for d in st[w]
            ],
        )
    )
    p.append(
        "\nNot covered: personal data such as names or e-mail addresses in task content is not detected.\n\n"
    )
    p.append(_limitations_section(f))
    p.append("## Residual risk\n\n" + "".join(f"- {r}\n" for r in RESIDUAL_RISK))
    p.append("\n## Provenance\n\n")
    p.append(f"- Pipeline: bf-assets {pipeline_version()}\n")
    p.append("- Jobs: " + (", ".join(md_code(j) for j in f.jobs) or "_none_") + "\n")
    p.append(
        "- Task source refs: "
        + (", ".join(md_code(r) for r in f.source_refs) or "_none recorded_")
        + "\n"
    )
    p.append(
        f"- Manifest with per-file sha256, the splits and every source trial: `{MANIFEST_PATH}`; "
        f"every excluded trial with its reason: `{EXCLUDED_PATH}`; checksums: `{CHECKSUMS_PATH}`.\n"
    )
    p.append(
        "\n## Licensing\n\nTask content follows the task source's license. Model outputs are "
        "subject to each model provider's terms, some of which restrict training competing "
        "models."
        + (
            f" The terms are in [{md_code(f.license_file)}]({md_link(f.license_file)}).\n\n"
            if f.license_file
            else "\n\n"
        )
    )
    p.append(_citation_section(f))
    return DatasetCard("".join(p)).content
