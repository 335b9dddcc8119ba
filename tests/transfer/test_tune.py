"""tune_from_source and the sources' refit (``nitro.transfer.tune``) on planted data recorded in a
real store: the model, its provenance, the target's record and the errors that name the problem."""
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from nitro.row import TrainingRow
from nitro.model import SelectorModel
from nitro.transfer.tune import refit_from_sources, tune_from_source

from tests.transfer.helpers import VARIANTS, planted, record_planted


def test_transferred_model_round_trips_through_the_store(store):
    m = record_planted(store)
    model = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=[f"dev{i}" for i in range(1, 7)],
                             target="dev0", search_based_dfs=True, max_subset_size=2, progress=False)
    loaded = SelectorModel.from_dict(store.model("toy", "dev0"))
    X = m.inputs.to_numpy()
    assert loaded.predict(X) == model.predict(X)
    assert loaded.provenance["sources"] == [f"dev{i}" for i in range(1, 7)]
    assert "cache_kb" in loaded.provenance["device_features"]
    truth = m.for_device("dev0").idxmin(axis=1).reindex(m.inputs.index)
    assert (np.array(loaded.predict(X)) == truth.to_numpy()).mean() > 0.85
    with pytest.raises(ValueError, match="cannot also be a source"):
        tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=["dev0", "dev1"], target="dev0")
    reordered = tune_from_source(store, "toy", VARIANTS[::-1], ["size", "skew"], sources=[f"dev{i}" for i in range(1, 7)],
                                 target="dev0", search_based_dfs=True, max_subset_size=2, save=False,
                                 progress=False)                                  # as a code variant may order them
    assert reordered.variants == VARIANTS[::-1] and reordered.predict(X) == model.predict(X)


def test_a_store_with_nothing_recorded_says_to_record_the_sources_first(store, capsys):
    """A target tuned before any source recorded (the usual first mistake: the Listing 2 script run
    before Listing 1's) is told what to record, in Python and on the command line, not only that
    the computation is unknown."""
    from nitro.cli import main
    from nitro.store import StoreError
    with pytest.raises(StoreError, match=r"toy: nothing is recorded under this name in .* \(recorded: none\): a target "
                                         r"learns from the training rows of source devices, so record them first: "
                                         r"tune\(\) with record=True on each source device"):
        tune_from_source(store, "toy", VARIANTS, ["size", "skew"], target="dev0", progress=False)
    store.declare("other", VARIANTS, ["size", "skew"])
    with pytest.raises(StoreError, match=r"\(recorded: other\).*nitro store import DIR toy"):
        refit_from_sources(store, "toy", VARIANTS, ["size", "skew"], target="dev0")
    assert main(["tune-from-source", "never_recorded", "--target", "dev0"]) == 2   # the tests' embedded store
    err = capsys.readouterr().err
    assert err.startswith("nitro: error: never_recorded: nothing is recorded under this name") and "record them first" in err


def test_a_store_whose_only_rows_are_the_targets_says_a_source_is_another_device(store):
    m = planted()
    store.declare("toy", VARIANTS, ["size", "skew"])
    t = m.for_device("dev0")
    store.put_rows("toy", "dev0", [TrainingRow(i, m.inputs.loc[i].to_dict(), t.loc[i].to_dict()) for i in t.index])
    with pytest.raises(ValueError, match="no source device has training rows in the store but the target 'dev0' "
                                         "itself: a source is another device"):
        tune_from_source(store, "toy", VARIANTS, ["size", "skew"], target="dev0",
                         target_features={"cache_kb": 500.0}, progress=False)


def test_cv_dfs_runs_by_default_wherever_three_or_more_sources_allow_it(store):
    """The default model is the CV-DFS ensemble ``nitro evaluate`` reports; with two sources
    (CV-DFS needs three) it is built on every device feature and says why, without an error."""
    record_planted(store)
    kw = dict(target="dev0", max_subset_size=2, save=False, progress=False)
    three = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=["dev1", "dev2", "dev3"], **kw)
    assert "cv_dfs" in three.provenance and "cv_dfs_off" not in three.provenance
    explicit = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=["dev1", "dev2", "dev3"],
                                search_based_dfs=True, **kw)
    assert explicit.params == three.params
    two = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=["dev1", "dev2"], **kw)
    assert "cv_dfs" not in two.provenance
    assert two.provenance["cv_dfs_off"] == "CV-DFS needs 3 or more sources, 2 given"
    off = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=["dev1", "dev2", "dev3"],
                           search_based_dfs=False, **kw)
    assert off.provenance["cv_dfs_off"] == "search_based_dfs=False" and off.params != three.params


