"""Refining mode: bounded exploration, constraints, rows reaching a real store without
blocking calls, refits swapped in atomically, and a failing refit or store never reaching the
calls. Variants are plain Python functions that say who ran (no sleeping, no timed asserts)."""
import os
import socket
import threading
from pathlib import Path
import warnings

import numpy as np
import pytest

from nitro import SelectorModel, code_variant
from nitro.dispatch import Dispatcher
from nitro.measurement import TrainingRow
from nitro.refine import Refiner, default_refit, feature_id

VARIANTS = ["a", "b", "c"]
ROOT = Path(__file__).resolve().parents[1]


def kernel_model(variants=VARIANTS, weights=None):
    """A kernel model on one feature ``x`` with centres at 0, 1, 2 (in signed-log space): the
    scores cross, so some inputs are near ties (small margins) and others are clear."""
    w = np.eye(3)[:, :len(variants)] if weights is None else np.asarray(weights, dtype=float)
    return SelectorModel(variants=list(variants), input_features=["x"], kind="kernel", params={
        "signed_log": True, "mean": [0.0], "scale": [1.0], "gamma": 1.0,
        "centers": [[0.0], [1.0], [2.0]], "weights": w.tolist(), "offset": [0.0] * len(variants)})


def same(out, served) -> bool:
    """The check of code variants whose variants return their own names: one result, said
    differently (refining fails a variant whose result differs from the served one)."""
    return True


def tagged(ran: list):
    """Variants that return their own name and log every run with its input (``check=same``)."""
    def make(name):
        def variant(x):
            ran.append((name, x))
            return name
        variant.__name__ = name
        return variant
    return [make(v) for v in VARIANTS]


def make_cv(ran, name="refined"):
    cv = code_variant(name, tagged(ran), {"x": lambda x: float(x)}, default="a", check=same)
    cv.model = kernel_model()
    return cv


XS = np.exp(np.linspace(0.0, 2.5, 97)) - 1.0     # signed-log features spread over the centres


def test_exploration_never_exceeds_the_budget_and_returns_the_choice():
    ran = []
    cv = make_cv(ran)
    refiner = cv.refine(budget=0.05, quantile=0.5, refit_every=10_000)
    explored_before = 0
    for i in range(3000):
        x = float(XS[i % len(XS)])
        choice = cv.select(x)
        ran.clear()
        assert cv(x) == choice                    # exploring never changes what a call returns
        s = refiner.stats()
        assert s["explored"] <= 0.05 * s["calls"] + 1
        if s["explored"] > explored_before:       # an explored call ran its choice and one other
            assert len(ran) == 2 and choice in [v for v, _ in ran]
            explored_before = s["explored"]
        else:
            assert ran == [(choice, x)]
    assert s["explored"] > 0 and s["candidate_calls"] <= s["calls"] // refiner.stride
    assert cv.refine(False) is None and cv.refiner is None and not refiner.active


def test_refining_explores_the_least_sure_inputs():
    """After warm-up, explored inputs have margins at or below the running threshold (audits of
    sure calls left out: the next tests)."""
    model = kernel_model()
    scores = model.scores(XS[:, None])
    top = np.sort(scores, axis=1)
    margin = dict(zip(XS.tolist(), (top[:, -1] - top[:, -2]).tolist()))
    ran = []
    cv = make_cv(ran)
    refiner = cv.refine(budget=0.2, quantile=0.2, warmup=20, refit_every=10_000, audit=0.0)
    explored = []
    for i in range(2000):
        x = float(XS[(7 * i) % len(XS)])
        before, threshold = refiner.stats()["explored"], refiner.threshold
        ran.clear()
        cv(x)
        if refiner.stats()["explored"] > before and refiner.stats()["candidate_calls"] > 21:
            explored.append((margin[x], refiner.threshold, threshold))
    assert explored
    assert all(m <= max(t_after, t_before) + 1e-12 for m, t_after, t_before in explored)
    assert np.median([m for m, _, _ in explored]) < np.median(list(margin.values()))
    cv.refine(None)


def test_a_share_of_the_sure_candidate_calls_is_audited():
    """``audit``: that share of the candidate calls above the margin threshold explores all the
    same (counted as audits); with ``audit=0`` none does."""
    stats = {}
    for audit in (0.0, 0.5):
        cv = make_cv([])
        refiner = cv.refine(budget=1.0, time_budget=None, quantile=0.2, warmup=20, refit_every=10**6, audit=audit)
        for i in range(3000):                     # distinct inputs: none is ever fully timed
            cv(float(XS[(7 * i) % len(XS)]) + 1e-7 * i)
        stats[audit] = refiner.stats()
        cv.refine(None)
    assert stats[0.0]["audits"] == 0
    s = stats[0.5]
    sure = s["candidate_calls"] - (s["explored"] - s["audits"])
    assert sure > 2000 and 0.45 < s["audits"] / sure < 0.55


def test_audits_see_a_model_that_is_sure_and_wrong():
    """A start model far from its target can be sure where it loses and unsure only where it
    ties (nitro's histogram on a 16-core host from 2-core sources): the uncertain calls alone
    measure no loss and its rows hold, audits measure the loss and the rows no longer hold."""
    model = kernel_model()
    top = np.sort(model.scores(XS[:, None]), axis=1)
    wide = np.median(top[:, -1] - top[:, -2])
    margins = dict(zip(XS.tolist(), (top[:, -1] - top[:, -2]).tolist()))
    found = {}
    for audit in (0.0, 0.2):
        d = Dispatcher(VARIANTS, ["x"], "a")
        d.set_model(model)
        r = Refiner(d, "sure", budget=1.0, time_budget=None, quantile=0.2, warmup=20, refit_every=10**6,
                    background=False, refit=lambda base, X, T: None, audit=audit)
        for i in range(2000):
            x = float(XS[(7 * i) % len(XS)])
            choice = d.choose([x])
            r.tick()      # where the model is sure, its choice takes 3 times the others' time; else a tie
            r.maybe_explore([x + 1e-7 * i], choice,
                            lambda v, c=choice, m=margins[x]: (v, 3.0 if v == c and m > wide else 1.0))
        with r._lock:
            found[audit] = (r.measured_loss, r.base_holds(*r.rows()))
    assert found[0.0] == (0.0, True)
    assert found[0.2][0] > 0.01 and not found[0.2][1]


OUTSIDE = {"level": "low", "outside_sources": True, "low_because": ["outside the sources' device features"]}


