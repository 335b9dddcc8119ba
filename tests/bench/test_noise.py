"""The noise benchmark's parts: the load it starts and ends itself, and the label agreement."""
import os
import time

import numpy as np
import pytest

from nitro.bench.noise import CPULoad, format_noise, label_agreement


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


def test_the_table_keeps_the_longest_variant_name_apart_from_the_loaded_figure():
    """A 21-letter best fixed variant ran into the loaded %opt column ("83.8%shared_atomic_dynamic")."""
    timing = {"undecided": 1}
    run = {"seed": 0, "quiet": {"percent_of_optimum": 59.9, "variant_calls": 633, "timing": timing},
           "loaded": {"percent_of_optimum": 83.8, "variant_calls": 613, "timing": timing},
           "best_fixed_variant": "shared_atomic_dynamic", "best_fixed_percent": 83.8,
           "label_agreement": {"agree": 6, "n_inputs": 8}}
    r = {"n_train": 8, "n_test": 8, "machine": "vm", "load_average_before": (1.0,), "load_average_after": (1.0,),
         "runs": [run], "label_agreement": 0.75, "loaded_draws_at_95_and_not_below_best_fixed": 0, "repeats": 1,
         "lead": 0.05, "quiet_calls_ratio_to_no_retiming": 0.9,
         "reference": {"n_inputs": 8, "labels_agree": 0.75, "quiet_right": 0.75, "loaded_right": 0.875}}
    header, row = format_noise(r).splitlines()[1:3]
    assert "83.8% shared_atomic_dynamic" in row
    assert header.index("best fixed") + len("best fixed") == row.rindex(" 83.8%") + len(" 83.8%")   # one column