def test_time_weight_weights_the_kernel_fit_and_is_kept_in_the_provenance(store):
    """``time_weight`` changes the fit (the toy's inputs differ in time) and says so; the
    default weighs every input alike; a negative or non-numeric power is an error naming it."""
    record_planted(store)
    kw = dict(sources=[f"dev{i}" for i in range(1, 7)], target="dev0", max_subset_size=2, save=False, progress=False)
    plain = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], **kw)
    weighted = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], time_weight=0.5, **kw)
    assert "time_weight" not in plain.provenance and weighted.provenance["time_weight"] == 0.5
    assert not np.allclose(np.asarray(plain.params["weights"]), np.asarray(weighted.params["weights"]))
    for bad in (-1.0, float("nan"), "0.5"):
        with pytest.raises(ValueError, match="time_weight must be a finite number >= 0"):
            tune_from_source(store, "toy", VARIANTS, ["size", "skew"], time_weight=bad, **kw)


def test_a_target_of_a_new_family_is_uncertain_where_a_source_family_transfers_badly(store):
    """dev6 is the only source with dev0's single atomic unit: held out with its family it is
    predicted from devices unlike it (about 67%). The store's ``arch`` says dev0's family is new,
    so the estimate is uncertain (a check to make) and says why, in print too; without the
    metadata that reason is not given."""
    record_planted(store)
    kw = dict(target="dev0", max_subset_size=2, save=False, progress=False)
    plain = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], **kw).provenance["confidence"]
    assert not any("family" in why for why in plain["low_because"])
    for d, family in {"dev0": "new", "dev1": "x", "dev2": "x", "dev3": "y", "dev4": "y", "dev5": "z", "dev6": "z"}.items():
        store.put_device_metadata(d, {"arch": family})
    model = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], **kw)
    c = model.provenance["confidence"]
    assert model.provenance["validated_without_family"] and c["held_out"]["dev6"]["quality"] < 0.9
    assert c["level"] == "uncertain" and f"a source got {100 * c['held_out_worst']:.1f}%" in c["low_because"][-1]
    from nitro.cli import _transfer_lines
    said = "\n".join(_transfer_lines("toy", model.provenance))
    assert "estimate UNCERTAIN (a family no source shares" in said and "check it by timing" in said


def test_a_target_without_features_that_is_not_this_machine_is_an_error(store):
    """A typo in the target's name must not give a model built for this machine's CPU."""
    record_planted(store)
    with pytest.raises(ValueError, match=r"unknown target device 'dev0x'.*no features.*dev0"):
        tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=["dev1", "dev2", "dev3"],
                         target="dev0x", search_based_dfs=False, progress=False)
    assert store.model("toy", "dev0x") is None


def test_a_target_named_by_its_datasheet_id_takes_the_published_figures(store):
    """A new GPU named as the bundle section advises (a datasheet product id) gets the datasheet's
    figures, kept with source "datasheet" and its kind; a name that only resembles an id is still
    an error."""
    m = record_planted(store)
    for d, row in m.devices.iterrows():     # the sources described by datasheet features
        store.put_device(d, {"l2_cache_kb": {"value": 30.0 * float(row["cache_kb"]), "unit": "KB", "source": "query"},
                             "peak_gbps": {"value": 100.0 + 50.0 * float(row["decoy2"]), "unit": "GB/s",
                                           "source": "query"}})
    sources = ["dev1", "dev2", "dev3", "dev4"]
    with pytest.warns(UserWarning, match="a100_sxm4_40gb: no record in the store; the datasheet's published figures"):
        model = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=sources, target="a100_sxm4_40gb",
                                 search_based_dfs=False, progress=False)
    assert model.provenance["target_features"] == {"l2_cache_kb": 40960.0, "peak_gbps": 1555.0}
    kept = store.device("a100_sxm4_40gb")
    assert kept["peak_gbps"]["source"] == "datasheet" and store.device_metadata("a100_sxm4_40gb")["kind"] == "gpu"
    with pytest.raises(ValueError, match=r"unknown target device 'a100_sxm4'"):
        tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=sources, target="a100_sxm4",
                         search_based_dfs=False, progress=False)


