"""NVIDIA GPU description (``nitro.devices.gpu``). The parts that need no GPU (ids, tables,
derived figures, the record of a device as pycuda reports it, the "no GPU" record) always run;
the rest is marked ``gpu`` and skips with the reason. Microbenchmarks, proxies and ncu have
their own test modules."""
import json
from types import SimpleNamespace

import pytest

from nitro import cuda, devices
from nitro.devices import gpu

REASON = cuda.unavailable()
needs_gpu = pytest.mark.skipif(REASON is not None, reason=f"no CUDA GPU here: {REASON}")


# -- ids, tables, derived figures -------------------------------------------------------------
@pytest.mark.parametrize("name, expected", [
    ("NVIDIA H100 80GB HBM3", "nvidia_h100_80gb_hbm3"), ("Tesla K40m", "tesla_k40m"),
    ("Tesla V100-SXM2-16GB", "tesla_v100_sxm2_16gb"), ("  NVIDIA GeForce RTX 4090 ", "nvidia_geforce_rtx_4090")])
def test_gpu_ids_are_stable_slugs_of_the_name(name, expected):
    assert gpu.gpu_device_id(name) == expected


def test_empty_gpu_name_is_refused():
    with pytest.raises(ValueError, match="empty"):
        gpu.gpu_device_id("--")


def test_the_cuda_families_record_under_the_gpu_they_run_on():
    """``cuda_device_id``: the id of the GPU nitro's CUDA variants run on, None where they cannot run."""
    if cuda.variants_unavailable() is not None:
        assert gpu.cuda_device_id() is None
    else:
        assert gpu.cuda_device_id() == gpu.list_gpus()[cuda.default_index()]["id"]


@pytest.mark.parametrize("cc, cores", [((3, 5), 192), ((6, 0), 64), ((6, 1), 128), ((7, 0), 64),
                                       ((8, 0), 64), ((8, 6), 128), ((9, 0), 128), ((1, 0), None)])
def test_cuda_cores_per_sm(cc, cores):
    assert gpu.cuda_cores_per_sm(*cc) == cores


def _queried(**values):
    return {k: {"value": v, "unit": "", "source": "query"} for k, v in values.items()}


def test_peaks_are_derived_from_queried_figures():
    # H100 SXM5: 132 SMs, compute capability 9.0, 1980 MHz boost, HBM3 at 2619 MHz on 5120 bits
    d = gpu.derive(_queried(compute_capability=9.0, multiprocessors=132, clock_mhz=1980.0,
                            mem_clock_mhz=2619.0, mem_bus_width_bits=5120))
    assert d["cores"]["value"] == 16896
    assert d["peak_gflops_sp"]["value"] == pytest.approx(66908.16)
    assert d["peak_gflops_dp"]["value"] == pytest.approx(33454.08)
    assert d["peak_gbps"]["value"] == pytest.approx(3352.32)
    assert all(r["source"] == "derived" and r["from"] for r in d.values())
    # the Tesla P100 row of the shared SpMV data: 715 MHz x 4096 bits -> 732 GB/s
    assert gpu.derive(_queried(mem_clock_mhz=715.0, mem_bus_width_bits=4096))["peak_gbps"]["value"] == pytest.approx(732.16)


def test_underived_figures_say_what_they_lack():
    d = gpu.derive(_queried(compute_capability=9.0, multiprocessors=None, clock_mhz=1980.0))
    assert d["cores"]["value"] is None and "multiprocessors" in d["cores"]["missing"]
    assert d["peak_gflops_sp"]["value"] is None and d["peak_gflops_sp"]["missing"]
    assert "mem_clock_mhz" in d["peak_gbps"]["missing"]
    d = gpu.derive(_queried(compute_capability=4.2, multiprocessors=10, clock_mhz=1000.0))
    assert "4.2" in d["cuda_cores_per_sm"]["missing"]


