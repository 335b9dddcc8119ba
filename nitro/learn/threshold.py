"""Threshold rules, after Futhark's threshold tuning: the simplest dispatch of all, comparing a
size with a threshold.

* :class:`ThresholdSelector` learns a rule on one input feature from a time matrix:
  ascending thresholds cut that feature's axis into intervals, each running one variant
  (variant ``labels[i]`` when the feature reaches ``i`` thresholds), chosen by dynamic
  programming over the feature's distinct values to maximise the % of optimum.
* :func:`tune_thresholds` tunes the thresholds of a *program* that itself compares sizes with
  named thresholds (``th("name", size)`` is ``size >= threshold``, Futhark's
  ``threshold <= size``): every comparison is logged, the candidate values of a threshold
  are only the distinct values it was compared with (plus ∞, "never"), each *execution path*
  (the sequence of comparison outcomes) of each dataset is timed once, and a path slower than
  ``timeout_factor`` × the dataset's best so far is cut off. The tuned rule is emitted as
  Python (:meth:`ThresholdResult.to_python`) and as a C header (:meth:`ThresholdResult.to_c_header`).
"""
from __future__ import annotations

import itertools
import json
import math
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .. import cuda
from ..measurement import TimingPolicy
from ..measurement_worker import TIMED_OUT, measure_isolated
from ..noise import Verdict
from .base import TimeSelector, slowdown


class ThresholdSelector(TimeSelector):
    """A rule ``feature ≥ threshold`` (at most ``max_intervals`` intervals, each with at least
    ``min_samples`` training inputs) on the one feature (of ``features``, default all) that
    fits the training times best."""

    def __init__(self, max_intervals: int = 3, min_samples: int = 5, features=None, max_candidates: int = 256):
        self.max_intervals = max_intervals
        self.min_samples = min_samples
        self.features = features
        self.max_candidates = max_candidates

    @staticmethod
    def _segment(x, gain, max_intervals, min_samples, max_candidates):
        """Best partition of the sorted distinct values of ``x`` into ≤ ``max_intervals``
        runs; ``gain``: (n, k) fraction of optimum. Candidate thresholds are distinct values
        of ``x``, at most ``max_candidates`` of them (quantiles of the distinct values).
        Returns (score, thresholds, labels)."""
        values, inv = np.unique(x, return_inverse=True)
        if len(values) > max_candidates:
            starts = np.unique(np.linspace(0, len(values), max_candidates, endpoint=False).astype(int))
            inv = np.searchsorted(starts, inv, side="right") - 1
            values = values[starts]
        m, k = len(values), gain.shape[1]
        G = np.zeros((m, k))
        np.add.at(G, inv, gain)
        cnt = np.bincount(inv, minlength=m)
        P = np.vstack([np.zeros(k), np.cumsum(G, axis=0)])     # prefix sums over distinct values
        C = np.concatenate([[0], np.cumsum(cnt)])
        # seg[i, j]: best gain of one run over distinct values i..j-1
        seg = (P[None, :, :] - P[:, None, :]).max(axis=2)
        lab = (P[None, :, :] - P[:, None, :]).argmax(axis=2)
        ok = (C[None, :] - C[:, None]) >= min(min_samples, len(x))
        seg = np.where(ok, seg, -np.inf)
        best = np.full((max_intervals + 1, m + 1), -np.inf)
        arg = np.zeros((max_intervals + 1, m + 1), dtype=int)
        best[0, 0] = 0.0
        for s in range(1, max_intervals + 1):
            cand = best[s - 1][:, None] + seg                  # (i, j)
            arg[s] = cand.argmax(axis=0)
            best[s] = cand.max(axis=0)
        s = int(best[:, m].argmax())
        cuts, j = [], m
        while s > 0:
            i = arg[s, j]
            cuts.append((i, j))
            j, s = i, s - 1
        cuts.reverse()
        labels = [int(lab[i, j]) for i, j in cuts]
        thresholds = [float(values[i]) for i, _ in cuts[1:]]
        # merge neighbouring runs that chose the same variant
        merged_t, merged_l = [], labels[:1]
        for t, l in zip(thresholds, labels[1:]):
            if l != merged_l[-1]:
                merged_t.append(t)
                merged_l.append(l)
        return float(best[:, m].max()), merged_t, merged_l

    def fit(self, X, times):
        X, times = self._start_fit(X, times)
        if self.max_intervals < 1:
            raise ValueError("max_intervals must be at least 1")
        gain = 1.0 / slowdown(times)
        cols = range(X.shape[1]) if self.features is None else list(self.features)
        best = None
        for f in cols:
            score, thr, labels = self._segment(X[:, f], gain, self.max_intervals, self.min_samples,
                                               self.max_candidates)
            if best is None or score > best[0] + 1e-12:
                best = (score, f, thr, labels)
        _, self.feature_, self.thresholds_, self.labels_ = best
        return self

    def predict(self, X):
        X = self._check_X(X)
        return np.asarray(self.labels_)[np.searchsorted(self.thresholds_, X[:, self.feature_], side="right")]

    def export(self):
        return "intervals", {"feature": int(self.feature_), "thresholds": list(self.thresholds_),
                             "labels": [int(v) for v in self.labels_]}


