"""How much of the CPUs this process may use other work takes: their CPU time from
``/proc/stat`` (the hypervisor's steal included) less this process's and its waited-for
children's (``os.times``), as a share of those CPUs over a wall-clock interval. A timing taken
while that share was high may hold another program's work rather than the variant's; recording
a data set uses it to wait for quiet moments and to measure an input again when it was
disturbed (:mod:`nitro.record`). Linux only."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Sample:
    wall: float        # monotonic seconds
    busy: float        # CPU seconds the CPUs spent outside idle and I/O wait
    own: float         # CPU seconds of this process and its waited-for children
    cpus: int = 1      # the CPUs counted


def sample(stat: str = "/proc/stat") -> Sample:
    """The CPU time of the CPUs this process may use (``sched_getaffinity``) and its own, now."""
    try:
        with open(stat) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        raise FileNotFoundError(f"{stat} does not exist: the quiet-machine check needs Linux") from None
    mine = {f"cpu{c}" for c in os.sched_getaffinity(0)}
    busy, counted = 0, 0
    for line in lines:
        fields = line.split()
        if fields and fields[0] in mine:
            ticks = [int(v) for v in fields[1:9]]      # user nice system idle iowait irq softirq steal
            busy += sum(ticks) - ticks[3] - ticks[4]
            counted += 1
    if not counted:
        raise ValueError(f"{stat} has no line for the CPUs this process may use ({', '.join(sorted(mine))})")
    t = os.times()
    return Sample(time.monotonic(), busy / CLOCK_TICKS, t.user + t.system + t.children_user + t.children_system,
                  counted)


def process_cpu_seconds(pid: int) -> float | None:
    """CPU time (user and system, all its threads) process ``pid`` has used, from
    ``/proc/<pid>/stat``; ``None`` where there is none to read (no such process, not Linux)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()      # after the command name, which may hold spaces
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (OSError, ValueError, IndexError):
        return None


def foreign_share(before: Sample, after: Sample) -> float:
    """The share (0-1) of the counted CPUs that other work took between two samples, less two
    clock ticks (both counters count whole ticks: over 0.05 s on 2 CPUs one tick alone would
    read as 10%)."""
    wall = after.wall - before.wall
    if wall <= 0:
        return 0.0
    other = (after.busy - before.busy) - (after.own - before.own) - 2.0 / CLOCK_TICKS
    return round(float(min(1.0, max(0.0, other / (wall * after.cpus)))), 6)


def wait_until_quiet(max_share: float = 0.10, window: float = 2.0, timeout: float = 600.0) -> tuple[float, bool]:
    """Wait until other work takes under ``max_share`` of the CPUs for a whole ``window`` of
    seconds; give up once ``timeout`` seconds have passed (``timeout <= 0``: no wait at all).
    Returns the last window's share (0 without a wait) and whether it gave up."""
    if timeout <= 0:
        return 0.0, False
    start = time.monotonic()
    while True:
        before = sample()
        time.sleep(min(window, max(timeout - (time.monotonic() - start), 0.01)))
        share = foreign_share(before, sample())
        if share < max_share:
            return share, False
        if time.monotonic() - start >= timeout:
            return share, True
