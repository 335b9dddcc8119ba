import os
import time

import pandas as pd
import pytest

from nitro import cuda, devices
from nitro.dataset import load_dataset_dir
from nitro.measurement import TimingPolicy
from nitro.noise import NoisyMachineWarning
from nitro.record import record_family
from nitro.devices.gpu import cuda_device_id
from nitro.devices.lineage import gpu_arch
from nitro.store import Store

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="recording checks /proc/stat (Linux)")
FAST = TimingPolicy(min_repeats=1, max_repeats=3, target_seconds=0.0)
NO_WAIT = dict(policy=FAST, attempts=1, max_foreign=1.0, wait_timeout=0, progress=False)


@pytest.fixture
def clean_store(embedded_redis):
    embedded_redis.flushall()
    yield Store(client=embedded_redis)
    embedded_redis.flushall()


def test_a_recorded_family_loads_as_a_dataset_and_a_second_run_resumes(clean_store, tmp_path):
    from nitro.row import TrainingRow
    r = record_family(clean_store, "histogram", tmp_path, device_id="cpu_recorded_here", n_train=2, n_test=1,
                      **NO_WAIT)
    assert (r["measured"], r["resumed"], r["inputs"]) == (3, 0, 3)
    m = load_dataset_dir(tmp_path / "histogram")
    assert m.device_ids == ["cpu_recorded_here"] and len(m.inputs) == 3 and len(m.variants) >= 2
    # kind, vendor and family go beside the features (tune_from_source tells a new family by them)
    expected = devices.local_metadata("cpu_recorded_here")
    assert m.device_metadata("kind") == {"cpu_recorded_here": "cpu"}
    assert m.device_metadata("arch") == ({"cpu_recorded_here": expected["arch"]} if "arch" in expected else None)
    assert set(m.device_feature_names).isdisjoint(expected)
    load = pd.read_csv(tmp_path / "foreign_load.csv")
    assert load["foreign_cpu_share"].between(0, 1).all()
    assert load.loc[load["computation"] == "device_record", "input"].tolist() == ["cpu_recorded_here"]
    load = load[load["computation"] == "histogram"]
    assert sorted(load["input"]) == sorted(m.inputs.index)
    assert "cpu_recorded_here" in (tmp_path / "device.json").read_text()
    again = record_family(clean_store, "histogram", tmp_path, device_id="cpu_recorded_here", n_train=2, n_test=1,
                          **NO_WAIT)
    assert (again["measured"], again["resumed"]) == (0, 3)
    assert len(pd.read_csv(tmp_path / "foreign_load.csv")) == 4            # the first run's lines kept
    # a row that tune() left, without a line in foreign_load.csv, is timed again; other inputs are not exported
    from nitro.benchmarks.histogram import train_test_inputs
    (_, ids), _ = train_test_inputs(3, 1)
    row = clean_store.rows("histogram", "cpu_recorded_here")[0]
    for iid in (ids[2], "not-a-default-input"):
        clean_store.put_row("histogram", "cpu_recorded_here", TrainingRow(iid, row.features, row.times))
    more = record_family(clean_store, "histogram", tmp_path, device_id="cpu_recorded_here", n_train=3, n_test=1,
                         **NO_WAIT)
    assert (more["measured"], more["resumed"]) == (1, 3)
    assert "not-a-default-input" not in set(load_dataset_dir(tmp_path / "histogram").inputs.index)
    # a run with fewer inputs exports those only, and foreign_load.csv describes them alone
    fewer = record_family(clean_store, "histogram", tmp_path, device_id="cpu_recorded_here", n_train=1, n_test=1,
                          **NO_WAIT)
    assert (fewer["measured"], fewer["resumed"]) == (0, 2)
    exported = set(load_dataset_dir(tmp_path / "histogram").inputs.index)
    load = pd.read_csv(tmp_path / "foreign_load.csv")
    assert len(exported) == 2 and set(load.loc[load["computation"] == "histogram", "input"]) == exported
    assert load["computation"].eq("device_record").sum() == 1


