"""Deterministic software profiles of CPU calls: the CPU analogue of the paper's nvprof metrics.

Hardware counters (``perf``) are used nowhere: they are not permitted on the machines nitro is
developed on, and they are not deterministic. Instead each call runs in a subprocess under
``valgrind --tool=callgrind --instr-atstart=no --dump-instr=yes --cache-sim=yes``; the call is
bracketed by callgrind client requests (``nitro._variants.profiling.start/stop/dump``), so
only the call itself is simulated, after one untimed, uninstrumented warm-up call. Callgrind
reports, per executed machine instruction, its execution count and its data reads, writes and
simulated cache misses. The instructions are then classified by disassembling the shared
objects with ``objdump -d``:

- ``inst_atomic``: ``lock``-prefixed instructions and ``xchg`` with memory;
- ``inst_fp_32`` / ``inst_fp_64``: SSE/AVX single/double arithmetic (add, sub, mul, div, sqrt,
  min, max, FMA, ...); ``flop_count_sp`` / ``flop_count_dp`` weight them by vector lanes
  (128/256/512-bit registers) and count an FMA as two;
- ``inst_load`` / ``inst_store``: data reads/writes of non-atomic instructions;
  ``l1_hit_load``: those reads that hit the simulated L1 (the analogue of GPU shared memory);
- ``d1_miss``, ``ll_read_miss``, ``ll_write_miss``: simulated L1 and last-level misses (the
  analogue of DRAM transactions); ``inst_branch``: jumps, calls and returns.

Every metric is normalised by the instructions executed (``inst_executed``, also reported), as
the paper normalises nvprof's metrics by issued instructions.

Limits: only the shared objects of the profiled function's package are counted by default
(``objects=``): OpenMP runtime spin-waits, ``malloc`` and ``memset`` in libc are left out, and
pybind11's argument conversion (a few hundred instructions) is included. The simulated caches
are a fixed model (32 KiB 8-way L1, 8 MiB 16-way last level, 64-byte lines), not the host's,
and start empty for every call. The call runs with ``OMP_NUM_THREADS`` threads (1 by
default: valgrind serialises threads anyway, and one thread makes the counts reproducible).
x86-64 only; callgrind runs the call about 50-100x slower, so keep profiled inputs small.
"""
from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

EVENTS = ["Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw"]
METRICS = ["inst_executed", "inst_atomic", "inst_fp_32", "inst_fp_64", "flop_count_sp", "flop_count_dp",
           "inst_load", "inst_store", "l1_hit_load", "d1_miss", "ll_read_miss", "ll_write_miss",
           "inst_branch", "inst_unclassified"]
CACHES = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"]


def available() -> str | None:
    """``None`` when CPU profiles can be taken here, else the reason they cannot."""
    if shutil.which("valgrind") is None:
        return "valgrind is not installed (apt-get install valgrind)"
    if shutil.which("objdump") is None:
        return "objdump (binutils) is not installed"
    from .. import _variants
    if not _variants.profiling.available():
        return "nitro was built without <valgrind/callgrind.h>; install valgrind and rebuild"
    return None


def profile_call(fn: Callable, args: Sequence[Any], **kwargs) -> dict[str, float]:
    """Metrics of one call ``fn(*args)`` (see the module docstring); keyword arguments as
    for :func:`profile_calls`."""
    return profile_calls([(fn, tuple(args))], **kwargs)[0]