def test_refit_from_sources_learns_from_the_stores_sources_and_the_targets_pairs(store):
    """Refining mode's tree refit reads the same sources as tune_from_source and learns the
    target from rows that timed two of the three variants each."""
    m = record_planted(store)
    sources = [f"dev{i}" for i in range(1, 7)]
    base = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=sources, target="dev0",
                            progress=False, save=False)
    refit = refit_from_sources(store, "toy", VARIANTS, ["size", "skew"], sources=sources, target="dev0")
    X = m.inputs.to_numpy()
    truth = m.for_device("dev0").reindex(m.inputs.index)[VARIANTS].to_numpy()
    rows = np.arange(0, len(X), 4)
    pairs = truth[rows].copy()
    pairs[np.arange(len(rows)), np.arange(len(rows)) % 3] = np.nan      # each row ran two variants
    model = refit(base, X[rows], pairs)
    assert model.kind == "gbt" and model.variants == base.variants == VARIANTS
    assert set(model.device_features) == {"cache_kb", "atomic_units", "decoy1", "decoy2"}
    chosen = np.array([VARIANTS.index(v) for v in model.predict(X)])
    assert (chosen == truth.argmin(axis=1)).mean() > 0.85


def test_a_refined_model_refits_from_its_origins_sources_and_target_features(store):
    """A refined model, saved and loaded again (after a restart), still names the tune_from_source
    model it came from: refining it again refits from the same sources, and a target the store
    has no record of (described by target_features) is described by the model's own figures."""
    from nitro.model import SelectorModel, transfer_origin
    from nitro.transfer.tune import SourcesRefit
    m = record_planted(store)
    sources = [f"dev{i}" for i in range(1, 7)]
    given = {f: float(v) for f, v in m.devices.loc["dev0"].items()}
    base = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=sources, target="edge_box",
                            target_features=given, progress=False, save=False)
    refit = SourcesRefit.for_model(base, store, "toy", VARIANTS, ["size", "skew"])
    X = m.inputs.to_numpy()
    truth = m.for_device("dev0").reindex(m.inputs.index)[VARIANTS].to_numpy()
    refined = refit(base, X[::4], truth[::4])
    assert refit.error is None and refined.kind == "gbt"
    again = SelectorModel.from_dict(refined.to_dict())            # saved and loaded
    assert transfer_origin(again.provenance)["target"] == "edge_box"
    second = SourcesRefit.for_model(again, store, "toy", VARIANTS, ["size", "skew"])
    assert second is not None and second.options["sources"] == sources
    assert second(again, X[::4], truth[::4]).kind == "gbt" and second.error is None


def test_this_machines_record_measured_for_a_model_is_stored(store):
    """tune_from_source measures this machine when the store has no record of it, and stores the
    record and its kind with the model: later models, refits and this device's refined rows read
    the same figures."""
    from nitro import devices
    from nitro.row import TrainingRow
    rng = np.random.default_rng(0)
    store.declare("mine", ["a", "b"], ["x"])
    for i, cores in enumerate((2.0, 8.0, 32.0)):
        store.put_device(f"src{i}", {"cores": {"value": cores, "unit": "", "source": "test"},
                                     "threads": {"value": 2 * cores, "unit": "", "source": "test"}})
        for j, x in enumerate(rng.uniform(1, 1e4, 40)):
            store.put_row("mine", f"src{i}", TrainingRow(f"in{j}", {"x": float(x)},
                                                          {"a": x / cores, "b": 100.0 + x / (4 * cores)}))
    here = devices.current_device_id()
    assert store.device(here, missing_ok=True) is None
    tune_from_source(store, "mine", ["a", "b"], ["x"], progress=False, save=False)
    assert store.device(here, missing_ok=True) is None               # save=False writes nothing
    model = tune_from_source(store, "mine", ["a", "b"], ["x"], progress=False)
    record = store.device(here)
    assert model.provenance["target"] == here and set(model.provenance["target_features"]) <= set(record)
    assert all(record[f]["value"] == v for f, v in model.provenance["target_features"].items())
    # with its kind (the default sources stay of it), vendor and family (a new family is told)
    assert store.device_metadata(here) == devices.local_metadata(here) and store.device_metadata(here)["kind"] == "cpu"