def test_an_input_timed_while_other_work_ran_is_timed_again(clean_store, tmp_path, busy_process):
    clean_store.put_device("cpu_busy_here", {"cores": {"value": 2.0, "unit": "cores", "source": "query"}})
    with busy_process():
        time.sleep(0.2)
        with pytest.warns(NoisyMachineWarning, match=r"for 0.3 s \(--wait-timeout\).*Each later input waits") as w:
            r = record_family(clean_store, "histogram", tmp_path, device_id="cpu_busy_here", n_train=2, n_test=0,
                              max_foreign=0.0, wait_share=1e-9, attempts=3, policy=FAST, wait_window=0.1,
                              wait_timeout=0.3, progress=False)   # one busy loop is under 10% of 16 cores
    assert sum(issubclass(x.category, NoisyMachineWarning) for x in w) == 1     # once, not per input (two here)
    line = pd.read_csv(tmp_path / "foreign_load.csv").query("computation == 'histogram'").iloc[0]
    assert line["attempts"] == 3 and line["foreign_cpu_share"] > 0
    assert r["inputs_above_max_foreign"] == 2 and r["measured"] == 2 and r["inputs_not_waited_for"] == 2
    assert len(clean_store.rows("histogram", "cpu_busy_here")) == 2
    again = record_family(clean_store, "histogram", tmp_path, device_id="cpu_busy_here", n_train=2, n_test=0,
                          **{**NO_WAIT, "max_foreign": 0.0})
    assert again["measured"] == 2                                    # a disturbed input is timed again


def test_a_run_at_a_busier_moment_keeps_the_quieter_timings(clean_store, tmp_path, busy_process):
    """Before 2026-11-28 a run timing a disturbed input again stored its new timing even when other
    work took more of the machine than during the stored one (0.45 -> 0.85 on a shared node)."""
    args = dict(device_id="cpu_rerun_here", n_train=1, n_test=0, **{**NO_WAIT, "max_foreign": 0.0})
    record_family(clean_store, "histogram", tmp_path, **{**args, "max_foreign": 1.0})
    path = tmp_path / "foreign_load.csv"

    def set_shares(value):
        load = pd.read_csv(path)
        load["foreign_cpu_share"] = value
        load.to_csv(path, index=False)

    set_shares(1e-6)           # disturbed (above 0.0) yet quieter than any moment beside a busy loop
    row, device = clean_store.rows("histogram", "cpu_rerun_here")[0], clean_store.device("cpu_rerun_here")
    with busy_process():
        time.sleep(0.2)
        r = record_family(clean_store, "histogram", tmp_path, **args)
    assert (r["measured"], r["kept_earlier"], r["device_record_kept_earlier"]) == (1, 1, True)
    assert clean_store.rows("histogram", "cpu_rerun_here")[0].times == row.times
    assert clean_store.device("cpu_rerun_here") == device
    assert pd.read_csv(path)["foreign_cpu_share"].max() < 0.001
    set_shares(1.0)            # the busiest stored moment: the new timing replaces it
    again = record_family(clean_store, "histogram", tmp_path, **{**args, "attempts": 1})
    assert (again["kept_earlier"], again["device_record_kept_earlier"]) == (0, False)
    assert clean_store.rows("histogram", "cpu_rerun_here")[0].times != row.times
    assert pd.read_csv(path)["foreign_cpu_share"].max() < 1.0


def test_a_folder_being_recorded_refuses_a_second_recording(clean_store, tmp_path):
    """Before 2026-11-28 two ``nitro record`` runs in one folder both timed every input, each
    disturbed by the other, and rewrote each other's foreign_load.csv."""
    import fcntl
    from nitro.record import RecordingBusyError
    with open(tmp_path / ".nitro-record.lock", "a+") as other:     # another recording holds the folder
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        other.write("4242")
        other.flush()
        with pytest.raises(RecordingBusyError, match=r"being recorded by another process \(pid 4242\)"):
            record_family(clean_store, "histogram", tmp_path, device_id="cpu_one", n_train=1, n_test=0, **NO_WAIT)
    assert not (tmp_path / "foreign_load.csv").exists() and clean_store.rows("histogram", "cpu_one") == []
    clean_store.put_device("cpu_one", {"cores": {"value": 2.0, "unit": "cores", "source": "query"}})
    r = record_family(clean_store, "histogram", tmp_path, device_id="cpu_one", n_train=1, n_test=0, **NO_WAIT)
    assert r["measured"] == 1      # once the other has ended (its lock gone with it), the folder is free


def test_a_recording_in_another_thread_is_named_as_such(clean_store, tmp_path, held_in_thread):
    """A second recording of one folder from another thread of the same process was refused as
    one of 'another process' with this process's own pid."""
    from nitro.record import RecordingBusyError, _only_recording
    with held_in_thread(lambda: _only_recording(tmp_path)):
        with pytest.raises(RecordingBusyError, match="being recorded by another thread of this process"):
            record_family(clean_store, "histogram", tmp_path, device_id="cpu_one", n_train=1, n_test=0, **NO_WAIT)


def test_a_folder_holds_one_devices_recording(clean_store, tmp_path):
    clean_store.put_device("cpu_one", {"cores": {"value": 2.0, "unit": "cores", "source": "query"}})
    record_family(clean_store, "histogram", tmp_path, device_id="cpu_one", n_train=1, n_test=0, **NO_WAIT)
    with pytest.raises(ValueError, match="holds the recording of 'cpu_one'"):
        record_family(clean_store, "histogram", tmp_path, device_id="cpu_two", n_train=1, n_test=0, **NO_WAIT)
    (tmp_path / "foreign_load.csv").write_text("")
    with pytest.raises(ValueError, match="foreign_load.csv cannot be read"):
        record_family(clean_store, "histogram", tmp_path, device_id="cpu_one", n_train=1, n_test=0, **NO_WAIT)


