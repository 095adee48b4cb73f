"""One model, one id: provider-prefixed spellings map to a canonical id through a table users
can extend (``BF_ASSETS_MODEL_ALIASES``); the recorded spelling stays on record as
``model_raw``; slots, coverage cells and the cross-file check use the canonical id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trialkit import healthy_spec

from bf_assets.dataset.common import cell_of, make_cell
from bf_assets.ingest.discovery import discover
from bf_assets.ingest.models import ALIASES_ENV, ModelTableError, canonical_model, model_table
from bf_assets.review.options import ReviewOptions
from bf_assets.review.record import TrialReview
from bf_assets.review.tables import reviews_from_frame, validated_frames
from bf_assets.review.trial import review_uncached

SPELLINGS = {
    "google/gemini-2.5-pro": [
        "gemini/gemini-2.5-pro",
        "google/gemini-2.5-pro",
        "vertex_ai/gemini-2.5-pro",
        "openrouter/google/gemini-2.5-pro",
        "Gemini-2.5-Pro",
    ],
    "anthropic/claude-sonnet-4-20250514": [
        "bedrock/us.anthropic.claude-sonnet-4-20250514-v1:0",
        "bedrock/anthropic.claude-sonnet-4-20250514-v1:0",
        "anthropic/claude-sonnet-4-20250514",
        "openrouter/anthropic/claude-sonnet-4-20250514",
        "vertex_ai/claude-sonnet-4@20250514",
        "claude-sonnet-4-20250514",
    ],
    "openai/gpt-4o": ["azure/gpt-4o", "openai/gpt-4o", "openrouter/openai/gpt-4o", "gpt-4o"],
}


@pytest.mark.parametrize("canonical", sorted(SPELLINGS))
def test_every_spelling_of_a_model_has_one_canonical_id(canonical: str) -> None:
    for raw in SPELLINGS[canonical]:
        assert canonical_model(raw) == canonical, raw
        assert canonical_model(canonical_model(raw)) == canonical_model(raw)


def test_an_unknown_model_stays_as_written_lower_cased() -> None:
    assert canonical_model("Acme-Private-7B") == "acme-private-7b"
    assert canonical_model(None) is None


def test_a_user_table_extends_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "models.toml"
    table.write_text(
        'routers = ["mygateway"]\n[aliases]\n"team-deploy-1" = "openai/gpt-4o"\n'
        '[families]\n"acme-" = "acme"\n'
    )
    monkeypatch.setenv(ALIASES_ENV, str(table))
    assert canonical_model("team-deploy-1") == "openai/gpt-4o"
    assert canonical_model("mygateway/acme-7b") == "acme/acme-7b"
    assert canonical_model("gemini/gemini-2.5-pro") == "google/gemini-2.5-pro"  # default kept
    assert model_table().digest != canonical_table_digest(monkeypatch)


def canonical_table_digest(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv(ALIASES_ENV)
    return model_table().digest


def test_a_broken_user_table_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tmp_path / "broken.toml"
    table.write_text("[aliases\n")
    monkeypatch.setenv(ALIASES_ENV, str(table))
    with pytest.raises(ModelTableError, match="broken.toml"):
        canonical_model("x")


def one(root: Path) -> TrialReview:
    (r,) = [review_uncached(ref, ReviewOptions()) for ref in discover([root]).trials]
    return r


def test_a_trial_keeps_its_raw_spelling_and_uses_the_canonical_id(tmp_path: Path) -> None:
    t = healthy_spec().write(tmp_path)
    for rel, spelling in (("result.json", "azure/gpt-x"), ("config.json", "openai/gpt-x")):  # fmt: skip
        doc = t.read_json(rel)
        doc["model"] = spelling
        t.write_json(rel, doc)
    row = t.read_json("results.jsonl")
    row["info"]["model"] = "openrouter/openai/gpt-x"
    t.write_text("results.jsonl", json.dumps(row) + "\n")
    r = one(tmp_path)
    assert r.identity.model == "openai/gpt-x"
    assert r.identity.model_raw == "azure/gpt-x"
    assert not [f for f in r.findings if f.check in ("GATE_CROSS_MISMATCH", "GATE_ROWS_INVALID")]
    assert r.verdict == "publishable"
    j = r.to_json()
    assert (j["model"], j["model_raw"]) == ("openai/gpt-x", "azure/gpt-x")
    assert cell_of(r) == make_cell(r.identity.task_id, r.identity.harness, "gpt-x", r.identity.skill_mode, r.identity.sandbox)  # fmt: skip
    (back,) = reviews_from_frame(validated_frames([r])[0])
    assert (back.identity.model, back.identity.model_raw) == (
        r.identity.model,
        "azure/gpt-x",
    )
