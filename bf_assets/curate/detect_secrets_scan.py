"""The second, independent look for secrets behind ``PUBLISH_SECRET``: detect-secrets.

The redactor (:mod:`bf_assets.redact`) runs gitleaks' rules and our own; this module never
calls it.  It runs Yelp's detect-secrets plugins through their Python API on the finished
bundle's strings, so a secret the redactor's rules miss is still caught when detect-secrets
knows its shape.  The named plugins used (:data:`PLUGINS`) are every detect-secrets plugin
but three: ``ArtifactoryDetector`` (its unanchored ``AP…`` pattern flags ordinary
capitalised words), the two high-entropy-string plugins (they flag every hash and base64
blob a trajectory holds) and ``IPPublicDetector`` (an address is not a credential).

One detector of ours rides along: :func:`bf_assets.redact.structural.credential_shapes`
finds what is credential-shaped without any vendor name or context (a short prefix and a
random body, an opaque binary base64 blob, a private key with or without its armour); it
reports ``StructuralDetector (<kind>)``.

The keyword plugin runs line by line, as detect-secrets runs it on a file, with its
quotes-required patterns (detect-secrets' choice for text of unknown type) and its own
heuristic filters; the other plugins run on the whole string.  A hit whose value is one of
our placeholders is not a secret.  No plugin's ``verify`` is ever called (no network).

Every plugin also runs on the string's decoded views (:mod:`bf_assets.redact.decode`, the
same decodings the redactor sees through: a decoding is not a detection rule), so a secret
that survives URL-encoded, escaped, as entities, in base64 or cut by a wrap is caught.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from detect_secrets.filters import heuristic
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from bf_assets.redact.decode import iter_decoded_views, may_hold_encoding
from bf_assets.redact.structural import credential_shapes

KEYWORD_TYPE = "Secret Keyword"
STRUCTURAL = "StructuralDetector"


class ProviderKeyDetector(RegexBasedDetector):
    """A detect-secrets plugin of ours for the model-provider and developer-platform keys
    agent runs carry and detect-secrets has no plugin for (written for this check alone: the
    redactor never uses it)."""

    secret_type = "Provider API Key"
    denylist = [
        re.compile(p)
        for p in (
            r"sk-ant-(?:api|admin|oat)\d{2}-[A-Za-z0-9_-]{20,}",
            r"sk-ant-[A-Za-z0-9_-]{24,}",
            r"sk-(?:proj|svcacct|admin|or-v1)-[A-Za-z0-9_-]{20,}",
            r"AIza[0-9A-Za-z_-]{35}",
            r"ya29\.[0-9A-Za-z_-]{20,}",
            r"(?<![A-Za-z0-9])(?:hf|gsk|r8|dtn|fw)_[A-Za-z0-9]{20,}",
            r"(?<![A-Za-z0-9-])xai-[A-Za-z0-9]{40,}",
            r"(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}",
            r"(?<![A-Za-z0-9])[rs]k_(?:live|test|prod)_[A-Za-z0-9]{16,}",
            r"(?<![A-Za-z0-9])(?:dop|doo|dor)_v1_[a-f0-9]{64}",
            r"(?<![A-Za-z0-9])shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
            r"(?<![A-Za-z0-9])lin_api_[A-Za-z0-9]{40}",
            r"(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{40,}",
        )
    ]


PLUGINS: tuple[BasePlugin, ...] = (
    ProviderKeyDetector(),
    AWSKeyDetector(),
    AzureStorageKeyDetector(),
    BasicAuthDetector(),
    CloudantDetector(),
    DiscordBotTokenDetector(),
    GitHubTokenDetector(),
    GitLabTokenDetector(),
    IbmCloudIamDetector(),
    IbmCosHmacDetector(),
    JwtTokenDetector(),
    MailchimpDetector(),
    NpmDetector(),
    OpenAIDetector(),
    PrivateKeyDetector(),
    PypiTokenDetector(),
    SendGridDetector(),
    SlackDetector(),
    SoftlayerDetector(),
    SquareOAuthDetector(),
    StripeDetector(),
    TelegramBotTokenDetector(),
    TwilioKeyDetector(),
)
PLUGIN_NAMES = tuple(sorted({type(p).__name__ for p in PLUGINS} | {"KeywordDetector", STRUCTURAL}))
# Lines the keyword plugin can match contain one of its words (its patterns are
# case-insensitive): the rest are never handed to it.
_KEYWORD_HINT = re.compile(r"(?i)key|pass|pwd|secret|contrase")
_OUR_MARKERS = ("[REDACTED", "<HOST_PATH>", "<HOME>", "<TMP>", "***REDACTED***")


def _ours(value: str) -> bool:
    return value.startswith(_OUR_MARKERS) or "[REDACTED:" in value


def _keyword_filtered(secret: str) -> bool:
    """detect-secrets' own heuristic filters for keyword hits."""
    return (
        heuristic.is_sequential_string(secret)
        or heuristic.is_potential_uuid(secret)
        or heuristic.is_templated_secret(secret)
        or heuristic.is_prefixed_with_dollar_sign(secret)
        or heuristic.is_not_alphanumeric_string(secret)
    )


