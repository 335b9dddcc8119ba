import os
import time

import pytest

from nitro import quiet

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="the quiet-machine check reads /proc/stat (Linux)")


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_another_process_is_foreign_work(busy_process):
    cpus = len(os.sched_getaffinity(0))
    with busy_process():
        time.sleep(0.3)
        before = quiet.sample()
        time.sleep(1.0)
        after = quiet.sample()
    assert after.cpus == cpus
    assert quiet.foreign_share(before, after) >= 0.6 / cpus      # one busy loop: a whole CPU of them


def test_this_process_work_is_its_own():
    before, cpu = quiet.sample(), time.process_time()
    _spin(0.5)
    after, cpu = quiet.sample(), time.process_time() - cpu
    assert cpu > 0.05 and after.own - before.own == pytest.approx(cpu, abs=0.05)    # counted as its own ...
    ideal = quiet.Sample(0.0, 0.0, 0.0, 2)
    assert quiet.foreign_share(ideal, quiet.Sample(1.0, 1.0, 1.0, 2)) == 0.0     # ... and subtracted
    assert quiet.foreign_share(ideal, quiet.Sample(1.0, 1.5, 0.5, 2)) == pytest.approx(0.5 - 0.01, abs=0.005)


def test_a_process_cpu_time_is_read_from_proc():
    _spin(0.2)
    t = os.times()
    mine = quiet.process_cpu_seconds(os.getpid())
    assert mine is not None and mine == pytest.approx(t.user + t.system, abs=2.5 / quiet.CLOCK_TICKS)
    assert quiet.process_cpu_seconds(2 ** 22 + 1) is None                     # beyond Linux's pid_max


def test_waiting_gives_up_after_its_timeout(busy_process):
    with busy_process():
        time.sleep(0.2)
        share, gave_up = quiet.wait_until_quiet(max_share=1e-9, window=0.3, timeout=0.5)
    assert share > 0 and gave_up
    assert quiet.wait_until_quiet(timeout=0) == (0.0, False)                    # no wait at all


def test_a_machine_without_proc_stat_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="needs Linux"):
        quiet.sample(str(tmp_path / "no-such-stat"))
