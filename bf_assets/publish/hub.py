"""``HubTarget``: publish a bundle to a Hugging Face dataset repo as one commit and one tag.

* Token only from ``HF_TOKEN`` (never logged, never in metadata or messages).
* The repo is created private unless configured otherwise; publishing to an existing
  public repo while ``private=True`` is refused.
* Idempotent: the remote head is compared with the bundle first (paths-info oids and sizes
  of every file, no stale file under ``data/`` or ``meta/``); an unchanged dataset makes no
  commit.  Otherwise every file goes in ONE ``create_commit`` against the head it compared
  (``parent_commit``), so the release is atomic.
* A failed commit POST may have landed (a lost response): the head is inspected before any
  retry, and a head that already holds the bundle counts as published (no duplicate commit).
* Bounded retries (429 with ``Retry-After``, 5xx, network errors); 401/403/404 fail at once
  with a clear message.
* After pushing: paths-info of every file and a fresh download of the manifest are compared
  with the bundle; a mismatch fails the publish.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")  # before huggingface_hub reads it

import httpx2  # noqa: E402  (huggingface_hub's HTTP client)
from huggingface_hub import (  # noqa: E402
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
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


def _status(exc: BaseException) -> int | None:
    resp = getattr(exc, "response", None)
    code = getattr(resp, "status_code", None)
    return code if isinstance(code, int) else None


def _retry_after(exc: BaseException) -> float | None:
    resp = getattr(exc, "response", None)
    value = getattr(resp, "headers", {}).get("Retry-After") if resp is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def is_transient(exc: BaseException) -> bool:
    status = _status(exc)
    if status is not None:
        return status in TRANSIENT
    return isinstance(exc, httpx2.TransportError | ConnectionError | TimeoutError)


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

    # ------------------------------------------------------------------ errors and retries

    def _explain(self, what: str, exc: BaseException) -> str:
        status = _status(exc)
        repo = self.repo_id
        if status == 401:
            return f"{what}: the Hub rejected the token (401); check {TOKEN_ENV}"
        if status == 403:
            return f"{what}: the token may not write to {repo} (403); it needs write access"
        if status == 404:
            return f"{what}: {repo} was not found or is not visible to this token (404)"
        if status == 412:
            return f"{what}: {repo} changed while publishing (412, stale parent commit)"
        if status == 429:
            return f"{what}: rate limited by the Hub (429) after {self.max_attempts} attempt(s)"
        if status is not None and status >= 500:
            return f"{what}: the Hub failed with HTTP {status} after {self.max_attempts} attempt(s)"
        if status is not None:
            return f"{what}: the Hub answered HTTP {status}"
        return f"{what}: cannot reach the Hub ({type(exc).__name__}: {str(exc)[:200]})"

    def _check_deadline(self, what: str) -> None:
        if time.monotonic() > self._deadline:
            raise PublishError(f"{what}: the publish deadline of {self.deadline_s:.0f}s passed")

    def _wait(self, attempt: int, exc: BaseException) -> None:
        delay = _retry_after(exc)
        if delay is None:
            delay = self.backoff_s * (2**attempt)
        self._sleep(min(max(delay, 0.0), self.max_backoff_s))

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        for attempt in range(self.max_attempts):
            self._check_deadline(what)
            try:
                return fn()
            except Exception as exc:
                if not is_transient(exc) or attempt == self.max_attempts - 1:
                    raise PublishError(self._explain(what, exc)) from None
                self._wait(attempt, exc)
        raise AssertionError("unreachable")  # pragma: no cover

    # ------------------------------------------------------------------ remote state

    def _head(self, api: HfApi) -> str:
        refs = self._call(
            "list refs", lambda: api.list_repo_refs(self.repo_id, repo_type="dataset")
        )
        for b in refs.branches:
            if b.name == "main":
                return b.target_commit
        raise PublishError(f"{self.repo_id} has no main branch")

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
        )
        diff += [
            f
            for f in listed
            if (f.split("/", 1)[0] in OWNED_DIRS or f in OWNED_FILES) and f not in bundle.files
        ]
        return diff

    def _commit(self, api: HfApi, bundle: BundleFiles, tag: str) -> tuple[str, bool, list[str]]:
        notes: list[str] = []
        for attempt in range(self.max_attempts):
            head = self._head(api)
            diff = self._differences(api, head, bundle)
            if not diff:
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
                return info.oid, True, notes
            except Exception as exc:
                # The commit may have landed although the answer was lost: look first.
                after = self._head(api)
                if after != head and not self._differences(api, after, bundle):
                    notes.append(f"commit response lost ({type(exc).__name__}); the commit landed")
                    return after, True, notes
                status = _status(exc)
                if (not is_transient(exc) and status != 412) or attempt == self.max_attempts - 1:
                    raise PublishError(self._explain("commit", exc)) from None
                notes.append(
                    f"commit attempt {attempt + 1} failed ({status or type(exc).__name__}); retried"
                )
                self._wait(attempt, exc)
        raise AssertionError("unreachable")  # pragma: no cover

    def _tag(self, api: HfApi, tag: str, commit: str) -> str:
        def tags() -> dict[str, str]:
            refs = self._call(
                "list refs", lambda: api.list_repo_refs(self.repo_id, repo_type="dataset")
            )
            return {t.name: t.target_commit for t in refs.tags}

        existing = tags()
        if tag in existing:
            return existing[tag]
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
        except PublishError:
            if tags().get(tag) != commit:  # a lost answer may still have created it
                raise
        return commit

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
                    token=os.environ.get(TOKEN_ENV),
                    force_download=True,
                ),
            )
            if Path(local).read_bytes() != (bundle.root / MANIFEST_PATH).read_bytes():
                raise PublishError(
                    "verification failed: the manifest on the Hub differs from the bundle"
                )

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
        token = self.check()
        install_request_timeout(self.request_timeout_s)
        self._deadline = time.monotonic() + self.deadline_s
        bundle = BundleFiles.read(bundle_dir)
        api = HfApi(endpoint=self.endpoint, token=token)
        url = self._call(
            "create repo",
            lambda: api.create_repo(
                self.repo_id, repo_type="dataset", private=self.private, exist_ok=True
            ),
        )
        info = self._call("read repo", lambda: api.dataset_info(self.repo_id))
        if self.private and info.private is False:
            raise PublishError(
                f"{self.repo_id} is public but private publishing is configured; "
                "make the repo private or set private=False"
            )
        commit, changed, notes = self._commit(api, bundle, tag)
        tagged = self._tag(api, tag, commit)
        if tagged != commit:
            if self._differences(api, tagged, bundle):
                raise PublishError(
                    f"tag {tag} already exists on commit {tagged[:12]} with different content"
                )
            notes.append(f"tag {tag} already marks commit {tagged[:12]} with identical content")
        self._verify(api, commit, bundle)
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