def _keyword_hits(text: str) -> Iterator[str]:
    if not _KEYWORD_HINT.search(text):
        return
    for line in text.splitlines():
        if len(line) < 4 or not _KEYWORD_HINT.search(line):
            continue
        values = [
            value
            for rx, group in QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items()
            for m in rx.finditer(line)
            if (value := m.group(group)) and not _ours(value) and not _keyword_filtered(value)
        ]
        # detect-secrets drops every hit of a line that looks like an indirect reference
        # (``secret = get_key()``); its regex is slow on long lines, so it runs only on the
        # lines that have a hit to drop
        if values and not _indirect_reference(line):
            yield from (KEYWORD_TYPE for _ in values)


def _indirect_reference(line: str) -> bool:
    """detect-secrets' ``is_indirect_reference``, after the cheap tests its regex implies (an
    assignment or comparison sign, then an opening and a closing bracket)."""
    if not any(c in line for c in ":=!") or not any(c in line for c in "[("):
        return False
    if not any(c in line for c in "])"):
        return False
    return heuristic.is_indirect_reference(line)


def _denylists() -> tuple[re.Pattern[str], ...] | None:
    """Every regex the named plugins look with, when each plugin finds a value only through
    one of its own (``RegexBasedDetector.analyze_string``, which ``JwtTokenDetector`` only
    filters); ``None`` when one does not (a new plugin, a changed detect-secrets)."""
    out: list[re.Pattern[str]] = []
    for plugin in PLUGINS:
        kind = type(plugin)
        own = kind.__dict__.get("analyze_string")
        if own is not None and kind is not JwtTokenDetector:
            return None
        if not isinstance(plugin, RegexBasedDetector):
            return None
        out.extend(plugin.denylist)
    return tuple(out)


# A string none of the plugins' regexes finds anything in has no hit of theirs: it is looked
# at with the bare regexes (a search each, stopping at the first match) and the plugins
# (findall each, through generators, about twice that) run only on the rest.
_DENYLISTS = _denylists()


def _plugin_found(text: str) -> list[tuple[str, str]]:
    """``(plugin (secret type), value)`` of every plugin hit."""
    if _DENYLISTS is not None and not any(rx.search(text) for rx in _DENYLISTS):
        return []
    return [
        (f"{type(plugin).__name__} ({plugin.secret_type})", value)
        for plugin in PLUGINS
        for value in plugin.analyze_string(text)
        if value and not _ours(value)
    ]


def _hits(text: str) -> list[str]:
    """detect-secrets' and the structural detector's hits in ``text`` itself."""
    found = _plugin_found(text)
    out = [name for name, _ in found]
    out.extend(f"KeywordDetector ({t})" for t in _keyword_hits(text))
    values = [v for _, v in found]
    for kind, s, e in credential_shapes(text):
        shape = text[s:e]
        if not any(shape in v or v in shape for v in values):  # one finding a secret
            out.append(f"{STRUCTURAL} ({kind})")
    return out


def detect(text: str) -> list[str]:
    """The secret types found in ``text`` by detect-secrets and by the structural detector
    (one entry per hit, no values), and, marked ``(decoded)``, those found only in its
    decoded views (:func:`bf_assets.redact.decode.iter_decoded_views`: URL encoding,
    escapes, HTML entities, base64, quoted or wrapped lines), so that an encoded secret
    blocks a release too."""
    if not text or len(text) < 8:
        return []
    out = _hits(text)
    if not may_hold_encoding(text):
        return out
    seen = set(out)
    for view in iter_decoded_views(text):
        for ws, we in view.windows():
            for hit in _hits(view.text[ws:we]):
                if hit not in seen:
                    seen.add(hit)
                    out.append(f"{hit} (decoded)")
    return out
