"""``HubTarget``: publish a bundle to a Hugging Face dataset repo as one commit and one tag.

* Token only from ``HF_TOKEN`` (never logged, never in metadata or messages; a server's
  error message is cleaned of it and of anything secret-shaped before it is shown).
* The repo is created private unless configured otherwise; publishing to an existing
  public repo while ``private=True`` is refused.
* Idempotent: the remote head is compared with the bundle first (paths-info oids and sizes
  of every file, no stale file under ``data/`` or ``meta/``); an unchanged dataset makes no
  commit.  Otherwise every file goes in ONE ``create_commit`` against the head it compared
  (``parent_commit``), so the release is atomic.
* In order: the commit, then its verification (paths-info of every file at the new commit
  and a fresh download of the manifest, compared with the bundle), then the tag on that
  commit.  ``main`` and the tag end on the same verified commit.
* A verification or tag failure after the commit landed is rolled back: a second commit on
  top of the release commit (``parent_commit``, so nobody else's commit is overwritten)
  puts back the files ``main`` held before (copied server-side from that commit), and is
  itself read back.  The Hub has no call that moves a branch to an existing commit, so this
  is the one way not to leave ``main`` on an untagged release; history is never rewritten
  (the release commit stays in it, untagged).
* A failed commit POST may have landed (a lost response): the head is inspected before any
  retry, and a head that already holds the bundle counts as published (no duplicate commit).
* Bounded retries with backoff (429 with ``Retry-After``, 5xx, network errors) of the steps
  that can be repeated: reads, the tag (checked by reading the refs back) and the commit
  POST (after checking it did not land).  A failure the client already retried itself
  (preupload, LFS upload, tree listing) is not retried again.  401/403/404 fail at once.
* Every failure raises :class:`HubPublishError`: the Hub's error (status and the server's
  message) and :class:`HubOutcome`, where ``main`` and the tag stand (unchanged, restored,
  or exactly which commit ``main`` now points at).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")  # before huggingface_hub reads it

import httpx2  # noqa: E402  (huggingface_hub's HTTP client)
from huggingface_hub import (  # noqa: E402
    CommitOperationAdd,
    CommitOperationCopy,
    CommitOperationDelete,
    HfApi,
    RepoFile,
    hf_hub_download,
)
from huggingface_hub.errors import HFValidationError  # noqa: E402
from huggingface_hub.utils import _http as hf_http  # noqa: E402
from huggingface_hub.utils import validate_repo_id  # noqa: E402

from bf_assets.publish.manifest import MANIFEST_PATH  # noqa: E402
from bf_assets.publish.targets import (  # noqa: E402
    OWNED_DIRS,
    OWNED_FILES,
    BundleFiles,
    PublishError,
    PublishResult,
)

T = TypeVar("T")
TOKEN_ENV = "HF_TOKEN"
TRANSIENT = frozenset({408, 429, 500, 502, 503, 504})
SERVER_MESSAGE_CHARS = 240
_TIMEOUT_INSTALLED: list[float] = []


def git_blob_sha1(path: Path) -> str:
    h = hashlib.sha1(b"blob %d\0" % path.stat().st_size)  # noqa: S324 - git's object id
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def install_request_timeout(seconds: float) -> None:
    """Give huggingface_hub's shared HTTP client a timeout (it has none by default)."""
    if _TIMEOUT_INSTALLED:
        return

    def factory() -> httpx2.Client:
        client = hf_http.default_client_factory()
        client.timeout = httpx2.Timeout(seconds)
        return client

    hf_http.set_client_factory(factory)
    _TIMEOUT_INSTALLED.append(seconds)


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes (a wrapper such as the client's LFS upload error first)."""
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in out and len(out) < 8:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def _http_error(exc: BaseException) -> BaseException | None:
    """The first exception of the chain that carries an HTTP response."""
    for e in _chain(exc):
        if isinstance(getattr(getattr(e, "response", None), "status_code", None), int):
            return e
    return None


def _status(exc: BaseException) -> int | None:
    http = _http_error(exc)
    return http.response.status_code if http is not None else None  # type: ignore[attr-defined]


def _retry_after(exc: BaseException) -> float | None:
    http = _http_error(exc)
    value = http.response.headers.get("Retry-After") if http is not None else None  # type: ignore[attr-defined]
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _request_path(exc: BaseException) -> str | None:
    """The URL path of the request that failed (an HTTP answer's or a transport error's)."""
    for e in _chain(exc):
        req = None
        resp = getattr(e, "response", None)
        if resp is not None:
            req = getattr(resp, "request", None)
        if req is None and isinstance(e, httpx2.RequestError):
            try:
                req = e.request
            except RuntimeError:  # not set
                req = None
        if req is not None:
            return str(req.url.path)
    return None


def is_transient(exc: BaseException) -> bool:
    status = _status(exc)
    if status is not None:
        return status in TRANSIENT
    return any(
        isinstance(e, httpx2.TransportError | ConnectionError | TimeoutError) for e in _chain(exc)
    )


def _failed_at_commit_post(exc: BaseException) -> bool:
    """Whether the failing request of a ``create_commit`` was its commit POST (which the
    client never retries), not a preupload or LFS request (which it retried itself)."""
    path = _request_path(exc)
    return path is None or "/commit/" in path


def clean_server_text(text: str, token: str | None = None) -> str:
    """A server's error text as a message may show it: without the token or anything
    secret-shaped, on one line, cut to :data:`SERVER_MESSAGE_CHARS`."""
    if token:
        text = text.replace(token, "[REDACTED]")
    from bf_assets.redact import redact_text  # only on an error path

    text = " ".join(redact_text(text).split())
    if len(text) > SERVER_MESSAGE_CHARS:
        text = text[: SERVER_MESSAGE_CHARS - 1] + "…"
    return text


@dataclass(slots=True)
class HubOutcome:
    """Where the Hub's targets (``main`` and the release tag) stand after a publish
    attempt, as far as the publisher saw them; :meth:`describe` says it in one sentence."""

    repo_id: str
    tag: str
    created_repo: bool = False  # this publish created the repo
    before: str | None = None  # main when this publish read it first
    main: str | None = None  # main as last seen
    commit: str | None = None  # the release commit this publish made (it landed)
    commit_unknown: str | None = None  # why it cannot be told whether the commit landed
    verified: bool = False  # the files at ``commit`` (or at main, unchanged) are the bundle's
    tagged: str | None = None  # the commit the tag points at, when it exists
    tag_unknown: str | None = None  # why it cannot be told whether the tag exists
    restored_by: str | None = None  # the commit that put back the files of ``before``
    restore_failed: str | None = None  # why main could not be put back
    tag_made: bool = False  # this publish created the tag (read back)

    @property
    def moved(self) -> bool:
        """Whether a Hub target may differ from what it was before this publish (the repo
        created, main on another commit, the tag made)."""
        return bool(
            self.created_repo
            or self.commit_unknown
            or self.tag_unknown
            or self.tag_made
            or self.commit is not None  # main is on it or on the commit restoring the files
            or (self.main is not None and self.main != self.before)
        )

    def _tag_text(self) -> str:
        if self.tag_unknown:
            return f"whether tag {self.tag} was created is unknown ({self.tag_unknown})"
        if self.tagged is None:
            return f"no tag {self.tag}"
        return f"tag {self.tag} at {self.tagged}"

    def describe(self) -> str:
        """One sentence: where ``main`` and the tag stand (and whether the repo is new)."""
        created = (
            f"the Hub repo {self.repo_id} was created by this publish; "
            if self.created_repo
            else ""
        )
        if self.commit_unknown:
            return (
                f"{created}the Hub's main may have moved: {self.commit_unknown}; {self._tag_text()}"
            )
        if self.restored_by is not None:
            return (
                f"{created}the Hub's main is back to the files of {self.before} "
                f"(restoring commit {self.restored_by}; the release commit {self.commit} stays "
                f"in its history, untagged); {self._tag_text()}"
            )
        if self.verified and self.main is not None and self.tagged == self.main:
            held = "holds the new release" if self.moved else "already held this release"
            return f"{created}the Hub {held} (main and tag {self.tag} at {self.main})"
        if self.commit is None:
            if self.before is None:
                return f"{created}the Hub holds no release" if created else "the Hub is unchanged"
            if self.main is not None and self.main != self.before:
                return (
                    f"{created}the Hub's main is at commit {self.main} (it was at {self.before} "
                    f"when this publish began; this publish confirmed no commit of its own); "
                    f"{self._tag_text()}"
                )
            held = ", which already holds this release" if self.verified else ""
            state = "holds no release" if self.created_repo else "is unchanged"
            return f"{created}the Hub {state} (main at {self.before}{held}; {self._tag_text()})"
        checked = "verified" if self.verified else "not verified"
        if self.main == self.commit:
            where = f"the Hub's main now points at the release commit {self.commit} ({checked})"
        elif self.main is None:
            where = f"the Hub's main may point at the release commit {self.commit} ({checked})"
        else:
            where = f"the Hub's main is at {self.main}, after the release commit {self.commit}"
        why = f"; it was not restored: {self.restore_failed}" if self.restore_failed else ""
        return f"{created}{where}, {self._tag_text()}{why}"


class HubPublishError(PublishError):
    """A Hub publish that failed: ``reason`` (the Hub's error) and ``outcome`` (where
    ``main`` and the tag stand); the message says both."""

    def __init__(self, reason: str, outcome: HubOutcome) -> None:
        super().__init__(f"{reason}; {outcome.describe()}")
        self.reason = reason
        self.outcome = outcome


class _CommitUnknown(PublishError):
    """A commit POST failed and the head could not be read back to tell whether it landed."""


class HubTarget:
    def __init__(
        self,
        repo_id: str,
        *,
        private: bool = True,
        endpoint: str | None = None,
        max_attempts: int = 4,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        request_timeout_s: float = 120.0,
        deadline_s: float = 3600.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.repo_id = repo_id
        self.private = private
        self.endpoint = endpoint.rstrip("/") if endpoint else None
        self.max_attempts = max(1, max_attempts)
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.request_timeout_s = request_timeout_s
        self.deadline_s = deadline_s
        self._sleep = sleep
        self._deadline = 0.0
        self._token: str | None = None
        self.outcome: HubOutcome | None = None  # the last publish's, success or not

    # ------------------------------------------------------------------ errors and retries

    def _explain(self, what: str, exc: BaseException, attempts: int = 1) -> str:
        status = _status(exc)
        repo = self.repo_id
        http = _http_error(exc)
        said = getattr(http, "server_message", None) if http is not None else None
        if http is not None and not said:
            said = http.response.headers.get("X-Error-Message")  # type: ignore[attr-defined]
        wrapper = exc if http is not exc and http is not None else None
        detail = "; ".join(
            clean_server_text(str(t), self._token) for t in (wrapper, said) if t and str(t).strip()
        )
        server = f": {detail}" if detail else ""
        tries = f" after {attempts} attempt(s)" if attempts > 1 else ""
        if status == 401:
            return f"{what}: the Hub rejected the token (401){server}; check {TOKEN_ENV}"
        if status == 403:
            return f"{what}: the token may not write to {repo} (403){server}; it needs write access"
        if status == 404:
            return f"{what}: {repo} was not found or is not visible to this token (404){server}"
        if status == 412:
            return f"{what}: {repo} changed while publishing (412, stale parent commit){server}"
        if status == 429:
            return f"{what}: rate limited by the Hub (429){tries}{server}"
        if status is not None and status >= 500:
            return f"{what}: the Hub failed with HTTP {status}{tries}{server}"
        if status is not None:
            return f"{what}: the Hub answered HTTP {status}{server}"
        text = clean_server_text(str(exc), self._token)
        return f"{what}: cannot reach the Hub{tries} ({type(exc).__name__}: {text})"

    def _check_deadline(self, what: str) -> None:
        if time.monotonic() > self._deadline:
            raise PublishError(f"{what}: the publish deadline of {self.deadline_s:.0f}s passed")

    def _wait(self, attempt: int, exc: BaseException) -> None:
        delay = _retry_after(exc)
        if delay is None:
            delay = self.backoff_s * (2**attempt)
        self._sleep(min(max(delay, 0.0), self.max_backoff_s))

    def _call(self, what: str, fn: Callable[[], T], *, retry: bool = True) -> T:
        """``fn``, retried on transient errors (``retry=False``: the client retries it)."""
        attempts = self.max_attempts if retry else 1
        for attempt in range(attempts):
            self._check_deadline(what)
            try:
                return fn()
            except Exception as exc:
                if not is_transient(exc) or attempt == attempts - 1:
                    raise PublishError(self._explain(what, exc, attempt + 1)) from None
                self._wait(attempt, exc)
        raise AssertionError("unreachable")  # pragma: no cover

    # ------------------------------------------------------------------ remote state

    def _refs(self, api: HfApi) -> tuple[str, dict[str, str]]:
        """``main``'s commit and every tag's commit."""
        refs = self._call(
            "list refs", lambda: api.list_repo_refs(self.repo_id, repo_type="dataset")
        )
        tags = {t.name: t.target_commit for t in refs.tags}
        for b in refs.branches:
            if b.name == "main":
                return b.target_commit, tags
        raise PublishError(f"{self.repo_id} has no main branch")

    def _tree(self, api: HfApi, rev: str) -> dict[str, str]:
        """Every file at ``rev``: its git object id (the LFS pointer's for an LFS file)."""
        entries = self._call(
            "list remote files",
            lambda: list(
                api.list_repo_tree(self.repo_id, revision=rev, recursive=True, repo_type="dataset")
            ),
            retry=False,
        )
        return {e.path: e.blob_id for e in entries if isinstance(e, RepoFile)}

    def _differences(self, api: HfApi, rev: str, bundle: BundleFiles) -> list[str]:
        """Paths whose remote copy at ``rev`` differs from the bundle, plus stale remote files."""
        paths = sorted(bundle.files)
        infos = self._call(
            "read remote files",
            lambda: api.get_paths_info(self.repo_id, paths, repo_type="dataset", revision=rev),
        )
        remote = {i.path: i for i in infos}
        diff = []
        for rel in paths:
            info = remote.get(rel)
            sha, size = bundle.files[rel]
            if info is None or getattr(info, "size", None) != size:
                diff.append(rel)
                continue
            lfs = getattr(info, "lfs", None)
            if lfs is not None:
                if getattr(lfs, "sha256", None) != sha:
                    diff.append(rel)
            elif getattr(info, "blob_id", None) != git_blob_sha1(bundle.root / rel):
                diff.append(rel)
        listed = self._call(
            "list remote files",
            lambda: api.list_repo_files(self.repo_id, repo_type="dataset", revision=rev),
            retry=False,
        )
        diff += [
            f
            for f in listed
            if (f.split("/", 1)[0] in OWNED_DIRS or f in OWNED_FILES) and f not in bundle.files
        ]
        return diff

    def _after_failed_commit(
        self, api: HfApi, what: str, exc: BaseException, parent: str, holds: Callable[[str], bool]
    ) -> tuple[str | None, str]:
        """After a failed commit POST against ``parent``: the commit if it landed anyway (the
        head moved and ``holds`` it), and the head.  Raises :class:`_CommitUnknown` when the
        head cannot be read back."""
        try:
            after, _ = self._refs(api)
            return (after if after != parent and holds(after) else None), after
        except PublishError as unread:
            raise _CommitUnknown(
                f"the {what}'s answer was lost ({self._explain(what, exc)}) and main could not "
                f"be read back ({unread})"
            ) from None

    def _commit(
        self, api: HfApi, bundle: BundleFiles, tag: str, out: HubOutcome
    ) -> tuple[str, bool, list[str]]:
        notes: list[str] = []
        for attempt in range(self.max_attempts):
            head, _ = self._refs(api)
            out.main = head
            diff = self._differences(api, head, bundle)
            if not diff:
                if attempt > 0 and head != out.before:  # an earlier attempt landed after all
                    out.commit = head
                return head, attempt > 0, notes
            stale = [p for p in diff if p not in bundle.files]
            ops: list[Any] = [
                CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(bundle.root / rel))
                for rel in bundle.ordered()
            ]
            ops += [CommitOperationDelete(path_in_repo=p) for p in stale]
            self._check_deadline("commit")
            try:
                info = api.create_commit(
                    self.repo_id,
                    ops,
                    commit_message=f"Publish {tag}",
                    commit_description=f"bf-assets release {tag}; manifest sha256 {bundle.manifest_sha256}",
                    repo_type="dataset",
                    parent_commit=head,
                )
            except Exception as exc:
                # The commit may have landed although the answer was lost: look first.
                try:
                    landed, after = self._after_failed_commit(
                        api, "commit", exc, head, lambda a: not self._differences(api, a, bundle)
                    )
                except _CommitUnknown as unknown:
                    out.commit_unknown = str(unknown)
                    raise PublishError(self._explain("commit", exc, attempt + 1)) from None
                out.main = after
                if landed is not None:
                    notes.append(f"commit response lost ({type(exc).__name__}); the commit landed")
                    out.commit = landed
                    return landed, True, notes
                status = _status(exc)
                again = status == 412 or (is_transient(exc) and _failed_at_commit_post(exc))
                if not again or attempt == self.max_attempts - 1:
                    raise PublishError(self._explain("commit", exc, attempt + 1)) from None
                notes.append(
                    f"commit attempt {attempt + 1} failed ({status or type(exc).__name__}); retried"
                )
                self._wait(attempt, exc)
                continue
            out.commit = out.main = info.oid
            return info.oid, True, notes
        raise AssertionError("unreachable")  # pragma: no cover

    def _tag(self, api: HfApi, tag: str, commit: str, out: HubOutcome, notes: list[str]) -> None:
        """Tag ``commit``, then read the refs back: the tag must point at it."""
        failure: PublishError | None = None
        try:
            self._call(
                "create tag",
                lambda: api.create_tag(
                    self.repo_id,
                    tag=tag,
                    revision=commit,
                    tag_message=f"bf-assets release {tag}",
                    repo_type="dataset",
                    exist_ok=True,
                ),
            )
        except PublishError as exc:
            failure = exc
        try:
            _, tags = self._refs(api)
        except PublishError as unread:
            out.tag_unknown = "the refs could not be read back"
            raise failure or unread from None
        out.tagged = tags.get(tag)
        if out.tagged == commit:
            out.tag_made = True
            if failure is not None:  # a lost answer: the tag was made all the same
                notes.append(f"tag response lost ({failure}); the tag was created")
            return
        if failure is not None:
            raise failure
        raise PublishError(f"create tag: tag {tag} points at {out.tagged} instead of {commit}")

    def _verify(self, api: HfApi, commit: str, bundle: BundleFiles) -> None:
        diff = self._differences(api, commit, bundle)
        if diff:
            raise PublishError(
                f"verification failed: {len(diff)} file(s) differ on the Hub: {diff[:5]}"
            )
        with tempfile.TemporaryDirectory(prefix="bf-hub-verify-") as cache:
            local = self._call(
                "download manifest",
                lambda: hf_hub_download(
                    self.repo_id,
                    MANIFEST_PATH,
                    repo_type="dataset",
                    revision=commit,
                    cache_dir=cache,
                    endpoint=self.endpoint,
                    token=self._token,
                    force_download=True,
                ),
            )
            if Path(local).read_bytes() != (bundle.root / MANIFEST_PATH).read_bytes():
                raise PublishError(
                    "verification failed: the manifest on the Hub differs from the bundle"
                )

    def _restore(self, api: HfApi, out: HubOutcome, tag: str, why: str) -> None:
        """Put ``main`` back to the files of ``out.before`` with a commit on top of the
        release commit; records the result (or why not) in ``out``.  Never raises."""
        before, commit = out.before, out.commit
        if before is None or commit is None:
            return
        self._deadline = max(self._deadline, time.monotonic() + self.deadline_s)
        try:
            head, _ = self._refs(api)
            out.main = head
            if head != commit:
                out.restore_failed = f"main moved on to {head} after the release commit"
                return
            old = self._tree(api, before)
            new = self._tree(api, commit)
            restored: str | None = None
            for attempt in range(self.max_attempts):
                ops: list[Any] = [
                    CommitOperationCopy(p, p, src_revision=before)
                    for p in sorted(old)
                    if new.get(p) != old[p]
                ]
                ops += [CommitOperationDelete(path_in_repo=p) for p in sorted(new) if p not in old]
                self._check_deadline("restore main")
                try:
                    info = api.create_commit(
                        self.repo_id,
                        ops,
                        commit_message=f"Restore {before[:12]}: release {tag} not completed",
                        commit_description=(
                            f"bf-assets: release {tag} (commit {commit}) failed after it was "
                            f"committed ({why[:300]}); this commit puts back the files of {before}"
                        ),
                        repo_type="dataset",
                        parent_commit=commit,
                    )
                    restored = info.oid
                    break
                except Exception as exc:
                    try:
                        landed, after = self._after_failed_commit(
                            api,
                            "restoring commit",
                            exc,
                            commit,
                            lambda a: self._tree(api, a) == old,
                        )
                    except _CommitUnknown as unknown:
                        out.main = None
                        out.restore_failed = (
                            f"{unknown}: main points at the release commit {commit} or at a "
                            f"commit putting back the files of {before}"
                        )
                        return
                    out.main = after
                    if landed is not None:
                        restored = landed
                        break
                    if after != commit:
                        out.restore_failed = f"main moved on to {after} after the release commit"
                        return
                    if not is_transient(exc) or attempt == self.max_attempts - 1:
                        out.restore_failed = self._explain("restoring commit", exc, attempt + 1)
                        return
                    self._wait(attempt, exc)
            if restored is None:  # pragma: no cover - the loop returns or breaks
                return
            out.main = restored
            if self._tree(api, restored) != old:
                out.restore_failed = (
                    f"the restoring commit {restored} does not hold the files of {before}"
                )
                return
            out.restored_by = restored
        except PublishError as exc:
            out.restore_failed = str(exc)

    # ------------------------------------------------------------------ publish

    def check(self) -> str:
        """The preconditions, before anything is written anywhere: a token in the
        environment and a well-formed repo id.  Returns the token."""
        token = os.environ.get(TOKEN_ENV)
        if not token:
            raise PublishError(
                f"{TOKEN_ENV} is not set: a write token is needed to publish to the Hub"
            )
        try:
            validate_repo_id(self.repo_id)
        except HFValidationError as exc:
            raise PublishError(f"{self.repo_id!r} is not a valid Hub repo id: {exc}") from None
        return token

    def publish(self, bundle_dir: Path, tag: str) -> PublishResult:
        """Publish the bundle as one commit on ``main``, verified, then tagged.  Raises
        :class:`HubPublishError` (with where ``main`` and the tag stand) on any failure."""
        token = self.check()
        install_request_timeout(self.request_timeout_s)
        self._deadline = time.monotonic() + self.deadline_s
        self._token = token
        bundle = BundleFiles.read(bundle_dir)
        api = HfApi(endpoint=self.endpoint, token=token)
        out = self.outcome = HubOutcome(self.repo_id, tag)
        try:
            return self._publish(api, bundle, tag, out)
        except HubPublishError:
            raise
        except PublishError as exc:
            raise HubPublishError(str(exc), out) from None

    def _publish(self, api: HfApi, bundle: BundleFiles, tag: str, out: HubOutcome) -> PublishResult:
        exists = self._call("read repo", lambda: api.repo_exists(self.repo_id, repo_type="dataset"))
        url = self._call(
            "create repo",
            lambda: api.create_repo(
                self.repo_id, repo_type="dataset", private=self.private, exist_ok=True
            ),
        )
        out.created_repo = not exists
        info = self._call("read repo", lambda: api.dataset_info(self.repo_id))
        if self.private and info.private is False:
            raise PublishError(
                f"{self.repo_id} is public but private publishing is configured; "
                "make the repo private or set private=False"
            )
        head, tags = self._refs(api)
        out.before = out.main = head
        out.tagged = tags.get(tag)
        if out.tagged is not None and self._differences(api, out.tagged, bundle):
            raise PublishError(
                f"tag {tag} already exists on commit {out.tagged} with different content"
            )
        commit, changed, notes = self._commit(api, bundle, tag, out)
        try:
            self._verify(api, commit, bundle)
            out.verified = True
            if out.tagged is None:
                self._tag(api, tag, commit, out, notes)
            elif out.tagged != commit:
                notes.append(
                    f"tag {tag} already marks commit {out.tagged[:12]} with identical content"
                )
        except PublishError as exc:
            if out.commit is not None:
                self._restore(api, out, tag, str(exc))
            raise
        base = str(url).rstrip("/")
        return PublishResult(
            target="hub",
            location=base,
            changed=changed,
            files=len(bundle.files),
            manifest_sha256=bundle.manifest_sha256,
            verified=True,
            commit=commit,
            commit_url=f"{base}/commit/{commit}",
            tag=tag,
            notes=notes,
        )
