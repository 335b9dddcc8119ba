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
    assert cuda.device_id() is None


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

    pool = cuda.MemoryPool(alloc, hold_bytes=1000)
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