def test_a_target_of_a_family_its_sources_lack_is_validated_without_each_sources_family(store):
    """This machine's family, read from its CPU, or one given with the target's features: where
    no source shares it, each source is held out with its own family, as the target will be."""
    from nitro import devices
    from nitro.row import TrainingRow
    rng = np.random.default_rng(0)
    store.declare("mine", ["a", "b"], ["x"])
    for i, cores in enumerate((2.0, 8.0, 32.0, 64.0)):
        store.put_device(f"src{i}", {"cores": {"value": cores, "unit": "", "source": "test"},
                                     "threads": {"value": 2 * cores, "unit": "", "source": "test"}})
        store.put_device_metadata(f"src{i}", {"kind": "cpu", "arch": "family_a" if i < 2 else "family_b"})
        for j, x in enumerate(rng.uniform(1, 1e4, 40)):
            store.put_row("mine", f"src{i}", TrainingRow(f"in{j}", {"x": float(x)},
                                                          {"a": x / cores, "b": 100.0 + x / (4 * cores)}))
    here = tune_from_source(store, "mine", ["a", "b"], ["x"], progress=False, save=False).provenance
    arch = devices.local_metadata(devices.current_device_id()).get("arch")
    assert here["target_metadata"].get("arch") == arch
    assert here.get("validated_without_family", False) == (arch is not None)
    kw = dict(target="elsewhere", progress=False, save=False)
    given = tune_from_source(store, "mine", ["a", "b"], ["x"], target_features={"cores": 16.0, "threads": 32.0,
                                                                               "arch": "family_c"}, **kw).provenance
    assert given["validated_without_family"] and given["target_metadata"] == {"arch": "family_c"}
    sibling = tune_from_source(store, "mine", ["a", "b"], ["x"], target_features={"cores": 16.0, "threads": 32.0,
                                                                                 "arch": "family_b"}, **kw).provenance
    assert "validated_without_family" not in sibling
    # one source holds none out: nitro tune-from-source had printed that each source was validated held
    # out with its own family beside "no source to hold out"
    alone = tune_from_source(store, "mine", ["a", "b"], ["x"], sources=["src0"], target_features={
        "cores": 16.0, "threads": 32.0, "arch": "family_c"}, **kw).provenance
    assert "validated_without_family" not in alone and alone["confidence"]["held_out"] == {}
    assert store.device("elsewhere", missing_ok=True) is None          # save=False: nothing stored
    tune_from_source(store, "mine", ["a", "b"], ["x"], target="elsewhere", progress=False,
                     target_features={"cores": 16.0, "threads": 32.0, "arch": "family_c", "kind": "cpu"})
    assert store.model("mine", "elsewhere") is not None                # its model, and what describes it:
    assert store.device("elsewhere") == {n: {"value": v, "unit": "", "source": "user"}    # a bundle carries both
                                         for n, v in (("cores", 16.0), ("threads", 32.0))}
    assert store.device_metadata("elsewhere") == {"arch": "family_c", "kind": "cpu"}
    with pytest.warns(UserWarning, match=r"elsewhere: the store's device record has other values of \['cores', "
                                         r"'threads'\] than the features given"):
        tune_from_source(store, "mine", ["a", "b"], ["x"], target="elsewhere", progress=False,
                         target_features={"cores": 8.0, "threads": 8.0})
    assert store.device("elsewhere")["cores"]["value"] == 16.0         # a stored record is not written over


def test_target_features_no_model_could_be_built_from_are_not_stored_as_the_devices_record(store):
    """A target's given features are stored as its record with its model, and only then: features
    the sources lack had been stored before the error, so that the device was listed among those
    with features, and the corrected features of the next run left that record (and no kind) behind."""
    rng = np.random.default_rng(0)
    store.declare("mine", ["a", "b"], ["x"])
    for i, cores in enumerate((2.0, 8.0, 32.0)):
        store.put_device(f"src{i}", {"cores": {"value": cores, "unit": "", "source": "test"}})
        store.put_device_metadata(f"src{i}", {"kind": "cpu"})
        for j, x in enumerate(rng.uniform(1, 1e4, 30)):
            store.put_row("mine", f"src{i}", TrainingRow(f"in{j}", {"x": float(x)}, {"a": x / cores, "b": 50.0 + x / 8}))
    for wrong in ({"foo": 3.0, "kind": "cpu"}, {}):
        with pytest.raises(ValueError, match="no device feature is known on every source and on 'newcpu'") as err:
            tune_from_source(store, "mine", ["a", "b"], ["x"], target="newcpu", target_features=wrong, progress=False)
        # the error says what each side has, and what to give
        assert ("'newcpu' has ['foo']" if wrong else "none is known on 'newcpu'") in str(err.value)
        assert "the sources all have ['cores']; give the target's values of those" in str(err.value)
        assert store.device("newcpu", missing_ok=True) is None and "newcpu" not in store.device_ids()
        assert store.device_metadata("newcpu") == {}
    tune_from_source(store, "mine", ["a", "b"], ["x"], target="newcpu", progress=False,
                     target_features={"cores": 4.0, "kind": "cpu"})
    assert store.device("newcpu") == {"cores": {"value": 4.0, "unit": "", "source": "user"}}
    assert store.device_metadata("newcpu") == {"kind": "cpu"} and store.model("mine", "newcpu") is not None


