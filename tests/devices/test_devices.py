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


def test_cpu_ids_tell_generations_behind_one_generic_name_apart():
    """A KVM guest sees Zen 3 and Zen 4 alike as "AMD EPYC": family and model join such an id,
    so rows of one generation are never read back as the other's."""
    from nitro.devices.cpu import cpu_id_from as device_id
    zen3 = {"model name": "AMD EPYC", "cpu family": "25", "model": "1"}
    zen4 = {"model name": "AMD EPYC", "cpu family": "25", "model": "17"}
    assert device_id(zen3, 2) == "cpu_amd_epyc_family25_model1_2t" != device_id(zen4, 2)
    named = {"model name": "AMD EPYC 7763 64-Core Processor", "cpu family": "25", "model": "1"}
    assert device_id(named, 128) == "cpu_amd_epyc_7763_64_core_processor_128t"      # a model number says it all
    assert device_id({"model name": "QEMU Virtual CPU version 2.5+", "cpu family": "6", "model": "6"}, 4) == \
        "cpu_qemu_virtual_cpu_version_2_5_family6_model6_4t"
    assert device_id({"model name": "AMD EPYC"}, 2) == "cpu_amd_epyc_2t"      # nothing more to tell
    clocked = {"model name": "Intel(R) Xeon(R) CPU @ 2.20GHz", "cpu family": "6"}     # a clock is no model number
    assert device_id({**clocked, "model": "79"}, 2) == "cpu_intel_r_xeon_r_cpu_2_20ghz_family6_model79_2t"
    assert device_id({**clocked, "model": "85"}, 2) != device_id({**clocked, "model": "79"}, 2)
