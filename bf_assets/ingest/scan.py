"""One pass over a trial's files: every check reads the :class:`TrialData` this builds.

Each file is opened once.  Trajectories are streamed and folded into compact facts (the
selected exchanges, counts, tool events for the audits); the training row's steps are
checked as they stream past.  File inventory (size, sha256, lines) is gathered in the same
pass.  Nothing here raises for bad input; read problems are kept as issues per file.

The big files' repeated conversation is parsed once (:mod:`bf_assets.ingest.fastjson`).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bf_assets.ingest.ctrf import CTRF_FILE, CtrfFacts, ctrf_facts
from bf_assets.ingest.discovery import TRIAL_ARTIFACT_DIRS, TRIAL_MARKERS, TrialRef
from bf_assets.ingest.exchanges import (
    ExchangeLog,
    RequestHistory,
    request_observations,
    response_actions,
)
from bf_assets.ingest.fastjson import LineParser
from bf_assets.ingest.harbor import HarborLog, scan_harbor
from bf_assets.ingest.identity import Identity, identify, refine_skill_mode
from bf_assets.ingest.messages import StepFacts, StepValidator
from bf_assets.ingest.readers import (
    DEFAULT_LIMITS,
    Document,
    FileStats,
    IssueKind,
    JsonlFile,
    ReadIssue,
    ReadLimits,
    escape_name,
    hash_file,
    iter_jsonl,
    read_document,
    resolve_file,
)
from bf_assets.ingest.rowstream import RowsRead, read_rows
from bf_assets.ingest.upstream import UpstreamFiles, read_upstream

ACP_FILE = "trajectory/acp_trajectory.jsonl"
LLM_FILE = "trajectory/llm_trajectory.jsonl"
ROWS_FILE = "results.jsonl"
AGENT_EVENT_TYPES = frozenset({"tool_call", "agent_message", "agent_thought", "final"})
MAX_TOOL_EVENTS = 20_000
MAX_EVENT_TEXT = 8_192
# An LLM trajectory at least this big is read reusing each request's repeated history.
LINE_REUSE_MIN_BYTES = 1024 * 1024


@dataclass(slots=True)
class BadLine:
    line: int
    message: str
    excerpt: str | None = None


@dataclass(slots=True)
class AcpFacts:
    present: bool = False
    issues: list[ReadIssue] = field(default_factory=list)  # file-level
    objects: int = 0
    bad_lines: list[BadLine] = field(default_factory=list)
    untyped_lines: list[int] = field(default_factory=list)
    unreadable_lines: list[BadLine] = field(default_factory=list)
    warnings: list[ReadIssue] = field(default_factory=list)
    type_counts: Counter[str] = field(default_factory=Counter)
    agent_events: int = 0
    tool_calls: int = 0
    first_agent_line: int | None = None
    last_agent_line: int | None = None
    first_verifier_line: int | None = None
    has_oracle_event: bool = False
    # Tool calls as the audits need them: (line, kind/tool, title or command, text, status)
    tool_events: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class LlmFacts:
    present: bool = False
    issues: list[ReadIssue] = field(default_factory=list)
    bad_lines: list[BadLine] = field(default_factory=list)
    unreadable_lines: list[BadLine] = field(default_factory=list)
    warnings: list[ReadIssue] = field(default_factory=list)
    objects: int = 0
    bad_request_body: list[int] = field(default_factory=list)
    bad_response_body: list[int] = field(default_factory=list)
    log: ExchangeLog = field(default_factory=ExchangeLog)
    first_request: Any = None  # the first real request body (startup prompt), for the audits
    first_request_line: int | None = None
    # Agent actions and observations for the audits, each kept once, capped.
    actions: list[dict[str, Any]] = field(
        default_factory=list
    )  # {line, exchange, id, name, arguments}
    observations: list[dict[str, Any]] = field(default_factory=list)  # {line, id, text}
    assistant_texts: list[dict[str, Any]] = field(default_factory=list)  # {line, text}

    @property
    def selected(self) -> list[int]:
        return self.log.selected()


@dataclass(slots=True)
class RowsFacts:
    read: RowsRead = field(default_factory=RowsRead)
    steps: list[StepFacts] = field(default_factory=list)

    @property
    def present(self) -> bool:
        return self.read.present

    def single_row(self) -> dict[str, Any] | None:
        rows = [r for r in self.read.rows if isinstance(r.top, dict)]
        return rows[0].top if len(self.read.rows) == 1 and rows else None


@dataclass(slots=True)
class FileEntry:
    path: str  # relative to the trial dir, posix
    size: int | None
    sha256: str | None
    lines: int | None
    issue: str | None = None


@dataclass(slots=True)
class TrialData:
    ref: TrialRef
    layout: str
    identity: Identity
    result: Document
    config: Document
    run_config: Document
    prompts: Document
    acp: AcpFacts
    llm: LlmFacts
    rows: RowsFacts
    files: list[FileEntry]
    file_issues: dict[str, list[ReadIssue]]  # per relative path, for documents and other files
    memo: dict[str, Any] = field(default_factory=dict)  # derived views, computed once per trial
    harbor: HarborLog = field(default_factory=HarborLog)  # Harbor agent logs (harbor layout)
    ctrf: CtrfFacts | None = None  # verifier/ctrf.json, when the trial has one
    read_files: tuple[str, ...] = ()  # the files the scan read (relative), in path order
    upstream: UpstreamFiles = field(default_factory=UpstreamFiles)  # mounts, reviews, judge

    def document(self, rel: str) -> Document | None:
        """The JSON document of the trial cited as ``rel`` (result.json, an upstream file)."""
        docs = {
            "result.json": self.result,
            "config.json": self.config,
            "run_config.json": self.run_config,
            "prompts.json": self.prompts,
        }
        return docs.get(rel) or self.upstream.documents.get(rel)

    @property
    def unread(self) -> bool:
        """The trial directory itself was not read (a link leaving the run root, a directory
        that cannot be listed, a dangling link): why is ``file_issues["."]``."""
        return self.ref.link_escape or "." in self.file_issues

    @property
    def result_obj(self) -> dict[str, Any]:
        return self.result.value if isinstance(self.result.value, dict) else {}

    @property
    def config_obj(self) -> dict[str, Any]:
        return self.config.value if isinstance(self.config.value, dict) else {}

    @property
    def run_config_obj(self) -> dict[str, Any]:
        return self.run_config.value if isinstance(self.run_config.value, dict) else {}


def _text_of(event: dict[str, Any]) -> str:
    parts: list[str] = []
    for key in ("title", "text", "content", "args", "command", "stdout"):
        v = event.get(key)
        if v is None:
            continue
        parts.append(v if isinstance(v, str) else _compact(v))
    s = "\n".join(parts)
    return s[:MAX_EVENT_TEXT]


def _compact(v: Any) -> str:
    import orjson

    try:
        return orjson.dumps(v).decode()[:MAX_EVENT_TEXT]
    except TypeError:  # e.g. nesting past orjson's encoder limit; never fall back to repr()
        return f"<{type(v).__name__} too deep to show>"


def _scan_acp(path: str, root: str, limits: ReadLimits) -> tuple[AcpFacts, FileStats]:
    facts = AcpFacts()
    state = JsonlFile()
    for item in iter_jsonl(path, root, state, limits):
        if item.issues:
            _fold_issues(
                item.issues, item.line, facts.bad_lines, facts.unreadable_lines, facts.warnings
            )
        ev = item.value
        if item.value is None:
            continue
        if not isinstance(ev, dict):
            facts.bad_lines.append(
                BadLine(item.line, "line is not a JSON object", _compact(ev)[:160])
            )
            continue
        facts.objects += 1
        etype = ev.get("type")
        if not isinstance(etype, str) or not etype:
            facts.untyped_lines.append(item.line)
            continue
        facts.type_counts[etype] += 1
        phase = str(ev.get("phase", "agent")).lower()
        if phase == "verifier" and facts.first_verifier_line is None:
            facts.first_verifier_line = item.line
        if etype == "oracle":
            facts.has_oracle_event = True
        if etype in AGENT_EVENT_TYPES and phase not in ("verifier", "harness"):
            facts.agent_events += 1
            if facts.first_agent_line is None:
                facts.first_agent_line = item.line
            facts.last_agent_line = item.line
        if etype == "tool_call" and phase not in ("verifier", "harness"):
            facts.tool_calls += 1
            if len(facts.tool_events) < MAX_TOOL_EVENTS:
                facts.tool_events.append(
                    {
                        "line": item.line,
                        "kind": ev.get("kind") or ev.get("tool") or ev.get("tool_name"),
                        "title": ev.get("title") if isinstance(ev.get("title"), str) else None,
                        "status": ev.get("status"),
                        "text": _text_of(ev),
                    }
                )
    facts.present = state.present
    facts.issues = state.issues
    return facts, state.stats


def _fold_issues(
    issues: list[ReadIssue],
    line: int,
    bad: list[BadLine],
    unreadable: list[BadLine],
    warnings: list[ReadIssue],
) -> None:
    for i in issues:
        if i.kind in (IssueKind.REPLACED_UTF8, IssueKind.NONFINITE):
            warnings.append(i)
        elif i.kind is IssueKind.INVALID_JSON:
            bad.append(BadLine(line, i.message, i.excerpt))
        else:
            unreadable.append(BadLine(line, i.message, i.excerpt))


def _collect_actions(
    facts: LlmFacts,
    row: dict[str, Any],
    req_body: Any,
    line: int,
    index: int,
    seen_obs: set[str],
    fresh: dict[str, int] | None = None,
) -> None:
    """Observations (new tool results; ``fresh`` skips the history the previous request
    already carried, whose ids are all in ``seen_obs``), then the response's actions."""
    if len(facts.observations) < MAX_TOOL_EVENTS:
        for cid, text in request_observations(req_body, MAX_EVENT_TEXT, fresh):
            if cid not in seen_obs:
                seen_obs.add(cid)
                facts.observations.append({"line": line, "id": cid, "text": text})
    resp = row.get("response")
    body = resp.get("body") if isinstance(resp, dict) else None
    if (
        not (isinstance(resp, dict) and resp.get("status_code") in (200, None))
        or len(facts.actions) >= MAX_TOOL_EVENTS
    ):
        return
    calls, texts = response_actions(body, MAX_EVENT_TEXT)
    for cid, name, args in calls:
        facts.actions.append(
            {"line": line, "exchange": index, "id": cid, "name": name, "arguments": args}
        )
    for text in texts[:4]:
        facts.assistant_texts.append({"line": line, "text": text})


