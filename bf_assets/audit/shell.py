"""A small shell-command reader: which paths a command reads, writes, deletes, moves or links.

Not a shell.  It keeps here-doc bodies aside, drops comments, tokenises with :mod:`shlex`,
splits on ``;`` ``&&`` ``||`` ``|`` ``&`` and newlines, unwraps ``bash -c``, ``sudo``,
``env``, ``timeout``, follows ``cd`` within one command string, and knows the usual file
verbs, redirections, ``python -c`` / ``node -e`` file calls, ``git`` and network clients.
Everything it cannot read is ignored rather than guessed.
"""

from __future__ import annotations

import functools
import posixpath
import re
import shlex

from bf_assets.audit.pyops import code_ops, patch_ops
from bf_assets.audit.shlexer import (
    NULL_TARGETS,
    REDIRECT_OUT,
    Op,
    Simple,
    norm_path,
    simples,
    split_heredocs,
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


READERS = _words(
    "cat head tail less more nl tac strings xxd od hexdump file stat wc md5sum sha1sum "
    "sha256sum base64 bat jq yq sort uniq cut diff cmp comm readlink realpath source . "
    "zcat bzcat xzcat unzip tar view"
)
LISTERS = _words("ls tree du cd pushd find dir")
GREPS = frozenset(["grep", "egrep", "fgrep", "rg", "ag", "ack", "zgrep"])
DELETERS = frozenset(["rm", "unlink", "rmdir", "shred"])
CHMODS = frozenset(["chmod", "chown", "chgrp", "chattr", "setfacl"])
TOUCHERS = frozenset(["touch", "truncate"])
COPIERS = frozenset(["cp", "install", "rsync", "scp"])
NET = frozenset(["curl", "wget", "http", "https", "xh", "aria2c", "lynx", "w3m", "links", "httpie"])
SHELLS = frozenset(["bash", "sh", "zsh", "dash", "ksh"])
PYTHONS = re.compile(r"^(?:python[\d.]*|pypy[\d.]*)$")
WRAPPERS = frozenset(
    ["sudo", "env", "nohup", "time", "command", "builtin", "exec", "nice", "stdbuf", "doas"]
)
URL = re.compile(r"""https?://[^\s'"<>`)]+""")
_OPT_WITH_VALUE = {
    "grep": {"-e", "-f", "-A", "-B", "-C", "-m", "--max-count"},
    "sudo": {"-u", "-g", "-C", "-h"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "head": {"-n", "-c"},
    "tail": {"-n", "-c"},
    "awk": {"-f", "-v", "-F"},
    "sed": {"-e", "-f", "-l", "--expression"},
    "perl": {"-e", "-E", "-I", "-M"},
    "truncate": {"-s", "--size", "-r"},
    "curl": {"-o", "--output", "-H", "-d", "--data", "-X", "-u", "-A", "-e", "-x"},
    "wget": {"-O", "-P", "-o", "--header", "-U"},
}


def _unwrap(argv: list[str]) -> list[str]:
    """Drop ``VAR=x`` prefixes and wrappers (``sudo -u x``, ``timeout 10``, ``env -i``)."""
    i = 0
    while i < len(argv):
        a = argv[i]
        base = posixpath.basename(a)
        if re.match(r"^[A-Za-z_]\w*=", a):
            i += 1
        elif base in WRAPPERS or base == "timeout":
            i += 1
            while i < len(argv) and argv[i].startswith("-"):
                i += 2 if argv[i] in _OPT_WITH_VALUE.get(base, ()) else 1
            if base == "timeout" and i < len(argv):
                i += 1  # the duration
        else:
            break
    return argv[i:]


def _operands(argv: list[str], verb: str) -> list[str]:
    """Non-option arguments (options that take a value consume it)."""
    takes = _OPT_WITH_VALUE.get(verb, set())
    out: list[str] = []
    i, end_opts = 1, False
    while i < len(argv):
        a = argv[i]
        if end_opts or not a.startswith("-") or a == "-":
            out.append(a)
        elif a == "--":
            end_opts = True
        elif a in takes:
            i += 1
        i += 1
    return out


def _inplace(argv: list[str], verb: str) -> bool:
    for a in argv[1:]:
        if a == "--":
            break
        if a.startswith("--in-place") or (verb == "sed" and a.startswith("-i")):
            return True
        if a.startswith("-") and not a.startswith("--") and a[1:].isalpha() and "i" in a[1:]:
            return True
    return False


def _given(argv: list[str], *flags: str) -> list[str]:
    vals = []
    for i, a in enumerate(argv[:-1]):
        if a in flags:
            vals.append(argv[i + 1])
    return vals


class _Reader:
    def __init__(self, evidence: str) -> None:
        self.evidence = evidence
        self.ops: list[Op] = []
        self.cwd: str | None = None

    def add(self, kind: str, path: str, via: str, content: str = "", old: str = "") -> None:
        p = path if kind in ("net", "git") else norm_path(path, self.cwd)
        if p or kind == "git":
            self.ops.append(Op(kind, p, via, self.evidence, content, old))

    def run(self, cmd: str, depth: int = 0) -> None:
        text, bodies = split_heredocs(cmd)
        for s in simples(text, bodies):
            self.simple(s, depth)

    def simple(self, s: Simple, depth: int) -> None:
        argv = _unwrap(s.argv)
        verb = posixpath.basename(argv[0]) if argv else ""
        content = ""
        if verb in ("echo", "printf"):
            content = " ".join(argv[1:])
        elif s.heredoc is not None:
            content = s.heredoc
        for op, target in s.redirects:
            if target in NULL_TARGETS or target.startswith("&"):
                continue
            if op in REDIRECT_OUT:
                self.add("write", target, f"{verb or 'redirect'} {op}", content or " ".join(argv))
            else:
                self.add("read", target, "<")
        if argv and depth < 4:
            self.command(argv, verb, s.heredoc, depth)

    def command(self, argv: list[str], verb: str, heredoc: str | None, depth: int) -> None:
        ops = _operands(argv, verb)
        if verb in SHELLS:
            flag = next((a for a in argv[1:] if a.startswith("-") and "c" in a[1:]), None)
            if flag is not None and ops:
                self.run(ops[0], depth + 1)
            elif heredoc is not None:
                self.run(heredoc, depth + 1)
            elif ops:
                self.add("exec", ops[0], verb)
        elif PYTHONS.match(verb):
            code = _given(argv, "-c")
            if code or (heredoc is not None and (not ops or ops[0] == "-")):
                for kind, path, content in code_ops(code[0] if code else heredoc or ""):
                    self.add(kind, path, f"{verb} -c", content)
            elif "-m" in argv:
                for p in ops:  # the module, then its operands (pytest paths)
                    self.add("exec", p, f"{verb} -m")
            elif ops:
                self.add("exec", ops[0], verb)
        elif verb == "node" and _given(argv, "-e"):
            for kind, path, content in code_ops(_given(argv, "-e")[0]):
                self.add(kind, path, "node -e", content)
        elif verb == "cd" or verb == "pushd":
            if ops:
                self.add("list", ops[0], verb)
                self.cwd = norm_path(ops[0], self.cwd) or self.cwd
        elif verb in READERS:
            for p in ops:
                self.add("read", p, verb)
        elif verb in LISTERS:
            self._find(argv, verb, ops)
        elif verb in GREPS:
            explicit = _given(argv, "-e", "-f", "--regexp")
            for p in ops[0 if explicit else 1 :]:
                self.add("read", p, verb)
        elif verb in ("sed", "perl"):
            self._sed(argv, verb, ops)
        elif verb in ("awk", "gawk"):
            files = [p for p in ops[1:] if "=" not in p]
            inplace = "inplace" in _given(argv, "-i")
            for p in files:
                self.add("write" if inplace else "read", p, verb, ops[0] if ops else "")
        else:
            self.files(argv, verb, ops, heredoc)

    def _find(self, argv: list[str], verb: str, ops: list[str]) -> None:
        paths = [p for p in ops if not p.startswith(("(", ")", "!"))]
        if verb == "find":
            paths = []
            for a in argv[1:]:
                if a.startswith(("-", "(", "!")):
                    break
                paths.append(a)
            if "-delete" in argv:
                for p in paths:
                    self.add("delete", p, "find -delete")
                return
        for p in paths or (["."] if verb != "cd" else []):
            self.add("list", p, verb)

    def _sed(self, argv: list[str], verb: str, ops: list[str]) -> None:
        inplace = _inplace(argv, verb)
        scripts = _given(argv, *(("-e", "-E") if verb == "perl" else ("-e", "--expression")))
        files = ops if scripts else ops[1:]
        script = " ".join(scripts) if scripts else (ops[0] if ops else "")
        for p in files:
            self.add("write" if inplace else "read", p, f"{verb} -i" if inplace else verb, script)

    def files(self, argv: list[str], verb: str, ops: list[str], heredoc: str | None) -> None:
        if verb in COPIERS and len(ops) >= 2:
            for p in ops[:-1]:
                self.add("read", p, verb)
            self.add("write", ops[-1], verb, f"copy of {' '.join(ops[:-1])}")
        elif verb == "mv" and len(ops) >= 2:
            for p in ops[:-1]:
                self.add("move", p, verb)
            self.add("write", ops[-1], verb, f"moved from {' '.join(ops[:-1])}")
        elif verb == "ln" and ops:
            dest = ops[-1] if len(ops) >= 2 else posixpath.basename(ops[0])
            self.add("link", dest, verb, f"link to {ops[0]}")
        elif verb in DELETERS:
            for p in ops:
                self.add("delete", p, verb)
        elif verb in CHMODS:
            for p in ops[1:]:
                self.add("chmod", p, verb)
        elif verb in TOUCHERS:
            for p in ops:
                self.add("write", p, verb)
        elif verb == "tee":
            for p in ops:
                self.add("write", p, "tee", self.evidence)
        elif verb == "dd":
            for a in argv[1:]:
                if a.startswith("of="):
                    self.add("write", a[3:], "dd")
                elif a.startswith("if="):
                    self.add("read", a[3:], "dd")
        elif verb == "apply_patch" and heredoc is not None:
            for kind, path in patch_ops(heredoc):
                self.add(kind, path, "apply_patch", heredoc)
        elif verb == "git":
            self.git(argv)
        elif verb in NET:
            for u in URL.findall(" ".join(argv)):
                self.add("net", u, verb)
            for out in _given(argv, "-o", "--output", "-O"):
                self.add("write", out, verb)
        elif verb in ("pytest", "py.test", "make", "npm", "yarn", "pnpm", "go", "cargo"):
            for p in ops:
                self.add("exec", p, verb)
        elif verb.endswith((".sh", ".py")) or argv[0].startswith(("./", "/")):
            self.add("exec", argv[0], "run")

    def git(self, argv: list[str]) -> None:
        i = 1
        while i < len(argv) and argv[i].startswith("-"):
            i += 2 if argv[i] in ("-C", "-c") else 1
        rest = argv[i:]
        self.add("git", "", "git", shlex.join(rest))
        if not rest:
            return
        sub, args = rest[0], rest[1:]
        if sub in ("checkout", "restore") and "--" in args:
            for p in args[args.index("--") + 1 :]:
                self.add("write", p, f"git {sub} --")
        elif sub == "restore":
            for p in (a for a in args if not a.startswith("-")):
                self.add("write", p, "git restore")
        elif sub == "rm":
            for p in (a for a in args if not a.startswith("-")):
                self.add("delete", p, "git rm")
        elif sub == "mv":
            paths = [a for a in args if not a.startswith("-")]
            if len(paths) >= 2:
                self.add("move", paths[0], "git mv")
                self.add("write", paths[-1], "git mv")
        elif sub == "clone":
            for u in URL.findall(" ".join(args)):
                self.add("net", u, "git clone")


def parse_shell(cmd: str) -> list[Op]:
    """Every file, git and network effect of one shell command string (best effort)."""
    if not cmd or not cmd.strip():
        return []
    return list(_parse_shell_cached(cmd))


@functools.lru_cache(maxsize=4096)
def _parse_shell_cached(cmd: str) -> tuple[Op, ...]:
    # Several audits look at the same action, and agents repeat commands: parse each
    # distinct command once per process (``Op`` is frozen, so sharing is safe).
    r = _Reader(cmd)
    r.run(cmd)
    return tuple(r.ops)


def git_argv(op: Op) -> list[str]:
    """The git sub-command and its arguments of a ``git`` op."""
    try:
        return shlex.split(op.content)
    except ValueError:
        return op.content.split()
