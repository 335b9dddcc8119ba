import os
import subprocess
import sys
import time

import pytest

from nitro import quiet

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="the quiet-machine check reads /proc/stat (Linux)")


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_another_process_is_foreign_work_and_this_ones_is_not():
    cpus = os.cpu_count()
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        before = quiet.sample()
        time.sleep(1.0)
        loaded = quiet.foreign_share(before, quiet.sample())
    finally:
        busy.kill()
        busy.wait()
    before = quiet.sample()
    _spin(1.0)                          # this process's own work
    own = quiet.foreign_share(before, quiet.sample())
    assert loaded >= 0.6 / cpus         # one busy loop: a whole CPU of the machine's
    assert own < loaded and own < 0.5 / cpus


def test_waiting_gives_up_after_its_timeout():
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        share, waited = quiet.wait_until_quiet(max_share=1e-9, window=0.3, timeout=0.5)
    finally:
        busy.kill()
        busy.wait()
    assert share > 0 and 0.5 <= waited < 5


def test_a_machine_without_proc_stat_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="needs Linux"):
        quiet.sample(str(tmp_path / "no-such-stat"))