@pytest.mark.parametrize("provenance, options, warns", [
    ({"confidence": OUTSIDE}, {}, True),
    ({"confidence": OUTSIDE}, {"time_budget": 0.05}, False),          # a larger budget: the advice taken
    ({"confidence": OUTSIDE, "few_shot": {"inputs": ["i0"]}}, {}, False),   # timed on the target already
    ({"confidence": {**OUTSIDE, "outside_sources": False}}, {}, False),
    ({"confidence": {**OUTSIDE, "level": "high"}}, {}, False),
    ({}, {}, False)])
def test_refining_a_low_model_outside_its_sources_says_what_to_do_first(provenance, options, warns):
    """Such a model can be sure where it is wrong, and the default time budget pays for few
    explored calls in a short stream: refine() says so and points to few-shot and to the budgets
    that shortened such streams in replays."""
    cv = make_cv([])
    cv.model.provenance = provenance
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        refiner = cv.refine(refit_every=10_000, **options)
    refiner.stop()
    said = [str(w.message) for w in caught if "Time a few inputs on this device first" in str(w.message)]
    assert bool(said) == warns
    assert not said or "outside the sources' device features" in said[0] and \
        "refine with larger budgets (refine(budget=0.05, time_budget=0.03))" in said[0]


def test_constraints_are_obeyed_while_exploring():
    ran = []
    cv = code_variant("constrained", tagged(ran), {"x": lambda x: float(x)}, default="a", check=same)
    cv.add_constraint("c", lambda f: f["x"] < 3.0)
    cv.model = kernel_model(weights=[[0, 0, 1.0], [0, 0, 1.0], [0, 0.9, 1.0]])   # c scores highest
    refiner = cv.refine(budget=1.0, time_budget=None, quantile=1.0, candidates=None, refit_every=10_000)
    for i in range(600):
        cv(float(XS[i % len(XS)]))
    assert refiner.stats()["explored"] > 50
    assert not [x for v, x in ran if v == "c" and x >= 3.0]
    assert [x for v, x in ran if v == "c" and x < 3.0]          # allowed where valid
    cv.refine(False)


def test_rows_reach_a_real_store_in_the_background(store):
    ran = []
    cv = make_cv(ran, name="refined-rows")
    refiner = cv.refine(store=store, device_id="here", budget=1.0, time_budget=None, quantile=1.0, refit_every=10_000)
    for x in XS[:40]:
        cv(float(x))
    assert refiner.wait(30)
    stats = refiner.stop()
    rows = {r.input_id: r for r in store.rows("refined-rows", "here")}
    assert stats["rows_written"] == stats["rows_recorded"] > 0 and stats["store_errors"] == 0
    assert len(rows) == stats["target_inputs"]
    for r in rows.values():
        assert r.input_id == feature_id([r.features["x"]])
        timed = [v for v, t in r.times.items() if t is not None]
        assert len(timed) >= 2 and all(r.times[v] >= 0 for v in timed)
        assert set(r.times) <= set(VARIANTS)


def test_rows_are_written_over_the_stored_ones_keeping_what_others_timed(store):
    # another process (or this one before a restart) stored a time or a failure for each input
    store.declare("refined-merge", VARIANTS, ["x"])
    store.put_rows("refined-merge", "here", [TrainingRow(feature_id([float(x)]), {"x": float(x)},
                                                         {"a": None, "b": None, "c": 123.0}, {"a": "wrong result"})
                                             for x in XS[:40]])
    ran = []
    cv = make_cv(ran, name="refined-merge")
    refiner = cv.refine(store=store, device_id="here", budget=1.0, time_budget=None, quantile=1.0,
                        refit_every=10_000, candidates=2)
    for x in XS[:40]:
        cv(float(x))
    assert refiner.wait(30)
    assert refiner.stop()["rows_written"] > 0
    for r in store.rows("refined-merge", "here"):
        new = [v for v, t in r.times.items() if t is not None and t != 123.0]
        assert new, r                                   # this process's times are written
        assert r.times["c"] == 123.0 or "c" in new      # the stored ones it did not time are kept
        assert r.failed.get("a") == "wrong result" or "a" in new


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_store_never_breaks_a_call():
    ran = []
    cv = make_cv(ran, name="refined-unreachable")
    refiner = cv.refine(store=f"redis://127.0.0.1:{_closed_port()}/0", device_id="here", budget=1.0, time_budget=None,
                        quantile=1.0, refit_every=10_000)
    results = [cv(float(x)) for x in XS[:30]]
    assert results == [cv.select(float(x)) for x in XS[:30]]
    assert refiner.wait(30)
    s = refiner.stop()
    assert s["store_errors"] == s["rows_recorded"] > 0 and s["rows_written"] == 0
    assert "does not answer" in s["last_store_error"]


def test_a_paused_store_drops_rows_instead_of_blocking_calls(embedded_redis):
    """CLIENT PAUSE stalls every command of the server: the writer thread waits, the bounded
    queue fills, and calls go on (rows are counted as dropped)."""
    from nitro.store import Store
    embedded_redis.flushall()
    store = Store(client=embedded_redis)
    ran = []
    cv = make_cv(ran, name="refined-paused")
    refiner = cv.refine(store=store, device_id="here", budget=1.0, time_budget=None, quantile=1.0, queue_size=1, refit_every=10_000)
    cv(float(XS[0]))
    assert refiner.wait(30)
    embedded_redis.execute_command("CLIENT", "PAUSE", 3000)
    for x in XS[1:60]:
        cv(float(x))
    s = refiner.stats()
    assert s["rows_dropped"] > 0 and s["explored"] >= 50
    assert refiner.wait(30)
    assert refiner.stop()["rows_written"] >= 2


def test_refits_swap_in_while_another_thread_dispatches():
    """Calls from another thread during background refits always get a variant that one of
    the models seen (base or a refit) would choose; the refits do happen."""
    ran = []
    cv = make_cv(ran, name="refined-swap")
    base = cv.model
    refiner = cv.refine(budget=1.0, time_budget=None, quantile=1.0, candidates=None, refit_every=3)
    errors, choices = [], []
    stop = threading.Event()

    def dispatch():
        while not stop.is_set():
            for x in XS:
                try:
                    choices.append(cv.select(float(x)))
                except Exception as exc:  # noqa: BLE001  (the test reports any)
                    errors.append(exc)

    worker = threading.Thread(target=dispatch)
    worker.start()
    for i in range(300):
        cv(float(XS[(5 * i) % len(XS)]))
    stop.set()
    worker.join()
    assert refiner.wait(30)
    s = refiner.stop()
    assert not errors and set(choices) <= set(VARIANTS) and len(choices) > 0
    assert s["refits"] >= 1 and s["refit_errors"] == 0
    assert cv.model is not base and cv.model.provenance["refined"]["target_rows"] > 0


