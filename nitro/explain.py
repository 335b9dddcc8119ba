"""``nitro explain``: Starchart's tree over a computation's stored training rows — which input
(and device) features decide the fastest variant, and the regions where each variant wins."""
from __future__ import annotations

import numpy as np

from . import devices as devices_mod
from .learn.tree import TreeSelector, plot_partition, png_path
from .search import SKIPPED
from .store import Store


def explain_computation(store: Store, name: str, devices=None, min_gain: float = 0.01, plot=None) -> dict:
    """Fit a :class:`~nitro.learn.TreeSelector` on the rows of ``name`` recorded on ``devices``
    (default: all); with several devices, the numeric device features known on all of them
    are appended to each row's input features."""
    plot = png_path(plot) if plot else None        # refused before the fit, named as written
    meta = store.meta(name)
    recorded = store.devices(name)
    devices = list(devices) if devices else recorded
    missing = [d for d in devices if d not in recorded]
    if missing or not devices:
        raise ValueError(f"{name}: no training rows for devices {missing or devices}; recorded: {recorded}")
    dev_names: list[str] = []
    values = {}
    if len(devices) > 1:
        values = {d: devices_mod.feature_values(store.device(d, missing_ok=True) or {}) for d in devices}
        dev_names = sorted(set.intersection(*[{k for k, v in values[d].items() if v is not None
                                                and np.isfinite(v)} for d in devices]))
    X, T, skipped = [], [], 0
    for d in devices:
        for r in store.rows(name, d):
            if r.best is None:
                continue
            skipped += SKIPPED in r.failed.values()
            X.append([r.features[f] for f in meta["features"]] + [values[d][f] for f in dev_names])
            T.append(r.time_vector(meta["variants"]))
    if len(X) < 2:
        raise ValueError(f"{name}: fewer than two rows with a valid variant to explain")
    feature_names = list(meta["features"]) + dev_names
    sel = TreeSelector(min_gain=min_gain).fit(np.array(X, dtype=float), np.array(T, dtype=float))
    out = {"computation": name, "devices": devices, "n_rows": len(X), "n_rows_with_skipped_variants": skipped,
           **sel.explain(feature_names, meta["variants"])}
    if plot:
        out["plot"] = plot_partition(sel, feature_names, meta["variants"], plot,
                                     title=f"{name}: where each variant wins ({len(X)} rows, {len(devices)} device(s))")
    return out


def format_explanation(r: dict) -> str:
    lines = [f"{r['computation']}: {r['n_rows']} rows on {', '.join(r['devices'])}; "
             f"{r['n_leaves']} regions, depth {r['depth']}",
             ("features that decide, first split first: " if len(r["wins"]) > 1 else
              f"one variant, {next(iter(r['wins']), 'none')}, wins in every region: the splits say how much the others "
              "lose, not which one wins; features split on, first split first: ")
             + (", ".join(r["features_by_first_split"]) or "none (one region)"),
             "share of the SSE each removes: " + ", ".join(f"{f} {100 * v:.0f}%" for f, v in r["importance"].items()),
             "", r["tree_text"], "", "where each variant wins:"]
    for v, leaves in r["wins"].items():
        regions = []
        for leaf in (l for l in r["leaves"] if l["leaf"] in leaves):
            conds = " and ".join(_interval(f, lo, hi) for f, (lo, hi) in leaf["conditions"].items()) or "everywhere"
            regions.append(f"{conds} ({leaf['n']} inputs, {leaf['percent_of_optimum'][v]:.0f}% of optimum)")
        lines.append(f"  {v}: " + "; ".join(regions))
    if r.get("n_rows_with_skipped_variants"):
        lines.append(f"note: {r['n_rows_with_skipped_variants']} rows have variants skipped by early stopping, "
                     "counted here as if they had failed (0% of the optimum); an exhaustive tune() measures them")
    if r.get("plot"):
        lines.append(f"\nplot: {r['plot']}")
    return "\n".join(lines)


def _interval(f, lo, hi) -> str:
    if np.isfinite(lo) and np.isfinite(hi):
        return f"{lo:.4g} < {f} <= {hi:.4g}"
    return f"{f} > {lo:.4g}" if np.isfinite(lo) else f"{f} <= {hi:.4g}"
