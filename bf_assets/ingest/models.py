"""Model identity: provider-prefixed spellings of one model as one canonical id.

``gemini/gemini-2.5-pro`` and ``google/gemini-2.5-pro``, ``bedrock/us.anthropic.claude-x-v1:0``
and ``anthropic/claude-x``, ``openrouter/anthropic/claude-x``, ``vertex_ai/claude-x@2025``,
``azure/gpt-x`` are one model each.  :func:`canonical_model` maps a recorded spelling to
``<vendor>/<name>`` (lower case) through a table (``model_aliases.toml`` beside this module,
extended by the file the ``BF_ASSETS_MODEL_ALIASES`` environment variable names):

1. an exact alias wins;
2. routing prefixes (gateways and clouds) are dropped;
3. a provider prefix names the vendor (``gemini`` is ``google``); Bedrock's region and
   ``vendor.`` prefixes and ``-v1:0`` suffix, and Vertex's ``@date`` are read the same way;
4. a bare name gets the vendor of its family (``claude…`` is ``anthropic``).

The mapping is idempotent (a canonical id maps to itself); a spelling the table cannot place
stays as written, lower-cased.  The raw spelling is kept on record beside it
(``Identity.model_raw``).
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

ALIASES_ENV = "BF_ASSETS_MODEL_ALIASES"
DEFAULT_TABLE = Path(__file__).with_name("model_aliases.toml")
_REGION = re.compile(r"^(?:us|eu|apac|global|us-gov|jp|au)\.")
_BEDROCK_VERSION = re.compile(r"-v\d+(?::\d+)?$")
_VENDOR_DOT = re.compile(r"^([a-z0-9_-]+)\.(.+)$")


class ModelTableError(ValueError):
    """The user's model table cannot be read."""


@dataclass(frozen=True, slots=True)
class ModelTable:
    routers: frozenset[str] = frozenset()
    providers: dict[str, str] = field(default_factory=dict)
    families: tuple[tuple[str, str], ...] = ()  # (prefix, vendor), longest prefix first
    aliases: dict[str, str] = field(default_factory=dict)
    digest: str = ""  # of the table files' bytes (a review cache's context)


def _read(path: Path) -> tuple[dict[str, object], bytes]:
    try:
        data = path.read_bytes()
        return tomllib.loads(data.decode("utf-8")), data
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ModelTableError(f"model table {path}: {exc}") from exc


def _strings(value: object, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ModelTableError(f"model table: [{where}] must map names to strings")
    return {k.strip().lower(): v.strip().lower() for k, v in value.items()}


def load_table(paths: list[Path]) -> ModelTable:
    """The table of ``paths``, later files extending (and overriding) earlier ones."""
    routers: set[str] = set()
    providers: dict[str, str] = {}
    families: dict[str, str] = {}
    aliases: dict[str, str] = {}
    h = hashlib.sha256()
    for path in paths:
        doc, data = _read(path)
        h.update(data)
        r = doc.get("routers", [])
        if not isinstance(r, list) or not all(isinstance(x, str) for x in r):
            raise ModelTableError(f"model table {path}: routers must be a list of names")
        routers.update(x.strip().lower() for x in r)
        providers.update(_strings(doc.get("providers"), "providers"))
        families.update(_strings(doc.get("families"), "families"))
        aliases.update(_strings(doc.get("aliases"), "aliases"))
    fam = tuple(sorted(families.items(), key=lambda kv: -len(kv[0])))
    return ModelTable(frozenset(routers), providers, fam, aliases, h.hexdigest())


@lru_cache(maxsize=4)
def _table_for(user: str | None) -> ModelTable:
    return load_table([DEFAULT_TABLE, *([Path(user)] if user else [])])


def model_table() -> ModelTable:
    """The default table extended by the file ``BF_ASSETS_MODEL_ALIASES`` names, if any."""
    return _table_for(os.environ.get(ALIASES_ENV) or None)


def canonical_model(raw: str | None, table: ModelTable | None = None) -> str | None:
    """The canonical ``<vendor>/<name>`` id of a recorded model spelling (None stays None)."""
    if not isinstance(raw, str) or not raw.strip():
        return raw
    tb = table if table is not None else model_table()
    low = raw.strip().lower()
    if low in tb.aliases:
        return tb.aliases[low]
    parts = [p for p in low.split("/") if p]
    while len(parts) > 1 and parts[0] in tb.routers:
        parts.pop(0)
    vendor: str | None = None
    if len(parts) > 1 and parts[0] not in tb.routers:
        vendor = tb.providers.get(parts[0], parts[0])
        parts = parts[1:]
    name = "/".join(parts)
    name = _REGION.sub("", name)
    m = _VENDOR_DOT.match(name)
    if m and m.group(1) in tb.providers:
        vendor, name = tb.providers[m.group(1)], m.group(2)
        name = _BEDROCK_VERSION.sub("", name)
    name = name.replace("@", "-")
    if vendor is None:
        vendor = next((v for prefix, v in tb.families if name.startswith(prefix)), None)
    out = f"{vendor}/{name}" if vendor else name
    return tb.aliases.get(out, out)
