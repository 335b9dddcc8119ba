import json

import numpy as np
import pytest

from nitro.learn import SVMSelector
from nitro.model import SelectorModel


def test_models_are_written_in_format_2_and_format_1_still_loads():
    """Format 2: readers of 1 accepted and dropped parameters they did not know (``unit``), so
    a model written now must be refused by them; one a store holds from before still loads."""
    rng = np.random.default_rng(1)
    X = np.column_stack([10 ** rng.uniform(-4, 1, 200), rng.random(200)])
    model = SelectorModel.from_estimator(SVMSelector().fit(X, np.where(X[:, 0] > 1e-2, "x", "y")), ["a", "b"])
    data = model.to_dict()
    assert data["format"] == 2 and "unit" in data["params"]
    old = SelectorModel.from_dict({**data, "format": 1})
    assert old == model and old.predict(X) == model.predict(X)


def _with_units():
    rng = np.random.default_rng(1)
    X = np.column_stack([10 ** rng.uniform(-4, 1, 200), rng.random(200)])
    model = SelectorModel.from_estimator(SVMSelector().fit(X, np.where(X[:, 0] > 1e-2, "x", "y")), ["a", "b"])
    return model, X, [model.compiled().predict_one(list(row)) for row in X]


def test_a_used_model_pickles_and_deep_copies():
    import copy
    import pickle
    model, X, expected = _with_units()
    for other in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        assert other == model and [other.compiled().predict_one(list(row)) for row in X] == expected


def test_to_dict_hands_out_a_copy():
    model, X, expected = _with_units()
    data = model.to_dict()             # editing the copy leaves both evaluation paths as they were
    data["params"].pop("unit")
    data["params"]["mean"][0] = 1e9
    data["variants"].reverse()
    assert "unit" in model.params and model.variants == ["x", "y"]
    assert list(model.predict_index(X)) == expected == [model.compiled().predict_one(list(row)) for row in X]


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_exported_svm_equals_scikit_learn(k):
    rng = np.random.default_rng(k)
    X = rng.random((200, 3)) * [1e6, 1e4, 50]
    y = np.array(list("abcde"))[((X[:, 0] / 1e6 * k + 0.3 * rng.random(200)).astype(int)) % k]
    est = SVMSelector().fit(X, y)
    model = SelectorModel.from_dict(json.loads(json.dumps(SelectorModel.from_estimator(est, ["a", "b", "c"]).to_dict())))
    T = rng.random((3000, 3)) * [1e6, 1e4, 50]
    assert model.predict(T) == list(est.predict(T))


