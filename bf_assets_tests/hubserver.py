"""A small Hugging Face Hub-compatible HTTP server for offline publishing tests.

Standard library only, on 127.0.0.1 and a free port.  Implements what the unmodified
``huggingface_hub`` 2.x client needs to create a dataset repo, commit files, tag, list
refs/trees/commits, read paths-info and repo info, and download (HEAD + GET with ranges);
``datasets.load_dataset`` can read from it.

Files take the path the real Hub gives them.  The preupload answers ``lfs`` for paths the
head's ``.gitattributes`` marks ``filter=lfs``, for binary samples and for files of at least
``HubState.lfs_threshold`` bytes, ``regular`` otherwise.  LFS files go through the Git LFS batch
API (``POST /{type}s/{repo}.git/info/lfs/objects/batch``): per object an ``upload`` action (a
PUT to a one-time URL on this server, checked against the oid's sha256 and size) and a
``verify`` action, or no action when the repo already stores the object.  The commit's
``lfsFile`` lines (``path``, ``algo``, ``oid``) must name stored objects.  Tree and
paths-info entries of LFS files carry ``lfs: {oid, size, pointerSize}`` and the pointer's git
oid; ``resolve/`` of an LFS file redirects (302, ``X-Linked-Etag``/``X-Linked-Size``) to the
object's bytes on this server, as the Hub redirects to its CDN.  Xet is not implemented: run
the client with ``HF_HUB_DISABLE_XET=1``.  State is in
memory and thread-safe.  Failure injection (:class:`Rule`): any status with extra headers
(``Retry-After``) and the server's own error message for N matching requests, optionally
*after* the request was applied and with the connection dropped instead of an answer (the
"lost response"), optionally taking the server down once it fired (every later request has
its connection dropped: unreachable).  :meth:`HubServer.fail` names the request by its type
(:data:`REQUEST_TYPES`: ``commit``, ``tag``, ``lfs-upload``, ...); :meth:`HubServer.corrupt`
makes the next commit store other bytes than it was sent for a path (a read-back mismatch).
Every request is logged.  ``close()`` also closes keep-alive connections, so "server down"
really is down.
"""

from __future__ import annotations

import base64
import contextlib
import fnmatch
import hashlib
import hmac
import itertools
import json
import re
import secrets
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

# The requests a publish makes, by type: (method or None for any, regex on the URL path).
REQUEST_TYPES: dict[str, tuple[str | None, str]] = {
    "create-repo": ("POST", r"^/api/repos/create$"),
    "repo-info": ("GET", r"^/api/[a-z]+s/[^/]+/[^/]+(/revision/.*)?$"),
    "refs": ("GET", r"^/api/[a-z]+s/[^/]+/[^/]+/refs$"),
    "tree": ("GET", r"^/api/[a-z]+s/[^/]+/[^/]+/tree/"),
    "paths-info": ("POST", r"^/api/[a-z]+s/[^/]+/[^/]+/paths-info/"),
    "validate-yaml": ("POST", r"^/api/validate-yaml$"),
    "preupload": ("POST", r"^/api/[a-z]+s/[^/]+/[^/]+/preupload/"),
    "lfs-batch": ("POST", r"\.git/info/lfs/objects/batch$"),
    "lfs-upload": ("PUT", r"^/_lfs/upload/"),
    "lfs-verify": ("POST", r"\.git/info/lfs/objects/verify$"),
    "commit": ("POST", r"^/api/[a-z]+s/[^/]+/[^/]+/commit/"),
    "tag": ("POST", r"^/api/[a-z]+s/[^/]+/[^/]+/tag/"),
    "resolve": (None, r"/resolve/"),
    "any": (None, r""),
}

GITATTRIBUTES = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"
PREFIX = {"datasets": "datasets/", "models": "", "spaces": "spaces/"}
LFS_THRESHOLD = 10 * 1024 * 1024  # the Hub stores files from 10 MiB up in LFS


def blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def lfs_pointer(data: bytes) -> bytes:
    """The Git LFS pointer file git stores in place of an LFS file's content."""
    return (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256_hex(data)}\n"
        f"size {len(data)}\n"
    ).encode()


