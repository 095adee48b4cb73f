"""Default-deny on vendors no rule names: no planted credential reaches a published byte.

The corpus (:mod:`unseen_corpus`) makes its vendors up at run time, so what is measured here
is detection by structure and decoding, not a rule list.  Every planted trial must still be
exported, the bundle must verify, published bytes are searched raw and through every
decoding a reader could apply (URL decoding, HTML entities, ``\\u`` escapes, base64, lines
joined), and look-alikes must survive byte for byte.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import urllib.parse
from pathlib import Path

import pytest
from leakproof_corpus import Planted
from test_leakproof_bundle import assert_all_exported_and_verified, planted_trial, published_values
from trialkit import Trial, healthy_spec
from unseen_corpus import unseen_corpus, unseen_look_alikes

from bf_assets.publish.bundle import Bundle, bundle_reviews

CORPUS = unseen_corpus()
LOCATIONS = ("tool-output", "tool-argument", "completion")
_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_U_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def decoded_views(text: str) -> list[str]:
    """The published text and what a reader gets from it by decoding."""
    views = [text, urllib.parse.unquote(text), html.unescape(text)]
    views.append(_U_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text))
    views.append(text.replace("\n", ""))
    decoded: list[str] = []
    for m in _B64_RUN.finditer(text):
        run = m.group(0)
        try:
            raw = base64.b64decode(run + "=" * (-len(run) % 4), altchars=b"-_")
        except (binascii.Error, ValueError):
            continue
        decoded.append(raw.decode("utf-8", "ignore"))
    views.append("\n".join(decoded))
    return views


@pytest.fixture(scope="module")
def unseen_bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Bundle, list[Trial], Path]:
    root = tmp_path_factory.mktemp("runs")
    trials = []
    for i, loc in enumerate(LOCATIONS):
        share = CORPUS[i :: len(LOCATIONS)]
        trials.append(planted_trial(root, loc, "\n".join(p.text for p in share)))
    alike = healthy_spec(task="unseen-look-alikes", rollout_id="cccc3333")
    assert alike.llm is not None
    alike.llm[1]["request"]["body"]["messages"][-1]["content"] = "\n".join(unseen_look_alikes())
    trials.append(alike.rebuild_steps().sync().write(root))
    reviews = [t.review() for t in trials]
    for r in reviews:
        assert r.verdict == "publishable", (r.ref.rollout, r.findings)
    b = bundle_reviews(reviews, tmp_path_factory.mktemp("staging"))
    return b, trials, b.path


_VIEWS: dict[Path, list[str]] = {}


def _views(path: Path) -> list[str]:
    if path not in _VIEWS:
        _VIEWS[path] = decoded_views(published_values(path))
    return _VIEWS[path]


def leaked(item: Planted, views: list[str]) -> list[str]:
    return [piece for piece in item.fragments() if any(piece in v for v in views)]


def test_every_planted_trial_is_exported_and_verifies(
    unseen_bundle: tuple[Bundle, list[Trial], Path],
) -> None:
    assert_all_exported_and_verified(*unseen_bundle)


@pytest.mark.parametrize("item", CORPUS, ids=[p.name for p in CORPUS])
def test_no_unseen_credential_or_inner_piece_survives(
    unseen_bundle: tuple[Bundle, list[Trial], Path], item: Planted
) -> None:
    assert not leaked(item, _views(unseen_bundle[2])), item.name


@pytest.mark.parametrize("text", unseen_look_alikes())
def test_look_alikes_survive_byte_for_byte(
    unseen_bundle: tuple[Bundle, list[Trial], Path], text: str
) -> None:
    assert text in published_values(unseen_bundle[2])
