"""The skill-catalog patterns look for their literal before running the regex: the same
matches as the plain patterns on texts with and without it."""

from __future__ import annotations

import re

import pytest

from bf_assets.audit import catalog as C

GUARDED = ["_CODEX_BLOCK", "_AVAILABLE", "_CLAUDE_BLOCK", "_PI", "_MD_SKILLS", "_HARVEY_SKILL"]

TEXTS = [
    "",
    "nothing to see here " * 200,
    "<skills_instructions>\n### Available skills\n- a: b\n</skills_instructions>",
    "<skills_instructions> never closed",
    "x <available_skills><skill><name>n</name></skill></available_skills> y",
    "<available_skills> open only",
    f"<system-reminder>\n{C.CLAUDE_MARKER}\n\n- s: d\n</system-reminder>",
    f"{C.CLAUDE_MARKER} (no blank line after)",
    "You are pi, a coding agent harness.",
    "pi-coding-agent v1",
    "pi, a coding agent",
    "intro\n## Available Skills\n- **a**: one\n- **b**: two\n",
    "## Available Skills without a newline",
    "sys\n## Skill: alpha\nmanual\n## Skill: beta\n",
    "## Skill:no space",
]


@pytest.mark.parametrize("name", GUARDED)
@pytest.mark.parametrize("text", TEXTS)
def test_guarded_patterns_match_as_the_plain_ones(name: str, text: str) -> None:
    guarded = getattr(C, name)
    plain = re.compile(guarded.rx.pattern, guarded.rx.flags)
    for pos in (0, 1, len(text) // 2):
        a, b = guarded.search(text, pos), plain.search(text, pos)
        assert (a and (a.span(), a.groups())) == (b and (b.span(), b.groups()))
    assert [m.span() for m in guarded.finditer(text)] == [m.span() for m in plain.finditer(text)]


def test_every_guard_needle_is_in_every_match() -> None:
    for name in GUARDED:
        guarded = getattr(C, name)
        for text in TEXTS:
            for m in guarded.rx.finditer(text):
                assert any(n in m.group(0) for n in guarded.needles)
