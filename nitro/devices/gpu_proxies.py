"""GPU application proxies for P-DFS (the paper's Table 3), generated as CUDA source.

``source(kind, phi)`` writes a kernel in which every element runs ``GROUPS`` groups of
``SLOTS`` = 5 operation slots; ``phi`` slots of each group are an operation of the proxy's
kind and the other ``5 - phi`` are one integer multiply-add, so about ``phi * 20%`` of the
kernel's work is of that kind (as the CPU proxies in ``proxies/cpu_proxies.cpp``):

============  =====================================================  ========================
proxy         operation of its kind (one slot)                        device features stressed
============  =====================================================  ========================
SP-GFLOP      ``x = fmaf(x, 0.999f, 1e-4f)`` (FP32 FMA)               peak_gflops_sp, cores, clock
DP-GFLOP      ``x = fma(x, 0.999, 1e-4)`` (FP64 FMA)                  peak_gflops_dp, cores, clock
ATOMIC        ``atomicAdd(&bins[...], 1u)`` (global-memory atomic)    global/shared atomic cost
MEM-BW        a load from a buffer far larger than L2, new line each  peak_gbps, memory clock/bus
SH-MEM-BW     a load and a store of the thread's own shared-memory     shared_mem_per_block
              words (``volatile``, index moving with the element)
============  =====================================================  ========================

Every operation of the kind sits inside the element loop and the loop does ``phi`` of them
per group: the SASS of each kernel is checked for it (``tests/devices/test_gpu_proxies.py``).
Shared-memory slots must be ``volatile`` and move with the element: a non-volatile load of a
fixed word is hoisted out of the loop by the compiler, leaving a proxy with no shared traffic.

``run(kind, phi, n)`` compiles the kernel with pycuda (once per kind and phi), runs it on
``n`` elements and returns how many operations of the kind it performed
(``phi * GROUPS * n``), so that profiles can be related to the intensity; :func:`outputs`
reads back what the last run wrote (the ATOMIC proxy's bins count its atomics).
"""
from __future__ import annotations

import numpy as np

KINDS = ["SP-GFLOP", "DP-GFLOP", "ATOMIC", "MEM-BW", "SH-MEM-BW"]
SLOTS = 5
GROUPS = 4                      # slot groups per element: keeps loop overhead small
THREADS = 256
MEM_SPAN = 1 << 26              # floats in the MEM-BW buffer (256 MiB, beyond any L2)
LINE_FLOATS = 32                # 128-byte stride: each MEM-BW load touches a new line
SHARED_FLOATS = 1024
SHARED_WORDS = SHARED_FLOATS // THREADS   # tile words of each thread: tile[w * THREADS + threadIdx.x]

# One slot of each kind; {k} is the slot's number within the element (0 .. SLOTS*GROUPS-1).
_KIND_OP = {
    "SP-GFLOP": "x = fmaf(x, 0.999f, 1e-4f);",
    "DP-GFLOP": "x = fma(x, 0.999, 1e-4);",
    "ATOMIC": "atomicAdd(&bins[(i * 7u + {k}u) & 255u], 1u);",
    "MEM-BW": "x += big[((i * {slots}ull + {k}ull) * {line}ull) & {mask}ull];",
    "SH-MEM-BW": "{{ volatile float* w = tile + (((unsigned int)i + {k}u) % {words}u) * {threads}u + threadIdx.x;"
                 " x = 0.5f * (x + *w); *w = x; }}",
}
_FILLER = "k = k * k + {c}u;"   # one integer multiply-add; nonlinear, so never folded together

_TILE = r"""    __shared__ float tile[{shared}];
    for (int t = threadIdx.x; t < {shared}; t += blockDim.x) tile[t] = (float)t;
    __syncthreads();
"""

_TEMPLATE = r"""
__global__ void proxy(float* out, unsigned int* bins, const float* big, unsigned long long n)
{{
{tile}    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {{
        {real} x = ({real})(i & 1023u) * ({real})1e-3;
        unsigned int k = (unsigned int)i;
{body}
        out[i] = (float)x + (float)k;
    }}
}}
"""


def _check(kind: str, phi: int) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown GPU proxy {kind!r}; known: {', '.join(KINDS)}")
    if not isinstance(phi, (int, np.integer)) or not 0 <= phi <= SLOTS:
        raise ValueError(f"proxy intensity must be an integer 0..5, got {phi!r}")


def source(kind: str, phi: int) -> str:
    """CUDA source of proxy ``kind`` at intensity ``phi`` (one kernel named ``proxy``)."""
    _check(kind, phi)
    lines = []
    for k in range(SLOTS * GROUPS):
        op = _KIND_OP[kind] if k % SLOTS < phi else _FILLER
        lines.append(" " * 8 + op.format(k=k, c=2 * k + 1, slots=SLOTS * GROUPS, line=LINE_FLOATS,
                                         mask=MEM_SPAN - 1, words=SHARED_WORDS, threads=THREADS))
    real = "double" if kind == "DP-GFLOP" else "float"
    tile = _TILE.format(shared=SHARED_FLOATS) if kind == "SH-MEM-BW" and phi else ""  # only then is it read
    return _TEMPLATE.format(body="\n".join(lines), tile=tile, real=real)


_compiled: dict = {}
_buffers: dict = {}


def run(kind: str, phi: int, n: int = 1 << 22, index: int = 0) -> int:
    """Run proxy ``kind`` at intensity ``phi`` on ``n`` elements on GPU ``index``; returns the
    number of operations of its kind performed (``phi * GROUPS * n``)."""
    _check(kind, phi)
    if n < 1:
        raise ValueError("a proxy run needs n >= 1 elements")
    from .. import cuda
    with cuda.on_device(index) as drv:
        from pycuda.compiler import SourceModule
        key = (index, kind, int(phi))
        if key not in _compiled:
            _compiled[key] = SourceModule(source(kind, phi)).get_function("proxy")
        if (index, "big") not in _buffers:
            big = drv.mem_alloc(MEM_SPAN * 4)
            drv.memset_d32(big, 0, MEM_SPAN)
            bins = drv.mem_alloc(256 * 4)
            _buffers[(index, "big")], _buffers[(index, "bins")] = big, bins
        if _buffers.get((index, "out_n"), 0) < n:
            _buffers[(index, "out")] = drv.mem_alloc(n * 4)
            _buffers[(index, "out_n")] = n
        drv.memset_d32(_buffers[(index, "bins")], 0, 256)
        sms = drv.Context.get_device().get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
        blocks = int(min(sms * 8, (n + THREADS - 1) // THREADS))
        _compiled[key](_buffers[(index, "out")], _buffers[(index, "bins")], _buffers[(index, "big")],
                       np.uint64(n), block=(THREADS, 1, 1), grid=(blocks, 1))
        drv.Context.synchronize()
    return int(phi) * GROUPS * int(n)


def outputs(n: int, index: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(out[:n], bins)`` as the last :func:`run` on GPU ``index`` left them: every element's
    result, and the 256 bins the ATOMIC proxy increments (zero for the other kinds)."""
    if _buffers.get((index, "out_n"), 0) < n:
        raise ValueError(f"no proxy run of {n} elements on GPU {index} to read back")
    from .. import cuda
    with cuda.on_device(index) as drv:
        out, bins = np.empty(n, np.float32), np.empty(256, np.uint32)
        drv.memcpy_dtoh(out, _buffers[(index, "out")])
        drv.memcpy_dtoh(bins, _buffers[(index, "bins")])
    return out, bins