def _scan_llm(path: str, root: str, limits: ReadLimits) -> tuple[LlmFacts, FileStats]:
    facts = LlmFacts()
    state = JsonlFile()
    seen_obs: set[str] = set()
    # In a big file, lines share their repeated messages (read-only here) and each request
    # is folded for what it adds to the previous one; a small file is read plainly.
    big = _size(path) >= LINE_REUSE_MIN_BYTES
    history = RequestHistory() if big else None
    parse = LineParser(limits).parse if big else None
    for item in iter_jsonl(path, root, state, limits, parse=parse):
        if item.issues:
            _fold_issues(
                item.issues, item.line, facts.bad_lines, facts.unreadable_lines, facts.warnings
            )
        row = item.value
        if row is None:
            continue
        if not isinstance(row, dict):
            facts.bad_lines.append(
                BadLine(item.line, "line is not a JSON object", _compact(row)[:160])
            )
            continue
        facts.objects += 1
        req, resp = row.get("request"), row.get("response")
        if isinstance(req, dict) and "body" in req and not isinstance(req.get("body"), dict):
            facts.bad_request_body.append(item.line)
        if isinstance(resp, dict) and "body" in resp and not isinstance(resp.get("body"), dict):
            facts.bad_response_body.append(item.line)
        ex = facts.log.add(row, item.line, history)
        req_body = req.get("body") if isinstance(req, dict) else None
        if ex.has_request and facts.first_request is None:
            facts.first_request = req_body
            facts.first_request_line = item.line
        last = history.last if history is not None else None
        fresh = last.fresh if last is not None and last.body is req_body else None
        _collect_actions(facts, row, req_body, item.line, ex.index, seen_obs, fresh)
    facts.present = state.present
    facts.issues = state.issues
    return facts, state.stats


