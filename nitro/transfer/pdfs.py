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


def _metric_names(profiles) -> list[str]:
    names = set()
    for m in profiles.values():
        names |= set(m)
    return sorted(names)


def fit_proxy_models(proxy_profiles: Mapping[tuple[str, int], Mapping[str, float]], metrics: list[str],
                     random_state: int = 0) -> dict[str, RandomForestRegressor]:
    """One intensity regressor per proxy from ``{(proxy, φ): {metric: value}}``."""
    by_proxy: dict[str, list] = {}
    for (proxy, phi), m in proxy_profiles.items():
        by_proxy.setdefault(proxy, []).append(([float(m.get(k, 0.0)) for k in metrics], float(phi)))
    models = {}
    for proxy, samples in sorted(by_proxy.items()):
        if len({phi for _, phi in samples}) < 2:
            raise ValueError(f"proxy {proxy!r} needs profiles at two or more intensities")
        X = np.array([x for x, _ in samples])
        y = np.array([phi for _, phi in samples])
        models[proxy] = RandomForestRegressor(n_estimators=100, random_state=random_state).fit(X, y)
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
    X = np.array([[float(variant_profiles[k].get(m, 0.0)) for m in metrics] for k in keys])
    pred = {p: model.predict(X) for p, model in models.items()}
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
