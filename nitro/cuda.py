"""pycuda access shared by nitro's GPU code: why CUDA cannot be used here, the primary context
in any thread, and whether this process has loaded the CUDA driver (and so must not fork).

Nothing here imports pycuda at module import, so nitro imports on machines with no GPU,
no driver and no pycuda; the GPU code asks :func:`unavailable` first and reports the reason.
"""
from __future__ import annotations

import os
import sys
import threading
from collections import deque
from contextlib import contextmanager, nullcontext
from functools import lru_cache


@lru_cache(maxsize=1)
def unavailable() -> str | None:
    """``None`` when pycuda can drive at least one CUDA GPU here, else the reason why not."""
    try:
        import pycuda.driver as drv
    except ImportError as exc:
        return f"pycuda is not installed ({exc}); install the extra: pip install 'nitro[gpu]'"
    except Exception as exc:  # pycuda present but its compiled part cannot load (no libcuda)
        return f"pycuda cannot load the CUDA driver library: {exc}"
    try:
        drv.init()
        count = drv.Device.count()
    except Exception as exc:
        return f"no usable CUDA driver: {exc}"
    return None if count > 0 else "the CUDA driver reports no GPU"


def variants_unavailable() -> str | None:
    """``None`` when nitro's compiled CUDA variants can run here, else the reason why not
    (a build without nvcc, or :func:`unavailable`)."""
    from . import _variants
    if not _variants.HAVE_CUDA:
        return "nitro's compiled module was built without CUDA (no nvcc at build time)"
    return unavailable()


def driver_loaded() -> bool:
    """Whether this process has loaded the CUDA driver library (``libcuda.so``, mapped by
    pycuda, the CUDA runtime of nitro's variants, CuPy, PyTorch…). After ``cuInit`` a forked
    child cannot use CUDA ("initialization error"), so measurement never forks such a process."""
    try:
        with open("/proc/self/maps", encoding="ascii", errors="replace") as maps:
            for line in maps:
                if os.path.basename(line.rstrip()).startswith("libcuda.so"):
                    return True
    except OSError:  # no procfs (not Linux): only what Python has imported can tell
        pass
    return "pycuda._driver" in sys.modules


def default_index() -> int:
    """The GPU nitro's CUDA families run on: ``$CUDA_DEVICE`` (as pycuda reads it), else 0."""
    value = os.environ.get("CUDA_DEVICE", "0")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"CUDA_DEVICE must be a GPU index, got {value!r}") from None


_primary: dict = {}
_lock = threading.Lock()


def _primary_context(drv, index: int):
    """The process's one pycuda object for GPU ``index``'s primary context (retained once, kept
    for the process's life so that modules and memory made in it stay valid). One object for
    every thread: pycuda frees memory without switching contexts when the context current in the
    freeing thread is the very object the memory was allocated under."""
    with _lock:
        if index not in _primary:
            _primary[index] = drv.Device(index).retain_primary_context()
        return _primary[index]


@contextmanager
def on_device(index: int | None = None):
    """Run a block with the primary CUDA context of GPU ``index`` (:func:`default_index` when
    ``None``) current in the calling thread, whichever thread that is (a context is current per
    thread: one made current at import serves only the importing thread); yields
    ``pycuda.driver``. Pushed for the block and popped after it, unless it was current already.
    Nitro's compiled CUDA variants share it: the primary context is the CUDA runtime's.
    Raises ``RuntimeError`` with the reason when CUDA is unavailable."""
    reason = unavailable()
    if reason:
        raise RuntimeError(f"CUDA is not available: {reason}")
    import pycuda.driver as drv
    ctx = _primary_context(drv, default_index() if index is None else index)
    current = drv.Context.get_current()
    if current is not None and current.handle == ctx.handle:
        yield drv
        return
    ctx.push()
    try:
        yield drv
    finally:
        drv.Context.pop()


def to_host(array):
    """A device array's contents as a NumPy array, copied from any thread (NumPy arrays pass
    through)."""
    import numpy as np
    if isinstance(array, np.ndarray):
        return array
    with on_device():
        return array.get()


HOLD_BYTES = 1 << 30   # freed blocks a pool keeps for reuse; beyond this they go back to the driver


