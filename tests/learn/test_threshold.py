"""Futhark-style threshold tuning on a real two-version computation (direct vs FFT
convolution), and the threshold selector."""
import math
import shutil
import subprocess
import time
from collections import Counter

import numpy as np
import pytest

from nitro.learn import ThresholdSelector
from nitro.learn.threshold import Thresholds, tune_thresholds
from nitro.measurement import TimingPolicy

ONE = TimingPolicy(warmup=1, min_repeats=1, max_repeats=1, target_seconds=0.0)


def convolve(th, a, b):
    """Full convolution: FFT when the direct version's work a.size·b.size reaches the threshold."""
    if th("fft", a.size * b.size):
        n = a.size + b.size - 1
        return np.fft.irfft(np.fft.rfft(a, n) * np.fft.rfft(b, n), n)
    return np.convolve(a, b)


def datasets(exponents):
    rng = np.random.default_rng(0)
    return [(rng.random(2 ** e), rng.random(2 ** e)) for e in exponents]


def test_both_versions_compute_the_same_convolution():
    a, b = datasets([9])[0]
    assert np.allclose(convolve(Thresholds({"fft": 0}), a, b), convolve(Thresholds({"fft": math.inf}), a, b))


def test_finds_the_measured_crossover_and_times_each_path_once():
    data = datasets(range(2, 13))
    calls = Counter()

    def counted(th, a, b):
        out = convolve(th, a, b)
        calls[(a.size, th.path[-1][2])] += 1       # (dataset, execution path)
        return out

    r = tune_thresholds(counted, data, {"fft": 0.0}, ids=[a.size for a, _ in data], policy=ONE, isolate=False)
    # Futhark's rule: candidates are the distinct compared values (plus "never"), one timing per path
    assert r.candidates["fft"] == [float(a.size * b.size) for a, b in data] + [math.inf]
    timed = Counter((d, p) for d, p, _, _ in r.timings)
    assert max(timed.values()) == 1 and len(timed) == 2 * len(data)
    assert max(calls.values()) <= 2          # one warm-up + one timed call per path, never again
    measured = {(int(d), p[-1][2]): s for d, p, s, _ in r.timings}
    thr = r.thresholds["fft"]
    # Single timings can be non-monotone (one slow sample), and one threshold cannot follow
    # them all; but at the two ends the winner is decisive (~10x), and the rule must pick it.
    for (a, b), fft_wins in ((data[0], False), (data[-1], True)):
        direct, fft = measured[(a.size, False)], measured[(a.size, True)]
        if max(direct, fft) > 3 * min(direct, fft) and (fft < direct) == fft_wins:
            assert (a.size * b.size >= thr) == fft_wins, (a.size, direct, fft, thr)
    # the tuned total is the best total over all candidate thresholds of the measured paths
    for t in r.candidates["fft"]:
        assert r.total_seconds <= sum(measured[(a.size, a.size * b.size >= t)] for a, b in data) + 1e-15
    lo, hi = r.intervals["fft"]
    assert lo <= thr <= hi


def test_a_slow_path_is_cut_off_by_the_timeout():
    data = datasets([6, 10, 16])          # the direct version on 2^16 × 2^16 takes seconds
    start = time.perf_counter()
    r = tune_thresholds(convolve, data, {"fft": 0.0}, ids=["64", "1024", "65536"], policy=ONE,
                        timeout_factor=3.0, min_timeout=0.3)
    spent = time.perf_counter() - start
    slow = [t for t in r.timings if t[0] == "65536" and not t[1][-1][2]]
    assert len(slow) == 1 and slow[0][2] == math.inf and slow[0][3] == "timeout"
    assert r.thresholds["fft"] <= 65536.0 ** 2 and r.per_dataset["65536"] < 1.0
    assert spent < 20


def test_a_path_that_crashes_is_failed_with_the_reason_and_avoided():
    """Isolated tuning: a path that segfaults kills only its worker; it is recorded as infinitely
    slow with the reason and the path it took, and the tuned threshold keeps every dataset off it."""
    import ctypes

    def program(th, a):
        if th("crash", a.size):
            ctypes.string_at(0)
        return a.sum()

    data = [(np.arange(n, dtype=float),) for n in (4, 64)]
    r = tune_thresholds(program, data, {"crash": 0.0}, ids=["4", "64"], policy=ONE)
    crashed = [t for t in r.timings if t[1][-1][2]]
    assert crashed and all(t[2] == math.inf and t[3] == "killed by SIGSEGV" for t in crashed)
    assert all(len(t[1]) == 1 and t[1][0][:2] == ("crash", float(t[0])) for t in crashed)
    assert r.thresholds["crash"] == math.inf and all(math.isfinite(s) for s in r.per_dataset.values())


