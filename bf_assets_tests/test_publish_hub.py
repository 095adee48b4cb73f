"""``HubTarget`` against a Hub-compatible server on 127.0.0.1 (the real huggingface_hub client).

Never reaches the internet: the client is pointed at the test server through ``endpoint=``,
``HF_ENDPOINT`` and the module constants it reads at call time (``hubserver.client_env``).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hubserver import HubServer
from trialkit import build_trial, healthy_spec, oracle_spec

from bf_assets.publish.bundle import Bundle, bundle_reviews
from bf_assets.publish.hub import HubPublishError, HubTarget
from bf_assets.publish.manifest import MANIFEST_PATH
from bf_assets.publish.targets import PublishError


def client_env(mp: Any, url: str, home: str) -> None:
    """Point an already-imported huggingface_hub (and datasets) at the test server.

    Sets the env vars for anything imported later and patches the module constants the
    client reads at call time; ``HF_HUB_OFFLINE`` stays off (it would block 127.0.0.1 too).
    ``mp`` is a ``pytest.MonkeyPatch``: everything is undone with it.
    """
    mp.setenv("HF_ENDPOINT", url)
    mp.setenv("HF_HOME", home)
    mp.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    mp.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    mp.setenv("NO_PROXY", "127.0.0.1,localhost")
    mp.setenv("HF_UPDATE_DOWNLOAD_COUNTS", "0")  # datasets pings an S3 bucket otherwise
    mp.setenv("HF_HUB_DISABLE_XET", "1")  # the test server speaks Git LFS, not Xet
    mp.delenv("HF_HUB_OFFLINE", raising=False)
    mp.delenv("HF_TOKEN", raising=False)
    from huggingface_hub import constants

    mp.setattr(constants, "ENDPOINT", url)
    mp.setattr(
        constants, "HUGGINGFACE_CO_URL_TEMPLATE", url + "/{repo_id}/resolve/{revision}/{filename}"
    )
    mp.setattr(constants, "HF_URL_HOSTS", constants.HF_URL_HOSTS | {"127.0.0.1"})
    mp.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    mp.setattr(constants, "HF_HUB_OFFLINE", False)
    mp.setattr(constants, "HF_HUB_DISABLE_XET", True)
    try:
        import datasets.config as dconfig
    except ImportError:  # pragma: no cover - datasets is a test dependency
        return
    mp.setattr(dconfig, "HF_ENDPOINT", url)
    mp.setattr(dconfig, "HUB_DATASETS_URL", url + "/datasets/{repo_id}/resolve/{revision}/{path}")
    mp.setattr(dconfig, "HF_HUB_OFFLINE", False)
    mp.setattr(dconfig, "HF_DATASETS_OFFLINE", False)
    mp.setattr(dconfig, "HF_UPDATE_DOWNLOAD_COUNTS", False)


def block_other_hosts(mp: Any) -> list[str]:
    """Make any name lookup other than the loopback fail; returns the hosts that were tried."""
    tried: list[str] = []
    real = socket.getaddrinfo

    def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in ("127.0.0.1", "localhost", "::1"):
            tried.append(name)
            raise socket.gaierror(socket.EAI_NONAME, f"blocked in tests: {name}")
        return real(host, *args, **kwargs)

    mp.setattr(socket, "getaddrinfo", guarded)
    return tried


REPO = "bench/trajectories"
WRITE, READ = "hf_test_write_token_0123456789", "hf_test_read_token_0123456789"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubServer]:
    srv = HubServer().start()
    mp = pytest.MonkeyPatch()
    client_env(mp, srv.url, str(tmp_path_factory.mktemp("hf-home")))
    tried = block_other_hosts(mp)
    yield srv
    mp.undo()
    srv.close()
    assert tried == [], f"the client tried to reach {sorted(set(tried))}"


@pytest.fixture
def hub(server: HubServer, monkeypatch: pytest.MonkeyPatch) -> HubServer:
    server.state.reset()
    server.state.tokens.update({WRITE: "write", READ: "read"})
    monkeypatch.setenv("HF_TOKEN", WRITE)
    return server


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Bundle, Bundle]:
    """Two releases: one trial, then the same trial plus another task."""
    root = tmp_path_factory.mktemp("runs") / "jobs"
    root.mkdir()
    staging = tmp_path_factory.mktemp("staging")
    first = [build_trial(root), oracle_spec().write(root)]
    one = bundle_reviews([t.review() for t in first], staging)
    second = [*first, healthy_spec(task="other-task").write(root)]
    two = bundle_reviews([t.review() for t in second], staging)
    return one, two


def target(hub: HubServer, **kw: object) -> HubTarget:
    return HubTarget(REPO, endpoint=hub.url, backoff_s=0.0, **kw)  # type: ignore[arg-type]


def commits(hub: HubServer) -> int:
    return len(hub.repo(REPO).commits)


def test_first_publish_creates_a_private_repo_one_commit_and_a_tag(
    hub: HubServer, bundles: tuple[Bundle, Bundle]
) -> None:
    one, _ = bundles
    res = target(hub).publish(one.path, one.tag)
    repo = hub.repo(REPO)
    assert repo.private
    assert res.changed and res.verified and res.commit == repo.branches["main"]
    assert commits(hub) == 2  # "initial commit" + the release
    assert repo.tags[one.tag][0] == res.commit
    assert res.commit_url == f"{hub.url}/datasets/{REPO}/commit/{res.commit}"
    files = repo.commits[res.commit].files
    assert set(files) == {".gitattributes", *(f.path for f in one.files)}
    assert files[MANIFEST_PATH] == (one.path / MANIFEST_PATH).read_bytes()
    assert len(hub.requests("POST", r"/commit/")) == 1
    assert all(r.authorized for r in hub.requests(path=r"/api/datasets/"))


def test_republishing_unchanged_makes_no_commit(
    hub: HubServer, bundles: tuple[Bundle, Bundle]
) -> None:
    one, _ = bundles
    first = target(hub).publish(one.path, one.tag)
    again = target(hub).publish(one.path, one.tag)
    assert not again.changed and again.commit == first.commit
    assert commits(hub) == 2 and len(hub.requests("POST", r"/commit/")) == 1


def test_republishing_changed_makes_one_new_commit_and_tag(
    hub: HubServer, bundles: tuple[Bundle, Bundle]
) -> None:
    one, two = bundles
    first = target(hub).publish(one.path, one.tag)
    second = target(hub).publish(two.path, two.tag)
    repo = hub.repo(REPO)
    assert second.changed and second.commit != first.commit and commits(hub) == 3
    assert repo.commits[second.commit].parent == first.commit
    assert set(repo.tags) == {one.tag, two.tag}
    assert set(repo.commits[second.commit].files) == {
        ".gitattributes",
        *(f.path for f in two.files),
    }


def test_stale_remote_files_are_deleted_in_the_same_commit(
    hub: HubServer, bundles: tuple[Bundle, Bundle]
) -> None:
    one, _ = bundles
    target(hub).publish(one.path, one.tag)
    repo = hub.repo(REPO)
    head = repo.commits[repo.branches["main"]]
    stale = dict(head.files, **{"data/rollouts/train-00007-of-00009.parquet": b"old"})
    c = hub.state.new_commit(repo, head.oid, "manual", "", stale)
    repo.branches["main"] = c.oid
    res = target(hub).publish(one.path, one.tag)
    assert res.changed
    assert "data/rollouts/train-00007-of-00009.parquet" not in repo.commits[res.commit].files


@pytest.mark.parametrize(
    ("token", "rule", "message"),
    [
        ("hf_unknown_token_000000000000", None, "401"),
        (READ, None, "403"),
        (WRITE, ("/api/repos/create", 401), "401"),
        (WRITE, ("/commit/", 403), "403"),
    ],
)
def test_auth_failures_fail_fast_and_clearly(
    hub: HubServer,
    bundles: tuple[Bundle, Bundle],
    monkeypatch: pytest.MonkeyPatch,
    token: str,
    rule: tuple[str, int] | None,
    message: str,
) -> None:
    one, _ = bundles
    monkeypatch.setenv("HF_TOKEN", token)
    if rule is not None:
        hub.inject(rule[0], rule[1], times=99)
    with pytest.raises(PublishError, match=message) as err:
        target(hub).publish(one.path, one.tag)
    assert token not in str(err.value)
    repo = hub.state.repos.get(("datasets", REPO))
    assert repo is None or (len(repo.commits) == 1 and not repo.tags)


def test_missing_token_is_refused_before_any_request(
    hub: HubServer, bundles: tuple[Bundle, Bundle], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(PublishError, match="HF_TOKEN is not set"):
        target(hub).publish(bundles[0].path, bundles[0].tag)
    assert hub.requests() == []


def test_rate_limit_is_retried_with_retry_after(
    hub: HubServer, bundles: tuple[Bundle, Bundle]
) -> None:
    one, _ = bundles
    hub.inject("/commit/", 429, headers={"Retry-After": "0"}, times=2)
    hub.inject("/refs$", 429, headers={"Retry-After": "0"}, times=1)
    sleeps: list[float] = []
    res = target(hub, sleep=sleeps.append).publish(one.path, one.tag)
    assert res.changed and commits(hub) == 2 and hub.repo(REPO).tags[one.tag][0] == res.commit
    assert sleeps == [0.0, 0.0, 0.0]
    assert len([r for r in hub.requests("POST", "/commit/") if r.status == 429]) == 2


def test_persistent_server_errors_give_up_with_no_partial_release(
    hub: HubServer, bundles: tuple[Bundle, Bundle]
) -> None:
    one, _ = bundles
    hub.inject("/commit/", 500, times=99)
    with pytest.raises(PublishError, match="HTTP 500 after 3 attempt"):
        target(hub, max_attempts=3).publish(one.path, one.tag)
    assert commits(hub) == 1 and not hub.repo(REPO).tags
    assert len(hub.requests("POST", "/commit/")) == 3


def test_persistent_rate_limit_gives_up(hub: HubServer, bundles: tuple[Bundle, Bundle]) -> None:
    one, _ = bundles
    hub.inject("/commit/", 429, headers={"Retry-After": "0"}, times=99)
    with pytest.raises(PublishError, match="rate limited"):
        target(hub, max_attempts=2).publish(one.path, one.tag)
    assert commits(hub) == 1 and not hub.repo(REPO).tags


@pytest.mark.parametrize("drop", [True, False], ids=["connection-dropped", "500-after-commit"])
def test_lost_commit_response_makes_exactly_one_commit(
    hub: HubServer, bundles: tuple[Bundle, Bundle], drop: bool
) -> None:
    one, _ = bundles
    hub.inject("/commit/", 500, after=True, drop=drop)
    res = target(hub).publish(one.path, one.tag)
    assert res.changed and res.verified and commits(hub) == 2
    assert hub.repo(REPO).tags[one.tag][0] == res.commit == hub.repo(REPO).branches["main"]
    assert any("response lost" in n for n in res.notes)
    assert len(hub.requests("POST", "/commit/")) == 1


def test_lost_tag_response_is_recovered(hub: HubServer, bundles: tuple[Bundle, Bundle]) -> None:
    one, _ = bundles
    hub.inject("/tag/", 500, after=True, times=1)
    res = target(hub, max_attempts=1).publish(one.path, one.tag)
    assert hub.repo(REPO).tags[one.tag][0] == res.commit


def test_a_failed_tag_puts_main_back_and_the_next_run_publishes(
    hub: HubServer, bundles: tuple[Bundle, Bundle]
) -> None:
    """``main`` never stays on an untagged release: after the tag failed, a commit on top of
    the release commit puts back the files main held before."""
    one, _ = bundles
    hub.inject("/tag/", 500, times=2)
    with pytest.raises(HubPublishError, match="create tag") as err:
        target(hub, max_attempts=2).publish(one.path, one.tag)
    repo = hub.repo(REPO)
    initial = next(c for c in repo.commits.values() if c.parent is None)
    head = repo.commits[repo.branches["main"]]
    release = repo.commits[head.parent or ""]
    assert commits(hub) == 3 and not repo.tags
    assert release.parent == initial.oid and set(release.files) > set(initial.files)
    assert head.files == initial.files  # main holds what it held before the release
    outcome = err.value.outcome
    assert (outcome.before, outcome.commit, outcome.restored_by) == (
        initial.oid,
        release.oid,
        head.oid,
    )
    res = target(hub).publish(one.path, one.tag)
    assert res.changed and repo.tags[one.tag][0] == res.commit == repo.branches["main"]
    assert commits(hub) == 4


def test_a_public_repo_is_refused_when_private_is_configured(
    hub: HubServer, bundles: tuple[Bundle, Bundle]
) -> None:
    one, _ = bundles
    target(hub, private=False).publish(one.path, one.tag)
    assert not hub.repo(REPO).private
    with pytest.raises(PublishError, match="is public"):
        target(hub).publish(bundles[1].path, bundles[1].tag)
    assert commits(hub) == 2


def test_verification_failure_is_reported(hub: HubServer, bundles: tuple[Bundle, Bundle]) -> None:
    """A server that stores something else than was sent fails the publish, untagged, and
    main is put back."""
    one, _ = bundles
    hub.corrupt(MANIFEST_PATH)
    with pytest.raises(PublishError, match="verification failed"):
        target(hub).publish(one.path, one.tag)
    repo = hub.repo(REPO)
    initial = next(c for c in repo.commits.values() if c.parent is None)
    assert not repo.tags and repo.commits[repo.branches["main"]].files == initial.files


def test_server_down_is_a_clear_error(
    bundles: tuple[Bundle, Bundle], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    srv = HubServer().start()
    url = srv.url
    srv.close()
    monkeypatch.setenv("HF_TOKEN", WRITE)
    with pytest.raises(PublishError, match="cannot reach the Hub"):
        HubTarget(REPO, endpoint=url, max_attempts=2, backoff_s=0.0).publish(bundles[0].path, "t")


def test_load_dataset_from_the_server_by_tag(
    hub: HubServer, bundles: tuple[Bundle, Bundle], tmp_path: Path
) -> None:
    datasets = pytest.importorskip("datasets")
    one, _ = bundles
    target(hub).publish(one.path, one.tag)
    ds = datasets.load_dataset(
        REPO,
        "rollouts",
        split="train",
        revision=one.tag,
        cache_dir=str(tmp_path / "c"),
        token=WRITE,
    )
    assert ds.num_rows == 1 and ds[0]["rollout"] == "demo-task__aaaa1111"
    # rollouts: JSON text (what every datasets 4.x reads); trl_sft: objects (Arrow JSON)
    assert json.loads(ds[0]["tools"])[0]["function"]["name"] == "terminal"
    trl = datasets.load_dataset(
        REPO, "trl_sft", split="train", revision=one.tag, cache_dir=str(tmp_path / "c"), token=WRITE
    )
    assert trl[0]["tools"][0]["function"]["name"] == "terminal"
    # the card's recipe for a reader that cannot pass a revision: the tag's files by URL
    files = f"hf://datasets/{REPO}@{one.tag}/data/rollouts/train-*.parquet"
    by_url = datasets.load_dataset(
        "parquet", data_files={"train": files}, cache_dir=str(tmp_path / "u"), token=WRITE
    )
    assert by_url["train"]["rollout_id"] == ds["rollout_id"]


def test_release_job_publishes_to_the_hub_once(
    hub: HubServer, tmp_path: Path, runs_root: Path
) -> None:
    """Through Dagster: the same input released twice gives one Hub commit and one tag."""
    import dagster as dg
    from test_publish_dagster import ingest, make_defs, release

    build_trial(runs_root)
    d = make_defs(runs_root, tmp_path, hub_repo=REPO, endpoint=hub.url, hub_backoff_s=0.0)
    with dg.instance_for_test() as instance:
        ingest(d, runs_root, instance)
        first, second = release(d, instance), release(d, instance)
    assert first.success and second.success
    metas = [
        {k: v.value for k, v in e.materialization.metadata.items()}
        for r in (first, second)
        for e in r.get_asset_materialization_events()
        if e.materialization.asset_key == dg.AssetKey("published_dataset")
    ]
    assert metas[0]["hub_commit"] == metas[1]["hub_commit"] == hub.repo(REPO).branches["main"]
    assert metas[0]["changed"] is True and metas[1]["changed"] is False
    assert commits(hub) == 2 and list(hub.repo(REPO).tags) == [metas[0]["tag"]]
    assert WRITE not in repr(metas)


def test_cli_release_reports_a_hub_failure_as_an_error(
    hub: HubServer,
    tmp_path: Path,
    runs_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``bf-assets release --hub-repo``: a rejected token is exit 2 with the reason, never 0/3."""
    from bf_assets.cli.main import main

    build_trial(runs_root)
    for name, value in {
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
        "BF_RUN_ROOTS": "",
        "BF_WAREHOUSE": str(tmp_path / "warehouse"),
        "BF_STAGING_DIR": str(tmp_path / "staging"),
        "HF_TOKEN": "hf_revoked_token_0000000000",
    }.items():
        monkeypatch.setenv(name, value)
    # no endpoint is configured: the client's own default (HF_ENDPOINT) is the test server
    argv = ["release", "--runs", str(runs_root), "--out", str(tmp_path / "out"), "--hub-repo", REPO]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "401" in err and "hf_revoked_token" not in err
    assert ("datasets", REPO) not in hub.state.repos
