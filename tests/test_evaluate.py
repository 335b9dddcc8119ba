import numpy as np
import pandas as pd
import pytest

from nitro.dataset import Measurements, load_dataset_dir
from nitro.evaluate import evaluate, evaluate_splits, format_evaluation, split


@pytest.mark.dataset
def test_leave_one_gpu_out_on_the_shared_spmv_data(spmv_dataset):
    r = evaluate(load_dataset_dir(spmv_dataset), methods=["random", "majority", "full_set_svm", "cvdfs"], n_jobs=2)
    assert r["variants"] == ["coo", "csr", "ell", "sellp"] and len(r["devices"]) == 8
    assert r["n_train"] + r["n_test"] == 2138
    assert r["cross_kind_devices"] == ["xeon_gold_6230"]
    assert r["mean"]["random"] < r["mean"]["majority"] < r["mean"]["cvdfs"]
    assert r["mean"]["cvdfs"] >= r["mean"]["full_set_svm"]
    assert all(d["cvdfs"]["seconds"] < 60 for d in r["details"].values())
    assert r["analysis"]["architecture_sensitivity"]["any_pair_differs"] > 0.5


def test_best_source_ceiling_is_the_best_sources_own_fastest_variants():
    """Hand-computed: each target's test inputs run the variant that was fastest on one
    source; the ceiling is the best such source's mean t_best / t_selected."""
    rng = np.random.default_rng(3)
    devices, inputs, variants = [f"dev{i}" for i in range(5)], [f"in{i}" for i in range(40)], ["a", "b", "c"]
    times = pd.DataFrame(rng.uniform(1.0, 3.0, (len(devices) * len(inputs), 3)), columns=variants,
                         index=pd.MultiIndex.from_product([devices, inputs], names=["device", "input"]))
    feats = pd.DataFrame({"size": rng.uniform(1, 100, len(inputs))}, index=inputs)
    dev_feats = pd.DataFrame({"cores": rng.uniform(1, 100, len(devices))}, index=devices)
    m = Measurements(times, feats, dev_feats)
    r = evaluate(m, methods=["best_source_hindsight"])
    data, idx, _, _, test, _ = split(m)
    rows = np.arange(len(test))
    for t in idx:
        T = data.times[t, test]
        manual = max(np.mean(T.min(axis=1) / T[rows, data.times[s, test].argmin(axis=1)]) for s in idx if s != t)
        assert np.isclose(r["targets"][data.devices[t]]["best_source_hindsight"], 100 * manual)


def test_holdout_by_family_leaves_the_whole_family_out_of_the_sources(family_measurements):
    m, family = family_measurements()
    r = evaluate(m, methods=["majority", "cvdfs", "trained_on_target"], holdout_by="arch", max_size=1)
    assert r["holdout_by"] == "arch" and r["families"] == family
    # a family's behaviour that no source shows cannot be learnt zero-shot, only on the target
    for d in ("dev4", "dev5"):
        assert r["targets"][d]["cvdfs"] < 95 <= r["targets"][d]["trained_on_target"]
    assert r["calibration"]["targets"] == 6
    for d, c in r["calibration"]["predicted"].items():
        conf = r["details"][d]["cvdfs"]["confidence"]
        assert np.isclose(c, 50 * (conf["self_estimate"] + conf["held_out_quality"]))
    loo = evaluate(m, methods=["cvdfs"], max_size=1)
    assert loo["targets"]["dev4"]["cvdfs"] > r["targets"]["dev4"]["cvdfs"]   # its sibling helps