def test_device_features_are_appended_constants():
    rng = np.random.default_rng(0)
    X = np.hstack([rng.random((120, 2)), np.repeat([[1.0], [5.0]], 60, axis=0)])
    y = np.where(X[:, 2] > 3, "fast", "slow")
    est = SVMSelector().fit(X, y)
    on_5 = SelectorModel.from_estimator(est, ["a", "b"], device_features={"cores": 5.0})
    on_1 = SelectorModel.from_estimator(est, ["a", "b"], device_features={"cores": 1.0})
    assert on_5.predict(X[:5, :2]) == ["fast"] * 5 and on_1.predict(X[:5, :2]) == ["slow"] * 5


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(format=99), "unsupported model format 99 .*written by a newer nitro .upgrade nitro"),
    (lambda d: d.update(format=True), "unsupported model format True"),
    (lambda d: d.update(format=0), "unsupported model format 0 .this nitro reads 1, 2.$"),
    (lambda d: d.update(min_reader=3), "model field 'min_reader' is unknown to this nitro: .*newer nitro"),
    (lambda d: d["params"].update(unit_offset=[1.0, 2.0]), "svc model parameter 'unit_offset' is unknown"),
    (lambda d: d.update(format="nitro-bundle"), "a bundle of models, not one model: .*Bundle.load"),
    (lambda d: d.update(variants=["a", "a"]), "names repeated"),
    (lambda d: d.update(device_features={"cores": "nan"}), "device features not all finite"),
    (lambda d: d.update(kind="pickle"), "unknown model kind"),
    (lambda d: d["params"].update(intercept=[1.0] * 7), "inconsistent shapes"),
    (lambda d: d["params"]["mean"].__setitem__(0, float("inf")), "not all finite"),
])
def test_invalid_models_are_refused(mutate, message):
    rng = np.random.default_rng(1)
    X = rng.random((60, 2))
    est = SVMSelector().fit(X, np.where(X[:, 0] > 0.5, "x", "y"))
    data = SelectorModel.from_estimator(est, ["a", "b"]).to_dict()
    mutate(data)
    with pytest.raises(ValueError, match=message):
        SelectorModel.from_dict(data)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_compiled_evaluator_equals_scikit_learn(k):
    """The compiled dispatch path chooses exactly what scikit-learn predicts, one by one
    and in batches, with device features appended as constants."""
    rng = np.random.default_rng(10 + k)
    X = rng.random((240, 4)) * [1e6, 1e4, 50, 1]
    X[:, 3] = np.repeat([2.0, 7.0], 120)
    y = np.array(list("abcde"))[((X[:, 0] / 1e6 * k + 0.3 * rng.random(240) + X[:, 3] / 7).astype(int)) % k]
    est = SVMSelector().fit(X, y)
    model = SelectorModel.from_estimator(est, ["a", "b", "c"], device_features={"dev": 7.0})
    T = rng.random((3000, 3)) * [1e6, 1e4, 50]
    expected = list(est.predict(np.hstack([T, np.full((3000, 1), 7.0)])))
    fast = model.compiled()
    assert [model.variants[fast.predict_one(list(row))] for row in T] == expected
    assert [model.variants[i] for i in fast.predict_batch(T)] == expected


def test_compiled_kernel_model_equals_numpy():
    rng = np.random.default_rng(3)
    model = SelectorModel(variants=["u", "v", "w"], input_features=["a", "b"], kind="kernel", params={
        "mean": [1.0, -0.5], "scale": [2.0, 0.7], "gamma": 0.3, "centers": rng.normal(size=(40, 2)).tolist(),
        "weights": rng.normal(size=(40, 3)).tolist(), "offset": [0.1, 0.0, -0.1]})
    model = SelectorModel.from_dict(model.to_dict())
    T = rng.normal(size=(2000, 2)) * [100, 3]
    assert list(model.compiled().predict_batch(T)) == list(model.predict_index(T))
    scores = np.array([model.compiled().scores_one(list(row)) for row in T[:200]])
    assert np.allclose(scores, model.scores(T[:200]), rtol=1e-12, atol=1e-12)
    assert model.compiled().scores_one([1.0, float("nan")]) is None


def test_scores_argmax_is_the_choice_for_every_kind():
    """``scores`` is what refining mode ranks candidates by: its argmax must be the choice;
    kinds without compiled scores answer ``None`` from ``scores_one``."""
    rng = np.random.default_rng(4)
    X = rng.random((80, 3))
    est = SVMSelector().fit(X, np.where(X[:, 0] > 0.5, "x", np.where(X[:, 1] > 0.5, "y", "z")))
    model = SelectorModel.from_estimator(est, ["a", "b", "c"])
    assert list(model.scores(X).argmax(axis=1)) == list(model.predict_index(X))
    assert model.compiled().scores_one(list(X[0])) is None
    const = SelectorModel(variants=["x", "y"], input_features=["a"], kind="constant", params={"label": 1})
    assert const.scores([[1.0], [2.0]]).tolist() == [[0.0, 1.0], [0.0, 1.0]]


@pytest.mark.parametrize("values", [[1.0, 2.0], [1.0, 2.0, 3.0, 4.0], [1.0, float("nan"), 3.0],
                                    [1.0, float("inf"), 3.0], ["1", 2.0, 3.0], [None, 2.0, 3.0], (True, 2.0, 3.0), "abc"])
def test_compiled_evaluator_refuses_what_is_not_a_feature_vector(values):
    rng = np.random.default_rng(1)
    X = rng.random((60, 3))
    est = SVMSelector().fit(X, np.where(X[:, 0] > 0.5, "x", "y"))
    assert SelectorModel.from_estimator(est, ["a", "b", "c"]).compiled().predict_one(values) == -1


