"""The contract every selector keeps (shared, parametrised over nitro.learn.SELECTORS): fit and
predict, export to a NumPy model that chooses exactly as the estimator does, store round
trip, and dispatch through a real CodeVariant tuned on real measurements."""
import json

import numpy as np
import pytest
from sklearn.base import clone

from nitro import code_variant
from nitro.learn import SELECTORS, delta_miss, fit_selector, make_selector, predict_index
from nitro.measurement import TimingPolicy
from nitro.metrics import fraction_of_optimum, random_fraction
from nitro.model import SelectorModel
from nitro.tuner import autotuner

NAMES = sorted(SELECTORS)
FEATURES = ["size", "spread", "noise"]
VARIANTS = ["small", "medium", "large"]


def problem(n, seed):
    """Three variants whose run times depend on a heavy-tailed size and a signed spread;
    the third feature is noise; 5% of the 'large' runs failed."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([10 ** rng.uniform(2, 7, n), rng.normal(size=n), rng.uniform(0, 1, n)])
    s = np.log10(X[:, 0])
    T = np.column_stack([10 ** (s - 5) + 1e-3, 10 ** (0.5 * s - 3) * (1 + 0.5 * (X[:, 1] > 0)), 10 ** (s - 4.6)])
    T *= np.exp(rng.normal(0, 0.05, T.shape))
    T[rng.random(n) < 0.05, 2] = np.nan
    return X, T


@pytest.fixture(scope="module")
def fitted():
    X, T = problem(160, 0)
    return {name: fit_selector(make_selector(name), X, T) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_fit_predict_chooses_well_on_unseen_inputs(name, fitted):
    X, T = problem(400, 1)
    chosen = predict_index(fitted[name], X)
    assert chosen.shape == (400,) and chosen.min() >= 0 and chosen.max() < 3
    pct = fraction_of_optimum(np.nan_to_num(T, nan=np.inf), chosen)
    assert pct > 0.9 and pct > random_fraction(np.nan_to_num(T, nan=np.inf)) + 0.1
    assert 0 <= delta_miss(np.nan_to_num(T, nan=np.inf), chosen) < 0.5


@pytest.mark.parametrize("name", NAMES)
def test_exported_model_chooses_exactly_as_the_estimator(name, fitted):
    est = fitted[name]
    model = SelectorModel.from_estimator(est, FEATURES, variants=VARIANTS)
    loaded = SelectorModel.from_dict(json.loads(json.dumps(model.to_dict())))
    rng = np.random.default_rng(2)
    # inside the training range, far outside it, and on the training points themselves
    X = np.vstack([problem(3000, 3)[0], np.column_stack([10 ** rng.uniform(-2, 10, 500), rng.normal(0, 5, 500),
                                                         rng.uniform(-3, 3, 500)]), problem(160, 0)[0]])
    expected = [VARIANTS[i] for i in predict_index(est, X)]
    assert loaded.predict(X) == expected
    assert model.kind == loaded.kind and set(loaded.variants) <= set(VARIANTS)
    fast = loaded.compiled()               # the compiled dispatch path chooses the same
    assert [loaded.variants[i] for i in fast.predict_batch(X)] == expected
    assert [loaded.variants[fast.predict_one(list(x))] for x in X[:300]] == expected[:300]


@pytest.mark.parametrize("name", NAMES)
def test_store_round_trip(name, fitted, store):
    model = SelectorModel.from_estimator(fitted[name], FEATURES, variants=VARIANTS, provenance={"method": name})
    store.declare("contract", VARIANTS, FEATURES)
    store.put_model("contract", "dev0", model.to_dict())
    back = SelectorModel.from_dict(store.model("contract", "dev0"))
    X = problem(200, 4)[0]
    assert back.predict(X) == model.predict(X) and back.provenance == {"method": name}


@pytest.mark.parametrize("name", NAMES)
def test_validation_names_the_problem(name):
    X, T = problem(40, 5)
    est = make_selector(name)
    if getattr(est, "fits_times", False):
        with pytest.raises(ValueError, match="rows"):
            clone(est).fit(X, T[:-1])
        bad = T.copy()
        bad[3] = np.nan
        with pytest.raises(ValueError, match="no valid variant time"):
            clone(est).fit(X, bad)
    fitted = fit_selector(est, X, T)
    with pytest.raises(ValueError):
        fitted.predict(X[:, :2])


@pytest.mark.parametrize("name", NAMES)
def test_a_corrupted_model_is_refused(name, fitted):
    data = SelectorModel.from_estimator(fitted[name], FEATURES, variants=VARIANTS).to_dict()
    data["input_features"] = []          # the parameters no longer fit the features
    with pytest.raises(ValueError):
        SelectorModel.from_dict(data)


# -- dispatch through a real code variant ------------------------------------------------------------
def sum_loop(a):
    total = 0.0
    for x in a.tolist():
        total += x * x
    return total


def sum_dot(a):
    return float(np.dot(a, a))


def sum_square(a):
    return float(np.sum(a * a))


def length(a):
    return float(a.size)


@pytest.mark.parametrize("name", NAMES)
def test_tune_and_dispatch_through_a_code_variant(name, store):
    cv = code_variant("sumsq", [sum_loop, sum_dot, sum_square], [length], default="sum_dot",
                      check=lambda r, ref: abs(r - ref) <= 1e-9 * max(1.0, abs(ref)))
    cv.record = True
    cv.device_id = "test-device"
    store.put_device("test-device", {"cores": {"value": 2, "unit": "", "source": "test"}})
    rng = np.random.default_rng(0)
    inputs = [rng.random(int(n)) for n in np.unique(np.logspace(0, 3.3, 16).astype(int))]
    tuner = autotuner("sumsq", store=store, learner=name, progress=False,
                      policy=TimingPolicy(warmup=1, min_repeats=1, max_repeats=3, target_seconds=1e-4))
    tuner.set_training_args(inputs)
    model, = tuner.tune([cv])
    assert cv.model is model and model.provenance["learner"] == type(SELECTORS[name]()).__name__
    stored = SelectorModel.from_dict(store.model("sumsq", "test-device"))
    x = rng.random(500)
    assert stored.predict([[500.0]]) == [cv.select(x)]
    assert abs(cv(x) - float(np.dot(x, x))) < 1e-9
    # the loop is never the fastest on large arrays: no selector may choose it there
    assert cv.select(rng.random(5000)) != "sum_loop"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("failed", [0.0, -1.0])
def test_a_failed_run_given_as_a_non_positive_time_is_never_chosen(name, failed):
    # a label learner once took the failures' 0 (or -1) for the fastest time and chose the failed variant
    X, T = problem(80, 6)
    T[:, 0] = failed
    chosen = predict_index(fit_selector(make_selector(name), X, T), X)
    assert not (chosen == 0).any()


@pytest.mark.parametrize("name", NAMES)
def test_a_time_matrix_of_another_length_is_refused_naming_its_shape(name):
    X, T = problem(40, 7)
    with pytest.raises(ValueError, match=r"40 rows, got shape \(39, 3\)"):
        fit_selector(make_selector(name), X, T[:-1])