def test_set_model_never_tears_between_models_with_different_variants():
    d = Dispatcher(["a", "b", "c"], ["x"], "a")
    m1, m2 = kernel_model(), kernel_model(variants=["c", "b"], weights=np.eye(3)[:, :2])
    d.set_model(m1)
    allowed = {float(x): {m1.predict([[x]])[0], m2.predict([[x]])[0]} for x in XS}
    bad = []
    stop = threading.Event()

    def swap():
        while not stop.is_set():
            d.set_model(m2)
            d.set_model(m1)

    worker = threading.Thread(target=swap)
    worker.start()
    for _ in range(100):
        for x, ok in allowed.items():
            if d.choose([x]) not in ok:
                bad.append(x)
    stop.set()
    worker.join()
    assert not bad


def test_a_failing_refit_is_counted_and_the_model_stays():
    ran = []
    cv = make_cv(ran, name="refined-crash")
    base = cv.model

    def broken(base_model, X, times):
        raise RuntimeError("refit exploded")

    refiner = cv.refine(budget=1.0, time_budget=None, quantile=1.0, refit_every=2, refit=broken)
    assert [cv(float(x)) for x in XS[:20]] == [cv.select(float(x)) for x in XS[:20]]
    assert refiner.wait(30)
    s = refiner.stop()
    assert s["refit_errors"] >= 1 and s["refits"] == 0 and "refit exploded" in s["last_refit_error"]
    assert cv.model is base


def test_synchronous_refiner_refits_in_the_calling_thread():
    d = Dispatcher(VARIANTS, ["x"], "a")
    d.set_model(kernel_model())
    refiner = Refiner(d, "sync", budget=1.0, time_budget=None, quantile=1.0, refit_every=4, background=False)
    times = {"a": 3.0, "b": 1.0, "c": 2.0}           # b is fastest everywhere on this target
    for x in XS:
        values = [float(x)]
        if refiner.tick():
            refiner.maybe_explore(values, d.choose(values), lambda v: (v, times[v]))
    s = refiner.stop()
    assert s["refits"] >= 1 and not s["active"] and s["extra_seconds"] > 0
    assert np.mean([d.choose([float(x)]) == "b" for x in XS]) > 0.9


def test_refits_space_out_as_the_rows_grow():
    """A refit every ``refit_every`` new rows at first, then every eighth more rows: over n rows
    the refits read O(n) rows in all, not O(n² / refit_every)."""
    sizes = []

    def refit(base, X, T):
        sizes.append(len(X))
        return None

    d = Dispatcher(VARIANTS, ["x"], "a")
    d.set_model(kernel_model())
    refiner = Refiner(d, "spaced", budget=1.0, time_budget=None, quantile=1.0, refit_every=4, background=False,
                      refit=refit)
    times = {"a": 3.0, "b": 1.0, "c": 2.0}          # the start model is wrong: refits are wanted
    for x in np.linspace(0.0, 10.0, 2000):
        values = [float(x)]
        if refiner.tick():
            refiner.maybe_explore(values, d.choose(values), lambda v: (v, times[v]))
    refiner.stop()
    assert sizes[:3] == [4, 8, 12] and sizes[-1] > 500
    assert all(b - a >= max(4, b / 8) for a, b in zip(sizes, sizes[1:]))
    assert sum(sizes) <= 10 * sizes[-1] and len(sizes) < 60


def test_default_refit_of_other_kinds_waits_for_complete_rows():
    svc_like = SelectorModel(variants=VARIANTS, input_features=["x"], kind="constant", params={"label": 0})
    X = XS[:, None]
    times = np.column_stack([1.0 + (XS > 5), 1.5 + 0 * XS, 1.0 + (XS <= 5)])
    partial = times.copy()
    partial[:, 2] = np.nan
    assert default_refit(svc_like, X, partial) is None            # no complete row
    assert default_refit(svc_like, X[:5], times[:5]) is None       # too few
    model = default_refit(svc_like, X, times)
    assert model.kind == "svc" and model.provenance["target_rows"] == len(XS)
    assert np.mean(np.array(model.predict(X)) == np.where(XS > 5, "c", "a")) > 0.9


def test_refine_arguments_are_checked():
    cv = code_variant("nomodel", tagged([]), {"x": lambda x: float(x)})
    with pytest.raises(ValueError, match="refines a model"):
        cv.refine()
    cv.model = kernel_model()
    with pytest.raises(TypeError, match="store="):
        cv.refine(object())
    with pytest.raises(ValueError, match="budget"):
        cv.refine(budget=0.0)
    with pytest.raises(ValueError, match="at least 2"):
        cv.refine(candidates=1)
    assert cv.refiner is None


def test_repeats_alternate_the_order_and_keep_each_variants_fastest_time():
    d = Dispatcher(VARIANTS, ["x"], "a")
    d.set_model(kernel_model())
    refiner = Refiner(d, "repeats", budget=1.0, time_budget=None, quantile=1.0, repeats=3, refit_every=10_000, background=False)
    seconds = {"a": [3.0, 1.0, 2.0], "b": [5.0, 4.0, 6.0], "c": [9.0, 9.0, 9.0]}
    order = []

    def run(v):
        order.append(v)
        return v, seconds[v][sum(o == v for o in order) - 1]

    assert refiner.tick()
    ex = refiner.maybe_explore([0.5], "a", run)
    first = ex.candidates
    assert order == first + first[::-1] + first and len(first) == 2 and "a" in first
    assert ex.times["a"] == 1.0 and ex.spent == sum(sum(seconds[v]) for v in first)
    other = next(v for v in first if v != "a")
    assert ex.times[other] == min(seconds[other]) and refiner.extra_seconds == ex.spent - 1.0


