"""The Hub path real Parquet takes: Git LFS, driven by the real huggingface_hub client.

The test server answers ``lfs`` at preupload for the paths ``.gitattributes`` marks (every
``*.parquet``), so shards go through the LFS batch API and a PUT each; the commit names them
by ``lfsFile`` (sha256 oid), never inline.  ``HF_HUB_DISABLE_XET=1`` (``client_env``) makes
the client take the LFS path instead of Xet.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hubserver import HubServer
from test_publish_hub import REPO, WRITE, bundles, commits, hub, server, target  # noqa: F401

from bf_assets.publish.bundle import Bundle


def shards(b: Bundle) -> dict[str, str]:
    return {f.path: f.sha256 for f in b.files if f.path.endswith(".parquet")}


def commit_lines(srv: HubServer) -> list[dict[str, object]]:
    assert len(srv.state.commit_bodies) == 1
    return srv.state.commit_bodies[0]


def test_parquet_shards_go_through_lfs_batch_and_upload(
    hub: HubServer,  # noqa: F811
    bundles: tuple[Bundle, Bundle],  # noqa: F811
) -> None:
    one, _ = bundles
    res = target(hub).publish(one.path, one.tag)
    want = shards(one)
    assert want and res.changed
    # one batch request naming every shard, one accepted PUT per shard
    assert len(hub.requests("POST", r"\.git/info/lfs/objects/batch$")) == 1
    assert sorted(o for batch in hub.state.lfs_batches for o in batch) == sorted(want.values())
    assert sorted(hub.state.lfs_puts) == sorted(want.values())
    puts = hub.requests("PUT", r"^/_lfs/upload/")
    assert len(puts) == len(want) and all(r.status == 200 for r in puts)
    assert not any(r.authorized for r in puts)  # a presigned URL: the token stays with the Hub
    assert len(hub.requests("POST", r"/info/lfs/objects/verify$")) == len(want)
    # the commit names the shards by lfsFile, and carries no Parquet inline
    lines = commit_lines(hub)
    lfs = {x["value"]["path"]: x["value"] for x in lines if x["key"] == "lfsFile"}  # type: ignore[index]
    inline = {x["value"]["path"] for x in lines if x["key"] == "file"}  # type: ignore[index]
    assert {p: v["oid"] for p, v in lfs.items()} == want
    assert all(v["algo"] == "sha256" for v in lfs.values())
    assert not any(p.endswith(".parquet") for p in inline) and inline  # the card etc. stay regular
    # stored as LFS: the bytes resolve, the tree entries carry the lfs block
    repo = hub.repo(REPO)
    c = repo.commits[res.commit]
    assert c.lfs == set(want)
    for p, sha in want.items():
        assert (
            hashlib.sha256(c.files[p]).hexdigest()
            == sha
            == hashlib.sha256((one.path / p).read_bytes()).hexdigest()
        )
    from huggingface_hub import HfApi

    infos = HfApi(endpoint=hub.url, token=WRITE).get_paths_info(
        REPO, sorted(want), repo_type="dataset", revision=res.commit
    )
    assert {i.path: i.lfs.sha256 for i in infos if i.lfs is not None} == want
    assert all(i.lfs.size == i.size == (one.path / i.path).stat().st_size for i in infos)
    assert res.verified and repo.tags[one.tag][0] == res.commit


def test_republishing_unchanged_uploads_nothing_and_commits_nothing(
    hub: HubServer,  # noqa: F811
    bundles: tuple[Bundle, Bundle],  # noqa: F811
) -> None:
    one, _ = bundles
    first = target(hub).publish(one.path, one.tag)
    batches, puts = len(hub.state.lfs_batches), len(hub.requests("PUT"))
    again = target(hub).publish(one.path, one.tag)
    assert not again.changed and again.commit == first.commit and commits(hub) == 2
    assert len(hub.state.lfs_batches) == batches and len(hub.requests("PUT")) == puts
    assert len(hub.requests("POST", r"/commit/")) == 1


def test_a_changed_release_uploads_only_the_changed_shards(
    hub: HubServer,  # noqa: F811
    bundles: tuple[Bundle, Bundle],  # noqa: F811
) -> None:
    one, two = bundles
    first = target(hub).publish(one.path, one.tag)
    uploaded = list(hub.state.lfs_puts)
    second = target(hub).publish(two.path, two.tag)
    new = {sha for sha in shards(two).values() if sha not in set(shards(one).values())}
    assert new and set(shards(two).values()) - new  # some shards changed, some did not
    assert sorted(hub.state.lfs_puts[len(uploaded) :]) == sorted(new)
    repo = hub.repo(REPO)
    assert second.changed and repo.commits[second.commit].parent == first.commit
    assert repo.commits[second.commit].lfs == set(shards(two))
    assert repo.tags[two.tag][0] == second.commit and repo.tags[one.tag][0] == first.commit


def test_the_server_refuses_content_that_does_not_match_its_oid(
    hub: HubServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The upload endpoint checks sha256 and size; a commit may only name stored objects."""
    import httpx2
    from huggingface_hub import HfApi, hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi(endpoint=hub.url, token=WRITE)
    api.create_repo(REPO, repo_type="dataset", private=True)
    data = b"PAR1" + bytes(100) + b"PAR1"
    oid = hashlib.sha256(data).hexdigest()
    batch = httpx2.post(
        f"{hub.url}/datasets/{REPO}.git/info/lfs/objects/batch",
        json={
            "operation": "upload",
            "transfers": ["basic"],
            "objects": [{"oid": oid, "size": len(data)}],
        },
        headers={"authorization": f"Bearer {WRITE}"},
    ).json()
    href = batch["objects"][0]["actions"]["upload"]["href"]
    assert httpx2.put(href, content=data[:-1] + b"X").status_code == 400
    with pytest.raises(HfHubHTTPError, match="422"):  # a pointer to an object never uploaded
        _commit_lfs_pointer(hub, oid, len(data))
    assert httpx2.put(href, content=data).status_code == 200
    assert hub.repo(REPO).lfs_objects[oid] == data
    _commit_lfs_pointer(hub, oid, len(data))  # now it resolves
    path = hf_hub_download(
        REPO, "data/x.parquet", repo_type="dataset", cache_dir=str(tmp_path), token=WRITE
    )
    assert Path(path).read_bytes() == data