def test_the_chances_of_trailing_a_baseline_are_scored_against_where_the_model_fell_below_it(family_measurements):
    """Beside the cautious ``may_trail`` names, each target's chance of falling below a baseline
    is summed and scored (Brier) against the targets where the ensemble measured below it."""
    m, _ = family_measurements()
    r = evaluate(m, methods=["majority", "full_set_svm", "best_source_hindsight", "cvdfs"], max_size=1)
    trail = r["calibration"]["trail"]
    assert set(trail) == {"best_single_source", "majority", "full_set_svm"}
    method = {"best_single_source": "best_source_hindsight", "majority": "majority", "full_set_svm": "full_set_svm"}
    for name, t in trail.items():
        conf = {d: r["details"][d]["cvdfs"]["confidence"] for d in r["targets"]}
        fell = {d: res["cvdfs"] < res[method[name]] for d, res in r["targets"].items()}
        chance = {d: c["baselines"][name]["chance_below"] for d, c in conf.items()}
        assert t["targets"] == len(r["targets"]) and t["fell_below"] == sum(fell.values())
        assert t["named"] == sum(name in c["may_trail"] for c in conf.values())
        assert np.isclose(t["expected"], sum(chance.values()))
        assert np.isclose(t["brier"], np.mean([(chance[d] - fell[d]) ** 2 for d in fell]))
        assert all(0.0 <= p <= 1.0 for p in chance.values())
    assert "chances summed" in format_evaluation(r)
    assert "trail" not in evaluate(m, methods=["cvdfs"], max_size=1)["calibration"]   # nothing to score against


def test_few_shot_is_cross_validated_on_its_timed_inputs_and_compared_with_its_measured_quality(family_measurements):
    """The few-shot model at the count a low estimate advises (2% of the training inputs, at least
    6, and as many as could vouch for 90% where a wrong choice costs what it costs the sources) is
    also scored where it was timed, each input chosen for by the same learner fitted without it:
    the estimate a user gets before anything else runs on the target, with its verdict."""
    from nitro.transfer.confidence import few_shot_count
    m, _ = family_measurements(n_inputs=600)          # 300 training inputs, 2%: 6
    r = evaluate(m, methods=["few_shot"], holdout_by="arch")
    few = r["few_shot_calibration"]
    assert few["budget"] == 0.02 and few["min_inputs"] == 6 and few["targets"] == 6
    assert set(few["predicted"]) == set(r["targets"]) == set(few["levels"])
    for d, predicted in few["predicted"].items():
        cv = r["details"][d]["few_shot_advised"]["cross_validated"]
        loss = r["details"][d]["few_shot_advised"]["sources_wrong_choice_loss"]
        assert few["inputs"][d] == cv["inputs"] == few_shot_count(300, loss) and cv["folds"] == 5
        assert cv["learner"] == "trees"
        assert np.isclose(predicted, 100 * cv["quality"]) and few["levels"][d] == cv["level"]
    assert few["within_3_points"] == sum(abs(few["predicted"][d] - few["measured"][d]) <= 3 for d in r["targets"])
    said = format_evaluation(r)
    assert "predicted (few-shot advised, CV)" in said
    # the figure it is judged against is shown too (before, only the JSON had it)
    devs = list(r["targets"]) + list(r["cross_kind"])
    row = next(line for line in said.splitlines() if line.startswith("measured (few-shot advised)"))
    assert row.split()[3:] == [f"{few['measured'][d]:.1f}" for d in devs]
    unsure = [d for d, level in few["levels"].items() if level == "uncertain"]
    assert ("few-shot estimate 'uncertain'" in said) == bool(unsure)
    gone = dict(few["predicted"])
    gone.pop(next(iter(gone)))                        # a target with too few timed inputs: no figure, said so
    assert "—: fewer than 6 inputs timed" in format_evaluation({**r, "few_shot_calibration": {**few, "predicted": gone}})
    # 60 inputs, 30 for training: 2% would be one input, too few for any figure (before, none was
    # given); the advised count is timed and cross-validated as a user of tune_from_source gets it
    small = evaluate(family_measurements()[0], methods=["few_shot"], holdout_by="arch")
    sf = small["few_shot_calibration"]
    assert sf["targets"] == 6 and all(6 <= n <= 30 for n in sf["inputs"].values())
    for d in sf["predicted"]:
        assert small["details"][d]["few_shot_advised"]["measured"] == sf["measured"][d]
    assert "predicted (few-shot advised, CV)" in format_evaluation(small)


