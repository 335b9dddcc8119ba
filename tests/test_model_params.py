"""Plain-Python checking of model parameters (nitro.model_params): the flat layouts the compiled
evaluator is built from, and refusals as strict as the NumPy path needs, naming the problem."""
import copy
import math

import numpy as np
import pytest

from nitro.model import SelectorModel
from nitro.model_params import flat_params, matrix

TREE = {"children_left": [1, -1, -1], "children_right": [2, -1, -1], "feature": [1, -1, -1],
        "threshold": [0.5, 0.0, 0.0], "value": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]}
KERNEL = {"mean": [0.0, 1.0], "scale": [1.0, 2.0], "gamma": 0.5, "centers": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
          "weights": [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], "offset": [0.0, 0.1]}
SVC = {"log_mask": [True, False, True], "mean": [0.0, 0.0, 1.0], "scale": [1.0, 1.0, 1.0], "gamma": 0.3,
       "support_vectors": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], "n_support": [2, 1],
       "dual_coef": [[0.5, -0.5, 1.0]], "intercept": [0.2]}
GBT = {"trees": [{**TREE, "value": [0.1, 0.2, 0.3]},
                 {"children_left": [-1], "children_right": [-1], "feature": [-1], "threshold": [0.0], "value": [0.4]}],
       "learning_rate": 0.1, "init": 0.5, "variant_codes": [[1.0, 0.0], [0.0, 1.0]]}
LINEAR = {"log_mask": [True, False], "mean": [0.0, 1.0], "scale": [1.0, 2.0], "coef": [[1.0, -1.0], [0.5, 0.5]],
          "intercept": [0.0, 0.1], "choose": "min"}
INTERVALS = {"feature": 1, "thresholds": [1.0, 10.0], "labels": [0, 1, 0]}


def test_matrices_are_flattened_row_major_and_checked_rectangular():
    assert matrix([[1, 2, 3], [4, 5, 6]]) == ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3)
    assert matrix(np.arange(6.0).reshape(3, 2), cols=2, rows=3) == ([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], 3, 2)
    assert matrix([[1, 2], [3]]) is None and matrix([[1, 2]], cols=3) is None and matrix([[1, 2]], rows=2) is None


def test_flat_layouts_of_the_compiled_evaluator():
    k = flat_params("kernel", KERNEL, 2, 0, 2)
    assert k["centers"] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0] and k["weights"] == [1.0, 0.0, 0.0, 1.0, 0.5, 0.5]
    s = flat_params("svc", SVC, 2, 1, 2)
    assert s["sv"] == [float(v) for v in range(1, 10)] and s["dual_coef"] == [0.5, -0.5, 1.0]
    t = flat_params("tree", TREE, 2, 0, 2)
    assert t["n_trees"] == 1 and t["f"] == [1, 0, 0] and t["v"] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    g = flat_params("gbt", GBT, 2, 0, 2)     # trees padded to the largest: leaves (-1) and zeros
    assert g["n_trees"] == 2 and g["cl"] == [1, -1, -1, -1, -1, -1] and g["f"] == [1, 0, 0, 0, 0, 0]
    assert g["v"] == [0.1, 0.2, 0.3, 0.4, 0.0, 0.0] and g["codes"] == [1.0, 0.0, 0.0, 1.0] and g["n_variants"] == 2
    assert flat_params("linear", LINEAR, 2, 0, 2)["choose_max"] is False
    assert g["starts"] == [] and flat_params("gbt", {**GBT, "variant_trees": [1, 1]}, 2, 0, 2)["starts"] == [0, 1, 2]


def test_numpy_arrays_are_taken_as_their_lists():
    as_arrays = {key: np.asarray(v) if isinstance(v, list) else v for key, v in KERNEL.items()}
    assert flat_params("kernel", as_arrays, 2, 0, 2) == flat_params("kernel", KERNEL, 2, 0, 2)


def _broken(params, path, value):
    p = copy.deepcopy(params)
    *keys, last = path
    target = p
    for key in keys:
        target = target[key]
    target[last] = value
    return p


