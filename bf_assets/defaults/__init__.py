"""Files a new instance or project starts from (package data): the Dagster instance
settings (``dagster.yaml``) and an example experiment plan."""

from __future__ import annotations

from importlib import resources


def default_file(name: str) -> bytes:
    """The bytes of a shipped default file (works from a wheel as from a checkout)."""
    return resources.files(__name__).joinpath(name).read_bytes()
