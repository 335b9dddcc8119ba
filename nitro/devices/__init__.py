"""Describing devices by features (query, datasheet, microbenchmark), with stable ids."""
from .cpu import cpu_device_id, describe_cpu

__all__ = ["cpu_device_id", "describe_cpu", "describe", "describe_all", "local_record", "local_metadata", "current_device_id", "feature_values"]


def current_device_id() -> str:
    """Stable id of the device nitro measures on by default: this machine's CPU."""
    return cpu_device_id()


def _gpu_index(device: str) -> int | None:
    """The CUDA index named by ``gpu``, ``gpu:N`` or a GPU id; ``None`` for other names."""
    if device == "gpu":
        return 0
    if device.startswith("gpu:") and device[4:].isdigit():
        return int(device[4:])
    if device.startswith("cpu"):
        return None
    from .gpu import list_gpus
    return next((g["index"] for g in list_gpus() if g["id"] == device), None)


def describe(device: str = "cpu", measure: bool = True) -> dict:
    """Feature record ``name -> {"value", "unit", "source"}`` of a local device (``cpu``, this
    CPU's id, ``gpu``, ``gpu:N`` or a GPU's id): what the operating system or driver reports,
    plus (``measure``) the microbenchmarks' figures, plus for a CPU the published figures of its
    model that neither gives (``source: "datasheet"``; marked missing with the reason when the
    model is not in :mod:`nitro.devices.datasheet`)."""
    if device in ("cpu", cpu_device_id()):
        record = describe_cpu()
        if measure:
            from .microbench import measure_cpu
            record.update(measure_cpu())
        from . import datasheet
        from .cpu import _model_name
        return datasheet.fill(record, _model_name(), kind="cpu")
    index = _gpu_index(device)
    if index is not None:
        from .gpu import describe_gpu
        record = describe_gpu(index)
        if measure:
            from .gpu_microbench import measure_gpu
            record.update(measure_gpu(index))
        return record
    raise ValueError(f"unknown local device {device!r}; known: 'cpu' ({cpu_device_id()}), 'gpu', 'gpu:N' "
                     "or a local GPU's id")


def local_record(device_id: str, measure: bool = True) -> dict:
    """Record of the device that measurements labelled ``device_id`` ran on: the local GPU
    with that id, else this CPU (ids of CPU measurements are free labels)."""
    index = None if device_id.startswith("cpu") else _gpu_index(device_id)
    return describe(f"gpu:{index}", measure) if index is not None else describe("cpu", measure)


def local_metadata(device_id: str, record: dict | None = None) -> dict[str, str]:
    """Metadata (``kind``, ``vendor``, ``arch``: :mod:`nitro.devices.lineage`) of the device
    that :func:`local_record` describes for ``device_id``; a GPU's is read from its ``record``
    (described without microbenchmarks when not given)."""
    from . import lineage
    from .cpu import _cpuinfo
    index = None if device_id.startswith("cpu") else _gpu_index(device_id)
    if index is None:
        return lineage.cpu_metadata(_cpuinfo())
    return lineage.gpu_metadata(record if record is not None else describe(f"gpu:{index}", measure=False))


def describe_all(measure: bool = True) -> dict[str, dict]:
    """``{device id: record}`` of this CPU and every NVIDIA GPU; without a GPU, the entry
    ``"gpu"`` holds one missing feature saying why none is listed. Identical GPUs share a
    model id; the second and later get ``@<CUDA index>`` appended."""
    from . import gpu
    out = {cpu_device_id(): describe("cpu", measure)}
    gpus = gpu.list_gpus()
    if not gpus:
        out["gpu"] = gpu.no_gpu_record(gpu.unavailable() or "no NVIDIA GPU found")
    for g in gpus:
        key = g["id"] if g["id"] not in out else f"{g['id']}@{g['index']}"
        out[key] = describe(f"gpu:{g['index']}", measure)
    return out


def feature_values(record: dict) -> dict[str, float]:
    """The numeric values of a feature record, leaving out missing ones."""
    return {k: float(v["value"]) for k, v in record.items() if v.get("value") is not None}