def test_device_features_unknown_on_the_target_are_named(store):
    """A feature the target lacks (not given, or a microbenchmark that failed there) is left out
    with the reason; one only the target has is named as unknown on the sources."""
    m = record_planted(store)
    given = {f: float(v) for f, v in m.devices.loc["dev0"].items() if f != "decoy1"}
    model = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=[f"dev{i}" for i in range(1, 7)],
                             target="edge_box", target_features={**given, "bogus": 3.0}, progress=False,
                             save=False)
    left = model.provenance["device_features_left_out"]
    assert left["decoy1"] == "unknown on the target edge_box"
    assert left["bogus"].startswith("unknown on sources dev1, dev2")
    assert "decoy1" not in model.provenance["device_features"]


def test_target_features_as_nitro_writes_them_and_as_users_type_them(store):
    """A device record as nitro writes it (device.json: {device: {name: {"value": ...}}}, nulls for
    failed figures) is read as the target's features; a number written as text, a bool or an
    infinity is an error naming the feature, never a feature silently read as metadata."""
    import json
    from nitro.transfer.tune import given_features
    m = record_planted(store)
    given = {f: float(v) for f, v in m.devices.loc["dev0"].items()}
    record = {"edge_box": {**{f: {"value": v, "unit": "", "source": "query"} for f, v in given.items()},
                           "tdp_w": {"value": None, "unit": "W", "source": "datasheet"}}}
    assert given_features(json.loads(json.dumps(record))) == (given, {})
    assert given_features({**given, "kind": "gpu", "tdp_w": None, "arch": "908"}) == (given, {"kind": "gpu", "arch": "908"})
    kw = dict(sources=[f"dev{i}" for i in range(1, 7)], target="edge_box", progress=False, save=False)
    from_record = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], target_features=record, **kw)
    plain = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], target_features=given, **kw)
    assert from_record.provenance["target_features"] == plain.provenance["target_features"]
    for bad, what in (("7680 cores", "is text"), ("16", "is text"), (True, "a finite number"),
                      (float("inf"), "a finite number"), ({"unit": "W"}, "a record")):
        first = next(iter(given))
        with pytest.raises(ValueError, match=f"target feature '{first}'.*{what}"):
            tune_from_source(store, "toy", VARIANTS, ["size", "skew"], target_features={**given, first: bad}, **kw)


def test_a_target_of_unknown_kind_beside_sources_of_two_kinds_is_warned_about(store):
    """Without its kind (a bare device.json) the target takes sources of every kind and only the
    features all of them have: a warning says so and how to give the kind."""
    m = record_planted(store)
    for i, d in enumerate(m.device_ids):
        store.put_device_metadata(d, {"kind": "gpu" if i < 4 else "cpu"})
    given = {f: float(v) for f, v in m.devices.loc["dev0"].items()}
    kw = dict(target="edge_box", progress=False, save=False)
    with pytest.warns(UserWarning, match=r"the kind of 'edge_box' is unknown, so sources of every kind are used "
                                         r"\(cpu: 3, gpu: 4\)"):
        tune_from_source(store, "toy", VARIANTS, ["size", "skew"], target_features=given, **kw)
    from nitro.transfer.confidence import TransferEstimateWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", TransferEstimateWarning)    # three sources: the estimate may be low
        model = tune_from_source(store, "toy", VARIANTS, ["size", "skew"],
                                 target_features={**given, "kind": "cpu"}, **kw)
    assert model.provenance["sources"] == m.device_ids[4:]


def test_a_device_feature_constant_over_the_sources_is_left_out_and_named(store):
    """The sources cannot show its effect; an SVM given it would read the target's other value
    as a distance from every source and lose its kernel's contrast."""
    m = record_planted(store)
    for d in m.device_ids:
        rec = store.device(d)
        rec["smem_kb"] = {"value": 64.0 if d == "dev0" else 48.0, "unit": "", "source": "datasheet"}
        store.put_device(d, rec)
    model = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=[f"dev{i}" for i in range(1, 7)],
                             target="dev0", search_based_dfs=False, learner="svm", save=False, progress=False)
    p = model.provenance
    assert "smem_kb" not in p["device_features"] and "cache_kb" in p["device_features"]
    assert p["device_features_left_out"] == {"smem_kb": "constant (within about 1%) over the sources"}
    X = m.inputs.to_numpy()
    truth = m.for_device("dev0").idxmin(axis=1).reindex(m.inputs.index)
    assert (np.array(model.predict(X)) == truth.to_numpy()).mean() > 0.85


