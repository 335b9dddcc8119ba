import sys

import numpy as np
import pytest

from nitro import code_variant
from nitro.learn import SVMSelector
from nitro.model import SelectorModel


def small(x):
    return x.sum()


def big(x):
    return x.sum()


def size(x):
    return float(x.size)


def _cv(**kw):
    return code_variant("sum", [small, big], [size], default="small", **kw)


def _model(cv):
    X = np.logspace(0, 6, 60)[:, None]
    est = SVMSelector().fit(X, np.where(X[:, 0] < 1000, "small", "big"))
    return SelectorModel.from_estimator(est, cv.feature_names)


def test_dispatch_follows_the_model():
    cv = _cv()
    assert cv.select(np.ones(10)) == "small"          # no model: the default
    cv.model = _model(cv)
    assert cv.select(np.ones(10)) == "small" and cv.select(np.ones(100000)) == "big"
    assert cv(np.ones(100000)) == 100000


def test_a_code_variant_dispatching_with_a_model_pickles_and_dispatches_alike():
    """A spawned worker process receives the code variant pickled: the compiled evaluator (a
    C++ object) stays behind and is rebuilt from the model."""
    import copy
    import pickle
    cv = _cv()
    cv.model = _model(cv)
    x = np.ones(5000)
    assert cv.select(x) == "big"
    for other in (pickle.loads(pickle.dumps(cv)), copy.deepcopy(cv)):
        assert other.model == cv.model and other.select(x) == "big" and other.select(np.ones(3)) == "small"
    cv.model = None
    assert pickle.loads(pickle.dumps(cv)).select(x) == "small"


def test_excluded_choice_falls_back_to_default_and_both_excluded_is_an_error():
    cv = _cv(constraints=[("big", lambda f: f["size"] < 50000)])
    cv.model = _model(cv)
    assert cv.select(np.ones(10000)) == "big"
    assert cv.select(np.ones(100000)) == "small"
    cv.add_constraint("small", lambda f: f["size"] < 50000)
    with pytest.raises(ValueError, match=r"the model's choice 'big' and the default variant 'small' are both "
                                         r"excluded by constraints for this input \(size=100000\)"):
        cv.select(np.ones(100000))
    cv.model = None       # no model: the message does not speak of one
    with pytest.raises(ValueError, match=r"^no model is installed, and the default variant 'small' is excluded by "
                                         r"constraints for this input \(size=100000\)$"):
        cv.select(np.ones(100000))


def test_bad_declarations_and_features():
    with pytest.raises(ValueError, match="unknown default"):
        code_variant("x", [small, big], [size], default="nope")
    with pytest.raises(ValueError, match="no usable name"):
        code_variant("x", [lambda v: v], [size])
    with pytest.raises(ValueError, match="two variants"):
        code_variant("x", [small, small], [size])
    for kwargs, error, message in (
            (dict(variants={1: small, 2: big}), TypeError, "variants are named by non-empty strings, got 1"),
            (dict(variants=None), TypeError, "give variants as a list of named callables or a dict"),
            (dict(default=["small"]), ValueError, r"unknown default variant \['small'\]"),
            (dict(constraints=[("small",)]), TypeError, r"constraints are \(variant, valid_if\) pairs, got \('small',\)"),
            (dict(constraints=[("small", 3)]), TypeError, "the constraint on 'small' is a callable valid_if"),
            (dict(check=5), TypeError, "check is a callable, got 5"),
            (dict(reference="ref"), TypeError, "reference is a callable, got 'ref'")):
        with pytest.raises(error, match=message):
            code_variant("x", **{"variants": [small, big], "features": [size], **kwargs})
    cv = code_variant("x", [small, big], [size], constraints={"big": lambda f: f["size"] > 2}, fallback_on=KeyError)
    assert cv.fallback_on == (KeyError,) and cv.allowed([1.0]) == {"small": True, "big": False}
    assert code_variant("x", [small, big], [size], constraints=[["big", lambda f: False]]).allowed([9.0])["big"] is False
    cv = code_variant("x", [small, big], {"nan": lambda x: float("nan")})
    with pytest.raises(ValueError, match="'nan' is nan"):
        cv.select(np.ones(3))
    cv = code_variant("x", [small, big], {"s": lambda x: "text"})
    with pytest.raises(TypeError, match="not a number"):
        cv.select(np.ones(3))
    cv = code_variant("x", [small, big], {"s": lambda x: "5"})        # text, even of a number
    with pytest.raises(TypeError, match="input feature 's' returned the text '5', not a number"):
        cv.select(np.ones(3))
    cv.model = _model(cv)
    with pytest.raises(TypeError, match="returned the text '5'"):
        cv(np.ones(3))
    cv = code_variant("x", [small, big], {"huge": lambda x: 10 ** 400})
    with pytest.raises(ValueError, match="input feature 'huge' is too large for a float"):
        cv.select(np.ones(3))


