import os
import subprocess
import sys
import time

import pandas as pd
import pytest

from nitro.dataset import load_dataset_dir
from nitro.measurement import TimingPolicy
from nitro.record import record_family
from nitro.store import Store

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="recording checks /proc/stat (Linux)")
FAST = TimingPolicy(min_repeats=1, max_repeats=3, target_seconds=0.0)


@pytest.fixture
def clean_store(embedded_redis):
    embedded_redis.flushall()
    yield Store(client=embedded_redis)
    embedded_redis.flushall()


def test_a_recorded_family_loads_as_a_dataset_and_a_second_run_resumes(clean_store, tmp_path):
    kw = dict(device_id="cpu_recorded_here", n_train=2, n_test=1, policy=FAST, wait_window=0.2, wait_timeout=5,
              progress=False)
    r = record_family(clean_store, "histogram", tmp_path, **kw)
    assert (r["measured"], r["resumed"], r["inputs"]) == (3, 0, 3)
    m = load_dataset_dir(tmp_path / "histogram")
    assert m.device_ids == ["cpu_recorded_here"] and len(m.inputs) == 3 and len(m.variants) >= 2
    load = pd.read_csv(tmp_path / "foreign_load.csv")
    assert sorted(load["input"]) == sorted(m.inputs.index) and load["foreign_cpu_share"].between(0, 1).all()
    assert "cpu_recorded_here" in (tmp_path / "device.json").read_text()
    again = record_family(clean_store, "histogram", tmp_path, **kw)
    assert (again["measured"], again["resumed"]) == (0, 3)
    assert len(pd.read_csv(tmp_path / "foreign_load.csv")) == 3            # the first run's lines kept


def test_an_input_timed_while_other_work_ran_is_timed_again(clean_store, tmp_path):
    clean_store.put_device("cpu_busy_here", {"cores": {"value": 2.0, "unit": "cores", "source": "query"}})
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        r = record_family(clean_store, "histogram", tmp_path, device_id="cpu_busy_here", n_train=1, n_test=0,
                          max_foreign=0.0, attempts=2, policy=FAST, wait_window=0.1, wait_timeout=0.2, progress=False)
    finally:
        busy.kill()
        busy.wait()
    line = pd.read_csv(tmp_path / "foreign_load.csv").iloc[0]
    assert line["attempts"] == 2 and line["foreign_cpu_share"] > 0
    assert r["inputs_above_max_foreign"] == 1 and r["measured"] == 1
    assert len(clean_store.rows("histogram", "cpu_busy_here")) == 1


def test_bad_settings_are_refused(clean_store, tmp_path):
    with pytest.raises(ValueError, match="max_foreign"):
        record_family(clean_store, "histogram", tmp_path, max_foreign=2.0)
    with pytest.raises(ValueError, match="unknown benchmark family"):
        record_family(clean_store, "no_such_family", tmp_path)
