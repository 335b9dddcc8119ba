"""GPU microbenchmarks: the cost of global- and shared-memory atomics, contended and not.

The CUDA source below is compiled at run time by pycuda (``SourceModule``, for the GPU it
runs on). Each kernel has every thread perform ``iters`` atomic increments, using the value
returned so that the compiler cannot merge them across a warp:

- ``global_atomic``: ``spread = 0`` puts every thread of the grid on one word (contended),
  ``spread = 1`` gives each thread its own word (uncontended);
- ``shared_atomic``: the same inside each block's shared memory.

The figure is device-wide nanoseconds per atomic operation (kernel time from CUDA events /
operations performed). Each benchmark is first sized so one repetition takes about
``TARGET_MS``, then repeated until stable (:func:`nitro.devices.microbench.run_until_stable`:
the median, or missing with the spread when it never settles).
"""
from __future__ import annotations

import numpy as np

from .microbench import run_until_stable

THREADS = 256           # threads per block
BLOCKS_PER_SM = 4
TARGET_MS = 2.0         # one repetition lasts about this long once calibrated
MAX_ITERS = 1 << 20

SOURCE = r"""
__global__ void global_atomic(unsigned int* words, unsigned int* sink, unsigned int spread, int iters)
{
    const unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int* target = words + tid * spread;  // spread 0: one word for all; 1: a word each
    unsigned int acc = 0;
    for (int i = 0; i < iters; ++i) acc += atomicAdd(target, 1u);
    sink[tid] = acc;
}

__global__ void shared_atomic(unsigned int* sink, unsigned int spread, int iters)
{
    __shared__ unsigned int words[1024];
    words[threadIdx.x] = 0;
    __syncthreads();
    unsigned int* target = words + threadIdx.x * spread;
    unsigned int acc = 0;
    for (int i = 0; i < iters; ++i) acc += atomicAdd(target, 1u);
    __syncthreads();
    sink[blockIdx.x * blockDim.x + threadIdx.x] = acc + words[threadIdx.x];
}
"""

# feature -> (kernel, spread, unit)
BENCHMARKS = {
    "global_atomic_ns": ("global_atomic", 0, "ns per contended global-memory atomic (device-wide)"),
    "global_atomic_uncontended_ns": ("global_atomic", 1, "ns per uncontended global-memory atomic (device-wide)"),
    "shared_atomic_ns": ("shared_atomic", 0, "ns per contended shared-memory atomic (device-wide)"),
    "shared_atomic_uncontended_ns": ("shared_atomic", 1, "ns per uncontended shared-memory atomic (device-wide)"),
}


class _Bench:
    """One compiled module and its buffers on the current context; ``ns_per_op(name, iters)``
    runs one timed launch."""

    def __init__(self, drv):
        from pycuda.compiler import SourceModule
        self.drv = drv
        sms = drv.Context.get_device().get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
        self.blocks = sms * BLOCKS_PER_SM
        self.threads = self.blocks * THREADS
        self.module = SourceModule(SOURCE)
        self.words = drv.mem_alloc(self.threads * 4)
        self.sink = drv.mem_alloc(self.threads * 4)

    def seconds(self, kernel: str, spread: int, iters: int) -> float:
        drv = self.drv
        fn = self.module.get_function(kernel)
        args = (self.words, self.sink) if kernel == "global_atomic" else (self.sink,)
        start, end = drv.Event(), drv.Event()
        start.record()
        fn(*args, np.uint32(spread), np.int32(iters), block=(THREADS, 1, 1), grid=(self.blocks, 1))
        end.record()
        end.synchronize()
        return start.time_till(end) * 1e-3

    def calibrated_iters(self, kernel: str, spread: int) -> int:
        iters = 16
        self.seconds(kernel, spread, iters)  # warm-up (module load, clocks)
        while iters < MAX_ITERS:
            t = self.seconds(kernel, spread, iters)
            if t >= TARGET_MS * 1e-3:
                break
            iters = min(MAX_ITERS, max(2 * iters, int(iters * TARGET_MS * 1e-3 / max(t, 1e-7))))
        return iters

    def free(self):
        self.words.free()
        self.sink.free()


def measure_gpu(index: int = 0, **kwargs) -> dict:
    """Feature records ``{"value", "unit", "source": "microbench", "spread", "repeats"}`` of GPU
    ``index``; every feature is missing with the reason when CUDA cannot be used here.
    ``kwargs`` go to :func:`run_until_stable` (``max_spread``, ``budget_s``...)."""
    from .. import cuda

    def all_missing(reason):
        return {name: {"value": None, "unit": unit, "source": "microbench", "missing": reason}
                for name, (_, _, unit) in BENCHMARKS.items()}

    reason = cuda.unavailable()
    if reason:
        return all_missing(reason)
    out = {}
    with cuda.on_device(index) as drv:
        try:
            bench = _Bench(drv)
        except Exception as exc:  # e.g. no nvcc on PATH for pycuda's run-time compilation
            return all_missing(f"cannot compile the CUDA microbenchmarks: {type(exc).__name__}: {exc}")
        try:
            for name, (kernel, spread, unit) in BENCHMARKS.items():
                iters = bench.calibrated_iters(kernel, spread)
                ops = bench.threads * iters
                r = run_until_stable(lambda _: bench.seconds(kernel, spread, iters) * 1e9 / ops, None, **kwargs)
                rec = {"value": None if "unstable" in r else r["median"], "unit": unit, "source": "microbench",
                       "spread": r["spread"], "repeats": r["repeats"]}
                if "unstable" in r:
                    rec["missing"] = r["unstable"]
                out[name] = rec
        finally:
            bench.free()
    return out