def test_a_transferred_model_is_refitted_from_its_sources_rows_and_the_targets(store):
    """A model from tune_from_source, refined with a store: the refits read the sources' rows
    and the target's recorded rows from the store and fit boosted trees on them and this
    session's rows (a gbt model that still chooses among the same variants); without the
    sources' rows, the kernel correction."""
    from nitro.measurement import TrainingRow
    from nitro.transfer.tune import SourcesRefit, tune_from_source
    name = "refined-from-sources"
    store.declare(name, VARIANTS, ["x"])
    xs = np.exp(np.linspace(0.0, 3.0, 60)) - 1.0
    for k, speed in enumerate([0.5, 1.0, 2.0, 4.0, 3.0]):
        dev = f"dev{k}"
        store.put_device(dev, {"speed": {"value": speed, "unit": "", "source": "datasheet"}})
        if dev != "dev4":        # dev4 is the target: its device record and two rows recorded before
            store.put_rows(name, dev, [TrainingRow(f"in{i}", {"x": float(x)},
                                                   {"a": 1e-3 * (1 + x) * speed, "b": 2e-3 * speed, "c": 3e-3})
                                       for i, x in enumerate(xs)])
    store.put_rows(name, "dev4", [TrainingRow("early", {"x": 100.0}, {"a": 1e-3, "b": None, "c": 2e-3},
                                              {"b": "skipped by early stopping"}),
                                  TrainingRow("broke", {"x": 200.0}, {"a": None, "b": 1e-3, "c": 2e-3},
                                              {"a": "RuntimeError: out of memory"})])
    ran = []
    cv = code_variant(name, tagged(ran), {"x": lambda x: float(x)}, default="a", check=same)
    cv.model = tune_from_source(store, name, VARIANTS, ["x"], target="dev4", progress=False, save=False)
    refiner = cv.refine(store=store, device_id="dev4", budget=1.0, time_budget=None, quantile=1.0, refit_every=8)
    assert refiner.refit_in == "process" and isinstance(refiner.refit, SourcesRefit)   # fitted in a child
    refit = refiner.refit                                 # read here: the child only fits
    for x in XS[:40]:
        cv(float(x))
    assert refiner.wait(60)
    stats = refiner.stop()
    assert stats["refits"] >= 1 and stats["refit_errors"] == 0, stats["last_refit_error"]
    assert refit.error is None and stats["refit_in"] == "process"
    recorded = refit.recorded                     # read at the first refit, with this session's first rows
    assert recorded[(100.0,)][0] == 1e-3 and np.isnan(recorded[(100.0,)][1])          # skipped: not run
    assert np.isinf(recorded[(200.0,)][0]) and recorded[(200.0,)][1] == 1e-3           # failed
    X, T = refiner.rows()
    assert refit(refiner.base, X, T).provenance["target_rows"] == len(X) + 2   # merged by features
    assert cv.model.kind == "gbt" and cv.model.variants == VARIANTS
    assert cv.model.provenance["method"] == "refined from sources' rows and target rows"
    assert SourcesRefit.for_model(kernel_model(), store, name, VARIANTS, ["x"]) is None   # not transferred
    broken = SourcesRefit(store, name, VARIANTS, ["x"], sources=["nowhere"], target="dev4")
    corrected = broken(refiner.base, *refiner.rows())
    assert corrected.kind == "kernel" and "nowhere" in broken.error


def _timed_stream(refiner, dispatcher, n, seed=0, others=1.5):
    """Serve ``n`` calls of random ``x`` whose variants take (1 + x)² × 0.1 ms (the choice) and
    ``others`` times that (the others), as recorded times; returns the true served time and the
    costs of the candidate and of the explored inputs."""
    rng = np.random.default_rng(seed)
    served, candidates, explored = 0.0, [], []
    for _ in range(n):
        x = float(rng.uniform(0.0, 11.0))
        choice = dispatcher.choose([x])
        cost = 1e-4 * (1.0 + x) ** 2
        served += cost
        if refiner.tick():
            candidates.append(cost)
            ex = refiner.maybe_explore([x], choice, lambda v: (v, cost if v == choice else others * cost))
            if ex is None:
                refiner.observe([x], cost)
            else:
                explored.append(cost)
    return served, np.array(candidates), np.array(explored)


def test_time_budget_bounds_exploring_time_and_prefers_cheap_inputs():
    d = Dispatcher(VARIANTS, ["x"], "a")
    d.set_model(kernel_model())
    bounded = Refiner(d, "timed", budget=0.2, time_budget=0.01, quantile=1.0, refit_every=10**6, background=False)
    served, candidates, explored = _timed_stream(bounded, d, 5000)
    s = bounded.stats()
    assert s["explored"] > 5 and s["time_skips"] > 0 and s["time_budget"] == 0.01
    assert abs(s["served_seconds"] / served - 1.0) < 0.15       # stride x the timed candidate calls
    assert s["extra_seconds"] <= 0.01 * s["served_seconds"] + 1.5 * 1e-4 * 12.0 ** 2   # + one call's overshoot
    assert explored.mean() < 0.5 * candidates.mean()           # with little time left, cheap inputs explore
    free = Refiner(d, "free", budget=0.2, time_budget=None, quantile=1.0, refit_every=10**6, background=False)
    _timed_stream(free, d, 5000)
    f = free.stats()
    assert f["explored"] > 2 * s["explored"] and f["extra_seconds"] > 0.05 * f["served_seconds"] and f["time_skips"] == 0
    with pytest.raises(ValueError, match="time budget"):
        Refiner(d, "bad", time_budget=0.0, background=False)


def test_a_model_that_explored_calls_show_losing_may_spend_what_it_loses():
    """Where the alternatives run in half the choice's time (a start model from sources that all
    miss this device), every explored call measures the loss, and exploring may spend up to it
    (``quantile`` × the share of the explored choices' time lost beyond a timing tie), not 1%:
    it explores several times as often as where the choice is the fastest, and still within
    what it is allowed, the allowance itself bounded by the loss measured."""
    d = Dispatcher(VARIANTS, ["x"], "a")
    d.set_model(kernel_model())
    runs = {}
    for name, others in (("right", 1.5), ("wrong", 0.5)):
        r = Refiner(d, name, budget=0.2, time_budget=0.01, quantile=1.0, refit_every=10**6, background=False)
        _timed_stream(r, d, 5000, others=others)
        runs[name] = r.stats()
    right, wrong = runs["right"], runs["wrong"]
    assert right["measured_loss"] == 0.0 and right["allowed_share"] == 0.01
    assert 0.45 <= wrong["measured_loss"] <= 0.5 and wrong["allowed_share"] == wrong["measured_loss"]
    assert wrong["explored"] > 3 * right["explored"] and wrong["time_skips"] < right["time_skips"]
    assert wrong["extra_seconds"] <= wrong["allowed_share"] * wrong["served_seconds"] + 1.5 * 1e-4 * 12.0 ** 2


@pytest.mark.parametrize("options, error, message", [
    (dict(store=42), TypeError, "store is a nitro Store or a Redis URL, got 42"),
    (dict(store="not a url"), ValueError, "is not a Redis URL"),
    (dict(refit="trees"), TypeError, "refit is a callable"),
    (dict(repeats=2.5), TypeError, "got repeats=2.5"), (dict(refit_every=2.5), TypeError, "got refit_every=2.5"),
    (dict(budget="0.1"), TypeError, "got budget='0.1'"), (dict(budget=None), TypeError, "got budget=None"),
    (dict(candidates="all"), TypeError, "got candidates='all'"), (dict(candidates=True), TypeError, "candidates=True"),
    (dict(time_budget=0), ValueError, "positive share of the served time"),
    (dict(candidates=0), ValueError, "at least 2 variants"),
    (dict(audit=1.5), ValueError, "audit is a share of the sure candidate calls"),
    (dict(audit="some"), TypeError, "got audit='some'")])
