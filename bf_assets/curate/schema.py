"""The published schema, as data: one column list per config.

``PUBLISH_SCHEMA`` validates rows and Parquet files against these lists and the dataset
card renders them, so the documented schema and the checked one cannot drift apart.

Conventions (``reference/trainer-formats.md`` §1, §5.4):

* message lists are OpenAI chat messages ``{role, content, tool_calls, tool_call_id, name}``;
  ``content`` is always a string (text parts of a multi-part content are joined with a
  newline; any other part list is kept as its JSON text);
* JSON payloads (tool-call ``arguments``, tool definitions, metrics, trajectory steps, the
  verifiers ``info``, the task list's ``info``) are plain ``string`` columns holding one
  compact JSON text of the cleaned, parsed value in every config but ``trl_sft``: every
  ``datasets`` 4.x and 5.x release reads them, Prime-RL ``json.loads`` the tool-call
  ``arguments`` and ``tools`` it finds as strings, verifiers takes ``info`` as a JSON string;
* in ``trl_sft`` (and only there) tool-call ``arguments`` and ``tools`` have the Arrow JSON
  type (``pa.json_()``, the ``arrow.json`` extension type, stored as the Parquet JSON logical
  type): a ``datasets`` that knows its ``Json`` feature hands out Python objects
  (``arguments`` is a dict, what TRL's chat templates take) that Arrow never unifies into
  sparse structs; an older one loads the config with string features passed in
  (:data:`MIN_DATASETS` and the card's fallback line);
* in the Python rows of :mod:`bf_assets.curate.rows` (and in what ``pyarrow`` ``to_pylist``
  gives back) every JSON value is that JSON text;
* nulls are allowed only where a column says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

# 3: JSON as strings outside trl_sft; prompt = the initial prompt; verifiers fields; tasks
SCHEMA_VERSION = 3

# The oldest ``datasets`` every config loads with as it is (plain ``load_dataset``), and the
# oldest that decodes ``trl_sft``'s JSON columns to objects (older ones need string features
# passed in).  ``tools/check_datasets_load.py`` loads a sample release with the first.
MIN_DATASETS = "4.6.1"
MIN_DATASETS_JSON = "4.7.0"

JSON = pa.json_()  # the arrow.json extension type (storage: string)
JSON_TEXT = pa.string()  # a JSON value as its compact text


def _messages_type(arguments: pa.DataType) -> pa.DataType:
    function = pa.struct([pa.field("name", pa.string()), pa.field("arguments", arguments)])
    tool_call = pa.struct(
        [
            pa.field("id", pa.string()),
            pa.field("type", pa.string()),
            pa.field("function", function),
        ]
    )
    message = pa.struct(
        [
            pa.field("role", pa.string()),
            pa.field("content", pa.string()),
            pa.field("tool_calls", pa.list_(tool_call)),
            pa.field("tool_call_id", pa.string()),
            pa.field("name", pa.string()),
        ]
    )
    return pa.list_(message)


MESSAGES = _messages_type(JSON_TEXT)  # arguments as JSON strings (Prime-RL, verifiers)
MESSAGE = MESSAGES.value_type  # one chat message (the fields every config shares)
MESSAGES_OBJECTS = _messages_type(JSON)  # arguments as objects (TRL chat templates)
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
        if self.kind in ("json_list", "json_object"):
            what = "list" if self.kind == "json_list" else "object"
            return f"json ({what})" if self.type == JSON else f"string (JSON {what})"
        if self.kind == "messages" and self.type == MESSAGES_OBJECTS:
            return "list<message> (arguments: json)"
        return _TYPE_TEXT.get(self.kind, str(self.type))


# How the card names each kind of column: plain text, rendered inside a code span (so never
# a backtick in it).
_TYPE_TEXT = {
    "messages": "list<message> (arguments: string)",
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
_TOOLS_TEXT = (
    "Tool definitions offered to the model: a list of OpenAI `{type: function, function: "
    "{name, description, parameters}}` objects (or the flat verifiers form)."
)
_TOOLS = Column("tools", JSON_TEXT, "json_list", _TOOLS_TEXT + " JSON text.")
_TOOLS_OBJECTS = Column("tools", JSON, "json_list", _TOOLS_TEXT)
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
        JSON_TEXT,
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
        "is_completed",
        pa.bool_(),
        "bool",
        "verifiers `is_completed`: the rollout ran to its end (as recorded; else whether a "
        "stop condition was recorded).",
    ),
    Column(
        "is_truncated",
        pa.bool_(),
        "bool",
        "verifiers `is_truncated`: the rollout or one of its steps was cut off (as recorded).",
    ),
    Column(
        "error",
        pa.string(),
        "string",
        "verifiers `error`: the rollout's error message, null when there was none.",
        True,
    ),
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
        JSON_TEXT,
        "json_object",
        "verifiers `info` (JSON text): `{task_id, task_digest, source_ref, harness, model, "
        "skill_mode, sandbox, trial_index, rollout_id}`.",
    ),
    Column(
        "prompt",
        MESSAGES,
        "messages",
        "The initial prompt: the conversation's leading system and user messages (system "
        "prompt and instruction), up to its first assistant turn.",
    ),
    Column(
        "completion",
        MESSAGES,
        "messages",
        "Everything after the initial prompt: assistant turns and tool results "
        "(`messages == prompt + completion`).",
    ),
    Column(
        "messages",
        MESSAGES,
        "messages",
        "The whole conversation (the last step's prompt followed by its completion).",
    ),
    _TOOLS,
    Column(
        "tool_defs",
        JSON_TEXT,
        "json_list",
        "verifiers `tool_defs` (JSON text): the same tools in the flat `{name, description, "
        "parameters, strict?}` form.",
    ),
    Column(
        "trajectory",
        JSON_TEXT,
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
    Column("prompt", MESSAGES_OBJECTS, "messages", "The step's prompt messages."),
    Column(
        "completion",
        MESSAGES_OBJECTS,
        "messages",
        "Exactly one assistant message (TRL exchange mode).",
    ),
    _TOOLS_OBJECTS,
)

TASKS: tuple[Column, ...] = (
    Column("task_id", pa.string(), "string", "Task id (the SkillsBench task directory name)."),
    Column(
        "example_id",
        pa.int64(),
        "int",
        "verifiers `example_id` of the task (the same as in `rollouts`).",
    ),
    Column(
        "prompt",
        MESSAGES,
        "messages",
        "The task's initial prompt (system prompt and instruction) as its first exported "
        "rollout (in `rollout_id` order) received it.",
    ),
    Column(
        "answer",
        pa.string(),
        "string",
        "verifiers `answer`: always empty (the gold answer is withheld).",
    ),
    Column(
        "info",
        JSON_TEXT,
        "json_object",
        "verifiers `info` (JSON text): `{task_id, task_digest, source_ref}`.",
    ),
    Column(
        "task",
        pa.string(),
        "string",
        f"verifiers `task` (the environment family): always `{VERIFIERS_TASK}`.",
    ),
)

CONFIGS: dict[str, tuple[Column, ...]] = {
    "rollouts": ROLLOUTS,
    "prime_sft": PRIME_SFT,
    "trl_sft": TRL_SFT,
    "tasks": TASKS,
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
    "tasks": "One row per task (verifiers environment dataset): `example_id`, `prompt`, "
    "`answer` (empty), `info`, `task`.",
}
# Per config: who reads it and whether that reader wants JSON strings instead of objects.
CONFIG_CONSUMERS = {
    "rollouts": "verifiers rollout rows (`example_id`, `prompt`, `completion`, `answer`, "
    "`info`, `task`, `reward`, `is_completed`, `is_truncated`, `error`, flat `tool_defs`) "
    "and analysis. Tool-call `arguments`, `tools`, `tool_defs` and `info` are JSON strings.",
    "prime_sft": "Prime-RL SFT (`messages` + `tools`): tool-call `arguments` and `tools` are "
    "JSON strings, which every Prime-RL release reads.",
    "trl_sft": "TRL `SFTTrainer` (prompt-completion with `tools`): tool-call `arguments` and "
    "`tools` are Arrow JSON, objects as chat templates take them (only a template that joins "
    "`arguments` as text, such as the original DeepSeek-V3 one, needs strings).",
    "tasks": "verifiers environments (`vf.Environment(dataset=…)`): one row per task; "
    "`info` is a JSON string, which verifiers accepts.",
}
# How each config's tool-call arguments read: what the card tells each trainer.
ARGUMENTS_FORM = {
    "rollouts": "JSON string",
    "prime_sft": "JSON string",
    "trl_sft": "object (Arrow JSON)",
    "tasks": "JSON string (prompts hold no tool calls)",
}


def uses_json_type(config: str) -> bool:
    """Whether ``config`` has an Arrow JSON column (it needs ``MIN_DATASETS_JSON`` to load
    as it is)."""
    return any(storage_type(c.type) != c.type for c in CONFIGS[config])


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
