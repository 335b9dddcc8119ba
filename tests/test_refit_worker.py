"""Refits in a child process: the model comes back whole, refiners share one child, a failing
or dying child is counted and replaced, a refit that cannot go there runs in a thread, and
stopping the last refiner ends the child."""
import functools
import importlib.util
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from nitro import SelectorModel, code_variant, refit_worker
from nitro.refine import Refiner, default_refit
from nitro.refit_worker import RefitProcess, _Worker, unpicklable

VARIANTS = ["a", "b", "c"]
XS = np.exp(np.linspace(0.0, 2.5, 97)) - 1.0


def kernel_model():
    return SelectorModel(variants=VARIANTS, input_features=["x"], kind="kernel", params={
        "mean": [0.0], "scale": [1.0], "gamma": 1.0, "centers": [[0.0], [1.0], [2.0]],
        "weights": np.eye(3).tolist(), "offset": [0.0] * 3})


def rows(xs=XS):
    """Every variant timed on every input: ``c`` is fastest above 5, ``a`` below."""
    return xs[:, None], np.column_stack([1.0 + (xs > 5), 1.5 + 0 * xs, 1.0 + (xs <= 5)])


def refiner_of(model=None, **options):
    cv = code_variant("in-a-process", {v: (lambda x, v=v: v) for v in VARIANTS}, {"x": lambda x: float(x)}, default="a")
    cv.model = model or kernel_model()
    return cv, Refiner(cv._dispatcher, cv.name, **{"refit_every": 10 ** 9, **options})


def feed(refiner, X, T):
    for x, t in zip(X, T):
        refiner._rows[tuple(x)] = (list(x), dict(zip(VARIANTS, t)), {})


def test_the_child_refits_as_the_thread_does_and_is_ended_by_stop():
    cv, refiner = refiner_of()
    assert refiner.refit_in == "process" and isinstance(refiner._refit, RefitProcess)
    X, T = rows()
    feed(refiner, X, T)
    assert refiner.refit_now(), refiner.stats()["last_refit_error"]
    expected = default_refit(refiner.base, X, T)                # the same refit, in this process
    got, want = cv.model.to_dict()["params"], expected.to_dict()["params"]
    assert got.keys() == want.keys() and cv.model is not refiner.base
    for key in want:   # the child runs one OpenMP/BLAS thread fewer, which rounds otherwise on some CPUs (Zen 5)
        np.testing.assert_allclose(np.asarray(got[key], dtype=float), np.asarray(want[key], dtype=float),
                                   rtol=1e-9, atol=1e-12, err_msg=key)
    child = refiner._refit._worker.proc
    assert child.poll() is None and child.pid != 0
    cv2, other = refiner_of()                                       # a second code variant refining
    feed(other, X, T)
    assert other.refit_now() and other._refit._worker.proc is child  # shares the child
    stats = refiner.stop()
    assert stats["refit_in"] == "process" and stats["refit"] == "default_refit" and stats["refits"] == 1
    assert child.poll() is None and other.refit_now()               # still there for the other one
    other.stop()
    assert child.poll() is not None                               # stopping the last one ended the child


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="the idle scheduling class is Linux's")
def test_the_child_runs_in_the_idle_class_below_the_serving_process():
    """A refit must not take time slices from a variant that uses every core: the child runs
    at a higher nice value than this process, on Linux in the idle scheduling class, and in
    this process's session, where those count."""
    cv, refiner = refiner_of()
    feed(refiner, *rows())
    assert refiner.refit_now(), refiner.stats()["last_refit_error"]
    child = refiner._refit._worker.proc.pid
    assert os.sched_getscheduler(child) == os.SCHED_IDLE and os.sched_getscheduler(0) != os.SCHED_IDLE
    assert os.getpriority(os.PRIO_PROCESS, child) > os.getpriority(os.PRIO_PROCESS, 0)
    # in this session (a session of its own is a scheduling group of its own, where neither
    # counts), in a process group of its own (Ctrl-C at the terminal is not its)
    assert os.getsid(child) == os.getsid(0) and os.getpgid(child) == child != os.getpgid(0)
    refiner.stop()


@pytest.mark.slow
@pytest.mark.skipif(not (hasattr(os, "SCHED_IDLE") and os.path.exists("/proc/self/stat")),
                    reason="the idle scheduling class and /proc are Linux's")