class _H100:
    """What pycuda's ``Device`` of an H100 SXM5 reports (bytes, kHz), without the clock rates
    CUDA 13 drivers no longer report."""
    ATTRIBUTES = {"MULTIPROCESSOR_COUNT": 132, "MEMORY_CLOCK_RATE": 2_619_000, "GLOBAL_MEMORY_BUS_WIDTH": 5120,
                  "L2_CACHE_SIZE": 52_428_800, "MAX_SHARED_MEMORY_PER_BLOCK": 49_152,
                  "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232_448, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233_472,
                  "ASYNC_ENGINE_COUNT": 3, "WARP_SIZE": 32}
    device_attribute = SimpleNamespace(**{name: name for name in ATTRIBUTES})
    Error = RuntimeError

    def compute_capability(self):
        return 9, 0

    def total_memory(self):
        return 85_031_714_816

    def get_attribute(self, code):
        return self.ATTRIBUTES[code]


def test_cuda_features_are_in_binary_units_with_the_opt_in_shared_memory():
    h100 = _H100()
    rec = gpu.cuda_features(h100, h100)
    assert rec["global_mem_gb"] == {"value": pytest.approx(79.19, abs=0.01), "unit": "GiB", "source": "query"}
    assert rec["shared_mem_per_block_kb"]["value"] == 48 and rec["shared_mem_per_block_kb"]["unit"] == "KiB"
    assert rec["shared_mem_per_block_optin_kb"]["value"] == 227
    assert rec["shared_mem_per_sm_kb"]["value"] == 228 and rec["l2_cache_kb"]["value"] == 51_200
    assert rec["mem_clock_mhz"]["value"] == 2619 and rec["compute_capability"]["value"] == 9.0
    assert rec["clock_mhz"]["value"] is None and "CLOCK_RATE" in rec["clock_mhz"]["missing"]


# -- without a GPU: fast, with the reason ------------------------------------------------------
@pytest.mark.skipif(REASON is None, reason="a CUDA GPU is usable here")
def test_without_a_gpu_the_listing_says_why():
    if gpu.list_gpus():
        pytest.skip("NVML lists a GPU although pycuda cannot drive it")
    assert "pycuda" in gpu.unavailable()
    records = devices.describe_all(measure=False)
    assert devices.current_device_id() in records
    missing = records["gpu"]["gpu_count"]
    assert missing["value"] is None and "pycuda" in missing["missing"]


def test_measurements_labelled_by_a_free_id_are_described_by_this_cpu():
    assert devices.local_record("test_cpu", measure=False).keys() == devices.describe("cpu", measure=False).keys()


def test_cli_lists_the_cpu_and_the_gpus():
    from nitro.cli import main
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["devices", "--json", "--no-measure"]) == 0
    records = json.loads(buf.getvalue())
    assert devices.current_device_id() in records
    listed = {g["id"] for g in gpu.list_gpus()}
    assert listed <= set(records) and (listed or "gpu" in records)
    for record in records.values():
        for rec in record.values():
            assert rec["value"] is not None or rec["missing"]


# -- on a GPU -----------------------------------------------------------------------------------
@pytest.mark.gpu
@needs_gpu
def test_gpu_record_has_the_queried_and_derived_features():
    [first, *_] = gpu.list_gpus()
    assert first["id"] == gpu.gpu_device_id(first["name"])
    rec = gpu.describe_gpu(first["index"])
    for name in ("global_mem_gb", "multiprocessors", "mem_bus_width_bits", "l2_cache_kb",
                 "shared_mem_per_block_kb", "shared_mem_per_block_optin_kb", "copy_engines", "compute_capability"):
        assert rec[name]["source"] == "query" and rec[name]["value"] > 0, name
    assert rec["shared_mem_per_block_optin_kb"]["value"] >= rec["shared_mem_per_block_kb"]["value"] == 48
    assert rec["warp_size"]["value"] == 32 and 1 < rec["global_mem_gb"]["value"] < 1024
    for name in ("cores", "peak_gflops_sp", "peak_gflops_dp", "peak_gbps"):
        assert rec[name]["source"] == "derived" and rec[name]["value"] > 0, name
    for name in ("nvml_max_sm_clock_mhz", "power_limit_w", "pcie_generation", "pcie_width"):
        assert (rec[name]["value"] or 0) > 0 or rec[name]["missing"], name
    assert devices.describe(first["id"], measure=False).keys() == rec.keys()
