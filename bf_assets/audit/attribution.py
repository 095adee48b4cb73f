"""Experiment-fidelity causes the gate cannot name (``ATTR_EXPERIMENT_FIDELITY``, review-rules §7).

The gate (``bf_assets.gate.verdict.attribution_reason``) classifies from ``error_category``
and a few error-text markers.  This adds the specific cause: which declared environment key
(``run_config.required_env``, scene ``env_keys``, the task's ``task.toml``) is missing, a
missing credential, a dependency install, network, permission or resource failure, found in
the error texts or (for keys and resources) in the agent's tool output, or a broken
recording (a Harbor agent log that is present but cannot be read).  It always names the
cause in its message; when the gate already raised ``ATTR_EXPERIMENT_FIDELITY`` the caller
keeps the more specific of the two.
"""

from __future__ import annotations

import re
from pathlib import Path

from bf_assets.audit.events import Events
from bf_assets.audit.prefilter import may_contain
from bf_assets.findings import Finding, clip, finding
from bf_assets.ingest.scan import TrialData

NON_PASS = frozenset({"fail", "normal_timeout", "unhealthy"})
_MISSING_CTX = r"(?:missing|not set|unset|undefined|not defined|not provided|is required|required|empty|KeyError|not found|no value)"
_CRED_NAME = r"[A-Z][A-Z0-9_]*(?:API_?KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?|ACCESS_KEY(?:_ID)?)"
GENERIC_KEY = re.compile(
    rf"(?i:missing|unset|not set|undefined|no)\s+(?:required\s+)?(?:env(?:ironment)?\s+(?:variable|var)\s+)?[`'\"]?({_CRED_NAME})\b|"
    rf"\b({_CRED_NAME})[`'\"]?\s+(?i:is\s+)?(?i:not set|missing|unset|undefined|required|empty|not found)|"
    rf"KeyError:\s*['\"]({_CRED_NAME})['\"]"
)
# A credential name ends in one of these (upper case; see _CRED_NAME).
_CRED_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
# Every branch of RESOURCE contains one of these (lowercased).
RESOURCE_WORDS = (
    "no space left",
    "cannot allocate",
    "out of memory",
    "oom",
    "memoryerror",
    "disk quota",
    "137",
)
RESOURCE = re.compile(
    r"(?i)no space left on device|cannot allocate memory|out of memory|\boom[- ]?kill|"
    r"memoryerror|disk quota exceeded|exit(?:ed with)? code 137"
)
# In tool output only error-shaped mentions count (docs saying "X is required" do not).
OBSERVED_KEY = re.compile(
    rf"KeyError:\s*['\"]({_CRED_NAME})['\"]|\b({_CRED_NAME})\b[`'\"]?\s+(?:is\s+)?(?:not set|unset)\b|"
    rf"(?i:error|fatal|exception)\b[^\n]{{0,40}}(?i:missing|unset)\s+({_CRED_NAME})\b"
)
ERROR_CAUSES = (
    (
        re.compile(
            r"(?i)invalid[_ ]api[_ ]key|incorrect api key|401 unauthorized|authentication failed|"
            r"permission denied \(publickey\)|unauthorized: "
        ),
        "missing or invalid credential",
    ),
    (
        re.compile(
            r"(?i)install(?:ation)? failed|failed to install|no matching distribution|"
            r"could not find a version|unable to locate package|npm err!|modulenotfounderror|"
            r"command not found"
        ),
        "dependency install failure",
    ),
    (
        re.compile(
            r"(?i)could not resolve host|temporary failure in name resolution|network is unreachable|"
            r"connection (?:refused|reset|timed out)|getaddrinfo failed|certificate verify failed|proxyerror"
        ),
        "network failure",
    ),
    (re.compile(r"(?i)permission denied|operation not permitted|eacces"), "permission error"),
    (RESOURCE, "too little compute, memory or disk"),
)
_TOML_KEYS = re.compile(r"\"([A-Z][A-Z0-9_]{2,})\"")
_TOML_ASSIGN = re.compile(r"^\s*([A-Z][A-Z0-9_]{2,})\s*=", re.M)


