"""Model bundles: built from the SpMV data in a real (embedded) store with ``nitro bundle build``,
loaded without the store, and each fallback path checked against what it stands for."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from nitro import code_variant, load_bundle
from nitro.bundle import Bundle, pack
from nitro.cli import main
from nitro.model import SelectorModel

LEFT_OUT = "tesla_v100_sxm2"


@pytest.fixture(scope="module")
def spmv(spmv_dataset, tmp_path_factory):
    """The SpMV data imported into the embedded store, and bundles built from it by the CLI:
    one without ``LEFT_OUT`` and one with all 9 devices."""
    from nitro.store import Store
    tmp = tmp_path_factory.mktemp("bundle")
    assert main(["store", "import", str(spmv_dataset), "spmv_bundle"]) == 0
    store = Store()
    devices = [d for d in store.devices("spmv_bundle") if d != LEFT_OUT]
    assert main(["bundle", "build", "spmv_bundle", "--learner", "tree", "--devices", ",".join(devices),
                 "-o", str(tmp / "eight.json.gz")]) == 0
    assert main(["bundle", "build", "spmv_bundle", "--learner", "tree", "-o", str(tmp / "nine.json.gz")]) == 0
    return store, tmp / "eight.json.gz", tmp / "nine.json.gz"


def _rows(store, device):
    meta = store.meta("spmv_bundle")
    rows = store.rows("spmv_bundle", device)
    return rows, np.array([[r.features[f] for f in meta["features"]] for r in rows])


def _quality(model, rows, X) -> float:
    """Mean % of the optimum of the model's choices on recorded rows (0 for a failed choice)."""
    out = []
    for row, i in zip(rows, model.predict_index(X)):
        t = row.times.get(model.variants[i])
        out.append(row.times[row.best] / t if t else 0.0)
    return 100 * float(np.mean(out))


def test_exact_device_chooses_as_the_stored_model(spmv):
    store, eight, nine = spmv
    bundle = load_bundle(nine)
    assert nine.stat().st_size <= 2_000_000
    assert len(bundle.devices) == 9 and set(bundle.transfer) == {"gpu", "*"}
    for device in bundle.devices:
        model, info = bundle.model_for(device)
        assert info == {"path": "exact", "device": device}
        stored = SelectorModel.from_dict(store.model("spmv_bundle", device))
        rows, X = _rows(store, device)
        np.testing.assert_array_equal(model.compiled().predict_batch(X), stored.compiled().predict_batch(X))


def test_product_match_by_reported_name(spmv):
    _, eight, _ = spmv
    model, info = load_bundle(eight).model_for("Tesla P100-PCIE-16GB")
    assert info["path"] == "product" and info["as"] == "tesla_p100" and model is not None


def test_left_out_device_transfers_within_half_a_point_of_tune_from_source(spmv):
    from nitro.transfer.tune import tune_from_source
    store, eight, _ = spmv
    meta = store.meta("spmv_bundle")
    features = {k: r["value"] for k, r in store.device(LEFT_OUT).items()}
    model, info = load_bundle(eight).model_for(LEFT_OUT, device_features=features, kind="gpu")
    assert info["path"] == "transfer" and info["block"] == "gpu" and not info["imputed"]
    reference = tune_from_source(store, "spmv_bundle", meta["variants"], meta["features"], target=LEFT_OUT,
                                 search_based_dfs=False, progress=False)   # a block holds every feature's model
    assert sorted(info["source_weights"]) == sorted(reference.provenance["sources"])
    rows, X = _rows(store, LEFT_OUT)
    assert abs(_quality(model, rows, X) - _quality(reference, rows, X)) <= 0.5


def test_a_transfer_says_whether_the_device_lies_outside_the_sources(spmv):
    """The transfer path gave a model for any device, with nothing telling a library's user that
    one far from every source gets what the sources show, not a model to trust; it says so, as
    tune_from_source's estimate does (no ``outside_sources`` on a device within them)."""
    store, eight, _ = spmv
    features = {k: r["value"] for k, r in store.device(LEFT_OUT).items()}
    assert load_bundle(eight).model_for(LEFT_OUT, device_features=features, kind="gpu")[1]["outside_sources"] is False
    far = {k: v * 50 for k, v in features.items()}
    model, info = load_bundle(eight).model_for("future_gpu", device_features=far, kind="gpu")
    assert info["path"] == "transfer" and info["outside_sources"] is True
    assert model.provenance["outside_sources"] is True