# -- Futhark's threshold tuning of a program ------------------------------------------------------
class Thresholds:
    """What a tunable program compares sizes with: ``th(name, size)`` returns
    ``size >= threshold[name]`` and logs the comparison (the execution path)."""

    def __init__(self, values: dict[str, float]):
        self.values = dict(values)
        self.path: list[tuple[str, float, bool]] = []

    def __call__(self, name: str, size) -> bool:
        if name not in self.values:
            raise KeyError(f"unknown threshold {name!r}; known: {sorted(self.values)}")
        size = float(size)
        outcome = size >= self.values[name]
        self.path.append((name, size, outcome))
        return outcome


Path = tuple


def _time_path(program, args, config, policy: TimingPolicy, warm: bool = False):
    """Warm-up call (which logs the path; skipped when ``warm``), then timed calls under
    ``policy``: (median seconds, path of the warm-up)."""
    th = Thresholds(config)
    if not warm:
        program(th, *args)
    path = tuple(th.path)
    samples, spent = [], 0.0
    while len(samples) < policy.max_repeats:
        start = time.perf_counter()
        program(Thresholds(config), *args)
        samples.append(time.perf_counter() - start)
        spent += samples[-1]
        if len(samples) >= policy.min_repeats and spent >= policy.target_seconds:
            break
    return float(np.median(samples)), path


class _Logging(Thresholds):
    """Appends each comparison to a file as it happens (one JSON line, unbuffered), so that a
    run killed at its deadline still tells which path it was on."""

    def __init__(self, values, fd: int):
        super().__init__(values)
        self.fd = fd

    def __call__(self, name, size):
        outcome = super().__call__(name, size)
        os.write(self.fd, (json.dumps([name, float(size), outcome]) + "\n").encode())
        return outcome


def _run_isolated(program, args, config, policy, deadline: float):
    """(seconds or inf, path, note) of one path timed in a forked worker
    (:func:`nitro.measurement_worker.measure_isolated`) killed at ``deadline`` seconds."""
    with tempfile.TemporaryFile() as log:
        def measure(names, slot, guard):      # in the worker
            try:
                program(_Logging(config, log.fileno()), *args)                # warm-up, logs its path
                seconds, _ = _time_path(program, args, config, TimingPolicy(1, policy.min_repeats, policy.max_repeats,
                                                                            policy.target_seconds), warm=True)
                return {names[0]: seconds}, {}, Verdict(names[0], math.nan, math.nan, "decided")
            except BaseException as exc:  # the program's failure, reported as its note
                return {}, {names[0]: f"{type(exc).__name__}: {exc}"}, Verdict(None, math.nan, math.nan, "decided")

        times, failed, _ = measure_isolated(measure, ["program"], deadline)
        log.seek(0)
        lines = log.read().decode().split("\n")[:-1]        # a line cut by the kill is dropped
    path = tuple((name, size, outcome) for name, size, outcome in map(json.loads, lines))
    if "program" not in failed:
        return times["program"], path, ""
    note = failed["program"]
    return math.inf, path, "timeout" if note == TIMED_OUT.format(deadline) else note


