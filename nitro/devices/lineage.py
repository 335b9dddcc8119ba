"""A described device's metadata: its kind, vendor and architecture family (``arch``).

Stored beside its features, never as one (:mod:`nitro.dataset`'s metadata columns): with the
family of every device known, ``tune_from_source`` can tell a target whose family no source
shares, validate its model without each source's family and say "uncertain" where a family transfers
badly, the case where zero-shot falls furthest (README "How sure the model is"). The family is
the vendor's microarchitecture name, read from what the device reports: an NVIDIA GPU's compute
capability, an x86 CPU's vendor, family and model numbers (``/proc/cpuinfo``), an Arm CPU's
implementer and part numbers. A device missing from these tables gets no ``arch``: each such
device counts as a family of its own.
"""
from __future__ import annotations

# compute capability (major, minor or None for every minor) -> NVIDIA architecture
GPU_ARCH = {
    (2, None): "fermi", (3, None): "kepler", (5, None): "maxwell", (6, None): "pascal",
    (7, 0): "volta", (7, 2): "volta", (7, 5): "turing",
    (8, 0): "ampere", (8, 6): "ampere", (8, 7): "ampere", (8, 9): "ada",
    (9, None): "hopper", (10, None): "blackwell", (11, None): "blackwell", (12, None): "blackwell",
}

# x86 ``vendor_id`` and Arm ``CPU implementer`` -> vendor
CPU_VENDORS = {"GenuineIntel": "intel", "AuthenticAMD": "amd", "HygonGenuine": "hygon",
               "0x41": "arm", "0x46": "fujitsu", "0x61": "apple", "0xc0": "ampere"}

# Intel family 6 model -> microarchitecture (client parts named after the server core they share)
INTEL_FAMILY6 = {
    **dict.fromkeys((26, 30, 31, 46), "nehalem"), **dict.fromkeys((37, 44, 47), "westmere"),
    **dict.fromkeys((42, 45), "sandy_bridge"), **dict.fromkeys((58, 62), "ivy_bridge"),
    **dict.fromkeys((60, 63, 69, 70), "haswell"), **dict.fromkeys((61, 71, 79, 86), "broadwell"),
    **dict.fromkeys((78, 94, 142, 158, 165, 166), "skylake"), 85: "skylake",   # 85: see _intel_85
    **dict.fromkeys((106, 108, 125, 126), "ice_lake"), **dict.fromkeys((140, 141), "tiger_lake"),
    143: "sapphire_rapids", 207: "emerald_rapids", **dict.fromkeys((173, 174), "granite_rapids"),
    175: "sierra_forest", **dict.fromkeys((151, 154), "alder_lake"), **dict.fromkeys((183, 186, 191), "raptor_lake"),
    **dict.fromkeys((170, 172), "meteor_lake"), 189: "lunar_lake", **dict.fromkeys((197, 198), "arrow_lake"),
    87: "knights_landing", 133: "knights_mill",
}

# Arm (implementer, part) -> core
ARM_PARTS = {("0x41", "0xd0c"): "neoverse_n1", ("0x41", "0xd40"): "neoverse_v1", ("0x41", "0xd49"): "neoverse_n2",
             ("0x41", "0xd4f"): "neoverse_v2", ("0x41", "0xd8e"): "neoverse_n3", ("0x41", "0xd84"): "neoverse_v3",
             ("0x46", "0x001"): "a64fx", ("0xc0", "0xac3"): "ampereone", ("0xc0", "0xac4"): "ampereone"}


def gpu_arch(compute_capability: float | None) -> str | None:
    """The NVIDIA architecture of a compute capability written ``major + minor / 10`` (as a
    device record holds it: 8.9 -> ``ada``); ``None`` when unknown."""
    if compute_capability is None:
        return None
    major = int(compute_capability)
    minor = int(round(10 * (compute_capability - major)))
    return GPU_ARCH.get((major, minor)) or GPU_ARCH.get((major, None))


def _number(text: str | None) -> int | None:
    try:
        return int(text, 0) if text and text.startswith("0x") else int(text)
    except (TypeError, ValueError):
        return None


def _amd(family: int, model: int) -> str | None:
    if family == 0x15:
        return "bulldozer"
    if family == 0x17:
        return "zen" if model < 0x30 else "zen2"          # Zen and Zen+ below 0x30, Zen 2 from it
    if family == 0x19:                                     # Zen 4: Genoa, Raphael, Phoenix, Bergamo
        return "zen4" if 0x10 <= model <= 0x1F or 0x60 <= model <= 0x7F or 0xA0 <= model <= 0xAF else "zen3"
    if family == 0x1A:
        return "zen5"
    return None


def _intel(family: int, model: int, stepping: int | None) -> str | None:
    if family != 6:
        return None
    if model == 85 and stepping is not None:               # one model number, three generations
        return "cooper_lake" if stepping >= 10 else "cascade_lake" if stepping >= 5 else "skylake"
    return INTEL_FAMILY6.get(model)


def cpu_vendor(info: dict[str, str]) -> str | None:
    """The vendor named by ``/proc/cpuinfo``'s fields (``vendor_id``, else ``CPU implementer``)."""
    return CPU_VENDORS.get(info.get("vendor_id", "")) or CPU_VENDORS.get(info.get("CPU implementer", "").lower())


def cpu_arch(info: dict[str, str]) -> str | None:
    """The microarchitecture named by ``/proc/cpuinfo``'s fields (AMD family 26 -> ``zen5``,
    Intel family 6 model 85 stepping 7 -> ``cascade_lake``); ``None`` when not in the tables."""
    vendor = cpu_vendor(info)
    family, model = _number(info.get("cpu family")), _number(info.get("model"))
    if vendor == "amd" and family is not None and model is not None:
        return _amd(family, model)
    if vendor == "intel" and family is not None and model is not None:
        return _intel(family, model, _number(info.get("stepping")))
    implementer, part = info.get("CPU implementer", "").lower(), info.get("CPU part", "").lower()
    return ARM_PARTS.get((implementer, part))


def _known(metadata: dict) -> dict[str, str]:
    return {k: v for k, v in metadata.items() if v}


def cpu_metadata(info: dict[str, str]) -> dict[str, str]:
    """``{"kind": "cpu", "vendor", "arch"}`` of a CPU from its ``/proc/cpuinfo`` fields, leaving
    out what they do not tell."""
    return _known({"kind": "cpu", "vendor": cpu_vendor(info), "arch": cpu_arch(info)})


def gpu_metadata(record: dict) -> dict[str, str]:
    """``{"kind": "gpu", "vendor": "nvidia", "arch"}`` of an NVIDIA GPU from its feature record
    (the architecture from its ``compute_capability``, left out when unknown)."""
    cc = (record.get("compute_capability") or {}).get("value")
    return _known({"kind": "gpu", "vendor": "nvidia", "arch": gpu_arch(cc)})