def test_unknown_device_without_features_gets_the_default(spmv):
    _, eight, _ = spmv
    model, info = load_bundle(eight).model_for("some_future_accelerator", query=False)
    assert model is None and info["path"] == "default" and info["variant"] == load_bundle(eight).default


def test_missing_features_are_taken_from_the_nearest_source(spmv):
    store, eight, _ = spmv
    features = {k: r["value"] for k, r in store.device(LEFT_OUT).items() if k != "mem_clock_mhz"}
    model, info = load_bundle(eight).model_for("new_gpu", device_features=features, kind="gpu")
    assert info["path"] == "transfer" and list(info["imputed"]) == ["mem_clock_mhz"]
    assert load_bundle(eight).model_for("gpu:1", device_features=features)[1]["block"] == "gpu"   # a GPU by name
    assert load_bundle(eight).model_for("new_gpu", device_features=features)[1]["block"] == "*"
    model, info = load_bundle(eight).model_for("new_gpu", device_features={"core": 5000}, kind="gpu")
    assert model is None and "none of the device features ['core'] is one of the block's" in info["reason"]
    with pytest.raises(ValueError, match="kind 'GPU': give 'cpu' or 'gpu'"):
        load_bundle(eight).model_for("new_gpu", device_features=features, kind="GPU")


def test_a_text_kind_in_the_device_features_picks_the_block_as_kind_does(spmv):
    """A ``--target-features`` file holds ``"kind": "gpu"`` beside the figures: it is metadata,
    taken as ``kind=`` (without it, the ``*`` block mixing in the CPU source chose otherwise)."""
    store, eight, _ = spmv
    bundle = load_bundle(eight)
    features = {k: r["value"] for k, r in store.device(LEFT_OUT).items()}
    model, info = bundle.model_for("new_gpu", device_features={"kind": "gpu", **features})
    assert info["block"] == "gpu" and info["features_from"] == "given"
    assert model == bundle.model_for("new_gpu", device_features=features, kind="gpu")[0]
    cv = code_variant("spmv_bundle", {v: (lambda *a: v) for v in bundle.variants},
                      {f: (lambda *a: 1.0) for f in bundle.input_features})
    assert cv.use_bundle(bundle, device="new_gpu", device_features={"kind": "gpu", **features})["block"] == "gpu"
    with pytest.raises(ValueError, match="kind 'cpu' and device_features' \"kind\": 'gpu' differ"):
        bundle.model_for("new_gpu", device_features={"kind": "gpu", **features}, kind="cpu")
    with pytest.raises(ValueError, match="kind 'tpu': give 'cpu' or 'gpu'"):
        bundle.model_for("new_gpu", device_features={"kind": "tpu", **features})
    with pytest.raises(ValueError, match="device_features: 'vendor' is 'nvidia', not a finite number"):
        bundle.model_for("new_gpu", device_features={"vendor": "nvidia", **features})
    with pytest.raises(TypeError, match="device_features must be a mapping name -> number, got a list"):
        cv.use_bundle(bundle, device="new_gpu", device_features=[1, 2])


def test_the_store_own_xeon_is_matched_to_its_datasheet_product(spmv):
    """Its id (xeon_gold_6230) leaves out the vendor's word of every datasheet name."""
    _, _, nine = spmv
    bundle = load_bundle(nine)
    assert bundle.devices["xeon_gold_6230"]["product"] == "intel_xeon_gold_6230"
    model, info = bundle.model_for("Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz", query=False)
    assert info == {"path": "product", "device": "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz",
                    "product": "intel_xeon_gold_6230", "as": "xeon_gold_6230"}


