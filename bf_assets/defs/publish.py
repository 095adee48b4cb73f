"""The publish stage: the ``PublishTarget`` resource and the ``published_dataset`` asset.

``published_dataset`` verifies the bundle itself (every ``PUBLISH_*`` check and the
release verdict, ``bf_assets.publish.verify``) before writing anything, so a run that
selects only this asset, bypassing the blocking checks of ``checks.py``, still refuses bad
data.  It runs in the ``hf_hub`` pool so concurrent releases never race on a Hub repo.

Publishing goes Hub first, local last (:meth:`PublishTarget.publish`): a failed Hub push
leaves the local folder on its previous release, and the step's failure says where each
target stands (also as metadata: ``local_state``, ``hub_state``, ``hub_moved``).
"""

import os
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import orjson
import pandas as pd
from pydantic import Field

from bf_assets.curate.candidate import Candidate
from bf_assets.curate.frames import exported_candidates
from bf_assets.curate.scan import SCHEMA
from bf_assets.dataset.assemble import DatasetReview
from bf_assets.dataset.common import TrialKey
from bf_assets.defs.conventions import code_version, owners, published_metadata
from bf_assets.defs.io_managers import PartitionTables
from bf_assets.defs.resources import RunRoots, default_out_dir, env_path, local_warehouse
from bf_assets.findings import Finding, finding
from bf_assets.publish.bundle import BundleOptions
from bf_assets.publish.local import LocalFolderTarget, StagedRelease, check_targets
from bf_assets.publish.manifest import MANIFEST_PATH
from bf_assets.publish.shards import sha256_file
from bf_assets.publish.targets import PublishError, PublishResult
from bf_assets.publish.verify import GateReport, verify_bundle

PUBLISH_DIR_ENV = "BF_PUBLISH_DIR"
STAGING_DIR_ENV = "BF_STAGING_DIR"
HUB_REPO_ENV = "BF_HUB_REPO"
TOKEN_ENV = "HF_TOKEN"  # bf_assets.publish.hub.TOKEN_ENV (not imported: huggingface_hub is slow)
ALL_PARTITIONS = {"allow_missing_partitions": True}

#: The nightly release (``release_schedule``, 03:00 UTC) has published by 06:00 UTC: the
#: asset is stale when its last materialization is more than a day old at that hour.
RELEASE_FRESHNESS = dg.FreshnessPolicy.cron(
    deadline_cron="0 6 * * *", lower_bound_delta=timedelta(hours=24), timezone="UTC"
)


def _env(name: str, default: str | None) -> str | None:
    return os.environ.get(name) or default


def _env_path(name: str, default: str) -> str:
    return env_path(name) or default


def default_staging_dir() -> str:
    """``$BF_STAGING_DIR``, else ``staging/`` in a local ``$BF_WAREHOUSE``, else
    ``data/warehouse/staging``: bundles are derived data, like the warehouse tables."""
    if os.environ.get(STAGING_DIR_ENV):
        return _env_path(STAGING_DIR_ENV, "")
    return str(local_warehouse() / "staging")


class ReleasePublishError(PublishError):
    """A release that did not complete on every target: ``reason`` (the error, e.g. the
    Hub's status and message) and where each target stands (``local``, ``hub``; ``moved``:
    a Hub target differs from what it was).  The message says all of it."""

    def __init__(self, reason: str, *, local: str, hub: str | None, moved: bool = False) -> None:
        super().__init__("; ".join(x for x in (reason, hub, local) if x))
        self.reason = reason
        self.local = local
        self.hub = hub
        self.moved = moved

    def metadata(self) -> dict[str, dg.MetadataValue]:
        """Where each target stands, for the step failure (read by ``bf-assets release``)."""
        return {
            "publish_error": dg.MetadataValue.text(self.reason),
            "local_state": dg.MetadataValue.text(self.local),
            "hub_state": dg.MetadataValue.text(self.hub or ""),
            "hub_moved": dg.MetadataValue.bool(self.moved),
        }


