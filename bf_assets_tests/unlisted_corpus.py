"""Fake credentials of vendors no rule names, in every syntax a trajectory holds them.

Generated from a seeded random source (no credential-shaped literal is stored): random
prefixes (one to three short lowercase pieces with ``_`` or ``-``), random body alphabets and
lengths, and each secret planted in a context (env, YAML, JSON, XML, INI, netrc, URL, code
call, command-line flag, markdown and HTML tables, private-key bodies).  Each
:class:`Planted` knows every 8-character piece of its random part: any one surviving is a
(partial) leak.  :func:`look_alikes` gives strings that look like credentials and are not.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64URL = ALNUM + "-_"
B64 = ALNUM + "+/"
SYMBOLS = "!#%^*+=~.@"
WORDS = [
    "river",
    "sun",
    "maple",
    "orbit",
    "falcon",
    "quartz",
    "ember",
    "lotus",
    "cedar",
    "nova",
    "pixel",
    "harbor",
    "tango",
    "velvet",
    "summit",
    "willow",
    "cobalt",
    "atlas",
    "zephyr",
    "onyx",
]
BODY_ALPHABETS = (ALNUM, LOWER_ALNUM, HEX, B64URL, UPPER_ALNUM)


@dataclass(frozen=True)
class Planted:
    name: str  # the context and the shape, for a report
    text: str  # what is planted
    secret: str  # the whole secret
    core: str  # its random part

    def pieces(self) -> list[str]:
        """The secret and every 8-character piece of its random part."""
        c = self.core
        return [self.secret] + [c[i : i + 8] for i in range(0, max(0, len(c) - 7))]

    def leak(self, published: str) -> str | None:
        """``"whole"``, ``"partial"`` or ``None`` for what of the secret ``published`` holds."""
        if self.secret in published:
            return "whole"
        if any(p in published for p in self.pieces()[1:]):
            return "partial"
        return None


class Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def s(self, n: int, alphabet: str = ALNUM) -> str:
        """A random string that mixes the alphabet's classes as real keys do."""
        while True:
            out = "".join(self.rng.choice(alphabet) for _ in range(n))
            classes = sum(
                any(c in k for c in out)
                for k in (string.ascii_lowercase, string.ascii_uppercase, string.digits)
            )
            if classes >= 2:
                return out

    def prefix(self) -> str:
        """A vendor prefix nobody wrote a rule for: ``abcd_``, ``ab-cd-``, ``abc1_xy_``."""
        r = self.rng
        sep = r.choice("_-")
        first = "".join(r.choice(string.ascii_lowercase) for _ in range(r.randint(2, 6)))
        if r.random() < 0.25:
            first += r.choice(string.digits)
        parts = [first]
        for _ in range(r.choice((0, 0, 1, 1, 2))):
            parts.append(
                r.choice(("pt", "live", "v1", "dev", "sk", "pat", "auth", "secret", "api", "prod"))
            )
        return sep.join(parts) + sep

    def body(self) -> str:
        r = self.rng
        alphabet = r.choice(BODY_ALPHABETS)
        n = r.randint(20, 72)
        body = self.s(n, alphabet)
        if r.random() < 0.2:  # two random pieces joined (``abc_xyz`` bodies)
            body = self.s(r.randint(6, 10), alphabet) + r.choice("_-") + body
        return body

    def token(self) -> tuple[str, str]:
        """A prefixed credential and its random part."""
        body = self.body()
        return self.prefix() + body, body

    def bare(self) -> str:
        return self.s(self.rng.randint(24, 64), self.rng.choice((ALNUM, LOWER_ALNUM, B64URL)))

    def password(self) -> str:
        r = self.rng
        return (
            r.choice(WORDS).capitalize()
            + str(r.randint(10, 9999))
            + r.choice(SYMBOLS)
            + self.s(r.randint(3, 6))
        )

    def name(self) -> str:
        return "".join(
            self.rng.choice(string.ascii_uppercase) for _ in range(self.rng.randint(3, 8))
        )


def _der_private_key(g: Gen) -> str:
    """A base64 PKCS#8 body: the real structure's head, random key material."""
    material = bytes(g.rng.getrandbits(8) for _ in range(600))
    inner = b"\x02\x01\x00\x30\x0d\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x01\x01\x05\x00"
    inner += b"\x04\x82" + len(material).to_bytes(2, "big") + material
    der = b"\x30\x82" + len(inner).to_bytes(2, "big") + inner
    return base64.b64encode(der).decode()


def _lines(b64: str, width: int = 64) -> list[str]:
    return [b64[i : i + width] for i in range(0, len(b64), width)]


Context = Callable[[Gen, str, str], str]


