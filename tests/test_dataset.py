"""Dataset directories: text device columns are metadata, numeric ones device features."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nitro.dataset import Measurements, load_dataset_dir
from nitro.transfer.data import TransferData


def write_dataset(directory, devices: dict):
    """Three devices, four inputs, two variants, and the device columns given."""
    names = ["d0", "d1", "d2"]
    pd.DataFrame({"device": names, **devices}).to_csv(directory / "devices.csv", index=False)
    pd.DataFrame({"input": [f"i{k}" for k in range(4)], "size": [1.0, 2.0, 3.0, 4.0]}).to_csv(
        directory / "inputs.csv", index=False)
    rows = [{"device": d, "input": f"i{k}", "variant": v, "time_s": 1.0 + k + (v == "b")}
            for d in names for k in range(4) for v in ("a", "b")]
    pd.DataFrame(rows).to_csv(directory / "measurements.csv", index=False)
    return directory


def test_text_device_columns_are_metadata_and_never_features(tmp_path):
    write_dataset(tmp_path, {"vendor": ["nvidia", "amd", "intel"], "kind": ["gpu", "gpu", "cpu"],
                             "arch": ["kepler", "gcn", "cascade_lake"], "foo": ["1", "x", ""],
                             "cores": [2688, 3840, 20], "peak_gbps": [250.0, None, 140.8]})
    m = load_dataset_dir(tmp_path)
    assert m.device_feature_names == ["cores", "peak_gbps"]
    assert m.metadata_names == ["vendor", "kind", "arch", "foo"]
    assert m.device_metadata("arch") == {"d0": "kepler", "d1": "gcn", "d2": "cascade_lake"}
    assert m.device_metadata("foo") == {"d0": "1", "d1": "x", "d2": None}
    assert m.device_metadata("no_such_column") is None
    assert (m.devices["arch"] == "kepler").sum() == 1        # holding out a family by its arch
    data = TransferData.from_measurements(m)
    assert data.device_features == ["cores", "peak_gbps"] and data.D.shape == (3, 2)
    with pytest.raises(ValueError, match="numeric device feature, not metadata"):
        m.device_metadata("cores")
    with pytest.raises(ValueError, match=r"\['arch'\] are metadata"):
        TransferData.from_measurements(m, device_features=["cores", "arch"])


def test_a_numeric_column_with_empty_cells_stays_numeric(tmp_path):
    write_dataset(tmp_path, {"kind": ["gpu", "gpu", "gpu"], "l2_cache_kb": ["1536", "", "4096"],
                             "empty": ["", "", ""]})
    m = load_dataset_dir(tmp_path)
    assert m.metadata_names == ["kind"]
    assert m.devices["l2_cache_kb"].dtype == float and np.isnan(m.devices.loc["d1", "l2_cache_kb"])
    assert m.devices.loc["d2", "l2_cache_kb"] == 4096.0
    assert "l2_cache_kb" in TransferData.from_measurements(m).device_features


def test_vendor_kind_and_arch_are_metadata_even_as_numbers_and_mixed_columns_are_named(tmp_path):
    """``arch: 70`` (a compute capability) is a family, not a figure; ``16 GB`` beside plain
    numbers, or numbers with units in every cell, make a column metadata, and a note says so."""
    write_dataset(tmp_path, {"arch": [70, 80, 80], "mem": ["16 GB", "32", "40"], "cores": [1, 2, 3],
                             "bw": ["900 GB/s", "1.5e3GB/s", ".9 TB/s"], "name": ["V100", "A100 40GB", "A100"]})
    m = load_dataset_dir(tmp_path)
    assert m.device_feature_names == ["cores"] and m.device_metadata("arch") == {"d0": "70", "d1": "80", "d2": "80"}
    assert any("device column 'mem' holds text ('16 GB') beside 2 numbers" in n for n in m.notes)
    assert any("device column 'bw' holds numbers with units ('900 GB/s')" in n for n in m.notes)
    assert not any("'arch'" in n or "'name'" in n for n in m.notes)     # names are text, not figures


@pytest.mark.parametrize("stem, repeated", [("devices", "device 'd1'"), ("inputs", "input 'i2'")])
def test_a_device_or_input_given_twice_is_refused_by_name(tmp_path, stem, repeated):
    """Two rows of one device (or input) would have one silently win, or crash later."""
    write_dataset(tmp_path, {"cores": [1, 2, 3]})
    table = pd.read_csv(tmp_path / f"{stem}.csv")
    pd.concat([table, table.iloc[[len(table) - 2]]]).to_csv(tmp_path / f"{stem}.csv", index=False)
    with pytest.raises(ValueError, match=f"{stem}.csv: {repeated} appears more than once"):
        load_dataset_dir(tmp_path)


def test_rows_that_name_no_device_or_input_are_left_out_and_said_so(tmp_path):
    """An empty name reads as NaN (kept as NaN by pandas' string columns): such a row is dropped,
    with a note naming the file, instead of reaching the store as a device called nan."""
    write_dataset(tmp_path, {"cores": [1, 2, 3]})
    devices = pd.read_csv(tmp_path / "devices.csv")
    pd.concat([devices, pd.DataFrame([{"device": None, "cores": 8}])]).to_csv(tmp_path / "devices.csv", index=False)
    inputs = pd.read_csv(tmp_path / "inputs.csv")
    pd.concat([inputs, pd.DataFrame([{"input": None, "size": 9.0}])]).to_csv(tmp_path / "inputs.csv", index=False)
    m = load_dataset_dir(tmp_path)
    assert list(m.devices.index) == ["d0", "d1", "d2"] and list(m.inputs.index) == ["i0", "i1", "i2", "i3"]
    assert f"{tmp_path / 'devices.csv'}: 1 row without a device name left out" in m.notes


@pytest.mark.dataset
def test_the_shared_spmv_devices_keep_their_architecture(spmv_dataset):
    m = load_dataset_dir(spmv_dataset)
    assert {"vendor", "kind", "arch"} <= set(m.metadata_names)
    assert m.device_metadata("arch")["tesla_k20xm"] == "kepler"
    assert "arch" not in TransferData.from_measurements(m).device_features


def test_ids_are_read_as_written(tmp_path):
    """"007" stays "007": pandas alone reads 7, or 7.0 in a column with an empty cell, and a
    chunked reading could then give one input two ids."""
    pd.DataFrame({"device": ["007"], "vendor": ["x"]}).to_csv(tmp_path / "devices.csv", index=False)
    pd.DataFrame({"input": ["01", "2.0"], "size": [1.0, 2.0]}).to_csv(tmp_path / "inputs.csv", index=False)
    pd.DataFrame({"device": ["007", "007", None], "input": ["01", "2.0", "01"], "variant": ["a", "a", "a"],
                  "time_s": [1.0, 2.0, 3.0]}).to_csv(tmp_path / "measurements.csv", index=False)
    data = load_dataset_dir(tmp_path)
    assert data.device_ids == ["007"] and list(data.inputs.index) == ["01", "2.0"]
    assert list(data.devices.index) == ["007"]


def test_a_time_of_zero_or_less_is_refused_by_name():
    """0 would be the fastest variant for some steps and a failure for others: no such time."""
    idx = pd.MultiIndex.from_product([["dev"], ["in0", "in1"]], names=["device", "input"])
    times = pd.DataFrame({"a": [1.0, 0.0], "b": [2.0, np.inf]}, index=idx)
    inputs = pd.DataFrame({"n": [1.0, 2.0]}, index=["in0", "in1"])
    with pytest.raises(ValueError, match=r"1 times are zero or negative \(first: variant 'a' on input 'in1' of device 'dev'"):
        Measurements(times, inputs, pd.DataFrame({"cores": [4.0]}, index=["dev"]))


def test_rows_stored_with_a_time_of_zero_are_read_as_failed_runs_not_refused():
    """Before times had to be positive a store could hold a 0: it is read, not lost."""
    from nitro.row import TrainingRow
    rows = {"dev": [TrainingRow("i", {"n": 1.0}, {"a": 0.0, "b": 1.0}), TrainingRow("j", {"n": 2.0}, {"a": 2.0, "b": 1.0})]}
    m = Measurements.from_rows(rows, ["a", "b"], ["n"])
    assert np.isnan(m.times.loc[("dev", "i"), "a"]) and m.times.loc[("dev", "j"), "a"] == 2.0
    assert m.notes == ["1 measurements have a stored time of zero or less: read as failed runs"]


RECORDED = sorted((Path(__file__).resolve().parents[1] / "datasets").glob("*/*/measurements.csv"))


@pytest.mark.parametrize("measurements", RECORDED, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_every_recording_under_datasets_reads_as_its_device(measurements):
    """The folders recorded with ``nitro record`` (CPUs and GPUs) stay readable as the format
    evolves: one device, the one ``device.json`` names, every input timed and given a best variant."""
    import json
    data = load_dataset_dir(measurements.parent)
    recorded = json.loads((measurements.parent.parent / "device.json").read_text())
    assert set(data.times.index.get_level_values(0)) == set(recorded) and len(data.devices) == 1
    assert len(data.inputs) >= 48 and data.times.notna().any(axis=1).all()
    assert data.device_feature_names and not data.notes


def test_rows_naming_nothing_and_headers_naming_a_column_twice_are_told(tmp_path):
    """A measurement without a variant is dropped with a note; a header naming a column twice
    is refused (pandas would read the second as ``cores.1``, a feature of its own)."""
    write_dataset(tmp_path, {"cores": [1, 2, 3]})
    with open(tmp_path / "measurements.csv", "a") as f:
        f.write("d0,i0,,1.0\nd1,,a,2.0\n")
    assert "2 measurements name no device, input or variant (an empty cell): dropped" in load_dataset_dir(tmp_path).notes
    table = pd.read_csv(tmp_path / "devices.csv")
    table.assign(clock=[5, 6, 7]).to_csv(tmp_path / "devices.csv", index=False, header=["device", "cores", "cores"])
    with pytest.raises(ValueError, match="devices.csv: not a readable CSV file: column 'cores' appears more than once"):
        load_dataset_dir(tmp_path)


def test_times_that_look_like_nanoseconds_are_noted_and_seconds_are_not(tmp_path):
    """time_s is read as seconds; a median run of hours (times written in ns) gets a note
    saying so, the same times in seconds none."""
    write_dataset(tmp_path, {"cores": [1.0, 2.0, 3.0]})
    assert not any("median time_s" in n for n in load_dataset_dir(tmp_path).notes)
    meas = pd.read_csv(tmp_path / "measurements.csv")
    meas["time_s"] *= 1e9
    meas.to_csv(tmp_path / "measurements.csv", index=False)
    data = load_dataset_dir(tmp_path)
    assert any(n.startswith("the median time_s is 3e+09 s") and "ns" in n for n in data.notes), data.notes
    assert data.times.max().max() == 5e9            # read as written, in seconds