class PublishTarget(dg.ConfigurableResource):
    """Where releases go: always a local folder, and a Hub dataset repo when ``hub_repo`` is set.

    The Hub token is ``hf_token``, set in the code location as ``dg.EnvVar("HF_TOKEN")`` (the
    UI shows the variable's name, never its value); unset, ``HF_TOKEN`` is read at publish time.
    """

    out_dir: str = Field(
        default_factory=lambda: _env_path(PUBLISH_DIR_ENV, str(default_out_dir())),
        description=f"Local dataset folder (default ${PUBLISH_DIR_ENV} or data/published).",
    )
    staging_dir: str = Field(
        default_factory=default_staging_dir,
        description="Where curated bundles are built (content-addressed sub-folders; default "
        f"${STAGING_DIR_ENV} or staging/ in the local warehouse).",
    )
    hub_repo: str | None = Field(
        default_factory=lambda: _env(HUB_REPO_ENV, None),
        description=f"Hub dataset repo id (default ${HUB_REPO_ENV}); none = local only.",
    )
    hf_token: str | None = Field(
        default=None,
        description=f"Hub write token: dg.EnvVar({TOKEN_ENV!r}); unset = ${TOKEN_ENV} at publish.",
    )
    private: bool = Field(default=True, description="Create the Hub repo private.")
    endpoint: str | None = Field(default=None, description="Hub endpoint (default the Hub).")
    license: str = Field(default="other", description="License id for the dataset card.")
    pretty_name: str = Field(default="Benchflow agent trajectories (bf-assets)")
    tag_prefix: str = Field(
        default="release-",
        description="Release tags: <prefix><YYYYMMDD-HHMMSS>-<digest12> (sortable by date).",
    )
    hub_max_attempts: int = Field(default=4, description="Attempts per Hub call (429/5xx).")
    hub_backoff_s: float = Field(default=1.0, description="First retry delay in seconds.")

    def bundle_options(self, plan_path: str | None = None) -> BundleOptions:
        previous = Path(self.out_dir) / MANIFEST_PATH  # the release now in the local folder
        return BundleOptions(
            previous_manifest=str(previous),
            pretty_name=self.pretty_name,
            license=self.license,
            repo_id=self.hub_repo,
            plan_path=plan_path,
            tag_prefix=self.tag_prefix,
        )

    def hub(self) -> Any:
        from bf_assets.publish.hub import HubTarget

        return HubTarget(
            self.hub_repo or "",
            private=self.private,
            endpoint=self.endpoint,
            max_attempts=self.hub_max_attempts,
            backoff_s=self.hub_backoff_s,
            token=self.hf_token,
        )

    def check(self) -> None:
        """Every target's preconditions (token, repo id, a writable folder), before anything
        is written to any of them (raises ``PublishError``)."""
        check_targets(self.out_dir, self.hub_repo, token=self.hf_token)

    def publish(self, bundle_dir: Path, tag: str) -> list[PublishResult]:
        """Hub first, local last: the local release is written and checked beside the
        folder, the Hub commit is made, verified and tagged, and only then does the folder
        switch to the new release.  Raises :class:`ReleasePublishError`, which says where
        each target stands, on any failure."""
        self.check()
        local = LocalFolderTarget(self.out_dir)
        unchanged = f"the local release in {local.path} is unchanged"
        try:
            with local.staged(bundle_dir, tag) as release:
                return self._publish_staged(release, bundle_dir, tag, unchanged)
        except ReleasePublishError:
            raise
        except PublishError as exc:  # the local stage failed: nothing was sent anywhere
            hub = "the Hub was not contacted" if self.hub_repo else None
            raise ReleasePublishError(str(exc), local=unchanged, hub=hub) from None

    def _publish_staged(
        self, release: StagedRelease, bundle_dir: Path, tag: str, unchanged: str
    ) -> list[PublishResult]:
        from bf_assets.publish.hub import HubPublishError

        results: list[PublishResult] = []
        hub = self.hub() if self.hub_repo else None
        if hub is not None:
            try:
                results.append(hub.publish(bundle_dir, tag))
            except HubPublishError as exc:
                raise ReleasePublishError(
                    exc.reason, local=unchanged, hub=exc.outcome.describe(), moved=exc.outcome.moved
                ) from None
            except PublishError as exc:  # before any request (the bundle, the token)
                raise ReleasePublishError(
                    str(exc), local=unchanged, hub="the Hub is unchanged"
                ) from None
        try:
            local_result = release.switch()
        except PublishError as exc:
            outcome = hub.outcome if hub is not None else None
            raise ReleasePublishError(
                str(exc),
                local=unchanged,
                hub=outcome.describe() if outcome is not None else None,
                moved=outcome.moved if outcome is not None else False,
            ) from None
        return [local_result, *results]


