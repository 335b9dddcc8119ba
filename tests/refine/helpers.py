"""Shared by the refining tests: a kernel model on one feature whose scores cross (near ties and
clear inputs), and code variants of plain Python functions that say who ran (no sleeping, no
timed asserts)."""
from pathlib import Path

import numpy as np

from nitro import SelectorModel, code_variant

VARIANTS = ["a", "b", "c"]
ROOT = Path(__file__).resolve().parents[2]


def kernel_model(variants=VARIANTS, weights=None):
    """A kernel model on one feature ``x`` with centres at 0, 1, 2 (in signed-log space): the
    scores cross, so some inputs are near ties (small margins) and others are clear."""
    w = np.eye(3)[:, :len(variants)] if weights is None else np.asarray(weights, dtype=float)
    return SelectorModel(variants=list(variants), input_features=["x"], kind="kernel", params={
        "signed_log": True, "mean": [0.0], "scale": [1.0], "gamma": 1.0,
        "centers": [[0.0], [1.0], [2.0]], "weights": w.tolist(), "offset": [0.0] * len(variants)})


def same(out, served) -> bool:
    """The check of code variants whose variants return their own names: one result, said
    differently (refining fails a variant whose result differs from the served one)."""
    return True


def tagged(ran: list):
    """Variants that return their own name and log every run with its input (``check=same``)."""
    def make(name):
        def variant(x):
            ran.append((name, x))
            return name
        variant.__name__ = name
        return variant
    return [make(v) for v in VARIANTS]


def make_cv(ran, name="refined"):
    cv = code_variant(name, tagged(ran), {"x": lambda x: float(x)}, default="a", check=same)
    cv.model = kernel_model()
    return cv


XS = np.exp(np.linspace(0.0, 2.5, 97)) - 1.0     # signed-log features spread over the centres