def test_compiled_batch_marks_rows_that_are_not_finite():
    rng = np.random.default_rng(1)
    X = rng.random((60, 3))
    est = SVMSelector().fit(X, np.where(X[:, 0] > 0.5, "x", "y"))
    fast = SelectorModel.from_estimator(est, ["a", "b", "c"]).compiled()
    Q = X[:4].copy()
    Q[1, 2], Q[3, 0] = np.nan, -np.inf
    out = fast.predict_batch(Q).tolist()
    assert out[1] == out[3] == -1
    assert [out[0], out[2]] == [fast.predict_one(list(Q[0])), fast.predict_one(list(Q[2]))] and min(out[0], out[2]) >= 0


def test_a_kernel_model_with_units_scales_its_features_before_the_log_compiled_as_in_numpy():
    """A feature in millions taken in a unit of its own: the compiled evaluator and NumPy agree,
    and the model is the same function of the feature in counts with unit 1."""
    rng = np.random.default_rng(5)
    params = {"mean": [1.0, -0.5], "scale": [2.0, 0.7], "gamma": 0.3, "centers": rng.normal(size=(40, 2)).tolist(),
              "weights": rng.normal(size=(40, 3)).tolist(), "offset": [0.1, 0.0, -0.1]}
    in_units = SelectorModel.from_dict(SelectorModel(variants=["u", "v", "w"], input_features=["a", "b"], kind="kernel",
                                                     params={**params, "unit": [1e-6, 1.0]}).to_dict())
    plain = SelectorModel(variants=["u", "v", "w"], input_features=["a", "b"], kind="kernel", params=params)
    T = np.abs(rng.normal(size=(500, 2))) * [100, 3]
    millions = T * [1e-6, 1.0]
    assert list(in_units.compiled().predict_batch(millions)) == list(in_units.predict_index(millions))
    scores = np.array([in_units.compiled().scores_one(list(row)) for row in millions[:100]])
    assert np.allclose(scores, in_units.scores(millions[:100]), rtol=1e-12, atol=1e-12)
    assert np.allclose(in_units.scores(millions), plain.scores(T), rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="units must be 2 positive finite numbers"):
        SelectorModel(variants=["u", "v", "w"], input_features=["a", "b"], kind="kernel",
                      params={**params, "unit": [0.0, 1.0]})._validate()


@pytest.mark.parametrize("learner", ["svm", "costmin"])
def test_svc_and_linear_models_with_units_evaluate_as_scikit_learn_compiled_and_in_numpy(learner):
    """A learner fitted on a size in millions exports the column's unit (``unit``); the
    compiled evaluator, NumPy and the fitted estimator choose alike, device features included."""
    from nitro.learn import fit_selector, make_selector
    rng = np.random.default_rng(8)
    X = np.column_stack([10 ** rng.uniform(-4, 1, 300), rng.uniform(0, 1, 300), np.full(300, 7.0)])
    T = np.column_stack([X[:, 0] + 1e-3, 0.5 * X[:, 0] ** 0.8 + 2e-3 * X[:, 1], np.full(300, 0.01)])
    est = fit_selector(make_selector(learner), X, T)
    model = SelectorModel.from_dict(json.loads(json.dumps(SelectorModel.from_estimator(
        est, ["mrows", "share"], device_features={"dev": 7.0}, variants=["p", "q", "r"]).to_dict())))
    assert model.params["unit"][0] < 1e-3 and model.params["unit"][1:] == [1.0, 1.0]
    assert model.input_units() == model.params["unit"][:2]          # the input features' part
    Q = np.column_stack([10 ** rng.uniform(-4, 1, 2000), rng.uniform(0, 1, 2000)])
    expected = list(est.predict(np.hstack([Q, np.full((2000, 1), 7.0)])))
    expected = [model.variants.index(str(v)) if str(v) in model.variants else int(v) for v in expected]
    assert list(model.predict_index(Q)) == expected
    assert list(model.compiled().predict_batch(Q)) == expected
    assert [model.compiled().predict_one(list(row)) for row in Q[:200]] == expected[:200]


