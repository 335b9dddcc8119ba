"""The compiled RBF evaluators (nitro/selector_eval.hpp: feature-major centres, vectorised
distances, their own exp, dot-product read-out) choose exactly as the NumPy float64 path on
models of the sizes the learners now export: kernel models with 800 Nyström centres (12 and 55
features) and SVCs with 1,000 and 4,000 support vectors."""
import numpy as np
import pytest

from nitro.bench.dispatch import kernel_model, svc_model
from nitro.model import SelectorModel


def points(model, n=4000, seed=1):
    """Near the centres (raw inputs whose standardised values lie close to a centre), far from
    them (every kernel value underflows or nearly), and small signed ones."""
    rng = np.random.default_rng(seed)
    d, p = len(model.input_features), model.params
    C = np.asarray(p["centers"] if model.kind == "kernel" else p["support_vectors"])[:, :d]
    Z = C[rng.integers(0, len(C), n // 2)] + 0.3 * rng.normal(size=(n // 2, d))
    V = Z * np.asarray(p["scale"])[:d] + np.asarray(p["mean"])[:d]
    near = np.sign(V) * np.expm1(np.abs(V)) if model.kind == "kernel" else np.abs(V)
    far = rng.normal(size=(n // 4, d)) * 10 ** rng.uniform(0, 4, size=(n // 4, 1))
    mixed = rng.normal(size=(n - n // 2 - n // 4, d))
    return np.vstack([near, far, mixed])


@pytest.mark.parametrize("model", [kernel_model(800, 12), kernel_model(800, 55, seed=1), kernel_model(37, 3, k=2, seed=2),
                                   svc_model(1000, 12), svc_model(4000, 12, seed=1), svc_model(1000, 12, k=8, seed=2),
                                   svc_model(301, 3, k=3, seed=3, device={"cores": 8.0, "clock": 2.5})],
                         ids=["kernel-800x12", "kernel-800x55", "kernel-37x3", "svc-1000x12", "svc-4000x12",
                              "svc-1000x12-k8", "svc-301x3-device"])
def test_compiled_rbf_evaluators_choose_as_numpy(model):
    X = points(model)
    expected = model.predict_index(X)
    assert len(set(expected.tolist())) >= 2          # the points reach different choices
    fast = model.compiled()
    assert list(fast.predict_batch(X)) == list(expected)
    assert [fast.predict_one(list(map(float, x))) for x in X[:500]] == list(expected[:500])


def test_compiled_kernel_scores_are_numpy_scores():
    """The exp of selector_eval.hpp is within an ulp of std::exp: scores agree to ~1e-12."""
    model = kernel_model(800, 12)
    X = points(model, 300)
    fast = model.compiled()
    scores = np.array([fast.scores_one(list(map(float, x))) for x in X])
    np.testing.assert_allclose(scores, model.scores(X), rtol=1e-10, atol=1e-12)


def test_compiled_evaluators_refuse_a_negative_gamma():
    data = kernel_model(10, 2).to_dict()
    data["params"]["gamma"] = -1.0
    with pytest.raises(ValueError, match="gamma"):
        SelectorModel.from_dict(data).compiled()