def load_candidates(
    run_roots: RunRoots, dataset: DatasetReview, raw: Mapping[str, pd.DataFrame]
) -> dict[TrialKey, Candidate]:
    """A candidate for each trial the dataset review exports (``curate.frames``)."""
    return exported_candidates(dataset, raw, run_roots.roots)


GATE_REPORT_COLUMN = "gate_report"  # curated_rollouts' verification of its bundle, on one row


def gate_report_json(report: GateReport) -> str:
    """A verification as JSON text (:func:`gate_report_from_json` reads it back)."""
    return orjson.dumps(
        {
            "findings": {c: [f.to_dict() for f in fs] for c, fs in report.findings.items()},
            "rows": report.rows,
            "n_excluded": report.n_excluded,
            "verdict": report.verdict,
            "reasons": report.reasons,
            "coverage": report.coverage,
        },
        default=str,
    ).decode()


def gate_report_from_json(text: str) -> GateReport:
    d = orjson.loads(text)
    return GateReport(
        findings={c: [Finding.from_dict(f) for f in fs] for c, fs in d["findings"].items()},
        rows=d["rows"],
        n_excluded=d["n_excluded"],
        verdict=d["verdict"],
        reasons=d["reasons"],
        coverage=d["coverage"],
    )


def _bytes_as_verified(bundle_dir: Path, index: pd.DataFrame) -> bool:
    """Whether the bundle holds exactly the files of its index, each with the sha256 the
    index gives (the bytes curated_rollouts verified)."""
    listed = {str(p): str(h) for p, h in zip(index["path"], index["sha256"], strict=True)}
    try:
        on_disk = {
            p.relative_to(bundle_dir).as_posix() for p in bundle_dir.rglob("*") if not p.is_dir()
        }
        return on_disk == set(listed) and all(
            sha256_file(bundle_dir / rel) == digest for rel, digest in listed.items()
        )
    except OSError:
        return False


def bundle_report(
    index: pd.DataFrame, dataset: DatasetReview, candidates: dict[TrialKey, Candidate]
) -> tuple[Path, str, GateReport]:
    """The bundle of an index table and every publish check on it: the verification
    curated_rollouts recorded with the index, when the bundle still holds exactly the bytes
    it verified; else a verification now (:func:`verify_index`)."""
    stored = (
        index[GATE_REPORT_COLUMN].dropna() if GATE_REPORT_COLUMN in index.columns else index[:0]
    )
    if len(stored) == 1 and index["bundle_dir"].nunique() == 1:
        bundle_dir = Path(str(index["bundle_dir"].iloc[0]))
        if _bytes_as_verified(bundle_dir, index):
            return bundle_dir, str(index["tag"].iloc[0]), gate_report_from_json(stored.iloc[0])
    return verify_index(index, dataset, candidates)