def test_with_one_source_no_device_feature_is_reported_as_used(store):
    """One source shows no device feature's effect: the provenance names none as used and says
    why each was left out, for the kernel model and for a learner."""
    record_planted(store)
    for learner in (None, "svm"):
        model = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=["dev1"], target="dev0",
                                 learner=learner, save=False, progress=False)
        p = model.provenance
        assert p["device_features"] == [] and model.device_features == {}
        assert set(p["device_features_left_out"]) == {"cache_kb", "atomic_units", "decoy1", "decoy2"}
        assert set(p["device_features_left_out"].values()) == {"one source: no device feature can vary"}
    # a target described by features, with one source: refits read the model's (empty) figures
    from nitro.transfer.tune import SourcesRefit
    given = {"cache_kb": 500.0, "atomic_units": 1.0, "decoy1": 0.5, "decoy2": 10.0}
    model = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=["dev1"], target="edge",
                             target_features=given, save=False, progress=False)
    refit = SourcesRefit.for_model(model, store, "toy", VARIANTS, ["size", "skew"])
    rows = store.rows("toy", "dev1")[:12]
    X = np.array([[r.features["size"], r.features["skew"]] for r in rows])
    T = np.array([[r.times[v] for v in VARIANTS] for r in rows])
    assert refit(model, X, T).kind == "gbt" and refit.error is None


def test_a_learner_that_chooses_one_variant_everywhere_on_the_target_says_so(store):
    """``learner=`` models have no quality estimate; a target far outside the sources' device
    features collapses an SVM's kernel to one choice, and that must not be silent."""
    m = record_planted(store)
    for d, scale in (("dev0", 1000.0), ("dev1", 1.0)):
        rec = store.device(d)
        rec["cache_kb"]["value"] = float(m.devices.loc[d, "cache_kb"]) * scale
        store.put_device(d, rec)
    sources = [f"dev{i}" for i in range(1, 7)]
    with pytest.warns(UserWarning, match="does not tell inputs apart"):
        far = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=sources, target="dev0",
                               search_based_dfs=False, learner="svm", save=False, progress=False)
    check = far.provenance["learner_check"]
    assert check["outside_sources"] and max(check["choices"].values()) >= 0.99 * sum(check["choices"].values())
    near = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=sources[1:], target="dev1",
                            search_based_dfs=False, learner="svm", save=False, progress=False)
    assert near.provenance["learner_check"]["warning"] is None


def test_a_target_budget_without_a_way_to_measure_picks_among_the_targets_recorded_inputs(store):
    """With nothing to run the variants (the command line), few-shot can only use what the
    target has recorded: the picks come from those inputs, and none recorded is an error that
    says where measuring happens."""
    m = record_planted(store)
    kept = [f"in{i}" for i in range(0, 160, 4)]                     # devP has a quarter of dev0's rows
    t = m.for_device("dev0")
    store.put_rows("toy", "devP", [TrainingRow(i, m.inputs.loc[i].to_dict(), t.loc[i].to_dict()) for i in kept])
    features = {k: float(v) for k, v in m.devices.loc["dev0"].items()}
    store.put_device("devP", {k: {"value": v, "unit": "", "source": "datasheet"} for k, v in features.items()})
    sources = [f"dev{i}" for i in range(1, 7)]
    model = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=sources, target="devP",
                             target_budget=8, save=False, progress=False)
    picked = model.provenance["few_shot"]["inputs"]
    assert len(picked) == 8 and set(picked) <= set(kept)
    assert model.kind == "gbt" and model.provenance["few_shot"]["learner"] == "trees"
    few = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=sources, target="devP",
                           target_budget=3, save=False, progress=False)
    assert len(few.provenance["few_shot"]["inputs"]) == 3        # too few for trees: the correction
    assert few.kind == "kernel" and few.provenance["few_shot"]["learner"] == "correction"
    assert few.provenance["refined"]["target_rows"] == 3
    assert few.provenance["few_shot"]["estimate"] is None       # none from fewer than 6 timed inputs
    with pytest.warns(UserWarning, match=r"a target budget of 1000 inputs, but (\d+) training inputs can be timed on "
                                         r"devP: all of them are") as said:
        every = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=sources, target="devP",
                                 target_budget=1000, save=False, progress=False)
    pool = int(re.search(r"but (\d+) training", str(said[0].message)).group(1))
    every = every.provenance["few_shot"]["inputs"]
    assert 8 < pool <= len(kept) and set(every) <= set(kept) and len(every) == pool
    with pytest.raises(TypeError, match=r"sources are a list of device ids, got 'dev1' \(one source: \['dev1'\]\)"):
        tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources="dev1", target="devP", save=False,
                         progress=False)
    with pytest.raises(ValueError, match="devX has none of the 160 training inputs recorded.*Autotuner.tune_from_source"):
        tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=sources, target="devX", target_budget=8,
                         target_features=features, save=False, progress=False)


