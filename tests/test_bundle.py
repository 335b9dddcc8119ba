"""Model bundles: built from the SpMV data in a real (embedded) store with ``nitro bundle build``,
loaded without the store, and each fallback path checked against what it stands for."""
from __future__ import annotations

import json

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


def test_unknown_device_without_features_gets_the_default(spmv):
    _, eight, _ = spmv
    model, info = load_bundle(eight).model_for("some_future_accelerator", query=False)
    assert model is None and info["path"] == "default" and info["variant"] == load_bundle(eight).default


def test_missing_features_are_taken_from_the_nearest_source(spmv):
    store, eight, _ = spmv
    features = {k: r["value"] for k, r in store.device(LEFT_OUT).items() if k != "mem_clock_mhz"}
    model, info = load_bundle(eight).model_for("new_gpu", device_features=features, kind="gpu")
    assert info["path"] == "transfer" and list(info["imputed"]) == ["mem_clock_mhz"]


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


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(format="something"), "not a nitro model bundle"),
    (lambda d: d.update(version=99), "unsupported bundle version 99"),
    (lambda d: d.update(default="zzz"), "default 'zzz' is not one of its variants"),
    (lambda d: d["devices"]["dev1"]["model"].update(kind="magic"), "unknown model kind"),
    (lambda d: d["devices"]["dev1"].update(features={"cores": "many"}), "not a finite number"),
    (lambda d: d.pop("devices"), "malformed bundle"),
    (lambda d: d.update(datasheet={"gpu1": {"kind": "gpu", "names": [1080]}}), "names must be a list of text"),
    (lambda d: d.update(datasheet={"gpu1": {"kind": "gpu", "names": "gtx 1080"}}), "names must be a list of text"),
    (lambda d: d.update(datasheet={"gpu1": ["gpu"]}), "datasheet row 'gpu1' must be an object"),
    (lambda d: d.update(datasheet={"gpu1": {"kind": 7}}), "kind must be text"),
    (lambda d: d.update(datasheet={"gpu1": {"names": ["x"], "features": {"bw": None}}}), "'bw' is None, not a finite"),
])
def test_invalid_bundles_are_refused_with_the_reason(tmp_path, edit, message):
    data = json.loads(_small(tmp_path).read_text())
    edit(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=message):
        load_bundle(bad)


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
    with pytest.raises(ValueError, match="ragged"):
        pack([[1.0, 2.0], [3.0]])
    (tmp_path / "text.json").write_text("not json")
    with pytest.raises(ValueError, match="not readable JSON"):
        load_bundle(tmp_path / "text.json")


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
