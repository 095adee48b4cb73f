"""Gate checks on the presence and integrity of the trial's files.

``GATE_RESULT_*``, ``GATE_ACP_*``, ``GATE_LLM_*``, ``GATE_ROWS_*`` (file level) and
``GATE_UNREADABLE``.  Each function takes the scanned trial and returns findings.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

from bf_assets.findings import Finding, finding
from bf_assets.ingest.discovery import hidden_parts
from bf_assets.ingest.readers import (
    UNREADABLE_KINDS,
    IssueKind,
    ReadIssue,
    escape_name,
    undecodable,
)
from bf_assets.ingest.scan import (
    ACP_FILE,
    LLM_FILE,
    ROWS_FILE,
    AcpFacts,
    BadLine,
    LlmFacts,
    TrialData,
)

R = "result.json"
# The project's read warnings, by issue kind.
_WARNING_IDS = {IssueKind.REPLACED_UTF8: "READ_INVALID_UTF8", IssueKind.NONFINITE: "READ_NONFINITE"}


def _issue_findings(issues: list[ReadIssue], file: str, invalid_check: str) -> Iterator[Finding]:
    for i in issues:
        if i.kind in _WARNING_IDS:
            yield finding(
                _WARNING_IDS[i.kind], i.message, file=file, line=i.line, evidence=i.excerpt
            )
        elif i.kind in UNREADABLE_KINDS:
            yield finding("GATE_UNREADABLE", i.message, file=file, line=i.line, evidence=i.excerpt)
        elif i.kind is not IssueKind.MISSING:
            yield finding(invalid_check, i.message, file=file, line=i.line, evidence=i.excerpt)


def _bad_lines(bad: list[BadLine], check: str, file: str, what: str) -> Iterator[Finding]:
    if bad:
        first = bad[0]
        more = f" ({len(bad)} bad lines in all)" if len(bad) > 1 else ""
        yield finding(
            check,
            f"{what} line {first.line}: {first.message}{more}",
            file=file,
            line=first.line,
            evidence=first.excerpt,
        )


def _jsonl_read_findings(
    facts: AcpFacts | LlmFacts, file: str, invalid_check: str, what: str
) -> Generator[Finding, None, bool]:
    """Read problems of a streamed JSONL file: file-level ones (then the lines are not
    judged: returns False), unsafe lines, warnings and lines that are not JSON objects."""
    fatal = [i for i in facts.issues if i.kind is not IssueKind.MISSING]
    yield from _issue_findings(fatal, file, invalid_check)
    if fatal:
        return False
    for b in facts.unreadable_lines[:1]:
        n = len(facts.unreadable_lines)
        more = f" ({n} such lines)" if n > 1 else ""
        yield finding(
            "GATE_UNREADABLE", b.message + more, file=file, line=b.line, evidence=b.excerpt
        )
    yield from _issue_findings(facts.warnings[:1], file, invalid_check)
    yield from _bad_lines(facts.bad_lines, invalid_check, file, what)
    return True


def check_link_escape(t: TrialData) -> Iterator[Finding]:
    """Where the trial is, before what it holds: a link leaving the root, a trial directory
    that was not read (it cannot be listed, a dangling link), a hidden or temporary
    directory, names that are not UTF-8 (its own path and its files' names)."""
    if t.ref.link_escape:
        yield finding(
            "GATE_UNREADABLE",
            "the trial directory is a link that leaves the run root; not read",
            file=".",
        )
    else:
        for issue in t.file_issues.get(".", ()):
            yield finding("GATE_UNREADABLE", issue.message, file=".")
    yield from check_location(t)
    yield from check_file_names(t)


def check_location(t: TrialData) -> Iterator[Finding]:
    ref = t.ref
    hidden = hidden_parts(ref)
    if hidden:
        yield finding(
            "GATE_UNREADABLE",
            f"the trial sits in a hidden or temporary directory ({', '.join(hidden)}): a copy "
            "or a write in progress, never exported",
            file=".",
        )
    below = ref.path[len(ref.root) :] if ref.path.startswith(ref.root) else ref.path
    if undecodable(below):
        yield finding(
            "GATE_UNREADABLE",
            f"the trial's path holds a name that is not UTF-8 (shown escaped: {ref.rel_path})",
            file=".",
        )


def check_file_names(t: TrialData) -> Iterator[Finding]:
    bad = sorted({f.path for f in t.files if undecodable(f.path)})
    bad += sorted(rel for rel in t.file_issues if undecodable(rel) and rel not in bad)
    if bad:
        first = escape_name(bad[0])
        more = f" ({len(bad)} in all)" if len(bad) > 1 else ""
        yield finding(
            "GATE_UNREADABLE",
            f"a file name is not UTF-8: {first} (shown escaped){more}",
            file=first,
        )


def check_result_file(t: TrialData) -> Iterator[Finding]:
    doc = t.result
    if t.unread:
        return
    if not doc.present:
        yield finding(
            "GATE_RESULT_MISSING",
            "no result.json: the trial is in progress, was killed, or hit the host deadline",
            file="result.json",
        )
        return
    yield from _issue_findings(doc.issues, "result.json", "GATE_RESULT_INVALID")
    if doc.value is not None and not isinstance(doc.value, dict):
        yield finding(
            "GATE_RESULT_INVALID",
            f"result.json holds a {type(doc.value).__name__}, not an object",
            file="result.json",
        )
    elif doc.value is None and all(i.kind in _WARNING_IDS for i in doc.issues):
        # parsed (no read error was reported), and what it holds is JSON null
        yield finding("GATE_RESULT_INVALID", "result.json holds null, not an object", file=R)


def check_config_files(t: TrialData) -> Iterator[Finding]:
    for name, doc in (
        ("config.json", t.config),
        ("run_config.json", t.run_config),
        ("prompts.json", t.prompts),
    ):
        if doc.present:
            yield from _issue_findings(doc.issues, name, "GATE_UNREADABLE")
    for rel, issues in sorted(t.file_issues.items()):
        if rel in ("result.json", "config.json", "run_config.json", "prompts.json", "."):
            continue
        yield from _issue_findings(issues, escape_name(rel), "GATE_UNREADABLE")


def check_acp(t: TrialData) -> Iterator[Finding]:
    a = t.acp
    if t.unread:
        return
    if not a.present:
        yield finding(
            "GATE_ACP_MISSING",
            "trajectory/acp_trajectory.jsonl is absent: agent actions were not logged",
            file=ACP_FILE,
        )
        return
    lines_ok = yield from _jsonl_read_findings(a, ACP_FILE, "GATE_ACP_INVALID", "ACP")
    if not lines_ok:
        return
    if a.untyped_lines:
        yield finding(
            "GATE_ACP_INVALID",
            f"{len(a.untyped_lines)} ACP event(s) without a string 'type', first at line {a.untyped_lines[0]}",
            file=ACP_FILE,
            line=a.untyped_lines[0],
        )
    if a.objects == 0 and not a.bad_lines and not a.unreadable_lines:
        yield finding(
            "GATE_ACP_EMPTY", "trajectory/acp_trajectory.jsonl holds no events", file=ACP_FILE
        )
    elif a.objects > 0 and a.agent_events == 0 and not a.has_oracle_event:
        kinds = ", ".join(f"{k}={n}" for k, n in sorted(a.type_counts.items())) or "none typed"
        yield finding(
            "GATE_ACP_NO_AGENT_EVENTS",
            f"no tool call, agent message or thought among {a.objects} ACP events ({kinds})",
            file=ACP_FILE,
        )


def check_llm(t: TrialData) -> Iterator[Finding]:
    lf = t.llm
    if t.unread:
        return
    if not lf.present:
        yield finding(
            "GATE_LLM_MISSING",
            "trajectory/llm_trajectory.jsonl is absent: provider exchanges were not captured (ACP alone is not enough)",
            file=LLM_FILE,
        )
        return
    lines_ok = yield from _jsonl_read_findings(lf, LLM_FILE, "GATE_LLM_INVALID", "LLM trajectory")
    if not lines_ok:
        return
    for lines, what in (
        (lf.bad_request_body, "request.body"),
        (lf.bad_response_body, "response.body"),
    ):
        if lines:
            yield finding(
                "GATE_LLM_INVALID",
                f"{what} is not an object on {len(lines)} line(s), first {lines[0]}",
                file=LLM_FILE,
                line=lines[0],
            )
    if lf.objects == 0:
        if not lf.bad_lines and not lf.unreadable_lines:
            yield finding(
                "GATE_LLM_EMPTY",
                "trajectory/llm_trajectory.jsonl holds no exchanges",
                file=LLM_FILE,
            )
        return
    exs = lf.log.exchanges
    requests = sum(1 for e in exs if e.has_request)
    responses = sum(1 for e in exs if e.has_response)
    errors = sum(1 for e in exs if e.has_error)
    if requests == 0:
        yield finding(
            "GATE_LLM_NO_EXCHANGE", "no provider request with a body object", file=LLM_FILE
        )
    elif responses == 0:
        yield finding(
            "GATE_LLM_NO_EXCHANGE",
            f"{requests} request(s) but no provider response body ({errors} error row(s))",
            file=LLM_FILE,
        )
    elif responses < requests:
        yield finding(
            "GATE_LLM_NO_EXCHANGE",
            f"fewer responses ({responses}) than requests ({requests})",
            file=LLM_FILE,
        )
    if not any(e.usage_positive for e in exs if e.has_response):
        yield finding(
            "GATE_LLM_NO_USAGE", "no provider response reports positive token usage", file=LLM_FILE
        )
    else:
        selected = set(lf.selected)
        no_usage = [e for e in exs if e.index in selected and not e.usage_positive]
        if no_usage:
            yield finding(
                "GATE_LLM_NO_USAGE",
                f"{len(no_usage)} of {len(selected)} selected successful exchange(s) report no token usage",
                file=LLM_FILE,
                line=no_usage[0].line,
            )


def check_rows_file(t: TrialData) -> Iterator[Finding]:
    rr = t.rows.read
    if t.unread:
        return
    if not rr.present and not t.result.present:
        return  # the row is written with result.json: GATE_RESULT_MISSING is the root cause
    if not rr.present:
        yield finding(
            "GATE_ROWS_MISSING",
            "results.jsonl is absent: no training row was written",
            file=ROWS_FILE,
        )
        return
    fatal = [i for i in rr.issues if i.kind is not IssueKind.MISSING]
    yield from _issue_findings(fatal, ROWS_FILE, "GATE_ROWS_INVALID")
    if fatal:
        return
    for row in rr.rows:
        yield from _issue_findings(row.issues, ROWS_FILE, "GATE_ROWS_INVALID")
        if not row.issues and not isinstance(row.top, dict):
            yield finding(
                "GATE_ROWS_INVALID",
                f"line {row.line} is not a JSON object",
                file=ROWS_FILE,
                line=row.line,
            )
    objects = sum(1 for r in rr.rows if isinstance(r.top, dict))
    if len(rr.rows) != 1:
        yield finding(
            "GATE_ROWS_COUNT",
            f"results.jsonl holds {len(rr.rows)} rows; exactly one is required",
            file=ROWS_FILE,
        )
    elif objects == 0 and not rr.rows[0].issues:
        yield finding("GATE_ROWS_COUNT", "results.jsonl holds no row object", file=ROWS_FILE)