def test_model_for_other_variants_or_features_is_refused():
    cv = _cv()
    with pytest.raises(ValueError, match="does not have"):
        cv.model = SelectorModel(["small", "huge"], ["size"], "constant", {"label": 0})
    with pytest.raises(ValueError, match="trained on features"):
        cv.model = SelectorModel(["small", "big"], ["other"], "constant", {"label": 0})


def test_compiled_dispatch_reports_bad_feature_values_clearly():
    cv = code_variant("sum", [small, big], {"size": lambda x: float("nan") if x.size == 3 else float(x.size)},
                      default="small")
    cv.model = _model(cv)
    assert cv.select(np.ones(100000)) == "big"
    with pytest.raises(ValueError, match="'size' is nan"):
        cv.select(np.ones(3))


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes are Python 3.11+")
def test_an_error_in_a_feature_or_constraint_names_it_and_keeps_its_type():
    import functools

    class Rows:                                   # a callable object
        def __call__(self, x):
            return x.shape[5]

    def scaled(x, k):
        return x.size / k

    cases = {"rows": Rows(), "scaled": functools.partial(scaled, k=0), "size": size}
    cv = code_variant("sum", [small, big], cases, default="small")
    cv.model = SelectorModel(["small", "big"], list(cases), "constant", {"label": 0})
    for call in (cv, cv.select, cv.compute_features):
        with pytest.raises(IndexError) as raised:
            call(np.ones(4))
        assert "input feature 'rows' of code variant 'sum'" in raised.value.__notes__[0]
    cv = code_variant("sum", [small, big], {"scaled": functools.partial(scaled, k=0)})
    with pytest.raises(ZeroDivisionError) as raised:
        cv(np.ones(4))
    assert "input feature 'scaled'" in raised.value.__notes__[0]
    cv = code_variant("sum", [small, big], {"n": len})        # a builtin: no code to find
    with pytest.raises(TypeError) as raised:
        cv(4)
    assert "one of the input features ['n']" in raised.value.__notes__[0]

    cv = _cv(constraints=[("big", lambda f: f["rows"] > 1)])   # a feature name it does not have
    cv.model = _model(cv)
    with pytest.raises(KeyError) as raised:
        cv.select(np.ones(100000))
    assert "the constraint on variant 'big' at " in raised.value.__notes__[0]
    assert "{'size': 100000.0}" in raised.value.__notes__[0]


def test_fallback_on_runs_the_default_after_a_listed_failure_only():
    class DidNotConverge(RuntimeError):
        pass

    calls = []

    def fragile(x):
        calls.append("fragile")
        if x < 0:
            raise DidNotConverge("no")
        if x == 0:
            raise ZeroDivisionError("other failure")
        return "fragile"

    def robust(x):
        calls.append("robust")
        return "robust"

    cv = code_variant("fb", [fragile, robust], {"x": lambda x: float(x)}, default="robust",
                      fallback_on=(DidNotConverge,))
    cv.model = SelectorModel(["fragile", "robust"], ["x"], "constant", {"label": 0})
    assert cv(1.0) == "fragile" and calls == ["fragile"]
    assert cv(-1.0) == "robust" and calls[1:] == ["fragile", "robust"]
    with pytest.raises(ZeroDivisionError):          # not listed: propagates
        cv(0.0)
    with pytest.raises(TypeError, match="fallback_on"):
        code_variant("bad", [fragile, robust], fallback_on=("DidNotConverge",))


