"""A Hub push that fails leaves both targets as they were, or says exactly which one moved.

Driven as the release drives it (``PublishTarget.publish``: the local release staged, the
Hub commit made, verified and tagged, then the local folder switched), with the real
huggingface_hub client against the test server (``hubserver``), which fails one request
type at a time.  Each test first publishes a release to both targets, then a second one
that fails, and checks: the error's message (the Hub's status and message, where ``main``
and the tag stand), the local ``--out`` byte for byte, and the Hub's ``main`` and tags.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from hubserver import HubServer
from leakproof_corpus import Gen
from test_publish_hub import REPO, WRITE, bundles, hub, server  # noqa: F401 (fixtures)
from trialkit import build_trial, healthy_spec

from bf_assets.defs.publish import PublishTarget, ReleasePublishError
from bf_assets.publish.bundle import Bundle
from bf_assets.publish.hub import HubOutcome
from bf_assets.publish.local import LocalFolderTarget
from bf_assets.publish.manifest import MANIFEST_PATH


def fake_hf_token(seed: int) -> str:
    """A token of the Hub's shape, made at run time (no credential literal in the file)."""
    return "hf_" + Gen(seed).s(34)


def publish_target(srv: HubServer, tmp: Path, **kw: object) -> PublishTarget:
    cfg: dict[str, object] = {
        "out_dir": str(tmp / "published"),
        "staging_dir": str(tmp / "staging"),
        "hub_repo": REPO,
        "endpoint": srv.url,
        "hub_backoff_s": 0.0,
        "hub_max_attempts": 2,
    }
    return PublishTarget(**(cfg | kw))  # type: ignore[arg-type]


def snapshot(out: Path) -> tuple[str, dict[str, bytes]]:
    """What ``--out`` shows: the link's target and every file's bytes."""
    real = out.resolve()
    files = {
        p.relative_to(real).as_posix(): p.read_bytes()
        for p in sorted(real.rglob("*"))
        if p.is_file()
    }
    return os.readlink(out), files


def releases(out: Path) -> set[str]:
    store = out.parent / f"{out.name}.releases"
    return {p.name for p in store.iterdir()} if store.is_dir() else set()


def main_and_tags(srv: HubServer) -> tuple[str, dict[str, str]]:
    repo = srv.repo(REPO)
    return repo.branches["main"], {t: c for t, (c, _) in repo.tags.items()}


def files_at(srv: HubServer, oid: str) -> dict[str, bytes]:
    return dict(srv.repo(REPO).commits[oid].files)


def bundle_files(b: Bundle) -> dict[str, bytes]:
    paths = {f.path for f in b.files} | {MANIFEST_PATH, "meta/checksums.sha256"}
    return {p: (b.path / p).read_bytes() for p in paths if (b.path / p).is_file()}


@pytest.fixture
def released(
    hub: HubServer,  # noqa: F811
    bundles: tuple[Bundle, Bundle],  # noqa: F811
    tmp_path: Path,
) -> tuple[PublishTarget, str, tuple[str, dict[str, bytes]], set[str]]:
    """The first release on both targets: the target, main's commit, ``--out``'s snapshot
    and the release folders beside it."""
    one, _ = bundles
    t = publish_target(hub, tmp_path)
    local, pushed = t.publish(one.path, one.tag)
    assert local.changed and pushed.changed
    before, tags = main_and_tags(hub)
    assert tags == {one.tag: before} == {one.tag: pushed.commit}
    out = Path(t.out_dir)
    return t, before, snapshot(out), releases(out)


def assert_local_unchanged(
    t: PublishTarget, snap: tuple[str, dict[str, bytes]], store: set[str]
) -> None:
    out = Path(t.out_dir)
    assert snapshot(out) == snap  # the previous release, byte for byte
    assert releases(out) == store  # and the staged new one removed