def _commit_lfs_pointer(srv: HubServer, oid: str, size: int) -> None:
    import json

    import httpx2
    from huggingface_hub.utils import hf_raise_for_status

    body = "\n".join(
        json.dumps(x)
        for x in (
            {"key": "header", "value": {"summary": "m"}},
            {
                "key": "lfsFile",
                "value": {"path": "data/x.parquet", "algo": "sha256", "oid": oid, "size": size},
            },
        )
    )
    resp = httpx2.post(
        f"{srv.url}/api/datasets/{REPO}/commit/main",
        content=body.encode(),
        headers={"authorization": f"Bearer {WRITE}", "content-type": "application/x-ndjson"},
    )
    hf_raise_for_status(resp)


def test_load_dataset_by_tag_reads_the_lfs_stored_shards(
    hub: HubServer,  # noqa: F811
    bundles: tuple[Bundle, Bundle],  # noqa: F811
    tmp_path: Path,
) -> None:
    datasets = pytest.importorskip("datasets")
    one, two = bundles
    target(hub).publish(one.path, one.tag)
    target(hub).publish(two.path, two.tag)
    assert hub.repo(REPO).commits[hub.repo(REPO).tags[two.tag][0]].lfs == set(shards(two))
    for b in (one, two):
        dd = datasets.load_dataset(
            REPO, "rollouts", revision=b.tag, cache_dir=str(tmp_path / "c"), token=WRITE
        )
        assert {s: dd[s].num_rows for s in dd} == b.split_rows["rollouts"]
    ds = datasets.load_dataset(
        REPO,
        "rollouts",
        split="train",
        revision=one.tag,
        cache_dir=str(tmp_path / "c"),
        token=WRITE,
    )
    assert ds[0]["rollout"] == "demo-task__aaaa1111"
    # resolve/ of a shard answers the CDN-style redirect (the bytes come from /_lfs/objects/,
    # unless the client's blob cache, keyed by the sha256 etag, already holds them)
    resolved = hub.requests(path=r"/resolve/.*\.parquet$")
    assert resolved and all(r.status == 302 for r in resolved)