def test_leaving_one_device_out_a_device_alone_in_its_family_is_validated_as_tune_from_source_does(family_measurements):
    """dev4 is left alone in family ``new`` (dev5, which behaves as it does, is called ``mid``):
    held out alone, its family is new to the sources, so CV-DFS validates without each source's
    family (``mid`` without dev5 fails on it) and the estimate reads it as a new family
    ("uncertain", listed apart from "low"); a device
    whose sibling is a source, or any device without ``arch``, is validated one source at a time."""
    m, family = family_measurements()
    m.devices.loc["dev5", "arch"] = "mid"
    r = evaluate(m, methods=["cvdfs"], max_size=1)
    grouped = {d: r["details"][d]["cvdfs"]["validated_without_family"] for d in family}
    assert grouped == {d: d == "dev4" for d in family}
    confidence = r["details"]["dev4"]["cvdfs"]["confidence"]
    assert confidence["held_out_worst"] < 0.9 and confidence["level"] == "uncertain"
    assert any("a family no source shares" in why for why in confidence["low_because"])
    assert "\n  dev4: " in format_evaluation(r) and "a family no source shares" in format_evaluation(r)
    assert "'uncertain' (a family no source shares: a check advised) on: dev4" in format_evaluation(r)
    plain = evaluate(Measurements(m.times, m.inputs, m.devices.drop(columns="arch")), methods=["cvdfs"], max_size=1)
    assert not any(plain["details"][d]["cvdfs"]["validated_without_family"] for d in family)


def test_a_family_that_leaves_too_few_sources_is_skipped_with_a_note(family_measurements):
    """Held out, family ``old`` (four devices) leaves two sources, too few for CV-DFS: its devices
    are not evaluated and the note says why; one family for every device is an error."""
    m, family = family_measurements()
    m.devices["arch"] = ["old"] * 4 + ["new"] * 2
    r = evaluate(m, methods=["majority", "cvdfs"], holdout_by="arch", max_size=1)
    assert set(r["targets"]) == {"dev4", "dev5"}
    assert "not evaluated: dev0, dev1, dev2, dev3 (holding out arch 'old' leaves 2 source devices; " \
           "cross-device methods need 3)" in r["notes"]
    m.devices["arch"] = "one"
    with pytest.raises(ValueError, match="leaves fewer than 3 source devices for every target.*--holdout-by device"):
        evaluate(m, methods=["cvdfs"], holdout_by="arch")


def test_a_device_without_a_family_is_a_family_of_its_own_and_said_so(family_measurements):
    m, _ = family_measurements()
    m.devices.loc["dev5", "arch"] = None
    r = evaluate(m, methods=["cvdfs"], max_size=1)
    assert "arch unknown on dev5: each is a family of its own" in r["notes"]
    assert r["details"]["dev4"]["cvdfs"]["validated_without_family"]     # dev5 does not count as its sibling


def test_too_few_devices_are_refused_with_what_an_evaluation_needs(family_measurements):
    m, _ = family_measurements()
    for holdout_by in ("device", "arch"):
        with pytest.raises(ValueError, match=r"needs at least 4 devices of one kind \(a target and 3 or more "
                                             r"sources\), got \['dev0', 'dev1', 'dev2'\]"):
            evaluate(m, devices=["dev0", "dev1", "dev2"], methods=["cvdfs"], holdout_by=holdout_by)


def test_devices_without_numeric_features_or_alike_in_all_of_them_are_said_so(family_measurements):
    m, _ = family_measurements()
    with pytest.raises(ValueError, match="devices.csv has no numeric device-feature column .*device, arch"):
        split(Measurements(m.times, m.inputs, m.devices[["arch"]]))
    *_, notes = split(Measurements(m.times, m.inputs, m.devices.assign(cores=8.0)))
    assert "no device feature differs between the devices: cross-device models see them all alike" in notes


def test_few_shot_budgets_that_time_the_same_inputs_are_said_so():
    from nitro.evaluate import _few_shot_budget_note
    assert _few_shot_budget_note(1200) == []
    below = " (below 6 the few-shot model is the zero-shot one corrected by them, not trees)"
    assert _few_shot_budget_note(30) == ["few-shot budgets in inputs timed on the target, of 30 training inputs: "
                                         "0.5%: 1, 1%: 1, 2%: 1, 5%: 2, 10%: 3" + below]
    assert _few_shot_budget_note(600) == ["few-shot budgets in inputs timed on the target, of 600 training inputs: "
                                          "0.5%: 3, 1%: 6, 2%: 12, 5%: 30, 10%: 60" + below]
    assert _few_shot_budget_note(1069)[0].endswith("0.5%: 5, 1%: 11, 2%: 21, 5%: 53, 10%: 107" + below)


