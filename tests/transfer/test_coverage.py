"""Which variants and sources a cross-device model learns from, on small synthetic data, a
real store and the shared SpMV data."""
import numpy as np
import pandas as pd
import pytest

from nitro import code_variant
from nitro.cli import main
from nitro.dataset import Measurements
from nitro.row import TrainingRow
from nitro.transfer.coverage import choose_variants, sources_of_kind, untimed_variants
from nitro.transfer.tune import tune_from_source

VARIANTS = ["a", "b", "c"]


def measurements(n_devices=4, n_inputs=30, seed=0) -> Measurements:
    """Every variant timed on every input of every device: ``a`` is fastest on small inputs,
    ``b`` on large ones, ``c`` never."""
    rng = np.random.default_rng(seed)
    devices = [f"dev{d}" for d in range(n_devices)]
    inputs = pd.DataFrame({"size": np.logspace(0, 4, n_inputs)}, index=[f"in{i}" for i in range(n_inputs)])
    rows = [{"device": d, "input": i, "a": 1.0 if s < 100 else 2.0, "b": 2.0 if s < 100 else 1.0,
             "c": 3.0 + rng.random()} for d in devices for i, s in inputs["size"].items()]
    times = pd.DataFrame(rows).set_index(["device", "input"])
    devs = pd.DataFrame({"cores": np.arange(1.0, n_devices + 1)}, index=devices)
    return Measurements(times, inputs, devs)


def test_a_variant_a_source_never_ran_is_left_out_with_the_reason():
    m = measurements()
    m.times.loc["dev2", "c"] = np.nan
    assert untimed_variants(m, m.device_ids) == {"c": ["dev2"]}
    assert untimed_variants(m, ["dev0", "dev1"]) == {}
    choice = choose_variants(m, m.device_ids)
    assert choice.variants == ["a", "b"] and choice.left_out == {"c": "not timed on dev2"} and choice.n_inputs == 30


def test_given_variants_must_exist_and_be_timed_on_every_source():
    m = measurements()
    m.times.loc["dev2", "c"] = np.nan
    assert choose_variants(m, m.device_ids, ["b", "a"]).variants == ["b", "a"]
    with pytest.raises(ValueError, match=r"'c' never on dev2.*--variants, --sources"):
        choose_variants(m, m.device_ids, ["a", "c"])
    with pytest.raises(ValueError, match=r"unknown variants \['z'\]"):
        choose_variants(m, m.device_ids, ["a", "z"])
    one = measurements()
    one.times = one.times[["a"]]
    with pytest.raises(ValueError, match=r"the data has one variant \(a\): nothing to choose between"):
        choose_variants(one, one.device_ids)


def test_a_variant_timed_on_too_few_inputs_is_left_out():
    m = measurements()
    m.times.loc["dev1", "c"] = np.nan
    m.times.loc[("dev1", "in0"), "c"] = 3.0          # timed on dev1, but on one input only
    m.times.loc["dev3", "c"] = np.nan
    m.times.loc[("dev3", "in1"), "c"] = 3.0          # ... and another one on dev3
    choice = choose_variants(m, m.device_ids)
    assert choice.variants == ["a", "b"] and choice.n_inputs == 30
    assert "too few inputs" in choice.left_out["c"] and "0 inputs" in choice.left_out["c"]


def test_a_variant_timed_on_no_source_for_some_inputs_keeps_them():
    """A variant no source timed on an input (a constraint excluded it) counts as the worst
    choice there; one timed on some sources only leaves the input out."""
    m = measurements()
    m.times.loc[[(d, i) for d in m.device_ids for i in m.inputs.index[:10]], "c"] = np.nan
    m.times.loc[("dev2", "in20"), "a"] = np.nan
    choice = choose_variants(m, m.device_ids)
    assert choice.variants == VARIANTS and choice.n_inputs == 29 and choice.left_out == {}


def test_sources_that_share_no_input_learn_from_all_their_inputs_filled_in():
    """Sources that timed different inputs (here dev0 none of the others'): the model learns
    from every input some source timed, each source's other rows filled in (Prepared.build)."""
    m = measurements()
    first, second = m.inputs.index[:15], m.inputs.index[15:]
    keep = [(d == "dev0" and i in first) or (d != "dev0" and i in second) for d, i in m.times.index]
    m = Measurements(m.times[keep], m.inputs, m.devices)      # dev0 shares no input with the others
    assert choose_variants(m, m.device_ids).n_inputs == 30
    assert choose_variants(m, ["dev1", "dev2"]).n_inputs == 15


def test_too_few_inputs_names_the_sources_and_the_options():
    m = measurements()
    keep = [i == m.inputs.index[0] for _, i in m.times.index]
    m = Measurements(m.times[keep], m.inputs, m.devices)      # one input, on every device
    with pytest.raises(ValueError) as e:
        choose_variants(m, m.device_ids)
    msg = str(e.value)
    assert "only 1 input(s)" in msg and "dev0 1" in msg and "dev1 1" in msg and "--sources" in msg


