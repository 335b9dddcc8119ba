"""The microbenchmark harness (``nitro.devices.microbench``)."""
import numpy as np

from nitro.devices.microbench import run_until_stable


def test_unstable_benchmark_reports_missing_instead_of_a_number():
    rng = np.random.default_rng(0)
    r = run_until_stable(lambda _: float(rng.choice([1.0, 10.0])), None, max_repeats=10, budget_s=0.1)
    assert "unstable" in r and r["repeats"] == 10
    r = run_until_stable(lambda _: 5.0, None)
    assert "unstable" not in r and r["median"] == 5.0 and r["repeats"] == 5