def verify_index(
    index: pd.DataFrame, dataset: DatasetReview, candidates: dict[TrialKey, Candidate]
) -> tuple[Path, str, GateReport]:
    """Locate the bundle of an index table and run every publish check on it."""
    if index.empty or index["bundle_dir"].nunique() != 1:
        report = GateReport()
        report.add(finding(SCHEMA, "curated_rollouts does not point at exactly one bundle"))
        return Path("."), "", report
    bundle_dir = Path(str(index["bundle_dir"].iloc[0]))
    tag = str(index["tag"].iloc[0])
    rollout_ids = {k: c.rollout_id for k, c in candidates.items()}
    report = verify_bundle(bundle_dir, dataset, rollout_ids)
    want = index.loc[index["path"] == MANIFEST_PATH, "sha256"]
    p = bundle_dir / MANIFEST_PATH
    if want.empty or not p.is_file() or sha256_file(p) != want.iloc[0]:
        report.add(finding(SCHEMA, "the bundle's manifest is not the one curated_rollouts wrote"))
    return bundle_dir, tag, report


@dg.asset(
    ins={
        "curated_rollouts": dg.AssetIn(),
        "review_report": dg.AssetIn(),
        "raw_trials": dg.AssetIn(metadata=ALL_PARTITIONS),
    },
    group_name="publish",
    kinds={"parquet", "huggingface"},
    pool="hf_hub",
    owners=owners(),
    code_version=code_version(__name__),
    metadata=published_metadata(),
    freshness_policy=RELEASE_FRESHNESS,
)
def published_dataset(
    context: dg.AssetExecutionContext,
    run_roots: RunRoots,
    publish_target: PublishTarget,
    curated_rollouts: pd.DataFrame,
    review_report: DatasetReview,
    raw_trials: PartitionTables,
) -> dg.MaterializeResult:
    """The release: Parquet shards, ``README.md`` card and ``meta/manifest.json`` in the local
    folder and, when configured, one commit + one tag on the Hub.  Refuses to publish a
    bundle that fails any publish check, whatever ran before it."""
    found = load_candidates(run_roots, review_report, raw_trials)
    bundle_dir, tag, report = bundle_report(curated_rollouts, review_report, found)
    if not report.ok:
        raise dg.Failure(
            description=f"refusing to publish: {report.summary()}",
            metadata={
                "failed_checks": dg.MetadataValue.json(report.failed),
                "findings": dg.MetadataValue.json(
                    [f.to_dict() for c in report.failed for f in report.findings.get(c, [])[:5]]
                ),
            },
        )
    try:
        results = publish_target.publish(bundle_dir, tag)
    except ReleasePublishError as exc:
        raise dg.Failure(description=f"publishing failed: {exc}", metadata=exc.metadata()) from None
    except PublishError as exc:
        raise dg.Failure(description=f"publishing failed: {exc}") from None
    meta: dict[str, dg.MetadataValue] = {
        "release_verdict": dg.MetadataValue.text(report.verdict),
        "tag": dg.MetadataValue.text(tag),
        "manifest_sha256": dg.MetadataValue.text(results[0].manifest_sha256),
        "rows": dg.MetadataValue.json(report.rows),
        "bundle": dg.MetadataValue.path(str(bundle_dir)),
        "path": dg.MetadataValue.path(results[0].location),
        "changed": dg.MetadataValue.bool(any(r.changed for r in results)),
        "targets": dg.MetadataValue.json([r.to_dict() for r in results]),
    }
    hub = next((r for r in results if r.target == "hub"), None)
    if hub is not None:
        meta["hub_commit"] = dg.MetadataValue.text(hub.commit or "")
        meta["hub_commit_url"] = dg.MetadataValue.url(hub.commit_url or hub.location)
        meta["hub_repo"] = dg.MetadataValue.url(hub.location)
    for r in results:
        context.log.info(
            f"published to {r.target} {r.location}: {'changed' if r.changed else 'unchanged'}"
            + (f", commit {r.commit}" if r.commit else "")
        )
    return dg.MaterializeResult(metadata=meta)