@pytest.mark.parametrize(
    ("request_type", "status", "rule", "said"),
    [
        (
            "commit",
            500,
            {},
            "commit: the Hub failed with HTTP 500 after 2 attempt(s): injected 500",
        ),
        (
            "commit",
            429,
            {"headers": {"Retry-After": "0"}},
            "commit: rate limited by the Hub (429) after 2 attempt(s): injected 429",
        ),
        (
            "commit",
            401,
            {"message": "Invalid credentials in Authorization header"},
            "commit: the Hub rejected the token (401): Invalid credentials in Authorization "
            "header; check HF_TOKEN",
        ),
        (
            "lfs-upload",  # the client retries it itself (Retry-After: 0 keeps that short)
            500,
            {"headers": {"Retry-After": "0"}},
            "commit: the Hub failed with HTTP 500: Error while uploading",
        ),
    ],
    ids=["commit-500", "commit-429", "commit-401", "lfs-upload-500"],
)
def test_a_failed_commit_leaves_both_targets_as_they_were(
    hub: HubServer,  # noqa: F811
    bundles: tuple[Bundle, Bundle],  # noqa: F811
    released: tuple[PublishTarget, str, tuple[str, dict[str, bytes]], set[str]],
    request_type: str,
    status: int,
    rule: dict[str, object],
    said: str,
) -> None:
    _, two = bundles
    t, before, snap, store = released
    commits = len(hub.repo(REPO).commits)
    hub.fail(request_type, status, times=99, **rule)
    with pytest.raises(ReleasePublishError) as err:
        t.publish(two.path, two.tag)
    msg = str(err.value)
    assert said in msg
    assert f"the Hub is unchanged (main at {before}; no tag {two.tag})" in msg
    assert f"the local release in {Path(t.out_dir)} is unchanged" in msg
    assert not err.value.moved and WRITE not in msg
    assert main_and_tags(hub) == (before, {bundles[0].tag: before})
    assert len(hub.repo(REPO).commits) == commits
    assert_local_unchanged(t, snap, store)
    if request_type == "lfs-upload":
        assert not hub.requests("POST", r"/commit/")[1:]  # only the first release's commit


def test_a_first_release_that_fails_leaves_no_local_folder_and_says_the_repo_was_made(
    hub: HubServer,  # noqa: F811
    bundles: tuple[Bundle, Bundle],  # noqa: F811
    tmp_path: Path,
) -> None:
    one, _ = bundles
    t = publish_target(hub, tmp_path)
    hub.fail("commit", 500, times=99)
    with pytest.raises(ReleasePublishError) as err:
        t.publish(one.path, one.tag)
    main, tags = main_and_tags(hub)
    assert set(files_at(hub, main)) == {".gitattributes"} and not tags  # the new, empty repo
    assert str(err.value).startswith(
        "commit: the Hub failed with HTTP 500 after 2 attempt(s): injected 500; the Hub repo "
        f"{REPO} was created by this publish; the Hub holds no release (main at {main}; no tag "
        f"{one.tag}); the local release in {Path(t.out_dir)} is unchanged"
    )
    assert err.value.moved
    out = Path(t.out_dir)
    assert not out.exists() and not out.is_symlink() and releases(out) == set()


