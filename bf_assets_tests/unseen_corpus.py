"""Fake credentials of vendors that no rule names, in the syntaxes and encodings agents print.

Default-deny is measured here: every vendor prefix is made up at run time from a seeded
random source (so no rule can have been written for it), every value is random, and each is
planted in one of the contexts an agent sandbox really prints (env files, YAML, JSON, XML,
INI, netrc, URLs, code calls, command flags, tables) and then, for a share of them, encoded
(URL encoding, ``\\u`` escapes, HTML entities, base64, a terminal's wrap).  This file holds
no credential-shaped literal.
"""

from __future__ import annotations

import base64
import html
import random
import string
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

from leakproof_corpus import Planted

ALNUM = string.ascii_letters + string.digits
LOWER = string.ascii_lowercase
HEX = "0123456789abcdef"
B64URL = ALNUM + "-_"


@dataclass(frozen=True)
class Vendor:
    name: str
    prefix: str  # what the key starts with, e.g. ``qzv_live_``
    alphabet: str
    length: int


class UnseenGen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def s(self, n: int, alphabet: str = ALNUM) -> str:
        while True:  # a realistic key mixes classes: letters and digits
            out = "".join(self.rng.choice(alphabet) for _ in range(n))
            if n < 8 or (any(c.isdigit() for c in out) and any(c.isalpha() for c in out)):
                return out

    def vendor(self) -> Vendor:
        r = self.rng
        word = "".join(r.choice(LOWER) for _ in range(r.randint(2, 6)))
        sep = r.choice(["_", "-"])
        middle = r.choice(["", "", f"{r.choice(['live', 'pat', 'sk', 'api', 'prod', 'v1'])}{sep}"])
        prefix = word + sep + middle
        if r.random() < 0.2:
            prefix = prefix.upper()
        alphabet = r.choice([ALNUM, ALNUM, B64URL, LOWER + string.digits])
        return Vendor(word, prefix, alphabet, r.randint(24, 56))

    def password(self) -> str:
        """A human-made password: a word, digits and a symbol, with random letters."""
        r = self.rng
        syllables = "".join(r.choice("bdfgklmnprstvz") + r.choice("aeiou") for _ in range(3))
        return syllables.title() + str(r.randint(1000, 9999)) + r.choice("!#%*") + self.s(6)


def _env_name(v: Vendor, suffix: str) -> str:
    return f"{v.name.upper()}_{suffix}"


# Each context: (name, template). ``{k}`` is the key, ``{n}`` an env-style name.
TOKEN_CONTEXTS: list[tuple[str, str]] = [
    ("env line", "{n}={k}"),
    ("export quoted", 'export {n}="{k}"'),
    ("yaml", "service:\n  api_key: {k}\n  region: us-east-1"),
    ("json", '{{"apiKey": "{k}", "timeout": 30}}'),
    ("xml element", "<config><accessToken>{k}</accessToken></config>"),
    ("ini", "[default]\nsecret = {k}\n"),
    ("header", "X-Service-Token: {k}"),
    ("markdown table", "| name | value |\n|---|---|\n| {n} | {k} |"),
    ("prose", "Use the key {k} to call the API."),
    ("python call", 'client = Client(api_key="{k}")'),
    ("url query", "https://api.example.net/v2/search?q=cats&key={k}&limit=5"),
    ("cli flag", "svc-cli deploy --token {k} --region eu"),
    ("printenv", "HOME=/app\n{n}={k}\nPATH=/usr/bin"),
]
PASSWORD_CONTEXTS: list[tuple[str, str]] = [
    ("netrc", "machine api.example.net login deploy password {p}"),
    (
        "maven settings",
        "<server><id>repo</id><username>ci</username><password>{p}</password></server>",
    ),
    ("dotnet connection", '<add key="Db" value="Server=db;User Id=sa;Password={p};" />'),
    ("requests auth tuple", 'requests.get(url, auth=("admin", "{p}"))'),
    ("httpbasicauth", 'session.auth = HTTPBasicAuth("admin", "{p}")'),
    ("yaml password list", "passwords:\n  - {p}\n  - {p2}"),
    ("mysql flag", "mysql -u root -p{p} -h 127.0.0.1 shop"),
    ("redis-cli", "redis-cli -h cache -a {p} ping"),
    ("sshpass", "sshpass -p '{p}' ssh deploy@10.0.0.5"),
    ("docker login", "docker login -u ci -p {p} registry.example.net"),
    ("htpasswd", "htpasswd -b -c /etc/nginx/.htpasswd admin {p}"),
    ("url userinfo", "git clone https://deploy:{p}@git.example.net/team/repo.git"),
    ("env password", "ADMIN_PASSWORD={p}"),
]


