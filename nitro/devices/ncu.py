"""GPU profiles with Nsight Compute: run a Python callable's kernels under ``ncu`` and return
per-kernel metrics, the counts normalised by the kernel's issued instructions (as the paper
normalises its nvprof metrics).

The paper profiled with nvprof, which does not support GPUs after Volta. Its metrics
(Table 3) are computed here from Nsight Compute metrics:

=====================================  ===================================================================  ======
paper (nvprof)                         Nsight Compute                                                        kind
=====================================  ===================================================================  ======
inst_executed                          smsp__inst_executed.sum                                               count
inst_issued                            smsp__inst_issued.sum (the normaliser)                                count
flop_count_sp                          smsp__sass_thread_inst_executed_op_{fadd,fmul}_pred_on.sum            count
                                       + 2 x smsp__sass_thread_inst_executed_op_ffma_pred_on.sum
flop_count_dp                          the same with dadd, dmul, dfma                                        count
inst_fp_32                             smsp__sass_thread_inst_executed_op_fp32_pred_on.sum                   count
inst_fp_64                             smsp__sass_thread_inst_executed_op_fp64_pred_on.sum                   count
flop_sp_efficiency                     smsp__sass_thread_inst_executed_ops_fadd_fmul_ffma_pred_on            %
                                       .avg.pct_of_peak_sustained_elapsed
flop_dp_efficiency                     ..._ops_dadd_dmul_dfma_pred_on.avg.pct_of_peak_sustained_elapsed      %
atomic_transactions                    l1tex__t_sectors_pipe_lsu_mem_global_op_{atom,red}.sum                count
atomic_transactions_per_request        the same / l1tex__t_requests_pipe_lsu_mem_global_op_{atom,red}.sum    ratio
l2_atomic_transactions                 lts__t_sectors_op_{atom,red}.sum                                      count
l2_atomic_throughput                   lts__t_sectors_op_{atom,red}.sum.per_second                           rate
gld_transactions / gst_transactions    l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum                   count
gld/gst_transactions_per_request       the same / l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum       ratio
local_load/store_transactions          l1tex__t_sectors_pipe_lsu_mem_local_op_{ld,st}.sum                    count
l1_cache_global_hit_rate               l1tex__t_sector_hit_rate.pct                                          %
gld_efficiency / gst_efficiency        smsp__sass_average_data_bytes_per_sector_mem_global_op_{ld,st}.pct    %
l2_read/write_transactions             lts__t_sectors_op_{read,write}.sum                                    count
l2_utilization                         lts__t_sectors.avg.pct_of_peak_sustained_elapsed                      %
dram_read/write_transactions           dram__sectors_{read,write}.sum                                        count
dram_read/write_throughput             dram__bytes_{read,write}.sum.per_second                               rate
stall_memory_dependency                smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct          %
shared_load/store_transactions         l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum             count
shared_load_transactions_per_request   l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum                  ratio
                                       / smsp__inst_executed_op_shared_ld.sum
shared_store_throughput                l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum.per_second       rate
=====================================  ===================================================================  ======

``count`` metrics are divided by ``smsp__inst_issued.sum``; ratios, percentages and rates are
kept as they are. ncu scales each value's unit by default (one kernel's rate in Mbyte/second,
the next one's in Gbyte/second), so it runs with ``--print-units base`` and every value is read
with its unit and brought to the base unit (byte, byte/second, second…) by :func:`to_base`. Without ``ncu``, without permission to read the GPU's performance counters,
or when the run fails, the result says why in ``"missing"``; a metric this GPU's ``ncu`` does
not know is dropped and listed with the reason.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys

NORMALISER = "smsp__inst_issued.sum"

_SP = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
_L1 = "l1tex__t_{}_pipe_lsu_mem_{}_op_{}.sum"
_SHARED = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{}.sum"

# paper metric -> (kind, numerator {ncu metric: coefficient}, denominator {...} or None)
METRICS: dict[str, tuple[str, dict[str, float], dict[str, float] | None]] = {
    "inst_executed": ("count", {"smsp__inst_executed.sum": 1}, None),
    "inst_issued": ("count", {NORMALISER: 1}, None),
    "flop_count_sp": ("count", {_SP.format("fadd"): 1, _SP.format("fmul"): 1, _SP.format("ffma"): 2}, None),
    "flop_count_dp": ("count", {_SP.format("dadd"): 1, _SP.format("dmul"): 1, _SP.format("dfma"): 2}, None),
    "inst_fp_32": ("count", {_SP.format("fp32"): 1}, None),
    "inst_fp_64": ("count", {_SP.format("fp64"): 1}, None),
    "flop_sp_efficiency": (
        "pct", {"smsp__sass_thread_inst_executed_ops_fadd_fmul_ffma_pred_on.avg.pct_of_peak_sustained_elapsed": 1}, None),
    "flop_dp_efficiency": (
        "pct", {"smsp__sass_thread_inst_executed_ops_dadd_dmul_dfma_pred_on.avg.pct_of_peak_sustained_elapsed": 1}, None),
    "atomic_transactions": ("count", {_L1.format("sectors", "global", "atom"): 1,
                                      _L1.format("sectors", "global", "red"): 1}, None),
    "atomic_transactions_per_request": (
        "ratio", {_L1.format("sectors", "global", "atom"): 1, _L1.format("sectors", "global", "red"): 1},
        {_L1.format("requests", "global", "atom"): 1, _L1.format("requests", "global", "red"): 1}),
    "l2_atomic_transactions": ("count", {"lts__t_sectors_op_atom.sum": 1, "lts__t_sectors_op_red.sum": 1}, None),
    "l2_atomic_throughput": ("rate", {"lts__t_sectors_op_atom.sum.per_second": 1,
                                      "lts__t_sectors_op_red.sum.per_second": 1}, None),
    "gld_transactions": ("count", {_L1.format("sectors", "global", "ld"): 1}, None),
    "gst_transactions": ("count", {_L1.format("sectors", "global", "st"): 1}, None),
    "gld_transactions_per_request": ("ratio", {_L1.format("sectors", "global", "ld"): 1},
                                     {_L1.format("requests", "global", "ld"): 1}),
    "gst_transactions_per_request": ("ratio", {_L1.format("sectors", "global", "st"): 1},
                                     {_L1.format("requests", "global", "st"): 1}),
    "local_load_transactions": ("count", {_L1.format("sectors", "local", "ld"): 1}, None),
    "local_store_transactions": ("count", {_L1.format("sectors", "local", "st"): 1}, None),
    "l1_cache_global_hit_rate": ("pct", {"l1tex__t_sector_hit_rate.pct": 1}, None),
    "gld_efficiency": ("pct", {"smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct": 1}, None),
    "gst_efficiency": ("pct", {"smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct": 1}, None),
    "l2_read_transactions": ("count", {"lts__t_sectors_op_read.sum": 1}, None),
    "l2_write_transactions": ("count", {"lts__t_sectors_op_write.sum": 1}, None),
    "l2_utilization": ("pct", {"lts__t_sectors.avg.pct_of_peak_sustained_elapsed": 1}, None),
    "dram_read_transactions": ("count", {"dram__sectors_read.sum": 1}, None),
    "dram_write_transactions": ("count", {"dram__sectors_write.sum": 1}, None),
    "dram_read_throughput": ("rate", {"dram__bytes_read.sum.per_second": 1}, None),
    "dram_write_throughput": ("rate", {"dram__bytes_write.sum.per_second": 1}, None),
    "stall_memory_dependency": ("pct", {"smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct": 1}, None),
    "shared_load_transactions": ("count", {_SHARED.format("ld"): 1}, None),
    "shared_store_transactions": ("count", {_SHARED.format("st"): 1}, None),
    "shared_load_transactions_per_request": ("ratio", {_SHARED.format("ld"): 1},
                                             {"smsp__inst_executed_op_shared_ld.sum": 1}),
    "shared_store_throughput": ("rate", {_SHARED.format("st") + ".per_second": 1}, None),
}

# The child process: import the callable by "module:function" and call it with JSON arguments.
_CHILD = ("import importlib, json, sys; m, f = sys.argv[1].split(':'); "
          "getattr(importlib.import_module(m), f)(*json.loads(sys.argv[2]), **json.loads(sys.argv[3]))")


def ncu_metrics(names) -> list[str]:
    """The Nsight Compute metrics needed for the given paper metrics (and the normaliser)."""
    needed = {NORMALISER}
    for name in names:
        if name not in METRICS:
            raise ValueError(f"unknown profiling metric {name!r}; known: {', '.join(METRICS)}")
        _, num, den = METRICS[name]
        needed |= set(num) | set(den or {})
    return sorted(needed)


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None  # "n/a" and the like


# SI prefixes ncu puts on its units ("Kbyte", "Gbyte/second", "usecond", "Ginst"); bytes are decimal.
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "m": 1e-3, "u": 1e-6, "n": 1e-9}
_BASE_UNITS = ("byte", "second", "inst", "sector", "request", "cycle", "warp", "thread", "block", "wavefront", "hz")


def _scale(part: str, unit: str) -> float:
    """Factor of one side of a unit (``Gbyte``: 1e9, ``inst``: 1, ``%``: 1)."""
    for base in _BASE_UNITS:
        if part.lower().endswith(base) and len(part) > len(base):
            prefix = part[: len(part) - len(base)]
            if prefix not in _PREFIX:
                raise ValueError(f"ncu unit {unit!r}: unknown prefix {prefix!r}")
            return _PREFIX[prefix]
    return 1.0


def to_base(value: float | None, unit: str) -> float | None:
    """``value`` in ``unit`` (ncu's: ``Gbyte/second``, ``usecond``, ``cycle/nsecond``, ``%``…)
    in the unit without prefixes (``byte/second``, ``second``, ``cycle/second``); raises
    ``ValueError`` on a prefix it does not know, rather than mixing scales silently."""
    if value is None:
        return None
    numerator, _, denominator = unit.strip().partition("/")
    return value * _scale(numerator, unit) / (_scale(denominator, unit) if denominator else 1.0)


def parse_csv(text: str) -> list[dict]:
    """Kernels ``[{"id", "name", "raw": {ncu metric: value in its base unit}}]`` from ``ncu --csv``
    output (other lines of the output — ``==PROF==`` notes, the program's prints — are skipped)."""
    rows = [line for line in text.splitlines() if line.startswith('"')]
    kernels: dict[str, dict] = {}
    header = None
    for row in csv.reader(io.StringIO("\n".join(rows))):
        if "Metric Name" in row and "Metric Value" in row:
            header = {name: i for i, name in enumerate(row)}
            continue
        if header is None or len(row) < len(header):
            continue
        kid = row[header["ID"]] if "ID" in header else str(len(kernels))
        k = kernels.setdefault(kid, {"id": kid, "name": row[header["Kernel Name"]], "raw": {}})
        unit = row[header["Metric Unit"]] if "Metric Unit" in header else ""
        k["raw"][row[header["Metric Name"]]] = to_base(_number(row[header["Metric Value"]]), unit)
    return list(kernels.values())


def combine(raw: dict[str, float | None], names) -> tuple[dict[str, float], dict[str, str]]:
    """Paper metrics from one kernel's ncu metrics: ``(values, missing reasons)``; counts are
    divided by the kernel's issued instructions."""
    issued = raw.get(NORMALISER)
    values, missing = {}, {}
    for name in names:
        kind, num, den = METRICS[name]
        needed = list(num) + list(den or {})
        absent = [m for m in needed if raw.get(m) is None]
        if absent:
            missing[name] = f"ncu reported no value for {', '.join(absent)}"
            continue
        value = sum(c * raw[m] for m, c in num.items())
        if den is not None:
            d = sum(c * raw[m] for m, c in den.items())
            value = value / d if d else 0.0
        elif kind == "count" and name != "inst_issued":
            if not issued:
                missing[name] = "no issued instructions to normalise by"
                continue
            value = value / issued
        values[name] = float(value)
    return values, missing


def _unknown_metrics(output: str, asked: list[str]) -> list[str]:
    """Metrics named (whole, or by their base name) in ncu's error lines."""
    errors = "\n".join(line for line in output.splitlines() if "ERROR" in line)
    return [m for m in asked
            if re.search(rf"(?<![\w.]){re.escape(m.split('.', 1)[0])}(?![\w])", errors)]


def command(exe: str, metrics: list[str], target: str, args=(), kwargs=None,
            kernel_regex: str | None = None) -> list[str]:
    """The ncu command line profiling ``target(*args, **kwargs)`` in a child Python: CSV output,
    values in base units (never rescaled per value), child processes followed."""
    cmd = [exe, "--csv", "--print-units", "base", "--target-processes", "all", "--metrics", ",".join(metrics)]
    if kernel_regex:
        cmd += ["--kernel-name", f"regex:{kernel_regex}"]
    return cmd + [sys.executable, "-c", _CHILD, target, json.dumps(list(args)), json.dumps(kwargs or {})]


def profile(target: str, args=(), kwargs=None, metrics=None, ncu: str | None = None,
            kernel_regex: str | None = None, timeout: float = 600) -> dict:
    """Profile the kernels launched by ``target(*args, **kwargs)`` (``"module:function"``,
    arguments JSON-serialisable) in a child Python process under ``ncu``.

    Returns ``{"kernels": [{"id", "name", "inst_issued", "metrics": {paper metric: value}}],
    "missing": {paper metric: reason}}``, or ``{"kernels": [], "missing": "<reason>"}`` when
    nothing could be profiled (no ncu, no permission, the run failed).
    """
    if not isinstance(target, str) or ":" not in target:
        raise ValueError(f"profile target must be 'module:function', got {target!r}")
    names = list(metrics or METRICS)
    asked = ncu_metrics(names)
    exe = ncu or os.environ.get("NITRO_NCU") or shutil.which("ncu")
    if not exe:
        return {"kernels": [], "missing": "Nsight Compute (ncu) is not on PATH (set NITRO_NCU to its path)"}
    dropped: dict[str, str] = {}
    for _ in range(4):
        cmd = command(exe, asked, target, args, kwargs, kernel_regex)
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"kernels": [], "missing": f"ncu did not finish within {timeout:g} s"}
        output = run.stdout + "\n" + run.stderr
        if "ERR_NVGPUCTRPERM" in output:
            return {"kernels": [], "missing": "not permitted to read the GPU performance counters (ERR_NVGPUCTRPERM): "
                                              "run as root or set the driver option NVreg_RestrictProfilingToAdminUsers=0"}
        unknown = [m for m in _unknown_metrics(output, asked) if m != NORMALISER]
        if run.returncode != 0 and unknown:
            for m in unknown:
                dropped[m] = f"this GPU's ncu does not know {m}"
            asked = [m for m in asked if m not in unknown]
            continue
        break
    kernels = parse_csv(run.stdout)
    if not kernels:
        tail = output.strip().splitlines()[-5:]
        return {"kernels": [], "missing": f"ncu profiled no kernel (exit {run.returncode}): " + " | ".join(tail)}
    out, missing = [], {}
    for k in kernels:
        values, gone = combine(k["raw"], names)
        out.append({"id": k["id"], "name": k["name"], "inst_issued": k["raw"].get(NORMALISER), "metrics": values})
        missing.update(gone)
    for name in names:  # name the cause when a metric was dropped
        _, num, den = METRICS[name]
        cause = [dropped[m] for m in list(num) + list(den or {}) if m in dropped]
        if cause:
            missing[name] = "; ".join(cause)
    return {"kernels": out, "missing": missing}
