"""Fork safety for GNU OpenMP: nitro's C++ variants and microbenchmarks use libgomp, which is
not fork-safe — a child forked after the parent ran a parallel region hangs in its first
one. Importing nitro registers :func:`release_openmp_pools` to run before every ``os.fork``
(nitro's measurement workers, ``multiprocessing`` with the fork start method): it frees the
thread pool of every loaded libgomp (``omp_pause_resource_all``, OpenMP 5.0), and each
process rebuilds its pool at its next parallel region (microseconds, when a pool exists).
"""
from __future__ import annotations

import ctypes
import os
import sys

_OMP_PAUSE_HARD = 2   # omp_pause_resource_t
_found = {"modules": -1, "pause": []}


def release_openmp_pools():
    """Free the thread pools of the loaded GNU OpenMP runtimes. The loaded libraries are
    looked up again (in /proc/self/maps) only when Python has imported something new."""
    if len(sys.modules) != _found["modules"]:
        try:
            with open("/proc/self/maps") as maps:
                paths = {line.split()[-1] for line in maps if "libgomp" in line}
        except OSError:
            paths = set()
        pause = []
        for path in paths:
            try:
                pause.append(ctypes.CDLL(path, mode=os.RTLD_NOLOAD).omp_pause_resource_all)
            except (OSError, AttributeError):
                pass
        _found.update(modules=len(sys.modules), pause=pause)
    for fn in _found["pause"]:
        fn(_OMP_PAUSE_HARD)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=release_openmp_pools)
