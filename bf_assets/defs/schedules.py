"""Schedules: the nightly release.

``release_schedule`` runs ``release_job`` (curate → blocking publish checks → publish) every
night at 03:00 UTC.  New job directories are ingested by the ``new_job_dirs`` sensor as they
land, so the release always curates every ingested partition.  Publishing is idempotent: a
night with nothing new makes no commit.  Like every schedule it starts ``STOPPED``
(``dagster schedule start release_schedule`` or the UI).
"""

from __future__ import annotations

import dagster as dg

from bf_assets.defs.jobs import release_job

release_schedule = dg.ScheduleDefinition(
    name="release_schedule",
    job=release_job,
    cron_schedule="0 3 * * *",
    execution_timezone="UTC",
    description="Nightly release: curate every ingested job, run the publish gate, publish.",
)
