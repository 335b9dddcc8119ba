import numpy as np

from nitro.learn.kron import device_kernel
from nitro.transfer.confidence import estimate_quality, nearest_distances, per_input


def test_a_feature_constant_over_the_sources_does_not_move_the_target():
    D = np.array([[1.0, 48], [2.0, 48], [3.0, 48], [2.2, 64]])
    Kd, kd = device_kernel(D, [0, 1, 2], 3)
    Kd1, kd1 = device_kernel(D[:, :1], [0, 1, 2], 3)
    assert np.allclose(Kd, Kd1) and np.allclose(kd, kd1)
    assert kd.argmax() == 1 and kd.max() == 1.0


def test_a_far_target_keeps_its_nearest_sources_weight():
    D = np.array([[1.0], [2.0], [3.0], [300.0]])
    _, kd = device_kernel(D, [0, 1, 2], 3)
    assert kd[2] == 1.0 and np.all(np.isfinite(kd)) and kd[0] <= kd[1] < kd[2]


def test_outside_and_estimate():
    D = np.array([[1.0], [2.0], [3.0], [2.5], [30.0]])
    near = nearest_distances(D, [0, 1, 2], 3)
    far = nearest_distances(D, [0, 1, 2], 4)
    assert near[0] < near[1] < far[0] and far[2] == 2
    scores = np.array([[0.9, 0.5], [0.7, 0.8]])
    held = {"s0": {"quality": 0.9, "expected": 0.95}, "s1": {"quality": 0.8, "expected": 0.9}}
    c = estimate_quality(scores, held, D, [0, 1, 2], 3, ["s0", "s1", "s2", "t", "far"])
    assert np.isclose(c["self_estimate"], 0.85) and np.isclose(c["held_out_quality"], 0.85)
    assert np.isclose(c["predicted_quality"], 0.85) and c["level"] == "low" and c["advice"]
    assert estimate_quality(scores, held, D, [0, 1, 2], 4, list("abcde"))["outside_sources"]


def test_per_input_margins():
    r = per_input(np.array([[0.9, 0.5, 0.95], [0.2, 0.8, 0.1]]))
    assert r["choice"].tolist() == [2, 1] and r["runner_up"].tolist() == [0, 0]
    assert np.allclose(r["margin"], [0.05, 0.6]) and np.allclose(r["expected_fraction"], [0.95, 0.8])


def test_a_single_source_gives_a_finite_estimate(store):
    """One source: no held-out source to learn from, so the estimate is the model's own,
    finite, and marked low (unvalidated)."""
    from nitro.measurement import TrainingRow
    from nitro.transfer.tune import tune_from_source
    store.declare("one", ["a", "b"], ["x"])
    for dev, speed in (("src", 1.0), ("tgt", 2.0)):
        store.put_device(dev, {"speed": {"value": speed, "unit": "", "source": "datasheet"}})
    store.put_rows("one", "src", [TrainingRow(f"x{x}", {"x": float(x)}, {"a": float(x), "b": 10.0})
                                  for x in range(1, 21)])
    model = tune_from_source(store, "one", ["a", "b"], ["x"], target="tgt", progress=False)
    c = model.provenance["confidence"]
    assert c["held_out"] == {} and np.isclose(c["predicted_quality"], c["self_estimate"])
    assert c["level"] == "low" and c["advice"]
    assert store.model("one", "tgt")["kind"] == "kernel"
