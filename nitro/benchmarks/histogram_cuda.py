"""Histogram of uint8 data on an NVIDIA GPU: the six CUDA variants of
``variants_cpp/histogram.cu`` under the family contract of :mod:`nitro.benchmarks.histogram`,
on pycuda ``GPUArray`` inputs and outputs, so the family tunes on a GPU through the same API.

pycuda is imported on first use only; :func:`unavailable` says why the family cannot run here.
Every variant makes the primary context current in the calling thread (:func:`nitro.cuda.on_device`),
takes its output from a memory pool (no ``cuMemAlloc`` per call once warm: the kernels' scratch
comes from a pool too, see ``histogram.cu``) and synchronises before it returns, so that a host
timer measures the kernels (the input stays on the GPU: no transfer is timed).
"""
from __future__ import annotations

import numpy as np

from .. import _variants
from .. import cuda
from ..devices.gpu import cuda_device_id
from ..variant import CodeVariant, code_variant
from . import histogram

VARIANT_NAMES = list(histogram.VARIANT_NAMES)
BINS = histogram.BINS


unavailable = cuda.variants_unavailable   # None when the family can run here, else why not


def _launchers():
    reason = unavailable()
    if reason:
        raise RuntimeError(f"CUDA histogram variants unavailable: {reason}")
    return _variants.histogram_cuda


def _as_device_u8(data):
    from pycuda import gpuarray
    if not isinstance(data, gpuarray.GPUArray):
        raise TypeError(f"CUDA histogram input must be a pycuda GPUArray, got {type(data).__name__}")
    if data.dtype != np.uint8:
        raise TypeError(f"CUDA histogram input must have dtype uint8, got {data.dtype}")
    if not data.flags.c_contiguous:
        raise ValueError("CUDA histogram input must be C-contiguous")
    if data.size > _variants.histogram_cuda.MAX_ITEMS:
        raise ValueError(f"CUDA histogram input has {data.size} items; at most {_variants.histogram_cuda.MAX_ITEMS}")
    return data


def _pointer(array) -> int:
    """Device address of a GPUArray (0 for an empty one, which pycuda allocates nothing for)."""
    return int(array.gpudata) if array.size else 0


def _wrap(name):
    def variant(data):
        launch = getattr(_launchers(), name)
        from pycuda import gpuarray
        data = _as_device_u8(data)
        with cuda.on_device() as drv:
            bins = gpuarray.empty(BINS, dtype=np.uint64, allocator=cuda.memory_pool().allocate)
            launch(_pointer(data), int(data.size), _pointer(bins), 0)
            drv.Context.synchronize()
        return bins
    variant.__name__ = name
    variant.__doc__ = f"256-bin histogram of a uint8 GPUArray, CUDA variant {name} (returns a uint64 GPUArray)"
    return variant


VARIANTS = {name: _wrap(name) for name in VARIANT_NAMES}


to_host = cuda.to_host   # a GPUArray's contents as a NumPy array (NumPy arrays pass through)


def reference(data) -> np.ndarray:
    return histogram.reference(to_host(data).ravel())


def baseline(data) -> np.ndarray:
    """What a NumPy user would do: copy to the host, ``np.bincount``."""
    return np.bincount(to_host(data).ravel(), minlength=BINS)


def check(result, expected) -> bool:
    """A variant's GPUArray output equals the expected counts exactly."""
    return np.array_equal(to_host(result), to_host(expected))


# -- input features: the CPU family's, computed without copying the whole input --------------
def n(data) -> float:
    return float(data.size)


def n_per_bin(data) -> float:
    return data.size / BINS


def subsample_std(data, samples: int = 1024) -> float:
    """Standard deviation of ``data.ravel()[::max(1, N // samples)]`` (as the CPU family's
    feature), gathered from the GPU with one strided 2-D copy."""
    if isinstance(data, np.ndarray):
        return histogram.subsample_std(data, samples)
    size = int(data.size)
    if size == 0:
        return 0.0
    step = max(1, size // samples)
    picked = np.empty((size + step - 1) // step, dtype=np.uint8)
    with cuda.on_device() as drv:
        copy = drv.Memcpy2D()
        copy.set_src_device(_pointer(data))
        copy.src_pitch = step
        copy.set_dst_host(picked)
        copy.dst_pitch = 1
        copy.width_in_bytes = 1
        copy.height = picked.size
        copy(aligned=False)
    return float(picked.std())


FEATURES = {"N": n, "N_per_bin": n_per_bin, "subsample_std": subsample_std}


def make_code_variant(name: str = "histogram_cuda") -> CodeVariant:
    """The family's code variant; on a machine with a usable GPU its ``device_id`` is that
    GPU's id, so training rows are recorded under the GPU (not the CPU)."""
    cv = code_variant(name, VARIANTS, FEATURES, default="shared_atomic_even", reference=reference, check=check)
    cv.device_id = cuda_device_id()
    return cv


def to_device(images) -> list:
    """Upload host images as flat uint8 GPUArrays."""
    flat = [np.ascontiguousarray(img, dtype=np.uint8).reshape(-1) for img in images]
    with cuda.on_device():
        from pycuda import gpuarray
        allocate = cuda.memory_pool().allocate   # dropped anywhere without a context (see DeviceBlock)
        return [gpuarray.to_gpu(a, allocator=allocate) if a.size else gpuarray.empty(0, np.uint8) for a in flat]


def train_test_inputs(n_train: int = 48, n_test: int = 48, seed: int = 0):
    """The CPU family's images (same ids), uploaded to the GPU."""
    (train, train_ids), (test, test_ids) = histogram.train_test_inputs(n_train, n_test, seed)
    return (to_device(train), train_ids), (to_device(test), test_ids)