def test_an_unknown_token_and_an_unreachable_hub_change_nothing(
    hub: HubServer,  # noqa: F811
    bundles: tuple[Bundle, Bundle],  # noqa: F811
    released: tuple[PublishTarget, str, tuple[str, dict[str, bytes]], set[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, two = bundles
    t, before, snap, store = released
    revoked = fake_hf_token(36)
    monkeypatch.setenv("HF_TOKEN", revoked)
    with pytest.raises(ReleasePublishError) as err:
        t.publish(two.path, two.tag)
    msg = str(err.value)
    assert "the Hub rejected the token (401): Invalid credentials in Authorization header" in msg
    assert "the Hub is unchanged" in msg and revoked not in msg
    assert not err.value.moved
    assert main_and_tags(hub) == (before, {bundles[0].tag: before})
    assert_local_unchanged(t, snap, store)

    monkeypatch.setenv("HF_TOKEN", WRITE)
    down = HubServer().start()
    url = down.url
    down.close()
    with pytest.raises(ReleasePublishError) as err:
        publish_target(hub, Path(t.out_dir).parent, endpoint=url).publish(two.path, two.tag)
    msg = str(err.value)
    assert "cannot reach the Hub after 2 attempt(s) (ConnectError" in msg
    assert "the Hub is unchanged" in msg and "the local release in" in msg
    assert_local_unchanged(t, snap, store)


@pytest.mark.parametrize("failure", ["tag-500", "verify-mismatch"])
def test_a_failure_after_the_commit_puts_main_back_and_says_so(
    hub: HubServer,  # noqa: F811
    bundles: tuple[Bundle, Bundle],  # noqa: F811
    released: tuple[PublishTarget, str, tuple[str, dict[str, bytes]], set[str]],
    failure: str,
) -> None:
    """``main`` never stays on an untagged release: a commit on top of it puts back the
    files it held before, and the message names both commits."""
    one, two = bundles
    t, before, snap, store = released
    if failure == "tag-500":
        hub.fail("tag", 500, times=99)
        said = "create tag: the Hub failed with HTTP 500 after 2 attempt(s): injected 500"
    else:
        hub.corrupt(MANIFEST_PATH)  # the server stores other bytes than the client sent
        said = "verification failed: 1 file(s) differ on the Hub: ['meta/manifest.json']"
    with pytest.raises(ReleasePublishError) as err:
        t.publish(two.path, two.tag)
    main, tags = main_and_tags(hub)
    repo = hub.repo(REPO)
    release = repo.commits[main].parent
    assert release is not None and repo.commits[release].parent == before
    assert files_at(hub, main) == files_at(hub, before)  # main holds the first release again
    want = {".gitattributes": files_at(hub, before)[".gitattributes"], **bundle_files(two)}
    if failure == "tag-500":
        assert files_at(hub, release) == want  # the release commit held the new release
    assert tags == {one.tag: before}
    msg = str(err.value)
    assert said in msg
    assert (
        f"the Hub's main is back to the files of {before} (restoring commit {main}; the "
        f"release commit {release} stays in its history, untagged); no tag {two.tag}"
    ) in msg
    assert err.value.moved
    assert_local_unchanged(t, snap, store)
    # the next run publishes the release whole: main and the tag on one new commit
    hub.state.rules.clear()
    local, pushed = t.publish(two.path, two.tag)
    assert pushed.changed and local.changed
    assert main_and_tags(hub) == (pushed.commit, {one.tag: before, two.tag: pushed.commit})
    assert files_at(hub, pushed.commit or "") == want


def test_a_hub_that_goes_down_after_the_commit_is_reported_as_it_stands(
    hub: HubServer,  # noqa: F811
    bundles: tuple[Bundle, Bundle],  # noqa: F811
    released: tuple[PublishTarget, str, tuple[str, dict[str, bytes]], set[str]],
) -> None:
    """The tag request is cut off and the server is gone: ``main`` cannot be put back, and
    the message says exactly where it points."""
    one, two = bundles
    t, before, snap, store = released
    hub.fail("tag", 500, drop=True, down=True)
    with pytest.raises(ReleasePublishError) as err:
        t.publish(two.path, two.tag)
    main, tags = main_and_tags(hub)
    assert main != before and hub.repo(REPO).commits[main].parent == before
    assert tags == {one.tag: before}
    msg = str(err.value)
    assert "create tag: cannot reach the Hub after 2 attempt(s)" in msg
    assert f"the Hub's main now points at the release commit {main} (verified)" in msg
    assert f"whether tag {two.tag} was created is unknown" in msg
    assert "it was not restored: list refs: cannot reach the Hub" in msg
    assert err.value.moved
    assert_local_unchanged(t, snap, store)
    # back up: the next run finds the release on main and tags it, then switches
    hub.state.down = False
    local, pushed = t.publish(two.path, two.tag)
    assert not pushed.changed and pushed.commit == main and local.changed
    assert main_and_tags(hub) == (main, {one.tag: before, two.tag: main})


def test_a_commit_whose_answer_is_lost_with_the_hub_is_reported_as_unknown(
    hub: HubServer,  # noqa: F811
    bundles: tuple[Bundle, Bundle],  # noqa: F811
    released: tuple[PublishTarget, str, tuple[str, dict[str, bytes]], set[str]],
) -> None:
    """The commit lands, its answer is cut off and the server is gone: whether main moved
    cannot be told, and the message says so rather than "unchanged"."""
    one, two = bundles
    t, before, snap, store = released
    hub.fail("commit", 500, after=True, drop=True, down=True)
    with pytest.raises(ReleasePublishError) as err:
        t.publish(two.path, two.tag)
    main, tags = main_and_tags(hub)
    assert hub.repo(REPO).commits[main].parent == before and tags == {one.tag: before}
    msg = str(err.value)
    assert msg.startswith("commit: cannot reach the Hub (RemoteProtocolError")
    assert "the Hub's main may have moved: the commit's answer was lost" in msg
    assert "main could not be read back (list refs: cannot reach the Hub" in msg
    assert f"no tag {two.tag}" in msg and "the Hub is unchanged" not in msg
    assert err.value.moved
    assert_local_unchanged(t, snap, store)


def test_a_local_switch_failure_after_the_push_names_what_moved(
    hub: HubServer,  # noqa: F811
    bundles: tuple[Bundle, Bundle],  # noqa: F811
    released: tuple[PublishTarget, str, tuple[str, dict[str, bytes]], set[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one, two = bundles
    t, before, snap, store = released

    def full_disk(self: LocalFolderTarget, final: Path) -> Path | None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as m, pytest.raises(ReleasePublishError) as err:
        m.setattr(LocalFolderTarget, "_switch_link", full_disk)
        t.publish(two.path, two.tag)
    main, tags = main_and_tags(hub)
    assert tags == {one.tag: before, two.tag: main} and main != before
    msg = str(err.value)
    assert f"could not switch {Path(t.out_dir)}: No space left on device" in msg
    assert f"the Hub holds the new release (main and tag {two.tag} at {main})" in msg
    assert err.value.moved
    assert_local_unchanged(t, snap, store)
    local, pushed = t.publish(two.path, two.tag)
    assert local.changed and not pushed.changed and pushed.commit == main


def test_a_server_message_is_shown_without_the_token(
    hub: HubServer,  # noqa: F811
    bundles: tuple[Bundle, Bundle],  # noqa: F811
    released: tuple[PublishTarget, str, tuple[str, dict[str, bytes]], set[str]],
) -> None:
    _, two = bundles
    t, before, snap, store = released
    other = fake_hf_token(37)  # a token that is not this publisher's own
    hub.fail("commit", 400, message=f"cannot accept this commit from token {WRITE} or {other}")
    with pytest.raises(ReleasePublishError) as err:
        t.publish(two.path, two.tag)
    msg = str(err.value)
    assert "commit: the Hub answered HTTP 400: cannot accept this commit from token" in msg
    assert WRITE not in msg and other not in msg and other[3:11] not in msg
    assert "REDACTED" in msg
    assert_local_unchanged(t, snap, store)


def test_a_successful_push_tags_the_verified_commit_main_points_at_then_switches(
    hub: HubServer,  # noqa: F811
    bundles: tuple[Bundle, Bundle],  # noqa: F811
    released: tuple[PublishTarget, str, tuple[str, dict[str, bytes]], set[str]],
) -> None:
    one, two = bundles
    t, before, snap, _ = released
    local, pushed = t.publish(two.path, two.tag)
    assert local.changed and pushed.changed and pushed.verified
    assert main_and_tags(hub) == (pushed.commit, {one.tag: before, two.tag: pushed.commit})
    got = files_at(hub, pushed.commit or "")
    assert {p: got[p] for p in bundle_files(two)} == bundle_files(two)
    assert set(got) == {".gitattributes", *bundle_files(two)}
    _, shown = snapshot(Path(t.out_dir))
    assert shown[MANIFEST_PATH] == (two.path / MANIFEST_PATH).read_bytes() != snap[1][MANIFEST_PATH]
    # the Hub was read back before the folder switched: the verify requests precede nothing
    # local, and the tag request follows the read-back of the new commit
    tag_at = max(
        i for i, r in enumerate(hub.requests()) if r.path.endswith(f"/tag/{pushed.commit}")
    )
    reads = [
        i
        for i, r in enumerate(hub.requests())
        if "/paths-info/" in r.path and r.path.endswith(pushed.commit or "")
    ]
    assert reads and max(reads) < tag_at


@pytest.mark.parametrize("failure", ["commit-500", "tag-500"])
def test_cli_release_says_where_each_target_stands(
    hub: HubServer,  # noqa: F811
    tmp_path: Path,
    runs_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    failure: str,
) -> None:
    """``bf-assets release --hub-repo``: a failed push is exit 2; every line is true."""
    from bf_assets.cli.main import main

    build_trial(runs_root)
    for name, value in {
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
        "BF_RUN_ROOTS": "",
        "BF_WAREHOUSE": str(tmp_path / "warehouse"),
        "BF_STAGING_DIR": str(tmp_path / "staging"),
    }.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "out"
    argv = ["release", "--runs", str(runs_root), "--out", str(out), "--hub-repo", REPO]
    assert main(argv) == 0
    snap, store = snapshot(out), releases(out)
    before, tags = main_and_tags(hub)
    capsys.readouterr()
    healthy_spec(task="other-task").write(runs_root)  # something new to publish
    kind = failure.split("-")[0]
    hub.fail(kind, 500, times=99, headers={"Retry-After": "0"})
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert snapshot(out) == snap and releases(out) == store
    main_now, tags_now = main_and_tags(hub)
    assert tags_now == tags
    err = captured.err
    assert "published_dataset: publishing failed: " in err
    assert "Traceback" not in err
    assert f"the local release in {out} is unchanged" in err
    if kind == "commit":
        assert main_now == before
        assert "commit: the Hub failed with HTTP 500 after 4 attempt(s): injected 500" in err
        assert f"dataset folder:  {out} (unchanged: nothing was published)" in captured.out
        assert f"hub dataset:     the Hub is unchanged (main at {before}; no tag" in captured.out
    else:
        release = hub.repo(REPO).commits[main_now].parent
        assert files_at(hub, main_now) == files_at(hub, before) and release != before
        assert "create tag: the Hub failed with HTTP 500 after 4 attempt(s): injected 500" in err
        assert f"dataset folder:  {out} (unchanged: still the previous release)" in captured.out
        line = (
            f"hub dataset:     the Hub's main is back to the files of {before} (restoring "
            f"commit {main_now}; the release commit {release} stays in its history, untagged)"
        )
        assert line in captured.out


A, B = "a" * 40, "b" * 40


@pytest.mark.parametrize(
    ("outcome", "said", "moved"),
    [
        (
            HubOutcome(REPO, "t", before=A, main=A),
            f"the Hub is unchanged (main at {A}; no tag t)",
            False,
        ),
        (
            HubOutcome(REPO, "t", created_repo=True, before=A, main=A),
            f"the Hub repo {REPO} was created by this publish; the Hub holds no release "
            f"(main at {A}; no tag t)",
            True,
        ),
        (
            HubOutcome(REPO, "t", before=A, main=B),
            f"the Hub's main is at commit {B} (it was at {A} when this publish began; this "
            "publish confirmed no commit of its own); no tag t",
            True,
        ),
        (
            HubOutcome(REPO, "t", before=A, commit=B, verified=True, restore_failed="why"),
            f"the Hub's main may point at the release commit {B} (verified), no tag t; it was "
            "not restored: why",
            True,
        ),
        (
            HubOutcome(REPO, "t", before=A, main=A, verified=True, tagged=A, tag_made=True),
            f"the Hub holds the new release (main and tag t at {A})",
            True,
        ),
        (
            HubOutcome(REPO, "t", before=A, main=A, verified=True, tagged=A),
            f"the Hub already held this release (main and tag t at {A})",
            False,
        ),
    ],
    ids=["unchanged", "repo-created", "moved-by-another", "main-unknown", "tagged", "held"],
)
def test_every_hub_outcome_is_told_as_it_is(outcome: HubOutcome, said: str, moved: bool) -> None:
    assert outcome.describe() == said
    assert outcome.moved is moved
