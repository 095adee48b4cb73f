"""The published schema, as data: one column list per config.

``PUBLISH_SCHEMA`` validates rows and Parquet files against these lists and the dataset
card renders them, so the documented schema and the checked one cannot drift apart.

Conventions (``reference/trainer-formats.md`` §1, §5.4):

* message lists are OpenAI chat messages ``{role, content, tool_calls, tool_call_id, name}``;
  ``content`` is always a string (text parts of a multi-part content are joined with a
  newline; any other part list is kept as its JSON text);
* JSON payloads (tool-call ``arguments``, tool definitions, metrics, trajectory steps, the
  verifiers ``info``) have the Arrow JSON type (``pa.json_()``, the ``arrow.json`` extension
  type, stored as the Parquet JSON logical type): ``datasets`` reads them as its ``Json``
  feature and hands out Python objects (``arguments`` is a dict), Arrow never unifies them
  into sparse structs, and readers that do not know the type (pandas, plain Parquet) see the
  JSON text.  In the Python rows of :mod:`bf_assets.curate.rows` (and in what
  ``pyarrow`` ``to_pylist`` gives back) these values are that JSON text, one compact
  serialization of the cleaned, parsed value;
* nulls are allowed only where a column says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

SCHEMA_VERSION = 2  # 2: JSON payloads typed as Arrow JSON; verifiers fields in rollouts

JSON = pa.json_()  # the arrow.json extension type (storage: string)
FUNCTION = pa.struct([pa.field("name", pa.string()), pa.field("arguments", JSON)])
TOOL_CALL = pa.struct(
    [pa.field("id", pa.string()), pa.field("type", pa.string()), pa.field("function", FUNCTION)]
)
MESSAGE = pa.struct(
    [
        pa.field("role", pa.string()),
        pa.field("content", pa.string()),
        pa.field("tool_calls", pa.list_(TOOL_CALL)),
        pa.field("tool_call_id", pa.string()),
        pa.field("name", pa.string()),
    ]
)
MESSAGES = pa.list_(MESSAGE)
TOKEN_USAGE = pa.struct(
    [
        pa.field(n, pa.int64())
        for n in (
            "input_tokens",
            "output_tokens",
            "total_tokens",
            "final_input_tokens",
            "final_output_tokens",
        )
    ]
)
TIMING_FIELDS = ("environment_setup", "agent_setup", "agent_execution", "verifier", "total")
TIMING = pa.struct([pa.field(n, pa.float64()) for n in TIMING_FIELDS])


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: pa.DataType
    kind: str  # what PUBLISH_SCHEMA checks per value (see bf_assets.curate.scan)
    description: str
    nullable: bool = False

    @property
    def type_text(self) -> str:
        return _TYPE_TEXT.get(self.kind, str(self.type))


# How the card names each kind of column: plain text, rendered inside a code span (so never
# a backtick in it).
_TYPE_TEXT = {
    "messages": "list<message>",
    "json_list": "json (list)",
    "json_object": "json (object)",
    "sha256": "string (sha256:<64 hex>)",
    "token_usage": "struct<int64 …>",
    "timing": "struct<float64 …>",
    "string_list": "list<string>",
}

_SLOT = [
    Column("task_id", pa.string(), "string", "Task id (the SkillsBench task directory name)."),
    Column("harness", pa.string(), "string", "Agent harness, normalised (`codex-acp`, …)."),
    Column("model", pa.string(), "string", "Upstream model id (never the proxy alias)."),
    Column(
        "skill_mode",
        pa.string(),
        "string",
        "`with-skill`, `no-skill` or `self-generated` (the agent wrote its own skills first).",
    ),
    Column("sandbox", pa.string(), "string", "Sandbox backend (`daytona`, `docker`, …)."),
    Column(
        "trial_index",
        pa.int64(),
        "int",
        "Repeat index of the slot in a model matrix; null when the run has one trial.",
        True,
    ),
]
_ID = Column(
    "rollout_id",
    pa.string(),
    "sha256",
    "sha256 over the sorted `path<TAB>sha256` lines of the trial's source artifacts: "
    "the row's stable identity and the file order of the shards.",
)
_REWARD = Column("reward", pa.float64(), "float", "Verifier reward of the trial (0.0–1.0).")
_TOOLS = Column(
    "tools",
    JSON,
    "json_list",
    "Tool definitions offered to the model: a list of OpenAI `{type: function, function: "
    "{name, description, parameters}}` objects (or the flat verifiers form).",
)
# What verifiers environments read of a dataset row (reference/trainer-formats.md §1.2).
VERIFIERS_TASK = "skillsbench"

ROLLOUTS: tuple[Column, ...] = (
    _ID,
    *_SLOT,
    Column("job", pa.string(), "string", "Job directory (the Dagster partition key)."),
    Column("rollout", pa.string(), "string", "Trial directory name inside the job."),
    Column("source_ref", pa.string(), "string", "Task source ref the trial ran against.", True),
    Column("task_digest", pa.string(), "string", "Digest of the task definition.", True),
    Column("started_at", pa.string(), "string", "Trial start as recorded by the harness.", True),
    Column("finished_at", pa.string(), "string", "Trial end as recorded by the harness.", True),
    Column("outcome", pa.string(), "outcome", "`pass` or `fail` (checks.md §1)."),
    _REWARD,
    Column(
        "metrics",
        JSON,
        "json_object",
        "The row's `metrics` object (tool calls, prompts, …).",
    ),
    Column(
        "token_usage",
        TOKEN_USAGE,
        "token_usage",
        "Token totals of the rollout: input, output, total, final input, final output.",
    ),
    Column("timing", TIMING, "timing", "Phase durations in seconds (null when not recorded)."),
    Column("training_ready", pa.bool_(), "true", "Always true: only ready rows are exported."),
    Column("stop_condition", pa.string(), "string", "Why the agent stopped (`agent_completed`)."),
    Column(
        "example_id",
        pa.int64(),
        "int",
        "verifiers `example_id`: one integer per task (the first 6 bytes of sha256 over the "
        "task id), the same in every split and release.",
    ),
    Column(
        "task",
        pa.string(),
        "string",
        f"verifiers `task` (the environment family): always `{VERIFIERS_TASK}`.",
    ),
    Column(
        "answer",
        pa.string(),
        "string",
        "verifiers `answer`: always empty. The gold answer is withheld (the review contract "
        "bans gold and verifier data from every row); `reward` is the verifier's score.",
    ),
    Column(
        "info",
        JSON,
        "json_object",
        "verifiers `info`: `{task_id, task_digest, source_ref, harness, model, skill_mode, "
        "sandbox, trial_index, rollout_id}`.",
    ),
    Column("prompt", MESSAGES, "messages", "Prompt window: the last user turn of the last step."),
    Column(
        "completion",
        MESSAGES,
        "messages",
        "What follows the prompt window: assistant turns and tool results.",
    ),
    Column(
        "messages",
        MESSAGES,
        "messages",
        "The whole conversation of the last step (its prompt followed by its completion).",
    ),
    _TOOLS,
    Column(
        "trajectory",
        JSON,
        "json_list",
        "Every step `{prompt, completion, reward, advantage, is_truncated, trajectory_id, "
        "extras, response_meta}` (tool-call `arguments` as objects here too); raw provider "
        "bodies are dropped, only `response_meta {id, model, finish_reason, usage}` is kept.",
    ),
    Column("n_steps", pa.int64(), "int", "Number of trajectory steps (LLM exchanges)."),
    Column("n_tool_calls", pa.int64(), "int", "Tool calls made by the agent."),
    Column("review_verdict", pa.string(), "verdict", "Per-trial verdict (`publishable`)."),
    Column("attribution", pa.string(), "string", "Attribution of a non-pass (`n/a` for passes)."),
    Column("n_findings", pa.int64(), "int", "Warning/info findings recorded for the trial."),
    Column(
        "finding_checks",
        pa.list_(pa.string()),
        "string_list",
        "Check ids of those findings, sorted.",
    ),
    Column("results_sha256", pa.string(), "string", "sha256 of the source `results.jsonl`."),
    Column(
        "llm_trajectory_sha256",
        pa.string(),
        "string",
        "sha256 of the source `trajectory/llm_trajectory.jsonl`.",
        True,
    ),
    Column(
        "acp_trajectory_sha256",
        pa.string(),
        "string",
        "sha256 of the source `trajectory/acp_trajectory.jsonl`.",
        True,
    ),
    Column("n_redactions", pa.int64(), "int", "Secrets replaced in this row."),
    Column("n_host_paths", pa.int64(), "int", "Absolute host paths replaced in this row."),
)

PRIME_SFT: tuple[Column, ...] = (
    _ID,
    *_SLOT[:4],
    _REWARD,
    Column(
        "messages",
        MESSAGES,
        "messages",
        "The whole conversation (Prime-RL SFT `messages`).",
    ),
    _TOOLS,
)

TRL_SFT: tuple[Column, ...] = (
    _ID,
    *_SLOT[:4],
    _REWARD,
    Column("exchange_index", pa.int64(), "int", "Position of the step in the trajectory."),
    Column("prompt", MESSAGES, "messages", "The step's prompt messages."),
    Column(
        "completion",
        MESSAGES,
        "messages",
        "Exactly one assistant message (TRL exchange mode).",
    ),
    _TOOLS,
)

CONFIGS: dict[str, tuple[Column, ...]] = {
    "rollouts": ROLLOUTS,
    "prime_sft": PRIME_SFT,
    "trl_sft": TRL_SFT,
}
DEFAULT_CONFIG = "rollouts"
CONFIG_DESCRIPTIONS = {
    "rollouts": "One row per exported trial: provenance, reward, usage, timing, the "
    "conversation and every trajectory step (the canonical superset), with the fields "
    "verifiers datasets carry (`example_id`, `prompt`, `completion`, `answer`, `info`, "
    "`task`, `reward`).",
    "prime_sft": "Prime-RL SFT projection: `messages` + `tools`, one row per trial.",
    "trl_sft": "TRL SFT projection in exchange mode: one row per LLM exchange, "
    "`prompt` + one-message `completion` + `tools`.",
}
# Per config: who reads it and whether that reader wants JSON strings instead of objects.
CONFIG_CONSUMERS = {
    "rollouts": "verifiers (`example_id`, `prompt`, `completion`, `answer`, `info`, `task`, "
    "`reward`) and analysis. verifiers takes `info` as a dict (or JSON string). Its "
    "`tool_defs` are the flat form: `tools` here is the OpenAI form Benchflow records.",
    "prime_sft": "Prime-RL SFT (`messages` + `tools`). Current Prime-RL accepts tool-call "
    "`arguments` and `tools` as objects or JSON strings; older releases call `json.loads` on "
    "both and need strings (see below).",
    "trl_sft": "TRL `SFTTrainer` (prompt-completion with `tools`). Chat templates take "
    "`arguments` as a mapping, which is what `datasets` returns: use the rows as they are "
    "(only a template that joins `arguments` as text, such as the original DeepSeek-V3 one, "
    "needs strings; TRL ships a patched one for the dict form).",
}


def arrow_schema(config: str) -> pa.Schema:
    return pa.schema(
        [pa.field(c.name, c.type, nullable=c.nullable) for c in CONFIGS[config]],
        metadata={b"bf_assets.schema_version": str(SCHEMA_VERSION).encode()},
    )


def storage_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every extension type (the JSON columns) replaced by its storage type:
    what ``pa.Table.from_pylist`` can build from the rows' JSON text."""
    if isinstance(t, pa.BaseExtensionType):
        return storage_type(t.storage_type)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(storage_type(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(storage_type(t.value_type)))
    return t


def storage_schema(config: str) -> pa.Schema:
    """:func:`arrow_schema` with string storage in place of the JSON type (cast back with
    ``table.cast(arrow_schema(config))``)."""
    s = arrow_schema(config)
    return pa.schema([f.with_type(storage_type(f.type)) for f in s], metadata=s.metadata)


def column_names(config: str) -> list[str]:
    return [c.name for c in CONFIGS[config]]