@pytest.mark.parametrize("kind, params, path, value, message", [
    ("kernel", KERNEL, ["centers", 1], [3.0], "inconsistent shapes"),              # ragged
    ("kernel", KERNEL, ["weights"], [[1.0, 0.0]], "inconsistent shapes"),          # a row per centre
    ("kernel", KERNEL, ["centers"], [], "inconsistent shapes"),
    ("kernel", KERNEL, ["weights", 2, 0], math.nan, "not all finite"),
    ("kernel", KERNEL, ["gamma"], math.inf, "not all finite"),
    ("svc", SVC, ["n_support"], [1, 1], "inconsistent shapes"),
    ("svc", SVC, ["dual_coef"], [[0.5, -0.5]], "inconsistent shapes"),
    ("svc", SVC, ["log_mask"], [True], "inconsistent shapes"),
    ("svc", SVC, ["support_vectors", 0, 2], math.inf, "not all finite"),
    ("svc", SVC, ["gamma"], math.nan, "not all finite"),                       # not a shape
    ("svc", SVC, ["gamma"], math.inf, "not all finite"),
    ("tree", TREE, ["children_left", 0], 0, "children"),                           # a cycle
    ("tree", TREE, ["feature", 0], 5, "features"),
    ("tree", TREE, ["value", 2], [5.0], "values"),
    ("tree", TREE, ["threshold", 0], math.nan, "values"),
    ("gbt", GBT, ["variant_codes"], [[1.0, 0.0]], "one finite row per variant"),
    ("gbt", GBT, ["init"], math.nan, "finite learning_rate and init"),
    ("gbt", GBT, ["trees", 1, "value"], [0.4, 0.5], "inconsistent"),
    ("gbt", GBT, ["variant_trees"], [2], "2 tree counts summing to the 2 trees"),
    ("gbt", GBT, ["variant_trees"], [1, 2], "2 tree counts summing to the 2 trees"),
    ("linear", LINEAR, ["coef", 1], [0.5], "inconsistent shapes"),
    ("linear", LINEAR, ["intercept", 0], math.inf, "not finite"),
    ("intervals", INTERVALS, ["thresholds"], [10.0, 1.0], "ascending"),
    ("intervals", INTERVALS, ["labels"], [0, 1], "one more label"),
    ("kernel", KERNEL, ["signed_log"], False, "signed_log must be true"),
    ("kernel", KERNEL, ["scale", 1], 0.0, "kernel model scale must be positive"),
    ("svc", SVC, ["scale", 0], 0.0, "svc model scale must be positive"),       # a division by zero
    ("svc", SVC, ["n_support"], [-1, 4], "n_support must count support vectors"),   # its sum still right
    ("linear", LINEAR, ["scale", 0], -1.0, "linear model scale must be positive"),
    ("svc", SVC, ["gamma"], -1e6, "svc model gamma must be 0 or more"),
    ("kernel", KERNEL, ["gamma"], -0.5, "kernel model gamma must be 0 or more"),
    # a parameter this nitro does not know: a newer nitro's, whose meaning would be dropped
    ("kernel", KERNEL, ["bias"], [1.0], "kernel model parameter 'bias' is unknown to this nitro: .*upgrade nitro"),
    ("svc", SVC, ["unit_v2"], [1.0], "svc model parameter 'unit_v2' is unknown"),
    ("tree", TREE, ["missing_go_left"], [True], "tree model parameter 'missing_go_left' is unknown"),
    ("gbt", GBT, ["trees", 0, "missing_go_left"], [True], "tree parameter 'missing_go_left' is unknown"),
    ("gbt", GBT, ["trees", 0], [1, 2], "tree parameters must be an object"),
    ("linear", LINEAR, ["offset"], 1.0, "linear model parameter 'offset' is unknown"),
    ("intervals", INTERVALS, ["side"], "left", "intervals model parameter 'side' is unknown"),
])
def test_malformed_parameters_are_refused_naming_the_problem(kind, params, path, value, message):
    bad = _broken(params, path, value)
    d_in, d_dev = (2, 1) if kind == "svc" else (2, 0)
    with pytest.raises(ValueError, match=message):
        flat_params(kind, bad, d_in, d_dev, 2)
    data = SelectorModel(["u", "v"], ["a", "b"], kind, bad, device_features={"dev": 1.0} if d_dev else {}).to_dict()
    with pytest.raises(ValueError, match=f"malformed {kind} model"):
        SelectorModel.from_dict(data)


def test_a_model_built_without_validation_is_checked_when_compiled():
    model = SelectorModel(["u", "v"], ["a", "b"], "kernel", _broken(KERNEL, ["offset"], [0.0]))
    with pytest.raises(ValueError, match="inconsistent shapes"):
        model.compiled()
