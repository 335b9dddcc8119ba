"""The refiner's control: dropped with its code variant, left running by a bad call to refine,
stopped by a model installed by hand, and plain dispatch in a forked child."""
import numpy as np
import pytest

from tests.refine.helpers import kernel_model, make_cv, XS


def test_a_code_variant_dropped_while_refining_is_freed_and_its_threads_end():
    import gc
    import weakref
    ran = []
    cv = make_cv(ran, name="dropped")
    refiner = cv.refine(budget=1.0, time_budget=None, quantile=1.0, refit_every=10_000)
    gone = weakref.ref(cv)
    del cv
    gc.collect()
    assert gone() is None and not refiner.active
    for t in refiner._threads:
        t.join(30)
        assert not t.is_alive()


def test_an_unknown_option_or_a_bad_device_id_or_refit_in_leaves_the_running_refiner_running():
    cv = make_cv([])
    running = cv.refine(budget=1.0, refit_every=10_000)
    for options, error, message in ((dict(budgett=0.1), TypeError, r"unknown refining options \['budgett'\]; known: "
                                     "budget, time_budget"),
                                    (dict(refit_in="gpu"), ValueError, "refit_in is 'process' or 'thread', got 'gpu'"),
                                    (dict(device_id=5), TypeError, "device_id is the non-empty name rows are "
                                     "recorded under, got 5")):
        with pytest.raises(error, match=message):
            cv.refine(**options)
        assert cv.refiner is running and running.active
    running.stop()


def test_a_model_installed_by_hand_stops_refining_and_serves():
    """Refits of the model refining started from would replace it (and ``None``: every
    candidate call raised in the refiner)."""
    for installed, served in ((None, "a"), (kernel_model(weights=np.tile(np.eye(3)[2], (3, 1))), "c")):
        ran = []
        cv = make_cv(ran, name="by-hand")
        refiner = cv.refine(budget=1.0, quantile=1.0, warmup=10**6)
        with pytest.warns(RuntimeWarning, match="refining mode stopped, since a model was installed by hand"):
            cv.model = installed
        assert cv.refiner is None and not refiner.active
        assert [cv(float(x)) for x in XS[:40]] == [served] * 40
        assert cv.model is installed


def test_a_forked_child_dispatches_plainly():
    import os
    ran = []
    cv = make_cv(ran, name="forked")
    refiner = cv.refine(budget=1.0, quantile=1.0, warmup=10**6, refit_every=10**6)
    pid = os.fork()
    if pid == 0:                   # the child: no writer or refit thread came along
        code = 0 if cv.refiner is None and [cv(float(x)) for x in XS[:20]] == [cv.select(float(x)) for x in XS[:20]] \
            and ran == [(cv.select(float(x)), float(x)) for x in XS[:20]] else 1
        os._exit(code)
    assert os.waitpid(pid, 0)[1] == 0
    assert cv.refiner is refiner and refiner.active          # the parent refines on
    cv.refine(False)
