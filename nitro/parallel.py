"""Choosing where nitro's parallel loops run. Every independent loop (cross-validation of the
learners, temporary targets of CV-DFS, evaluation targets) goes through joblib without fixing a
backend, so the user's choice applies: local processes (joblib's default, ``loky``),
``threading``, or a cluster through ``dask`` or ``ray`` (extras ``nitro[dask]``, ``nitro[ray]``).

A cluster backend connects to ``address`` (a dask scheduler ``tcp://host:8786``, a Ray cluster
``ray://host:10001`` or ``auto``), else to ``$DASK_SCHEDULER_ADDRESS`` / ``$RAY_ADDRESS``, else
starts a local one with worker processes for the duration of the context."""
from __future__ import annotations

import contextlib
import os

import joblib

BACKENDS = ("loky", "threading", "multiprocessing", "dask", "ray")


def parallel_backend(name: str | None, n_jobs: int | None = None, address: str | None = None):
    """A context in which nitro's joblib loops use backend ``name`` (None: joblib's choice)."""
    if name is None:
        return contextlib.nullcontext()
    if name not in BACKENDS:
        raise ValueError(f"unknown parallel backend {name!r}; known: {', '.join(BACKENDS)}")
    if address and name not in ("dask", "ray"):
        raise ValueError(f"a cluster address is for the dask and ray backends, not {name!r}")
    stack = contextlib.ExitStack()
    try:
        if name == "dask":
            _dask_client(stack, address, n_jobs)
        elif name == "ray":
            _ray_runtime(stack, address, n_jobs)
    except ImportError as exc:
        stack.close()
        raise ValueError(f"the {name!r} backend needs the {name} package ({exc.name} is not installed): "
                         f"pip install 'nitro[{name}]'") from None
    # a cluster backend spreads a loop over all its workers unless told otherwise
    stack.enter_context(joblib.parallel_config(backend=name, n_jobs=n_jobs or (-1 if name in ("dask", "ray") else None)))
    return stack


def _dask_client(stack: contextlib.ExitStack, address: str | None, n_jobs: int | None):
    """A dask.distributed client of the scheduler at ``address``, or of a LocalCluster of
    single-threaded worker processes (one per core, or ``n_jobs``)."""
    import dask
    from dask.distributed import Client, LocalCluster

    address = address or dask.config.get("scheduler-address", None)
    if address:
        stack.enter_context(Client(address))
        return
    workers = n_jobs if n_jobs and n_jobs > 0 else os.cpu_count() or 1
    cluster = stack.enter_context(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                               dashboard_address=None))
    stack.enter_context(Client(cluster))


def _ray_runtime(stack: contextlib.ExitStack, address: str | None, n_jobs: int | None):
    """Ray's joblib backend on the cluster at ``address`` (or ``$RAY_ADDRESS``), else on a local
    runtime started here (and stopped at the end); one already initialised is used as it is."""
    import ray
    from ray.util.joblib import register_ray

    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS") or None
        local = {} if address else {"num_cpus": n_jobs if n_jobs and n_jobs > 0 else os.cpu_count() or 1,
                                    "include_dashboard": False}
        ray.init(address=address, log_to_driver=False, **local)
        stack.callback(ray.shutdown)
    register_ray()