def test_refining_options_of_the_wrong_type_or_value_are_refused_when_refining_starts(options, error, message):
    """Refused before anything changes: a refiner already running keeps running."""
    cv = make_cv([])
    running = cv.refine(budget=1.0, refit_every=10_000)
    with pytest.raises(error, match=message):
        cv.refine(**options)
    assert cv.refiner is running and running.active
    running.stop()


def test_time_budget_prices_each_variant_by_the_models_predicted_slow_down():
    """Near x = 0 the kernel model predicts b at 1/e and c at 1/e⁴ of a's fraction of the
    optimum (2.7 and 55 times slower), and they are that slow. Exploring every candidate under a
    1% time budget runs b where it fits and never c, which no budget of these 5,000 calls pays
    for; nothing explores before a call was timed (the first candidate has no estimate)."""
    d = Dispatcher(VARIANTS, ["x"], "a")
    d.set_model(kernel_model())
    refiner = Refiner(d, "priced", budget=0.2, time_budget=0.01, quantile=1.0, candidates=None,
                      refit_every=10**6, background=False)
    slow = {"a": 1.0, "b": np.e, "c": np.e ** 4}
    rng = np.random.default_rng(1)
    ran, first_explored, served = [], None, 0.0
    for call in range(5000):
        x = float(rng.uniform(0.0, 0.2))
        choice = d.choose([x])
        assert choice == "a"
        cost = 1e-4 * (1.0 + x)
        served += cost
        if refiner.tick():
            ex = refiner.maybe_explore([x], choice, lambda v: (v, cost * slow[v]))
            if ex is None:
                refiner.observe([x], cost)
            else:
                ran += ex.candidates
                first_explored = call if first_explored is None else first_explored
    s = refiner.stats()
    assert ran.count("b") >= 3 and "c" not in ran
    assert first_explored > refiner.stride                   # after at least one timed candidate call
    assert s["extra_seconds"] <= 0.01 * served


def test_a_start_model_the_rows_confirm_is_never_replaced():
    """Rows where the start model's choice was the fastest timed variant (within the timing
    tie): no refit runs and the start model stays; rows that show it wrong let the refit in."""
    calls = []

    def refit(base, X, T):
        calls.append(len(X))
        return kernel_model(weights=np.tile([0.0, 1.0, 0.0], (3, 1)))   # b everywhere

    for fastest, refitted in (("own choice", False), ("b", True)):
        d = Dispatcher(VARIANTS, ["x"], "a")
        d.set_model(kernel_model())
        start = d.model
        refiner = Refiner(d, "holds", budget=1.0, time_budget=None, quantile=1.0, refit_every=4, background=False,
                          refit=refit)
        calls.clear()
        for x in XS:
            values = [float(x)]
            if refiner.tick():
                choice = d.choose(values)
                best = choice if fastest == "own choice" else "b"
                refiner.maybe_explore(values, choice, lambda v: (v, 1.0 if v == best else 1.01 if fastest != "b" else 2.0))
        s = refiner.stop()
        assert (s["refits"] > 0) == refitted and bool(calls) == refitted
        assert (s["base_held"] > 0) != refitted and (d.model is start) != refitted


@pytest.mark.parametrize("refit_variant, refit_time, kept", [("c", 3.0, False), ("b", 0.5, True)])
def test_a_refit_serves_only_while_its_choices_beat_the_start_models_where_they_differ(refit_variant, refit_time, kept):
    """The start model's choice loses by 10% on every other input (so the rows let a refit in),
    and the refit chooses one variant everywhere. Explored calls time the refit's choice beside
    the start model's: a refit whose variant takes 3× as long loses those duels and the start
    model serves again (each later refit tried beside it, not served); one at half the time
    stays."""
    def refit(base, X, T):
        return kernel_model(weights=np.tile(np.eye(3)[VARIANTS.index(refit_variant)], (3, 1)))

    d = Dispatcher(VARIANTS, ["x"], "a")
    d.set_model(kernel_model())
    start = d.model
    refiner = Refiner(d, "duel", budget=1.0, time_budget=None, quantile=1.0, refit_every=4, background=False,
                      refit=refit, candidates=None)   # every variant timed: the start model never holds

    def run_time(v, own, odd):
        if v == refit_variant and v != own:
            return refit_time
        return 1.1 if v == own and odd else 1.0

    for i, x in enumerate(np.tile(XS, 3)):
        values = [float(x)]
        if refiner.tick():
            own = d.choose(values, start)
            refiner.maybe_explore(values, d.choose(values), lambda v: (v, run_time(v, own, i % 2)))
    s = refiner.stop()
    assert s["refits"] >= 1 and s["duel_inputs"] > 0 and s["base_held"] == 0
    assert (s["duel_log_gain"] > 0) == kept and (s["refits_lost"] > 0) != kept
    assert (d.model is start) != kept
    assert np.mean([d.choose([float(x)]) == refit_variant for x in XS]) == (1.0 if kept else np.mean(
        [d.choose([float(x)], start) == refit_variant for x in XS]))


def _one_variant(v):
    return kernel_model(weights=np.tile(np.eye(3)[VARIANTS.index(v)], (3, 1)))


def _duelling(refit_models, **options):
    """A synchronous refiner whose start model's choice is twice as slow as the others on a few
    explored inputs (so the rows let a refit in); ``refit_models``: what each refit returns
    (an exception: raises it)."""
    made = iter(refit_models)

    def refit(base, X, T):
        out = next(made)
        if isinstance(out, Exception):
            raise out
        return out
    d = Dispatcher(VARIANTS, ["x"], "a")
    d.set_model(kernel_model())
    r = Refiner(d, "duels", budget=1.0, time_budget=None, quantile=1.0, warmup=10**6, refit_every=10**6,
                background=False, refit=refit, **options)
    for x in XS[::8]:
        values = [float(x)]
        own = d.choose(values, r.base)
        r.tick()
        r.maybe_explore(values, d.choose(values), lambda v, own=own: (v, 2.0 if v == own else 1.0))
    return d, r


