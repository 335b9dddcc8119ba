"""Choosing where nitro's parallel loops run. Every independent loop (cross-validation of the
learners, temporary targets of CV-DFS) goes through joblib without fixing a backend, so the
user's choice applies: local processes (joblib's default, ``loky``), ``threading``, or a
cluster through ``dask`` or ``ray`` when those are installed."""
from __future__ import annotations

import contextlib

import joblib

BACKENDS = ("loky", "threading", "multiprocessing", "dask", "ray")


def parallel_backend(name: str | None, n_jobs: int | None = None):
    """A context in which nitro's joblib loops use backend ``name`` (None: joblib's choice)."""
    if name is None:
        return contextlib.nullcontext()
    if name not in BACKENDS:
        raise ValueError(f"unknown parallel backend {name!r}; known: {', '.join(BACKENDS)}")
    stack = contextlib.ExitStack()
    try:
        if name == "ray":
            from ray.util.joblib import register_ray
            register_ray()
        elif name == "dask":
            from dask.distributed import Client
            stack.enter_context(Client(processes=False))   # a local cluster unless one is running
    except ImportError as exc:
        raise ValueError(f"the {name!r} backend needs the {name} package ({exc.name} is not installed)") from None
    stack.enter_context(joblib.parallel_config(backend=name, n_jobs=n_jobs))
    return stack