def test_holdout_by_an_unknown_column_names_the_known_ones(family_measurements):
    m, _ = family_measurements()
    with pytest.raises(ValueError, match="no such column; metadata columns: .*arch.*numeric ones: .*cores"):
        evaluate(m, methods=["cvdfs"], holdout_by="generation")


def test_holdout_by_a_numeric_column_groups_the_devices_by_its_values(family_measurements):
    """A family given as a number (a compute capability, 7.0 and 7 alike) holds out as a text one does."""
    m, family = family_measurements()
    code = {"old": 3.0, "mid": 7, "new": 9.0}
    m.devices["sm"] = [code[family[d]] for d in m.devices.index]
    assert "sm" in m.device_feature_names
    by_number = evaluate(m, methods=["majority", "cvdfs"], holdout_by="sm", max_size=1)
    by_text = evaluate(m, methods=["majority", "cvdfs"], holdout_by="arch", max_size=1)
    assert by_number["families"] == {d: f"{code[f]:g}" for d, f in family.items()}
    assert by_number["targets"] == by_text["targets"]


def test_what_the_split_leaves_out_is_said_and_never_scored_as_a_failure(family_measurements):
    """A measured device without features, a cross-kind device that never ran a variant and
    inputs not timed everywhere are left out with a note; kinds tied in number are an error."""
    m, _ = family_measurements()
    cpu = m.times.xs("dev0", level=0, drop_level=False).rename(index={"dev0": "cpu0"}).assign(b=np.nan)
    ghost = m.times.xs("dev1", level=0, drop_level=False).rename(index={"dev1": "ghost"})
    times = pd.concat([m.times, cpu, ghost]).drop(("dev2", "in7"))
    devices = pd.concat([m.devices.assign(kind="gpu", l2=[1.0, 2.0, np.nan, 4.0, 5.0, 6.0], none=np.nan),
                         pd.DataFrame({"cores": [8.0], "kind": ["cpu"], "l2": [3.0]}, index=["cpu0"])])
    data, idx, others, train, test, notes = split(Measurements(times, m.inputs, devices))
    assert notes == ["left out ghost: measured, but devices.csv has no row for it",
                     "cross-kind cpu0 not scored: never timed b",
                     "device feature l2 unknown on dev2: not used where that device is involved",
                     "device feature none is empty on every device: not used",
                     "59 of 60 inputs are timed for every variant on every device and evaluated; the others are left "
                     "out (inputs without a time somewhere, by variant: a on 1, b on 1; a variant that fails on many "
                     "inputs is better left out with --variants, or excluded there by a constraint)"]
    assert others == [] and "ghost" not in data.devices and len(idx) == 6 and len(train) + len(test) == 59
    # features unknown on the same devices share one note; one given only on a device left out is not
    # "empty on every device"
    wide = devices.assign(l3=devices["l2"], smem=np.nan, gpu_only=np.nan)
    wide.loc["cpu0", "gpu_only"] = 7.0
    notes = split(Measurements(times, m.inputs, wide))[5]
    assert "device features l2, l3 unknown on dev2: not used where that device is involved" in notes
    assert "device features none, smem are empty on every device: not used" in notes
    assert "device feature gpu_only is empty on every evaluated device: not used" in notes
    tied = devices.assign(kind=["gpu", "gpu", "gpu", "cpu", "cpu", "cpu", "cpu"]).drop("cpu0")
    with pytest.raises(ValueError, match="'kind' splits the devices evenly"):
        split(Measurements(m.times, m.inputs, tied))



