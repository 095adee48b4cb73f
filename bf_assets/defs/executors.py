"""The executor of the code location.

By default each run chooses in its run config (``dg.multi_or_in_process_executor``):
``execution: config: multiprocess: {max_concurrent: N}`` (the default: one subprocess per
step) or ``execution: config: in_process: {}`` (every step in the run's process).  A
deployment that spreads steps over machines names its engine in ``$BF_EXECUTOR`` (read when
the definitions load, the same in every process of the deployment):

========================  ===================================================================
``BF_EXECUTOR``           executor
========================  ===================================================================
(unset)                   ``dg.multi_or_in_process_executor``: chosen per run (above)
``multiprocess``          ``dg.multiprocess_executor``: one subprocess per step (Dagster's
                          default; tune per run with ``execution: config: max_concurrent: N``)
``in_process``            ``dg.in_process_executor``: every step in the run worker process
``celery``                ``dagster_celery.celery_executor``: each step is a Celery task picked
                          up by a ``dagster-celery`` worker (see ``deploy/README.md``)
``k8s``                   ``dagster_k8s.k8s_job_executor``: each step is a Kubernetes Job
                          (needs ``dagster-k8s``; tune per run with ``max_concurrent``,
                          ``step_k8s_config``…)
========================  ===================================================================

For ``celery`` the broker is ``$BF_CELERY_BROKER`` (default ``redis://127.0.0.1:6379/0``) and
the result backend ``$BF_CELERY_BACKEND`` (default: the broker URL).  Both are defaults of the
executor's config, so a run can still override them, or pass ``config_source`` (e.g.
``{"task_default_queue": "gpu"}``) and ``include`` in ``execution: config:``.

Steps of one run land on different machines only if every process sees the same instance
(PostgreSQL, not SQLite), the same warehouse (``$BF_WAREHOUSE=s3://…``) and the run roots (a
shared volume), and runs with the same ``BF_*`` environment: see ``deploy/README.md``.
``dagster-celery`` (in the ``test`` extra) and ``dagster-k8s`` (in no extra) are optional and
imported only when selected.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import dagster as dg

EXECUTOR_ENV = "BF_EXECUTOR"
CELERY_BROKER_ENV = "BF_CELERY_BROKER"
CELERY_BACKEND_ENV = "BF_CELERY_BACKEND"
DEFAULT_CELERY_BROKER = "redis://127.0.0.1:6379/0"
EXECUTORS = ("multiprocess", "in_process", "celery", "k8s")


def celery_urls() -> tuple[str, str]:
    """``(broker, backend)`` from ``$BF_CELERY_BROKER`` / ``$BF_CELERY_BACKEND``."""
    broker = os.environ.get(CELERY_BROKER_ENV, "").strip() or DEFAULT_CELERY_BROKER
    backend = os.environ.get(CELERY_BACKEND_ENV, "").strip() or broker
    return broker, backend


CELERY_SHARED_QUEUE = "dagster"  # dagster-celery's default queue: every worker takes it


def celery_worker_argv(python: str, name: str, queue: str) -> list[str]:
    """The command line of one ``dagster-celery`` worker named ``name`` that takes the shared
    queue and its own ``queue``: one task at a time in the worker's own process (its pid is
    the proof of where a step ran), no prefetching, no chatter between workers."""
    return [
        python,
        "-m",
        "celery",
        "-A",
        "dagster_celery.app",
        "worker",
        "--pool=solo",
        "--loglevel=INFO",
        f"--hostname={name}@%h",
        f"--queues={CELERY_SHARED_QUEUE},{queue}",
        "--prefetch-multiplier=1",
        "--without-mingle",
        "--without-gossip",
        "--without-heartbeat",
    ]


def celery_executor_def() -> dg.ExecutorDefinition:
    """``dagster_celery.celery_executor`` with the broker and backend of the environment as
    defaults; ``include`` and ``config_source`` stay settable per run."""
    try:
        from dagster_celery import celery_executor
    except ImportError as exc:
        raise ImportError(
            f"{EXECUTOR_ENV}=celery needs dagster-celery: pip install 'dagster-celery[redis]' "
            "(the version that goes with dagster, e.g. 0.29.27 for dagster 1.13.27)"
        ) from exc

    broker, backend = celery_urls()
    schema = {
        "broker": dg.Field(str, default_value=broker, description="Celery broker URL."),
        "backend": dg.Field(str, default_value=backend, description="Celery result backend URL."),
        "include": dg.Field(
            [str], is_required=False, description="Modules every worker should import."
        ),
        "config_source": dg.Field(
            dg.Permissive(),
            is_required=False,
            description="Extra Celery settings, e.g. {task_default_queue: <queue>}.",
        ),
    }

    def to_celery_config(config: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in config.items() if v is not None}

    return celery_executor.configured(to_celery_config, config_schema=schema)


def k8s_executor_def() -> dg.ExecutorDefinition:
    """``dagster_k8s.k8s_job_executor`` (one Kubernetes Job per step), unconfigured: its settings
    go in the run config or the job's ``dagster-k8s/config`` tag."""
    try:
        from dagster_k8s import k8s_job_executor
    except ImportError as exc:
        raise ImportError(
            f"{EXECUTOR_ENV}=k8s needs dagster-k8s: pip install dagster-k8s "
            "(the version that goes with dagster, e.g. 0.29.27 for dagster 1.13.27)"
        ) from exc
    return k8s_job_executor


def select_executor(name: str | None = None) -> dg.ExecutorDefinition:
    """The executor named by ``name``, else ``$BF_EXECUTOR``, else the one each run's config
    chooses (``dg.multi_or_in_process_executor``, multiprocess unless the run says
    ``in_process``)."""
    choice = (name if name is not None else os.environ.get(EXECUTOR_ENV, "")).strip().lower()
    choice = choice.replace("-", "_")
    if not choice:
        return dg.multi_or_in_process_executor
    if choice == "multiprocess":
        return dg.multiprocess_executor
    if choice == "in_process":
        return dg.in_process_executor
    if choice == "celery":
        return celery_executor_def()
    if choice == "k8s":
        return k8s_executor_def()
    raise ValueError(
        f"{EXECUTOR_ENV}={choice!r} is not one of {', '.join(EXECUTORS)} "
        "(unset: each run's config chooses multiprocess or in_process)"
    )
