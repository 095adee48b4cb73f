"""What seeing through encodings costs, and what it adds, on texts that hold no secret.

    .venv/bin/python bench/decoded_views.py [DIR ...]   (default ../shared/fixtures)

For every string of the files under each DIR (a text file whole; every string of a JSON or
JSONL document, keys included), of a generated corpus (``bf_sample``: small
production trials and one heavy trial) and of generated tool outputs dense with encodings
(none holding a secret), it prints:

* the time ``redact_text`` takes with the decoded views (``secret_spans``) and without them
  (the rule set's own spans, the redactor before decoding), best of five, in turns;
* how many strings have a view, by kind;
* every span the views add to the rule set's own (on data that holds no secret, each one is
  a redaction to judge).
"""

from __future__ import annotations

import base64
import hashlib
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import orjson

from bf_assets.redact import default_rules, redact_text, secret_spans
from bf_assets.redact.decode import decoded_views

DEFAULT_DIRS = (Path(__file__).resolve().parents[2] / "shared" / "fixtures",)


def _strings(value: object) -> Iterator[str]:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def texts_under(root: Path) -> list[str]:
    out: list[str] = []
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.stat().st_size > 64 << 20:
            continue
        raw = p.read_text(encoding="utf-8", errors="replace")
        if p.suffix not in (".json", ".jsonl"):
            out.append(raw)
            continue
        for line in raw.splitlines() if p.suffix == ".jsonl" else [raw]:
            try:
                out.extend(_strings(orjson.loads(line)))
            except orjson.JSONDecodeError:
                out.append(line)
    return out


def generated_texts() -> list[str]:
    repo = str(Path(__file__).resolve().parent.parent)
    if repo not in sys.path:  # bf_sample sits beside the package, uninstalled
        sys.path.insert(0, repo)
    from bf_sample.generator import generate_corpus, write_heavy_trial

    with tempfile.TemporaryDirectory() as tmp:
        generate_corpus(Path(tmp) / "small", 60, seed=3)
        write_heavy_trial(Path(tmp) / "heavy" / "2026-07-01__00-00-00", n_exchanges=120, seed=3)
        return texts_under(Path(tmp))


def encoded_texts(seed: int = 7) -> list[str]:
    """Tool outputs dense with encodings and none with a secret: log lines with URL-encoded
    queries, HTML entities, terminal colour escapes, digests, UUIDs, and PNG data URIs."""
    rng = random.Random(seed)
    words = [
        "the",
        "of",
        "and",
        "to",
        "in",
        "is",
        "for",
        "file",
        "test",
        "run",
        "error",
        "value",
        "data",
        "model",
        "token",
        "step",
    ]

    def prose(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    def line(i: int) -> str:
        k = rng.random()
        if k < 0.3:
            return f"[2026-01-01 12:00:{i % 60:02d}] INFO {prose(8)}"
        if k < 0.45:
            return f"commit {hashlib.sha1(str(rng.random()).encode()).hexdigest()}"
        if k < 0.55:
            return f"id={uuid.UUID(int=rng.getrandbits(128))} status=ok"
        if k < 0.65:
            return f"GET /search?q={prose(3).replace(' ', '%20')}&page={i} 200"
        if k < 0.75:
            return "\\u001b[32m" + prose(5) + "\\u001b[0m"
        if k < 0.85:
            return f"<p>{prose(6)} &amp; {prose(3)} &lt;b&gt;</p>"
        return f"def {rng.choice(words)}(self): return {rng.randint(0, 99)}"

    png = bytes(rng.getrandbits(8) for _ in range(20000))
    uri = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + png).decode()
    out = ["\n".join(line(i) for i in range(rng.randint(5, 300))) for _ in range(300)]
    out += [f"![plot]({uri})\n{prose(20)}" for _ in range(10)]
    return out


def _old_redact_text(text: str) -> str:
    """``redact_text`` before decoding: the rule set's own spans only."""
    return default_rules().redact(text) if text else text


def best_times(texts: list[str], rounds: int = 5) -> tuple[float, float]:
    """Best times of the redactor without and with decoding, run in turns (a busy machine
    slows both alike)."""
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for i, fn in enumerate((_old_redact_text, redact_text)):
            t0 = time.perf_counter()
            for t in texts:
                fn(t)
            best[i] = min(best[i], time.perf_counter() - t0)
    return best[0], best[1]


def measure(name: str, texts: list[str]) -> None:
    rules = default_rules()
    for t in texts[:200]:
        redact_text(t)  # compile the rules the texts trigger
    before, after = best_times(texts)
    mb = sum(len(t) for t in texts) / 1e6
    kinds: Counter[str] = Counter()
    with_views = 0
    added: list[str] = []
    for t in texts:
        views = decoded_views(t)
        with_views += bool(views)
        kinds.update(v.kind for v in views)
        own = {(s, e) for s, e, _, _ in rules.spans(t)}
        for s, e, _, kind in secret_spans(t):
            if (s, e) not in own:
                added.append(f"  {kind}: {t[max(0, s - 40) : s]!r} [{t[s:e]!r}] {t[e : e + 20]!r}")
    print(
        f"{name}: {len(texts)} strings, {mb:.2f} MB; redact_text {before:.3f} s without views, "
        f"{after:.3f} s with ({(after / before - 1) * 100:+.0f} %); "
        f"{with_views} strings with a view {dict(kinds)}; {len(added)} spans added"
    )
    print("\n".join(added))


def main() -> None:
    dirs = [Path(a) for a in sys.argv[1:]] or [d for d in DEFAULT_DIRS if d.is_dir()]
    for d in dirs:
        measure(str(d), texts_under(d))
    measure("generated (bf_sample)", generated_texts())
    measure("generated, dense with encodings", encoded_texts())


if __name__ == "__main__":
    main()
