"""Files Benchflow writes or reads beside a rollout that the gate does not need, read for the
audits and the trial's story (``docs/upstream.md`` says which upstream version this is):

- ``docker-compose-mounts.json``: the extra volumes the Docker sandbox mounted
  (``{"services": {"main": {"volumes": [...]}}}``, each volume a compose short string
  ``source:target[:mode]`` or a long-form object ``{type, source, target, read_only}``);
- ``review_report.json``: ``bench review``'s report (``trials[]`` with ``checks{criterion:
  {outcome | score, explanation}}`` and ``criterion_metadata[]``), in the rollout directory or
  in its job directory, matched to the rollout by ``trial_name`` / ``source_rollout``;
- ``evaluation_details.json`` (the rubric judge's ``{score, n_passed, n_total, results}``),
  ``llm_judge_score.txt`` (a pre-computed judge score) and ``answer.txt`` (the string-match
  reward's input).

Every read is bounded (the document readers of :mod:`bf_assets.ingest.readers`, text capped
at :data:`TEXT_CAP`); nothing raises: a file that is present but unreadable or of no known
shape is a :class:`Problem` the audit reports.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import Any

from bf_assets.ingest.readers import (
    Document,
    ReadLimits,
    read_document,
    read_upto,
    resolve_file,
)

MOUNTS_FILE = "docker-compose-mounts.json"
REVIEW_REPORT_FILE = "review_report.json"
JOB_REVIEW_REPORT = "../" + REVIEW_REPORT_FILE  # the job directory's report, as cited
EVALUATION_DETAILS_FILE = "evaluation_details.json"
JUDGE_SCORE_FILE = "llm_judge_score.txt"
ANSWER_FILE = "answer.txt"
DOCUMENT_CAP = 8 * 1024 * 1024  # a review report of a big job stays far under this
TEXT_CAP = 64 * 1024
MAX_MOUNTS = 200
MAX_CRITERIA = 100
EXPLANATION_MAX = 2_000


@dataclass(frozen=True, slots=True)
class Problem:
    file: str
    message: str
    key: str | None = None


@dataclass(frozen=True, slots=True)
class Mount:
    key: str  # key path in the mounts file, e.g. services.main.volumes[2]
    source: str | None
    target: str | None
    read_only: bool
    line_key: str = ""  # the key whose line the mount cites (its source, else itself)


@dataclass(frozen=True, slots=True)
class Criterion:
    file: str  # the report, as cited (review_report.json or ../review_report.json)
    key: str  # key path of the criterion's verdict in the report
    name: str
    outcome: str | None  # pass / fail / not_applicable (legacy and blocker criteria)
    score: int | None  # 0-2 (weighted criteria)
    blocker: bool
    explanation: str | None


@dataclass(slots=True)
class UpstreamFiles:
    documents: dict[str, Document] = field(default_factory=dict)  # cited name -> document
    problems: list[Problem] = field(default_factory=list)
    mounts: list[Mount] | None = None  # None: no mounts file
    criteria: list[Criterion] = field(default_factory=list)  # this rollout's reviewed criteria
    review_valid: bool | None = None
    judge_score: float | None = None
    judge_source: str | None = None
    judge_passed: int | None = None
    judge_total: int | None = None
    answer: str | None = None  # raw text (capped); the story cleans it


def _limits(limits: ReadLimits) -> ReadLimits:
    return replace(limits, max_document_bytes=min(limits.max_document_bytes, DOCUMENT_CAP))


def _doc(
    up: UpstreamFiles, path: str, cited: str, root: str, limits: ReadLimits
) -> Document | None:
    doc = read_document(path, root, _limits(limits))
    if not doc.present:
        return None
    up.documents[cited] = doc
    if doc.value is None:
        why = doc.issues[0].message if doc.issues else "holds null"
        up.problems.append(Problem(cited, f"{cited} is not readable: {why}"))
        return None
    return doc


def _text(path: str, root: str) -> tuple[str | None, str | None]:
    """``(text, problem)`` of a small text file (at most :data:`TEXT_CAP` bytes read)."""
    real, size, issue = resolve_file(path, root)
    if issue is not None or real is None:
        return None, (issue.message if issue is not None else "not readable")
    try:
        return read_upto(real, size, TEXT_CAP).decode("utf-8", errors="replace"), None
    except OSError as exc:
        return None, f"cannot read: {exc.strerror}"


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _float(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def parse_mount(key: str, item: Any) -> Mount | None:
    """One compose volume (short string or long-form object), or None when of no known shape."""
    if isinstance(item, str):
        parts = item.split(":")
        if len(parts) == 1:
            return Mount(key, None, parts[0], False)
        mode = parts[2] if len(parts) > 2 else ""
        return Mount(key, parts[0] or None, parts[1] or None, "ro" in mode.split(","))
    if isinstance(item, dict):
        src, dst = item.get("source"), item.get("target")
        if not isinstance(dst, str):
            return None
        src = src if isinstance(src, str) else None
        at = f"{key}.source" if src is not None else f"{key}.target"
        return Mount(key, src, dst, item.get("read_only") is True, at)
    return None


def mounts_of(value: Any) -> tuple[list[Mount], list[str]]:
    """The volumes of a mounts file and the key paths of entries of no known shape."""
    volumes: list[tuple[str, Any]] = []
    if isinstance(value, dict) and isinstance(value.get("services"), dict):
        for svc, spec in value["services"].items():
            vols = spec.get("volumes") if isinstance(spec, dict) else None
            if isinstance(vols, list):
                volumes += [(f"services.{svc}.volumes[{i}]", v) for i, v in enumerate(vols)]
            elif vols is not None:
                volumes.append((f"services.{svc}.volumes", vols))
    elif isinstance(value, list):
        volumes = [(f"[{i}]", v) for i, v in enumerate(value)]
    else:
        return [], [""]
    mounts: list[Mount] = []
    bad: list[str] = []
    for key, item in volumes[:MAX_MOUNTS]:
        m = parse_mount(key, item)
        if m is None:
            bad.append(key)
        else:
            mounts.append(m)
    return mounts, bad


def _names_match(entry: dict[str, Any], rollout: str) -> bool:
    name = entry.get("trial_name")
    src = entry.get("source_rollout")
    base = os.path.basename(src.rstrip("/\\").replace("\\", "/")) if isinstance(src, str) else None
    return rollout in (name, base)


def criteria_of(value: Any, cited: str, rollout: str) -> tuple[list[Criterion], bool | None]:
    """The reviewed criteria of ``rollout`` in a review report, and whether its review was
    structurally valid (None when the report does not name the rollout)."""
    trials = value.get("trials") if isinstance(value, dict) else None
    if not isinstance(trials, list):
        return [], None
    for i, entry in enumerate(trials):
        if not isinstance(entry, dict) or not _names_match(entry, rollout):
            continue
        meta = entry.get("criterion_metadata")
        blockers = {
            m.get("name")
            for m in (meta if isinstance(meta, list) else [])
            if isinstance(m, dict) and m.get("blocker") == 1
        }
        checks = entry.get("checks")
        out: list[Criterion] = []
        for name, check in list(checks.items() if isinstance(checks, dict) else [])[:MAX_CRITERIA]:
            if not isinstance(check, dict):
                continue
            expl = check.get("explanation")
            out.append(
                Criterion(
                    file=cited,
                    key=f"trials[{i}].checks.{name}",
                    name=str(name),
                    outcome=check.get("outcome") if isinstance(check.get("outcome"), str) else None,
                    score=_int(check.get("score")),
                    blocker=name in blockers,
                    explanation=expl[:EXPLANATION_MAX] if isinstance(expl, str) else None,
                )
            )
        return out, entry.get("review_valid") is True
    return [], None


def _under(path: str, root: str) -> bool:
    """``path`` is inside ``root`` (the job directory of a trial at the root is not)."""
    top = os.path.abspath(root)
    return os.path.abspath(path).startswith(top.rstrip(os.sep) + os.sep)


def read_upstream(
    trial: str, root: str, names: set[str], rollout: str, limits: ReadLimits
) -> UpstreamFiles:
    """Every upstream file of one rollout directory (``names``: its listing)."""
    up = UpstreamFiles()
    join = os.path.join
    if MOUNTS_FILE in names:
        doc = _doc(up, join(trial, MOUNTS_FILE), MOUNTS_FILE, root, limits)
        if doc is not None:
            mounts, bad = mounts_of(doc.value)
            up.mounts = mounts
            for key in bad:
                up.problems.append(
                    Problem(MOUNTS_FILE, "a mount entry of no known compose shape", key or None)
                )
    for path, cited in (
        (join(trial, REVIEW_REPORT_FILE), REVIEW_REPORT_FILE),
        (join(os.path.dirname(trial.rstrip("/")), REVIEW_REPORT_FILE), JOB_REVIEW_REPORT),
    ):
        if cited == REVIEW_REPORT_FILE and REVIEW_REPORT_FILE not in names:
            continue
        if cited == JOB_REVIEW_REPORT and not (_under(path, root) and os.path.lexists(path)):
            continue
        doc = _doc(up, path, cited, root, limits)
        if doc is None:
            continue
        crit, valid = criteria_of(doc.value, cited, rollout)
        if valid is not None:
            up.criteria, up.review_valid = crit, valid
            break
        if cited == REVIEW_REPORT_FILE:
            up.problems.append(Problem(cited, "the review report does not name this rollout"))
        else:  # a job's report that does not name this rollout cites nothing here
            del up.documents[cited]
    if EVALUATION_DETAILS_FILE in names:
        doc = _doc(up, join(trial, EVALUATION_DETAILS_FILE), EVALUATION_DETAILS_FILE, root, limits)
        if doc is not None:
            v = doc.value if isinstance(doc.value, dict) else {}
            score = _float(v.get("score"))
            if score is None:
                up.problems.append(
                    Problem(
                        EVALUATION_DETAILS_FILE, "no numeric score in evaluation details", "score"
                    )
                )
            else:
                up.judge_score, up.judge_source = score, EVALUATION_DETAILS_FILE
                up.judge_passed, up.judge_total = _int(v.get("n_passed")), _int(v.get("n_total"))
    if JUDGE_SCORE_FILE in names and up.judge_score is None:
        text, why = _text(join(trial, JUDGE_SCORE_FILE), root)
        first = (text or "").strip().splitlines()[:1]
        try:
            score = float(first[0]) if first else None
        except ValueError:
            score = None
        if score is None or not math.isfinite(score):
            up.problems.append(
                Problem(
                    JUDGE_SCORE_FILE, f"{JUDGE_SCORE_FILE} holds no score ({why or 'not a number'})"
                )
            )
        else:
            up.judge_score, up.judge_source = score, JUDGE_SCORE_FILE
    if ANSWER_FILE in names:
        text, why = _text(join(trial, ANSWER_FILE), root)
        if text is None:
            up.problems.append(Problem(ANSWER_FILE, f"{ANSWER_FILE} is not readable: {why}"))
        else:
            up.answer = text
    return up