def test_targets_of_one_kind_decide_between_kinds_tied_in_number(family_measurements):
    """Four GPUs and four CPUs: without targets the largest kind is ambiguous (an error naming
    --targets); targets of one kind make that kind the main group, the other kind cross-kind."""
    m, _ = family_measurements()
    copies = m.times.loc[["dev0", "dev1"]].rename(index={"dev0": "dev6", "dev1": "dev7"})
    times = pd.concat([m.times, copies])
    devices = pd.concat([m.devices, pd.DataFrame({"cores": [14.0, 60.0], "arch": ["old", "mid"]},
                                                 index=["dev6", "dev7"])])
    devices["kind"] = ["gpu"] * 4 + ["cpu"] * 4
    tied = Measurements(times, m.inputs, devices)
    with pytest.raises(ValueError, match="splits the devices evenly .*--targets"):
        split(tied)
    with pytest.raises(ValueError, match="splits the devices evenly"):
        split(tied, targets=["dev1", "dev5"])
    data, idx, others, *_ = split(tied, targets=["dev5"])
    assert sorted(data.devices[i] for i in idx) == ["dev4", "dev5", "dev6", "dev7"]
    assert others == ["dev0", "dev1", "dev2", "dev3"]
    result = evaluate(tied, methods=["random"], targets=["dev5"])
    assert list(result["targets"]) == ["dev5"]


def test_full_set_svm_leaves_out_a_device_feature_constant_over_the_sources():
    """Held out by family, the new family alone has another ``smem`` (the sources 48 or 49 KB):
    the sources cannot show its effect, and the baseline must not read it as a distance from
    every source (which shrinks its kernel to nothing and leaves one constant choice)."""
    rng = np.random.default_rng(0)
    devices, inputs = [f"dev{i}" for i in range(6)], [f"in{i}" for i in range(80)]
    size = rng.uniform(1, 1000, len(inputs))
    rows = [[(1.0 if s < 500 else 2.0) * rng.uniform(0.95, 1.05), 1.5 * rng.uniform(0.95, 1.05)]
            for _ in devices for s in size]
    times = pd.DataFrame(rows, columns=["a", "b"],
                         index=pd.MultiIndex.from_product([devices, inputs], names=["device", "input"]))
    dev = pd.DataFrame({"cores": [10.0, 12, 40, 44, 20, 30], "smem": [48.0, 48, 48, 49, 64, 64],
                        "arch": ["old", "old", "mid", "mid", "new", "new"]}, index=devices)
    m = Measurements(times, pd.DataFrame({"size": size}, index=inputs), dev)
    r = evaluate(m, methods=["full_set_svm"], holdout_by="arch")
    for d in ("dev4", "dev5"):
        assert r["targets"][d]["full_set_svm"] > 95


def test_evaluating_over_splits_reports_each_split_and_their_spread(capsys, family_measurements):
    from nitro.cli import main
    from nitro.evaluate import evaluate_splits, format_splits
    m, _ = family_measurements()
    r = evaluate_splits(m, [0, 1, 2], methods=["majority", "cvdfs"], max_size=1)
    single = [evaluate(m, seed=s, methods=["majority", "cvdfs"], max_size=1) for s in (0, 1, 2)]
    for n in ("majority", "cvdfs"):
        v = r["summary"][n]
        assert v["mean_per_split"] == [x["mean"][n] for x in single]
        assert np.isclose(v["mean"], np.mean(v["mean_per_split"])) and v["sd"] > 0
        assert v["worst"] == min(x["min"][n] for x in single)
    assert [c["targets"] for c in r["calibration"]] == [6, 6, 6] and r["few_shot_calibration"] == [{}, {}, {}]
    assert "seed 2" in format_splits(r) and "± " in format_splits(r) and "few-shot at" not in format_splits(r)   # not run
    few = evaluate_splits(family_measurements(n_inputs=600)[0], [0, 1], methods=["few_shot"])   # 2%: 6 inputs
    assert [c["targets"] for c in few["few_shot_calibration"]] == [6, 6] and "(few-shot at the advised count, cross-validated)" in format_splits(few)
    with pytest.raises(ValueError, match="two or more different seeds"):
        evaluate_splits(m, [1, 1], methods=["cvdfs"])
    with pytest.raises(ValueError, match="not the side-by-side selector comparison"):
        evaluate_splits(m, [0, 1], methods=["svm"])
    assert main(["evaluate", "/nonexistent", "--seeds", "0,1", "--online"]) == 2
    assert "give --seed, not --seeds" in capsys.readouterr().err