def test_default_sources_are_those_of_the_targets_kind_when_three_share_it():
    kinds = {"t": "gpu", "g1": "gpu", "g2": "gpu", "g3": "gpu", "c1": "cpu", "u": None}
    sources, left = sources_of_kind(kinds, "t", ["g1", "c1", "g2", "u", "g3"])
    assert sources == ["g1", "g2", "g3"] and set(left) == {"c1", "u"}
    assert "kind cpu" in left["c1"] and "kind unknown" in left["u"] and "gpu" in left["c1"]
    assert sources_of_kind(kinds, "t", ["g1", "g2", "c1"]) == (["g1", "g2", "c1"], {})
    assert sources_of_kind({**kinds, "t": None}, "t", ["g1", "c1"]) == (["g1", "c1"], {})


def record(store, m: Measurements, kinds: dict):
    store.declare("toy", VARIANTS, ["size"])
    for d in m.device_ids:
        t = m.for_device(d)
        store.put_rows("toy", d, [TrainingRow(i, {"size": float(m.inputs.loc[i, "size"])},
                                              {v: (None if np.isnan(x) else float(x)) for v, x in t.loc[i].items()})
                                  for i in t.index])
        store.put_device(d, {"cores": {"value": float(m.devices.loc[d, "cores"]), "unit": "", "source": "test"}})
        store.put_device_metadata(d, {"kind": kinds[d]})


@pytest.mark.parametrize("learner", [None, "tree"])
def test_tune_from_source_keeps_the_variants_every_source_timed(store, learner):
    m = measurements(n_devices=6)
    m.times.loc["dev2", "c"] = np.nan               # c never ran on dev2
    record(store, m, {"dev0": "gpu", "dev1": "gpu", "dev2": "gpu", "dev3": "gpu", "dev4": "cpu", "dev5": "gpu"})
    model = tune_from_source(store, "toy", VARIANTS, ["size"], target="dev0", progress=False, learner=learner)
    p = model.provenance
    assert model.variants == ["a", "b"] and p["variants"] == ["a", "b"]
    assert p["variants_left_out"] == {"c": "not timed on dev2"}
    assert p["sources"] == ["dev1", "dev2", "dev3", "dev5"] and list(p["sources_left_out"]) == ["dev4"]
    cv = code_variant("toy", {v: (lambda x: x) for v in VARIANTS}, {"size": lambda x: float(x)}, default="c")
    cv.model = model                                  # a model over a subset of the variants dispatches
    assert cv.select(10.0) == "a" and cv.select(5000.0) == "b"
    chosen = tune_from_source(store, "toy", VARIANTS, ["size"], target="dev0", progress=False,
                              sources=["dev1", "dev3", "dev4"], keep_variants=["b", "c"])
    assert chosen.variants == ["b", "c"] and chosen.provenance["sources_left_out"] == {}
    unrecorded = tune_from_source(store, "toy", VARIANTS, ["size"], target="new_gpu", progress=False,
                                  target_features={"cores": 2.5, "kind": "gpu"})
    assert list(unrecorded.provenance["sources_left_out"]) == ["dev4"]
    assert "kind" not in unrecorded.provenance["target_features"]
    with pytest.raises(ValueError, match=r"toy: variants not timed on every source: 'c' never on dev2"):
        tune_from_source(store, "toy", VARIANTS, ["size"], target="dev0", progress=False, keep_variants=["a", "c"])


@pytest.mark.dataset
@pytest.mark.slow
def test_cli_tunes_from_the_whole_shared_spmv_data(capsys, spmv_dataset):
    """A new user's first run: import everything, tune for the Kepler GPU (hybrid was never
    timed on the P100, and the Xeon is a CPU among GPUs)."""
    assert main(["store", "import", str(spmv_dataset), "spmv-every-variant"]) == 0
    capsys.readouterr()
    assert main(["tune-from-source", "spmv-every-variant", "--target", "tesla_k20xm"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "from 7 sources" in out[0] and "(CV-DFS, an ensemble of " in out[0] and out[1] == "variants: coo, csr, ell, sellp"
    assert out[2] == "left out variant hybrid: not timed on tesla_p100"
    assert out[3] == "left out source xeon_gold_6230: kind cpu, the target 'tesla_k20xm' is a gpu"
    assert main(["tune-from-source", "spmv-every-variant", "--target", "tesla_k20xm", "--variants", "csr,hybrid"]) == 2
    err = capsys.readouterr().err
    assert "'hybrid' never on tesla_p100" in err and "--variants" in err


def test_inputs_where_a_variant_was_not_allowed_teach_the_model_to_avoid_it(store):
    """``c`` is fastest on small inputs and not allowed (no time) on large ones, where ``b`` is
    fastest: the large inputs stay in training, so the target's model never picks ``c`` there
    (without them it had seen only small inputs and chose ``c`` everywhere)."""
    m = measurements(n_devices=4)
    small = m.inputs["size"] < 100
    for d in m.device_ids:
        m.times.loc[[(d, i) for i in m.inputs.index[small]], "c"] = 0.5
        m.times.loc[[(d, i) for i in m.inputs.index[~small]], "c"] = np.nan
    record(store, m, {d: "gpu" for d in m.device_ids})
    model = tune_from_source(store, "toy", VARIANTS, ["size"], target="dev0", progress=False)
    assert model.provenance["n_training_rows"] == 3 * 30
    sizes = m.inputs["size"].to_numpy()
    picks = np.array([model.variants[c] for c in model.predict_index(sizes[:, None])])
    assert (picks[sizes < 50] == "c").all() and (picks[sizes > 200] == "b").all()
