"""Our own rules: the generic forms no vendor list has, and vendor formats gitleaks lacks.

* ``private_key``: PEM/OpenSSH/PGP/SSH2 private-key blocks of every kind, to the END line or,
  when it is missing (a truncated key), over every line of key material that follows; a bare
  ``BEGIN ... PRIVATE KEY`` mention and PuTTY key files too;
* ``url_credentials``: the password of URL userinfo in any scheme, whatever characters it
  holds (``postgresql+psycopg2://u:p@ss@host`` loses ``p@ss``), JSON-escaped slashes too;
  secret query parameters (``?api_key=...&sig=...``);
* ``secret_assignment``: credential assignments in env files, shell, YAML, JSON, TOML, Python,
  JS, HTTP headers and command-line flags (``password``, ``passwd``, ``pwd``, ``secret``,
  ``token``, ``api_key``, ``x-api-key``, ``Authorization``, ``cookie``, ...), whatever the value
  looks like; quoted values end at their closing quote, header values at the end of the line;
* ``bearer_token``: ``Bearer``/``Basic``/``Token`` credentials anywhere;
* ``jwt``: JSON Web Tokens (two or three segments, the header must decode to JSON);
* vendor formats: model providers and services seen in agent runs (Anthropic, OpenAI,
  Google ``AIza``/``ya29.``, Daytona, Groq, xAI, Replicate, Fireworks, Hugging Face, Azure
  storage keys and SAS signatures, bare Telegram bot tokens, Mailchimp, Twilio).

Each rule carries keywords (lowercase) for the engine's prefilter.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

from bf_assets.redact.engine import Context, LazyRule, Rule

_A = re.ASCII


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, _A | flags)


# --------------------------------------------------------------------------- private keys

_KEY_HEAD = _rx(
    r"(?:-{2,5}[ \t]?)?BEGIN[ A-Z0-9_-]{0,100}?PRIVATE[ _]KEY(?:[ _]BLOCK)?(?:[ \t]?-{2,5})?", re.I
)
_KEY_END = _rx(
    r"-{2,5}[ \t]?END[ A-Z0-9_-]{0,100}?PRIVATE[ _]KEY(?:[ _]BLOCK)?(?:[ \t]?-{2,5})?", re.I
)
# Key material after a header whose END line is missing: base64 lines, PEM/PGP header lines
# (``Proc-Type: 4,ENCRYPTED``, ``Version: ...``), separated by real or escaped line breaks.
_NL = r"(?:[ \t]*(?:\r?\n|\\r\\n|\\n|\\\\n)[ \t]*|[ \t]+)"
_KEY_BODY = _rx(
    r"(?:" + _NL + r"+(?:[A-Za-z][A-Za-z0-9-]{0,40}:[ \t][^\r\n\\\"']{0,200}|[A-Za-z0-9+/=]{1,}))*"
)
_PUTTY = _rx(r"PuTTY-User-Key-File-\d+:[^\r\n]*")
_PUTTY_BODY = _rx(
    r"(?:" + _NL + r"+(?:[A-Za-z][A-Za-z0-9-]{0,40}:[ \t]?[^\r\n\\\"']{0,200}|[A-Za-z0-9+/=]{1,}))*"
)
MAX_KEY_CHARS = 65536


def find_private_keys(ctx: Context, positions: list[int]) -> Iterator[tuple[int, int]]:
    text = ctx.text
    pos = 0
    while True:
        m = _KEY_HEAD.search(text, pos)
        if not m:
            break
        if not m.group(0).startswith("-"):  # a bare mention: the words alone
            yield m.span()
            pos = m.end()
            continue
        end = _KEY_END.search(text, m.end(), m.end() + MAX_KEY_CHARS)
        if end:
            yield m.start(), end.end()
            pos = end.end()
        else:  # truncated: every line of key material that follows
            body = _KEY_BODY.match(text, m.end(), m.end() + MAX_KEY_CHARS)
            stop = body.end() if body else m.end()
            yield m.start(), stop
            pos = max(stop, m.end())
    for m in _PUTTY.finditer(text):
        body = _PUTTY_BODY.match(text, m.end(), m.end() + MAX_KEY_CHARS)
        yield m.start(), body.end() if body else m.end()


# --------------------------------------------------------------------------- URLs

# scheme://user:password@host  (or with JSON-escaped slashes :\/\/).  The password is
# greedy: it runs to the last ``@`` before a host, so it may hold ``@``, ``:`` or ``/``.
_URL_GREEDY = _rx(
    r"(?i)\b[a-z][a-z0-9+.-]{0,30}:(?:\\?/){2}"
    r"(?P<user>[^\s/?#@\"'<>`:\\]{0,256}):(?P<pw>[^\s\"'<>`]{1,1024})"
    r"@(?=[A-Za-z0-9\[%_-])(?P<host>[A-Za-z0-9.\-\[\]%_]{1,256})(?=[:/?#\s\"'<>`),;|\\\]}]|$)"
)
_URL_USER_TOKEN = _rx(
    r"(?i)\b[a-z][a-z0-9+.-]{0,30}:(?:\\?/){2}(?P<user>[A-Za-z0-9_\-.~%]{16,512})@(?=[A-Za-z0-9])"
)
_QUERY_CRED = _rx(
    r"(?i)[?&;](?:[a-z0-9_.-]*?(?:api[_-]?key|apikey|access[_-]?key|access[_-]?token|refresh[_-]?token|"
    r"id[_-]?token|auth[_-]?token|session[_-]?token|client[_-]?secret|secret|password|passwd|pwd|"
    r"token|key|auth|sig|signature|credential|x-amz-signature|x-amz-credential|"
    r"x-amz-security-token|x-goog-signature|x-goog-credential|sas|account[_-]?key))"
    r"=(?P<v>[^&\s\"'<>#`\\]{4,2048})"
)
_PORT_PATH = _rx(r"\d{1,5}/")


def has_any(text: str, needles: tuple[str, ...], start: int, end: int) -> bool:
    """True when one of ``needles`` lies wholly inside ``text[start:end]``: a pattern every
    match of which holds one of them cannot match where none does."""
    return any(text.find(n, start, end) >= 0 for n in needles)


# Literals every match of a pattern holds (checked before the pattern is run on a window).
_URL_SEP = (":/", ":\\/")  # ``:`` then ``/`` or ``\/`` (``:(?:\\?/){2}``)
_REVERSED_OP = ("==", "!=")  # ``[!=]={1,2}``
_QUOTE_SEMI = ('";', "';", "`;")  # ``(?P=q);``


def find_url_credentials(ctx: Context, positions: list[int]) -> Iterator[tuple[int, int]]:
    text = ctx.text
    for s, _e, line_end in ctx.windows(positions):
        lo = max(0, s - 64)
        if has_any(text, _URL_SEP, lo, line_end):
            for m in _URL_GREEDY.finditer(text, lo, line_end):
                pw = m.group("pw")
                if _PORT_PATH.match(pw) or pw.startswith("[REDACTED"):
                    continue
                yield m.span("pw")
            for m in _URL_USER_TOKEN.finditer(text, lo, line_end):
                user = m.group("user")
                if sum((any(c.isdigit() for c in user), any(c.isupper() for c in user))) == 2:
                    yield m.span("user")
        for m in _QUERY_CRED.finditer(text, s, line_end):
            yield m.span("v")


# --------------------------------------------------------------------------- assignments

# Words whose value is a secret whatever follows the word in the key (``password_prod``,
# ``db_pass``), as in detect-secrets' keyword list; and words that must end the key
# (``token`` in ``access_token`` but not in ``token_count``).
_ANY_SUFFIX = (
    r"pass(?:word|wd|phrase)|pwd|secret|contrase(?:n|\u00f1)a|"
    r"(?:api|auth|service|account|db|database|priv|private|client|access|master|signing|"
    r"encryption|session|app|consumer)[_-]?key|apikey|(?:db|database|key)[_-]?pass"
)
_END_ONLY = (
    r"token|auth|authorization|cookie|credentials?|bearer|session[_-]?id|sessionid|"
    r"connection[_-]?string|conn[_-]?str|dsn|sas|signature"
)
_KEY_CORE = _rx(
    r"(?i)(?P<key>[A-Za-z0-9_.\-]{0,64}?(?:(?:" + _ANY_SUFFIX + r")[A-Za-z0-9_.\-]{0,40}|"
    r"(?:" + _END_ONLY + r")[0-9]*)(?![A-Za-z0-9_.\-]))"
)
_NOT_SECRET_KEYS = re.compile(
    r"(?i)^(?:.*[_.-])?(?:eos|bos|pad|unk|sep|cls|mask|start|end|stop|special|next|page|"
    r"continuation|max|min|num|n|total|input|output|prompt|completion|reasoning|cache|cached|"
    r"image|audio|text|csrf|xsrf|cancel|cancellation|sync|resume|last|first|default|unknown|"
    r"eot|eom|im_start|im_end|count|length|ids?)[_.-]?tokens?$|"
    r"^(?:.*[_.-])?tokens?[_.-](?:count|counts|len|length|limit|usage|ids?|type|budget|"
    r"estimate|num)$|^(?:author|authority|authors|authenticated|authentication)$"
)
# the separator after a key, with the key's own closing quote/bracket first
_SEP = _rx(
    r"(?P<close>\\?[\"'`]|\])?(?P<ws>[ \t]*)(?P<sep>:=|===?|!==?|=>|\?=|\|\|=|=|:)(?![=:/])[ \t]*(?P<at>@)?"
)
_PLACEHOLDER_VALUE = _rx(
    r"(?i)^(?:|null|none|nil|true|false|undefined|\*+|x{3,}|\.\.\.|<[^<>]*>|\$\{[^}]*\}|"
    r"\$\(?[A-Za-z_][A-Za-z0-9_]*\)?|\{\{.*\}\}|%[A-Za-z_][A-Za-z0-9_]*%)$"
)
_SESSION_ID_KEY = _rx(r"(?i)session[_-]?id$")
_UUID_VALUE = _rx(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TYPE_OR_CODE = _rx(
    r"^(?:(?:typing\.)?(?:str|int|bool|bytes|float|Any|None|Optional\[.*|Union\[.*|"
    r"SecretStr|string|String|number|boolean|object|dict|list)\b.*|"
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(.*|\[.*)|"
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+|"
    r"(?:self|this|os|process|config|settings|cfg|args|ctx|env|request|req|options|opts)\.[\s\S]*)$"
)
_HEADER_KEYS = _rx(
    r"(?i)^(?:authorization|proxy-authorization|cookie|set-cookie|x-[a-z0-9-]+|[a-z0-9]+(?:-[a-z0-9]+)+)$"
)
_LINE_LEAD = _rx(r"[ \t]*(?:-[ \t]+|export[ \t]+|set[ \t]+|ENV[ \t]+|ARG[ \t]+|#[ \t]*)?$")
_UNQUOTED_STOP = frozenset(" \t\r\n\"'`,;&|)}]<>")
_COMMENT = re.compile(r"[ \t]+#.*$")
_ESCAPED_EOL = re.compile(r"\\[rn]")
KEYWORDS_ASSIGN = (
    "pass",
    "pwd",
    "secret",
    "contrase",
    "key",
    "token",
    "auth",
    "cookie",
    "credential",
    "bearer",
    "session",
    "dsn",
    "conn",
    "sas",
    "signature",
)


def _quoted(text: str, i: int, limit: int) -> tuple[int, int] | None:
    """The inside of the quoted value starting at ``text[i]`` (a quote, or ``\\"``)."""
    if text.startswith('\\"', i) or text.startswith("\\'", i):
        q = text[i : i + 2]
        j = text.find(q, i + 2, limit)
        return (i + 2, j) if j >= 0 else (i + 2, _eol(text, i + 2, limit))
    q = text[i]
    j = i + 1
    while j < limit:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == q or c == "\n":
            break
        j += 1
    return i + 1, min(j, limit)


def _eol(text: str, i: int, limit: int) -> int:
    j = text.find("\n", i, limit)
    j = limit if j < 0 else j
    m = _ESCAPED_EOL.search(text, i, j)
    return m.start() if m else j


def _value_span(
    ctx: Context, key: str, key_start: int, vstart: int, sep: str = "="
) -> tuple[int, int] | None:
    text = ctx.text
    limit = min(len(text), vstart + 8192)
    if vstart >= limit or text.startswith("${", max(0, key_start - 2)):
        return None  # ``${NAME:-default}``: a shell expansion's default, not an assignment
    c = text[vstart]
    if c in "\"'`" or text.startswith(('\\"', "\\'"), vstart):
        span = _quoted(text, vstart, limit)
        if span is None or _PLACEHOLDER_VALUE.match(text[span[0] : span[1]]):
            return None
        if _SESSION_ID_KEY.search(key) and _UUID_VALUE.fullmatch(text[span[0] : span[1]]):
            return None  # an agent's conversation id, not a web session
        return span
    if c in "{[(\r\n":
        return None
    line_start = text.rfind("\n", 0, key_start) + 1
    header = bool(_HEADER_KEYS.match(key))
    at_line_start = bool(_LINE_LEAD.match(text, line_start, key_start))
    if header or at_line_start or sep == ":":
        # a header, a whole env/YAML line, or ``key: value`` prose: the value may hold spaces
        end = _eol(text, vstart, limit)
        end = next((j for j in range(vstart, end) if text[j] in "\"'`"), end)
        if not header:
            m = _COMMENT.search(text, vstart, end)
            if m:
                end = m.start()
            if not at_line_start:  # inline YAML/JSON-ish: stop at the next item
                end = next((j for j in range(vstart, end) if text[j] in ",;}]"), end)
        while end > vstart and text[end - 1] in " \t,;":
            end -= 1
    else:
        end = vstart
        while end < limit and text[end] not in _UNQUOTED_STOP:
            if text[end] == "\\" and text.startswith(("\\n", "\\r", '\\"', "\\t"), end):
                break
            end += 1
    value = text[vstart:end]
    if _PLACEHOLDER_VALUE.match(value) or _TYPE_OR_CODE.match(value):
        return None
    if _SESSION_ID_KEY.search(key) and _UUID_VALUE.fullmatch(value):
        return None  # an agent's conversation id (Claude Code, gemini-cli), not a web session
    if not any(ch.isalnum() for ch in value):
        return None  # punctuation alone (``-``, ``...``) holds no secret
    return (vstart, end) if end > vstart else None


def _key_at(ctx: Context, p: int) -> re.Match[str] | None:
    """The key around keyword position ``p``: back to the identifier's start, then the core."""
    text = ctx.text
    s = p
    while s > 0 and p - s < 64 and (text[s - 1].isalnum() or text[s - 1] in "_.-"):
        s -= 1
    if s > 0 and text[s - 1] == "-" and text[s - 2 : s - 1] == "-":
        s -= 2
    return _KEY_CORE.match(text, s)


def find_assignments(ctx: Context, positions: list[int]) -> Iterator[tuple[int, int]]:
    text = ctx.text
    seen: set[int] = set()
    for p in sorted(set(positions)):
        km = _key_at(ctx, p)
        if km is None or km.end() < p or km.start() in seen:
            continue
        seen.add(km.start())
        key = km.group("key").lstrip("-.")
        if _NOT_SECRET_KEYS.match(key):
            continue
        if km.start() > 0 and text[km.start() - 1] in "/\\":
            continue  # a path's last name (``/srv/x/google-auth: empty section``), not a key
        # a key written as a command-line flag: --password VALUE / --token=VALUE
        if text.startswith("--", km.start()) or (
            km.start() >= 2 and text[km.start() - 2 : km.start()] == "--"
        ):
            fm = re.compile(r"(?:=|[ \t]+)").match(text, km.end())
            if fm and text[fm.end() : fm.end() + 1] not in ("-", ""):
                span = _value_span(ctx, key, km.start(), fm.end())
                if span:
                    yield span
                continue
        sm = _SEP.match(text, km.end())
        if sm is None:
            continue
        span = _value_span(ctx, key, km.start(), sm.end(), sm.group("sep"))
        if span is not None:
            yield span


# "value" == password  (the comparison written the other way round)
_REVERSED = _rx(
    r"(?i)(?P<q>[\"'`])(?P<v>[^\"'`\n]{1,512})(?P=q)[ \t]*[!=]={1,2}[ \t]*[A-Za-z0-9_.]*?"
    r"(?:" + _ANY_SUFFIX + r")"
)
# private_key "value";  (a keyword, a few characters, then a quoted value and a semicolon)
_QUOTED_SEMI = _rx(
    r"(?i)(?:" + _ANY_SUFFIX + r")[^\s]{0,50}?[ \t]+(?P<q>[\"'`])(?P<v>[^\"'`\n]{1,512})(?P=q);"
)


def find_reversed(ctx: Context, positions: list[int]) -> Iterator[tuple[int, int]]:
    text = ctx.text
    for s, _, line_end in ctx.windows(positions):
        for rx, needles in ((_REVERSED, _REVERSED_OP), (_QUOTED_SEMI, _QUOTE_SEMI)):
            if not has_any(text, needles, s, line_end):
                continue
            for m in rx.finditer(text, s, line_end):
                if not _PLACEHOLDER_VALUE.match(m.group("v")):
                    yield m.span("v")


# --------------------------------------------------------------------------- JWT


def _b64json(segment: str) -> bool:
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        return False
    return raw.lstrip()[:1] == b"{"


_JWT = _rx(r"eyJ[A-Za-z0-9_=-]{4,}\.[A-Za-z0-9_=-]{2,}(?:\.[A-Za-z0-9_.+/=-]*)?")


def find_jwts(ctx: Context, positions: list[int]) -> Iterator[tuple[int, int]]:
    text = ctx.text
    for s, _, line_end in ctx.windows(positions):
        if text.find("eyJ", s, line_end) < 0:
            continue
        for m in _JWT.finditer(text, s, line_end):
            if _b64json(m.group(0).split(".", 1)[0].rstrip("=")):
                yield m.span()


# --------------------------------------------------------------------------- the rules


def _r(kind: str, keywords: tuple[str, ...], pattern: str, group: int = 0, flags: int = 0) -> Rule:
    """A pattern rule, compiled the first time its keywords occur (``LazyRule``)."""
    return LazyRule(pattern, _A | flags, tuple, kind=kind, keywords=keywords, group=group)


def _whole(kind: str, keywords: tuple[str, ...], pattern: str) -> Rule:
    """A rule whose keyword is too common to window on: the whole text is searched."""
    return LazyRule(pattern, _A, tuple, kind=kind, keywords=keywords, whole_text=True)


# Vendor formats, before gitleaks' rules (their kinds are the ones the card has always shown).
VENDOR_RULES: list[Rule] = [
    Rule(
        kind="private_key",
        keywords=("private key", "private_key", "putty-user-key-file"),
        finder=find_private_keys,
        whole_text=True,
    ),  # fmt: skip
    _r("anthropic_key", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_\-]{16,256}"),
    _r(
        "openai_key",
        ("sk-",),
        r"\bsk-(?:proj|admin|svcacct|benchflow|or-v1|None)-[A-Za-z0-9_\-]{16,256}",
    ),
    _r("openai_key", ("sk-",), r"\bsk-[A-Za-z0-9]{16,256}\b"),
    _r("google_key", ("aiza",), r"\bAIza[0-9A-Za-z_\-]{35}"),
    _r("google_key", ("aq.",), r"\bAQ\.[A-Za-z0-9_\-]{16,256}"),
    _r("google_oauth_token", ("ya29.",), r"\bya29\.[0-9A-Za-z_\-]{20,2048}"),
    _r("google_oauth_token", ("1//",), r"(?<![\w/])1//0[0-9A-Za-z_\-]{30,512}"),
    _r(
        "aws_key",
        ("akia", "asia", "abia", "acca", "a3t"),
        r"\b(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[A-Z0-9]{16}\b",
    ),  # fmt: skip
    _r("daytona_key", ("dtn_",), r"\bdtn_[A-Za-z0-9]{16,256}\b"),
    _r(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{20,255}\b",
    ),  # fmt: skip
    _r("github_token", ("github_pat_",), r"\bgithub_pat_[A-Za-z0-9_]{20,255}\b"),
    _r("slack_token", ("xox",), r"(?i)\bxox[abeoprs]-[A-Za-z0-9\-]{10,255}"),
    _r("hf_token", ("hf_",), r"\bhf_[A-Za-z0-9]{20,255}\b"),
    _r("groq_key", ("gsk_",), r"\bgsk_[A-Za-z0-9]{20,255}\b"),
    _r("xai_key", ("xai-",), r"\bxai-[A-Za-z0-9]{20,255}\b"),
    _r("replicate_key", ("r8_",), r"\br8_[A-Za-z0-9]{20,255}\b"),
    _r("fireworks_key", ("fw_",), r"\bfw_[A-Za-z0-9]{20,255}\b"),
    _r(
        "stripe_key",
        ("sk_", "rk_", "pk_", "whsec_"),
        r"\b(?:[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,255}|whsec_[A-Za-z0-9]{24,255})\b",
    ),  # fmt: skip
    _r(
        "gitlab_token",
        ("gl", "gr1348941"),
        r"\b(?:gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas|ffct)-[A-Za-z0-9_\-.]{20,1024}|"
        r"GR1348941[A-Za-z0-9_\-]{20,50})",
    ),  # fmt: skip
    _r("npm_token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b"),
    _r("npm_token", ("_authtoken",), r"(?i)_authToken\s*=\s*([^\s\"']{8,1024})", 1),
    _r("pypi_token", ("pypi-",), r"\bpypi-[A-Za-z0-9_\-]{50,1024}"),
    _r("sendgrid_key", ("sg.",), r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}"),
    _r("twilio_key", ("sk", "ac"), r"\b(?:SK[0-9a-fA-F]{32}|AC[a-z0-9]{32})\b"),
    _r("mailchimp_key", ("-us",), r"\b[0-9a-f]{32}-us[0-9]{1,2}\b"),
    _r("telegram_bot_token", (":aa",), r"(?<![\w:])[0-9]{6,12}:AA[A-Za-z0-9_\-]{30,40}(?![\w-])"),
    _r("telegram_bot_token", ("bot",), r"(?i)\bbot([0-9]{6,12}:[A-Za-z0-9_\-]{30,40})(?![\w-])", 1),
    _r(
        "slack_webhook",
        ("hooks.slack.com",),
        r"(?i)hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+\-]{8,256}",
    ),  # fmt: skip
    _r(
        "discord_webhook",
        ("discord",),
        r"(?i)discord(?:app)?\.com/api/webhooks/[0-9]{5,30}/[A-Za-z0-9_\-]{20,256}",
    ),  # fmt: skip
    # bare forms of prefixed keys that gitleaks only finds next to the vendor's name
    _r(
        "newrelic_key",
        ("nrak-", "nrjs-", "nrii-"),
        r"\b(?:NRAK-[A-Z0-9]{27}|NRJS-[a-f0-9]{19}|NRII-[A-Za-z0-9-]{32})\b",
    ),  # fmt: skip
    _r("mailgun_key", ("key-", "pubkey-"), r"\b(?:pub)?key-[a-f0-9]{32}\b"),
    _r("typeform_token", ("tfp_",), r"\btfp_[A-Za-z0-9\-_.=]{59}"),
    _r("yandex_key", ("aqvn",), r"\bAQVN[A-Za-z0-9_\-]{35,38}\b"),
    _r("definednetworking_token", ("dnkey-",), r"\bdnkey-[A-Za-z0-9=_\-]{26}-[A-Za-z0-9=_\-]{52}"),
    _whole("telegram_bot_token", (":",), r"(?<![\w:])[0-9]{8,10}:[A-Za-z0-9_\-]{35}(?![\w-])"),
    _whole(
        "discord_bot_token",
        (".",),
        r"(?<![\w.-])[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![\w-])",
    ),  # fmt: skip
    _r("azure_storage_key", ("accountkey",), r"(?i)AccountKey\s*=\s*([A-Za-z0-9+/=]{20,200})", 1),
    _r(
        "azure_storage_key",
        ("sharedaccesssignature", "sharedaccesskey"),
        r"(?i)SharedAccess(?:Signature|Key)\s*=\s*([^;\s\"']{8,2048})",
        1,
    ),  # fmt: skip
]

# The generic forms, after gitleaks' rules: they name a span only when no vendor rule did.
GENERIC_RULES: list[Rule] = [
    Rule(
        kind="url_credentials", keywords=("://", ":\\/\\/", "?", "&"), finder=find_url_credentials
    ),
    Rule(kind="secret_assignment", keywords=KEYWORDS_ASSIGN, finder=find_assignments),
    Rule(
        kind="secret_assignment",
        keywords=("pass", "pwd", "secret", "key", "contrase"),
        finder=find_reversed,
    ),  # fmt: skip
    _r(
        "bearer_token",
        ("bearer",),
        r"(?i)\bbearer[ \t]+((?=[A-Za-z0-9._~+/\-]*[0-9._~+/=-]|[A-Za-z]{24})[A-Za-z0-9._~+/\-]{8,4096}=*)",
        1,
    ),
    _r(
        "bearer_token",
        ("basic", "token", "apikey", "digest", "negotiate"),
        r"(?i)\b(?:basic|token|apikey|digest|negotiate)[ \t]+((?=[A-Za-z0-9._~+/\-]*[0-9])"
        r"(?=[A-Za-z0-9._~+/\-]*[A-Za-z])[A-Za-z0-9._~+/\-]{16,4096}=*)",
        1,
    ),
    Rule(kind="jwt", keywords=("eyj",), finder=find_jwts),
]
