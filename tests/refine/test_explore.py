"""Refining mode's exploration policy: the call budget, the least sure inputs, audits, the time
budget, constraints, repeats and results checked; the variants that run on an explored call."""
import numpy as np
import pytest

from nitro import SelectorModel, code_variant
from nitro.dispatch import Dispatcher
from nitro.refine import Refiner

from tests.refine.helpers import VARIANTS, kernel_model, same, tagged, make_cv, XS


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