def test_a_duel_is_counted_for_the_models_whose_choices_ran():
    """A call chosen by an older refit is no evidence: here refit 1 chose ``b`` before refit 2
    (``c``) replaced it, the start model chooses ``a``; the explored call runs ``b`` and ``c``,
    neither the start model's, so no duel is counted, and a call chosen by refit 2 counts."""
    d, r = _duelling([_one_variant("b"), _one_variant("c"), None])
    x = [0.003]                                        # not explored before
    assert r.refit_now() and d.choose(x) == "b"
    stale = d.choose(x)
    assert r.refit_now() and d.choose(x) == "c" and d.choose(x, r.base) == "a"
    r.tick()
    ex = r.maybe_explore(x, stale, lambda v: (v, {"a": 1.0, "b": 4.0, "c": 1.0}[v]))
    assert ex is not None and r.stats()["duel_inputs"] == 0
    r.tick()
    ex = r.maybe_explore([0.01], d.choose([0.01]), lambda v: (v, {"a": 1.0, "b": 4.0, "c": 2.0}[v]))
    assert set(ex.times) == {"a", "c"} and r.stats()["duel_inputs"] == 1
    assert np.isclose(r.duel_log_gain, np.log(1.0 / 2.0)) and r.refits_lose()
    assert d.model is r.base                                      # lost: the start serves again


def test_a_call_that_names_the_model_it_chose_with_duels_as_one_that_does_not():
    """A dispatched call names the model that chose (``chosen_by``), so that refining mode
    need not predict its choice again: the explored variants and the duel are the same as where
    the refiner asks both models itself, and a stale choice named with the model that made it
    is still no evidence once another refit serves."""
    outcomes = []
    for named in (False, True):
        d, r = _duelling([_one_variant("c"), None])
        x = [0.01]
        assert r.refit_now() and d.choose(x) == "c"
        r.tick()
        m = d.model
        ex = r.maybe_explore(x, d.choose(x, m), lambda v: (v, {"a": 1.0, "b": 4.0, "c": 2.0}[v]), m if named else None)
        outcomes.append((sorted(ex.times), r.stats()["duel_inputs"], r.duel_log_gain))
    assert outcomes[0] == outcomes[1] == (["a", "c"], 1, pytest.approx(np.log(1.0 / 2.0)))
    d, r = _duelling([_one_variant("b"), _one_variant("c"), None])
    assert r.refit_now()
    old = d.model
    stale = d.choose([0.003], old)
    assert r.refit_now() and d.choose([0.003]) == "c"
    r.tick()
    ex = r.maybe_explore([0.003], stale, lambda v: (v, {"a": 1.0, "b": 4.0, "c": 1.0}[v]), old)
    assert ex is not None and r.stats()["duel_inputs"] == 0

def test_a_call_the_refit_and_the_start_model_disagree_on_duels_though_its_margin_is_wide():
    """A model can be sure and wrong (a start model far from a target whose sources agree): where
    the latest refit and the start model choose differently, a candidate call duels whatever its
    margin says; where they agree, a wide margin still keeps the call from exploring."""
    d, r = _duelling([_one_variant("c")])
    assert r.refit_now() and d.choose([0.001]) == "c" and d.choose([0.001], r.base) == "a"
    r.quantile, r.warmup = 0.25, 1                # margins rank now: the quarter below explores
    for x in XS[3::8]:                            # the refit's margins, all wide
        r.tick()
        r.plan([float(x) + 1e-4], d.choose([float(x) + 1e-4]))
    r.tick()
    ex = r.maybe_explore([0.001], "c", lambda v: (v, {"a": 1.0, "b": 3.0, "c": 2.0}[v]))
    s = r.stats()
    assert ex is not None and set(ex.times) == {"a", "c"}
    assert s["disputed"] >= 1 and s["duel_inputs"] == 1 and np.isclose(r.duel_log_gain, np.log(1.0 / 2.0))
    agree = float(np.exp(2.0) - 1.0)              # the start model chooses c here too
    assert d.choose([agree], r.base) == "c"
    r.tick()
    assert r.plan([agree], "c") is None and r.threshold < 0.5


def test_a_refit_whose_choice_raises_loses_its_duels():
    d, r = _duelling([_one_variant("c"), None])
    assert r.refit_now()

    def run(v):
        if v == "c":
            raise RuntimeError("c fails on this device")
        return v, 1.0
    for x in XS[1::3]:
        values = [float(x)]
        r.tick()
        r.maybe_explore(values, d.choose(values), run)
    s = r.stats()
    assert s["duel_inputs"] > 0 and s["duel_log_gain"] < 0 and s["refits_lost"] == 1 and d.model is r.base


def test_a_rival_constraint_that_raises_does_not_break_the_call():
    """Plain dispatch never evaluates the start model's choice's constraint while a refit
    serves; asking what it would choose must not make the call raise."""
    d, r = _duelling([_one_variant("b")])

    def c_ok(f):
        if f["x"] > 5.0:
            raise ZeroDivisionError("cannot be evaluated here")
        return True
    assert r.refit_now()
    d.constraints.append(("c", c_ok))
    values = [float(np.expm1(2.0))]                   # the start model chooses c here
    assert d.choose(values) == "b"
    r.tick()
    ex = r.maybe_explore(values, d.choose(values), lambda v: (v, 1.0))
    assert ex is not None and ex.results["b"] == "b" and "c" not in ex.times


def test_a_refit_on_fewer_variants_duels_only_on_its_own():
    d, r = _duelling([SelectorModel(variants=["c", "b"], input_features=["x"], kind="constant", params={"label": 0})])
    assert r.refit_now() and d.choose([0.003]) == "c"
    r.tick()
    ex = r.maybe_explore([0.003], "c", lambda v: (v, 1.0))  # the start model's a is no variant of the refit
    assert ex is not None and "a" not in ex.times and r.stats()["duel_inputs"] == 0


@pytest.mark.parametrize("later", ["nothing", "an error", "a new model"])
def test_a_lost_duel_calls_the_next_refit_which_puts_the_start_model_back(later):
    """The duel that turns the sum negative makes a refit due at once (here, with refits
    otherwise a million rows apart, nothing else would); whatever it gives, the start model
    serves after it, and a new model is kept beside it, not served."""
    new = _one_variant("b")
    d, r = _duelling([_one_variant("c"), {"nothing": None, "an error": RuntimeError("refit failed"),
                                          "a new model": new}[later]])
    assert r.refit_now()
    x = [0.003]
    r.tick()
    r.maybe_explore(x, d.choose(x), lambda v: (v, 3.0 if v == "c" else 1.0))
    s = r.stats()
    assert r.refits_lose() and d.model is r.base and s["refits_lost"] == 1
    assert (s["refits_kept"], s["refit_errors"]) == {"nothing": (1, 0), "an error": (0, 1), "a new model": (0, 0)}[later]
    assert (r._refit_model is new) == (later == "a new model")


