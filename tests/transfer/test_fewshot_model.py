"""The few-shot model (nitro.transfer.fewshot_model): the zero-shot kernel model corrected by a
few target inputs, or boosted trees from TREES_FROM inputs on, and its quality measured on the
target's timed inputs."""
import numpy as np

from nitro.evaluate import split
from nitro.metrics import fraction_of_optimum
from nitro.online import zero_shot_model
from nitro.transfer.data import TransferData
from nitro.transfer.fewshot import pick_inputs
from nitro.transfer.fewshot_model import (TREES_FROM, cross_validated_quality, cross_validated_score,
                                         cross_validation_folds, fit_few_shot, fold_choices, learner_for)
from nitro.transfer.prepare import Prepared


def _odd(odd_target):
    data = TransferData.from_measurements(odd_target(n_inputs=200))
    t, sources = data.device_index("odd"), [data.device_index(d) for d in ("dev0", "dev1", "dev2", "dev3")]
    train, test = np.arange(0, 200, 2), np.arange(1, 200, 2)
    prep = Prepared.build(data, sources, train, extra_devices=[t])
    return data, t, sources, train, test, prep, zero_shot_model(data, sources, train, t, prep=prep)


def test_few_timed_inputs_correct_the_zero_shot_model_and_more_fit_trees(odd_target):
    """Below TREES_FROM timed inputs the few-shot model is the zero-shot kernel model corrected
    by them (still a kernel expansion), from TREES_FROM on boosted trees; on a target whose
    behaviour no source shows both beat the zero-shot model."""
    data, t, sources, train, test, prep, zero = _odd(odd_target)
    assert learner_for(TREES_FROM - 1) == "correction" and learner_for(TREES_FROM) == "trees"
    score = lambda model: fraction_of_optimum(data.times[t, test], model.predict_index(data.X[test]))  # noqa: E731
    for n, kind in ((3, "kernel"), (TREES_FROM + 2, "gbt")):
        picks = train[pick_inputs(prep.X[train], n)]
        model = fit_few_shot(zero, data, sources, prep.train, t, data.X[picks], data.times[t, picks], prep.features)
        assert model.kind == kind and model.variants == list(data.variants)
        assert score(model) > score(zero) + 0.05
    assert model.device_features == {"speed": float(data.D[t, prep.features[0]])}


def test_a_variant_that_failed_on_a_timed_input_is_its_worst_choice_for_the_correction(odd_target):
    """The target's rows time every variant; one that failed there (NaN) counts as a fraction 0
    of the optimum, not as a variant that did not run."""
    data, t, sources, train, test, prep, zero = _odd(odd_target)
    picks = train[pick_inputs(prep.X[train], 3)]
    times = data.times[t, picks].copy()
    chosen = zero.predict_index(data.X[picks])
    times[np.arange(3), chosen] = np.nan
    model = fit_few_shot(zero, data, sources, prep.train, t, data.X[picks], times, prep.features)
    assert model.kind == "kernel"
    assert (model.scores(data.X[picks])[np.arange(3), chosen] < zero.scores(data.X[picks])[np.arange(3), chosen]).all()


