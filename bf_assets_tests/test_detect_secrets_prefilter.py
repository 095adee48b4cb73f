"""The second look's pre-filter (``bf_assets.curate.detect_secrets_scan``): a string is handed to the
detect-secrets plugins only when one of their regexes finds something in it, and that never
changes what is detected."""

from __future__ import annotations

import pytest

from bf_assets.curate import detect_secrets_scan
from bf_assets.curate.detect_secrets_scan import PLUGINS, detect
from bf_assets_tests.leakproof_corpus import corpus, look_alikes


def _every_plugin(text: str) -> list[str]:
    """What the plugins find when each looks at the whole string, pre-filter or not."""
    return [
        f"{type(p).__name__} ({p.secret_type})"
        for p in PLUGINS
        for value in p.analyze_string(text)
        if value and not detect_secrets_scan._ours(value)
    ]


def _texts() -> list[str]:
    planted = [p.text for p in corpus()]
    return [
        *planted,
        *look_alikes(),
        " and then ".join(planted[:5]),  # several secrets in one string
        "plain prose without anything that looks like a credential",
        "xoxb-",  # a prefix alone
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlX2J5dGVz",  # JWT shape
        "https://user:s3cr3tpass@example.com/path",  # basic auth
        "AKIA" + "ABCDEFGHIJKLMNOP",
    ]


def test_the_prefilter_is_in_force_for_the_shipped_plugins() -> None:
    assert detect_secrets_scan._DENYLISTS is not None
    assert len(detect_secrets_scan._DENYLISTS) == sum(len(p.denylist) for p in PLUGINS)


@pytest.mark.parametrize("text", _texts())
def test_the_prefilter_never_changes_what_the_plugins_find(text: str) -> None:
    assert [name for name, _ in detect_secrets_scan._plugin_found(text)] == _every_plugin(text)


def test_the_planted_vendor_secrets_are_still_found_and_prose_is_not_looked_at(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = [p for p in corpus() if any(not h.startswith("Keyword") for h in detect(p.text))]
    assert len(found) >= 10  # the corpus's vendor keys the plugins know
    calls: list[str] = []
    real = PLUGINS[0].analyze_string

    def spy(text: str):  # type: ignore[no-untyped-def]
        calls.append(text)
        return real(text)

    monkeypatch.setattr(PLUGINS[0], "analyze_string", spy)
    detect("a sentence of ordinary words, long enough to be looked at")
    assert calls == []  # nothing of any plugin's shape: no plugin ran
    detect(found[0].text)
    assert calls  # a string with a hit goes through every plugin


def test_a_plugin_that_looks_its_own_way_turns_the_prefilter_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Custom(detect_secrets_scan.RegexBasedDetector):
        secret_type = "custom"
        denylist = ()

        def analyze_string(self, string: str):  # type: ignore[no-untyped-def, override]
            yield from (["x"] if "zz" in string else [])

    monkeypatch.setattr(detect_secrets_scan, "PLUGINS", (*PLUGINS, Custom()))
    assert detect_secrets_scan._denylists() is None