def test_a_duel_that_turns_the_sum_back_calls_the_next_refit_which_serves_again():
    """Symmetric to the lost duel: a refit that lost one duel and then wins the next ones is
    served again as soon as the sum is no longer negative (here refits are otherwise a million
    rows apart), not only at a later refit that a short stream may never reach (on nitro's
    histogram replayed on the Intel host, the start model at 69% had kept serving so)."""
    again = _one_variant("c")
    d, r = _duelling([_one_variant("c"), None, again])
    assert r.refit_now()
    r.tick()
    r.maybe_explore([0.003], d.choose([0.003]), lambda v: (v, 1.5 if v == "c" else 1.0))    # c loses once
    assert r.refits_lose() and d.model is r.base
    for x in ([0.01], [0.02]):                  # then wins twice, by more in all
        r.tick()
        r.maybe_explore(x, d.choose(x), lambda v: (v, 0.5 if v == "c" else 1.0))
    s = r.stats()
    assert s["duel_inputs"] == 3 and s["duel_log_gain"] > 0 and not r.refits_lose()
    assert d.model is again and s["refits"] == 2 and s["refits_lost"] == 1


def test_no_call_explores_while_a_background_refit_runs_and_timings_it_disturbed_teach_nothing():
    """A refit running beside the calls competes for their cores: while one runs no call
    explores, and a call that was exploring when one began counts its cost but gives no row,
    loss or duel; the next explored call, after it, counts."""
    started, release = threading.Event(), threading.Event()
    made = []

    def refit(base, X, T):
        made.append(len(X))
        if len(made) == 1:
            return _one_variant("c")
        started.set()
        release.wait(10)
        return None
    d = Dispatcher(VARIANTS, ["x"], "a")
    d.set_model(kernel_model())
    r = Refiner(d, "busy", budget=1.0, time_budget=None, quantile=1.0, warmup=10**6, refit_every=10**6,
                refit=refit, refit_in="thread")
    for x in XS[::8]:                                  # the start model's choice twice as slow: no hold
        values = [float(x)]
        own = d.choose(values, r.base)
        r.tick()
        r.maybe_explore(values, d.choose(values), lambda v, own=own: (v, 2.0 if v == own else 1.0))
    assert r.refit_now() and d.choose([0.003]) == "c"
    rows, spent = len(r.rows()[0]), r.stats()["explore_seconds"]

    def begins_a_refit(v):                             # a background refit starts mid-call
        r._refit_wanted.set()
        assert started.wait(10)
        return v, 3.0 if v == "c" else 1.0
    r.tick()
    assert r.maybe_explore([0.003], "c", begins_a_refit) is not None
    r.tick()                                           # the refit still runs: no exploring
    assert r.maybe_explore([0.004], "c", lambda v: (v, 3.0 if v == "c" else 1.0)) is None
    s = r.stats()
    assert s["explored_during_refits"] == 1 and s["refit_skips"] == 1
    assert s["duel_inputs"] == 0 and len(r.rows()[0]) == rows and d.model is not r.base
    assert s["explore_seconds"] == spent + 4.0         # its cost still counts (3 s and 1 s)
    release.set()
    assert r.wait(10)
    r.tick()
    r.maybe_explore([0.005], d.choose([0.005]), lambda v: (v, 3.0 if v == "c" else 1.0))
    s = r.stop()
    assert s["duel_inputs"] == 1 and s["duel_log_gain"] < 0 and len(r.rows()[0]) == rows + 1


def test_a_refit_that_finishes_after_stop_is_not_swapped_in():
    """Off means plain dispatch with the model refining began with, even when a refit was
    still running; turning refining off does not wait for that refit."""
    entered, release = threading.Event(), threading.Event()

    def slow_refit(base, X, times):
        entered.set()
        release.wait(30)
        return kernel_model(weights=[[0, 0, 1.0]] * 3)          # c everywhere

    ran = []
    cv = make_cv(ran, name="refit-after-stop")
    base = cv.model
    refiner = cv.refine(refit=slow_refit, budget=1.0, time_budget=None, quantile=1.0, warmup=0, refit_every=1)
    for x in XS:
        cv(float(x))
        if entered.is_set():
            break
    assert entered.wait(30)
    cv.refine(False)
    release.set()
    for t in refiner._threads:
        t.join(30)
    assert cv.model is base and refiner.stats()["refits"] == 0


def test_constraints_plain_dispatch_never_evaluates_do_not_break_refining_calls():
    """Plain dispatch evaluates only the choice's constraints; one that cannot be evaluated on
    an input (here it divides by zero) must not make a refining call raise."""
    ran = []
    cv = code_variant("constraint-raises", tagged(ran), {"x": lambda x: float(x)}, default="a", check=same)
    cv.add_constraint("c", lambda f: 64 / f["x"] >= 8)
    cv.model = kernel_model()
    assert cv.select(0.0) == "a"
    refiner = cv.refine(budget=1.0, time_budget=None, quantile=1.0, refit_every=10_000)
    assert [cv(0.0) for _ in range(100)] == ["a"] * 100
    assert refiner.stats()["explored"] > 0 and not [x for v, x in ran if v == "c"]
    cv.refine(False)


def test_a_nan_margin_neither_breaks_calls_nor_the_margin_window():
    """Two infinite scores (a linear model far outside its training range) give no margin to rank."""
    ran = []
    cv = make_cv(ran, name="nan-margin")
    cv.model = SelectorModel(variants=VARIANTS, input_features=["x"], kind="linear", params={
        "log_mask": [False], "mean": [0.0], "scale": [1.0], "coef": [[10.0, 10.0, -1.0]],
        "intercept": [0.0, -0.5, 0.0], "choose": "max"})
    with np.errstate(over="ignore"):
        assert np.isinf(cv.model.scores([[1e308]])[0][:2]).all()
    refiner = cv.refine(budget=1.0, time_budget=None, quantile=0.25, window=8, warmup=4, refit_every=10_000)
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(400):
            cv(1e308 if i % 5 == 0 else float(XS[i % len(XS)]))
    assert len(refiner._sorted_margins) == len(refiner._margins)
    assert not any(np.isnan(refiner._sorted_margins))
    cv.refine(False)