def lfs_patterns(gitattributes: bytes) -> list[str]:
    """The patterns a ``.gitattributes`` marks ``filter=lfs``."""
    out = []
    for line in gitattributes.decode(errors="replace").splitlines():
        fields = line.split()
        if len(fields) >= 2 and not fields[0].startswith("#") and "filter=lfs" in fields[1:]:
            out.append(fields[0])
    return out


def matches(pattern: str, path: str) -> bool:
    """Git's rule, simplified: a pattern without ``/`` matches the basename."""
    pattern = pattern.lstrip("/") if "/" in pattern.rstrip("/") else pattern
    target = path if "/" in pattern else path.rsplit("/", 1)[-1]
    return fnmatch.fnmatchcase(target, pattern)


@dataclass
class Commit:
    oid: str
    parent: str | None
    title: str
    message: str
    files: dict[str, bytes]
    date: str
    lfs: set[str] = field(default_factory=set)  # paths stored as LFS pointers


@dataclass
class Repo:
    kind: str
    repo_id: str
    private: bool
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, tuple[str, str]] = field(default_factory=dict)
    lfs_objects: dict[str, bytes] = field(default_factory=dict)  # sha256 -> content


@dataclass
class Rule:
    """Answer ``status`` to the next ``times`` requests matching ``method`` and ``path``."""

    path: str  # regex searched in the URL path
    status: int
    method: str | None = None
    times: int = 1
    headers: dict[str, str] = field(default_factory=dict)
    after: bool = False  # apply the request first, then fail
    drop: bool = False  # close the connection instead of answering
    message: str | None = None  # the server's error message (default "injected <status>")
    down: bool = False  # once this rule fired, the server is down (every request dropped)
    hits: int = 0


@dataclass
class Logged:
    method: str
    path: str
    status: int
    authorized: bool
    size: int = 0  # bytes of the request body


class HubState:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.repos: dict[tuple[str, str], Repo] = {}
        self.rules: list[Rule] = []
        self.log: list[Logged] = []
        self.tokens: dict[str, str] = {}  # token -> "read" | "write"; empty = no auth
        self.lfs_threshold = LFS_THRESHOLD
        self.uploads: dict[str, tuple[tuple[str, str], str, int]] = {}  # ticket -> repo, oid, size
        self.commit_bodies: list[list[dict[str, Any]]] = []  # every commit's ndjson lines
        self.lfs_batches: list[list[str]] = []  # the oids of every batch request
        self.lfs_puts: list[str] = []  # the oids uploaded (accepted PUTs)
        self.corrupt_next: set[str] = set()  # paths the next commit stores with other bytes
        self.down = False  # every request has its connection dropped
        self._seq = itertools.count(1)
        self._secret = secrets.token_bytes(16)

    def reset(self) -> None:
        with self.lock:
            self.repos.clear()
            self.rules.clear()
            self.log.clear()
            self.tokens.clear()
            self.uploads.clear()
            self.commit_bodies.clear()
            self.lfs_batches.clear()
            self.lfs_puts.clear()
            self.corrupt_next.clear()
            self.down = False
            self.lfs_threshold = LFS_THRESHOLD

    def new_commit(
        self,
        repo: Repo,
        parent: str | None,
        title: str,
        message: str,
        files: dict[str, bytes],
        lfs: set[str] | None = None,
    ) -> Commit:
        n = next(self._seq)
        oid = hashlib.sha1(f"{repo.repo_id}:{parent}:{title}:{n}".encode()).hexdigest()  # noqa: S324
        date = f"2026-01-01T00:00:{n % 60:02d}.000Z"
        c = Commit(oid, parent, title, message, files, date, set(lfs or ()) & set(files))
        repo.commits[c.oid] = c
        return c

    def sign(self, path: str) -> str:
        return hmac.new(self._secret, path.encode(), hashlib.sha256).hexdigest()

    def resolve(self, repo: Repo, rev: str) -> str | None:
        if rev in repo.branches:
            return repo.branches[rev]
        if rev in repo.tags:
            return repo.tags[rev][0]
        return rev if rev in repo.commits else None


