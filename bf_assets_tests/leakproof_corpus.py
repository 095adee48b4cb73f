"""A corpus of realistic fake secrets and of look-alikes that are not secrets.

Every secret is generated at run time from a seeded random source, so this file holds no
credential-shaped literal.  Each :class:`Planted` knows the text to plant (the secret in its
usual context: an env line, a header, a URL, ...) and the fragments that must not survive
(the secret, and three 8-character pieces of its random part, so a partial redaction that
leaves an inner piece fails too).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64URL = ALNUM + "-_"
B64 = ALNUM + "+/"
PUNCT_PASSWORD = ALNUM + "@:/#!%^*+=~"


@dataclass(frozen=True)
class Planted:
    name: str
    text: str  # what is planted
    secret: str  # the secret inside it
    core: str  # its random part

    def fragments(self) -> list[str]:
        c = self.core
        pieces = [self.secret]
        if len(c) >= 8:
            mid = len(c) // 2
            pieces += [c[:8], c[mid - 4 : mid + 4], c[-8:]]
        return pieces


class Gen:
    def __init__(self, seed: int = 11) -> None:
        self.rng = random.Random(seed)

    def s(self, n: int, alphabet: str = ALNUM) -> str:
        while True:  # realistic keys mix classes; avoid a draw that happens to be all letters
            out = "".join(self.rng.choice(alphabet) for _ in range(n))
            if n < 8 or len(set(out)) > min(n, len(alphabet)) // 2:
                return out


def vendor_secrets(g: Gen) -> list[Planted]:
    out: list[Planted] = []

    def add(name: str, prefix: str, core: str, suffix: str = "", ctx: str = "{}") -> None:
        secret = prefix + core + suffix
        out.append(Planted(name, ctx.format(secret), secret, core))

    add("stripe live", "sk_live_", g.s(24), ctx="STRIPE_KEY={}")
    add("stripe restricted", "rk_live_", g.s(24), ctx="stripe.api_key = '{}'")
    add("gitlab pat", "glpat-", g.s(20, ALNUM + "-_"), ctx="git push https://oauth2@x {}")
    add("npm", "npm_", g.s(36), ctx="//registry.npmjs.org/:_authToken={}")
    add("pypi", "pypi-AgEIcHlwaS5vcmc", g.s(80, B64URL), ctx="password = {}")
    add("google oauth", "ya29.", g.s(64, B64URL), ctx="access token {} expires")
    add("google api key", "AIza", g.s(35, B64URL), ctx="key={}")
    add("sendgrid", "SG.", g.s(22, B64URL) + "." + g.s(43, B64URL), ctx="SENDGRID={}")
    add("twilio key", "SK", g.s(32, HEX), ctx="twilio sid {}")
    add("twilio account", "AC", g.s(32, HEX), ctx="account {} ok")
    add("mailchimp", "", g.s(32, HEX), "-us12", ctx="mc: {}")
    add("telegram", str(g.rng.randint(10**8, 10**10 - 1)) + ":AA", g.s(33, B64URL), ctx="bot {}")
    add(
        "slack webhook",
        "https://hooks.slack.com/services/T" + g.s(8, string.ascii_uppercase + string.digits),
        "/B" + g.s(10, string.ascii_uppercase + string.digits) + "/" + g.s(24),
        ctx="curl -X POST {}",
    )
    add("slack bot", "xoxb-" + g.s(11, string.digits) + "-" + g.s(12, string.digits) + "-", g.s(24))
    add("anthropic", "sk-ant-api03-", g.s(93, B64URL), "AA", ctx="ANTHROPIC_API_KEY={}")
    add("openai project", "sk-proj-", g.s(100, B64URL), ctx='openai.api_key="{}"')
    add("github pat", "ghp_", g.s(36), ctx="token {}")
    add("github fine-grained", "github_pat_", g.s(82, ALNUM + "_"), ctx="GH={}")
    add("hugging face", "hf_", g.s(34), ctx="login --token {}")
    add("aws access key", "AKIA", g.s(16, string.ascii_uppercase + string.digits))
    add("aws secret", "", g.s(40, B64), ctx="aws_secret_access_key = {}")
    add(
        "azure storage",
        "",
        g.s(86, B64),
        "==",
        ctx="DefaultEndpointsProtocol=https;AccountName=x;AccountKey={};EndpointSuffix=core.windows.net",
    )
    add("databricks", "dapi", g.s(32, HEX), ctx="DATABRICKS_TOKEN {}")
    add("digitalocean", "dop_v1_", g.s(64, HEX), ctx="doctl auth init -t {}")
    add("shopify", "shpat_", g.s(32, HEX))
    add("linear", "lin_api_", g.s(40))
    add("doppler", "dp.pt.", g.s(43, LOWER_ALNUM))
    add("square", "sq0atp-", g.s(22, B64URL))
    add("postman", "PMAK-", g.s(24, HEX) + "-" + g.s(34, HEX))
    add("new relic", "NRAK-", g.s(27, string.ascii_uppercase + string.digits))
    add("grafana", "glsa_", g.s(32) + "_" + g.s(8, HEX))
    add("vault", "hvs.", g.s(90, B64URL), ctx="VAULT_TOKEN={}")
    add("age", "AGE-SECRET-KEY-1", g.s(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"))
    add(
        "dynatrace",
        "dt0c01.",
        g.s(24, string.ascii_uppercase + string.digits)
        + "."
        + g.s(64, string.ascii_uppercase + string.digits),
    )
    add("pulumi", "pul-", g.s(40, HEX))
    add("groq", "gsk_", g.s(52), ctx="GROQ_API_KEY={}")
    add("xai", "xai-", g.s(80), ctx="XAI_API_KEY={}")
    add("replicate", "r8_", g.s(37), ctx="REPLICATE_API_TOKEN={}")
    add("daytona", "dtn_", g.s(64), ctx="DAYTONA_API_KEY={}")
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    body = base64.urlsafe_b64encode(
        json.dumps({"sub": g.s(10), "iat": 1700000000}).encode()
    ).decode()
    add("jwt", header + "." + body.rstrip("=") + ".", g.s(43, B64URL), ctx="jwt={}")
    return out


def _pem(kind: str, g: Gen, *, end: bool = True, escaped: bool = False) -> tuple[str, str]:
    nl = "\\n" if escaped else "\n"
    lines = [g.s(64, B64) for _ in range(5)]
    head = f"-----BEGIN {kind}-----"
    text = head + nl + nl.join(lines)
    if end:
        text += nl + f"-----END {kind}-----"
    return text, "".join(lines)


def key_blocks(g: Gen) -> list[Planted]:
    out = []
    for kind in (
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "DSA PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
    ):
        text, core = _pem(kind, g)
        out.append(Planted(f"{kind} block", f"key file:\n{text}\nend of file", text, core))
    text, core = _pem("OPENSSH PRIVATE KEY", g, end=False)
    out.append(Planted("truncated OpenSSH key", f"cat id_ed25519\n{text}", text, core))
    text, core = _pem("RSA PRIVATE KEY", g, escaped=True)
    out.append(Planted("JSON-escaped RSA key", f'{{"pem": "{text}"}}', text, core))
    pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n" + "\n".join(
        g.s(64, B64) for _ in range(4)
    )
    out.append(Planted("truncated PGP key", pgp + "\n(truncated)", pgp, pgp[-60:]))
    return out


def generic_forms(g: Gen) -> list[Planted]:
    out: list[Planted] = []

    def add(name: str, core: str, ctx: str) -> None:
        out.append(Planted(name, ctx.format(core), core, core))

    add("env password", g.s(14), "MYSQL_ROOT_PASSWORD={}")
    add("yaml password", g.s(12), "database:\n  password: {}\n  user: app")
    add("yaml password with spaces", "correct horse " + g.s(10), "password: {}")
    add("json api_key", g.s(24), '{{"api_key": "{}", "user": "x"}}')
    add("toml secret", g.s(20), 'secret = "{}"')
    add("x-api-key header", g.s(32), "x-api-key: {}")
    add("curl header", g.s(32), "curl -H 'X-API-Key: {}' https://api.example.com")
    add("bearer header", g.s(40, B64URL), "Authorization: Bearer {}")
    add(
        "basic header",
        base64.b64encode(("admin:" + g.s(12)).encode()).decode(),
        "Authorization: Basic {}",
    )
    add("passwd json", g.s(10), '{{"passwd": "{}"}}')
    add("token yaml", g.s(30), "token: {}")
    add("client secret env", g.s(32), "CLIENT_SECRET={}")
    add("cli flag", g.s(16), "mysql --password={} -h db")
    add("cli flag spaced", g.s(16), "tool login --token {}")
    add("pgpassword", g.s(12), "PGPASSWORD={} psql -h db")
    add("python kwarg", g.s(18), 'connect(user="app", password="{}")')
    add("low entropy password", "hunter2hunter2", "DB_PASSWORD={}")
    pw = "p@ss" + g.s(6) + ":/x#" + g.s(4)
    out.append(
        Planted("postgres url", f"postgresql+psycopg2://app:{pw}@db.internal:5432/prod", pw, pw)
    )
    pw = g.s(16)
    out.append(Planted("redis url", f"redis://:{pw}@cache:6379/0", pw, pw))
    pw = g.s(8, PUNCT_PASSWORD) + "@" + g.s(6)
    out.append(Planted("https userinfo", f"git clone https://alice:{pw}@example.com/r.git", pw, pw))
    pw = g.s(14)
    out.append(
        Planted("mongodb url", f'MONGO_URL="mongodb+srv://root:{pw}@cluster0.x.net/db"', pw, pw)
    )
    pw = g.s(14)
    out.append(Planted("amqp url", f"amqp://guest:{pw}@rabbit:5672/", pw, pw))
    sig = g.s(43, B64URL)
    out.append(Planted("signed url", f"https://bucket.s3/x?X-Amz-Signature={sig}&x=1", sig, sig))
    return out


def corpus(seed: int = 11) -> list[Planted]:
    g = Gen(seed)
    return vendor_secrets(g) + key_blocks(g) + generic_forms(g)


def look_alikes(seed: int = 5) -> list[str]:
    """Strings that look like secrets and are not: they must survive cleaning verbatim."""
    rng = random.Random(seed)
    data = b"The quick brown fox jumps over the lazy dog; ordinary file contents here."
    return [
        "sha256:" + hashlib.sha256(b"x").hexdigest(),
        hashlib.sha256(b"y").hexdigest(),
        hashlib.sha1(b"commit").hexdigest(),
        "git checkout " + hashlib.sha1(b"z").hexdigest()[:12],
        "call_" + "".join(rng.choice(ALNUM) for _ in range(24)),
        "toolu_" + "".join(rng.choice(ALNUM) for _ in range(24)),
        "demo-task__aaaa1111",
        "reserves-at-risk-calc__yo7qFCk",
        base64.b64encode(data).decode(),
        str(uuid.UUID(int=rng.getrandbits(128))),
        "max_tokens: 4096, total_tokens: 1234",
        'tokenizer.eos_token = "</s>"',
        "def login(password: str) -> bool:",
        "chatcmpl-" + "".join(rng.choice(ALNUM) for _ in range(29)),
    ]
