"""Tuning on a busy machine: the histogram tuned twice per draw in one run, once on the
machine as it is and once beside a CPU-bound load that this benchmark starts and ends itself,
both scored on the same test inputs with times measured without the load.

The load (:class:`CPULoad`) is a plain busy loop in one child process per core other than the
first, each pinned to its core, each ending itself after ``limit`` seconds should this process
die, and killed by its pid when the loaded tuning ends. The tuner's OpenMP variants use every
core, so the load takes scheduler slices from one of their threads, as a second program does on
a laptop or CI runner.

Reported per draw: the % of the optimum of both tuned selectors and of every fixed variant, the
variant calls each tuning made (and those of a third, quiet tuning that re-times nothing: the
cost of measuring as before re-timing existed), each tuning's timing report
(:func:`nitro.noise.summarize`), and the agreement of the two label sets on the training inputs where the best variant (on the times
measured without the load) leads by more than ``LEAD``; and both label sets against a longer
quiet timing of the training inputs (``REFERENCE_POLICY``), which tells labels moved by the load
from labels that the quiet machine's own noise leaves uncertain."""
from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import time

import numpy as np

from ..benchmarks import histogram
from ..measurement import TimingPolicy
from ..metrics import fraction_of_optimum
from ..tuner import Autotuner
from .quality import choices, test_times

LEAD = 0.05
# the cost reference: the default policy without re-timing undecided inputs, which times each
# variant as the tuner did before it re-timed anything
NO_RETIMING = TimingPolicy(max_rounds=TimingPolicy().max_repeats)
# the reference timing of the training inputs: three times the default rounds, quiet
REFERENCE_POLICY = TimingPolicy(min_repeats=9, max_repeats=45, target_seconds=0.15)
_BUSY = "import time\nend = time.monotonic() + {limit}\nwhile time.monotonic() < end:\n    pass\n"


class CPULoad:
    """A busy loop on each of ``cores`` (default: every core this process may use but the
    first) while the ``with`` block runs; the children end themselves after ``limit`` seconds."""

    def __init__(self, cores: list[int] | None = None, limit: float = 900.0):
        allowed = sorted(os.sched_getaffinity(0))
        self.cores = list(cores) if cores is not None else allowed[1:]
        if not self.cores:
            raise ValueError("CPULoad: this process may use one core only, so there is no other core to load")
        unknown = set(self.cores) - set(allowed)
        if unknown:
            raise ValueError(f"CPULoad: cores {sorted(unknown)} are not among the cores this process may use {allowed}")
        self.limit = limit
        self.pids: list[int] = []
        self._procs: list[subprocess.Popen] = []

    def __enter__(self) -> "CPULoad":
        for core in self.cores:
            proc = subprocess.Popen([sys.executable, "-c", _BUSY.format(limit=self.limit)],
                                    preexec_fn=lambda c=core: os.sched_setaffinity(0, {c}))
            self._procs.append(proc)
            self.pids.append(proc.pid)
        time.sleep(0.2)   # the loops are spinning before the first measurement
        return self

    def __exit__(self, *exc):
        for proc in self._procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        self._procs.clear()
        return False


def _tune(train, ids, policy: TimingPolicy | None = None) -> tuple:
    cv = histogram.make_code_variant()
    tuner = Autotuner(cv.name, progress=False, policy=policy)
    tuner.set_training_args(train, ids=ids)
    start = time.perf_counter()
    tuner.tune([cv])
    return cv, tuner, time.perf_counter() - start, tuner.training_rows[cv.name]


