"""Describing devices by features (query, datasheet, microbenchmark), with stable ids."""
from .cpu import cpu_device_id, describe_cpu

__all__ = ["cpu_device_id", "describe_cpu", "describe", "current_device_id", "feature_values"]


def current_device_id() -> str:
    """Stable id of the device nitro measures on by default: this machine's CPU."""
    return cpu_device_id()


def describe(device: str = "cpu", measure: bool = True) -> dict:
    """Feature record ``name -> {"value", "unit", "source"}`` of a local device: what the
    operating system reports, plus (``measure``) the microbenchmarks' figures, plus the
    published figures of its model that neither gives (``source: "datasheet"``; marked missing
    with the reason when the model is not in :mod:`nitro.devices.datasheet`)."""
    if device in ("cpu", cpu_device_id()):
        record = describe_cpu()
        if measure:
            from .microbench import measure_cpu
            record.update(measure_cpu())
        from . import datasheet
        from .cpu import _model_name
        return datasheet.fill(record, _model_name(), kind="cpu")
    raise ValueError(f"unknown local device {device!r}; known: 'cpu' ({cpu_device_id()})")


def feature_values(record: dict) -> dict[str, float]:
    """The numeric values of a feature record, leaving out missing ones."""
    return {k: float(v["value"]) for k, v in record.items() if v.get("value") is not None}