def test_a_refit_the_idle_class_starves_runs_again_at_nice_10(monkeypatch):
    """Where every core stays busy an idle-class child gets 1-2% of a core here: the refit
    must still finish, in a new child at nice 10, and the statistics say why. (The refit takes
    about 0.15 s of CPU: in the idle class it cannot finish within the second judged.)"""
    monkeypatch.setattr(refit_worker, "STARVED_AFTER", 1.0)
    cv, refiner = refiner_of()
    feed(refiner, *rows(np.exp(np.linspace(0.0, 2.5, 1500)) - 1.0))
    assert refiner.refit_now(), refiner.stats()["last_refit_error"]     # on a quiet machine: not starved
    assert refiner.stats()["refit_starved"] is None
    idle_child = refiner._refit._worker.proc
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in os.sched_getaffinity(0)]
    try:
        time.sleep(0.2)
        assert refiner.refit_now(), refiner.stats()["last_refit_error"]
        child = refiner._refit._worker.proc
        assert idle_child.poll() is not None and child.poll() is None
        assert os.sched_getscheduler(child.pid) == os.SCHED_OTHER
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == os.getpriority(os.PRIO_PROCESS, 0) + refit_worker.NICE
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    stats = refiner.stop()
    assert stats["refits"] == 2 and stats["refit_errors"] == 0
    assert "the idle-class child got under 5% of a core over 1 s" in stats["refit_starved"]


def test_an_error_in_the_child_is_counted_and_the_model_stays():
    constant = SelectorModel(variants=VARIANTS, input_features=["x"], kind="constant", params={"label": 0})
    cv, refiner = refiner_of(constant, refit=functools.partial(default_refit, min_complete="many"))
    feed(refiner, *rows())
    assert not refiner.refit_now()
    stats = refiner.stop()
    assert stats["refit_errors"] == 1
    assert stats["last_refit_error"].startswith("RuntimeError: in the refit process: UFuncTypeError: ufunc 'less'")
    assert cv.model is refiner.base


def test_a_child_that_dies_mid_refit_is_counted_and_replaced(monkeypatch):
    cv, refiner = refiner_of()
    feed(refiner, *rows())
    worker = refiner._refit._worker
    assert refiner.refit_now()                                       # a child that has answered
    worker.proc.kill()
    worker.proc.wait()
    start = _Worker._start
    # a child that says it is ready, reads the first bytes of the message and exits with status 3
    monkeypatch.setattr(_Worker, "_start", lambda self: subprocess.Popen([sys.executable, "-c", (
        "import os, pickle, struct, sys; d = pickle.dumps(('ready', os.getpid())); "
        "sys.stdout.buffer.write(struct.pack('<Q', len(d)) + d); sys.stdout.buffer.flush(); "
        "sys.stdin.buffer.read(8); sys.exit(3)")], stdin=subprocess.PIPE, stdout=subprocess.PIPE))
    assert not refiner.refit_now()
    assert "the refit process ended with exit code 3" in refiner.stats()["last_refit_error"]
    monkeypatch.setattr(_Worker, "_start", start)
    assert refiner.refit_now() and worker.proc.poll() is None       # a new child, the refit made
    stats = refiner.stop()
    assert stats["refit_errors"] == 1 and stats["refit_in"] == "process" and stats["refit_in_fallback"] is None


def test_where_no_child_ever_answers_refits_run_in_a_thread(monkeypatch):
    """An interpreter embedded in another program: ``sys.executable`` is not Python."""
    cv, refiner = refiner_of()
    feed(refiner, *rows())
    monkeypatch.setattr(sys, "executable", "/bin/false")
    assert refiner.refit_now()                                       # made in this process instead
    stats = refiner.stats()
    assert stats["refit_in"] == "thread" and "exit code 1" in stats["refit_in_fallback"]
    assert refiner.refit_now() and refiner._refit._worker.proc is None   # no new child tried
    refiner.stop()
    for program in ("/bin/echo", "/nonexistent/python"):   # a program that is not Python; none at all
        monkeypatch.setattr(sys, "executable", program)
        cv, refiner = refiner_of()
        feed(refiner, *rows())
        assert refiner.refit_now() and refiner.stats()["refit_in"] == "thread"
        stats = refiner.stop()
    assert "cannot start" in stats["refit_in_fallback"]