def label_agreement(quiet_times: np.ndarray, loaded_times: np.ndarray, lead: float = LEAD,
                    clear_by: np.ndarray | None = None) -> dict:
    """Share of the inputs whose best variant on ``clear_by`` (default ``quiet_times``) leads
    the runner-up by more than ``lead`` and whose best variants on ``quiet_times`` and
    ``loaded_times`` are the same (inputs × variants, NaN = failed)."""
    q = _finite(quiet_times)
    ordered = np.sort(q if clear_by is None else _finite(clear_by), axis=1)
    clear = ordered[:, 1] > (1 + lead) * ordered[:, 0]
    same = np.argmin(q, axis=1) == np.argmin(_finite(loaded_times), axis=1)
    n = int(clear.sum())
    return {"n_inputs": n, "agree": int((same & clear).sum()),
            "share": float((same & clear).sum() / n) if n else None}


def _finite(times: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(times), times, np.inf)


def _side(cv, tuner, seconds, times, test) -> dict:
    return {"percent_of_optimum": 100 * fraction_of_optimum(times, choices(cv, test)),
            "variant_calls": tuner.counts["calls"], "variant_seconds": tuner.counts["seconds"],
            "wall_seconds": seconds, "timing": tuner.timing_report[cv.name]}


def _one_draw(n_train: int, n_test: int, seed: int, cores: list[int] | None) -> dict:
    (train, train_ids), (test, _) = histogram.train_test_inputs(n_train, n_test, seed)
    quiet_cv, quiet_tuner, quiet_s, quiet_rows = _tune(train, train_ids)
    plain = _tune(train, train_ids, NO_RETIMING)[1].counts["calls"]
    with CPULoad(cores) as load:
        loaded_cv, loaded_tuner, loaded_s, loaded_rows = _tune(train, train_ids)
    times = test_times(quiet_cv, test)
    reference = test_times(quiet_cv, train, REFERENCE_POLICY)
    names = quiet_cv.variant_names
    ok = np.isfinite(times).any(axis=1)
    times, test = times[ok], [t for t, k in zip(test, ok) if k]
    fixed = {v: 100 * fraction_of_optimum(times, np.full(len(test), i)) for i, v in enumerate(names)}
    matrix = lambda rows: np.array([r.time_vector(names) for r in rows], dtype=np.float64)
    return {"seed": seed, "n_test": len(test), "load_cores": load.cores,
            "quiet": _side(quiet_cv, quiet_tuner, quiet_s, times, test),
            "loaded": _side(loaded_cv, loaded_tuner, loaded_s, times, test),
            "calls_without_retiming": plain,
            "fixed_percent_of_optimum": fixed, "best_fixed_variant": max(fixed, key=fixed.get),
            "best_fixed_percent": max(fixed.values()),
            "label_agreement": label_agreement(matrix(quiet_rows), matrix(loaded_rows)),
            "reference": _against_reference(matrix(quiet_rows), matrix(loaded_rows), reference, names)}


def _against_reference(quiet: np.ndarray, loaded: np.ndarray, reference: np.ndarray, names) -> dict:
    """Both label sets against a longer quiet timing of the training inputs taken after the
    loaded tuning: their agreement where the reference (not the quiet tuning's own times) sees
    a lead above ``LEAD``, how often each is the reference's best there, and the inputs where
    they disagree (best variants and the reference's lead), to tell load from quiet noise."""
    ref = _finite(reference)
    best = np.argmin(ref, axis=1)
    ordered = np.sort(ref, axis=1)
    lead = ordered[:, 1] / ordered[:, 0] - 1.0
    clear = lead > LEAD
    q, lo = np.argmin(_finite(quiet), axis=1), np.argmin(_finite(loaded), axis=1)
    n = int(clear.sum())
    share = lambda hit: float((hit & clear).sum() / n) if n else None
    return {"n_inputs": n, "labels_agree": label_agreement(quiet, loaded, clear_by=reference)["share"],
            "quiet_right": share(q == best), "loaded_right": share(lo == best),
            "disagreements": [{"quiet": names[a], "loaded": names[b], "reference": names[c], "lead": float(d)}
                              for a, b, c, d, k in zip(q, lo, best, lead, clear) if k and a != b]}