def _url_encoded(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def _u_escaped(text: str) -> str:
    return "".join(
        f"\\u{ord(c):04x}" if c.isalnum() and i % 2 == 0 else c for i, c in enumerate(text)
    )


def _entities(text: str) -> str:
    return "".join(f"&#{ord(c)};" if c in "_-=:" else html.escape(c, quote=False) for c in text)


def _base64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _wrapped(width: int) -> Callable[[str], str]:
    """A terminal ``width`` columns wide wraps the line (after a prompt of 64 columns, so the
    break falls inside the context)."""

    def wrap(text: str) -> str:
        lines = ("$ " + "-" * 62 + " " + text).split("\n")
        return "\n".join(
            "\n".join(line[i : i + width] for i in range(0, max(len(line), 1), width))
            for line in lines
        )

    return wrap


ENCODINGS: dict[str, Callable[[str], str]] = {
    "plain": lambda t: t,
    "url-encoded": _url_encoded,
    "u-escaped": _u_escaped,
    "html-entities": _entities,
    "base64": lambda t: "payload: " + _base64(t),
    "wrapped": _wrapped(80),
}
# Harder than a terminal: a pane 40 columns wide (measured by bench/unseen_secrets.py, not
# asserted by the tests).
NARROW: dict[str, Callable[[str], str]] = {"wrapped-40": _wrapped(40)}


def unseen_corpus(
    seed: int = 23, per_context: int = 2, encodings: dict[str, Callable[[str], str]] | None = None
) -> list[Planted]:
    """Planted fake credentials: every token context and every password context, each with
    ``per_context`` fresh vendors or passwords, in every encoding."""
    g = UnseenGen(seed)
    out: list[Planted] = []
    for enc_name, enc in (encodings or ENCODINGS).items():
        for ctx_name, tmpl in TOKEN_CONTEXTS:
            for i in range(per_context):
                v = g.vendor()
                core = g.s(v.length, v.alphabet)
                key = v.prefix + core
                text = tmpl.format(k=key, n=_env_name(v, "API_KEY"))
                out.append(Planted(f"{ctx_name} {v.prefix} {enc_name} {i}", enc(text), key, core))
        for ctx_name, tmpl in PASSWORD_CONTEXTS:
            for i in range(per_context):
                p = g.password()
                text = tmpl.format(p=p, p2=g.password())
                out.append(Planted(f"{ctx_name} {enc_name} {i}", enc(text), p, p))
    return out


def unseen_look_alikes(seed: int = 29) -> list[str]:
    """Text an agent prints that holds no secret: it must survive cleaning byte for byte."""
    import hashlib
    import uuid

    rng = random.Random(seed)
    session = uuid.UUID(int=rng.getrandbits(128))
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(rng.getrandbits(8) for _ in range(48)))
    return [
        "mkdir -p /app/output/reports && cd /app/output",
        "docker run --rm -p 8080:80 -v /app:/app nginx:1.27",
        "ssh -p 2222 deploy@localhost uptime",
        "pip install -r requirements.txt --no-cache-dir",
        "grep -a -n pattern build.log | head",
        "curl -s https://api.example.net/v2/items?page=2&sort=desc&per_page=50",
        'api_key = os.environ["SERVICE_API_KEY"]',
        "export SERVICE_TOKEN=${SERVICE_TOKEN:-}",
        'db_password: "{{ vault_db_password }}"',
        "API_KEY=${API_KEY:?set API_KEY first}",
        "@misc{bf_assets_release_20260602_143923_a8981f980def,",
        "git tag release-20260602-143923-a8981f980def",
        '{"type":"system","subtype":"init","session_id":"' + str(session) + '"}',
        '  "sessionId": "' + str(uuid.UUID(int=rng.getrandbits(128))) + '",',
        "svc-cli deploy --token $SERVICE_TOKEN --region eu",
        "password: str = Field(..., min_length=12)",
        "integrity sha512-" + base64.b64encode(hashlib.sha512(b"pkg").digest()).decode(),
        "image@sha256:" + hashlib.sha256(b"img").hexdigest(),
        "commit " + hashlib.sha1(b"c").hexdigest(),
        str(uuid.UUID(int=rng.getrandbits(128))),
        "data:image/png;base64," + png.decode(),
        "node_modules/.pnpm/react-dom@18.3.1_react@18.3.1/node_modules/react-dom/index.js",
        "class AbstractSingletonProxyFactoryBeanConfigurationResolver:",
        "test_should_return_http_401_when_token_is_expired PASSED",
        "model: anthropic/claude-sonnet-4-5-20250929",
        'Traceback (most recent call last):\n  File "/app/solve.py", line 12, in <module>',
    ]