def profile_calls(calls: Iterable[tuple[Callable, Sequence[Any]]], objects: Sequence[str] | None = None,
                  threads: int = 1, timeout: float = 600.0) -> list[dict[str, float]]:
    """Metrics of each call ``fn(*args)``, all profiled in one valgrind subprocess.

    ``fn`` and ``args`` must be picklable (module-level functions, pybind11 functions,
    NumPy arrays). ``objects``: paths of the shared objects whose instructions are counted;
    by default the compiled extension modules of each function's top-level package.
    """
    calls = [(fn, tuple(args)) for fn, args in calls]
    if not calls:
        return []
    reason = available()
    if reason:
        raise RuntimeError(f"cannot profile on this machine: {reason}")
    with tempfile.TemporaryDirectory(prefix="nitro-profile-") as tmp:
        job = Path(tmp) / "calls.pkl"
        try:
            job.write_bytes(pickle.dumps({"calls": calls, "objects": list(objects) if objects else None}))
        except (pickle.PicklingError, AttributeError, TypeError) as e:
            raise TypeError(f"profiled functions and arguments must be picklable: {e}") from None
        out = Path(tmp) / "callgrind.out"
        env = {**os.environ, "OMP_NUM_THREADS": str(int(threads)), "PYTHONHASHSEED": "0"}
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--dump-instr=yes", "--dump-line=no",
               "--cache-sim=yes", *CACHES, f"--callgrind-out-file={out}",
               sys.executable, "-m", "nitro.profiling.cpu", str(job)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise RuntimeError(f"profiling subprocess failed (exit {proc.returncode}):\n{tail}")
        used = pickle.loads((Path(tmp) / "objects.pkl").read_bytes())
        dumps = sorted(Path(tmp).glob("callgrind.out.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
        if len(dumps) != len(calls):
            raise RuntimeError(f"expected {len(calls)} callgrind dumps, found {len(dumps)}")
        return [metrics(read_costs(d, objs)) for d, objs in zip(dumps, used)]


# -- callgrind output -------------------------------------------------------------------------
_POS = re.compile(r"^(0x[0-9a-fA-F]+|[+-]\d+|\*)")


def read_costs(path: Path, objects: Iterable[str]) -> dict[tuple[str, int], list[int]]:
    """Self cost per executed instruction ``(object, address) -> [events...]`` of a callgrind
    output file written with ``--dump-instr=yes --dump-line=no``, for ``objects`` only."""
    wanted = {os.path.realpath(o) for o in objects}
    names: dict[str, str] = {}
    costs: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0] * len(EVENTS))
    events, ob, addr, skip_next = EVENTS, None, 0, False
    for line in Path(path).read_text().splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
            continue
        if line.startswith("positions:") and line.split()[1:] != ["instr"]:
            raise ValueError(f"{path}: expected instruction positions only (--dump-line=no), got {line!r}")
        if line.startswith(("ob=", "cob=")):  # object names are compressed to "(id)" after first use
            m = re.match(r"c?ob=(\((\d+)\))?\s*(.*)", line)
            ident, name = m.group(2), m.group(3).strip()
            if ident and name:
                names[ident] = name
            if line.startswith("ob="):
                ob = os.path.realpath(names.get(ident, name))
            continue
        if line.startswith("calls="):
            skip_next = True
            continue
        m = _POS.match(line)
        if not m:
            continue
        pos = m.group(1)
        addr = int(pos, 16) if pos.startswith("0x") else addr if pos == "*" else addr + int(pos)
        if skip_next:  # the inclusive cost of a call, not this instruction's own
            skip_next = False
            continue
        if ob in wanted:
            row = costs[(ob, addr)]
            for i, v in enumerate(line.split()[1:]):
                row[EVENTS.index(events[i])] += int(v)
    return dict(costs)


# -- disassembly and classification -------------------------------------------------------------
_PREFIXES = {"lock", "rep", "repz", "repnz", "repe", "repne", "notrack", "bnd", "data16", "addr32",
             "cs", "ds", "es", "fs", "gs", "ss", "xacquire", "xrelease"}
_FP_ARITH = re.compile(r"^v?(add|sub|mul|div|sqrt|min|max|rcp|rsqrt|hadd|hsub|addsub|dp)(ss|sd|ps|pd)$")
_FMA = re.compile(r"^vfn?m(add|sub|addsub|subadd)(132|213|231)(ss|sd|ps|pd)$")


