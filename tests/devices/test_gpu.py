"""NVIDIA GPU description, microbenchmarks, proxies and ncu profiles. The parts that need no
GPU (ids, tables, derived figures, the "no GPU" record, proxy source, nvcc compiles, ncu output
parsing) always run; the rest is marked ``gpu`` and skips with the reason."""
import json
import shutil
import subprocess

import pytest

from nitro import cuda, devices
from nitro.devices import gpu, gpu_microbench, gpu_proxies, ncu

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
    out = gpu_microbench.measure_gpu()
    assert set(out) == set(gpu_microbench.BENCHMARKS)
    assert all(r["value"] is None and "pycuda" in r["missing"] for r in out.values())
    with pytest.raises(RuntimeError, match="not available"):
        gpu_proxies.run("SP-GFLOP", 2, 10)


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


# -- proxies: generated source ----------------------------------------------------------------
@pytest.mark.parametrize("kind", gpu_proxies.KINDS)
def test_proxy_source_has_phi_fifths_of_its_kind(kind):
    for phi in range(6):
        counts = gpu_proxies.op_counts(gpu_proxies.source(kind, phi))
        assert counts[kind] == phi * gpu_proxies.GROUPS
        assert counts["filler"] == (5 - phi) * gpu_proxies.GROUPS
        assert all(n == 0 for k, n in counts.items() if k not in (kind, "filler"))


def test_proxy_arguments_are_checked():
    with pytest.raises(ValueError, match="0..5"):
        gpu_proxies.source("ATOMIC", 6)
    with pytest.raises(ValueError, match="unknown GPU proxy"):
        gpu_proxies.source("FLOP", 1)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on PATH")