def test_emitted_python_and_c_rules_agree():
    data = datasets(range(2, 9))
    r = tune_thresholds(convolve, data, {"fft": 0.0}, policy=ONE, isolate=False)
    namespace = {}
    exec(r.to_python("convolve"), namespace)
    sizes = [1.0, 64.0, 4096.0, 1e6, 1e9]
    expected = [s >= r.thresholds["fft"] for s in sizes]
    assert [namespace["use_fft"](s) for s in sizes] == expected
    header = r.to_c_header("convolve")
    assert "#define NITRO_THRESHOLD_FFT" in header and "nitro_use_fft" in header
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to check the header")
    return_header_checked(cc, header, sizes, expected)


def test_c_headers_of_names_that_map_to_one_identifier_keep_their_own_guards():
    r = tune_thresholds(convolve, datasets(range(2, 5)), {"fft": 0.0}, policy=ONE, isolate=False)
    guards = [r.to_c_header(name).splitlines()[1] for name in ("conv-a", "CONV_A", "conv_a")]
    assert all(g.startswith("#ifndef NITRO_CONV_A_") for g in guards) and len(set(guards)) == 3


def return_header_checked(cc, header, sizes, expected):
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "rule.h").write_text(header)
        (tmp / "main.c").write_text('#include <stdio.h>\n#include "rule.h"\nint main(void){double s[]={'
                                    + ",".join(repr(s) for s in sizes) + '};for(int i=0;i<' + str(len(sizes))
                                    + ';i++)printf("%d",nitro_use_fft(s[i]));return 0;}\n')
        subprocess.run([cc, "-std=c99", "-Wall", "-Werror", "-o", str(tmp / "rule"), str(tmp / "main.c")], check=True)
        out = subprocess.run([str(tmp / "rule")], capture_output=True, text=True, check=True).stdout
    assert out == "".join("1" if e else "0" for e in expected)


def test_threshold_selector_finds_the_crossover_on_a_size():
    rng = np.random.default_rng(0)
    size = np.unique(np.round(10 ** rng.uniform(0, 6, 300)))
    other = rng.normal(size=size.size)
    # version 0 costs size, version 1 costs 5000 + size/10: crossover at size 5555.6
    T = np.column_stack([size, 5000 + size / 10]) * np.exp(rng.normal(0, 0.01, (size.size, 2)))
    sel = ThresholdSelector().fit(np.column_stack([other, size]), T)
    assert sel.feature_ == 1 and sel.labels_ == [0, 1]
    below, above = size[size < 5555.6].max(), size[size > 5555.6].min()
    assert below < sel.thresholds_[0] <= above and sel.thresholds_[0] in size


_FORKS_SCRIPT = r'''
import ctypes, json, os, sys
import numpy as np
from nitro import cuda
from nitro.learn.threshold import tune_thresholds
from nitro.measurement import TimingPolicy

forks = [0]
os.register_at_fork(before=lambda: forks.__setitem__(0, forks[0] + 1))

def program(th, a):
    return a.sum() if th("big", a.size) else a.max()

def tune():
    forks[0] = 0
    data = [(np.arange(n, dtype=float),) for n in (4, 64)]
    result = tune_thresholds(program, data, {"big": 0.0}, policy=TimingPolicy(1, 1, 1, 0.0), isolate=True)
    return {"loaded": cuda.driver_loaded(), "forks": forks[0], "timed": len(result.timings)}

before = tune()
ctypes.CDLL(sys.argv[1])
print(json.dumps({"before": before, "after": tune()}))
'''


def test_isolated_tuning_never_forks_once_the_cuda_driver_is_loaded(stand_in_cuda_driver):
    """A program that uses CUDA cannot run in a forked child, so isolated tuning runs in-process
    once the driver is loaded: forks before a stand-in ``libcuda.so.1`` is loaded, none after,
    the same paths timed both times."""
    import json
    import sys
    run = subprocess.run([sys.executable, "-c", _FORKS_SCRIPT, str(stand_in_cuda_driver)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["before"]["loaded"] is False and result["before"]["forks"] >= 2
    assert result["after"]["loaded"] is True and result["after"]["forks"] == 0
    assert result["after"]["timed"] == result["before"]["timed"] > 0


@pytest.mark.parametrize("bad", [{"max_seconds": 0}, {"min_timeout": -1}, {"timeout_factor": 0}])
def test_time_outs_that_are_not_positive_are_refused(bad):
    """A zero deadline had killed every path at once, then (timed through the shared worker)
    meant no deadline at all: either way not what was asked."""
    with pytest.raises(ValueError, match="time-outs must be positive"):
        tune_thresholds(lambda th, n: n, [(1,)], {"t": 1.0}, **bad)
