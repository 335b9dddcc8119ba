"""The noise benchmark's parts: the load it starts and ends itself, and the label agreement."""
import os
import time

import numpy as np
import pytest

from nitro.bench.noise import CPULoad, label_agreement


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs a second core to load")
def test_cpu_load_spins_pinned_to_the_other_cores_and_is_ended_by_pid():
    with CPULoad(limit=30) as load:
        assert load.cores == sorted(os.sched_getaffinity(0))[1:] and len(load.pids) == len(load.cores)
        for pid, core in zip(load.pids, load.cores):
            assert os.sched_getaffinity(pid) == {core}
        spin_start = [_cpu_seconds(pid) for pid in load.pids]
        os.sched_yield()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and \
                not all(_cpu_seconds(p) > s for p, s in zip(load.pids, spin_start)):
            pass
        assert all(_cpu_seconds(p) > s for p, s in zip(load.pids, spin_start))   # busy, not sleeping
    for pid in load.pids:
        assert not os.path.exists(f"/proc/{pid}")


def test_cpu_load_rejects_cores_it_may_not_use():
    with pytest.raises(ValueError, match="not among the cores"):
        CPULoad(cores=[10_000])


def test_label_agreement_counts_only_inputs_with_a_clear_leader():
    quiet = np.array([[1.0, 2.0, 3.0],      # leads by 100%: counted, agrees
                      [1.0, 1.02, 3.0],     # near tie: not counted
                      [np.nan, 1.0, 1.5],   # failed variant ignored; leads by 50%: counted, disagrees
                      [1.0, 1.2, np.nan]])  # counted, agrees
    loaded = np.array([[1.1, 2.5, 3.0], [1.5, 1.0, 3.0], [np.nan, 2.0, 1.5], [2.0, 2.5, np.nan]])
    assert label_agreement(quiet, loaded) == {"n_inputs": 3, "agree": 2, "share": pytest.approx(2 / 3)}
    assert label_agreement(quiet[1:2], loaded[1:2])["share"] is None


def test_label_agreement_can_take_the_clear_inputs_from_a_reference_timing():
    quiet = np.array([[1.0, 1.02], [1.0, 2.0]])
    loaded = np.array([[2.0, 1.0], [1.0, 2.0]])
    reference = np.array([[1.0, 1.5], [1.0, 1.01]])   # the first input is the clear one here
    assert label_agreement(quiet, loaded, clear_by=reference) == {"n_inputs": 1, "agree": 0, "share": 0.0}