def test_bad_settings_are_refused(clean_store, tmp_path):
    with pytest.raises(ValueError, match="max_foreign"):
        record_family(clean_store, "histogram", tmp_path, max_foreign=2.0)
    with pytest.raises(ValueError, match="--wait-window"):
        record_family(clean_store, "histogram", tmp_path, wait_window=-1.0)
    with pytest.raises(ValueError, match="--train"):
        record_family(clean_store, "histogram", tmp_path, n_train=0)
    with pytest.raises(ValueError, match="unknown benchmark family"):
        record_family(clean_store, "no_such_family", tmp_path)


@pytest.mark.gpu
@pytest.mark.skipif(cuda.variants_unavailable() is not None, reason=f"no usable CUDA GPU here: {cuda.variants_unavailable()}")
def test_a_gpu_family_records_under_its_gpu(clean_store, tmp_path):
    """Before 2026-11-26 ``nitro record histogram_cuda`` filed the GPU's rows and device record
    under this machine's CPU id."""
    r = record_family(clean_store, "histogram_cuda", tmp_path, n_train=1, n_test=0, **NO_WAIT)
    assert r["device"] == cuda_device_id() and clean_store.device(r["device"])["multiprocessors"]["value"] > 0
    assert clean_store.device_metadata(r["device"])["arch"] == gpu_arch(clean_store.device(r["device"])["compute_capability"]["value"])


OWN_FAMILY = '''
"""A user's own family: the sum of squares, by NumPy and by a Python loop."""
import numpy as np
from nitro import CodeVariant

VARIANTS = {"numpy": lambda x: float(np.dot(x, x)), "loop": lambda x: float(sum(v * v for v in x))}
FEATURES = {"n": lambda x: float(x.size)}


def make_code_variant(name="sumsq"):
    return CodeVariant(name, VARIANTS, FEATURES, default="numpy")


def train_test_inputs(n_train=4, n_test=2, seed=0):
    rng = np.random.default_rng(seed)
    sizes = [2 ** (3 + k) for k in range(n_train + n_test)]
    items = [rng.random(n) for n in sizes]
    ids = [f"sumsq-{seed}-{k}" for k in range(len(items))]
    return (items[:n_train], ids[:n_train]), (items[n_train:], ids[n_train:])
'''


def test_a_family_of_ones_own_records_from_its_file(clean_store, tmp_path):
    """``nitro record`` takes a user's family module (its file or import name) that offers the
    contract's names: it had refused anything but nitro's own families."""
    path = tmp_path / "sumsq_family.py"
    path.write_text(OWN_FAMILY)
    r = record_family(clean_store, str(path), tmp_path / "rec", device_id="cpu_own", n_train=3, n_test=1, **NO_WAIT)
    assert (r["computation"], r["measured"], r["inputs"]) == ("sumsq", 4, 4)
    m = load_dataset_dir(tmp_path / "rec" / "sumsq")
    assert sorted(m.variants) == ["loop", "numpy"] and len(m.inputs) == 4
    assert m.device_ids == ["cpu_own"]


def test_a_disturbed_device_record_is_taken_again_once_per_run_not_per_family(clean_store, tmp_path):
    """``nitro record histogram,spmv`` on a busy machine took the disturbed device record again for
    every family (each up to --wait-timeout); the families after the first leave it as it is."""
    args = dict(device_id="cpu_once_here", n_train=1, n_test=0, **{**NO_WAIT, "max_foreign": 0.0})
    record_family(clean_store, "histogram", tmp_path, **{**args, "max_foreign": 1.0})
    path = tmp_path / "foreign_load.csv"
    load = pd.read_csv(path)
    load.loc[load["computation"] == "device_record", "foreign_cpu_share"] = 0.5    # disturbed (above 0.0)
    load.to_csv(path, index=False)
    device = clean_store.device("cpu_once_here")
    later = record_family(clean_store, "spmv", tmp_path, device_record=False, **args)
    assert later["device_record_foreign_share"] is None and not later["device_record_kept_earlier"]
    assert clean_store.device("cpu_once_here") == device
    logged = pd.read_csv(path)
    assert logged.loc[logged["computation"] == "device_record", "foreign_cpu_share"].tolist() == [0.5]
    first = record_family(clean_store, "histogram", tmp_path, **args)       # the run's first family takes it again
    assert first["device_record_foreign_share"] is not None