def _scan_rows(path: str, root: str, limits: ReadLimits) -> RowsFacts:
    facts = RowsFacts()
    validator = StepValidator()
    saved = validator.state()

    def on_step(pos: int, step: Any) -> None:
        nonlocal saved
        if pos == 0:  # a row begins: what to go back to if its steps are withdrawn
            saved = validator.state()
        facts.steps.append(validator.facts(pos, step))

    def on_discard(n: int) -> None:
        del facts.steps[len(facts.steps) - n :]
        validator.restore(saved)

    # The validator only reads steps, so they may share messages with the previous one.
    facts.read = read_rows(path, root, on_step, limits, on_discard=on_discard, share=True)
    return facts


def _inside(trial: str, rel: str) -> str:
    """``os.path.join(trial, rel)`` for a relative ``rel`` (the hot path of every trial)."""
    return trial + rel if not trial or trial.endswith("/") else trial + "/" + rel


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _inventory(
    trial: str,
    root: str,
    known: dict[str, FileStats],
    issues: dict[str, list[ReadIssue]],
    *,
    hash_files: bool,
    listed: dict[str, list[os.DirEntry[str]]] | None = None,
    sizes: bool = True,
) -> list[FileEntry]:
    """Every file of the trial: parsed files reuse the stats of their read; the others are
    hashed when ``hash_files`` (the ``raw_trials`` inventory) or only sized (a review;
    ``sizes=False``: not even sized, when no one keeps the inventory)."""
    entries: list[FileEntry] = []
    base = os.fspath(trial)
    stack = [(base, "")]
    while stack:
        d, prefix = stack.pop()
        items = listed.pop(d, None) if listed else None
        if items is None:
            try:
                items = list(os.scandir(d))
            except OSError as exc:  # never a silent gap in what the review saw
                where = prefix.rstrip("/") or "."
                issues.setdefault(where, []).append(
                    ReadIssue(
                        IssueKind.IO_ERROR,
                        f"{escape_name(where)}/ cannot be listed ({exc.strerror or exc}); its "
                        "files were not read",
                    )
                )
                continue
        for e in items:
            if e.name.endswith(".tmp"):
                continue
            rel = prefix + e.name
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                if (
                    not prefix
                    and e.name not in TRIAL_ARTIFACT_DIRS
                    and any(os.path.lexists(os.path.join(e.path, m)) for m in TRIAL_MARKERS)
                ):
                    continue  # a nested trial: inventoried on its own
                stack.append((e.path, rel + "/"))
                continue
            if rel in known:
                st = known[rel]
                entries.append(FileEntry(rel, st.size, st.sha256, st.lines))
                continue
            if not hash_files:
                try:
                    plain = e.is_file(follow_symlinks=False)
                    size = e.stat(follow_symlinks=False).st_size if plain and sizes else None
                except OSError:
                    plain, size = False, None
                if plain:  # links and special files go through the safety check below
                    entries.append(FileEntry(rel, size, None, None))
                    continue
            fstats, issue = hash_file(e.path, root) if hash_files else check_link(e.path, root)
            if issue is not None:
                issues.setdefault(rel, []).append(issue)
                entries.append(FileEntry(rel, None, None, None, issue.message))
            else:
                assert fstats is not None
                entries.append(FileEntry(rel, fstats.size, fstats.sha256, fstats.lines))
    entries.sort(key=lambda f: f.path)
    return entries


