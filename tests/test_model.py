import json

import numpy as np
import pytest

from nitro.learn import SVMSelector
from nitro.model import SelectorModel


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
    (lambda d: d.update(format=99), "unsupported model format"),
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