def test_a_failed_build_stores_nothing_and_provenance_says_which_models_were_fitted(spmv, tmp_path, capsys):
    store, _, nine = spmv
    provenance = load_bundle(nine).provenance
    assert provenance["built_from"] == "embedded store"      # not the author's own path
    assert provenance["fitted"] == {"learner": "tree", "devices": [LEFT_OUT]}    # the eight others: the first build's
    assert len(provenance["stored_models"]) == 8 and LEFT_OUT not in provenance["stored_models"]
    store.declare("fresh", *[store.meta("spmv_bundle")[k] for k in ("variants", "features")])
    store.put_rows("fresh", "dev1", store.rows("spmv_bundle", LEFT_OUT)[:40])
    for bad, message in [(["--default", "nope"], "the default 'nope' is not one of its variants"),
                         (["--devices", "dev1,dev9"], "neither rows nor a model of 'dev9'")]:
        assert main(["bundle", "build", "fresh", "--learner", "tree", "-o", str(tmp_path / "f.json"), *bad]) == 2
        assert message in capsys.readouterr().err
        assert store.model("fresh", "dev1") is None          # refused before any model was fitted and stored
    assert main(["bundle", "build", "fresh", "--learner", "tree", "-o", str(tmp_path / "f.json")]) == 0
    assert "fitted with --learner tree and stored: dev1" in capsys.readouterr().out
    assert load_bundle(tmp_path / "f.json").provenance["fitted"] == {"learner": "tree", "devices": ["dev1"]}