def check_link(
    path: str | os.PathLike[str], root: str | os.PathLike[str]
) -> tuple[FileStats | None, ReadIssue | None]:
    """Size a linked file after checking it stays inside the root (no hashing)."""
    real, size, issue = resolve_file(path, root)
    if issue is not None:
        return None, issue
    return FileStats(size=size), None


def _listing(d: str, listed: dict[str, list[os.DirEntry[str]]]) -> set[str]:
    """The names in ``d``; its entries are kept in ``listed`` for the inventory (one
    listing per directory; a directory that cannot be listed is left out of ``listed``, and
    the inventory reports it)."""
    try:
        entries = list(os.scandir(d))
    except OSError:
        return set()
    listed[d] = entries
    return {e.name for e in entries}


def _unlisted_reason(trial: str, exc: OSError) -> str:
    """Why the trial directory could not be listed, for its ``GATE_UNREADABLE`` finding."""
    if os.path.islink(trial) and not os.path.exists(trial):
        return (
            "the trial directory is a link whose target does not exist or cannot be reached; "
            "not read"
        )
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return "the trial directory is gone (or is no longer a directory); not read"
    return f"the trial directory cannot be listed ({exc.strerror or exc}); not read"


def _unread_trial(ref: TrialRef, issue: ReadIssue) -> TrialData:
    """A trial whose directory was not read: nothing but why (``file_issues["."]``)."""
    return TrialData(
        ref,
        ref.layout,
        Identity(job=ref.job, rollout=ref.rollout),
        Document(),
        Document(),
        Document(),
        Document(),
        AcpFacts(),
        LlmFacts(),
        RowsFacts(),
        [],
        {".": [issue]},
    )