@lru_cache(maxsize=8)
def _disassemble(path: str, mtime: float) -> dict[int, tuple[str, str, bool]]:
    """``address -> (mnemonic, operands, lock)`` of every instruction of a shared object."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-w", path], capture_output=True,
                         text=True, check=True).stdout
    table = {}
    for line in out.splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\s+(.*)$", line)
        if not m:
            continue
        words = m.group(2).split("#")[0].split()
        lock = False
        while words and (words[0] in _PREFIXES or words[0].startswith("rex")):
            lock |= words.pop(0) == "lock"
        if words:
            table[int(m.group(1), 16)] = (words[0], " ".join(words[1:]), lock)
    return table


def classify(mnemonic: str, operands: str, lock: bool) -> tuple[str, int]:
    """``(class, flops)`` of one instruction: class is ``atomic``, ``fp32``, ``fp64``,
    ``branch`` or ``other``; flops counts vector lanes, two per lane for an FMA."""
    if lock or (mnemonic.startswith("xchg") and "(" in operands):
        return "atomic", 0
    fma = _FMA.match(mnemonic)
    arith = fma or _FP_ARITH.match(mnemonic)
    if arith:
        kind = arith.groups()[-1]
        width = 512 if "%zmm" in operands else 256 if "%ymm" in operands else 128
        lanes = 1 if kind[0] == "s" else width // (32 if kind[1] == "s" else 64)
        return ("fp32" if kind[1] == "s" else "fp64"), lanes * (2 if fma else 1)
    if mnemonic.startswith("j") or mnemonic.startswith("call") or mnemonic.startswith("ret"):
        return "branch", 0
    return "other", 0


def metrics(costs: dict[tuple[str, int], list[int]]) -> dict[str, float]:
    """The profile (module docstring) of per-instruction costs from :func:`read_costs`."""
    ev = {e: i for i, e in enumerate(EVENTS)}
    total = defaultdict(float)
    for (ob, addr), c in costs.items():
        table = _disassemble(ob, os.path.getmtime(ob))
        ins = table.get(addr)
        cls, flops = classify(*ins) if ins else ("unclassified", 0)
        ir = c[ev["Ir"]]
        total["inst_executed"] += ir
        total["d1_miss"] += c[ev["D1mr"]] + c[ev["D1mw"]]
        total["ll_read_miss"] += c[ev["DLmr"]]
        total["ll_write_miss"] += c[ev["DLmw"]]
        if cls == "atomic":
            total["inst_atomic"] += ir
            continue
        total["inst_load"] += c[ev["Dr"]]
        total["inst_store"] += c[ev["Dw"]]
        total["l1_hit_load"] += c[ev["Dr"]] - c[ev["D1mr"]]
        if cls in ("fp32", "fp64"):
            total[f"inst_fp_{cls[2:]}"] += ir
            total["flop_count_sp" if cls == "fp32" else "flop_count_dp"] += ir * flops
        elif cls == "branch":
            total["inst_branch"] += ir
        elif cls == "unclassified":
            total["inst_unclassified"] += ir
    n = total["inst_executed"]
    if n == 0:
        raise RuntimeError("the profiled call executed no instructions in the counted objects")
    return {m: (n if m == "inst_executed" else total[m] / n) for m in METRICS}


# -- the subprocess ---------------------------------------------------------------------------
def _extension_objects(fn) -> list[str]:
    top = (getattr(fn, "__module__", None) or type(fn).__module__).split(".")[0]
    return sorted({os.path.realpath(m.__file__) for name, m in list(sys.modules.items())
                   if (name == top or name.startswith(top + ".")) and getattr(m, "__file__", None)
                   and m.__file__.endswith((".so", ".pyd"))})


def _run(job: Path):
    from .. import _variants
    spec = pickle.loads(job.read_bytes())
    used = []
    for fn, args in spec["calls"]:
        fn(*args)  # warm-up: first-touch allocation and lazy initialisation stay out of the profile
        _variants.profiling.start()
        fn(*args)
        _variants.profiling.stop()
        _variants.profiling.dump()
        used.append(spec["objects"] or _extension_objects(fn))
    (job.parent / "objects.pkl").write_bytes(pickle.dumps(used))


if __name__ == "__main__":
    _run(Path(sys.argv[1]))