def test_build_says_which_default_it_took_and_which_stored_models_it_left_out(spmv, tmp_path, capsys):
    """A model without rows (tune-from-source's target) is in no default device list: the build
    says so and how to add it; without --default it says the store's first variant was taken."""
    store, _, _ = spmv
    variants, features = (store.meta("spmv_bundle")[k] for k in ("variants", "features"))
    store.declare("with_target", variants, features)
    store.put_rows("with_target", "dev1", store.rows("spmv_bundle", LEFT_OUT)[:40])
    store.put_model("with_target", "new_gpu", SelectorModel(variants, features, "constant", {"label": 1}))
    out = tmp_path / "t.json"
    assert main(["bundle", "build", "with_target", "--learner", "tree", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"default {variants[0]} (the store's first variant: pass --default" in text
    assert "left out the store's models of new_gpu (devices without rows): add them with --devices dev1,new_gpu" in text
    assert main(["bundle", "build", "with_target", "--devices", "dev1,new_gpu", "--default", variants[1],
                 "-o", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["models_left_out"] == [] and result["default"] == variants[1]
    assert sorted(load_bundle(out).devices) == ["dev1", "new_gpu"]


def test_a_tune_from_source_target_added_with_devices_ships_beside_the_transfer_blocks(spmv, tmp_path, capsys):
    """README's author workflow: a new GPU tuned by ``nitro tune-from-source --target
    a100_sxm4_40gb`` (its device record, datasheet figures and kind, stored with its model, no
    rows) and then added with ``--devices``: the bundle ships its model, found by the name the
    GPU reports, while the transfer blocks are built from the devices that have rows alone."""
    store, _, _ = spmv
    variants, features = (store.meta("spmv_bundle")[k] for k in ("variants", "features"))
    sources = ["tesla_k20xm", "tesla_k40m", "titan_v"]
    rows = {d: {r.input_id: r for r in store.rows("spmv_bundle", d)} for d in sources}
    common = sorted(set.intersection(*(set(r) for r in rows.values())))[:60]
    store.declare("zero_shot", variants, features)
    for d in sources:
        store.put_rows("zero_shot", d, [rows[d][i] for i in common])
    assert main(["tune-from-source", "zero_shot", "--target", "a100_sxm4_40gb", "--no-cv-dfs"]) == 0
    assert store.rows("zero_shot", "a100_sxm4_40gb") == [] and store.model("zero_shot", "a100_sxm4_40gb")
    capsys.readouterr()
    out = tmp_path / "z.json.gz"
    assert main(["bundle", "build", "zero_shot", "--learner", "tree", "--default", "csr",
                 "--devices", ",".join([*sources, "a100_sxm4_40gb"]), "-o", str(out)]) == 0, capsys.readouterr().err
    bundle = load_bundle(out)
    assert sorted(bundle.devices) == sorted([*sources, "a100_sxm4_40gb"])
    assert {k: sorted(t.sources) for k, t in bundle.transfer.items()} == {"gpu": sorted(sources)}
    _, info = bundle.model_for("NVIDIA A100-SXM4-40GB", query=False)
    assert info["path"] == "product" and info["as"] == "a100_sxm4_40gb"


def test_build_warns_where_a_shipped_model_is_one_its_own_estimate_calls_low(spmv, tmp_path, capsys):
    """A zero-shot model whose estimate is low (a GPU of a family no source shares got 73% on a
    permuted copy of the SpMV data) shipped in a bundle must not go silently: the build names it,
    why, and what to do; a few-shot model still low on its timed inputs too, or timed on too few
    of them to vouch for 90%; a sound one not."""
    store, _, _ = spmv
    variants, features = (store.meta("spmv_bundle")[k] for k in ("variants", "features"))
    store.declare("shipped", variants, features)
    store.put_rows("shipped", "dev1", store.rows("spmv_bundle", LEFT_OUT)[:40])
    low = {"confidence": {"level": "low", "low_because": ["outside the sources' device features (10.0 from mi250x)"],
                          "few_shot_inputs": 21}}
    few = {"few_shot": {"estimate": {"level": "low", "quality": 0.789, "inputs": 44}}}
    unsure = {"few_shot": {"estimate": {"level": "uncertain", "quality": 0.995, "lower": 0.735, "inputs": 6,
                                        "inputs_needed": 19}}}
    new = {"confidence": {"level": "uncertain", "low_because": ["a family no source shares: held out with its "
                                                                "family, a source got 84.0%"]}}
    fine = {"confidence": {"level": "high", "low_because": []}}
    for device, provenance in (("far_gpu", low), ("few_gpu", few), ("unsure_gpu", unsure), ("new_gpu", new),
                               ("near_gpu", fine)):
        store.put_model("shipped", device, SelectorModel(variants, features, "constant", {"label": 1},
                                                         provenance=provenance).to_dict())
    out = tmp_path / "s.json"
    assert main(["bundle", "build", "shipped", "--learner", "tree", "--devices", "dev1,far_gpu,few_gpu,unsure_gpu,new_gpu,near_gpu",
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert ("warning: the model of far_gpu may be far off there (zero-shot, estimate low: outside the sources' "
            "device features (10.0 from mi250x)): time inputs on it (nitro tune-from-source --target far_gpu "
            "--target-budget 21, or Autotuner.tune_from_source(..., target_budget=21))") in text
    assert ("the model of few_gpu may be far off there (few-shot, 78.9% of the optimum on the 44 inputs timed): "
            "time inputs on it (nitro tune-from-source --target few_gpu --target-budget 88,") in text
    assert ("the model of unsure_gpu may be far off there (few-shot, 99.5% of the optimum on the 6 inputs timed, "
            "too few to vouch for more than 73.5%): time inputs on it (nitro tune-from-source --target unsure_gpu "
            "--target-budget 19,") in text
    # a model stored before the estimate recorded its count: the advice keeps the placeholder
    assert "--target new_gpu --target-budget N," in text
    assert "near_gpu may be far off" not in text and "dev1 may be far off" not in text
    assert ("the model of new_gpu may be far off there (zero-shot, estimate uncertain: a family no source "
            "shares") in text
    assert set(load_bundle(out).provenance["low_estimates"]) == {"far_gpu", "few_gpu", "unsure_gpu", "new_gpu"}


# -- a small bundle, no store -----------------------------------------------------------------
def _intervals(threshold: float, labels) -> SelectorModel:
    return SelectorModel(variants=["a", "b"], input_features=["n"], kind="intervals",
                         params={"feature": 0, "thresholds": [threshold], "labels": list(labels)})


def _small(tmp_path, name="small.json"):
    bundle = Bundle.build("toy", ["a", "b"], ["n"], "a", {"dev1": _intervals(10.0, [0, 1]),
                                                           "dev2": _intervals(5.0, [1, 0])})
    return bundle.save(tmp_path / name)


def test_use_bundle_sets_the_model_and_says_how(tmp_path):
    path = _small(tmp_path)
    cv = code_variant("toy", {"a": lambda n: "a", "b": lambda n: "b"}, {"n": lambda n: n}, default="a")
    assert cv.use_bundle(path, device="dev1") == {"path": "exact", "device": "dev1"}
    assert (cv(3), cv(30)) == ("a", "b")
    assert cv.use_bundle(path, device="dev2")["path"] == "exact" and (cv(3), cv(30)) == ("b", "a")
    assert cv.use_bundle(path, device="elsewhere", query=False)["path"] == "default"
    assert cv.model is None and cv.bundle_choice["path"] == "default" and cv(30) == "a"
    own = code_variant("toy", {"a": lambda n: "a", "b": lambda n: "b"}, {"n": lambda n: n}, default="b")
    assert own.use_bundle(path, device="elsewhere", query=False)["variant"] == "b" == own(30)   # what runs
    other = code_variant("other", {"a": lambda n: "a"}, {"n": lambda n: n})
    with pytest.raises(ValueError, match="bundle is for 'toy'"):
        other.use_bundle(path)
    renamed = code_variant("toy", {"a": lambda n: "a", "c": lambda n: "c"}, {"n": lambda n: n})
    with pytest.raises(ValueError, match=r"choose among variants \['b'\] that this code variant does not have"):
        renamed.use_bundle(path, device="elsewhere", query=False)     # refused even where no model applies
    import zipfile                                  # a library imported from a zip: a Traversable, not a path
    with zipfile.ZipFile(tmp_path / "mylib.zip", "w") as z:
        z.write(path, "mylib/data/small.json")
    assert cv.use_bundle(zipfile.Path(tmp_path / "mylib.zip") / "mylib/data/small.json", device="dev2")["path"] == "exact"
    with pytest.raises(TypeError, match="got a dict .a parsed bundle: Bundle.from_dict"):
        cv.use_bundle(json.loads(path.read_text()))
    with pytest.raises(FileNotFoundError, match="the folder .*nowhere does not exist"):
        load_bundle(path).save(tmp_path / "nowhere" / "b.json")
    for device, error in [(123, TypeError), ("", TypeError)]:
        with pytest.raises(error, match="non-empty string"):
            cv.use_bundle(path, device=device)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(format="something"), "not a nitro model bundle"),
    (lambda d: d.update(version=99), "unsupported bundle version 99 .*written by a newer nitro .upgrade nitro"),
    (lambda d: d.update(version=0), "unsupported bundle version 0 .this nitro reads 1, 2, 3.$"),
    # fields this nitro does not know: a newer nitro's, whose meaning would be dropped
    (lambda d: d.update(min_reader=3), "bundle field 'min_reader' is unknown to this nitro: .*newer nitro"),
    (lambda d: d["devices"]["dev1"].update(threads=2), "device 'dev1': field 'threads' is unknown"),
    (lambda d: d["devices"]["dev1"]["model"]["params"].update(side="left"),
     "the model of device 'dev1': .*intervals model parameter 'side' is unknown to this nitro"),
    (lambda d: d.update(datasheet={"gpu1": {"names": ["x"], "tdp": 300}}), "datasheet row 'gpu1': field 'tdp' is unknown"),
    (lambda d: d.update(default="zzz"), "default 'zzz' is not one of its variants"),
    (lambda d: d["devices"]["dev1"]["model"].update(kind="magic"), "unknown model kind"),
    (lambda d: d["devices"]["dev1"].update(features={"cores": "many"}), "not a finite number"),
    (lambda d: d.pop("devices"), "malformed bundle: it has no 'devices'"),
    (lambda d: d["devices"]["dev1"].pop("model"), "device 'dev1' has no 'model'"),
    (lambda d: d["devices"].update(dev1=["model"]), "device 'dev1' must be an object"),
    (lambda d: d.update(datasheet={"gpu1": {"kind": "gpu", "names": [1080]}}), "names must be a list of text"),
    (lambda d: d.update(datasheet={"gpu1": {"kind": "gpu", "names": "gtx 1080"}}), "names must be a list of text"),
    (lambda d: d.update(datasheet={"gpu1": ["gpu"]}), "datasheet row 'gpu1' must be an object"),
    (lambda d: d.update(datasheet={"gpu1": {"kind": 7}}), "kind must be text"),
    (lambda d: d.update(datasheet={"gpu1": {"names": ["x"], "features": {"bw": None}}}), "'bw' is None, not a finite"),
    (lambda d: d["devices"]["dev1"]["model"]["params"].update(thresholds=["10"]), "the model of device 'dev1'"),
    (lambda d: d.update(version=True), "unsupported bundle version True"),
    (lambda d: d.update(devices=None), "'devices' must be a dict, got NoneType"),
    (lambda d: d.update(computation=None), "'computation' must be text"),
    (lambda d: d.update(variants=["a", "a"]), "'variants' must be distinct names"),
    (lambda d: d["devices"]["dev1"].update(product=7), "product and kind must be text or null"),
    (lambda d: d["devices"]["dev1"].update(features={"cores": 10 ** 400}), "not a finite number"),
])
def test_invalid_bundles_are_refused_with_the_reason(tmp_path, edit, message):
    data = json.loads(_small(tmp_path).read_text())
    for entry in data["devices"].values():           # version 3: each model is JSON text, edited as data
        entry["model"] = json.loads(entry["model"])
    edit(data)
    for entry in (data.get("devices") or {}).values():
        if isinstance(entry, dict) and isinstance(entry.get("model"), dict):
            entry["model"] = json.dumps(entry["model"])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=message):
        load_bundle(bad).check()          # the outline on load, each model where it is read


def test_a_broken_model_is_refused_where_it_is_read_naming_the_file_and_device(tmp_path, capsys):
    """Loading reads a bundle's outline; each device's model is read on first use, so a broken one
    fails where it is used (and in check(), which nitro bundle show runs), naming file and device,
    while the other devices' models serve."""
    path = _small(tmp_path)
    data = json.loads(path.read_text())
    data["devices"]["dev1"]["model"] = data["devices"]["dev1"]["model"][:-2]      # cut short
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    bundle = load_bundle(bad)
    assert bundle.model_for("dev2")[1]["path"] == "exact"
    for read in (lambda: bundle.model_for("dev1"), bundle.check):
        with pytest.raises(ValueError, match=f"bundle {re.escape(str(bad))}: the model of device 'dev1': "):
            read()
    assert main(["bundle", "show", str(bad), "--device", "dev2"]) == 2
    assert f"nitro: error: bundle {bad}: the model of device 'dev1': " in capsys.readouterr().err


@pytest.mark.parametrize("edit, message", [
    (lambda t: t["offset"].__setitem__(0, float("nan")), "transfer block '\\*': its offset holds values that are not"),
    (lambda t: t["input"]["mean"].__setitem__(0, float("nan")), "its input mean holds values that are not finite"),
    (lambda t: t["input"].update(scale=[0.0]), "inconsistent shapes or values"),
    (lambda t: t.update(varies=["no"]), "transfer block '\\*': malformed .*expected true or false"),
    (lambda t: t.update(spread2="1"), "expected a number"),
    (lambda t: t.update(sources=["dev1", "dev1"]), "its sources must be distinct names"),
    (lambda t: t.update(bias=[0.0]), "transfer block '\\*': field 'bias' is unknown to this nitro"),
    (lambda t: t["input"].update(shift=[0.0]), "transfer block '\\*': input field 'shift' is unknown"),
])
def test_a_broken_transfer_block_is_refused_on_load_naming_it(tmp_path, edit, message):
    from nitro.bundle import Transfer
    block = Transfer(sources=["dev1", "dev2"], device_features=["cores"], variants=["a", "b"],
                     input={"signed_log": True, "mean": [0.0], "scale": [1.0], "gamma": 0.5, "centers": [[0.0], [3.0]]},
                     weights=[[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]], offset=[0.0, 0.0],
                     dev_mean=[2.2], dev_std=[0.6], varies=[True], spread2=1.0)
    info = {d: {"features": {"cores": c}} for d, c in (("dev1", 4), ("dev2", 16))}
    path = Bundle.build("toy", ["a", "b"], ["n"], "a", {"dev1": _intervals(10.0, [0, 1]), "dev2": _intervals(5.0, [1, 0])},
                        info=info, transfer={"*": block}).save(tmp_path / "t.json")
    assert load_bundle(path).model_for("new", device_features={"cores": 8})[1]["path"] == "transfer"
    data = json.loads(path.read_text())
    packed = data["transfer"]["*"]["weights"]["base64"]
    data["transfer"]["*"]["weights"]["base64"] = packed[:-8]        # bytes short of the shape: read on use
    path.write_text(json.dumps(data))
    lazy = load_bundle(path)
    assert lazy.model_for("dev1")[1]["path"] == "exact"            # a known device never reads the block
    for read in (lambda: lazy.model_for("new", device_features={"cores": 8}), lazy.check):
        with pytest.raises(ValueError, match="t.json: transfer block '\\*': transfer weights: .* bytes do not hold"):
            read()
    data["transfer"]["*"]["weights"]["base64"] = packed
    edit(data["transfer"]["*"])
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=message):
        load_bundle(path)


def test_bundles_are_written_as_version_3_and_versions_1_and_2_still_load(tmp_path):
    """Version 3: each model is JSON text, parsed for the device that uses it. Version 2 (models of
    format 2, as objects): readers of 1 accepted fields they did not know and dropped them, so they
    must refuse a bundle written now; bundles written before still load."""
    path = _small(tmp_path)
    data = json.loads(path.read_text())
    assert data["version"] == 3 and {json.loads(e["model"])["format"] for e in data["devices"].values()} == {2}
    now = load_bundle(path).model_for("dev2")[0]
    for version in (2, 1):
        data["version"] = version
        for entry in data["devices"].values():
            entry["model"] = json.loads(entry["model"]) if isinstance(entry["model"], str) else entry["model"]
            entry["model"]["format"] = min(version, 2)
        (tmp_path / f"v{version}.json").write_text(json.dumps(data))
        old = load_bundle(tmp_path / f"v{version}.json")
        assert old.devices.keys() == {"dev1", "dev2"} and old.model_for("dev2")[0] == now
        assert load_bundle(old.save(tmp_path / f"again{version}.json")).model_for("dev2")[0] == now


def test_packed_arrays_are_checked(tmp_path):
    from nitro.bundle import unpack
    packed = pack(np.arange(6.0).reshape(2, 3))
    assert unpack(packed, "x") == np.arange(6.0).reshape(2, 3).tolist()         # nested lists, no NumPy
    assert pack([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]) == packed
    assert unpack(pack([[0.1] * 2] * 3), "x") == np.full((3, 2), 0.1, dtype=np.float32).tolist()
    assert pack(np.zeros((2, 0, 3)))["shape"] == [2, 0, 3] and unpack(pack(np.zeros((2, 0, 3))), "x") == [[], []]
    with pytest.raises(ValueError, match="do not hold an array of shape"):
        unpack({**packed, "shape": [4, 3]}, "x")
    with pytest.raises(ValueError, match="not finite"):
        unpack(pack(np.array([1.0, np.inf])), "x")
    with pytest.raises(ValueError, match="transfer weights is not valid base64"):
        unpack({**packed, "base64": "@@@@"}, "transfer weights")
    with pytest.raises(ValueError, match="ragged"):
        pack([[1.0, 2.0], [3.0]])
    (tmp_path / "text.json").write_text("not json")
    with pytest.raises(ValueError, match="not readable JSON"):
        load_bundle(tmp_path / "text.json")


def test_os_errors_reach_the_caller_as_they_are(tmp_path):
    """A library catching OSError (PermissionError, IsADirectoryError) sees them as such, not as
    a ValueError saying the file is not JSON."""
    import os
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(IsADirectoryError, match="folder.json is a folder: a bundle is one JSON file"):
        load_bundle(tmp_path / "folder.json")
    path = _small(tmp_path)
    path.chmod(0)
    if os.geteuid() != 0:               # root reads it anyway
        with pytest.raises(PermissionError):
            load_bundle(path)


def test_bundle_show_of_a_folder_names_it_and_says_a_bundle_is_a_file(tmp_path, capsys):
    """``nitro bundle show FOLDER`` printed Python's raw "[Errno 21] Is a directory"."""
    assert main(["bundle", "show", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"nitro: error: {tmp_path} is a folder: a bundle is one JSON file" in err and "Errno" not in err


def test_gzipped_bundles_load_and_broken_ones_are_refused(tmp_path):
    import gzip
    path = _small(tmp_path, "small.json.gz")
    text = gzip.decompress(path.read_bytes())
    assert load_bundle(path).devices.keys() == {"dev1", "dev2"}
    half = len(text) // 2                       # two gzip members and zero padding, as gzip reads them
    (tmp_path / "members.json.gz").write_bytes(gzip.compress(text[:half]) + gzip.compress(text[half:]) + b"\0" * 8)
    assert load_bundle(tmp_path / "members.json.gz").devices.keys() == {"dev1", "dev2"}
    (tmp_path / "cut.json.gz").write_bytes(path.read_bytes()[:-20])
    (tmp_path / "trail.json.gz").write_bytes(path.read_bytes() + b"garbage")
    for broken in ("cut.json.gz", "trail.json.gz"):
        with pytest.raises(ValueError, match="not readable JSON"):
            load_bundle(tmp_path / broken)