def test_a_time_weight_reaches_the_kernel_models_and_the_report(family_measurements):
    m, _ = family_measurements()
    plain = evaluate(m, methods=["full_set"], max_size=1)
    weighted = evaluate(m, methods=["full_set"], max_size=1, time_weight=1.0)
    assert plain["time_weight"] == 0.0 and weighted["time_weight"] == 1.0
    assert "weighted by their time^1" in format_evaluation(weighted)
    assert "weighted by their time" not in format_evaluation(plain)
    with pytest.raises(ValueError, match="time_weight must be a finite number >= 0"):
        evaluate(m, methods=["full_set"], time_weight=-0.5)


def test_devices_that_timed_different_inputs_are_each_scored_on_their_own():
    """Machines that recorded separately time different inputs: with few inputs timed on every
    device, each target is scored on the test inputs it timed, the sources learn from the
    training inputs they timed, and few-shot asks the target only for inputs it timed."""
    rng = np.random.default_rng(4)
    devices, inputs, variants = [f"dev{i}" for i in range(5)], [f"in{i}" for i in range(160)], ["a", "b", "c"]
    size = rng.uniform(1, 100, len(inputs))
    cores = np.array([8.0, 16.0, 32.0, 64.0, 128.0])
    rows, index = [], []
    for d, c in zip(devices, cores):
        for i in rng.choice(len(inputs), size=90, replace=False):      # each its own 90 of 160
            rows.append([size[i] / c + 1.0, size[i] / 50 + 0.5, 2.0 * rng.uniform(0.9, 1.1)])
            index.append((d, inputs[i]))
    times = pd.DataFrame(rows, columns=variants, index=pd.MultiIndex.from_tuples(index, names=["device", "input"]))
    m = Measurements(times, pd.DataFrame({"size": size}, index=inputs), pd.DataFrame({"cores": cores}, index=devices))
    data, idx, _, train, test, notes = split(m)
    assert len(data.complete_inputs(idx)) < 20 and len(train) + len(test) == len(data.complete_inputs(idx, some=True))
    assert any("each target is scored on the test inputs it timed" in n for n in notes)
    r = evaluate(m, methods=["majority", "cvdfs", "few_shot", "best_source_hindsight"], max_size=1)
    for d in devices:
        assert all(0.0 < v <= 100.0 for v in r["targets"][d].values()), r["targets"][d]
        assert {"majority", "cvdfs", "few_shot_2pct", "best_source_hindsight"} <= set(r["targets"][d])


def test_the_on_device_fits_before_the_first_target_show_their_progress(monkeypatch):
    """Every device's on-device SVM is fitted before the first target (minutes on 12 devices ×
    20,000 inputs, with nothing shown): on a terminal they have a bar of their own."""
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    rng = np.random.default_rng(0)
    devices, inputs = [f"dev{i}" for i in range(4)], [f"in{i}" for i in range(30)]
    times = pd.DataFrame(rng.uniform(1.0, 3.0, (len(devices) * len(inputs), 2)), columns=["a", "b"],
                         index=pd.MultiIndex.from_product([devices, inputs], names=["device", "input"]))
    m = Measurements(times, pd.DataFrame({"size": rng.uniform(1, 100, len(inputs))}, index=inputs),
                     pd.DataFrame({"cores": rng.uniform(1, 100, len(devices))}, index=devices))
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    evaluate(m, methods=["majority"], progress=True)
    assert "on-device SVMs" in terminal.getvalue() and "4/4" in terminal.getvalue()


def test_targets_evaluates_only_those_with_every_other_device_a_source(family_measurements):
    """On many devices the cost grows with targets × sources: ``targets`` scores the devices
    named, each with every other device as a source, with the figures of the full run; a name
    that is not a device evaluated is refused naming those that are."""
    m, _ = family_measurements()
    methods = ["majority", "full_set", "cvdfs"]
    full = evaluate(m, methods=methods)
    two = evaluate(m, methods=methods, targets=["dev1", "dev4"])
    assert list(two["targets"]) == ["dev1", "dev4"]
    assert two["targets"] == {d: full["targets"][d] for d in ("dev1", "dev4")}
    with pytest.raises(ValueError, match="targets \\['gpu9'\\]: the devices evaluated are dev0, dev1"):
        evaluate(m, methods=methods, targets=["gpu9"])
    # a target left out of the devices named was refused as 'needs at least 4 devices of one kind'
    with pytest.raises(ValueError, match=r"targets \['dev5'\] are not among the devices named \(dev0, dev1, dev2, "
                                         r"dev3\): name them there too \(--devices\)"):
        evaluate(m, methods=methods, devices=["dev0", "dev1", "dev2", "dev3"], targets=["dev1", "dev5"])


