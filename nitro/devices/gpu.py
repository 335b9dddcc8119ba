"""NVIDIA GPU features: CUDA device attributes (pycuda) and NVML figures (pynvml).

Every feature is ``{"value", "unit", "source"}``: ``"query"`` for what the driver reports,
``"derived"`` (with ``"from"``) for figures computed from queried ones (CUDA cores, peak
GB/s and GFLOP/s). A feature that cannot be collected has ``"value": None`` and the reason in
``"missing"`` (no pycuda, no driver, no NVML, attribute not reported). GPUs are found through
pycuda, else through NVML; neither module is imported before a GPU is asked for.
"""
from __future__ import annotations

from .cpu import _slug

# CUDA cores (FP32 lanes) per multiprocessor by compute capability, as in the CUDA samples'
# helper_cuda.h (_ConvertSMVer2Cores).
CORES_PER_SM = {
    (2, 0): 32, (2, 1): 48,
    (3, 0): 192, (3, 2): 192, (3, 5): 192, (3, 7): 192,
    (5, 0): 128, (5, 2): 128, (5, 3): 128,
    (6, 0): 64, (6, 1): 128, (6, 2): 128,
    (7, 0): 64, (7, 2): 64, (7, 5): 64,
    (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,
    (9, 0): 128,
    (10, 0): 128, (10, 1): 128, (10, 3): 128, (11, 0): 128, (12, 0): 128, (12, 1): 128,
}

# FP64 : FP32 throughput by compute capability (NVIDIA's CUDA C++ Programming Guide,
# arithmetic instruction throughput table); unknown capabilities leave peak_gflops_dp missing.
DP_RATIO = {
    (3, 0): 1 / 24, (3, 2): 1 / 24, (3, 5): 1 / 3, (3, 7): 1 / 3,
    (5, 0): 1 / 32, (5, 2): 1 / 32, (5, 3): 1 / 32,
    (6, 0): 1 / 2, (6, 1): 1 / 32, (6, 2): 1 / 32,
    (7, 0): 1 / 2, (7, 2): 1 / 32, (7, 5): 1 / 32,
    (8, 0): 1 / 2, (8, 6): 1 / 64, (8, 7): 1 / 64, (8, 9): 1 / 64,
    (9, 0): 1 / 2,
    (10, 0): 1 / 2, (12, 0): 1 / 64,
}

# feature -> (pycuda device_attribute name, scale to the unit, unit). Sizes are binary (KiB,
# GiB) as the driver reports bytes; the feature names keep "kb"/"gb" for the recorded data.
# shared_mem_per_block_kb is the default limit of a block (48 KiB on every GPU since Kepler, as
# the datasheet and the recorded devices have it); the opt-in figure is what a kernel may ask
# for with cudaFuncSetAttribute (227 KiB on the H100).
CUDA_ATTRIBUTES = {
    "multiprocessors": ("MULTIPROCESSOR_COUNT", 1, "SMs"),
    "clock_mhz": ("CLOCK_RATE", 1e-3, "MHz"),                       # kHz
    "mem_clock_mhz": ("MEMORY_CLOCK_RATE", 1e-3, "MHz"),            # kHz
    "mem_bus_width_bits": ("GLOBAL_MEMORY_BUS_WIDTH", 1, "bits"),
    "l2_cache_kb": ("L2_CACHE_SIZE", 1 / 1024, "KiB"),              # bytes
    "shared_mem_per_block_kb": ("MAX_SHARED_MEMORY_PER_BLOCK", 1 / 1024, "KiB"),
    "shared_mem_per_block_optin_kb": ("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", 1 / 1024, "KiB"),
    "shared_mem_per_sm_kb": ("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", 1 / 1024, "KiB"),
    "copy_engines": ("ASYNC_ENGINE_COUNT", 1, "engines"),
    "warp_size": ("WARP_SIZE", 1, "threads"),
}


def gpu_device_id(name: str) -> str:
    """Stable id of a GPU model from its marketing name: ``NVIDIA H100 80GB HBM3`` ->
    ``nvidia_h100_80gb_hbm3`` (``Tesla K40m`` -> ``tesla_k40m``, as in the SpMV data)."""
    slug = _slug(name)
    if not slug:
        raise ValueError(f"GPU name {name!r} gives an empty device id")
    return slug


def cuda_device_id() -> str | None:
    """The stable id of the GPU nitro's CUDA families run on (``nvidia_h100_80gb_hbm3``…), so
    that training rows of a GPU family are recorded under the GPU; ``None`` without a usable GPU."""
    from .. import cuda
    if cuda.variants_unavailable() is not None:
        return None
    with cuda.on_device() as drv:
        return gpu_device_id(drv.Context.get_device().name())


def cuda_cores_per_sm(major: int, minor: int) -> int | None:
    """FP32 cores per multiprocessor of a compute capability; ``None`` when unknown."""
    return CORES_PER_SM.get((int(major), int(minor)))


def _feature(value, unit: str, source: str = "query", missing: str | None = None, **extra) -> dict:
    rec = {"value": None if value is None else float(value), "unit": unit, "source": source, **extra}
    if value is None:
        rec["missing"] = missing or "not reported"
    return rec


# -- back ends: pycuda for CUDA attributes, pynvml for NVML --------------------------------------
def _pycuda():
    """``(pycuda.driver, None)`` with the driver initialised, or ``(None, reason)``."""
    from .. import cuda
    reason = cuda.unavailable()
    if reason:
        return None, reason
    import pycuda.driver as drv
    return drv, None


_nvml_state: dict = {}


def _nvml():
    """``(pynvml, None)`` with NVML initialised (once), or ``(None, reason)``."""
    if "module" not in _nvml_state:
        try:
            import pynvml
        except ImportError as exc:
            _nvml_state.update(module=None, reason=f"pynvml is not installed ({exc}); "
                                                   "install the extra: pip install 'nitro[gpu]'")
        else:
            try:
                pynvml.nvmlInit()
                _nvml_state.update(module=pynvml, reason=None)
            except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
                _nvml_state.update(module=None, reason=f"NVML unavailable: {exc}")
    return _nvml_state["module"], _nvml_state["reason"]


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def list_gpus() -> list[dict]:
    """Every NVIDIA GPU here as ``{"index", "name", "id", "pci_bus_id"}`` (CUDA order when
    pycuda works, else NVML order); empty when none can be found (see :func:`unavailable`)."""
    drv, _ = _pycuda()
    if drv is not None:
        out = []
        for i in range(drv.Device.count()):
            dev = drv.Device(i)
            out.append({"index": i, "name": dev.name(), "id": gpu_device_id(dev.name()),
                        "pci_bus_id": dev.pci_bus_id()})
        return out
    nvml, _ = _nvml()
    if nvml is None:
        return []
    out = []
    for i in range(nvml.nvmlDeviceGetCount()):
        h = nvml.nvmlDeviceGetHandleByIndex(i)
        name = _text(nvml.nvmlDeviceGetName(h))
        out.append({"index": i, "name": name, "id": gpu_device_id(name),
                    "pci_bus_id": _text(nvml.nvmlDeviceGetPciInfo(h).busId)})
    return out


def unavailable() -> str | None:
    """``None`` when at least one GPU can be listed, else why none is listed."""
    drv, cuda_reason = _pycuda()
    if drv is not None:
        return None
    nvml, nvml_reason = _nvml()
    if nvml is not None and nvml.nvmlDeviceGetCount() > 0:
        return None
    return f"no NVIDIA GPU listed: {cuda_reason}; {nvml_reason or 'NVML reports no GPU'}"


def _cuda_features(index: int) -> dict:
    drv, reason = _pycuda()
    if drv is None:
        units = {"global_mem_gb": "GiB", "compute_capability": "major.minor",
                 **{k: u for k, (_, _, u) in CUDA_ATTRIBUTES.items()}}
        return {k: _feature(None, u, missing=reason) for k, u in units.items()}
    return cuda_features(drv, drv.Device(index))


def cuda_features(drv, dev) -> dict:
    """Feature records of one pycuda ``Device`` (``drv`` is ``pycuda.driver``): its memory,
    compute capability and :data:`CUDA_ATTRIBUTES`, each missing where the driver lacks it."""
    major, minor = dev.compute_capability()
    out = {"global_mem_gb": _feature(dev.total_memory() / 2 ** 30, "GiB"),
           "compute_capability": _feature(major + minor / 10, "major.minor")}
    for feature, (attr, scale, unit) in CUDA_ATTRIBUTES.items():
        code = getattr(drv.device_attribute, attr, None)
        value = None
        if code is not None:
            try:
                value = dev.get_attribute(code) * scale
            except drv.Error:
                value = None
        out[feature] = _feature(value, unit, missing=f"the CUDA driver does not report {attr}")
    return out


def _nvml_features(pci_bus_id: str | None, index: int) -> dict:
    nvml, reason = _nvml()
    spec = {"nvml_max_sm_clock_mhz": "MHz", "nvml_max_mem_clock_mhz": "MHz", "nvml_memory_gb": "GiB",
            "power_limit_w": "W", "pcie_generation": "generation", "pcie_width": "lanes"}
    if nvml is None:
        return {k: _feature(None, u, missing=reason) for k, u in spec.items()}
    try:  # CUDA and NVML may number GPUs differently: match by PCI bus id
        h = nvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
    except nvml.NVMLError:
        h = nvml.nvmlDeviceGetHandleByIndex(index)
    queries = {
        "nvml_max_sm_clock_mhz": lambda: nvml.nvmlDeviceGetMaxClockInfo(h, nvml.NVML_CLOCK_SM),
        "nvml_max_mem_clock_mhz": lambda: nvml.nvmlDeviceGetMaxClockInfo(h, nvml.NVML_CLOCK_MEM),
        "nvml_memory_gb": lambda: nvml.nvmlDeviceGetMemoryInfo(h).total / 2 ** 30,
        "power_limit_w": lambda: nvml.nvmlDeviceGetPowerManagementLimit(h) / 1000,   # mW
        "pcie_generation": lambda: nvml.nvmlDeviceGetMaxPcieLinkGeneration(h),
        "pcie_width": lambda: nvml.nvmlDeviceGetMaxPcieLinkWidth(h),
    }
    out = {}
    for feature, query in queries.items():
        try:
            out[feature] = _feature(query(), spec[feature])
        except nvml.NVMLError as exc:
            out[feature] = _feature(None, spec[feature], missing=f"NVML: {exc}")
    return out


def derive(record: dict) -> dict:
    """CUDA cores and peak figures computed from a record's queried features:
    cores = SMs x cores/SM(compute capability); peak GFLOP/s SP = 2 (FMA) x cores x clock;
    DP = SP x FP64:FP32 ratio(compute capability); peak GB/s = 2 (double data rate) x memory
    clock x bus width / 8."""
    def value(name):
        return record.get(name, {}).get("value")

    cc = value("compute_capability")
    cap = None if cc is None else (int(cc), int(round(10 * (cc - int(cc)))))
    per_sm = None if cap is None else cuda_cores_per_sm(*cap)
    sms, width = value("multiprocessors"), value("mem_bus_width_bits")
    # NVML's maximum clocks stand in where the CUDA driver no longer reports clock rates
    clock_name = "clock_mhz" if value("clock_mhz") is not None else "nvml_max_sm_clock_mhz"
    mem_clock_name = "mem_clock_mhz" if value("mem_clock_mhz") is not None else "nvml_max_mem_clock_mhz"
    clock, mem_clock = value(clock_name), value(mem_clock_name)

    def need(*names):
        gone = [n for n in names if value(n) is None]
        return f"needs {', '.join(gone)}" if gone else None

    out = {}
    cores = sms * per_sm if sms is not None and per_sm is not None else None
    out["cuda_cores_per_sm"] = _feature(per_sm, "cores/SM", "derived",
                                        missing=need("compute_capability") or f"compute capability {cc} not in the table")
    out["cores"] = _feature(cores, "cores", "derived",
                            missing=need("multiprocessors", "compute_capability") or "cores per SM unknown")
    sp = 2 * cores * clock / 1000 if cores is not None and clock is not None else None
    out["peak_gflops_sp"] = _feature(sp, "GFLOP/s", "derived", missing=need(clock_name) or "CUDA cores unknown")
    ratio = DP_RATIO.get(cap) if cap else None
    dp = sp * ratio if sp is not None and ratio is not None else None
    out["peak_gflops_dp"] = _feature(dp, "GFLOP/s", "derived",
                                     missing="peak_gflops_sp unknown" if sp is None else f"FP64 ratio of compute capability {cc} unknown")
    gbps = 2 * mem_clock * width / 8 / 1000 if mem_clock is not None and width is not None else None
    out["peak_gbps"] = _feature(gbps, "GB/s", "derived", missing=need(mem_clock_name, "mem_bus_width_bits"))
    formulas = {"cuda_cores_per_sm": "table of compute capability", "cores": "multiprocessors x cuda_cores_per_sm",
                "peak_gflops_sp": f"2 x cores x {clock_name}", "peak_gflops_dp": "peak_gflops_sp x FP64:FP32 ratio",
                "peak_gbps": f"2 x {mem_clock_name} x mem_bus_width_bits / 8"}
    for name, rec in out.items():
        rec["from"] = formulas[name]
    return out


def describe_gpu(index: int = 0, fill: bool = True) -> dict:
    """Feature record of the GPU with this CUDA index (NVML index without pycuda); ``fill``:
    with the datasheet's published figures of its model that nothing here reports (pandas)."""
    gpus = list_gpus()
    match = [g for g in gpus if g["index"] == index]
    if not match:
        raise ValueError(f"no GPU with index {index}: " + (unavailable() or f"{len(gpus)} GPU(s) here"))
    record = _cuda_features(index)
    record.update(_nvml_features(match[0]["pci_bus_id"], index))
    record.update(derive(record))
    if not fill:
        return record
    from . import datasheet   # published figures nothing here reports (e.g. the peak rates of the model)
    return datasheet.fill(record, match[0]["name"], kind="gpu")


def no_gpu_record(reason: str) -> dict:
    """The record listed when no GPU can be described: one missing feature with the reason."""
    return {"gpu_count": _feature(None, "GPUs", missing=reason)}