def scan_trial(
    ref: TrialRef, limits: ReadLimits = DEFAULT_LIMITS, *, hash_files: bool = True
) -> TrialData:
    """Read every file of a trial once and fold it into :class:`TrialData`.

    ``hash_files=False`` skips hashing the files no check parses (a review does not need
    their digests; the ``raw_trials`` inventory does)."""
    trial, root = ref.path, ref.root
    if ref.link_escape:
        issue = ReadIssue(
            IssueKind.LINK_ESCAPE,
            "the trial directory is a link that leaves the run root; not read",
        )
        return _unread_trial(ref, issue)
    # One listing per directory decides what to open: absent files cost no system call.
    listed: dict[str, list[os.DirEntry[str]]] = {}
    try:
        with os.scandir(trial) as it:
            listed[trial] = list(it)
    except OSError as exc:
        return _unread_trial(ref, ReadIssue(IssueKind.IO_ERROR, _unlisted_reason(trial, exc)))
    names = {e.name for e in listed[trial]}
    traj = _listing(_inside(trial, "trajectory"), listed) if "trajectory" in names else set()
    verifier = _listing(_inside(trial, "verifier"), listed) if "verifier" in names else set()

    def doc(name: str) -> Document:
        return read_document(_inside(trial, name), root, limits) if name in names else Document()

    result, config, run_config, prompts = (
        doc("result.json"),
        doc("config.json"),
        doc("run_config.json"),
        doc("prompts.json"),
    )
    acp, acp_stats = (
        _scan_acp(_inside(trial, ACP_FILE), root, limits)
        if "acp_trajectory.jsonl" in traj
        else (AcpFacts(), FileStats())
    )
    llm, llm_stats = (
        _scan_llm(_inside(trial, LLM_FILE), root, limits)
        if "llm_trajectory.jsonl" in traj
        else (LlmFacts(), FileStats())
    )
    rows = (
        _scan_rows(_inside(trial, ROWS_FILE), root, limits) if ROWS_FILE in names else RowsFacts()
    )
    file_issues: dict[str, list[ReadIssue]] = {}
    known: dict[str, FileStats] = {}
    for rel, doc in (
        ("result.json", result),
        ("config.json", config),
        ("run_config.json", run_config),
        ("prompts.json", prompts),
    ):
        if doc.present:
            known[rel] = doc.stats
            if doc.issues:
                file_issues[rel] = list(doc.issues)
    ctrf = None
    if "ctrf.json" in verifier:
        report = read_document(_inside(trial, CTRF_FILE), root, limits)
        if report.ok:
            known[CTRF_FILE] = report.stats
            ctrf = ctrf_facts(report.value)
        else:  # optional verifier output: no finding, the story says why it has no counts
            why = report.issues[0].message if report.issues else "not readable"
            ctrf = CtrfFacts(problem=why)
    for rel, present, stats in (
        (ACP_FILE, acp.present, acp_stats),
        (LLM_FILE, llm.present, llm_stats),
        (ROWS_FILE, rows.present, rows.read.stats),
    ):
        if present:
            known[rel] = stats
    ident = identify(
        layout=ref.layout,
        rel_path=ref.rel_path,
        job=ref.job,
        rollout=ref.rollout,
        result=result.value,
        config=config.value,
        run_config=run_config.value,
    )
    harbor = (
        scan_harbor(trial, root, ident.harness, result.value, names, limits)
        if ref.layout == "harbor"
        else HarborLog()
    )
    # The prompts the agent was given (prompts.json; a Harbor agent's first turn) can say
    # it was told to write its own skills: the mode as run.
    told = prompts.value if isinstance(prompts.value, list) else []
    refine_skill_mode(ident, [p for p in told if isinstance(p, str)], "prompts.json")
    refine_skill_mode(ident, [s.get("text") for s in harbor.startup], "agent log: first prompt")
    for rel, st in harbor.stats.items():
        if st.read:
            known.setdefault(rel, st)
    upstream = read_upstream(trial, root, names, ref.rollout, limits)
    for rel, updoc in upstream.documents.items():
        if updoc.stats.read and not rel.startswith("../"):
            known.setdefault(rel, updoc.stats)
    files = _inventory(
        trial, root, known, file_issues, hash_files=hash_files, listed=listed, sizes=limits.sizes
    )
    return TrialData(
        ref,
        ref.layout,
        ident,
        result,
        config,
        run_config,
        prompts,
        acp,
        llm,
        rows,
        files,
        file_issues,
        harbor=harbor,
        ctrf=ctrf,
        read_files=tuple(sorted(known)),
        upstream=upstream,
    )
