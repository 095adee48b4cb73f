"""File effects of inline code (``python -c``, ``node -e``) and of ``apply_patch`` envelopes."""

from __future__ import annotations

import re

_Q = r"""[rbfuRBFU]{0,2}(['"])"""
_OPEN = re.compile(
    r"\bopen\(\s*"
    + _Q
    + r"(?P<p>[^'\"]+)\1\s*(?:,\s*(?:mode\s*=\s*)?[rbfu]?(['\"])(?P<m>[^'\"]*)\3)?"
)
_PATH = re.compile(
    r"\bPath\(\s*"
    + _Q
    + r"(?P<p>[^'\"]+)\1\s*\)\s*\.\s*(?P<fn>write_text|write_bytes|unlink|rmdir|rename|replace|"
    r"chmod|touch|symlink_to|read_text|read_bytes|open)\((?P<rest>[^)]{0,40})"
)
_OS = re.compile(
    r"\b(?:os|shutil)\.(?P<fn>remove|unlink|rmdir|removedirs|rename|replace|chmod|chown|rmtree|"
    r"move|copy|copyfile|copy2|copytree|symlink|link|truncate)\(\s*"
    + _Q
    + r"(?P<p>[^'\"]+)\2(?:\s*,\s*[rbfu]?(['\"])(?P<q>[^'\"]+)\4)?"
)
_NODE = re.compile(
    r"\bfs\.(?P<fn>writeFileSync|appendFileSync|writeFile|appendFile|unlinkSync|unlink|rmSync|"
    r"renameSync|copyFileSync|readFileSync|readFile|chmodSync)\(\s*(['\"`])(?P<p>[^'\"`]+)\2"
)
_URL = re.compile(r"""https?://[^\s'"<>`)]+""")
_PATCH = re.compile(
    r"^\*\*\* (Add|Update|Delete) File:\s*(.+?)\s*$|^\*\*\* Move to:\s*(.+?)\s*$", re.M
)

_WRITE_FNS = {
    "write_text",
    "write_bytes",
    "touch",
    "symlink_to",
    "writeFileSync",
    "appendFileSync",
    "writeFile",
    "appendFile",
    "truncate",
}
_DELETE_FNS = {"remove", "unlink", "rmdir", "removedirs", "rmtree", "unlinkSync", "rmSync"}
_MOVE_FNS = {"rename", "replace", "move", "renameSync"}
_COPY_FNS = {"copy", "copyfile", "copy2", "copytree", "copyFileSync", "symlink", "link"}
_CHMOD_FNS = {"chmod", "chown", "chmodSync"}
_READ_FNS = {"read_text", "read_bytes", "readFileSync", "readFile"}


def code_ops(code: str) -> list[tuple[str, str, str]]:
    """``(kind, path, content)`` for each file or URL the code opens, writes, moves or deletes."""
    out: list[tuple[str, str, str]] = []
    for m in _OPEN.finditer(code):
        mode = m.group("m") or "r"
        kind = "write" if any(c in mode for c in "wax+") else "read"
        out.append((kind, m.group("p"), code))
    for m in _PATH.finditer(code):
        fn, rest = m.group("fn"), m.group("rest")
        if fn == "open":
            kind = "write" if re.search(r"['\"][^'\"]*[wax+]", rest) else "read"
        elif fn in _READ_FNS:
            kind = "read"
        elif fn in _DELETE_FNS:
            kind = "delete"
        elif fn in _MOVE_FNS:
            kind = "move"
        elif fn in _CHMOD_FNS:
            kind = "chmod"
        else:
            kind = "write"
        out.append((kind, m.group("p"), code))
    for rx in (_OS, _NODE):
        for m in rx.finditer(code):
            fn, p = m.group("fn"), m.group("p")
            q = m.groupdict().get("q")
            if fn in _COPY_FNS:
                out.append(("read", p, code))
                if q:
                    out.append(("link" if "link" in fn else "write", q, code))
            elif fn in _MOVE_FNS:
                out.append(("move", p, code))
                if q:
                    out.append(("write", q, code))
            elif fn in _DELETE_FNS:
                out.append(("delete", p, code))
            elif fn in _CHMOD_FNS:
                out.append(("chmod", p, code))
            elif fn in _WRITE_FNS:
                out.append(("write", p, code))
            elif fn in _READ_FNS:
                out.append(("read", p, code))
    for u in _URL.findall(code):
        out.append(("net", u, code))
    return out


def patch_ops(text: str) -> list[tuple[str, str]]:
    """``(kind, path)`` of every file an ``apply_patch`` envelope adds, updates, deletes or moves to."""
    out: list[tuple[str, str]] = []
    for m in _PATCH.finditer(text):
        if m.group(3):
            out.append(("write", m.group(3)))
        else:
            out.append(("delete" if m.group(1) == "Delete" else "write", m.group(2)))
    return out