def test_explain_reports_the_choice_its_runner_up_and_the_models_own_estimate():
    import numpy as np
    from nitro import SelectorModel
    # one centre at x=1 (standardised to 0): scores a = 0.5 rbf + 0.5, b = 0.9 - 0.5 rbf
    model = SelectorModel(variants=["a", "b"], input_features=["x"], kind="kernel",
                          params={"signed_log": True, "mean": [float(np.log1p(1.0))], "scale": [1.0], "gamma": 1.0,
                                  "centers": [[0.0]], "weights": [[0.5, -0.5]], "offset": [0.5, 0.9]},
                          provenance={"confidence": {"predicted_quality": 0.93, "level": "high"}})
    cv = code_variant("ex", {"a": lambda x: x, "b": lambda x: x}, {"x": lambda x: float(x)}, default="b")
    cv.model = model
    near, far = cv.explain(1.0), cv.explain(1e6)
    assert near["variant"] == "a" and near["runner_up"] == "b" and np.isclose(near["margin"], 0.6)
    assert np.isclose(near["expected_fraction"], 1.0) and near["predicted_quality"] == 0.93
    assert far["variant"] == "b" and np.isclose(far["expected_fraction"], 0.9) and not far["overridden"]
    cv.add_constraint("a", lambda f: f["x"] > 10)    # the default runs where the model's choice may not
    assert cv.explain(1.0)["overridden"] and cv.explain(1.0)["variant"] == "b"
    assert "low_because" not in near and "advice" not in near
    # a zero-shot estimate called low: the figure comes with why and what to do, never alone
    low = {"predicted_quality": 0.969, "level": "low", "outside_sources": True, "advice": "time 6 inputs",
           "low_because": ["outside the sources' device features (23.0 from zen5, where the sources lie within 4.1)"]}
    cv.model = SelectorModel(model.variants, model.input_features, model.kind, model.params, provenance={"confidence": low})
    said = cv.explain(1.0)
    assert said["level"] == "low" and said["outside_sources"] and said["advice"] == "time 6 inputs"
    assert said["low_because"] == low["low_because"]
    # a new family among the sources: "uncertain", with why and what to check
    new = {**low, "level": "uncertain", "outside_sources": False, "advice": "check 6 inputs",
           "low_because": ["a family no source shares: held out with its family, a source got 84.0%"]}
    cv.model = SelectorModel(model.variants, model.input_features, model.kind, model.params,
                             provenance={"confidence": new})
    said = cv.explain(1.0)
    assert said["level"] == "uncertain" and said["advice"] == "check 6 inputs" and said["low_because"] == new["low_because"]
    # a few-shot model whose cross-validated figure is still low says so too
    few = {"few_shot": {"estimate": {"quality": 0.79, "stderr": 0.045, "level": "low", "advice": "time 88"}}}
    cv.model = SelectorModel(model.variants, model.input_features, model.kind, model.params, provenance=few)
    said = cv.explain(1.0)
    assert said["predicted_quality"] == 0.79 and said["level"] == "low" and said["advice"] == "time 88"
    # and one whose figure is high but from too few inputs to vouch for it
    unsure = {"few_shot": {"estimate": {"quality": 0.995, "stderr": 0.005, "level": "uncertain", "advice": "time 19"}}}
    cv.model = SelectorModel(model.variants, model.input_features, model.kind, model.params, provenance=unsure)
    said = cv.explain(1.0)
    assert said["level"] == "uncertain" and said["advice"] == "time 19"


def test_keyword_arguments_reach_the_features_and_the_variants():
    class DidNotConverge(RuntimeError):
        pass

    def fast(x, scale=1.0):
        if scale < 0:
            raise DidNotConverge("no")
        return ("fast", x * scale)

    def safe(x, scale=1.0):
        return ("safe", x * scale)

    cv = code_variant("kw", [fast, safe], {"scaled": lambda x, scale=1.0: float(x * scale)}, default="safe",
                      fallback_on=DidNotConverge)
    est = SVMSelector().fit(np.array([[1.0], [2.0], [100.0], [200.0]]), ["safe", "safe", "fast", "fast"])
    cv.model = SelectorModel.from_estimator(est, cv.feature_names)
    assert cv(2.0, scale=50.0) == ("fast", 100.0) and cv.select(2.0, scale=50.0) == "fast"
    assert cv(2.0) == ("safe", 2.0) and cv(x=2.0, scale=0.5) == ("safe", 1.0)
    assert cv(-100.0, scale=-2.0) == ("safe", 200.0)            # fast raised: the default, with the same keywords
    assert cv.explain(2.0, scale=50.0)["variant"] == "fast"
    with pytest.raises(TypeError, match="bins"):
        cv(2.0, bins=3)
