"""Measuring variants in a forked worker process, so that a variant that crashes (a
segfault in C++) or hangs fails on its own and the tuner goes on.

The parent forks one child per input (``os.fork``: variants and arguments are inherited,
nothing needs to be picklable). The child measures the variants in order under the usual
:class:`~nitro.measurement.TimingPolicy` and writes one JSON line per variant back through a
pipe — plain data only, nothing is unpickled. The parent waits at most ``policy.timeout``
seconds per variant. When the child dies (``killed by SIGSEGV``, ``exited with code 3``) or
runs out of time (``timed out after 2 s``, the child is then killed), that variant is
failed with the reason and a fresh child measures the remaining ones; it first re-runs the
variant whose output is the reference, untimed, when the reference came from a variant.

C++ variants using GNU OpenMP run in the child too: :mod:`nitro.forksafe` releases the
parent's OpenMP thread pools before every fork (libgomp is not fork-safe otherwise).

Cost: one fork per input (plus one more after each crash). Measured with six trivial
variants and ``min_repeats=max_repeats=1``: 17-30 ms per input isolated against 0.2-0.5 ms
in-process (3-5 ms per variant) on a shared 2-core machine at load 5; it is the fork of a
~160 MB process with NumPy, pandas and scikit-learn loaded. The default policy spends at
least 0.05 s timing each variant, so isolation adds under 10% to tuning. Timings taken in
the child are as accurate as in-process ones: the variant runs in a copy of the same
process. POSIX only (``os.fork``). Never used once the process has loaded the CUDA driver
(:func:`nitro.measurement.measure_variants` measures in-process then): a forked child cannot use CUDA.
"""
from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
import warnings
from typing import Any, Callable, Mapping

from . import forksafe  # noqa: F401  (registers the OpenMP release before os.fork)
from .measurement import TimingPolicy, measure_one


def _child(write_fd: int, names: list[str], variants: Mapping[str, Callable], args: tuple,
           reference: Any, reference_from: str | None, check: Callable, policy: TimingPolicy,
           early_stopping, known: dict, n_total: int):
    """Body of the forked worker; never returns."""
    code = 0
    try:
        import faulthandler
        import resource
        faulthandler.disable()   # a crash is reported by the parent, not as a traceback here
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))   # and leaves no core file
        out = os.fdopen(write_fd, "w", buffering=1)
        have_reference = reference is not None
        if not have_reference and reference_from is not None:
            reference, have_reference = variants[reference_from](*args), True
        for name in names:
            counts: dict = {}
            seconds, reason, result = measure_one(variants[name], args, policy, reference, have_reference, check,
                                                  early_stopping, known, n_total, counts)
            known[name] = seconds
            if reason is None and not have_reference:
                reference, have_reference, reference_from = result, True, name
            out.write(json.dumps({"name": name, "time": seconds, "reason": reason, "counts": counts,
                                  "reference": reason is None and reference_from == name}) + "\n")
        out.flush()
    except BaseException:  # anything unexpected: the parent reports a non-zero exit
        code = 70
    os._exit(code)


def _exit_reason(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"killed by {name}"
    return f"worker exited with code {os.WEXITSTATUS(status)}"


def _fork(*child_args) -> tuple[int, int]:
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():
        # Python warns about fork() in a process with threads (tqdm's monitor, a Redis
        # health check); the child only runs the variants and exits with os._exit.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(write_fd, *child_args)
    os.close(write_fd)
    return pid, read_fd


def measure_isolated(variants: Mapping[str, Callable], names: list[str], args: tuple, *,
                     reference: Any, check: Callable, policy: TimingPolicy, early_stopping=None,
                     counts: dict | None = None) -> tuple[dict, dict]:
    """Measure ``names`` (in this order) in forked workers; return ``(times, failed)`` for them.
    Without a ``reference`` the first variant that succeeds provides it, as in-process;
    ``early_stopping`` and ``counts`` work as in :func:`nitro.measurement.measure_variants`."""
    times: dict[str, float | None] = {}
    failed: dict[str, str] = {}
    reference_from: str | None = None
    todo = list(names)
    while todo:
        pid, fd = _fork(todo, variants, args, reference, reference_from, check, policy, early_stopping,
                        dict(times), len(names))
        buffer, status, reason = b"", None, None
        deadline = time.monotonic() + (policy.timeout or float("inf"))
        try:
            while todo:
                ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    reason = f"timed out after {policy.timeout:g} s"
                    break
                chunk = os.read(fd, 65536)
                if not chunk:  # the child closed the pipe: it exited or died
                    break
                buffer += chunk
                while b"\n" in buffer and todo:
                    line, buffer = buffer.split(b"\n", 1)
                    msg = json.loads(line)
                    name = todo.pop(0)
                    if msg.get("name") != name:
                        raise RuntimeError(f"measurement worker answered for {msg.get('name')!r}, "
                                           f"expected {name!r}")
                    times[name] = msg["time"]
                    if counts is not None:
                        for key, value in msg.get("counts", {}).items():
                            counts[key] = counts.get(key, 0) + value
                    if msg["reason"] is not None:
                        failed[name] = msg["reason"]
                    elif msg["reference"]:
                        reference_from = name
                    deadline = time.monotonic() + (policy.timeout or float("inf"))
        finally:
            os.close(fd)
            if reason is not None or todo:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            _, status = os.waitpid(pid, 0)
        if todo:
            name = todo.pop(0)
            times[name], failed[name] = None, reason or _exit_reason(status)
    return times, failed