def _contexts_for_tokens() -> list[tuple[str, Context]]:
    """Contexts for a token (prefixed or bare): ``(name, make(gen, secret, NAME))``."""
    return [
        ("env", lambda g, s, n: f"export {n}_API_KEY={s}\nexport PATH=/usr/bin"),
        ("env quoted", lambda g, s, n: f'{n}_TOKEN="{s}"'),
        ("yaml", lambda g, s, n: f"{n.lower()}:\n  api_key: {s}\n  region: us-east-1"),
        ("json", lambda g, s, n: json.dumps({"service": n.lower(), "token": s, "retries": 3})),
        ("json escaped", lambda g, s, n: json.dumps(json.dumps({"secret": s}))),
        ("xml element", lambda g, s, n: f"<config><apiKey>{s}</apiKey><id>7</id></config>"),
        ("xml attribute", lambda g, s, n: f'<service name="{n}" token="{s}" retries="2"/>'),
        (".net value=", lambda g, s, n: f'<add key="{n}ApiKey" value="{s}" />'),
        ("ini", lambda g, s, n: f"[{n.lower()}]\nsecret = {s}\ntimeout = 30"),
        ("url query", lambda g, s, n: f"GET https://api.{n.lower()}.io/v1/search?q=x&key={s}&n=5"),
        ("url query first", lambda g, s, n: f"https://x.blob.core.windows.net/c?sig={s}&sv=2022"),
        ("url userinfo", lambda g, s, n: f"git clone https://{n.lower()}:{s}@git.example.com/r"),
        ("code call", lambda g, s, n: f'client = {n}Client(api_key="{s}", timeout=30)'),
        ("code auth tuple", lambda g, s, n: f'requests.get(url, auth=("{n.lower()}", "{s}"))'),
        ("code basic auth", lambda g, s, n: f'HTTPBasicAuth("{n.lower()}", "{s}")'),
        ("markdown table", lambda g, s, n: f"| name | value |\n|---|---|\n| {n}_API_KEY | {s} |"),
        ("html table", lambda g, s, n: f"<tr><td>{n} token</td><td>{s}</td></tr>"),
        ("cli --token", lambda g, s, n: f"{n.lower()}-cli deploy --token {s} --region eu"),
        ("cli --api-key=", lambda g, s, n: f"{n.lower()} login --api-key={s}"),
        ("cli gh secret", lambda g, s, n: f"gh secret set {n}_KEY --body {s}"),
        ("tool-call args", lambda g, s, n: json.dumps({"command": f"curl -u {n.lower()}:{s} x"})),
        ("header", lambda g, s, n: f"curl -H 'X-{n}-Key: {s}' https://api.example.com"),
        ("k8s env", lambda g, s, n: json.dumps([{"name": f"{n}_API_KEY", "value": s}])),
    ]


def _contexts_for_prefixed() -> list[tuple[str, Context]]:
    """Contexts only a prefixed token can be found in: no credential word near it."""
    return [
        ("prose", lambda g, s, n: f"Use this one: {s} (expires in 30 days)."),
        ("echo output", lambda g, s, n: f"$ echo ${n}\n{s}\n$ ls"),
        ("python repr", lambda g, s, n: f"['{s}', 'us-east-1']"),
        ("log line", lambda g, s, n: f"2026-01-01T00:00:00Z INFO using {s} for {n.lower()}"),
    ]


def _password_contexts() -> list[tuple[str, Context]]:
    return [
        ("netrc", lambda g, p, n: f"machine api.{n.lower()}.com login bot password {p}\n"),
        (
            "maven",
            lambda g, p, n: (
                f"<server><id>{n}</id><username>u</username><password>{p}</password></server>"
            ),
        ),  # noqa: E501
        ("yaml list", lambda g, p, n: f"passwords:\n  - {p}\n  - ${{BACKUP_PW}}\nusers: 2"),
        ("connection string", lambda g, p, n: f"Server=db;User Id=sa;Password={p};Encrypt=true"),
        ("url password with quote", lambda g, p, n: f"mysql://root:{p}@db:3306/app"),
        ("auth tuple", lambda g, p, n: f'session.auth = ("admin", "{p}")'),
        ("mysql -p", lambda g, p, n: f"mysql -u root -p{p} -h db {n.lower()}"),
        ("redis-cli -a", lambda g, p, n: f"redis-cli -h cache -a {p} PING"),
        ("htpasswd -b", lambda g, p, n: f"htpasswd -bc /etc/nginx/.htpasswd admin {p}"),
        ("openssl -k", lambda g, p, n: f"openssl enc -aes-256-cbc -k {p} -in a -out b"),
        ("openssl pass:", lambda g, p, n: f"openssl pkcs12 -export -passout pass:{p} -out c.p12"),
        ("docker login -p", lambda g, p, n: f"docker login -u bot -p {p} registry.example.com"),
        ("sshpass -p", lambda g, p, n: f"sshpass -p '{p}' ssh root@10.0.0.5"),
        ("curl -u", lambda g, p, n: json.dumps({"cmd": f"curl -u admin:{p} https://x"})),
        ("xml password attr", lambda g, p, n: f'<datasource user="app" password="{p}"/>'),
        ("markdown password", lambda g, p, n: f"| user | password |\n|--|--|\n| admin | {p} |"),
    ]