def test_too_few_timed_inputs_for_a_target_the_estimate_calls_low_are_said_so(store):
    """Below 6 timed inputs the few-shot model only corrects the zero-shot one near them; where
    the zero-shot estimate is low (here: a target far outside the sources), that is too little,
    and tune_from_source says so and how many to time. Six or more fit trees: no warning."""
    import warnings
    record_planted(store)
    rec = store.device("dev0")
    rec["cache_kb"]["value"] *= 1000.0
    store.put_device("dev0", rec)
    kw = dict(sources=[f"dev{i}" for i in range(1, 7)], target="dev0", max_subset_size=1, save=False,
              progress=False)
    with pytest.warns(UserWarning, match=r"3 input\(s\) timed on dev0 only correct the zero-shot model near them, "
                                         r"and its estimate is low \(outside the sources.*time 6 or more"):
        few = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], target_budget=3, **kw)
    assert few.kind == "kernel" and few.provenance["zero_shot_confidence"]["level"] == "low"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert tune_from_source(store, "toy", VARIANTS, ["size", "skew"], target_budget=6, **kw).kind == "gbt"
    assert not [w for w in caught if "only correct the zero-shot model" in str(w.message)]


def test_a_zero_shot_model_whose_estimate_is_low_warns_in_python_too(store):
    """Before, only ``nitro tune-from-source`` printed a low estimate: a Python user of
    tune_from_source got the model in silence (the estimate sat in its provenance). Now it warns,
    naming why and what to do: here the planted sources predict under 90% for their target, and
    once the target lies far outside them, there is no figure to trust."""
    from nitro.transfer.confidence import TransferEstimateWarning
    record_planted(store)
    kw = dict(sources=[f"dev{i}" for i in range(1, 7)], target="dev0", max_subset_size=1, save=False,
              progress=False)
    with pytest.warns(TransferEstimateWarning, match=r"toy: the zero-shot model's estimate on dev0 is low, expected "
                                                     r"\d+\.\d% of the optimum: expected .* below 90%\. .*target_budget="):
        near = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], **kw)
    assert not near.provenance["confidence"]["outside_sources"]
    rec = store.device("dev0")
    rec["cache_kb"]["value"] *= 1000.0
    store.put_device("dev0", rec)
    with pytest.warns(TransferEstimateWarning, match=r"on dev0 is low, no figure to trust \(the sources show "
                                                     r".*outside the sources' device features"):
        far = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], **kw)
    assert far.provenance["confidence"]["outside_sources"]


def test_a_few_shot_model_still_far_off_on_its_timed_inputs_says_so_and_how_many_more_to_time(store, odd_target):
    """A target whose fastest variant follows no input feature (each input's winner drawn at
    random, twice as fast as the others) defeats the few-shot model too: its cross-validated
    figure on the timed inputs stays below 90%, and tune_from_source must say so (and to time
    twice as many) instead of leaving the user with a model the few timed inputs call poor; a
    figure above 90% from too few inputs to vouch for it is said to be uncertain."""
    m = odd_target(n_inputs=160)
    rng = np.random.default_rng(1)
    variants = list(m.variants)
    store.declare("odd", variants, ["x"])
    for d in m.device_ids:
        t = m.for_device(d)
        if d == "odd":                   # per input, one variant drawn at random runs in half the time
            base = t.to_numpy().min(axis=1, keepdims=True)
            fast = rng.integers(0, len(variants), len(t))
            t = pd.DataFrame(np.where(np.arange(len(variants)) == fast[:, None], base, 2 * base), index=t.index,
                             columns=variants)
        store.put_rows("odd", d, [TrainingRow(i, m.inputs.loc[i].to_dict(), t.loc[i].to_dict()) for i in t.index])
        store.put_device(d, {k: {"value": float(v), "unit": "", "source": "datasheet"} for k, v in m.devices.loc[d].items()})
    with pytest.warns(UserWarning, match=r"on odd, the few-shot model reached .* on the 12 inputs timed .*below 90%.*"
                                         r"target_budget=24 in Python, --target-budget 24"):
        model = tune_from_source(store, "odd", variants, ["x"], target="odd", target_budget=12, save=False,
                                 progress=False)
    e = model.provenance["few_shot"]["estimate"]
    assert e["level"] == "low" and e["quality"] < 0.9 and "twice as many" in e["advice"]
    kw = dict(sources=["dev0", "dev1", "dev2"], target="dev3", save=False, progress=False)
    # a target like the sources: 12 inputs read 97.7%, too few to vouch for 90% where a wrong
    # choice costs two thirds of the optimum ("uncertain", and how many would); that many do
    with pytest.warns(UserWarning, match=r"on dev3, the few-shot model reached .* on the 12 inputs timed .*"
                                         r"cannot vouch for 90%"):
        some = tune_from_source(store, "odd", variants, ["x"], target_budget=12, **kw)
    e = some.provenance["few_shot"]["estimate"]
    assert e["level"] == "uncertain" and e["quality"] >= 0.9 > e["lower"] and e["inputs_needed"] > 12
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fine = tune_from_source(store, "odd", variants, ["x"], target_budget=e["inputs_needed"], **kw)
    assert fine.provenance["few_shot"]["estimate"]["level"] == "high"
    assert not [w for w in caught if "the few-shot model reached" in str(w.message)]


