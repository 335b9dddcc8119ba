"""pycuda access shared by nitro's GPU code: why CUDA cannot be used here, and one context.

Nothing here imports pycuda at module import, so nitro imports on machines with no GPU,
no driver and no pycuda; the GPU code asks :func:`unavailable` first and reports the reason.
"""
from __future__ import annotations

from contextlib import contextmanager
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


def device_id() -> str | None:
    """The stable id of the GPU the context is on (``nvidia_h100_80gb_hbm3``…), so that
    training rows of a GPU family are recorded under the GPU; ``None`` without a usable GPU."""
    if variants_unavailable() is not None:
        return None
    from .devices.gpu import gpu_device_id
    return gpu_device_id(context().Context.get_device().name())


def context():
    """Make the primary CUDA context of the first GPU (``$CUDA_DEVICE`` picks another) current
    and return the ``pycuda.driver`` module; raises ``RuntimeError`` with the reason when CUDA
    is unavailable. The primary context is the one the CUDA runtime uses, so nitro's compiled
    CUDA variants and pycuda share it; it stays current until the interpreter exits."""
    reason = unavailable()
    if reason:
        raise RuntimeError(f"CUDA is not available: {reason}")
    import pycuda.autoprimaryctx  # noqa: F401  (retains and pushes the primary context once)
    import pycuda.driver as drv
    return drv


_primary: dict = {}


@contextmanager
def on_device(index: int = 0):
    """Run a block in the primary CUDA context of GPU ``index`` (pushed, then popped; kept
    retained for the process's life so that modules and memory made in it stay valid);
    yields ``pycuda.driver``. Raises ``RuntimeError`` with the reason when CUDA is unavailable."""
    reason = unavailable()
    if reason:
        raise RuntimeError(f"CUDA is not available: {reason}")
    import pycuda.driver as drv
    current = drv.Context.get_current()
    if current is not None and current.get_device().pci_bus_id() == drv.Device(index).pci_bus_id():
        yield drv  # already on that GPU (e.g. after context())
        return
    if index not in _primary:
        _primary[index] = drv.Device(index).retain_primary_context()
    _primary[index].push()
    try:
        yield drv
    finally:
        drv.Context.pop()