def test_a_child_that_says_nothing_is_given_up_after_the_ready_timeout(monkeypatch):
    """A prompt shorter than a frame header, then silence: given up on, killed, and the
    refit made in this process."""
    monkeypatch.setattr(_Worker, "READY_TIMEOUT", 1.0)
    monkeypatch.setattr(_Worker, "_start", lambda self: subprocess.Popen([sys.executable, "-c", (
        "import sys, time; sys.stdout.write('> '); sys.stdout.flush(); time.sleep(60)")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True))
    cv, refiner = refiner_of()
    feed(refiner, *rows())
    assert refiner.refit_now() and "no answer within 1 s" in refiner.stats()["refit_in_fallback"]
    refiner.stop()


def test_a_refit_that_cannot_be_pickled_runs_in_a_thread():
    cv, refiner = refiner_of(refit=lambda base, X, times: default_refit(base, X, times))
    stats = refiner.stats()
    assert stats["refit_in"] == "thread" and "cannot be pickled" in stats["refit_in_fallback"]
    feed(refiner, *rows())
    assert refiner.refit_now()
    refiner.stop()
    with pytest.raises(ValueError, match="refit_in is 'process' or 'thread'"):
        refiner_of(refit_in="fork")
    assert refiner_of(background=False)[1].refit_in == "thread"     # a replay refits in its own thread


def test_a_refit_the_child_cannot_import_runs_in_a_thread(tmp_path):
    """A refit from a module only this process can import (here one loaded from a file that is
    on no path; in applications, one defined in ``__main__``) is refitted in a thread."""
    (tmp_path / "only_here.py").write_text("from nitro.refine import default_refit\n\n\n"
                                           "def my_refit(base, X, times):\n    return default_refit(base, X, times)\n")
    spec = importlib.util.spec_from_file_location("nitro_only_here", tmp_path / "only_here.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["nitro_only_here"] = module
    try:
        spec.loader.exec_module(module)
        cv, refiner = refiner_of(refit=module.my_refit)
        assert refiner.refit_in == "process"                  # it pickles here
        cv2, other = refiner_of()                              # another code variant, its refit importable
        feed(refiner, *rows())
        feed(other, *rows())
        assert refiner.refit_now() and other.refit_now()
        stats = refiner.stop()
        assert stats["refit_in"] == "thread" and "cannot load the refit" in stats["refit_in_fallback"]
        assert other.stop()["refit_in"] == "process"          # the shared child still refits the other
    finally:
        del sys.modules["nitro_only_here"]
    module.my_refit.__module__ = "__main__"
    assert "defined in __main__" in unpicklable(module.my_refit)


def test_a_refit_queued_for_the_shared_child_never_runs_once_its_client_closed(tmp_path, monkeypatch):
    """Client A's refit waits while B's runs in the child; A closes: A's refit never runs there
    (nobody wants it) and B's refits go on."""
    import threading
    (tmp_path / "logged_refit.py").write_text(
        "import time\n\n\ndef logged(base, X, times, log=None, name='', pause=0.0):\n"
        "    time.sleep(pause)\n    with open(log, 'a') as f:\n        f.write(name + '\\n')\n")
    monkeypatch.syspath_prepend(str(tmp_path))               # importable here and in the child
    import logged_refit
    log = tmp_path / "ran.txt"
    a = RefitProcess(functools.partial(logged_refit.logged, log=str(log), name="A"))
    b = RefitProcess(functools.partial(logged_refit.logged, log=str(log), name="B", pause=1.0))
    assert a._worker is b._worker
    base, (X, T) = kernel_model(), rows()
    done = {}
    slow = threading.Thread(target=lambda: done.setdefault("B", b(base, X, T)))
    slow.start()
    while b._worker.proc is None:                             # B's refit holds the child
        pass
    queued = threading.Thread(target=lambda: done.setdefault("A", a(base, X, T)))
    queued.start()
    a.close()
    slow.join(30)
    queued.join(30)
    assert done == {"A": None, "B": None} and log.read_text() == "B\n"
    assert b(base, X, T) is None and log.read_text() == "B\nB\n"
    b.close()
    assert b._worker.ended and b._worker.proc is None