def test_sources_that_timed_different_inputs_have_their_rows_filled_in_and_say_so(store):
    """Where the inputs every source timed are few, the kernel model learns from every input some
    source timed, each source's missing rows filled in from its nearest timed inputs; the
    provenance says how many. Where most are common, only those are learnt from, as before."""
    m = planted()
    store.declare("toy", VARIANTS, ["size", "skew"])
    for k, d in enumerate(m.device_ids):      # dev1..dev6 each lack a quarter: j % 4 == 1, 2, 0, 1, 2, 0
        t = m.for_device(d)
        mine = [i for j, i in enumerate(t.index) if k == 0 or j % 4 != k % 3]
        store.put_rows("toy", d, [TrainingRow(i, m.inputs.loc[i].to_dict(), t.loc[i].to_dict()) for i in mine])
        store.put_device(d, {f: {"value": float(v), "unit": "", "source": "datasheet"}
                             for f, v in m.devices.loc[d].items()})
    kw = dict(target="dev0", max_subset_size=1, save=False, progress=False)
    model = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], **kw)
    assert model.provenance["rows_filled_in"] == {"inputs": 160, "timed_on_every_source": 40, "rows": 6 * 40}
    assert model.provenance["n_training_rows"] == 6 * 120
    assert model.provenance["confidence"]["held_out_quality"] > 0.9       # scored on rows each source timed
    two = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], sources=["dev1", "dev4"], **kw)
    assert "rows_filled_in" not in two.provenance and two.provenance["n_training_rows"] == 2 * 120


def test_a_model_tune_trained_on_the_target_is_not_replaced_in_silence(store):
    """A user who had tuned on this machine and then ran tune_from_source for it lost the model
    trained on the machine's own rows without a word; now a warning says so and how to get it
    back. ``save=False`` leaves it as it is, with the learner too (before, that path stored anyway)."""
    from nitro.transfer.confidence import TransferEstimateWarning
    record_planted(store)
    kw = dict(sources=[f"dev{i}" for i in range(1, 7)], target="dev0", max_subset_size=1, progress=False)
    own = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], save=False, **kw).to_dict()
    own["provenance"] = {"method": "on-device", "device": "dev0", "n_inputs": 40}
    store.put_model("toy", "dev0", own)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TransferEstimateWarning)
        tune_from_source(store, "toy", VARIANTS, ["size", "skew"], save=False, learner="svm", **kw)
        assert store.model("toy", "dev0")["provenance"]["method"] == "on-device"      # not stored: save=False
        with pytest.warns(UserWarning, match=r"toy: the model tune\(\) trained on dev0 from 40 of its own inputs is "
                                             r"replaced by this transferred one; its rows stay"):
            tune_from_source(store, "toy", VARIANTS, ["size", "skew"], **kw)
        with warnings.catch_warnings(record=True) as again:       # a transferred model replaced: nothing to say
            warnings.simplefilter("always")
            tune_from_source(store, "toy", VARIANTS, ["size", "skew"], **kw)
    assert store.model("toy", "dev0")["provenance"]["method"] != "on-device"
    assert not [w for w in again if "trained on dev0" in str(w.message)]


def test_a_source_without_device_features_is_left_out_by_default_and_refused_when_named(store):
    """A dataset whose devices.csv row for one device is empty: its rows are imported but no
    feature record; the default sources leave it out, saying why, and naming it is an error
    saying what to do, rather than the store's bare 'unknown device'."""
    m = record_planted(store)
    store.declare("toy", VARIANTS, ["size", "skew"])
    t = m.for_device("dev0")
    store.put_rows("toy", "bare", [TrainingRow(i, m.inputs.loc[i].to_dict(), t.loc[i].to_dict()) for i in t.index])
    model = tune_from_source(store, "toy", VARIANTS, ["size", "skew"], target="dev0", max_subset_size=2,
                             save=False, progress=False)
    assert "bare" not in model.provenance["sources"]
    assert "no device features recorded" in model.provenance["sources_left_out"]["bare"]
    with pytest.raises(ValueError, match=r"source devices \['bare'\] have no device features recorded.*"
                                         "write their features in devices.csv"):
        tune_from_source(store, "toy", VARIANTS, ["size", "skew"], target="dev0", sources=["bare", "dev1", "dev2"],
                         save=False, progress=False)