def test_cross_validated_quality_measures_the_few_shot_model_on_the_targets_timed_inputs(odd_target):
    """Each timed input is chosen for by the same learner fitted without it: on a target no
    source is like, 20 timed inputs measure the few-shot model near its quality on the other
    inputs, and the standard error says how near; fewer than TREES_FROM inputs give no estimate."""
    data, t, sources, train, test, prep, zero = _odd(odd_target)
    picks = train[::5]
    est = cross_validated_quality(zero, data, sources, prep.train, t, data.X[picks], data.times[t, picks],
                                  prep.features)
    assert est["inputs"] == 20 and est["folds"] == 5 and est["learner"] == "trees" and 0.0 <= est["stderr"] < 0.1
    model = fit_few_shot(zero, data, sources, prep.train, t, data.X[picks], data.times[t, picks], prep.features)
    measured = fraction_of_optimum(data.times[t, test], model.predict_index(data.X[test]))
    assert abs(est["quality"] - measured) < max(0.05, 3 * est["stderr"])
    times = data.times[t, picks[:3]].copy()
    times[0] = np.nan                                      # an input where nothing ran does not count
    assert cross_validated_quality(zero, data, sources, prep.train, t, data.X[picks[:3]], times, prep.features) is None
    # below TREES_FROM inputs no figure (three right choices read as 100 ± 0); from it, the trees, 5 folds
    few = picks[:TREES_FROM]
    assert cross_validated_quality(zero, data, sources, prep.train, t, data.X[few[:-1]], data.times[t, few[:-1]],
                                   prep.features) is None
    six = cross_validated_quality(zero, data, sources, prep.train, t, data.X[few], data.times[t, few], prep.features)
    assert six["folds"] == 5 and six["inputs"] == TREES_FROM and six["learner"] == "trees"
    # its steps, as nitro evaluate runs each fold as a task of its own, give the same result
    ok, splits = cross_validation_folds(data.times[t, picks])
    choices = [fold_choices(zero, data, sources, prep.train, t, data.X[picks], data.times[t, picks], prep.features,
                            ok, fit, held) for fit, held in reversed(splits)][::-1]
    assert cross_validated_score(data.times[t, picks], ok, splits, choices) == est
    assert cross_validation_folds(data.times[t, few[:-1]]) is None


def test_on_nitros_own_spmv_data_a_few_inputs_keep_a_right_zero_shot_model(own_cpu_recordings):
    """nitro's SpMV data, the 16-core Intel host predicted from the four AMD VMs: the zero-shot
    model is right there (99.6%), and 1-5 inputs timed on the host keep it so (trees fitted on
    them had lost up to 6 points)."""
    data, idx, _, train, test, _ = split(own_cpu_recordings("spmv"), seed=0)
    t = data.device_index("cpu_intel_r_xeon_r_processor_family6_model207_16t")
    sources = [i for i in idx if i != t]
    prep = Prepared.build(data, sources, train, extra_devices=[t])
    zero = zero_shot_model(data, sources, train, t, prep=prep)
    score = lambda model: fraction_of_optimum(data.times[t, test], model.predict_index(data.X[test]))  # noqa: E731
    assert score(zero) > 0.99
    for n in range(1, TREES_FROM):
        picks = train[pick_inputs(prep.X[train], n)]
        model = fit_few_shot(zero, data, sources, prep.train, t, data.X[picks], data.times[t, picks], prep.features)
        assert score(model) > score(zero) - 0.005


def test_a_wrong_choice_costs_the_mean_loss_of_the_variants_other_than_the_fastest():
    """What a wrong choice costs on the target is read from its timed inputs: per input the
    variants other than the fastest lose 1 − t_best/t_v (a failed one all of it), averaged; the
    cross-validated figure carries it, so that a handful of right choices is not read as sure."""
    from nitro.metrics import speedup_vs_best
    from nitro.transfer.fewshot_model import wrong_choice_loss
    times = np.array([[1.0, 2.0, 4.0], [3.0, 1.0, np.nan]])
    assert np.isclose(wrong_choice_loss(speedup_vs_best(times)), np.mean([(0.5 + 0.75) / 2, (2 / 3 + 1.0) / 2]))
    assert wrong_choice_loss(speedup_vs_best(times[:, :1])) == 0.0
    ok = np.arange(6)
    splits = [(np.arange(1, 6), np.array([0])), (np.arange(0, 1), np.arange(1, 6))]
    T = np.tile(times[:1], (6, 1))
    score = cross_validated_score(T, ok, splits, [np.array([0]), np.zeros(5, dtype=int)])
    assert score["quality"] == 1.0 and score["stderr"] == 0.0 and np.isclose(score["wrong_choice_loss"], 0.625)