def declared_env_keys(t: TrialData, task_dir: Path | None) -> dict[str, str]:
    """Environment keys the run or the task declares, with where each was declared."""
    keys: dict[str, str] = {}
    for name, doc in (("run_config.json", t.run_config_obj), ("config.json", t.config_obj)):
        v = doc.get("required_env")
        for k in v if isinstance(v, list) else []:
            if isinstance(k, str):
                keys.setdefault(k, f"{name}:required_env")
        for scene in doc.get("scenes") or [] if isinstance(doc.get("scenes"), list) else []:
            for role in (scene.get("roles") or []) if isinstance(scene, dict) else []:
                for k in (role.get("env_keys") or []) if isinstance(role, dict) else []:
                    if isinstance(k, str):
                        keys.setdefault(k, f"{name}:scenes.roles.env_keys")
    toml = task_dir / "task.toml" if task_dir is not None else None
    if toml is not None and toml.is_file():
        try:
            text = toml.read_text(encoding="utf-8", errors="replace")[:65536]
        except OSError:
            text = ""
        section = ""
        for line in text.splitlines():
            s = line.strip()
            if s.startswith("["):
                section = s.lower()
                continue
            if "env" in section or "env" in s.split("=", 1)[0].lower():
                for k in _TOML_KEYS.findall(s) + _TOML_ASSIGN.findall(line):
                    keys.setdefault(k, "task.toml")
    return keys


def _error_texts(t: TrialData) -> list[tuple[str, str]]:
    r = t.result_obj
    out = []
    for key in ("error", "verifier_error", "error_category", "verifier_error_category"):
        if isinstance(r.get(key), str) and r[key].strip():
            out.append((f"result.json:{key}", r[key]))
    exc = r.get("exception_info")
    if isinstance(exc, dict) and isinstance(exc.get("exception_message"), str):
        out.append(("result.json:exception_info", exc["exception_message"]))
    log = t.harbor.texts.get("trial.log") or ""
    for n, line in enumerate(log.splitlines()[:2000], start=1):  # Harbor's own failure lines
        if " failed: " in line or line.startswith(("Error", "ERROR")):
            out.append((f"trial.log:{n}", line))
            if len(out) >= 8:
                break
    return out


def attribution_findings(
    t: TrialData,
    ev: Events,
    *,
    outcome: str,
    existing_checks: frozenset[str] | set[str] = frozenset(),
    task_dir: Path | None = None,
) -> list[Finding]:
    """One ``ATTR_EXPERIMENT_FIDELITY`` naming the specific cause, when one is found."""
    if outcome not in NON_PASS:
        return []
    broken = list(t.harbor.problems)
    errors = _error_texts(t)
    observed = [(f"{o.file}:{o.line}", o.text) for o in ev.observations]
    causes: list[str] = []
    cite: tuple[str, str] | None = None
    for key, where in declared_env_keys(t, task_dir).items():
        rx = re.compile(rf"\b{re.escape(key)}\b")
        near = re.compile(
            rf"(?i){_MISSING_CTX}[^\n]{{0,60}}\b{re.escape(key)}\b|\b{re.escape(key)}\b[^\n]{{0,60}}{_MISSING_CTX}"
        )
        hit = next((e for e in errors if rx.search(e[1])), None) or next(
            (o for o in observed if near.search(o[1])), None
        )
        if hit:
            causes.append(f"missing {key} (declared in {where})")
            cite = cite or hit
    generic = [(GENERIC_KEY, src, text) for src, text in errors]
    generic += [(OBSERVED_KEY, src, text) for src, text in observed]
    for rx, src, text in generic:
        if not any(w in text for w in _CRED_WORDS):  # _CRED_NAME is case-sensitive
            continue
        m = rx.search(text)
        if m:
            key = next(g for g in m.groups() if g)
            if not any(key in c for c in causes):
                causes.append(f"missing credential {key}")
                cite = cite or (src, text)
    for src, text in errors:
        for rx, label in ERROR_CAUSES:
            if rx.search(text) and label not in causes:
                causes.append(label)
                cite = cite or (src, text)
    for src, text in observed:
        if (
            may_contain(text, RESOURCE_WORDS)
            and RESOURCE.search(text)
            and "too little compute, memory or disk" not in causes
        ):
            causes.append("too little compute, memory or disk")
            cite = cite or (src, text)
    for p in broken[:1]:  # a Harbor agent log that cannot be read: a broken recording
        causes.append(f"broken recording: {p.message}")
        cite = cite or (f"{p.file}:{p.line or ''}", p.message)
    if not causes:
        return []
    src, text = cite or ("result.json", "")
    file, _, line = src.partition(":")
    prior = (
        " (the gate also attributes it to the experiment)"
        if "ATTR_EXPERIMENT_FIDELITY" in existing_checks
        else ""
    )
    return [
        finding(
            "ATTR_EXPERIMENT_FIDELITY",
            f"this {outcome} trial failed because of the experiment, not the model: {'; '.join(causes)}{prior}",
            file=file,
            line=int(line) if line.isdigit() else None,
            evidence=clip(text),
        )
    ]