def test_runtime_cuda_sources_compile_with_nvcc(tmp_path):
    """Every proxy (all kinds and intensities) and the microbenchmarks, as pycuda compiles them
    (inside extern "C"), in one nvcc run."""
    parts = [gpu_microbench.SOURCE]
    for kind in gpu_proxies.KINDS:
        for phi in range(6):
            name = f"proxy_{kind.replace('-', '_')}_{phi}"
            parts.append(gpu_proxies.source(kind, phi).replace("void proxy(", f"void {name}("))
    src = tmp_path / "runtime_sources.cu"
    src.write_text('extern "C" {\n' + "\n".join(parts) + "\n}\n")
    run = subprocess.run(["nvcc", "--ptx", "-arch=sm_75", "-o", str(tmp_path / "out.ptx"), str(src)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    ptx = (tmp_path / "out.ptx").read_text()
    assert ptx.count(".entry") == 2 + 30
    for instruction in ("fma.rn.f32", "fma.rn.f64", "atom.global.add.u32", "atom.shared.add.u32", "ld.shared.f32"):
        assert instruction in ptx, instruction
    assert "warning" not in run.stderr, run.stderr  # pycuda would repeat compiler warnings to users


# -- ncu output ---------------------------------------------------------------------------------
CSV = '''==PROF== Connected to process 1 (python)
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","python","h","proxy","1","7","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","smsp__inst_issued.sum","inst","1,000,000"
"0","1","python","h","proxy","1","7","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_thread_inst_executed_op_ffma_pred_on.sum","inst","3,200,000"
"0","1","python","h","proxy","1","7","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_thread_inst_executed_op_fadd_pred_on.sum","inst","0"
"0","1","python","h","proxy","1","7","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_thread_inst_executed_op_fmul_pred_on.sum","inst","100"
"0","1","python","h","proxy","1","7","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_sector_hit_rate.pct","%","87.5"
"1","1","python","h","other","1","7","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","smsp__inst_issued.sum","inst","n/a"
'''


def test_ncu_csv_is_parsed_and_counts_are_normalised_by_issued_instructions():
    kernels = ncu.parse_csv(CSV)
    assert [k["name"] for k in kernels] == ["proxy", "other"]
    values, missing = ncu.combine(kernels[0]["raw"], ["flop_count_sp", "l1_cache_global_hit_rate", "inst_issued",
                                                      "dram_read_transactions"])
    assert values["flop_count_sp"] == pytest.approx((2 * 3_200_000 + 100) / 1_000_000)
    assert values["l1_cache_global_hit_rate"] == 87.5 and values["inst_issued"] == 1_000_000
    assert "dram__sectors_read.sum" in missing["dram_read_transactions"]
    values, missing = ncu.combine(kernels[1]["raw"], ["inst_issued"])
    assert values == {} and missing["inst_issued"]


def test_every_paper_metric_maps_to_ncu_metrics():
    needed = ncu.ncu_metrics(ncu.METRICS)
    assert ncu.NORMALISER in needed and all("__" in m for m in needed)
    with pytest.raises(ValueError, match="unknown profiling metric"):
        ncu.ncu_metrics(["flops"])


def test_profile_without_ncu_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("NITRO_NCU", raising=False)
    result = ncu.profile("nitro.devices.gpu_proxies:run", ["SP-GFLOP", 1])
    assert result["kernels"] == [] and "ncu" in result["missing"]
    with pytest.raises(ValueError, match="module:function"):
        ncu.profile("not_a_target")


# -- on a GPU -----------------------------------------------------------------------------------
@pytest.mark.gpu
@needs_gpu
def test_gpu_record_has_the_queried_and_derived_features():
    [first, *_] = gpu.list_gpus()
    assert first["id"] == gpu.gpu_device_id(first["name"])
    rec = gpu.describe_gpu(first["index"])
    for name in ("global_mem_gb", "multiprocessors", "clock_mhz", "mem_clock_mhz", "mem_bus_width_bits",
                 "l2_cache_kb", "shared_mem_per_block_kb", "copy_engines", "compute_capability"):
        assert rec[name]["source"] == "query" and rec[name]["value"] > 0, name
    for name in ("cores", "peak_gflops_sp", "peak_gflops_dp", "peak_gbps"):
        assert rec[name]["source"] == "derived" and rec[name]["value"] > 0, name
    for name in ("nvml_max_sm_clock_mhz", "power_limit_w", "pcie_generation", "pcie_width"):
        assert (rec[name]["value"] or 0) > 0 or rec[name]["missing"], name
    assert devices.describe(first["id"], measure=False).keys() == rec.keys()


@pytest.mark.gpu
@needs_gpu
def test_gpu_atomic_microbenchmarks():
    out = gpu_microbench.measure_gpu(0, budget_s=1.0)
    for name, rec in out.items():
        assert rec["source"] == "microbench"
        assert (rec["value"] is not None and rec["value"] > 0) or rec["missing"], name
    values = {k: r["value"] for k, r in out.items() if r["value"] is not None}
    if "global_atomic_ns" in values and "global_atomic_uncontended_ns" in values:
        assert values["global_atomic_ns"] > values["global_atomic_uncontended_ns"]


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("kind", gpu_proxies.KINDS)
def test_gpu_proxies_run(kind):
    for phi in (0, 3, 5):
        assert gpu_proxies.run(kind, phi, 100_000) == phi * gpu_proxies.GROUPS * 100_000


@pytest.mark.gpu
@needs_gpu
@pytest.mark.skipif(shutil.which("ncu") is None, reason="Nsight Compute (ncu) is not on PATH")
def test_ncu_profile_of_proxies_tracks_intensity():
    fp32 = []
    for phi in (1, 4):
        result = ncu.profile("nitro.devices.gpu_proxies:run", ["SP-GFLOP", phi, 1 << 20],
                             metrics=["inst_fp_32", "flop_count_sp", "inst_executed"], kernel_regex="proxy")
        if isinstance(result["missing"], str):
            pytest.skip(result["missing"])
        [kernel] = result["kernels"]
        fp32.append(kernel["metrics"]["inst_fp_32"])
    assert fp32[1] > 1.5 * fp32[0]
