"""How much of this machine other work takes: its CPU time from ``/proc/stat`` (the hypervisor's
steal included) less this process's and its waited-for children's (``os.times``), as a share of
all CPUs over a wall-clock interval. A timing taken while that share was high may hold another
program's work rather than the variant's; recording a data set uses it to wait for quiet moments
and to measure an input again when it was disturbed (:mod:`nitro.record`). Linux only."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Sample:
    wall: float        # monotonic seconds
    busy: float        # seconds of CPU time the whole machine spent outside idle and I/O wait
    own: float         # seconds of CPU time of this process and its waited-for children


def sample(stat: str = "/proc/stat") -> Sample:
    """The machine's and this process's CPU time now."""
    try:
        with open(stat) as f:
            fields = f.readline().split()
    except OSError as e:
        raise FileNotFoundError(f"cannot read {stat} ({e.strerror}): the quiet-machine check needs Linux") from None
    if not fields or fields[0] != "cpu":
        raise ValueError(f"{stat} does not start with the all-CPU line")
    ticks = [int(v) for v in fields[1:9]]          # user nice system idle iowait irq softirq steal
    t = os.times()
    return Sample(time.monotonic(), (sum(ticks) - ticks[3] - ticks[4]) / CLOCK_TICKS,
                  t.user + t.system + t.children_user + t.children_system)


def foreign_share(before: Sample, after: Sample, cpus: int | None = None) -> float:
    """The share (0-1) of the machine's ``cpus`` (default all) that other work took between two
    samples, less two clock ticks (both counters count whole ticks: over 0.05 s on 2 CPUs one
    tick alone would read as 10%)."""
    wall = after.wall - before.wall
    if wall <= 0:
        return 0.0
    other = (after.busy - before.busy) - (after.own - before.own) - 2.0 / CLOCK_TICKS
    return float(min(1.0, max(0.0, other / (wall * (cpus or os.cpu_count() or 1)))))


def wait_until_quiet(max_share: float = 0.10, window: float = 2.0, timeout: float = 600.0) -> tuple[float, float]:
    """Wait until other work takes under ``max_share`` of the machine for a whole ``window`` of
    seconds, or ``timeout`` seconds have passed; returns the last window's share and the seconds waited."""
    start = time.monotonic()
    while True:
        before = sample()
        time.sleep(window)
        share = foreign_share(before, sample())
        waited = time.monotonic() - start
        if share < max_share or waited >= timeout:
            return share, waited