def test_the_predicted_row_marks_a_target_outside_the_sources(odd_target):
    """tune-from-source prints 'no figure to trust' for a target outside its sources, while
    evaluate's table printed its predicted figure as a plain number; it is now marked."""
    m = odd_target(n_inputs=80)
    m.devices.loc["odd", "speed"] = 40.0                  # ten times the fastest source
    r = evaluate(m, methods=["cvdfs"], max_size=1)
    outside = {d: r["details"][d]["cvdfs"]["confidence"]["outside_sources"] for d in r["targets"]}
    assert outside["odd"] and not outside["dev1"]
    row = next(line for line in format_evaluation(r).splitlines() if line.startswith("predicted (CV-DFS"))
    assert row.count("*") == sum(outside.values()) and row.rstrip().endswith("*")
    assert "* outside the sources: what they show, not a figure to trust" in format_evaluation(r)


def test_device_names_that_differ_from_devices_csv_only_by_white_space_are_an_error_naming_them(tmp_path):
    """Every devices.csv name written with a trailing space: no measured device has features,
    which is an error naming each device and the name it may have meant (it crashed with a
    bare IndexError)."""
    names = [f"dev{i}" for i in range(5)]
    pd.DataFrame({"device": [n + " " for n in names], "cores": [1.0, 2.0, 3.0, 4.0, 5.0], "kind": "gpu"}).to_csv(
        tmp_path / "devices.csv", index=False)
    pd.DataFrame({"input": ["i0", "i1"], "size": [1.0, 2.0]}).to_csv(tmp_path / "inputs.csv", index=False)
    pd.DataFrame([{"device": d, "input": i, "variant": v, "time_s": 1.0 + (v == "b")}
                  for d in names for i in ("i0", "i1") for v in ("a", "b")]).to_csv(tmp_path / "measurements.csv",
                                                                                   index=False)
    with pytest.raises(ValueError, match="no measured device has device features in devices.csv: left out dev0: "
                                         "measured, but devices.csv has no row for it \\(did you mean 'dev0 '\\?\\)"):
        split(load_dataset_dir(tmp_path))


@pytest.mark.parametrize("test_size, leaves", [(0.999, "leaves 0 training and 60 test"),
                                               (0.001, "leaves 60 training and 0 test")])
def test_a_test_size_that_leaves_no_training_or_no_test_input_is_refused_with_the_sizes_that_work(
        family_measurements, test_size, leaves):
    m, _ = family_measurements()           # 60 inputs: before, 0.999 failed in the on-device SVMs with a bare
    with pytest.raises(ValueError, match=leaves) as err:   # "'NoneType' object is not subscriptable"
        evaluate(m, test_size=test_size, methods=["majority", "cvdfs"])
    assert "between 0.0167 and 0.967" in str(err.value)
    assert split(m, test_size=58 / 60)[3].size == 2        # the bounds it names are accepted


@pytest.mark.parametrize("seeds", [[-1, 2], [1.5, 2], [True, 2]])
def test_a_split_seed_that_is_not_a_whole_number_of_at_least_0_is_refused_naming_it(family_measurements, seeds):
    m, _ = family_measurements()          # before: 1.5 was read as 1 without a word, -1 ended in numpy's
    with pytest.raises(ValueError, match=f"a split seed is a whole number of at least 0, got {seeds[0]!r}"):
        evaluate_splits(m, seeds, methods=["majority"])                  # "expected non-negative integer"
    with pytest.raises(ValueError, match="a split seed is a whole number of at least 0, got -1"):
        split(m, seed=-1)
