"""What a cross-device model can learn from: the sources of the target's kind, the variants
timed on every source, and the inputs timed for every kept variant on every source.

A model over several sources fits each kept variant's time on each source, so a variant one
source never ran (the SpMV data's ``hybrid`` on the Tesla P100) leaves no input complete, and
a source of another kind (a CPU among GPUs) teaches the wrong device. ``tune_from_source``
and ``nitro evaluate`` both keep the variants timed on every device (:func:`common_variants`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import pandas as pd

from ..dataset import Measurements

MIN_INPUTS = 2        # a cross-device model needs at least two training inputs (Prepared.build)
MIN_SAME_KIND = 3     # sources of the target's kind that make the others unnecessary


@dataclass
class VariantChoice:
    """The variants a model chooses among, why the others were left out, and how many
    inputs are timed for every kept variant on every source."""

    variants: list[str]
    left_out: dict[str, str] = field(default_factory=dict)
    n_inputs: int = 0


def _timed(m: Measurements, devices) -> pd.DataFrame:
    """The times of ``devices``' rows."""
    return m.times[m.times.index.get_level_values(0).isin(list(devices))]


def untimed_variants(m: Measurements, devices) -> dict[str, list[str]]:
    """For each variant that some of ``devices`` never timed on any input, those devices."""
    devices = list(devices)
    counts = _timed(m, devices).notna().groupby(level=0).sum().reindex(index=devices, fill_value=0)
    return {v: [d for d in devices if counts.loc[d, v] == 0] for v in m.variants if (counts[v] == 0).any()}


def common_variants(m: Measurements, devices) -> list[str]:
    """The variants timed on at least one input on every one of ``devices``, in ``m``'s order."""
    untimed = untimed_variants(m, devices)
    return [v for v in m.variants if v not in untimed]


def complete_inputs(m: Measurements, devices, variants) -> int:
    """How many inputs are timed for every one of ``variants`` on every one of ``devices``
    (the inputs a cross-device model trains on)."""
    devices, variants = list(devices), list(variants)
    per_input = _timed(m, devices)[variants].notna().all(axis=1).groupby(level=1).sum()
    return int((per_input == len(devices)).sum())


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
    variants timed on every source are kept, and while fewer than ``min_inputs`` inputs are
    timed for all of them on every source, the variant whose removal regains most inputs is
    left out as well. Raises ``ValueError`` naming the variants and sources at fault when
    fewer than two variants or ``min_inputs`` inputs remain."""
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
    if len(choice.variants) < 2:
        raise ValueError(f"fewer than two variants are timed on every source {sources}: {choice.variants}"
                         + _left_out_text(choice.left_out) + "; choose other sources (--sources)")
    choice.n_inputs = complete_inputs(m, sources, choice.variants)
    if variants is None:
        _drop_until_enough_inputs(m, sources, choice, min_inputs)
    if choice.n_inputs < min_inputs:
        raise ValueError(_too_few_inputs(m, sources, choice))
    return choice


def _drop_until_enough_inputs(m: Measurements, sources: list[str], choice: VariantChoice, min_inputs: int):
    """Leave out, one at a time, the variant whose removal regains most complete inputs."""
    while choice.n_inputs < min_inputs and len(choice.variants) > 2:
        without = {v: complete_inputs(m, sources, [w for w in choice.variants if w != v]) for v in choice.variants}
        worst = max(without, key=without.get)
        if without[worst] <= choice.n_inputs:
            return
        choice.left_out[worst] = (f"timed on too few inputs: {choice.n_inputs} inputs are timed for every "
                                  f"variant on every source with it, {without[worst]} without")
        choice.variants.remove(worst)
        choice.n_inputs = without[worst]


def _too_few_inputs(m: Measurements, sources: list[str], choice: VariantChoice) -> str:
    """An error naming how many inputs each source and each (variant, source) has timed."""
    t = _timed(m, sources)[choice.variants]
    per_source = t.notna().all(axis=1).groupby(level=0).sum().reindex(sources, fill_value=0)
    per_pair = t.notna().groupby(level=0).sum().reindex(sources, fill_value=0)
    source, variant = per_pair.stack().idxmin()
    return (f"only {choice.n_inputs} input(s) are timed for every variant {choice.variants} on every source "
            f"(inputs timed for all of them, per source: "
            + ", ".join(f"{s} {int(n)}" for s, n in per_source.items())
            + f"; fewest for one variant: {variant!r} on {source}, {int(per_pair.loc[source, variant])})"
            + _left_out_text(choice.left_out) + "; choose variants or sources (--variants, --sources)")


def _left_out_text(left_out: dict[str, str]) -> str:
    return ("; left out: " + "; ".join(f"{v!r} ({why})" for v, why in left_out.items())) if left_out else ""
