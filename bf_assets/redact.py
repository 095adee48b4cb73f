"""Secret redaction: a maintained pattern set, stable placeholders and per-kind counts.

Used for finding evidence today and for the export rows before publishing.  Values are
redacted on parsed objects (never on serialized JSON), so an escape is never broken.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

PLACEHOLDER = "[REDACTED:{kind}]"
_KNOWN_MARKERS = ("***REDACTED***", "[REDACTED]", "<XXX-benchflow-key-values-XXX>")

# (kind, compiled pattern, group to replace or 0 for the whole match).  Order matters:
# the more specific prefixes come before the generic ones.  Lengths are capped against
# catastrophic backtracking; identifiers such as ``reserves-at-risk-calc__yo7qFCk`` must
# survive, so the generic ``sk-`` rule takes no dashes or underscores.
_PATTERNS: list[tuple[str, re.Pattern[str], int]] = [
    (
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[\s\S]{0,8192}?-----END [A-Z ]{0,40}PRIVATE KEY-----"
        ),
        0,
    ),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,256}"), 0),
    (
        "openai_key",
        re.compile(r"\bsk-(?:proj|admin|svcacct|benchflow|or-v1)-[A-Za-z0-9_\-]{16,256}"),
        0,
    ),
    ("openai_key", re.compile(r"\bsk-[A-Za-z0-9]{16,256}\b"), 0),
    ("google_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), 0),
    ("google_key", re.compile(r"\bAQ\.[A-Za-z0-9_\-]{16,256}"), 0),
    ("aws_key", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), 0),
    ("daytona_key", re.compile(r"\bdtn_[A-Za-z0-9]{16,256}\b"), 0),
    ("github_token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,255}\b"), 0),
    ("github_token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,255}\b"), 0),
    ("slack_token", re.compile(r"\bxox[baprs]-[A-Za-z0-9\-]{10,255}"), 0),
    ("hf_token", re.compile(r"\bhf_[A-Za-z0-9]{20,255}\b"), 0),
    ("groq_key", re.compile(r"\bgsk_[A-Za-z0-9]{20,255}\b"), 0),
    ("xai_key", re.compile(r"\bxai-[A-Za-z0-9]{20,255}\b"), 0),
    ("replicate_key", re.compile(r"\br8_[A-Za-z0-9]{20,255}\b"), 0),
    ("fireworks_key", re.compile(r"\bfw_[A-Za-z0-9]{20,255}\b"), 0),
    (
        "jwt",
        re.compile(
            r"\beyJ[A-Za-z0-9_\-]{8,2048}\.eyJ[A-Za-z0-9_\-]{8,4096}\.[A-Za-z0-9_\-]{20,2048}"
        ),
        0,
    ),
    (
        "bearer_token",
        re.compile(
            r"(?i)\b(?:authorization\s*[:=]\s*)?(?:bearer|token|basic|apikey)\s+([A-Za-z0-9._~+/\-]{16,1024}=*)"
        ),
        1,
    ),
    (
        "url_credentials",
        re.compile(
            r"(?i)\b(?:https?|ftps?|postgres(?:ql)?|mysql|mongodb(?:\+srv)?|rediss?|amqps?)://[^\s:/@]{1,256}:([^\s@/]{1,256})@"
        ),
        1,
    ),
    (
        "url_credentials",
        re.compile(
            r"(?i)[?&](?:api_?key|access_key|access_token|refresh_token|session_token|client_secret|"
            r"aws_secret_access_key|account_key|secret|password|passwd|signature|x-amz-signature|"
            r"x-amz-credential|x-amz-security-token|sig)=([^&\s\"']{8,1024})"
        ),
        1,
    ),
    (
        "secret_assignment",
        re.compile(
            r"(?i)\b([A-Z0-9_]{0,64}(?:API_?KEY|SECRET(?:_KEY)?|TOKEN|PASSWORD|PASSWD|ACCESS_KEY|"
            r"ACCOUNT_KEY|PRIVATE_KEY|ENCRYPTION_KEY|CREDENTIALS?))\s*[=:]\s*[\"']?([A-Za-z0-9+/_\-.]{12,512})"
        ),
        2,
    ),
]

# Structured keys whose value is always a secret, whatever it looks like.
SECRET_KEY_NAMES = frozenset(
    {
        "authorization",
        "proxy_authorization",
        "x_api_key",
        "api_key",
        "apikey",
        "cookie",
        "set_cookie",
        "credentials",
        "credential",
        "private_key",
        "x_goog_api_key",
        "aws_secret_access_key",
        "aws_bearer_token_bedrock",
        "access_token",
        "refresh_token",
        "client_secret",
        "encryption_key",
        "password",
        "passwd",
        "secret",
        "secret_key",
        "token",
        "hf_token",
    }
)

_NOT_SECRET_NAMES = frozenset(
    {"max_tokens", "total_tokens", "input_tokens", "output_tokens", "tokens"}
)


def _normalise_key(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return name.replace("-", "_").lower()


def is_secret_key(name: str) -> bool:
    norm = _normalise_key(name)
    if norm in _NOT_SECRET_NAMES or norm.endswith("_tokens") or norm.startswith("n_"):
        return False
    return norm in SECRET_KEY_NAMES or norm.endswith(("_api_key", "_secret", "_password", "_token"))


def _looks_like_high_entropy(value: str) -> bool:
    if len(value) < 16 or value.isdigit():
        return False
    classes = sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
        )
    )
    return classes >= 2


def redact_text(text: str, counts: Counter[str] | None = None) -> str:
    """Replace every secret in ``text`` with ``[REDACTED:<kind>]``; count replacements per kind."""
    if not text:
        return text
    out = text
    for kind, pattern, group in _PATTERNS:
        if kind == "secret_assignment":

            def _sub_assign(m: re.Match[str], kind: str = kind) -> str:
                value = m.group(2)
                if value.startswith("[REDACTED") or not _looks_like_high_entropy(value):
                    return m.group(0)
                if counts is not None:
                    counts[kind] += 1
                start, end = m.span(2)
                base = m.start(0)
                whole = m.group(0)
                return whole[: start - base] + PLACEHOLDER.format(kind=kind) + whole[end - base :]

            out = pattern.sub(_sub_assign, out)
            continue

        def _sub(m: re.Match[str], kind: str = kind, group: int = group) -> str:
            if group == 0:
                if counts is not None:
                    counts[kind] += 1
                return PLACEHOLDER.format(kind=kind)
            value = m.group(group)
            if value.startswith("[REDACTED") or value in _KNOWN_MARKERS:
                return m.group(0)
            if counts is not None:
                counts[kind] += 1
            base = m.start(0)
            start, end = m.span(group)
            whole = m.group(0)
            return whole[: start - base] + PLACEHOLDER.format(kind=kind) + whole[end - base :]

        out = pattern.sub(_sub, out)
    return out


def find_secrets(text: str) -> list[tuple[str, str]]:
    """``(kind, excerpt)`` for every secret pattern that matches ``text`` (no replacement)."""
    counts: Counter[str] = Counter()
    redact_text(text, counts)
    return [(kind, "") for kind, n in counts.items() for _ in range(n)]


def redact_value(value: Any, counts: Counter[str] | None = None, *, max_depth: int = 512) -> Any:
    """Redact every string in a parsed JSON value (iteratively; never recurses in Python).

    Values under secret-looking keys are replaced whatever they contain.
    """
    if isinstance(value, str):
        return redact_text(value, counts)
    if not isinstance(value, dict | list):
        return value
    root: list[Any] = [None]
    # stack of (source container, destination setter)
    stack: list[tuple[Any, Callable[[Any], None], int]] = [
        (value, lambda v: root.__setitem__(0, v), 0)
    ]
    while stack:
        src, put, depth = stack.pop()
        if depth > max_depth:
            put(None)
            continue
        if isinstance(src, dict):
            dst: dict[str, Any] = {}
            put(dst)
            for k, v in src.items():
                if (
                    isinstance(k, str)
                    and is_secret_key(k)
                    and isinstance(v, str)
                    and v
                    and v not in _KNOWN_MARKERS
                ):
                    if counts is not None:
                        counts["secret_field"] += 1
                    dst[k] = PLACEHOLDER.format(kind="secret_field")
                elif isinstance(v, dict | list):
                    dst[k] = None
                    stack.append((v, lambda x, d=dst, key=k: d.__setitem__(key, x), depth + 1))
                elif isinstance(v, str):
                    dst[k] = redact_text(v, counts)
                else:
                    dst[k] = v
        else:
            lst: list[Any] = [None] * len(src)
            put(lst)
            for i, v in enumerate(src):
                if isinstance(v, dict | list):
                    stack.append((v, lambda x, li=lst, idx=i: li.__setitem__(idx, x), depth + 1))
                elif isinstance(v, str):
                    lst[i] = redact_text(v, counts)
                else:
                    lst[i] = v
    return root[0]