def test_relative_times_read_predicted_time_ratios_from_kernel_and_gbt_scores():
    """Refining mode prices an explored call by each variant's predicted time over the choice's:
    a kernel model's fractions of the optimum and a gbt model's log speed-ups say it; votes do not."""
    from nitro.learn.regression import RegressionSelector
    kernel = SelectorModel(variants=["a", "b", "c"], input_features=["x"], kind="kernel", params={
        "signed_log": True, "mean": [0.0], "scale": [1.0], "gamma": 1.0, "centers": [[0.0]],
        "weights": [[1.0, 0.5, -0.2]], "offset": [0.0, 0.0, 0.0]})
    scores = kernel.scores([[0.0]])[0].tolist()                  # fractions 1, 0.5, -0.2
    assert kernel.relative_times(scores, 0) == pytest.approx([1.0, 2.0, np.inf])
    assert kernel.relative_times(scores, 1) == pytest.approx([0.5, 1.0, np.inf])
    assert kernel.relative_times(scores, 2) is None              # no positive fraction to compare with
    rng = np.random.default_rng(0)
    X = rng.random((200, 2))
    times = np.column_stack([np.ones(200), 4.0 * np.ones(200), 1.0 + X[:, 0]])   # b always 4x a
    est = RegressionSelector(per_variant=True, max_iter=50).fit(X, times)
    gbt = SelectorModel.from_estimator(est, ["p", "q"], variants=["a", "b", "c"])
    ratios = gbt.relative_times(gbt.scores(X[:1])[0].tolist(), 0)
    assert ratios[0] == pytest.approx(1.0) and ratios[1] == pytest.approx(4.0, rel=0.05)
    assert ratios[2] == pytest.approx(1.0 + X[0, 0], rel=0.1)
    svm = SelectorModel.from_estimator(SVMSelector().fit(X, np.where(X[:, 0] > 0.5, "a", "b")), ["p", "q"])
    assert svm.relative_times(svm.scores(X[:1])[0].tolist(), 0) is None


def test_a_model_checked_elsewhere_is_rebuilt_from_its_flat_lists_without_a_second_check():
    """Refining mode's refit process checks a new model and sends its flat lists too: rebuilt
    from both, it chooses exactly as the model loaded and checked here."""
    rng = np.random.default_rng(5)
    X = rng.random((60, 3))
    est = SVMSelector().fit(X, np.where(X[:, 0] > 0.5, "x", "y"))
    checked = SelectorModel.from_dict(SelectorModel.from_estimator(est, ["a", "b", "c"]).to_dict())
    rebuilt = SelectorModel.from_checked(json.loads(json.dumps(checked.to_dict())), checked._flat)
    assert rebuilt.to_dict() == checked.to_dict()
    assert [rebuilt.compiled().predict_one(list(x)) for x in X] == [checked.compiled().predict_one(list(x)) for x in X]


def test_rows_of_the_wrong_width_or_not_finite_are_refused_by_the_batch_paths():
    """``predict([[1, 2]])`` on a one-feature model, ``predict(None)`` or a NaN feature would be
    answered silently otherwise (the one-call path refuses them already)."""
    rng = np.random.default_rng(1)
    X = rng.random((60, 1))
    model = SelectorModel.from_estimator(SVMSelector().fit(X, np.where(X[:, 0] > 0.5, "x", "y")), ["size"])
    for bad, message in (([[1.0, 2.0]], r"shape \(1, 2\)$"),
                         (None, r"shape \(1, 1\), 1 of them with a value that is no finite"),
                         ([[np.nan], [1.0]], r"shape \(2, 1\), 1 of them with a value that is no finite number"),
                         ([], r"shape \(1, 0\)")):
        with pytest.raises(ValueError, match="expected rows of 1 input features \\(size\\), got an array of " + message):
            model.predict(bad)
    assert model.predict([[0.9], [0.1]]) == ["x", "y"]
