"""CUDA histogram variants: built whenever nvcc is present; their scratch allocation checked in
the compiled object; checked against np.bincount on a GPU."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nitro import _variants, cuda
from nitro.benchmarks import histogram, histogram_cuda

REASON = histogram_cuda.unavailable()


@pytest.mark.skipif(shutil.which("nvcc") is None or os.environ.get("NITRO_CUDA") == "OFF",
                    reason="no nvcc on PATH (or NITRO_CUDA=OFF): the CUDA variants are not expected")
def test_module_is_built_with_cuda_when_nvcc_is_on_path():
    assert _variants.HAVE_CUDA, "nvcc is on PATH but nitro._variants was built without CUDA (build with NITRO_CUDA=ON)"
    assert all(hasattr(_variants.histogram_cuda, name) for name in histogram_cuda.VARIANT_NAMES)
    assert _variants.histogram_cuda.BINS == 256


def test_family_offers_the_contract_without_a_gpu():
    assert set(histogram_cuda.VARIANTS) == set(histogram.VARIANT_NAMES)
    assert set(histogram_cuda.FEATURES) == set(histogram.FEATURES)
    cv = histogram_cuda.make_code_variant()
    assert cv.default == "shared_atomic_even" and cv.name == "histogram_cuda"
    # host arrays are accepted by the reference and the features (dispatch computes them)
    img = np.arange(5000, dtype=np.uint8)
    assert np.array_equal(histogram_cuda.reference(img), np.bincount(img, minlength=256))
    assert histogram_cuda.subsample_std(img) == histogram.subsample_std(img)


@pytest.mark.skipif(shutil.which("nvcc") is None or shutil.which("nm") is None, reason="no nvcc or nm on PATH")
def test_scratch_comes_from_a_pool_that_keeps_its_memory(tmp_path):
    """The compiled launchers take scratch memory (sort buffers, work counters) from a memory
    pool whose release threshold they set, so a call reuses memory rather than paying for a
    cudaMalloc inside its timing; the default-pool cudaMallocAsync (threshold 0: memory goes back
    to the driver after every call) is not used."""
    source = Path(__file__).resolve().parents[2] / "variants_cpp" / "histogram.cu"
    obj = tmp_path / "histogram.o"
    run = subprocess.run(["nvcc", "-c", "-std=c++17", "-arch=sm_90", "-o", str(obj), str(source)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    calls = set(subprocess.run(["nm", "-u", str(obj)], capture_output=True, text=True, check=True).stdout.split())
    assert {"cudaMemPoolCreate", "cudaMemPoolSetAttribute", "cudaMallocFromPoolAsync"} <= calls
    assert "cudaMallocAsync" not in calls


@pytest.mark.parametrize("name", histogram.VARIANT_NAMES)
def test_launchers_without_a_driver_say_that_none_is_installed(name, without_cuda_driver):
    """With no CUDA driver the runtime's own words are "CUDA driver version is insufficient for
    CUDA runtime version", as if an old driver were there; the error names what is missing.
    (No pointer is dereferenced: the first runtime call fails.)"""
    with pytest.raises(RuntimeError, match=r"no CUDA driver is installed here: libcuda\.so\.1 was not found"):
        getattr(_variants.histogram_cuda, name)(1, 16, 8)


@pytest.mark.skipif(REASON is None, reason="CUDA is usable here")
def test_variants_say_why_they_cannot_run():
    with pytest.raises(RuntimeError, match="unavailable"):
        histogram_cuda.VARIANTS["sort_even"](np.zeros(4, np.uint8))


def _images():
    rng = np.random.default_rng(3)
    images = [np.zeros(0, np.uint8), np.array([7], np.uint8), rng.integers(0, 256, 255, dtype=np.uint8),
              np.full(70_001, 255, np.uint8), np.full(4097, 0, np.uint8),
              rng.integers(0, 256, (1 << 20) + 3, dtype=np.uint8),
              np.clip(rng.normal(128, 2, 3 << 20), 0, 255).astype(np.uint8)]
    images += histogram.make_inputs(7, seed=5, max_bytes=1 << 22)[0]
    return images


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=f"no CUDA GPU here: {REASON}")
@pytest.mark.parametrize("name", histogram.VARIANT_NAMES)
def test_cuda_variants_match_bincount(name):
    for image in _images():
        [data] = histogram_cuda.to_device([image])
        bins = histogram_cuda.VARIANTS[name](data)
        assert bins.dtype == np.uint64 and bins.shape == (256,)
        assert np.array_equal(histogram_cuda.to_host(bins), np.bincount(image.ravel(), minlength=256)), \
            (name, image.size)


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=f"no CUDA GPU here: {REASON}")
@pytest.mark.parametrize("name", histogram.VARIANT_NAMES)
def test_launchers_run_on_a_given_stream(name):
    from pycuda import gpuarray
    image = np.random.default_rng(0).integers(0, 256, 100_000, dtype=np.uint8)
    [data] = histogram_cuda.to_device([image])
    with cuda.on_device() as drv:
        bins = gpuarray.empty(256, np.uint64)
        stream = drv.Stream()
        getattr(_variants.histogram_cuda, name)(int(data.gpudata), data.size, int(bins.gpudata), stream.handle)
        stream.synchronize()
        assert np.array_equal(bins.get(), np.bincount(image, minlength=256))


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=f"no CUDA GPU here: {REASON}")
def test_outputs_come_from_the_pool_and_variants_run_in_any_thread():
    """Repeated calls reuse pooled output memory (no growth after the first), and a variant
    called from worker threads (the threading backend, refining mode) gets the context."""
    from concurrent.futures import ThreadPoolExecutor
    image = np.random.default_rng(1).integers(0, 256, 50_000, dtype=np.uint8)
    [data] = histogram_cuda.to_device([image])
    expected = np.bincount(image, minlength=256)
    fn = histogram_cuda.VARIANTS["sort_even"]
    assert np.array_equal(histogram_cuda.to_host(fn(data)), expected)
    with cuda.on_device():
        pool = cuda.memory_pool()
        managed, active = pool.managed_bytes, pool.active_blocks   # the input's block is active
    for _ in range(5):
        assert np.array_equal(histogram_cuda.to_host(fn(data)), expected)
    assert pool.managed_bytes == managed and pool.active_blocks == active
    with ThreadPoolExecutor(3) as threads:
        counts = list(threads.map(lambda name: histogram_cuda.to_host(histogram_cuda.VARIANTS[name](data)),
                                  histogram.VARIANT_NAMES))
    assert all(np.array_equal(c, expected) for c in counts)


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=f"no CUDA GPU here: {REASON}")
def test_features_on_the_gpu_equal_the_cpu_family_features():
    images = histogram.make_inputs(5, seed=9)[0] + [np.arange(3000, dtype=np.uint8)]
    for image, data in zip(images, histogram_cuda.to_device(images)):
        for name, feature in histogram_cuda.FEATURES.items():
            assert feature(data) == pytest.approx(histogram.FEATURES[name](image)), name


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=f"no CUDA GPU here: {REASON}")
def test_invalid_inputs_are_refused():
    from pycuda import gpuarray
    with cuda.on_device():
        ints = gpuarray.zeros(10, np.int32)
    with pytest.raises(TypeError, match="uint8"):
        histogram_cuda.VARIANTS["global_atomic_even"](ints)
    with pytest.raises(TypeError, match="GPUArray"):
        histogram_cuda.VARIANTS["global_atomic_even"](np.zeros(10, np.uint8))


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=f"no CUDA GPU here: {REASON}")
def test_family_tunes_and_dispatches_on_the_gpu(store):
    from nitro import autotuner
    from nitro.devices.gpu import list_gpus
    cv = histogram_cuda.make_code_variant()
    assert cv.device_id in {g["id"] for g in list_gpus()}
    cv.record = True
    tuner = autotuner("histogram_cuda", store=store)
    (train, ids), (test, _) = histogram_cuda.train_test_inputs(8, 2, seed=1)
    tuner.set_training_args(train, ids=ids)
    [model] = tuner.tune([cv])
    rows = store.rows("histogram_cuda", cv.device_id)
    assert len(rows) == 8 and all(not r.failed for r in rows)
    assert store.device(cv.device_id)["multiprocessors"]["value"] > 0
    out = cv(test[0])
    assert np.array_equal(histogram_cuda.to_host(out), histogram_cuda.reference(test[0]))


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=f"no CUDA GPU here: {REASON}")
def test_inputs_and_outputs_can_be_dropped_anywhere():
    """Seen on an H100: an output from pycuda's pool dropped outside ``on_device`` aborted the
    process ("explicit_context_dependent failed: invalid device context"). Run apart, so that
    an abort fails this test instead of ending the session."""
    code = """if True:
        import threading
        import numpy as np
        from nitro.benchmarks import histogram_cuda as h
        [data] = h.to_device([np.arange(100_000, dtype=np.uint8)])
        out = h.VARIANTS["sort_even"](data)
        del out                                   # no context current here
        outs = [h.VARIANTS[name](data) for name in h.VARIANT_NAMES]
        worker = threading.Thread(target=outs.clear)
        worker.start(); worker.join()             # dropped in a thread that never used CUDA
        counts = h.to_host(h.VARIANTS["global_atomic_even"](data))
        del data
        print("ok", int(counts.sum()))
    """
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "ok 100000" in run.stdout, run.stderr[-2000:]