def test_stop_writes_what_it_can_within_its_timeout_and_its_writer_ends(store):
    """With the store paused, stop() returns within its timeout, the rows it could not write are
    counted as dropped, and the writer thread ends once the store is back."""
    ran = []
    cv = make_cv(ran, name="stop-paused")
    refiner = cv.refine(store=store, device_id="here", budget=1.0, time_budget=None, quantile=1.0,
                        refit_every=10_000, queue_size=2)
    for x in XS[:4]:
        cv(float(x))
    assert refiner.wait(30)
    store.client.execute_command("CLIENT", "PAUSE", 1500, "ALL")     # every client waits, the writer too
    for x in XS[4:60]:
        cv(float(x))
    s = refiner.stop(timeout=0.2)
    in_flight = s["rows_recorded"] - (s["rows_written"] + s["rows_dropped"] + s["store_errors"] + s["queued"])
    assert in_flight in (0, 1)                          # the row the writer is waiting to write
    writer = [t for t in refiner._threads if t.name.startswith("nitro-refine-store")][0]
    writer.join(30)
    assert not writer.is_alive()
    s = refiner.stats()
    assert s["queued"] == 0 and s["rows_dropped"] > 0
    assert s["rows_recorded"] == s["rows_written"] + s["rows_dropped"] + s["store_errors"]


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


def test_a_fast_wrong_variant_is_failed_not_learned():
    """Refining compares each explored variant's result with the served choice's: ``c``
    returns a wrong result at a tenth of the others' time and would otherwise be learned."""
    d = Dispatcher(VARIANTS, ["x"], "a")
    d.set_model(kernel_model())
    r = Refiner(d, "wrong", budget=1.0, time_budget=None, quantile=1.0, warmup=10**6, refit_every=8,
                background=False, candidates=None, check=lambda out, served: out == served)
    for x in np.tile(XS, 3):
        values = [float(x)]
        r.tick()
        r.maybe_explore(values, d.choose(values), lambda v: (("wrong" if v == "c" else "right"), 0.1 if v == "c" else 1.0))
    X, T = r.rows()
    c = VARIANTS.index("c")
    right = np.isfinite(T[:, 0]) | np.isfinite(T[:, 1])       # rows where a or b was served (c: where c was)
    assert r.stats()["wrong_results"] > 0 and right.any() and np.isinf(T[right, c]).all()
    assert all(d.choose([float(x)]) != "c" for x in XS if d.choose([float(x)], r.base) != "c")


def test_a_reference_decides_which_side_of_a_mismatch_is_wrong():
    ran = []
    cv = make_cv(ran, name="referenced")
    cv.check = lambda out, expected: out == expected   # each name a different result here
    cv.reference = lambda x: "b"                 # b's answer is the right one; a and c are wrong
    refiner = cv.refine(budget=1.0, quantile=1.0, warmup=10**6, candidates=None, time_budget=None,
                        refit_every=10**6)
    outs = [cv(float(x)) for x in XS]
    assert outs == [cv.select(float(x)) for x in XS]          # the call returns what it served
    X, T = refiner.rows()
    assert np.isfinite(T[:, 1]).all() and np.isinf(T[:, [0, 2]]).all()       # failed: +inf
    cv.refine(False)


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


def test_rows_queued_at_exit_are_written_and_a_computation_lost_by_the_store_is_declared_again(tmp_path):
    """A script that refines and ends without stop(): its queued rows reach the store (before,
    they went with the writer's daemon thread). The store removed the computation under it
    once: the writer declares it again."""
    import subprocess
    import sys
    script = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
import numpy as np
from tests.test_refine import make_cv
from nitro.store import Store
store = Store()
cv = make_cv([], name="at-exit")
refiner = cv.refine(store=store, device_id="here", budget=1.0, time_budget=None, quantile=1.0, warmup=10**6,
                    refit_every=10**6, queue_size=100_000)
for x in np.linspace(0.0, 5.0, 50):
    cv(float(x))
assert refiner.wait(30)
store.drop_computation("at-exit")            # gone under the writer
for x in np.linspace(5.01, 9.0, 400):
    cv(float(x))
print(refiner.stats()["rows_recorded"])
"""
    env = {**os.environ, "NITRO_DATA_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    recorded = int(out.stdout.split()[-1])
    check = subprocess.run([sys.executable, "-c", "from nitro.store import Store; "
                            "print(len(Store().rows('at-exit', 'here')))"], capture_output=True, text=True,
                           timeout=120, env=env)
    assert check.returncode == 0, check.stderr
    assert int(check.stdout) == recorded - 50 and recorded > 400      # all after the removal


def test_keyword_arguments_reach_explored_variants():
    ran = []

    def make(name):
        def variant(x, shift=0.0):
            ran.append((name, x + shift))
            return name
        variant.__name__ = name
        return variant

    cv = code_variant("kw-refined", [make(v) for v in VARIANTS], {"x": lambda x, shift=0.0: float(x + shift)},
                      default="a", check=same, reference=lambda x, shift=0.0: "a")
    cv.model = kernel_model()
    refiner = cv.refine(budget=1.0, time_budget=None, quantile=1.0, candidates=None, refit_every=10_000)
    for x in XS[:60]:
        cv(0.0, shift=float(x))
    assert refiner.stats()["explored"] > 10
    assert {x for _, x in ran} <= {float(x) for x in XS[:60]}       # every run got the keyword
    cv.refine(False)


def test_an_explored_variant_that_calls_sys_exit_is_a_failed_run_not_the_end_of_the_caller():
    import sys as _sys

    def safe(x):
        return x + 1.0

    def quits(x):                   # never the model's choice; exits like a C extension's abort
        _sys.exit("quits")

    cv = code_variant("exits", {"safe": safe, "quits": quits}, {"x": lambda x: float(x)}, default="safe")
    cv.model = SelectorModel(["safe", "quits"], ["x"], "constant", {"label": 0})
    refiner = cv.refine(budget=1.0, time_budget=None, quantile=1.0, refit_every=10_000, warmup=0)
    assert [cv(float(x)) for x in range(20)] == [x + 1.0 for x in range(20)]     # every call served
    stats = refiner.stop()
    assert stats["explored"] > 0


def test_a_model_refitted_only_from_complete_rows_says_when_explored_calls_cannot_complete_them():
    """An on-device model (not a kernel one) is refitted from rows that time every variant; with
    two candidates of three, only inputs explored again complete one: refine() says so."""
    ran = []
    cv = code_variant("never-refit", tagged(ran), {"x": lambda x: float(x)}, default="a", check=same)
    cv.model = SelectorModel(VARIANTS, ["x"], "constant", {"label": 0})
    with pytest.warns(RuntimeWarning, match="never-refit: this constant model is refitted from rows that time every "
                                            "one of its 3 variants, and an explored call times 2"):
        refiner = cv.refine(budget=1.0, time_budget=None, quantile=1.0, refit_every=4, refit_in="thread")
    for x in XS[:40]:
        cv(float(x))
    assert refiner.wait(30)
    stats = refiner.stop()
    assert stats["explored"] > 0 and stats["refits"] == 0 and stats["refit_errors"] == 0
    assert stats["refits_kept"] > 0
