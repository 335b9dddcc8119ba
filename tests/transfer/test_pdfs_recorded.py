"""P-DFS (Algorithm 1) on real CPU profiles recorded by ``tuner.profile`` (callgrind)."""
import pytest

from nitro.transfer.pdfs import PROXY_FEATURES, profile_dfs, select_proxies


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
