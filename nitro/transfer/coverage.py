"""What a cross-device model can learn from: the sources of the target's kind, the variants
timed on every source, and the inputs where each kept variant was timed on every source or on
none (:func:`nitro.transfer.prepare.learnable`).

A model over several sources fits each kept variant's fraction of the optimum on each source,
so a variant one source never ran (the SpMV data's ``hybrid`` on the Tesla P100) cannot be
learnt there, and a source of another kind (a CPU among GPUs) teaches the wrong device.
``tune_from_source`` and ``nitro evaluate`` both keep the variants timed on every device
(:func:`choose_variants`). On one input, a kept variant without a time on any source (a
constraint excluded it: nitro's SpMV ``dia`` and ``ell`` on matrices they would fill in; or it
failed everywhere) is the worst choice there, a fraction of 0, and the input is kept: leaving
it out left the model blind where constraints bind (it chose ``dia`` on a third of a new CPU's
SpMV test matrices, where ``dia`` may not run). A variant timed on some sources only leaves the
input out: a failure on one device cannot be told apart from a time never taken, and keeping
such inputs of the shared SpMV data with a fraction of 0 moved the CV-DFS ensemble +0.1 points
leave-one-GPU-out but −0.6 leave-one-family-out (the Radeon VII 95.0 → 91.3).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pandas as pd

from ..dataset import Measurements
from .prepare import COMMON_SHARE, learnable

MIN_INPUTS = 2        # a cross-device model needs at least two training inputs (Prepared.build)
MIN_SAME_KIND = 3     # sources of the target's kind that make the others unnecessary


@dataclass
class VariantChoice:
    """The variants a model chooses among, why the others were left out, and how many
    inputs it learns from."""

    variants: list[str]
    left_out: dict[str, str] = field(default_factory=dict)
    n_inputs: int = 0     # inputs the model learns from (nitro.transfer.prepare.learnable)


def _timed(m: Measurements, devices) -> pd.DataFrame:
    """The times of ``devices``' rows."""
    return m.times[m.times.index.get_level_values(0).isin(list(devices))]


def untimed_variants(m: Measurements, devices) -> dict[str, list[str]]:
    """For each variant that some of ``devices`` never timed on any input, those devices."""
    devices = list(devices)
    counts = _timed(m, devices).notna().groupby(level=0).sum().reindex(index=devices, fill_value=0)
    return {v: [d for d in devices if counts.loc[d, v] == 0] for v in m.variants if (counts[v] == 0).any()}


def usable_inputs(m: Measurements, devices, variants) -> int:
    """How many inputs a cross-device model over ``devices`` and ``variants`` learns from
    (:func:`nitro.transfer.prepare.learnable`)."""
    devices, variants = list(devices), list(variants)
    timed = _timed(m, devices)[variants].notna()
    inputs = timed.index.get_level_values(1).unique()
    cube = np.stack([timed.xs(d, level=0).reindex(inputs, fill_value=False).to_numpy() for d in devices])
    every, some = int(learnable(cube).sum()), int(learnable(cube, some=True).sum())
    return every if every >= COMMON_SHARE * some else some      # as shared_rows chooses


def sources_of_kind(kinds: Mapping[str, str | None], target: str, candidates) -> tuple[list[str], dict[str, str]]:
    """Default sources: the candidates of the target's ``kind`` (device metadata), when it is
    known for the target and at least :data:`MIN_SAME_KIND` candidates share it; otherwise all
    candidates. Returns ``(sources, {left-out source: reason})``."""
    candidates = list(candidates)
    kind = kinds.get(target)
    same = [s for s in candidates if kind and kinds.get(s) == kind]
    if len(same) < MIN_SAME_KIND:
        return candidates, {}
    return same, {s: f"kind {kinds.get(s) or 'unknown'}, the target {target!r} is a {kind}"
                  for s in candidates if s not in same}


def choose_variants(m: Measurements, sources, variants=None, min_inputs: int = MIN_INPUTS) -> VariantChoice:
    """The variants a model over ``sources`` chooses among.

    Given ``variants`` are checked: each must be timed on every source. Otherwise the
    variants timed on every source are kept, and while fewer than ``min_inputs`` inputs can be
    learnt from with all of them, the variant whose removal regains most inputs is left out as
    well. Raises ``ValueError`` naming the variants and sources at fault when fewer than two
    variants or ``min_inputs`` inputs remain."""
    sources = list(sources)
    untimed = untimed_variants(m, sources)
    if variants is not None:
        variants = list(variants)
        unknown = [v for v in variants if v not in m.variants]
        if unknown:
            raise ValueError(f"unknown variants {unknown}; known: {m.variants}")
        bad = {v: untimed[v] for v in variants if v in untimed}
        if bad:
            raise ValueError("variants not timed on every source: "
                             + "; ".join(f"{v!r} never on {', '.join(d)}" for v, d in bad.items())
                             + "; choose other variants or sources (--variants, --sources)")
        choice = VariantChoice(variants)
    else:
        choice = VariantChoice([v for v in m.variants if v not in untimed],
                               {v: f"not timed on {', '.join(d)}" for v, d in untimed.items()})
    if len(m.variants) < 2:
        raise ValueError(f"the data has one variant ({', '.join(m.variants)}): nothing to choose between")
    if len(choice.variants) < 2:
        raise ValueError(f"fewer than two variants are timed on every source {sources}: {choice.variants}"
                         + _left_out_text(choice.left_out) + "; choose other sources")
    choice.n_inputs = usable_inputs(m, sources, choice.variants)
    if variants is None:
        _drop_until_enough_inputs(m, sources, choice, min_inputs)
    if choice.n_inputs < min_inputs:
        raise ValueError(_too_few_inputs(m, sources, choice))
    return choice


def _drop_until_enough_inputs(m: Measurements, sources: list[str], choice: VariantChoice, min_inputs: int):
    """Leave out, one at a time, the variant whose removal regains most usable inputs."""
    while choice.n_inputs < min_inputs and len(choice.variants) > 2:
        without = {v: usable_inputs(m, sources, [w for w in choice.variants if w != v]) for v in choice.variants}
        worst = max(without, key=without.get)
        if without[worst] <= choice.n_inputs:
            return
        choice.left_out[worst] = (f"timed on too few inputs: {choice.n_inputs} inputs can be learnt from "
                                  f"with it, {without[worst]} without")
        choice.variants.remove(worst)
        choice.n_inputs = without[worst]


def _too_few_inputs(m: Measurements, sources: list[str], choice: VariantChoice) -> str:
    """An error naming how many inputs each source has timed."""
    t = _timed(m, sources)[choice.variants]
    per_source = t.notna().any(axis=1).groupby(level=0).sum().reindex(sources, fill_value=0)
    return (f"only {choice.n_inputs} input(s) have each of the variants {choice.variants} timed on every "
            f"source or on none, and one of them on every source (inputs timed, per source: "
            + ", ".join(f"{s} {int(n)}" for s, n in per_source.items()) + ")"
            + _left_out_text(choice.left_out) + "; choose variants or sources (--variants, --sources)")


def _left_out_text(left_out: dict[str, str]) -> str:
    return ("; left out: " + "; ".join(f"{v!r} ({why})" for v, why in left_out.items())) if left_out else ""