def _run(program, args, config, policy, deadline: float, isolate: bool):
    """(seconds or inf, path, note). Isolated runs happen in a forked process that is killed at
    ``deadline`` seconds (Futhark's timeout), the path being the comparisons it made until
    then; in-process runs are cut after the warm-up when it alone exceeded the deadline. A
    process that has loaded the CUDA driver never forks (a forked child cannot use CUDA): its
    runs are in-process."""
    if isolate and not cuda.driver_loaded():
        return _run_isolated(program, args, config, policy, deadline)
    th = Thresholds(config)
    start = time.perf_counter()
    try:
        program(th, *args)
    except Exception as exc:
        return math.inf, tuple(th.path), f"{type(exc).__name__}: {exc}"
    if time.perf_counter() - start > deadline:
        return math.inf, tuple(th.path), "timeout"
    seconds, _ = _time_path(program, args, config, policy, warm=True)
    return seconds, tuple(th.path), ""


def _predict_path(observed: Sequence[Path], config: dict[str, float]) -> Path | None:
    """The path ``config`` takes on a dataset whose observed paths are ``observed``, or None
    when it leaves them (a deterministic program repeats a comparison sequence exactly)."""
    prefix: tuple = ()
    known = set(observed)
    while True:
        if prefix in known:
            return prefix
        ext = next((p for p in observed if len(p) > len(prefix) and p[:len(prefix)] == prefix), None)
        if ext is None:
            return None
        name, size, _ = ext[len(prefix)]
        prefix = prefix + ((name, size, size >= config[name]),)


@dataclass
class ThresholdResult:
    thresholds: dict[str, float]
    total_seconds: float
    intervals: dict[str, tuple[float, float]]        # optimal range of each threshold (others fixed)
    timings: list[tuple[str, Path, float, str]]      # (dataset, path, seconds, note) — one per path
    candidates: dict[str, list[float]]
    per_dataset: dict[str, float] = field(default_factory=dict)   # time of the chosen path

    def to_python(self, name: str = "thresholds") -> str:
        """The rule as a Python module: a dict and one ``use_<threshold>(size)`` per threshold."""
        lines = [f'"""Thresholds tuned by nitro for {name}: run the guarded version when size >= threshold."""',
                 "THRESHOLDS = {" + ", ".join(f"{k!r}: {_py(v)}" for k, v in self.thresholds.items()) + "}", ""]
        for k in self.thresholds:
            lines += ["", f"def use_{_ident(k)}(size):", f"    return size >= THRESHOLDS[{k!r}]", ""]
        return "\n".join(lines)

    def to_c_header(self, name: str = "thresholds") -> str:
        """The rule as a C header: ``NITRO_THRESHOLD_<NAME>`` and ``nitro_use_<name>(size)``. Its
        include guard holds a digest of ``name`` as given, so that two programs whose names map to
        one identifier (``conv-a``, ``CONV_A``) do not silently skip one another's header."""
        import hashlib
        digest = hashlib.sha256(name.encode()).hexdigest()[:8].upper()
        guard = f"NITRO_{_ident(name).upper()}_{digest}_H"
        lines = [f"/* Thresholds tuned by nitro for {name}: run the guarded version when size >= threshold. */",
                 f"#ifndef {guard}", f"#define {guard}", "#include <math.h>", ""]
        for k, v in self.thresholds.items():
            macro = f"NITRO_THRESHOLD_{_ident(k).upper()}"
            lines += [f"#define {macro} {('INFINITY' if math.isinf(v) else repr(float(v)))}",
                      f"static inline int nitro_use_{_ident(k)}(double size) {{ return size >= {macro}; }}", ""]
        lines.append(f"#endif /* {guard} */")
        return "\n".join(lines) + "\n"


