"""Selection quality: how close chosen variants come to the exhaustive-search optimum."""
from __future__ import annotations

import numpy as np


def speedup_vs_best(times: np.ndarray) -> np.ndarray:
    """``t_best / t_v`` for each input (row) and variant (column); 0 where a variant failed
    (NaN or inf time), so that choosing a failed variant scores nothing."""
    t = np.asarray(times, dtype=np.float64)
    t = np.where(np.isfinite(t) & (t > 0), t, np.inf)
    best = t.min(axis=1, keepdims=True)
    if not np.isfinite(best).all():
        raise ValueError("an input has no valid variant time; drop it before scoring")
    return best / t


def fraction_of_optimum(times: np.ndarray, chosen: np.ndarray) -> float:
    """Mean over inputs of ``t_best / t_chosen`` (1.0 = always the fastest variant)."""
    ratio = speedup_vs_best(times)
    chosen = np.asarray(chosen, dtype=np.int64)
    if chosen.shape != (ratio.shape[0],):
        raise ValueError(f"need one choice per input: {ratio.shape[0]} inputs, {chosen.shape} choices")
    return float(ratio[np.arange(len(chosen)), chosen].mean())


def majority_vote(choices: np.ndarray, n_variants: int) -> np.ndarray:
    """Per input (column of ``choices``, voters × inputs), the variant most voters chose (the
    lowest index among ties)."""
    choices = np.asarray(choices, dtype=np.int64)
    votes = np.zeros((choices.shape[1], n_variants))
    np.add.at(votes, (np.broadcast_to(np.arange(choices.shape[1]), choices.shape), choices), 1.0)
    return votes.argmax(axis=1)


def random_fraction(times: np.ndarray, draws: int = 1000, seed: int = 0) -> float:
    """Mean over ``draws`` uniformly random selections (the Random baseline)."""
    ratio = speedup_vs_best(times)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, ratio.shape[1], size=(draws, ratio.shape[0]))
    return float(ratio[np.arange(ratio.shape[0])[None, :], picks].mean())
