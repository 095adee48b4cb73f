"""Host-path rules skipped on a text without their literals replace exactly what running
every rule replaces."""

from __future__ import annotations

import random

from leakproof_corpus import corpus, look_alikes

from bf_assets.curate.scan import host_paths_in
from bf_assets.redact.clean import _PATH_HINT, HOST_PATH_RULES, CleanStats, strip_host_paths

PATHS = [
    "/home/alice/x",
    "/Users/Bob/proj",
    "C:\\Users\\Carol\\a",
    "c:/documents and settings/dan/x",
    "D:\\\\Documents and Settings\\\\Eve Smith\\\\f",
    "file:///etc/passwd",
    "FILE://host/share",
    "/srv/bench/run",
    "\\\\wsl$\\Ubuntu\\home\\frank\\x",
    "\\\\WSL.localhost\\d\\home\\g\\y",
    "~grace/notes",
    "cd ~henry",
    "/var/folders/ab/cd/T/x",
    "/private/var/tmp/x",
    "/tmp",
    "/mnt/c/Users/ivan/x",
    "/var/home/judy/x",
    "\\/home\\/kate\\/x",
    "-I/home/leo/include",
    "\\n/tmp/x",
    "\\\\fileserver\\home\\mia\\x",
    "\\\\\\\\fileserver\\\\share\\\\x",
    "%5C%5Cfileserver%5Cshare%5Cx",
    "/c/Users/nia/proj",
    "/cygdrive/c/Users/oli/proj",
    "/cygdrive/d/data",
    "/export/home/pat/x",
    "/usr/home/quinn/x",
    "/nfs/homes/rob/x",
    "/net/nas1/home/sam/x",
    "/mnt/data/users/tia/x",
    "/Volumes/Disk/Users/uma/x",
    "/Volumes/Backup/x",
    "cd /root && ls",
    "/var/root/x",
    "//home/vic/x",
    "path=%2Fhome%2Fwes%2Fx",
    "\\u002fhome\\u002fxia\\u002fx",
    "&#47;home&#47;yan&#47;x",
    "C%3A%5CUsers%5Czed%5Cx",
    "C:\\cygwin64\\home\\abe\\x",
    "/media/bea/USB/x",
    "/run/media/cal/USB",
    "/run/user/1000/bus",
    "/mnt/d/games",
    "smb://nas1/share/x",
    "file%3A%2F%2F%2Fhome%2Fdee",
]
HINT = _PATH_HINT
ODD = ["\u0130", "\u212a", "\u017f", "é", "ß", "ǅ"]  # characters the regexes fold differently


def _every_rule(text: str, stats: CleanStats) -> str:
    out = text
    for pattern, placeholder in HOST_PATH_RULES:
        out, n = pattern.subn(placeholder, out)
        if n:
            stats.host_paths[placeholder] += n
    return out


def _texts() -> list[str]:
    rnd = random.Random(3)
    texts = PATHS + [p.text for p in corpus()] + look_alikes()
    for _ in range(3000):
        a, b = rnd.choice(PATHS), rnd.choice(texts)
        odd = rnd.choice(ODD)
        texts.append(f"{b} in {a} " + (odd if rnd.random() < 0.3 else ""))
        texts.append(a.replace("i", odd, 1) if rnd.random() < 0.5 else a.upper())
    return texts


def test_the_publish_scan_skipping_rules_finds_what_every_rule_finds() -> None:
    for t in _texts():
        assert host_paths_in(t) == [ph for p, ph in HOST_PATH_RULES if p.search(t)], t


def test_skipping_rules_by_their_literals_changes_nothing() -> None:
    for t in _texts():
        if not HINT.search(t):  # strip_host_paths' own gate, before any rule
            continue
        got, want = CleanStats(), CleanStats()
        assert strip_host_paths(t, got) == _every_rule(t, want), t
        assert got.host_paths == want.host_paths, t