def _py(v: float) -> str:
    return 'float("inf")' if math.isinf(v) else repr(float(v))


def _ident(name: str) -> str:
    out = re.sub(r"\W", "_", name)
    return out if out and not out[0].isdigit() else "_" + out


def tune_thresholds(program: Callable, datasets: Sequence, defaults: dict[str, float], ids=None,
                    policy: TimingPolicy | None = None, timeout_factor: float = 4.0, min_timeout: float = 0.2,
                    max_seconds: float = 60.0, isolate: bool = True, max_configurations: int = 10000) -> ThresholdResult:
    """Tune the named thresholds of ``program(th, *args)`` over ``datasets`` (argument tuples);
    see the module docstring. ``defaults``: threshold name → starting value (its first path).
    ``isolate``: time each path in a forked process killed at its deadline (in-process once this
    process has loaded the CUDA driver, which a forked child cannot use)."""
    policy = policy or TimingPolicy(warmup=1, min_repeats=3, max_repeats=5, target_seconds=0.02)
    datasets = [d if isinstance(d, tuple) else (d,) for d in datasets]
    ids = [str(i) for i in ids] if ids is not None else [str(i) for i in range(len(datasets))]
    if len(ids) != len(datasets) or not datasets:
        raise ValueError("tune_thresholds needs datasets and one id per dataset")
    if not (max_seconds > 0 and min_timeout > 0 and timeout_factor > 0):
        raise ValueError(f"tune_thresholds' time-outs must be positive: max_seconds={max_seconds}, "
                         f"min_timeout={min_timeout}, timeout_factor={timeout_factor}")
    names = list(defaults)
    observed: list[dict[Path, float]] = [dict() for _ in datasets]
    wall: list[float] = [math.inf] * len(datasets)      # best wall time of a timing run so far
    timings: list[tuple[str, Path, float, str]] = []

    def candidates():
        vals = {n: set() for n in names}
        for obs in observed:
            for path in obs:
                for name, size, _ in path:
                    vals[name].add(size)
        return {n: sorted(vals[n]) + [math.inf] for n in names}

    def time_one(d, config):
        deadline = max_seconds if not math.isfinite(wall[d]) else max(min_timeout, timeout_factor * wall[d])
        start = time.perf_counter()
        seconds, path, note = _run(program, datasets[d], config, policy, deadline, isolate)
        if path in observed[d]:
            raise RuntimeError(f"dataset {ids[d]}: path timed twice (program not deterministic?)")
        observed[d][path] = seconds
        timings.append((ids[d], path, seconds, note))
        if math.isfinite(seconds):
            wall[d] = min(wall[d], time.perf_counter() - start)

    for d in range(len(datasets)):
        time_one(d, dict(defaults))
    while True:
        cand = candidates()
        configs = list(itertools.islice(itertools.product(*[cand[n] for n in names]), max_configurations))
        new = False
        for d in range(len(datasets)):
            for values in configs:
                config = dict(zip(names, values))
                if _predict_path(list(observed[d]), config) is None:
                    time_one(d, config)
                    new = True
        if not new:
            break
    cand = candidates()
    configs = list(itertools.islice(itertools.product(*[cand[n] for n in names]), max_configurations))
    totals = []
    for values in configs:
        config = dict(zip(names, values))
        totals.append(sum(observed[d][_predict_path(list(observed[d]), config)] for d in range(len(datasets))))
    j = int(np.argmin(totals))
    best = dict(zip(names, configs[j]))
    intervals = {}
    for n in names:
        ok = [v for v in cand[n] if sum(observed[d][_predict_path(list(observed[d]), {**best, n: v})]
                                        for d in range(len(datasets))) <= totals[j]]
        intervals[n] = (min(ok), max(ok))
    per = {ids[d]: observed[d][_predict_path(list(observed[d]), best)] for d in range(len(datasets))}
    return ThresholdResult(best, float(totals[j]), intervals, timings, cand, per)