def bench_noise(n_train: int = 48, n_test: int = 48, seed: int = 0, repeats: int = 3,
                cores: list[int] | None = None) -> dict:
    """Tune the histogram without and with the load on ``repeats`` draws (seeds ``seed, seed
    + 1, ...``); see the module doc."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    load_before = os.getloadavg()
    runs = [_one_draw(n_train, n_test, s, cores) for s in range(seed, seed + repeats)]
    loaded_ok = [r["loaded"]["percent_of_optimum"] >= 95.0 and
                 r["loaded"]["percent_of_optimum"] >= r["best_fixed_percent"] for r in runs]
    ref_clear = sum(r["reference"]["n_inputs"] for r in runs)
    pooled = lambda key: (sum((r["reference"][key] or 0) * r["reference"]["n_inputs"] for r in runs) / ref_clear
                          if ref_clear else None)
    agree = sum(r["label_agreement"]["agree"] for r in runs)
    clear = sum(r["label_agreement"]["n_inputs"] for r in runs)
    return {
        "machine": f"{platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "n_train": n_train, "n_test": n_test, "repeats": repeats, "lead": LEAD, "runs": runs,
        "loaded_draws_at_95_and_not_below_best_fixed": sum(loaded_ok),
        "label_agreement": agree / clear if clear else None,
        "reference": {"n_inputs": ref_clear, "labels_agree": pooled("labels_agree"),
                      "quiet_right": pooled("quiet_right"), "loaded_right": pooled("loaded_right")},
        "calls_ratio_loaded_to_quiet": sum(r["loaded"]["variant_calls"] for r in runs) /
        sum(r["quiet"]["variant_calls"] for r in runs),
        "quiet_calls_ratio_to_no_retiming": sum(r["quiet"]["variant_calls"] for r in runs) /
        sum(r["calls_without_retiming"] for r in runs),
    }


def format_noise(r: dict) -> str:
    lines = [f"histogram tuned without and with a busy loop on the other core(s), {r['n_train']} training and "
             f"{r['n_test']} test images per draw ({r['machine']}; load average before "
             f"{r['load_average_before'][0]:.2f}, after {r['load_average_after'][0]:.2f})",
             f"{'draw':<6}{'quiet %opt':>11}{'loaded %opt':>12}{'best fixed':>29}{'calls q/l':>16}"
             f"{'undecided q/l':>15}{'labels agree':>14}"]
    for run in r["runs"]:
        q, lo, a = run["quiet"], run["loaded"], run["label_agreement"]
        lines.append(f"{run['seed']:<6}{q['percent_of_optimum']:>10.1f}%{lo['percent_of_optimum']:>11.1f}%"
                     f" {run['best_fixed_variant']:>21} {run['best_fixed_percent']:>5.1f}%"
                     f"{q['variant_calls']:>8}/{lo['variant_calls']:<7}"
                     f"{q['timing']['undecided']:>7}/{lo['timing']['undecided']:<7}"
                     f"{a['agree']:>7}/{a['n_inputs']}")
    share = r["label_agreement"]
    lines.append(f"loaded draws at >= 95% and not below the best fixed variant: "
                 f"{r['loaded_draws_at_95_and_not_below_best_fixed']} of {r['repeats']}; labels agree where the "
                 f"best leads by > {100 * r['lead']:.0f}%: " + ("n/a" if share is None else f"{100 * share:.1f}%"))
    lines.append(f"quiet tuning's variant calls against the same tuning without re-timing undecided inputs: "
                 f"{r['quiet_calls_ratio_to_no_retiming']:.2f}x")
    ref, pct = r["reference"], lambda x: "n/a" if x is None else f"{100 * x:.1f}%"
    lines.append(f"against a longer quiet timing of the training inputs ({ref['n_inputs']} inputs whose best leads by "
                 f"> {100 * r['lead']:.0f}% there): labels agree {pct(ref['labels_agree'])}; quiet labels right "
                 f"{pct(ref['quiet_right'])}, loaded labels right {pct(ref['loaded_right'])}")
    return "\n".join(lines)
