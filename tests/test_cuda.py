"""``nitro.cuda``: the reason CUDA is unusable, the GPU index, whether the driver is loaded, and
that no module makes a context current only in the thread that imports it."""
import ast
from pathlib import Path

import pytest

from nitro import cuda

PACKAGE = Path(cuda.__file__).resolve().parent


def test_no_module_relies_on_a_context_made_current_at_import():
    """``pycuda.autoinit``/``autoprimaryctx`` make a context current in the importing thread
    only, so a variant called from another thread (threading backend, refining mode) gets
    "invalid device context"; nitro's GPU code enters :func:`nitro.cuda.on_device` instead."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.name}: {n}" for n in names if n in ("pycuda.autoinit", "pycuda.autoprimaryctx")]
    assert not offenders


@pytest.mark.skipif(cuda.unavailable() is None, reason="a CUDA GPU is usable here")
def test_without_cuda_blocks_on_the_gpu_say_why():
    assert not cuda.driver_loaded()      # nothing here has loaded libcuda: measurement may fork
    with pytest.raises(RuntimeError, match="CUDA is not available: "):
        with cuda.on_device():
            pass
    # memory_pool() failed with pycuda's own ModuleNotFoundError (or its driver error) instead
    with pytest.raises(RuntimeError, match="CUDA is not available: "):
        cuda.memory_pool()


def test_the_gpu_index_comes_from_cuda_device(monkeypatch):
    monkeypatch.delenv("CUDA_DEVICE", raising=False)
    assert cuda.default_index() == 0
    monkeypatch.setenv("CUDA_DEVICE", "2")
    assert cuda.default_index() == 2
    monkeypatch.setenv("CUDA_DEVICE", "gpu0")
    with pytest.raises(ValueError, match="CUDA_DEVICE must be a GPU index"):
        cuda.default_index()


class _Allocation:
    """Stands in for pycuda's ``DeviceAllocation`` (an address, ``free()``)."""
    next_address = 4096

    def __init__(self, nbytes, freed):
        self.address, self.freed = _Allocation.next_address, freed
        _Allocation.next_address += max(nbytes, 1)

    def __int__(self):
        return self.address

    def free(self):
        self.freed.append(self.address)


def test_pool_blocks_are_addresses_given_back_when_dropped_without_cuda_calls():
    """A dropped block goes back to the pool in plain Python (no context needed: pycuda's own
    pool aborted the process when an output was dropped outside ``on_device``, seen on an H100),
    is reused for the same size, and beyond ``hold_bytes`` is freed at the next allocation."""
    freed, made = [], []

    def alloc(n):
        made.append(_Allocation(n, freed))
        return made[-1]

    pool = cuda.MemoryPool(hold_bytes=1000, alloc=alloc)
    block = pool.allocate(800)
    assert isinstance(block, int) and int(block) == made[0].address and pool.active_blocks == 1
    del block
    assert pool.active_blocks == 0 and pool.held_bytes == 800 and not freed
    again = pool.allocate(800)
    assert int(again) == made[0].address and len(made) == 1      # reused, no new allocation
    other = pool.allocate(600)
    del again                                                     # held: 800
    del other                                                     # 800 + 600 > 1000: released later
    assert not freed and pool.held_bytes == 800
    pool.allocate(10)
    assert freed == [made[1].address] and pool.managed_bytes == 800 + 10


def test_a_copied_block_is_a_plain_address_and_a_full_gpu_gives_the_held_blocks_back():
    """A copy of a block must not give it back a second time (found in review); when the
    allocator runs out of memory the held blocks are freed and the allocation tried again."""
    import copy
    import pickle
    freed, made, full = [], [], []

    def alloc(n):
        if full and full.pop():
            raise MemoryError("cuMemAlloc failed: out of memory")
        made.append(_Allocation(n, freed))
        return made[-1]

    pool = cuda.MemoryPool(alloc=alloc)
    block = pool.allocate(8)
    twins = [copy.copy(block), copy.deepcopy(block), pickle.loads(pickle.dumps(block))]
    assert all(type(t) is int and t == block for t in twins)
    del twins, block
    assert pool.active_blocks == 0 and pool.held_bytes == 8
    full.append(True)
    big = pool.allocate(64)                      # the first try fails; the held 8 bytes are freed
    assert freed == [made[0].address] and int(big) == made[1].address and pool.managed_bytes == 64
    full += [True, True]
    with pytest.raises(MemoryError):
        pool.allocate(128)                       # nothing held: the second failure is the caller's