def _pem_shapes(g: Gen) -> list[Planted]:
    out = []
    b64 = _der_private_key(g)
    core = b64[40:]
    lines = _lines(b64)
    head, end = "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----"
    shapes = {
        "pem <br>": "<br>".join([head, *lines, end]),
        "pem <br> truncated": "<br>".join([head, *lines]),
        "pem > quoted": "\n".join("> " + x for x in [head, *lines, end]),
        "pem > quoted truncated": "\n".join("> " + x for x in [head, *lines]),
        "pem literal \\n": "\\n".join([head, *lines, end]),
        "pkcs8 bare body": "\n".join(lines),
        "pkcs8 bare one line": b64,
        "pkcs8 bare in json": json.dumps({"key": b64}),
    }
    for name, text in shapes.items():
        out.append(Planted(name, f"cat key.pem\n{text}\ndone", b64, core))
    return out


def corpus(seed: int = 36, rounds: int = 4) -> list[Planted]:
    """Every context with fresh random secrets, ``rounds`` times."""
    g = Gen(seed)
    out: list[Planted] = []
    for _ in range(rounds):
        for name, make in _contexts_for_tokens():
            secret, body = g.token()
            out.append(Planted(f"prefixed/{name}", make(g, secret, g.name()), secret, body))
            bare = g.bare()
            out.append(Planted(f"bare/{name}", make(g, bare, g.name()), bare, bare))
        for name, make in _contexts_for_prefixed():
            secret, body = g.token()
            out.append(Planted(f"prefixed/{name}", make(g, secret, g.name()), secret, body))
            bare = g.s(g.rng.randint(32, 64), ALNUM)  # a bare mixed-case key, no word near
            out.append(Planted(f"bare base62/{name}", make(g, bare, g.name()), bare, bare))
        for name, make in _password_contexts():
            pw = g.password()
            if "quote" in name:
                pw = pw[:4] + "'" + pw[4:]
            out.append(Planted(f"password/{name}", make(g, pw, g.name()), pw, pw))
        out.extend(_pem_shapes(g))
        blob = base64.b64encode(
            b"\x17\x03" + bytes(g.rng.getrandbits(8) for _ in range(300))
        ).decode()
        out.append(Planted("bare session token", f"sts output:\n{blob}\n", blob, blob))
    return out


def look_alikes(seed: int = 7) -> list[str]:
    """Strings that look like credentials and are not: each must survive byte for byte."""
    rng = random.Random(seed)

    def r(n: int, alphabet: str = ALNUM) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(rng.getrandbits(8) for _ in range(400)))
    cert = base64.b64encode(
        b"\x30\x82\x03\x00\x30\x82\x02\x00\xa0\x03\x02\x01\x02" + bytes(range(200))
    ).decode()
    return [
        str(uuid.UUID(int=rng.getrandbits(128))),
        f"trial {uuid.UUID(int=rng.getrandbits(128))} finished",
        hashlib.sha1(r(8).encode()).hexdigest(),
        "commit " + hashlib.sha1(r(8).encode()).hexdigest(),
        hashlib.sha256(r(8).encode()).hexdigest(),
        "sha256:" + hashlib.sha256(r(8).encode()).hexdigest(),
        "image@sha256:" + hashlib.sha256(r(8).encode()).hexdigest(),
        '"integrity": "sha512-' + base64.b64encode(hashlib.sha512(b"x").digest()).decode() + '"',
        "data:image/png;base64," + png.decode(),
        '{"type": "image", "data": "' + png.decode() + '"}',
        "call_" + r(24),
        "toolu_01" + r(22),
        "msg_01" + r(22),
        "chatcmpl-" + r(29),
        "resp_" + r(48, HEX),
        "fc_" + r(48, HEX),
        "req_" + r(24),
        "demo-task__aaaa1111",
        "reserves-at-risk-calc__yo7qFCk",
        "adaptive-cruise-control__2EwRXdJ",
        "claude-code-claude-opus-4-5-skills-seismic-phase-picking-478ba4",
        "claude-3-5-sonnet-20241022",
        "gpt-4o-2024-08-06",
        "gemini-2.5-pro-preview-05-06",
        "Qwen2.5-Coder-32B-Instruct",
        "accounts/fireworks/models/llama-v3p1-405b-instruct",
        "/tmp/pytest-of-root/pytest-0/test_export_bundle_roundtrip0/out.json",
        "src/bf_assets/redact/structural_token_finder_v2.py",
        "assets/index-BdQq3f2a.js",
        "get_user_account_settings_handler_v2",
        "SomeVeryLongCamelCaseIdentifierName",
        "AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY}",
        "api_key = os.environ['OPENAI_API_KEY']",
        "password: <your-password>",
        "token: [REDACTED:openai_key]",
        "max_tokens: 4096",
        "x86_64-unknown-linux-gnu",
        "python3.11-dev_3.11.4-1+jammy2_amd64.deb",
        "-----BEGIN CERTIFICATE-----\n" + "\n".join(_lines(cert)) + "\n-----END CERTIFICATE-----",
        "mysql -u root -p db_name",
        "docker run -p 8080:80 nginx",
        "ssh -p 2222 user@host",
        "openssl enc -aes-256-cbc -pass env:PASSPHRASE -in a",
        "The password must contain at least 8 characters.",
        "| key | description |\n|---|---|\n| timeout | seconds to wait |",
    ]