class HttpError(Exception):
    def __init__(self, status: int, message: str, code: str = "", headers: Any = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers or {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HubServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    # ------------------------------------------------------------------ plumbing

    def _send(
        self, status: int, body: bytes, headers: Any = None, ctype: str = "application/json"
    ) -> None:
        """Queue the answer; :meth:`_flush` writes it (an "after" rule may replace it)."""
        self._pending = (status, body, headers or {}, ctype)

    def _flush(self) -> None:
        if self._pending is None:
            return
        (status, body, headers, ctype), self._pending = self._pending, None
        self.send_response(status)
        hdrs = {"Content-Type": ctype, "Content-Length": str(len(body))} | headers
        for k, v in hdrs.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self._status = status

    def _json(self, value: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(value).encode(), headers)

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        self._status = 0

    def _handle(self) -> None:
        state = self.server.state
        url = urlsplit(self.path)
        body = self._body()
        self._status = 0
        self._pending: tuple[int, bytes, dict[str, str], str] | None = None
        rule = None
        with state.lock:
            down = state.down
        if down:  # unreachable: no answer at all
            self._drop()
            with state.lock:
                state.log.append(Logged(self.command, url.path, 0, False, len(body)))
            return
        with state.lock:
            for r in state.rules:
                if (
                    r.hits < r.times
                    and re.search(r.path, url.path)
                    and r.method in (None, self.command)
                ):
                    r.hits += 1
                    rule = r
                    # down from now on: a request racing this one's answer is not served
                    state.down = state.down or r.down
                    break
        try:
            if rule is not None and not rule.after:
                raise HttpError(
                    rule.status, rule.message or f"injected {rule.status}", headers=rule.headers
                )
            self._route(url.path, parse_qs(url.query), body)
            if rule is not None:
                raise HttpError(
                    rule.status, rule.message or f"injected {rule.status}", headers=rule.headers
                )
        except HttpError as e:
            self._pending = None
            if rule is not None and rule.drop:
                self._drop()
            else:
                hdrs = dict(e.headers)
                if e.code:
                    hdrs["X-Error-Code"] = e.code
                hdrs["X-Error-Message"] = e.message
                self._json({"error": e.message}, e.status, hdrs)
        self._flush()
        auth = self.headers.get("authorization")
        with state.lock:
            state.log.append(
                Logged(self.command, url.path, self._status, auth is not None, len(body))
            )

    def _auth(self, repo: Repo | None, write: bool) -> None:
        """Unknown token → 401; no token on a write or a private repo → 401; read token → 403."""
        tokens = self.server.state.tokens
        if not tokens:
            return
        auth = self.headers.get("authorization") or ""
        token = auth[7:] if auth.lower().startswith("bearer ") else None
        role = tokens.get(token or "")
        if token is not None and role is None:
            raise HttpError(401, "Invalid credentials in Authorization header")
        if role is None and (write or (repo is not None and repo.private)):
            raise HttpError(401, "Repository not found", "RepoNotFound")
        if write and role != "write":
            raise HttpError(403, "You don't have the rights to write to this repository")

    def _repo(self, kind: str, rid: str, write: bool = False) -> Repo:
        repo = self.server.state.repos.get((kind, rid))
        self._auth(repo, write)
        if repo is None:
            raise HttpError(404, f"Repository {rid} not found", "RepoNotFound")
        return repo

    def _commit_of(self, repo: Repo, rev: str) -> Commit:
        oid = self.server.state.resolve(repo, rev)
        if oid is None:
            raise HttpError(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        return repo.commits[oid]

    def _base(self) -> str:
        return f"http://{self.headers.get('Host') or '127.0.0.1'}"

    # ------------------------------------------------------------------ routes

    def _route(self, path: str, query: dict[str, list[str]], body: bytes) -> None:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        with self.server.state.lock:
            if parts[:2] == ["api", "agent-harnesses"]:
                return self._json({"standardEnvVars": [], "harnesses": {}})
            if parts[:2] == ["api", "validate-yaml"]:
                return self._validate_yaml(body)
            if parts[:3] == ["api", "repos", "create"]:
                return self._create_repo(json.loads(body or b"{}"))
            if parts[:2] == ["_lfs", "upload"] and len(parts) == 3:
                return self._lfs_put(parts[2], body)
            if parts[:2] == ["_lfs", "objects"] and len(parts) == 6 and parts[2] in PREFIX:
                return self._lfs_object(parts[2], f"{parts[3]}/{parts[4]}", parts[5], query)
            if parts[0] == "api" and len(parts) >= 4 and parts[1] in PREFIX:
                return self._api(parts[1], f"{parts[2]}/{parts[3]}", parts[4:], query, body)
            kind, rest = (parts[0], parts[1:]) if parts[0] in PREFIX else ("models", parts)
            if (
                len(rest) == 6
                and rest[1].endswith(".git")
                and rest[2:5] == ["info", "lfs", "objects"]
            ):
                rid = f"{rest[0]}/{rest[1][: -len('.git')]}"
                if rest[5] == "batch" and self.command == "POST":
                    return self._lfs_batch(kind, rid, json.loads(body or b"{}"))
                if rest[5] == "verify" and self.command == "POST":
                    return self._lfs_verify(kind, rid, json.loads(body or b"{}"))
            if len(rest) >= 4 and rest[2] == "resolve":
                return self._resolve(kind, f"{rest[0]}/{rest[1]}", rest[3], "/".join(rest[4:]))
            raise HttpError(404, f"no route for {path}")

    def _validate_yaml(self, body: bytes) -> None:
        content = json.loads(body or b"{}").get("content", "")
        m = re.match(r"^---\n(.*?)\n---\n", content, re.S)
        try:
            meta = yaml.safe_load(m.group(1)) if m else {}
        except yaml.YAMLError as e:
            return self._json({"errors": [{"message": str(e)}], "warnings": []}, 400)
        if not isinstance(meta, dict):
            return self._json({"errors": [{"message": "not a mapping"}], "warnings": []}, 400)
        return self._json({"errors": [], "warnings": []})

    def _create_repo(self, req: dict[str, Any]) -> None:
        kind = {"dataset": "datasets", "space": "spaces"}.get(req.get("type") or "model", "models")
        rid = f"{req.get('organization') or 'tester'}/{req['name']}"
        self._auth(None, True)
        url = f"{self._base()}/{PREFIX[kind]}{rid}"
        state = self.server.state
        if (kind, rid) in state.repos:
            return self._json({"error": "You already created this repo", "url": url}, 409)
        private = bool(req.get("private")) or req.get("visibility") == "private"
        repo = Repo(kind, rid, private)
        first = state.new_commit(
            repo, None, "initial commit", "", {".gitattributes": GITATTRIBUTES}
        )
        repo.branches["main"] = first.oid
        state.repos[(kind, rid)] = repo
        return self._json({"url": url, "name": rid})

    def _api(self, kind: str, rid: str, rest: list[str], query: Any, body: bytes) -> None:
        op = rest[0] if rest else ""
        write = op in ("preupload", "commit", "tag")
        repo = self._repo(kind, rid, write=write)
        if op == "" or op == "revision":
            c = self._commit_of(repo, rest[1] if op == "revision" else "main")
            return self._json(self._info(repo, c))
        if op == "refs":

            def ref(name: str, kind_: str, oid: str) -> dict[str, str]:
                return {"name": name, "ref": f"refs/{kind_}/{name}", "targetCommit": oid}

            return self._json(
                {
                    "branches": [ref(b, "heads", o) for b, o in sorted(repo.branches.items())],
                    "converts": [],
                    "tags": [ref(t, "tags", o) for t, (o, _) in sorted(repo.tags.items())],
                }
            )
        if op == "tree":
            c = self._commit_of(repo, rest[1])
            prefix = "/".join(rest[2:]).strip("/")
            recursive = (query.get("recursive") or ["false"])[0].lower() == "true"
            return self._json(self._tree(c, prefix, recursive))
        if op == "paths-info":
            c = self._commit_of(repo, rest[1])
            wanted = parse_qs(body.decode()).get("paths", [])
            entries = {e["path"]: e for e in self._tree(c, "", True)}
            return self._json([entries[p] for p in wanted if p in entries])
        if op == "preupload":
            c = self._commit_of(repo, rest[1])
            patterns = lfs_patterns(c.files.get(".gitattributes", b""))
            out = []
            for f in json.loads(body).get("files", []):
                p = f["path"]
                sample = base64.b64decode(f.get("sample") or "")
                lfs = (
                    any(matches(pat, p) for pat in patterns)
                    or int(f.get("size") or 0) >= self.server.state.lfs_threshold
                    or b"\0" in sample  # binary content goes to LFS on the Hub
                )
                entry = {
                    "path": p,
                    "uploadMode": "lfs" if lfs else "regular",
                    "shouldIgnore": False,
                }
                if p in c.files:  # the remote oid lets the client skip unchanged files
                    data = c.files[p]
                    entry["oid"] = sha256_hex(data) if p in c.lfs else blob_oid(data)
                out.append(entry)
            return self._json({"files": out})
        if op == "commit":
            return self._commit(repo, rest[1], body)
        if op == "tag" and self.command == "POST":
            req = json.loads(body or b"{}")
            c = self._commit_of(repo, rest[1])
            if req["tag"] in repo.tags:
                raise HttpError(409, f"tag {req['tag']} already exists")
            repo.tags[req["tag"]] = (c.oid, req.get("message") or "")
            return self._json({})
        if op == "xet-write-token":
            raise HttpError(501, "this test server does not implement Xet; use regular uploads")
        raise HttpError(404, f"unknown api route {op}")

    def _info(self, repo: Repo, c: Commit) -> dict[str, Any]:
        return {
            "id": repo.repo_id,
            "sha": c.oid,
            "private": repo.private,
            "disabled": False,
            "gated": False,
            "lastModified": c.date,
            "tags": [],
            "siblings": [{"rfilename": p, "size": len(b)} for p, b in sorted(c.files.items())],
        }

    def _tree(self, c: Commit, prefix: str, recursive: bool) -> list[dict[str, Any]]:
        files = {p: b for p, b in c.files.items() if not prefix or p.startswith(prefix + "/")}
        dirs: set[str] = set()
        for p in files:
            segs = p.split("/")[:-1]
            dirs.update("/".join(segs[: i + 1]) for i in range(len(segs)))
        base = len(prefix.split("/")) if prefix else 0
        out = [{"type": "directory", "path": d, "oid": blob_oid(d.encode())} for d in sorted(dirs)]
        out += [self._file_entry(c, p, b) for p, b in sorted(files.items())]
        if not recursive:
            out = [e for e in out if e["path"].count("/") == base]
        return out

    @staticmethod
    def _file_entry(c: Commit, path: str, data: bytes) -> dict[str, Any]:
        if path not in c.lfs:
            return {"type": "file", "path": path, "size": len(data), "oid": blob_oid(data)}
        pointer = lfs_pointer(data)
        return {
            "type": "file",
            "path": path,
            "size": len(data),
            "oid": blob_oid(pointer),  # git stores the pointer
            "lfs": {"oid": sha256_hex(data), "size": len(data), "pointerSize": len(pointer)},
        }

    def _commit(self, repo: Repo, rev: str, body: bytes) -> None:
        lines = [json.loads(x) for x in body.decode().splitlines() if x.strip()]
        header = next((x["value"] for x in lines if x["key"] == "header"), {})
        branch = rev if rev in repo.branches else "main"
        head = repo.branches[branch]
        if header.get("parentCommit") and header["parentCommit"] != head:
            raise HttpError(412, "A commit has happened since. Please refresh and try again.")
        files = dict(repo.commits[head].files)
        lfs = set(repo.commits[head].lfs)
        for x in lines:
            v = x["value"]
            if x["key"] == "file":
                files[v["path"]] = base64.b64decode(v["content"])
                lfs.discard(v["path"])
            elif x["key"] == "deletedFile":
                files.pop(v["path"], None)
            elif x["key"] == "deletedFolder":
                gone = v["path"].rstrip("/") + "/"
                files = {p: b for p, b in files.items() if not p.startswith(gone)}
            elif x["key"] == "lfsFile":
                if v.get("algo", "sha256") != "sha256":
                    raise HttpError(400, f"unsupported LFS algo {v.get('algo')}")
                data = repo.lfs_objects.get(v["oid"])
                if data is None or ("size" in v and v["size"] != len(data)):
                    raise HttpError(
                        422,
                        f"LFS pointer for {v['path']} points to an object that was not uploaded",
                    )
                files[v["path"]] = data
                lfs.add(v["path"])
        state = self.server.state
        for p in sorted(state.corrupt_next & set(files)):  # stored other than it was sent
            files[p] = files[p] + b"\n"
        state.corrupt_next.clear()
        state.commit_bodies.append(lines)
        c = state.new_commit(
            repo, head, header.get("summary", ""), header.get("description", ""), files, lfs
        )
        repo.branches[branch] = c.oid
        url = f"{self._base()}/{PREFIX[repo.kind]}{repo.repo_id}/commit/{c.oid}"
        return self._json({"commitOid": c.oid, "commitUrl": url})

    def _resolve(self, kind: str, rid: str, rev: str, path: str) -> None:
        repo = self._repo(kind, rid)
        c = self._commit_of(repo, rev)
        if path not in c.files:
            raise HttpError(
                404, f"Entry not found: {path}", "EntryNotFound", {"X-Repo-Commit": c.oid}
            )
        data = c.files[path]
        if path in c.lfs:  # the Hub redirects LFS files to the CDN; here: to this server
            oid = sha256_hex(data)
            headers = {
                "X-Repo-Commit": c.oid,
                "X-Linked-Etag": f'"{oid}"',
                "X-Linked-Size": str(len(data)),
                "ETag": f'"{blob_oid(lfs_pointer(data))}"',
                "Location": self._cdn_url(kind, rid, oid),
            }
            return self._send(302, b"", headers)
        headers = {"X-Repo-Commit": c.oid, "ETag": f'"{blob_oid(data)}"', "Accept-Ranges": "bytes"}
        return self._send_bytes(data, headers)

    def _send_bytes(self, data: bytes, headers: dict[str, str]) -> None:
        rng = re.match(r"bytes=(\d*)-(\d*)", self.headers.get("Range") or "")
        if rng and self.command == "GET" and data:
            start = int(rng.group(1) or 0)
            end = min(int(rng.group(2)) if rng.group(2) else len(data) - 1, len(data) - 1)
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return self._send(206, data[start : end + 1], headers, "application/octet-stream")
        return self._send(200, data, headers, "application/octet-stream")  # HEAD: no body

    # ------------------------------------------------------------------ Git LFS

    def _lfs_batch(self, kind: str, rid: str, req: dict[str, Any]) -> None:
        """The Git LFS batch API, upload operation: an upload (and verify) action per object
        the repo lacks, none for an object it already stores."""
        repo = self._repo(kind, rid, write=True)
        if req.get("operation") != "upload":
            raise HttpError(422, f"unsupported LFS operation {req.get('operation')!r}")
        if req.get("hash_algo", "sha256") != "sha256":
            raise HttpError(422, f"unsupported hash_algo {req.get('hash_algo')!r}")
        transfers = req.get("transfers") or ["basic"]
        if "basic" not in transfers:
            raise HttpError(422, f"no supported transfer in {transfers}")
        state = self.server.state
        state.lfs_batches.append([str(o.get("oid")) for o in req.get("objects", [])])
        base = self._base()
        out = []
        for obj in req.get("objects", []):
            oid, size = obj.get("oid"), obj.get("size")
            if not (isinstance(oid, str) and re.fullmatch(r"[0-9a-f]{64}", oid)):
                out.append(
                    {
                        "oid": str(oid),
                        "size": int(size or 0),
                        "error": {"code": 422, "message": "invalid oid"},
                    }
                )
                continue
            entry: dict[str, Any] = {"oid": oid, "size": size, "authenticated": True}
            stored = repo.lfs_objects.get(oid)
            if stored is None or len(stored) != size:
                ticket = secrets.token_hex(16)
                state.uploads[ticket] = ((kind, rid), oid, size)
                entry["actions"] = {
                    "upload": {"href": f"{base}/_lfs/upload/{ticket}", "header": {}},
                    "verify": {
                        "href": f"{base}/{PREFIX[kind]}{rid}.git/info/lfs/objects/verify",
                        "header": {},
                    },
                }
            out.append(entry)
        return self._json({"transfer": "basic", "objects": out, "hash_algo": "sha256"})

    def _lfs_put(self, ticket: str, body: bytes) -> None:
        """The basic transfer's PUT (a presigned URL on the Hub: no token, the ticket is it)."""
        state = self.server.state
        if self.command != "PUT" or ticket not in state.uploads:
            raise HttpError(403, "invalid or expired upload URL")
        key, oid, size = state.uploads[ticket]
        if len(body) != size or sha256_hex(body) != oid:
            raise HttpError(400, f"uploaded content does not match oid {oid} and size {size}")
        del state.uploads[ticket]
        state.lfs_puts.append(oid)
        state.repos[key].lfs_objects[oid] = body
        return self._send(200, b"", {"ETag": f'"{oid}"'})

    def _lfs_verify(self, kind: str, rid: str, req: dict[str, Any]) -> None:
        repo = self._repo(kind, rid, write=True)
        data = repo.lfs_objects.get(req.get("oid") or "")
        if data is None or len(data) != req.get("size"):
            raise HttpError(404, f"LFS object {req.get('oid')} was not uploaded")
        return self._json({"success": True})

    def _cdn_url(self, kind: str, rid: str, oid: str) -> str:
        """A signed URL on another origin (``localhost`` for ``127.0.0.1``), like the Hub's CDN:
        the client follows it without the token, the signature authorizes the download."""
        path = f"/_lfs/objects/{kind}/{rid}/{oid}"
        port = self.server.server_address[1]
        return f"http://localhost:{port}{path}?sig={self.server.state.sign(path)}"

    def _lfs_object(self, kind: str, rid: str, oid: str, query: dict[str, list[str]]) -> None:
        path = f"/_lfs/objects/{kind}/{rid}/{oid}"
        if (query.get("sig") or [""])[0] != self.server.state.sign(path):
            raise HttpError(403, "invalid signature")
        repo = self.server.state.repos.get((kind, rid))
        data = repo.lfs_objects.get(oid) if repo is not None else None
        if data is None:
            raise HttpError(404, f"LFS object {oid} not found")
        return self._send_bytes(data, {"ETag": f'"{oid}"', "Accept-Ranges": "bytes"})


class HubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.state = HubState()
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, name="hubserver", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conns_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def start(self) -> HubServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        with self._conns_lock:
            conns, self._conns = list(self._conns), set()
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        self._thread.join(timeout=5)

    # convenience for tests ------------------------------------------------
    def inject(self, path: str, status: int, **kw: Any) -> Rule:
        rule = Rule(path, status, **kw)
        with self.state.lock:
            self.state.rules.append(rule)
        return rule

    def fail(self, request: str, status: int, **kw: Any) -> Rule:
        """Fail requests of one type (:data:`REQUEST_TYPES`) with ``status``; ``kw`` as
        :class:`Rule` (``times``, ``headers``, ``message``, ``after``, ``drop``, ``down``)."""
        method, path = REQUEST_TYPES[request]
        return self.inject(path, status, method=method, **kw)

    def corrupt(self, path: str) -> None:
        """The next commit stores ``path`` with a byte more than the client sent."""
        with self.state.lock:
            self.state.corrupt_next.add(path)

    def requests(self, method: str | None = None, path: str = "") -> list[Logged]:
        with self.state.lock:
            log = list(self.state.log)
        return [r for r in log if method in (None, r.method) and re.search(path, r.path)]

    def repo(self, repo_id: str, kind: str = "datasets") -> Repo:
        return self.state.repos[(kind, repo_id)]
