"""How sure a measurement is: per-input verdicts on the timed samples, and the tuning report
that says when the machine was too noisy for the gaps the tuner had to resolve.

Each variant's time is the fastest of its samples: interference (another process on the core,
an OpenMP thread that lost its scheduler slice) only ever adds time, so the minimum is the
estimate least moved by it, and one preempted sample cannot move it at all. How far that
estimate can still be off is read from the samples themselves: the *spread* of a variant is
how much the fastest sample of the first half of its samples and that of the second half
disagree, relative to the faster one. A slow period that hit one half moves one half's minimum;
when both halves agree, more samples would not change the estimate much.

An input is *decided* when every other variant is slower than the best by more than the spread
of the two (or is within ``tie`` of it with spreads below ``tie``); a *tie* when the runner-up
is within ``tie`` of the best and that is known (a tie is not a label to learn: its regret
weight, ``t_second / t_best - 1``, is below ``tie`` and the learner barely counts it);
*undecided* otherwise: the gap is smaller than the noise. The measurement re-times the
undecided variants (:func:`nitro.measurement.measure_variants`) until they are decided or
its rounds run out.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Mapping, Sequence

import numpy as np

TOO_NOISY_SHARE = 0.1   # more undecided inputs than this: the tuning report warns


class NoisyMachineWarning(UserWarning):
    """Tuning measured on a machine too noisy for the gaps between its variants."""


def spread(samples: Sequence[float]) -> float:
    """Relative disagreement of the fastest sample of each half of ``samples`` (in the order
    taken); NaN with fewer than two samples (nothing to compare)."""
    if len(samples) < 2:
        return math.nan
    half = len(samples) // 2
    a, b = min(samples[:half]), min(samples[half:])
    low = min(a, b)
    return abs(a - b) / low if low > 0 else 0.0


@dataclass
class Verdict:
    """What the samples of one input say: the best variant, the runner-up's relative ``gap``
    (of an undecided input, that of the nearest variant not separated from the best, so that gap
    and noise say why it is undecided), the ``noise`` it is judged against (the larger spread of
    the two), the variants not yet
    separated from the best (``contenders``, best first) and the ``status``: ``"decided"``,
    ``"tie"`` or ``"undecided"``."""

    best: str | None
    gap: float
    noise: float
    status: str
    contenders: list[str] = field(default_factory=list)
    rounds: int = 0

    def to_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}


def judge(samples: Mapping[str, Sequence[float]], tie: float) -> Verdict:
    """The verdict on one input from each variant's timed samples (variants without samples
    are left out). A spread that cannot be estimated (one sample) counts as no noise."""
    timed = {v: s for v, s in samples.items() if len(s)}
    if not timed:
        return Verdict(None, math.nan, math.nan, "decided")
    best_time = {v: min(s) for v, s in timed.items()}
    noise_of = {v: (0.0 if math.isnan(x) else x) for v, x in ((v, spread(s)) for v, s in timed.items())}
    best = min(best_time, key=best_time.get)
    rounds = len(timed[best])
    if len(timed) == 1:
        return Verdict(best, math.inf, noise_of[best], "decided", [], rounds)
    others = sorted((v for v in timed if v != best), key=best_time.get)
    unresolved = []
    for v in others:
        gap = best_time[v] / best_time[best] - 1.0 if best_time[best] > 0 else math.inf
        noise = max(noise_of[v], noise_of[best])
        if not (gap > noise or (gap < tie and noise < tie)):
            unresolved.append(v)
    runner = unresolved[0] if unresolved else others[0]     # undecided: the nearest one not separated
    gap = best_time[runner] / best_time[best] - 1.0 if best_time[best] > 0 else math.inf
    noise = max(noise_of[runner], noise_of[best])
    status = "undecided" if unresolved else ("tie" if gap < tie else "decided")
    return Verdict(best, gap, noise, status, [best] + unresolved if unresolved else [], rounds)


def summarize(verdicts: Sequence[Mapping], early_stopping: bool = False) -> dict:
    """The tuning report over the inputs measured (verdicts as :meth:`Verdict.to_dict`):
    how many were decided, ties or undecided, the median noise and gap of the undecided ones,
    whether that is too many (``too_noisy``, more than ``TOO_NOISY_SHARE`` of the inputs), and
    the advice (``early_stopping``: measured with early stopping, whose re-timing
    ``max_repeats`` caps, not ``max_rounds``)."""
    n = len(verdicts)
    status = [v["status"] for v in verdicts]
    undecided = [v for v in verdicts if v["status"] == "undecided"]
    noise = [v["noise"] for v in verdicts if v.get("noise") is not None]
    report = {
        "n_inputs": n, "decided": status.count("decided"), "ties": status.count("tie"),
        "undecided": len(undecided),
        "median_noise": float(np.median(noise)) if noise else None,
        "undecided_median_gap": float(np.median([v["gap"] for v in undecided if v.get("gap") is not None]))
        if undecided else None,
        "undecided_median_noise": float(np.median([v["noise"] for v in undecided if v.get("noise") is not None]))
        if undecided else None,
        "too_noisy": n > 0 and len(undecided) > TOO_NOISY_SHARE * n,
    }
    report["advice"] = advice(report, early_stopping)
    return report


def advice(report: Mapping, early_stopping: bool = False) -> str:
    """One sentence on what the report means and what to do (``early_stopping``: the inputs
    were measured with early stopping, whose undecided contenders get ``max_repeats`` rounds at
    most, so ``max_rounds`` would change nothing)."""
    if report["n_inputs"] == 0:
        return "no input was measured in this run"
    if not report["undecided"]:
        return "timings were steady enough for every gap between variants"
    what = (f"{report['undecided']} of {report['n_inputs']} inputs stayed undecided: their best variant leads "
            f"by a median {100 * report['undecided_median_gap']:.1f}% while repeated timings of one variant "
            f"disagree by {100 * report['undecided_median_noise']:.1f}%")
    if not report["too_noisy"]:
        return what + f"; few enough to learn around (at most {100 * TOO_NOISY_SHARE:.0f}% of the inputs)"
    rounds = ("(with early stopping they get max_repeats rounds at most: TimingPolicy(max_repeats=...), or tune "
              "without early_stopping, whose re-timing goes up to TimingPolicy(max_rounds=...))" if early_stopping
              else "(TimingPolicy(max_rounds=...))")
    return (what + ". The machine was too noisy for these gaps: tune again when other programs are not "
            f"running (check `uptime`), or on a dedicated or pinned core, or give undecided inputs more rounds {rounds}"
            "; tune(..., remeasure=True) measures recorded inputs again")


def format_report(report: Mapping) -> str:
    """The report in a few lines for a terminal."""
    noise = report.get("median_noise")
    head = (f"timing: {report['decided']} inputs decided, {report['ties']} ties, {report['undecided']} undecided "
            f"of {report['n_inputs']}" + (f" (median noise {100 * noise:.1f}%)" if noise is not None else ""))
    return head + ("\nWARNING: " if report["too_noisy"] else "\n") + report["advice"]
