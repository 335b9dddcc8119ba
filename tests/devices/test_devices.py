"""Describing this machine's devices (``nitro.devices``)."""
from nitro import devices


def test_cpu_record_has_query_and_measured_features():
    rec = devices.describe()
    assert devices.current_device_id().startswith("cpu_")
    for name in ("cores", "threads", "global_mem_gb", "global_atomic_ns", "stream_triad_gbps", "measured_gflops_dp"):
        assert name in rec and rec[name]["source"] in ("query", "microbench")
        value = rec[name]["value"]
        assert (value is not None and value > 0) or rec[name].get("missing")
    assert rec["threads"]["value"] >= 1
