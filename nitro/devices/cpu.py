"""CPU features from the operating system (``/proc``, ``/sys``, ``os``). Plain ``open`` and
``glob`` rather than ``pathlib``: :func:`cpu_device_id` is on the run time's path (a bundle
finds this machine's model by it), which imports nothing it does not need."""
from __future__ import annotations

import os
import re
from functools import lru_cache


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def cpuinfo_fields(text: str) -> dict[str, str]:
    """The first value of each key of ``/proc/cpuinfo``'s text (``key : value`` lines, both
    stripped): on x86 the first CPU's."""
    info: dict[str, str] = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            info.setdefault(k.strip(), v.strip())
    return info


@lru_cache(maxsize=1)
def _cpuinfo() -> dict[str, str]:
    try:
        return cpuinfo_fields(_read("/proc/cpuinfo"))
    except OSError:
        return {}


def _model_name(info: dict[str, str] | None = None) -> str:
    """The model name, else (no ``model name`` line, as on Arm) the machine (``uname -m``): not
    ``platform.processor()``, which runs ``uname -p`` and which an exported C++ header could not
    repeat (nitro/cpu_id.hpp)."""
    name = (_cpuinfo() if info is None else info).get("model name")
    if name:
        return name
    import platform
    return platform.machine() or "unknown"


# model names that do not tell CPU generations apart: no model number ("AMD EPYC", as a KVM
# guest sees both Zen 3 and Zen 4), or a hypervisor's made-up CPU
_GENERIC = re.compile(r"virtual|qemu|kvm|common", re.IGNORECASE)


def cpu_id_from(info: dict[str, str], threads: int) -> str:
    """``cpu_<model>_<n>t`` from ``/proc/cpuinfo``'s fields and the logical CPUs used; where the
    model name is generic (no model number: a clock speed such as "@ 2.20GHz" is none), its
    family and model numbers join it (``cpu_amd_epyc_family25_model17_2t``), so that two CPU
    generations behind one name never share their recorded rows."""
    name = _model_name(info)
    family, model = info.get("cpu family", ""), info.get("model", "")
    number = re.search(r"[0-9]", re.sub(r"@\s*[0-9.]+\s*[GM]Hz", "", name, flags=re.IGNORECASE))
    generic = not number or _GENERIC.search(name)
    generation = f"_family{family}_model{model}" if generic and family.isdigit() and model.isdigit() else ""
    return f"cpu_{_slug(name)}{generation}_{threads}t"


def cpu_device_id() -> str:
    """This machine's CPU id (:func:`cpu_id_from`): the model name and the logical CPUs this process may use."""
    return cpu_id_from(_cpuinfo(), len(os.sched_getaffinity(0)))


def _cache_kb() -> dict[int, float]:
    """Total cache per level in KiB, summed over distinct cache instances."""
    import glob
    seen, total = set(), {}
    for index in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cache/index[0-9]*"):
        try:
            level = int(_read(f"{index}/level"))
            kind = _read(f"{index}/type").strip()
            shared = _read(f"{index}/shared_cpu_list").strip()
            size = _read(f"{index}/size").strip()
        except OSError:
            continue
        if kind == "Instruction" or (level, kind, shared) in seen:
            continue
        seen.add((level, kind, shared))
        kb = float(size[:-1]) * (1024 if size.endswith("M") else 1) if size[-1] in "KM" else float(size) / 1024
        total[level] = total.get(level, 0.0) + kb
    return total


def _physical_cores() -> int | None:
    import glob
    pairs = set()
    for cpu in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology"):
        try:
            pairs.add((_read(f"{cpu}/physical_package_id"), _read(f"{cpu}/core_id")))
        except OSError:
            continue
    return len(pairs) or None


def _clock_mhz() -> float | None:
    for path in ("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq",):
        try:
            return float(_read(path)) / 1000.0
        except (OSError, ValueError):
            pass
    mhz = _cpuinfo().get("cpu MHz")
    return float(mhz) if mhz else None


def _mem_gb() -> float | None:
    try:
        for line in _read("/proc/meminfo").splitlines():
            if line.startswith("MemTotal:"):
                return float(line.split()[1]) / 1024 ** 2
    except OSError:
        pass
    return None


def describe_cpu() -> dict:
    """This machine's CPU features, each ``{"value", "unit", "source"}``; a value that
    cannot be read is ``None`` with the reason in ``"missing"``."""
    caches = _cache_kb()
    raw = {
        "global_mem_gb": (_mem_gb(), "GB"),
        "cores": (_physical_cores(), "cores"),
        "threads": (len(os.sched_getaffinity(0)), "threads"),
        "clock_mhz": (_clock_mhz(), "MHz"),
        "l1_cache_kb": (caches.get(1), "KB"),
        "l2_cache_kb": (caches.get(2), "KB"),
        "l3_cache_kb": (caches.get(3), "KB"),
    }
    out = {}
    for name, (value, unit) in raw.items():
        rec = {"value": None if value is None else float(value), "unit": unit, "source": "query"}
        if value is None:
            rec["missing"] = "not reported by the operating system"
        out[name] = rec
    return out
