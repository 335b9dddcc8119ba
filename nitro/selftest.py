"""``nitro selftest --gpu``: what a user with an NVIDIA GPU runs first. Each GPU path of nitro
is run on the GPU and checked against what it must compute, and reported as pass or FAIL with
the detail; without a usable GPU every check is skipped with the reason.

The paths: the device record, both CUDA families' variants against NumPy/SciPy (from the main
thread and from worker threads), tuning both families (in-process: no fork once CUDA is
loaded), the atomic microbenchmarks, the P-DFS proxies and, where ``ncu`` is on PATH, a
profile of a proxy.
"""
from __future__ import annotations

import os
import shutil
import traceback
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import cuda

_forks = [0]
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=lambda: _forks.__setitem__(0, _forks[0] + 1))


class Skip(Exception):
    """A check that cannot run here (e.g. no ``ncu``), with the reason."""


def _device_record() -> str:
    from .devices import gpu
    rec = gpu.describe_gpu(cuda.default_index())
    for name in ("multiprocessors", "global_mem_gb", "shared_mem_per_block_kb", "peak_gbps", "peak_gflops_sp"):
        assert (rec[name]["value"] or 0) > 0, f"{name}: {rec[name].get('missing')}"
    return (f"{rec['multiprocessors']['value']:.0f} SMs, {rec['global_mem_gb']['value']:.1f} GiB, "
            f"{rec['peak_gbps']['value']:.0f} GB/s peak")


def _images() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [np.zeros(0, np.uint8), np.array([7], np.uint8), np.full(70_001, 255, np.uint8),
            rng.integers(0, 256, (1 << 20) + 3, dtype=np.uint8),
            np.clip(rng.normal(128, 2, 3 << 20), 0, 255).astype(np.uint8)]


def _histogram(threads: int) -> str:
    from .benchmarks import histogram_cuda
    images = _images()
    data = histogram_cuda.to_device(images)
    pairs = [(name, k) for name in histogram_cuda.VARIANT_NAMES for k in range(len(images))]

    def one(pair):
        name, k = pair
        return histogram_cuda.to_host(histogram_cuda.VARIANTS[name](data[k]))

    with ThreadPoolExecutor(threads) as pool:
        counts = list(pool.map(one, pairs)) if threads > 1 else [one(p) for p in pairs]
    wrong = [f"{name} on {images[k].size} items" for (name, k), c in zip(pairs, counts)
             if not np.array_equal(c, np.bincount(images[k], minlength=256))]
    assert not wrong, "counts differ from np.bincount: " + ", ".join(wrong)
    return f"{len(pairs)} histograms equal np.bincount" + (f" ({threads} threads)" if threads > 1 else "")


def _spmv() -> str:
    from .benchmarks import spmv, spmv_cuda
    host, _ = spmv.make_inputs(6, seed=3, min_nnz=2_000, max_nnz=50_000)
    cv, runs = spmv_cuda.make_code_variant(), 0
    for dA, dx in spmv_cuda.inputs(host):
        x = spmv_cuda.to_host(dx)
        expected, bound = dA.host.csr @ x, 1e-12 * (abs(dA.host.csr) @ np.abs(x))
        allowed = cv.allowed(cv.compute_features(dA, dx))
        for name in (v for v in spmv_cuda.VARIANT_NAMES if allowed[v]):
            y = spmv_cuda.to_host(spmv_cuda.VARIANTS[name](dA, dx))
            assert np.all(np.abs(y - expected) <= bound), f"{name} differs from SciPy on {dA.shape}"
            runs += 1
    return f"{runs} products within 1e-12 of SciPy"


def _tune(family: str) -> str:
    from .benchmarks import load
    from .measurement import EXCLUDED, TimingPolicy
    from .tuner import Autotuner
    module = load(family)
    cv = module.make_code_variant()
    assert cv.device_id, "the family's rows would not be recorded under the GPU"
    (train, ids), _ = module.train_test_inputs(6, 1, seed=1)
    tuner = Autotuner(family, policy=TimingPolicy(min_repeats=2, max_repeats=3, target_seconds=0.0), progress=False)
    tuner.set_training_args(train, ids=ids)
    forks = _forks[0]
    rows = tuner.measure(cv)
    assert _forks[0] == forks, f"{_forks[0] - forks} forks while measuring a GPU family"
    failed = {f"{r.input_id}/{v}": why for r in rows for v, why in r.failed.items() if why != EXCLUDED}
    assert not failed, f"failed variants: {failed}"
    assert all(r.best is not None for r in rows)
    return f"{len(rows)} inputs measured in-process on {cv.device_id}, none failed"


