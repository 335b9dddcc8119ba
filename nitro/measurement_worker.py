"""Measuring variants in a forked worker process, so that a variant that crashes (a
segfault in C++) or hangs fails on its own and the tuner goes on.

The parent forks one child per input (``os.fork``: variants and arguments are inherited,
nothing needs to be picklable). The child measures the input as in-process
(:func:`nitro.measurement.measure_input`: checks, interleaved rounds, re-timing) and writes
one JSON line with the times, failures and verdict back through a pipe — plain data only,
nothing is unpickled. While it runs, the child keeps the index of the variant it is calling,
and its call counts, in a small shared memory page (no message per call: a message would
wake the parent on the cores being measured); the parent looks every half second. When the
child dies (``killed by SIGSEGV``, ``exited with code 3``) or one call runs longer than
``policy.timeout`` (``timed out after 2 s``, the child is then killed), the variant it was
calling is failed with the reason and a fresh child measures the others again.

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
import mmap
import os
import select
import signal
import sys
import time
import warnings
from typing import Callable

from . import forksafe  # noqa: F401  (registers the OpenMP release before os.fork)
from .noise import Verdict

POLL_SECONDS = 0.5   # how often the parent looks at a running child's progress
TIMED_OUT = "timed out after {:g} s"   # the reason of a call killed at its time-out


class ExitInVariant(Exception):
    """A variant raised SystemExit or KeyboardInterrupt: its failure, not the worker's end."""


def _guarded(fn: Callable) -> Callable:
    def run(*args):
        try:
            return fn(*args)
        except (SystemExit, KeyboardInterrupt) as exc:   # in the worker only the variant raises these
            raise ExitInVariant(f"{type(exc).__name__}({exc}): a variant must not end the process") from None
    return run


def _die_with_parent() -> None:
    """Linux: the kernel kills this worker when the tuner dies (SIGKILL, SIGTERM, the OOM killer),
    instead of leaving it running, reparented to init."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)     # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _child(write_fd: int, measure: Callable, names: list[str], slot):
    """Body of the forked worker; never returns."""
    code = 0
    try:
        import faulthandler
        import resource
        os.setpgid(0, 0)         # a group of its own: a time-out kills what a variant started too
        _die_with_parent()
        faulthandler.disable()   # a crash is reported by the parent, not as a traceback here
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))   # and leaves no core file
        times, failed, verdict = measure(names, slot, _guarded)
        with os.fdopen(write_fd, "w") as out:
            out.write(json.dumps({"times": times, "failed": failed, "verdict": verdict.to_dict()}) + "\n")
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
    try:
        os.setpgid(pid, pid)     # as the child does: whichever runs first, the group exists
    except OSError:              # the child has already exited, or set it
        pass
    os.close(write_fd)
    return pid, read_fd


def _kill(pid: int, group_only: bool = False) -> None:
    """SIGKILL the worker's process group (what a hanging variant started) and the worker (in
    case it had not made the group yet); ``group_only`` once it is reaped: its pid is free."""
    kills = [lambda: os.killpg(pid, signal.SIGKILL)] + ([] if group_only else [lambda: os.kill(pid, signal.SIGKILL)])
    for kill in kills:
        try:
            kill()
        except (ProcessLookupError, PermissionError):
            pass


def _watch(pid: int, fd: int, slot, timeout: float | None) -> tuple[bytes, str | None, int]:
    """Read the child's answer; ``(answer, timeout reason or None, exit status)``. The child
    is killed when one call runs past ``timeout`` (no new call started for that long)."""
    buffer, reason, interrupted = b"", None, False
    seen, deadline = slot[1], time.monotonic() + (timeout or float("inf"))
    try:
        while True:
            ready, _, _ = select.select([fd], [], [], max(0.0, min(POLL_SECONDS, deadline - time.monotonic())))
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:  # the child closed the pipe: it exited or died
                    break
                buffer += chunk
            elif slot[1] != seen:
                seen, deadline = slot[1], time.monotonic() + (timeout or float("inf"))
            elif time.monotonic() >= deadline:
                reason = TIMED_OUT.format(timeout)
                break
    except BaseException:        # Ctrl-C (or any error) here: the worker must not outlive the tuner
        interrupted = True
        raise
    finally:
        os.close(fd)
        if reason is not None or interrupted:
            _kill(pid)
        _, status = os.waitpid(pid, 0)
        if reason is not None:       # what the variant started, now without its worker
            _kill(pid, group_only=True)
    return buffer, reason, status


def measure_isolated(measure: Callable, names: list[str], timeout: float | None,
                     counts: dict | None = None) -> tuple[dict, dict, Verdict]:
    """Measure ``names`` (in this order) in forked workers; return ``(times, failed, verdict)``
    for them. In each worker ``measure(names, slot, guard)`` measures in-process (as
    :func:`nitro.measurement.measure_input` does), each variant wrapped by ``guard`` and its calls
    counted in ``slot`` (four doubles: :class:`nitro.measurement.Tally`); a call running past
    ``timeout`` seconds is killed; ``counts`` works as in :func:`nitro.measurement.measure_variants`.
    Taking the measuring function keeps this module free of nitro.measurement, which calls it."""
    crashed: dict[str, str] = {}
    todo = list(names)
    while todo:
        page = mmap.mmap(-1, mmap.PAGESIZE)
        slot = memoryview(page).cast("d")
        slot[0] = -1.0
        pid, fd = _fork(measure, todo, slot)
        answer, reason, status = _watch(pid, fd, slot, timeout)
        running, calls, seconds = int(slot[0]), int(slot[2]), float(slot[3])
        slot.release()
        page.close()
        if counts is not None:
            counts["calls"] = counts.get("calls", 0) + calls
            counts["seconds"] = counts.get("seconds", 0.0) + seconds
        if reason is None and answer.endswith(b"\n"):
            msg = json.loads(answer)
            verdict = Verdict(**{k: (float("nan") if v is None and k in ("gap", "noise") else v)
                                 for k, v in msg["verdict"].items()})
            times = {name: msg["times"].get(name) for name in names}
            return times, {**crashed, **msg["failed"]}, verdict
        why = reason or _exit_reason(status)
        if running < 0:   # died outside any variant's call: nothing left can be trusted
            crashed.update({name: why for name in todo})
            break
        crashed[todo.pop(running)] = why
    return {name: None for name in names}, crashed, Verdict(None, float("nan"), float("nan"), "decided")