class DeviceBlock(int):
    """The device address of a pooled block (an ``int``, as pycuda's copies and kernel calls
    take it) that goes back to its pool when dropped. Giving it back is plain Python and needs
    no CUDA context, so a GPUArray can be dropped in any thread, inside ``on_device`` or not:
    pycuda's own pool acquires the current context when a freed block is its first held one,
    and aborts the process when none is current. A copy is a plain ``int`` (two owners would
    give the block back twice)."""

    def __del__(self):
        pool = getattr(self, "pool", None)
        if pool is not None:
            pool.give_back(self.nbytes, self.allocation)

    def __copy__(self):
        return int(self)

    def __deepcopy__(self, memo):
        return int(self)

    def __reduce__(self):
        return int, (int(self),)


class MemoryPool:
    """Device memory of GPU ``index`` kept for reuse, by exact size: after the first call of a
    size a variant's output costs no ``cuMemAlloc``, so timings are of kernels, not allocation.
    Dropped blocks are queued (plain Python, safe in ``__del__``) and sorted by the next
    ``allocate`` or figure read: up to ``hold_bytes`` kept, the rest freed by ``allocate``, which
    makes the GPU's context current itself (pycuda's arrays call their allocator again in
    ``copy()`` and arithmetic, wherever they are). When the GPU is out of memory the held blocks
    are freed and the allocation tried once more. ``alloc``: a stand-in for ``mem_alloc``
    (tests; no context is entered then)."""

    def __init__(self, index: int | None = None, hold_bytes: int = HOLD_BYTES, alloc=None):
        self.index, self.hold_bytes, self._alloc = index, hold_bytes, alloc
        self._lock = threading.Lock()            # never taken by __del__: give_back only appends
        self._returned: deque = deque()          # append / popleft are atomic
        self._free: dict[int, list] = {}
        self._release: list = []
        self._active = self._held = self._managed = 0

    def _sort_returned(self) -> None:
        """Under ``_lock``: file the blocks dropped since the last call."""
        while True:
            try:
                nbytes, allocation = self._returned.popleft()
            except IndexError:
                return
            self._active -= 1
            if self._held + nbytes <= self.hold_bytes:
                self._free.setdefault(nbytes, []).append(allocation)
                self._held += nbytes
            else:
                self._release.append((nbytes, allocation))

    def _free_all(self, held: bool) -> None:
        """Under ``_lock``, with the context current: free the queued blocks (and the held ones)."""
        stale, self._release = self._release, []
        if held:
            stale += [(n, a) for n, blocks in self._free.items() for a in blocks]
            self._free, self._held = {}, 0
        for nbytes, allocation in stale:
            self._managed -= nbytes
            allocation.free()

    def allocate(self, nbytes: int) -> DeviceBlock:
        nbytes = int(nbytes)
        with (on_device(self.index) if self._alloc is None else nullcontext()) as drv, self._lock:
            alloc = self._alloc or drv.mem_alloc
            self._sort_returned()
            self._free_all(held=False)
            try:
                allocation = self._free[nbytes].pop()
                self._held -= nbytes
            except (KeyError, IndexError):
                try:
                    allocation = alloc(max(nbytes, 1))
                except Exception as exc:       # out of memory: give the held blocks back, once
                    if "out of memory" not in str(exc).lower():
                        raise
                    self._free_all(held=True)
                    allocation = alloc(max(nbytes, 1))
                self._managed += nbytes
            self._active += 1
        block = DeviceBlock(int(allocation))
        block.nbytes, block.allocation, block.pool = nbytes, allocation, self
        return block

    def give_back(self, nbytes: int, allocation) -> None:
        self._returned.append((nbytes, allocation))   # deque.append is atomic: safe in __del__

    def _figure(self, name: str) -> int:
        with self._lock:
            self._sort_returned()
            return getattr(self, name)

    active_blocks = property(lambda self: self._figure("_active"), doc="blocks handed out and not dropped")
    held_bytes = property(lambda self: self._figure("_held"), doc="bytes of dropped blocks kept for reuse")
    managed_bytes = property(lambda self: self._figure("_managed"), doc="bytes allocated from the driver and not freed")


_pools: dict = {}


def memory_pool() -> MemoryPool:
    """The :class:`MemoryPool` of the current context's GPU (call inside :func:`on_device`).
    Raises ``RuntimeError`` with the reason when CUDA is unavailable."""
    reason = unavailable()
    if reason:
        raise RuntimeError(f"CUDA is not available: {reason}")
    import pycuda.driver as drv
    current = drv.Context.get_current()
    if current is None:
        raise RuntimeError("nitro.cuda.memory_pool() needs a current context: call it inside nitro.cuda.on_device()")
    with _lock:
        if current.handle not in _pools:
            device = drv.Context.get_device()
            _pools[current.handle] = MemoryPool(next(i for i in range(drv.Device.count()) if drv.Device(i) == device))
        return _pools[current.handle]