def _microbenchmarks() -> str:
    from .devices import gpu_microbench
    out = gpu_microbench.measure_gpu(cuda.default_index(), budget_s=2.0)
    bad = {k: r.get("missing", r["value"]) for k, r in out.items() if r["value"] is None or not 1e-5 < r["value"] < 100}
    assert not bad, f"missing or implausible (ns per atomic): {bad}"
    assert out["global_atomic_ns"]["value"] > out["global_atomic_uncontended_ns"]["value"], "contention costs nothing?"
    return ", ".join(f"{k} {r['value']:.3g}" for k, r in out.items())


def _proxies() -> str:
    from .devices import gpu_proxies
    n = 100_003
    for kind in gpu_proxies.KINDS:
        for phi in (0, 3, 5):
            claimed = gpu_proxies.run(kind, phi, n, cuda.default_index())
            out, bins = gpu_proxies.outputs(n, cuda.default_index())
            assert np.isfinite(out).all(), f"{kind} phi={phi}: non-finite output"
            assert int(bins.sum()) == (claimed if kind == "ATOMIC" else 0), f"{kind} phi={phi}: bins {int(bins.sum())}"
    return f"{len(gpu_proxies.KINDS)} kinds x phi 0/3/5 ran; ATOMIC bins count every atomic"


def _ncu() -> str:
    from .devices import ncu
    if not (os.environ.get("NITRO_NCU") or shutil.which("ncu")):
        raise Skip("Nsight Compute (ncu) is not on PATH (set NITRO_NCU to its path)")
    result = ncu.profile("nitro.devices.gpu_proxies:run", ["SP-GFLOP", 4, 1 << 20],
                         metrics=["flop_count_sp", "inst_executed"], kernel_regex="proxy")
    if isinstance(result["missing"], str):
        if "ERR_NVGPUCTRPERM" in result["missing"]:
            raise Skip(result["missing"])
        raise AssertionError(result["missing"])
    [kernel] = result["kernels"]
    assert kernel["inst_issued"] and kernel["metrics"]["flop_count_sp"] > 0, kernel
    return f"{kernel['name']}: {kernel['inst_issued']:.3g} instructions issued"


CHECKS = {
    "device record": _device_record,
    "histogram_cuda variants": lambda: _histogram(1),
    "histogram_cuda in worker threads": lambda: _histogram(3),
    "spmv_cuda variants": _spmv,
    "tune histogram_cuda": lambda: _tune("histogram_cuda"),
    "tune spmv_cuda": lambda: _tune("spmv_cuda"),
    "atomic microbenchmarks": _microbenchmarks,
    "P-DFS proxies": _proxies,
    "ncu profile": _ncu,
}


def run_gpu(checks=None) -> dict:
    """``{"skipped": reason}`` without a usable GPU, else ``{"checks": [{"name", "status",
    "detail"}], "passed": bool}`` with status ``pass``, ``FAIL`` or ``skip``."""
    reason = cuda.variants_unavailable()
    if reason is not None:
        return {"skipped": f"no usable NVIDIA GPU here: {reason}", "passed": True}
    results = []
    for name in checks or CHECKS:
        try:
            results.append({"name": name, "status": "pass", "detail": CHECKS[name]()})
        except Skip as exc:
            results.append({"name": name, "status": "skip", "detail": str(exc)})
        except Exception as exc:  # every path is reported, one failure does not hide the others
            last = traceback.extract_tb(exc.__traceback__)[-1]
            results.append({"name": name, "status": "FAIL",
                            "detail": f"{type(exc).__name__}: {exc} ({os.path.basename(last.filename)}:{last.lineno})"})
    return {"checks": results, "passed": all(r["status"] != "FAIL" for r in results)}


def format_gpu(result: dict) -> str:
    if "skipped" in result:
        return f"GPU self-test skipped: {result['skipped']}"
    lines = [f"{r['status']:<5} {r['name']:<34} {r['detail']}" for r in result["checks"]]
    failed = sum(r["status"] == "FAIL" for r in result["checks"])
    return "\n".join(lines + [f"GPU self-test: {'all passed' if not failed else f'{failed} FAILED'}"])
