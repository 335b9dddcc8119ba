"""P-DFS (Algorithm 1, ``nitro.transfer.pdfs``): on planted profiles, and on real CPU profiles
recorded by ``tuner.profile`` (callgrind)."""
import numpy as np
import pytest

from nitro.transfer.pdfs import PROXY_FEATURES, profile_dfs, select_proxies


def test_pdfs_picks_the_planted_proxy():
    rng = np.random.default_rng(0)
    proxy = {}
    for p, metric in [("ATOMIC", "atomics"), ("MEM-BW", "dram"), ("SP-GFLOP", "flops")]:
        for phi in range(6):
            m = {"atomics": 0.02, "dram": 0.05, "flops": 0.05}
            m[metric] = 0.2 * phi
            proxy[(p, phi)] = {k: v + 0.01 * rng.random() for k, v in m.items()}
    variants = {}
    for i in range(10):
        variants[("global_atomic", f"in{i}")] = {"atomics": 0.8 + 0.05 * rng.random(), "dram": 0.1, "flops": 0.05}
        variants[("stream", f"in{i}")] = {"atomics": 0.02, "dram": 0.9, "flops": 0.1}
    winners = select_proxies(proxy, variants)
    assert winners["global_atomic"] == ["ATOMIC"] and winners["stream"] == ["MEM-BW"]
    kept = profile_dfs(proxy, {k: v for k, v in variants.items() if k[0] == "global_atomic"},
                       ["cores", "global_atomic_ns", "peak_gbps"])
    assert kept == ["global_atomic_ns"]
    with pytest.raises(ValueError, match="proxy profiles"):
        profile_dfs({}, variants, ["cores"])


@pytest.mark.slow
def test_pdfs_names_atomic_for_the_atomic_heavy_histograms(recorded_cpu_profiles):
    r = recorded_cpu_profiles
    winners = select_proxies(r["proxies"], r["variants"])
    assert set(winners) == {v for v, _ in r["variants"]}
    for variant in ("global_atomic_even", "global_atomic_dynamic"):
        assert "ATOMIC" in winners[variant], winners
    for variant in ("sort_even", "sort_dynamic", "shared_atomic_even", "shared_atomic_dynamic"):
        assert "ATOMIC" not in winners[variant], winners
    assert not any({"SP-GFLOP", "DP-GFLOP"} & set(w) for w in winners.values()), winners


@pytest.mark.slow
def test_pdfs_keeps_the_atomic_features(recorded_cpu_profiles):
    r = recorded_cpu_profiles
    available = ["cores", "clock_mhz", "peak_gflops_dp", "global_atomic_ns", "shared_atomic_ns", "peak_gbps",
                 "l2_cache_kb"]
    atomic_only = {k: m for k, m in r["variants"].items() if k[0].startswith("global_atomic")}
    kept = profile_dfs(r["proxies"], atomic_only, available)
    assert {"global_atomic_ns", "shared_atomic_ns"} <= set(kept)
    assert "peak_gflops_dp" not in kept
    assert set(kept) <= {f for p in PROXY_FEATURES.values() for f in p}
