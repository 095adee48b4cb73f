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

from bf_assets.audit.bashparse import parse_simples
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
    "xargs": {"-I", "-n", "-P", "-d", "-L", "-a", "-s", "-E", "-e", "--delimiter", "--max-args"},
}
FIND_EXEC = frozenset(["-exec", "-execdir", "-ok", "-okdir"])
MAX_FANOUT = 8  # find roots / piped paths substituted into one -exec or xargs command


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
        found = parse_simples(cmd)  # bash's grammar; None when it cannot read the string
        if found is None:
            text, bodies = split_heredocs(cmd)
            found = simples(text, bodies)
        for s in found:
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
            self.command(argv, verb, s.heredoc, depth, s.upstream)

    def command(
        self,
        argv: list[str],
        verb: str,
        heredoc: str | None,
        depth: int,
        upstream: Simple | None = None,
    ) -> None:
        ops = _operands(argv, verb)
        stdin = heredoc if heredoc is not None else _piped_text(upstream)
        if verb in SHELLS:
            flag = next((a for a in argv[1:] if a.startswith("-") and "c" in a[1:]), None)
            if flag is not None and ops:
                self.run(ops[0], depth + 1)
            elif stdin is not None and (not ops or ops[0] == "-"):
                self.run(stdin, depth + 1)  # `bash <<EOF`, `echo … | sh`
            elif ops:
                self.add("exec", ops[0], verb)
        elif verb == "xargs":
            self._xargs(argv, upstream, depth)
        elif PYTHONS.match(verb):
            code = _given(argv, "-c")
            if code or (stdin is not None and (not ops or ops[0] == "-")):
                for kind, path, content in code_ops(code[0] if code else stdin or ""):
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
            self._find(argv, verb, ops, depth)
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

    def _find(self, argv: list[str], verb: str, ops: list[str], depth: int = 0) -> None:
        paths = [p for p in ops if not p.startswith(("(", ")", "!"))]
        if verb == "find":
            paths = _find_roots(argv)
            if "-delete" in argv:
                for p in paths:
                    self.add("delete", p, "find -delete")
                return
        for p in paths or (["."] if verb != "cd" else []):
            self.add("list", p, verb)
        if verb == "find" and depth < 4:
            for sub in _find_execs(argv):  # -exec cat {} \; runs cat on what find found
                for one in _fan_out(sub, "{}", paths or ["."]):
                    self._sub(one, depth)

    def _sub(self, argv: list[str], depth: int) -> None:
        """A command run by another one (``find -exec``, ``xargs``)."""
        argv = _unwrap(argv)
        if argv:
            self.command(argv, posixpath.basename(argv[0]), None, depth + 1)

    def _xargs(self, argv: list[str], upstream: Simple | None, depth: int) -> None:
        i, repl = 1, None
        while i < len(argv) and argv[i].startswith("-"):
            a = argv[i]
            if a == "--":
                i += 1
                break
            if a == "-I" and i + 1 < len(argv):
                repl = argv[i + 1]
            elif a.startswith("-I") and len(a) > 2:
                repl = a[2:]
            elif a == "-i" or a.startswith("--replace"):
                repl = a.partition("=")[2] or "{}"
            elif a in ("-a", "--arg-file") and i + 1 < len(argv):
                self.add("read", argv[i + 1], "xargs -a")
            i += 2 if a in _OPT_WITH_VALUE["xargs"] or a == "--arg-file" else 1
        sub = argv[i:] or ["echo"]
        inputs = _produced(upstream)[:MAX_FANOUT]
        if depth >= 4:
            return
        if repl is not None:
            for one in _fan_out(sub, repl, inputs):
                self._sub(one, depth)
        else:
            self._sub(sub + inputs, depth)

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


def _find_roots(argv: list[str]) -> list[str]:
    roots = []
    for a in argv[1:]:
        if a.startswith(("-", "(", "!")):
            break
        roots.append(a)
    return roots


def _find_execs(argv: list[str]) -> list[list[str]]:
    """The commands of ``-exec … ;`` / ``-exec … {} +`` (and -execdir, -ok)."""
    out: list[list[str]] = []
    i = 1
    while i < len(argv):
        if argv[i] in FIND_EXEC:
            j = i + 1
            while j < len(argv) and argv[j] not in (";", "+"):
                j += 1
            if j > i + 1:
                out.append(argv[i + 1 : j])
            i = j
        i += 1
    return out


def _fan_out(argv: list[str], token: str, values: list[str]) -> list[list[str]]:
    """``argv`` once per value, ``token`` replaced (unchanged when nothing to put in)."""
    if not values or not any(token in a for a in argv):
        return [argv]
    return [[a.replace(token, v) for a in argv] for v in values[:MAX_FANOUT]]


def _produced(s: Simple | None) -> list[str]:
    """Paths a piped command prints (``find``/``ls`` roots, ``echo`` words, ``grep -l`` files)."""
    if s is None:
        return []
    argv = _unwrap(s.argv)
    if not argv:
        return []
    verb = posixpath.basename(argv[0])
    if verb == "find":
        return _find_roots(argv) or ["."]
    ops = _operands(argv, verb)
    if verb in ("ls", "echo", "realpath", "readlink"):
        return ops
    if verb == "printf":
        return ops[1:] if ops and "%" in ops[0] else ops
    if verb in GREPS and any(
        a in ("-l", "--files-with-matches") or (a[:1] == "-" and a[1:2] != "-" and "l" in a)
        for a in argv[1:]
    ):
        explicit = _given(argv, "-e", "-f", "--regexp")
        return ops[0 if explicit else 1 :]
    return []


def _piped_text(s: Simple | None) -> str | None:
    """What a piped command feeds the next one's stdin, when it is in the command itself."""
    if s is None:
        return None
    argv = _unwrap(s.argv)
    verb = posixpath.basename(argv[0]) if argv else ""
    if verb == "cat" and s.heredoc is not None and len(argv) == 1:
        return s.heredoc
    if verb == "echo":
        return " ".join(a for a in argv[1:] if not re.fullmatch(r"-[neE]+", a))
    if verb == "printf" and len(argv) > 1:
        return argv[1].replace("\\n", "\n")
    return None


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
