import numpy as np

from nitro import devices
from nitro.devices.microbench import run_until_stable


def test_cpu_record_has_query_and_measured_features():
    rec = devices.describe()
    assert devices.current_device_id().startswith("cpu_")
    for name in ("cores", "threads", "global_mem_gb", "global_atomic_ns", "stream_triad_gbps", "measured_gflops_dp"):
        assert name in rec and rec[name]["source"] in ("query", "microbench")
        value = rec[name]["value"]
        assert (value is not None and value > 0) or rec[name].get("missing")
    assert rec["threads"]["value"] >= 1


def test_unstable_benchmark_reports_missing_instead_of_a_number():
    rng = np.random.default_rng(0)
    r = run_until_stable(lambda _: float(rng.choice([1.0, 10.0])), None, max_repeats=10, budget_s=0.1)
    assert "unstable" in r and r["repeats"] == 10
    r = run_until_stable(lambda _: 5.0, None)
    assert "unstable" not in r and r["median"] == 5.0 and r["repeats"] == 5
