"""Profile-based device-feature selection (P-DFS, the paper's Algorithm 1).

One regression model per application proxy learns the proxy's intensity φ (0–5) from its
profiling metrics; each variant's profile on each training input is scored by every proxy
model; the proxies with the highest predicted intensity win that input; a majority vote over
inputs picks each variant's proxies; the union of the winners' associated device features
is returned.
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping

import numpy as np
from sklearn.ensemble import RandomForestRegressor

# Which device features each proxy stresses (the paper's Table 3, in nitro's feature names;
# names a device does not have are ignored by the caller).
PROXY_FEATURES: dict[str, list[str]] = {
    "SP-GFLOP": ["peak_gflops_sp", "measured_gflops_sp", "cores", "clock_mhz"],
    "DP-GFLOP": ["peak_gflops_dp", "measured_gflops_dp", "cores", "clock_mhz"],
    "ATOMIC": ["global_atomic_ns", "shared_atomic_ns"],
    "MEM-BW": ["peak_gbps", "stream_triad_gbps", "mem_clock_mhz", "mem_bus_width_bits", "l2_cache_kb",
               "l3_cache_kb"],
    "SH-MEM-BW": ["shared_mem_per_block_kb"],
}


# The profiling metrics relevant to each proxy (the paper's Table 3, column 3), normalised by
# instructions executed: nvprof's names where nitro's CPU profiler (nitro.profiling.cpu) has an
# analogue, and the CPU profiler's own. A proxy's model uses those of its metrics the profiles
# have, else every relative metric.
PROXY_METRICS: dict[str, list[str]] = {
    "SP-GFLOP": ["flop_count_sp", "inst_fp_32", "flop_sp_efficiency"],
    "DP-GFLOP": ["flop_count_dp", "inst_fp_64", "flop_dp_efficiency"],
    "ATOMIC": ["inst_atomic", "atomic_transactions", "atomic_transactions_per_request",
               "l2_atomic_transactions", "l2_atomic_throughput", "atomic_throughput"],
    "MEM-BW": ["ll_read_miss", "ll_write_miss", "d1_miss", "dram_read_transactions",
               "dram_write_transactions", "gld_transactions", "gst_transactions"],
    "SH-MEM-BW": ["l1_hit_load", "shared_load_transactions", "shared_store_transactions",
                  "shared_store_throughput"],
}
# Absolute counts: they scale with the input, not with the kind of work.
ABSOLUTE_METRICS = {"inst_executed", "inst_issued"}
# A relevant metric whose values over a proxy's intensities span less than this share of its
# largest value does not follow the intensity (the CPU MEM-BW proxy only reads, so its
# ll_write_miss stays at ~0.0003 per instruction for every φ): its noise would order the
# intensities, and a forest split on it scores a variant by that noise.
FLAT_SPAN = 0.5


def _metric_names(profiles) -> list[str]:
    names = set()
    for m in profiles.values():
        names |= set(m)
    return sorted(names - ABSOLUTE_METRICS)


def proxy_metrics(proxy: str, available: list[str]) -> list[str]:
    """The metrics a proxy's model uses: its relevant ones among ``available``, else all."""
    relevant = [m for m in PROXY_METRICS.get(proxy, []) if m in available]
    return relevant or list(available)


def _follows_intensity(values) -> bool:
    """Whether a metric's values over a proxy's intensities span :data:`FLAT_SPAN` of its largest."""
    values = np.asarray(values, dtype=float)
    return bool(values.max() > 0 and np.ptp(values) >= FLAT_SPAN * values.max())


def fit_proxy_models(proxy_profiles: Mapping[tuple[str, int], Mapping[str, float]], metrics: list[str],
                     random_state: int = 0) -> dict[str, tuple[list[str], RandomForestRegressor]]:
    """One intensity regressor per proxy from ``{(proxy, φ): {metric: value}}``, with the
    metrics it uses: those of :func:`proxy_metrics` that follow the intensity (all of them
    where none does)."""
    by_proxy: dict[str, list] = {}
    for (proxy, phi), m in proxy_profiles.items():
        by_proxy.setdefault(proxy, []).append((m, float(phi)))
    models = {}
    for proxy, samples in sorted(by_proxy.items()):
        if len({phi for _, phi in samples}) < 2:
            raise ValueError(f"proxy {proxy!r} needs profiles at two or more intensities")
        used = proxy_metrics(proxy, metrics)
        used = [k for k in used if _follows_intensity([float(m.get(k, 0.0)) for m, _ in samples])] or used
        X = np.array([[float(m.get(k, 0.0)) for k in used] for m, _ in samples])
        y = np.array([phi for _, phi in samples])
        models[proxy] = (used, RandomForestRegressor(n_estimators=100, random_state=random_state).fit(X, y))
    return models


def select_proxies(proxy_profiles, variant_profiles: Mapping[tuple[str, str], Mapping[str, float]],
                   tolerance: float = 0.25) -> dict[str, list[str]]:
    """Per variant (kernel), the proxies winning the majority vote over its inputs.

    For an input, every proxy whose predicted intensity is within ``tolerance`` of the highest
    is a best proxy (so near-ties keep both); a proxy wins a variant's vote when it is among the
    best on at least half of that variant's inputs, else the most frequent one wins.
    """
    if not proxy_profiles:
        raise ValueError("P-DFS needs proxy profiles; record them with `nitro profile` first")
    if not variant_profiles:
        raise ValueError("P-DFS needs variant profiles; record them with `tuner.profile` first")
    metrics = _metric_names(proxy_profiles)
    models = fit_proxy_models(proxy_profiles, metrics)
    per_variant: dict[str, Counter] = {}
    n_inputs: Counter = Counter()
    keys = sorted(variant_profiles)
    pred = {p: model.predict(np.array([[float(variant_profiles[k].get(m, 0.0)) for m in used] for k in keys]))
            for p, (used, model) in models.items()}
    for row, (variant, _input) in enumerate(keys):
        scores = {p: pred[p][row] for p in models}
        top = max(scores.values())
        best = [p for p, s in scores.items() if s >= top - tolerance]
        per_variant.setdefault(variant, Counter()).update(best)
        n_inputs[variant] += 1
    winners = {}
    for variant, votes in per_variant.items():
        chosen = [p for p, c in votes.items() if c >= n_inputs[variant] / 2]
        winners[variant] = sorted(chosen) or [votes.most_common(1)[0][0]]
    return winners


def profile_dfs(proxy_profiles, variant_profiles, available_features, associations=None) -> list[str]:
    """The device features P-DFS keeps: the union over variants of the winning proxies'
    features, restricted to ``available_features``, in their given order."""
    associations = associations or PROXY_FEATURES
    winners = select_proxies(proxy_profiles, variant_profiles)
    wanted = set()
    for proxies in winners.values():
        for p in proxies:
            wanted |= set(associations.get(p, []))
    return [f for f in available_features if f in wanted]
