import pandas as pd
import pytest

from nitro.dataset import load_dataset_dir
from nitro.measurement import TrainingRow
from nitro.store.csv_io import export_computation, import_computation


def test_export_import_round_trip(store, tmp_path):
    store.declare("hist", ["a", "b"], ["N", "S"])
    store.put_device("dev1", {"cores": {"value": 2.0, "unit": "cores", "source": "query"}})
    store.put_rows("hist", "dev1", [TrainingRow(f"i{k}", {"N": k, "S": 0.5}, {"a": 1.0 + k, "b": None},
                                                {"b": "wrong result"}) for k in range(5)])
    out = export_computation(store, "hist", tmp_path / "ds")
    assert out == {"devices": 1, "inputs": 5, "measurements": 5}
    data = load_dataset_dir(tmp_path / "ds")
    assert list(data.inputs.columns) == ["N", "S"] and data.devices.loc["dev1", "cores"] == 2.0
    import_computation(store, "hist-copy", tmp_path / "ds", variants=["a", "b"])
    rows = store.rows("hist-copy", "dev1")
    assert len(rows) == 5 and rows[0].times["b"] is None and rows[0].best == "a"


def test_malformed_directory_writes_nothing(store, tmp_path):
    pd.DataFrame({"device": ["d"], "input": ["i"], "t": [1.0]}).to_csv(tmp_path / "measurements.csv", index=False)
    with pytest.raises(ValueError, match="needs columns"):
        import_computation(store, "x", tmp_path)
    with pytest.raises(FileNotFoundError):
        import_computation(store, "x", tmp_path / "missing")
    assert store.computations() == []


def test_imports_the_shared_spmv_dataset(store, spmv_dataset):
    result = import_computation(store, "spmv", spmv_dataset)
    assert result["devices"] == 9
    assert len(store.rows("spmv", "tesla_v100_sxm2")) > 2000
    assert store.device("tesla_v100_sxm2")["peak_gbps"]["value"] == 900
    assert not {"vendor", "kind", "arch"} & set(store.device("tesla_v100_sxm2"))
    assert store.device_metadata("tesla_v100_sxm2") == {"vendor": "nvidia", "kind": "gpu", "arch": "volta"}


def test_the_committed_cpu_dataset_loads():
    """The measurements recorded here with nitro's own tools are a valid dataset."""
    from pathlib import Path

    from nitro.dataset import load_dataset_dir
    root = Path(__file__).resolve().parents[2] / "datasets" / "cpu_amd_epyc_2t"
    for computation, n_variants in (("histogram", 6), ("spmv", 5)):
        m = load_dataset_dir(root / computation)
        assert m.device_ids == ["cpu_amd_epyc_2t"] and len(m.inputs) == 96 and len(m.variants) == n_variants


def test_device_metadata_is_kept_apart_from_features_through_import_and_export(store, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    pd.DataFrame({"device": ["g1", "c1"], "kind": ["gpu", "cpu"], "arch": ["volta", ""],
                  "cores": [5120, 20]}).to_csv(src / "devices.csv", index=False)
    pd.DataFrame({"input": ["i0", "i1"], "N": [1.0, 2.0]}).to_csv(src / "inputs.csv", index=False)
    pd.DataFrame([{"device": d, "input": i, "variant": v, "time_s": 1.5}
                  for d in ("g1", "c1") for i in ("i0", "i1") for v in ("a", "b")]).to_csv(
        src / "measurements.csv", index=False)
    import_computation(store, "toy", src)
    assert set(store.device("g1")) == {"cores"}
    assert store.device_metadata("g1") == {"kind": "gpu", "arch": "volta"}
    assert store.device_metadata("c1") == {"kind": "cpu"}
    export_computation(store, "toy", tmp_path / "out")
    back = load_dataset_dir(tmp_path / "out")
    assert back.device_feature_names == ["cores"]
    assert back.device_metadata("kind") == {"g1": "gpu", "c1": "cpu"}
    assert back.device_metadata("arch") == {"g1": "volta", "c1": None}


def test_device_metadata_must_be_text(store):
    with pytest.raises(ValueError, match="non-empty strings"):
        store.put_device_metadata("d", {"kind": 3})
    assert store.device_metadata("d") == {}
