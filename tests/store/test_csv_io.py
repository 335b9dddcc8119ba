import numpy as np
import pandas as pd
import pytest

from nitro.dataset import load_dataset_dir
from nitro.row import TrainingRow
from nitro.store.csv_io import export_computation, import_computation


def test_export_import_round_trip(store, tmp_path):
    store.declare("hist", ["a", "b"], ["N", "S"])
    store.put_device("dev1", {"cores": {"value": 2.0, "unit": "cores", "source": "query"}})
    store.put_rows("hist", "dev1", [TrainingRow(f"i{k}", {"N": k, "S": 0.5}, {"a": 1.0 + k, "b": None},
                                                {"b": "wrong result"}) for k in range(5)])
    out = export_computation(store, "hist", tmp_path / "ds")
    assert out == {"devices": 1, "inputs": 5, "measurements": 10}       # b's failed runs too, with why
    with pytest.raises(ValueError, match="already holds a dataset"):     # an earlier export is not written over
        export_computation(store, "hist", tmp_path / "ds")
    (tmp_path / "ds" / "inputs.csv.gz").write_bytes(b"stale")
    assert export_computation(store, "hist", tmp_path / "ds", replace=True) == out     # a recording's rewrite
    assert not (tmp_path / "ds" / "inputs.csv.gz").exists()
    data = load_dataset_dir(tmp_path / "ds")
    assert list(data.inputs.columns) == ["N", "S"] and data.devices.loc["dev1", "cores"] == 2.0
    assert not data.notes and list(pd.read_csv(tmp_path / "ds" / "measurements.csv").columns)[-1] == "error"
    assert import_computation(store, "hist-copy", tmp_path / "ds")["notes"] == []
    assert store.meta("hist-copy") == store.meta("hist")         # b, which failed everywhere, stays in
    assert store.rows("hist-copy", "dev1") == store.rows("hist", "dev1")     # the reasons too
    notes = import_computation(store, "hist-more", tmp_path / "ds", variants=["a", "b", "c"])["notes"]
    assert notes == [f"variants ['c'] have no valid time in {tmp_path / 'ds'}/measurements (measured: ['a', 'b']): "
                     "recorded with no time on every input"]


def test_malformed_directory_writes_nothing(store, tmp_path):
    pd.DataFrame({"device": ["d"], "input": ["i"], "t": [1.0]}).to_csv(tmp_path / "measurements.csv", index=False)
    with pytest.raises(ValueError, match="needs columns"):
        import_computation(store, "x", tmp_path)
    pd.DataFrame({"device": ["d"], "input": ["i"], "variant": ["a"], "time_ms": [1.0]}).to_csv(
        tmp_path / "measurements.csv", index=False)
    with pytest.raises(ValueError, match="is 'time_ms' a time[?] give it in seconds, as 'time_s'"):
        import_computation(store, "x", tmp_path)
    with pytest.raises(ValueError, match="is 'time_ms' a time[?]"):
        load_dataset_dir(tmp_path)
    with pytest.raises(FileNotFoundError):
        import_computation(store, "x", tmp_path / "missing")
    assert store.computations() == []


def test_a_devices_row_without_a_name_is_left_out_of_the_import(store, tmp_path):
    """Found by the property test of ``tests/test_input_properties.py``: an empty device name
    reached the store's key check as NaN, an error that named no file."""
    pd.DataFrame([{"device": "d1", "input": "i1", "variant": "a", "time_s": 1.0}]).to_csv(
        tmp_path / "measurements.csv", index=False)
    pd.DataFrame([{"input": "i1", "N": 0.0}]).to_csv(tmp_path / "inputs.csv", index=False)
    pd.DataFrame([{"device": None, "cores": None}], columns=["device", "cores"]).to_csv(
        tmp_path / "devices.csv", index=False)
    result = import_computation(store, "x", tmp_path)
    assert result["rows"] == 1 and store.devices("x") == ["d1"]
    assert f"{tmp_path / 'devices.csv'}: 1 row without a device name left out" in result["notes"]


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


def test_a_recordings_profiles_are_imported_for_p_dfs(store, tmp_path):
    """A one-device folder's variant profiles (``profiles.json``) and the proxy profiles beside its
    ``device.json`` reach the store, where P-DFS reads them; a malformed file writes nothing."""
    import shutil
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "datasets" / "cpu_amd_epyc_2t"
    r = import_computation(store, "histogram", root / "histogram")
    profiles, proxies = store.profiles("histogram", "cpu_amd_epyc_2t"), store.proxy_profiles("cpu_amd_epyc_2t")
    assert len(profiles) == 24 and len(proxies) == 30 and ("ATOMIC", 3) in proxies
    assert any("24 variant profiles" in n for n in r["notes"])
    copy = tmp_path / "dev" / "histogram"
    shutil.copytree(root / "histogram", copy)
    (copy / "profiles.json").write_text('{"sort_even": {"inst_executed": 1}}')      # no '|input'
    store.client.flushall()
    with pytest.raises(ValueError, match="not a profiles file"):
        import_computation(store, "histogram", copy)
    assert store.computations() == []


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
    header = pd.read_csv(tmp_path / "out" / "devices.csv").columns.tolist()   # c1, first, has no arch
    assert header[0] == "device" and set(header[1:3]) == {"kind", "arch"} and header[3:] == ["cores"]


def test_device_metadata_must_be_text(store):
    with pytest.raises(ValueError, match="non-empty strings"):
        store.put_device_metadata("d", {"kind": 3})
    assert store.device_metadata("d") == {}


def _tricky_dataset(directory, inputs=12):
    """A directory that exercises every rule of the reading: ids that look like numbers, a
    feature column with no number, one with text among numbers, one empty on most inputs, an
    input with a missing feature, repeated measurements
    (their median), times that are no valid time, an input without features, and measurement
    lines out of order, so that an input's lines fall in different chunks."""
    directory.mkdir()
    pd.DataFrame({"device": ["007", "d2"], "kind": ["gpu", "cpu"], "cores": [10, 2]}).to_csv(directory / "devices.csv", index=False)
    ids = [f"0{i}" for i in range(inputs)]
    pd.DataFrame({"input": ids, "N": [float(i) if i != 3 else None for i in range(inputs)],
                  "S": [0.5] * inputs, "note": ["x"] * inputs,
                  "group": [str(i) if i % 4 else "g" for i in range(inputs)],          # text, though most cells are numbers
                  "sparse": [1.0 if i < 3 else None for i in range(inputs)]}          # empty on most inputs: left out, not they
                 ).to_csv(directory / "inputs.csv", index=False)
    lines = [{"device": d, "input": i, "variant": v, "time_s": 1.0 + k + (v == "b")}
             for d in ("007", "d2") for k, i in enumerate(ids + ["ghost"]) for v in ("a", "b")]
    lines += [{"device": "007", "input": "00", "variant": "a", "time_s": 5.0},      # median of 1, 5, 9: 5
              {"device": "007", "input": "00", "variant": "a", "time_s": 9.0},
              {"device": "007", "input": "ghost", "variant": "a", "time_s": 2.0},   # no repeat: left out
              {"device": "d2", "input": "01", "variant": "b", "time_s": -1.0},      # no valid time
              {"device": "d2", "input": "02", "variant": "b", "time_s": "fast"},
              {"device": "d2", "input": "02", "variant": "c", "time_s": 0.0}]       # c has no valid time
    pd.DataFrame(lines[::-1]).to_csv(directory / "measurements.csv", index=False)
    return directory


def test_streamed_import_reads_what_load_dataset_dir_reads(store, tmp_path, monkeypatch):
    import nitro.store.csv_io as csv_io
    monkeypatch.setattr(csv_io, "CHUNK", 5)       # many chunks: an input's lines are spread over them
    src = _tricky_dataset(tmp_path / "src")
    result = import_computation(store, "t", src)
    ref = load_dataset_dir(src)
    assert result == {"devices": 2, "rows": 22, "notes": ref.notes}
    assert ref.notes == ["input column 'note' holds text ('x'): not an input feature",
                         "input column 'group' holds text ('g'): not an input feature",
                         "input column 'sparse' is empty or not finite on 9 of 12 inputs: left out",
                         "1 of 12 inputs left out: an empty or non-finite input feature (N: 1)",
                         "1 inputs timed in measurements have no row in inputs (such as 'ghost'): their measurements "
                         "are left out",
                         "2 measurements have a time_s of zero or less: read as failed runs",
                         "1 measurements have a time_s that is no finite number (1 text such as 'fast'): dropped",
                         "1 device/input/variant triples are timed on more than one row (up to 3): each keeps the "
                         "median of its times"]
    assert store.meta("t") == {"variants": ["a", "b"], "features": ["N", "S"]} == \
        {"variants": ref.variants, "features": list(ref.inputs.columns)}
    assert store.devices("t") == ["007", "d2"] == ref.device_ids
    for device in ref.device_ids:
        times = ref.for_device(device)
        rows = store.rows("t", device)
        assert [r.input_id for r in rows] == list(times.index) and "03" not in times.index
        for r in rows:
            assert r.features == ref.inputs.loc[r.input_id].to_dict()
            assert r.times == {v: (None if pd.isna(t) else t) for v, t in times.loc[r.input_id].items()}
    assert store.rows("t", "007")[0].times["a"] == 5.0 and store.rows("t", "d2")[1].times["b"] == 3.0   # -1 s: no time
    assert store.device("007")["cores"]["value"] == 10 and store.device_metadata("007") == {"kind": "gpu"}


def test_a_bad_line_far_into_a_file_or_a_repeated_input_writes_nothing(store, tmp_path, monkeypatch):
    import nitro.store.csv_io as csv_io
    monkeypatch.setattr(csv_io, "CHUNK", 5)
    src = _tricky_dataset(tmp_path / "src", inputs=30)
    with open(src / "measurements.csv", "a") as f:
        f.write("d2,05,a,1.0,surplus\n")
    lines = len((src / "measurements.csv").read_text().splitlines())
    with pytest.raises(ValueError, match=rf"measurements.csv: not a readable CSV file: .*line {lines}"):
        import_computation(store, "t", src)
    _tricky_dataset(tmp_path / "again", inputs=30)
    with open(tmp_path / "again" / "inputs.csv", "a") as f:
        f.write("07,1.0,2.0,y\n")
    with pytest.raises(ValueError, match=r"inputs.csv: input '07' appears more than once"):
        import_computation(store, "t", tmp_path / "again")
    assert store.computations() == [] and store.device_ids() == []


def test_an_import_cut_off_by_the_store_leaves_whole_rows_and_completes_when_run_again(redis_server, tmp_path,
                                                                                     monkeypatch):
    """The store refuses half-way (a real server; here an ACL user whose keys stop at the
    second device's rows): the transactions acknowledged hold whole rows of the import, the
    rows recorded before are untouched, and the same import run again gives one import's rows."""
    from nitro.store import Store, StoreError
    monkeypatch.setattr(Store, "BATCH", 4)
    server = redis_server()
    admin = Store(server.url)
    src = _tricky_dataset(tmp_path / "src", inputs=30)
    import_computation(admin, "clean", src)
    full = {d: admin.rows("clean", d) for d in admin.devices("clean")}
    old = TrainingRow("recorded-before", {"N": 1.0, "S": 2.0}, {"a": 3.0, "b": None})
    admin.declare("t", ["a", "b"], ["N", "S"])
    admin.put_rows("t", "d2", [old])
    admin.client.execute_command("ACL", "SETUSER", "cut", "on", ">pw", "+@all", "~nitro:schema", "~nitro:computations",
                                 "~nitro:devices", "~nitro:device:*", "~nitro:device_metadata:*", "~nitro:{t}:meta",
                                 "~nitro:{t}:devices", "~nitro:{t}:rows:007")
    with pytest.raises(StoreError, match="lacks a permission"):
        import_computation(Store(server.url.replace("redis://", "redis://cut:pw@")), "t", src)
    assert admin.rows("t", "007") == full["007"]                 # written whole, in transactions of 4
    assert admin.rows("t", "d2") == [old]                          # refused: nothing of it written
    import_computation(admin, "t", src)
    assert admin.rows("t", "007") == full["007"] and admin.rows("t", "d2") == sorted(
        full["d2"] + [old], key=lambda r: r.input_id)


def test_streamed_export_is_sorted_and_round_trips_through_many_store_batches(store, tmp_path, monkeypatch):
    from nitro.store import Store
    monkeypatch.setattr(Store, "BATCH", 7)
    import_computation(store, "t", _tricky_dataset(tmp_path / "src", inputs=40))
    assert export_computation(store, "t", tmp_path / "out") == {"devices": 2, "inputs": 39, "measurements": 156}
    meas = pd.read_csv(tmp_path / "out" / "measurements.csv", dtype=str)
    assert list(zip(meas["device"], meas["input"])) == sorted(zip(meas["device"], meas["input"]))
    assert pd.read_csv(tmp_path / "out" / "inputs.csv", dtype={"input": str})["input"].is_monotonic_increasing
    import_computation(store, "back", tmp_path / "out")
    assert all(store.rows("back", d) == store.rows("t", d) for d in store.devices("t"))
    one = store.devices("t")[0]
    assert export_computation(store, "t", tmp_path / "one", devices=[one])["devices"] == 1
    assert set(pd.read_csv(tmp_path / "one" / "measurements.csv", dtype=str)["device"]) == {one}
    with pytest.raises(ValueError, match="no rows recorded on nowhere"):
        export_computation(store, "t", tmp_path / "none", devices=["nowhere"])


def test_a_device_that_never_timed_a_variant_joins_the_stored_computation(store, tmp_path):
    for device, variants in (("full", ["a", "b"]), ("partial", ["a"])):
        folder = tmp_path / device
        folder.mkdir()
        pd.DataFrame({"device": [device], "cores": [2.0]}).to_csv(folder / "devices.csv", index=False)
        pd.DataFrame({"input": ["i0", "i1"], "N": [1.0, 2.0]}).to_csv(folder / "inputs.csv", index=False)
        pd.DataFrame([{"device": device, "input": i, "variant": v, "time_s": 1.0 + k}
                      for i in ("i0", "i1") for k, v in enumerate(variants)]).to_csv(folder / "measurements.csv", index=False)
        import_computation(store, "joined", folder)
    assert store.meta("joined")["variants"] == ["a", "b"]
    rows = store.rows("joined", "partial")
    assert len(rows) == 2 and all(r.times["b"] is None and r.best == "a" for r in rows)


def _folder(directory, devices, times, inputs=("i0", "i1", "i2")):
    """A dataset directory: ``devices`` (rows of devices.csv), ``times`` ({(device, input,
    variant): time_s}) and inputs whose feature N is their position."""
    directory.mkdir()
    pd.DataFrame(devices).to_csv(directory / "devices.csv", index=False)
    pd.DataFrame({"input": list(inputs), "N": [float(k) for k in range(len(inputs))]}).to_csv(
        directory / "inputs.csv", index=False)
    pd.DataFrame([{"device": d, "input": i, "variant": v, "time_s": t} for (d, i, v), t in times.items()]).to_csv(
        directory / "measurements.csv", index=False)
    return directory


def test_a_reimport_timing_some_variants_keeps_the_stored_times_of_the_others(store, tmp_path, monkeypatch):
    """Re-importing 3 of 5 variants replaces those times and keeps the other 2 (and a stored
    failure reason) of the same device and input; other inputs and devices are untouched."""
    from nitro.store import Store
    monkeypatch.setattr(Store, "BATCH", 2)          # the stored rows are read, and written, in many batches
    five, inputs = ["a", "b", "c", "d", "e"], [f"i{k}" for k in range(5)]
    devices = {"device": ["g1", "g2"], "cores": [4.0, 8.0]}
    _folder(tmp_path / "all", devices, {(d, i, v): 1.0 + k for d in ("g1", "g2") for i in inputs
                                        for k, v in enumerate(five)}, inputs)
    import_computation(store, "spmv", tmp_path / "all")
    store.put_row("spmv", "g1", TrainingRow("i0", {"N": 0.0}, {**dict.fromkeys(five, 1.0), "e": None},
                                            {"e": "wrong result"}))
    before = {d: store.rows("spmv", d) for d in ("g1", "g2")}
    _folder(tmp_path / "some", devices, {("g1", i, v): 10.0 for i in inputs[:3] + ["i9"] for v in ("a", "b", "c")},
            inputs + ["i9"])
    result = import_computation(store, "spmv", tmp_path / "some")
    rows = {r.input_id: r for r in store.rows("spmv", "g1")}
    assert rows["i1"].times == {"a": 10.0, "b": 10.0, "c": 10.0, "d": 4.0, "e": 5.0}
    assert rows["i0"].times == {"a": 10.0, "b": 10.0, "c": 10.0, "d": 1.0, "e": None}
    assert rows["i0"].failed == {"e": "wrong result"}
    assert rows["i9"].times == {"a": 10.0, "b": 10.0, "c": 10.0, "d": None, "e": None}    # new: nothing to keep
    assert [rows[i] for i in inputs[3:]] == before["g1"][3:] and store.rows("spmv", "g2") == before["g2"]
    assert "3 stored rows merged: they keep their stored times of variants this directory does not time " \
           "for their input (d, e)" in result["notes"]


def test_device_values_that_differ_from_the_store_are_refused_unless_update_devices(store, tmp_path):
    """Device records are shared by every computation: another value is an error naming it and
    writing nothing; float rounding is no difference; a new feature is added; with
    update_devices the records are overwritten and the changes noted."""
    times = {(d, i, "a"): 1.0 for d in ("g1", "c1") for i in ("i0", "i1")}
    _folder(tmp_path / "first", {"device": ["g1", "c1"], "kind": ["gpu", "cpu"], "cores": [5120, 20]}, times)
    import_computation(store, "one", tmp_path / "first")
    _folder(tmp_path / "other", {"device": ["g1", "c1"], "kind": ["cpu", "cpu"], "cores": [1, 20]}, times)
    with pytest.raises(ValueError, match=r"devices.csv: 2 device values differ .*g1 cores: stored 5120.0, new 1.0; "
                                         r"g1 kind: stored 'gpu', new 'cpu'.*update_devices=True "
                                         r"\(nitro store import --update-devices\)"):
        import_computation(store, "two", tmp_path / "other")
    assert store.computations() == ["one"]
    assert store.device("g1")["cores"]["value"] == 5120 and store.device_metadata("g1")["kind"] == "gpu"
    _folder(tmp_path / "rounded", {"device": ["g1"], "cores": [5120 * (1 + 1e-12)], "l2_kb": [6144]}, times)
    assert not any("g1" in n for n in import_computation(store, "two", tmp_path / "rounded")["notes"])
    assert store.device("g1")["cores"]["value"] == 5120 and store.device("g1")["l2_kb"]["value"] == 6144
    result = import_computation(store, "three", tmp_path / "other", update_devices=True)
    assert "device g1 record updated: cores 5120.0 -> 1.0, kind 'gpu' -> 'cpu'" in result["notes"]
    assert store.device("g1")["cores"]["value"] == 1 and store.device_metadata("g1") == {"kind": "cpu"}
    assert store.device("g1")["l2_kb"]["value"] == 6144          # not in the directory: kept


def test_the_update_devices_option_of_nitro_store_import(redis_server, tmp_path, capsys):
    from nitro.cli import main
    from nitro.store import Store
    server = redis_server()
    store = Store(server.url)
    times = {("g1", i, "a"): 1.0 for i in ("i0", "i1")}
    _folder(tmp_path / "first", {"device": ["g1"], "cores": [8]}, times)
    _folder(tmp_path / "other", {"device": ["g1"], "cores": [16]}, times)
    assert main(["store", "import", str(tmp_path / "first"), "one", "--store", server.url]) == 0
    assert main(["store", "import", str(tmp_path / "other"), "two", "--store", server.url]) == 2
    assert "g1 cores: stored 8.0, new 16.0" in capsys.readouterr().err and store.computations() == ["one"]
    assert main(["store", "import", str(tmp_path / "other"), "two", "--store", server.url, "--update-devices"]) == 0
    assert "note: device g1 record updated: cores 8.0 -> 16.0" in capsys.readouterr().out
    assert store.device("g1")["cores"]["value"] == 16


def test_a_device_of_devices_csv_without_measurements_is_recorded_for_tuning_from_sources(store, tmp_path):
    """The zero-shot case: a target with specifications and no timings gets its record, and
    tune_from_source finds its features."""
    from nitro.transfer.tune import tune_from_source
    inputs = [f"i{k}" for k in range(24)]
    sources = {"s1": 1.0, "s2": 10.0, "s3": 3.0}
    times = {(d, i, v): (1.0 if (k < cores) == (v == "a") else 2.0)
             for d, cores in sources.items() for k, i in enumerate(inputs) for v in ("a", "b")}
    _folder(tmp_path / "ds", {"device": [*sources, "new_gpu"], "kind": ["gpu"] * 4, "cores": [*sources.values(), 6.0]},
            times, inputs)
    result = import_computation(store, "toy", tmp_path / "ds")
    assert result["devices"] == 3 and store.devices("toy") == ["s1", "s2", "s3"]
    assert store.device("new_gpu") == {"cores": {"value": 6.0, "unit": "", "source": "datasheet"}}
    assert store.device_metadata("new_gpu") == {"kind": "gpu"}
    assert "1 devices of devices.csv have no measurements here (new_gpu): their features and metadata are " \
           "recorded, for tuning from sources" in result["notes"]
    model = tune_from_source(store, "toy", ["a", "b"], ["N"], target="new_gpu", search_based_dfs=False,
                             progress=False, save=False)
    assert model.provenance["target"] == "new_gpu" and model.provenance["device_features"] == ["cores"]


def test_a_measured_device_missing_from_devices_csv_is_noted_with_a_close_name(store, tmp_path):
    times = {(d, i, "a"): 1.0 for d in ("Tesla_K40m", "tesla_k20", "mystery") for i in ("i0", "i1")}
    _folder(tmp_path / "ds", {"device": ["tesla_k40m ", "tesla_k20xm"], "cores": [2880, 2688]}, times)
    notes = import_computation(store, "x", tmp_path / "ds")["notes"]
    tail = ": its rows are stored without device features; tune-from-source cannot use it as a source until " \
           "its features are recorded"
    assert f"device 'Tesla_K40m' has no row in devices.csv (did you mean 'tesla_k40m '?){tail}" in notes
    assert f"device 'tesla_k20' has no row in devices.csv (did you mean 'tesla_k20xm'?){tail}" in notes
    assert f"device 'mystery' has no row in devices.csv{tail}" in notes
    store.put_device("mystery", {"cores": {"value": 4.0}})          # recorded since: no note
    assert not any("mystery" in n for n in import_computation(store, "x", tmp_path / "ds")["notes"])


def test_times_that_are_no_finite_number_are_counted_in_the_notes(store, tmp_path):
    src = _folder(tmp_path / "ds", {"device": ["g1"], "cores": [4]}, {("g1", "i0", "a"): 1.0})
    with open(src / "measurements.csv", "a") as f:
        f.write("g1,i1,a,\ng1,i1,a,NaN\ng1,i1,b,inf\ng1,i2,a,fast\ng1,i2,b,-1\ng1,i2,b,2.0\n")
    result = import_computation(store, "x", src)
    assert result["rows"] == 2 and result["notes"][-2:] == [
        "1 measurements have a time_s of zero or less: read as failed runs",
        "4 measurements have a time_s that is no finite number (2 empty or NaN, 1 infinite, 1 text such as "
        "'fast'): dropped"]


def test_a_round_trip_keeps_the_variants_order_and_so_the_default(store, tmp_path):
    """The store's first variant is the default of bundles and headers built without --default."""
    store.declare("ordered", ["zeta", "alpha", "mid"], ["n"])
    store.put_rows("ordered", "dev1", [TrainingRow(f"i{k}", {"n": float(k)}, {"zeta": 1.0, "alpha": 2.0, "mid": 3.0})
                                       for k in range(3)])
    export_computation(store, "ordered", tmp_path / "ds")
    import_computation(store, "ordered-copy", tmp_path / "ds")
    assert store.meta("ordered-copy")["variants"] == ["zeta", "alpha", "mid"]


def test_units_and_sources_of_device_features_survive_export_and_import(store, tmp_path):
    store.declare("hist", ["a", "b"], ["N"])
    store.put_device("dev1", {"cores": {"value": 2.0, "unit": "cores", "source": "query"},
                              "triad": {"value": 24.9, "unit": "GB/s", "source": "microbench"},
                              "boost": {"value": None, "unit": "MHz", "source": "datasheet"}})
    store.put_rows("hist", "dev1", [TrainingRow(f"i{k}", {"N": k}, {"a": 1.0 + k, "b": 2.0}, {}) for k in range(3)])
    export_computation(store, "hist", tmp_path / "ds")
    table = pd.read_csv(tmp_path / "ds" / "device_features.csv")
    assert table.columns.tolist() == ["device", "feature", "unit", "source"] and len(table) == 3
    store.client.flushdb()
    import_computation(store, "hist", tmp_path / "ds")
    assert store.device("dev1") == {"cores": {"value": 2.0, "unit": "cores", "source": "query"},
                                    "triad": {"value": 24.9, "unit": "GB/s", "source": "microbench"},
                                    "boost": {"value": None, "unit": "MHz", "source": "datasheet"}}
    with pytest.raises(ValueError, match="already holds a dataset"):      # the side file counts as a dataset's
        (tmp_path / "ds2").mkdir()
        (tmp_path / "ds" / "device_features.csv").rename(tmp_path / "ds2" / "device_features.csv")
        export_computation(store, "hist", tmp_path / "ds2")
    pd.DataFrame({"device": ["dev1"], "what": ["x"]}).to_csv(tmp_path / "ds" / "device_features.csv", index=False)
    with pytest.raises(ValueError, match="device_features.csv: has the columns"):
        import_computation(store, "hist", tmp_path / "ds")


def test_a_value_less_feature_never_replaces_a_stored_value(store, tmp_path):
    store.declare("hist", ["a"], ["N"])
    store.put_device("dev1", {"boost": {"value": None, "unit": "MHz", "source": "datasheet"}})
    store.put_rows("hist", "dev1", [TrainingRow("i0", {"N": 1}, {"a": 1.0}, {})])
    export_computation(store, "hist", tmp_path / "ds")
    store.put_device("dev1", {"boost": {"value": 1500.0, "unit": "MHz", "source": "user"}})
    import_computation(store, "hist", tmp_path / "ds")      # no error: an empty cell agrees with any value
    assert store.device("dev1")["boost"] == {"value": 1500.0, "unit": "MHz", "source": "user"}


def test_a_recordings_device_json_gives_units_and_sources(store, tmp_path):
    import json
    from pathlib import Path
    recording = Path(__file__).parents[2] / "datasets" / "cpu_amd_epyc_2t"
    import_computation(store, "spmv", recording / "spmv")
    stored = store.device("cpu_amd_epyc_2t")
    record = json.loads((recording / "device.json").read_text())["cpu_amd_epyc_2t"]
    assert {k: (v["unit"], v["source"]) for k, v in stored.items()} == \
           {k: (v["unit"], v["source"]) for k, v in record.items()}


def test_an_import_says_which_device_features_come_from_the_store_not_the_file(store, tmp_path):
    store.put_device("dev1", {"cores": {"value": 8.0, "unit": "", "source": "query"},
                              "l2_kb": {"value": 512.0, "unit": "KB", "source": "query"}})
    src = tmp_path / "src"
    src.mkdir()
    pd.DataFrame({"device": ["dev1"], "cores": [8.0], "l2_kb": [None]}).to_csv(src / "devices.csv", index=False)
    pd.DataFrame({"input": ["i0", "i1"], "N": [1.0, 2.0]}).to_csv(src / "inputs.csv", index=False)
    pd.DataFrame([{"device": "dev1", "input": i, "variant": v, "time_s": 1.5}
                  for i in ("i0", "i1") for v in ("a", "b")]).to_csv(src / "measurements.csv", index=False)
    notes = import_computation(store, "toy", src)["notes"]
    assert [n for n in notes if "keep the store's values" in n] == [
        f"1 device features empty or absent in {src / 'devices.csv'} keep the store's values, which tuning from "
        "sources reads (dev1: l2_kb); nitro evaluate on the directory sees them empty"]
    assert store.device("dev1")["l2_kb"]["value"] == 512.0


def test_measurement_columns_not_read_are_noted_by_import_and_evaluate_alike(store, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    pd.DataFrame({"device": ["dev1"], "cores": [8.0]}).to_csv(src / "devices.csv", index=False)
    pd.DataFrame({"input": ["i0", "i1"], "N": [1.0, 2.0]}).to_csv(src / "inputs.csv", index=False)
    pd.DataFrame([{"device": "dev1", "input": i, "variant": v, "time_s": 1.5, "unit": "ms", "std_s": 0.1}
                  for i in ("i0", "i1") for v in ("a", "b")]).to_csv(src / "measurements.csv", index=False)
    said = f"{src}/measurements: columns ['unit', 'std_s'] are not read (only device, input, variant, time_s and error; time_s in seconds)"
    assert said in import_computation(store, "toy", src)["notes"]
    assert said in load_dataset_dir(src).notes


def test_names_that_pandas_reads_as_missing_are_kept(store, tmp_path):
    # an input, device or variant may be called "NA", "null", "None" or "nan": a name, not a gap
    names = ["NA", "null", "None", "nan", "N/A", "#N/A", "<NA>", "007"]
    store.declare("na", ["NaN", "b"], ["N"])
    store.put_rows("na", "NULL", [TrainingRow(n, {"N": float(k)}, {"NaN": 1.0 + k, "b": 2.0}, {})
                                  for k, n in enumerate(names)])
    assert export_computation(store, "na", tmp_path / "ds") == {"devices": 1, "inputs": 8, "measurements": 16}
    data = load_dataset_dir(tmp_path / "ds")
    assert sorted(data.inputs.index) == sorted(names) and data.device_ids == ["NULL"] and data.variants == ["NaN", "b"]
    assert not data.notes
    assert import_computation(store, "na-copy", tmp_path / "ds") == {"devices": 1, "rows": 8, "notes": []}
    assert sorted(r.input_id for r in store.rows("na-copy", "NULL")) == sorted(names)
    # a feature or time written as "NA" is still a missing number
    (tmp_path / "gap").mkdir()
    pd.DataFrame({"device": ["d"] * 4, "input": list("wxyz"), "variant": ["a"] * 4,
                  "time_s": ["1e-3", "2e-3", "NA", "3e-3"]}).to_csv(tmp_path / "gap" / "measurements.csv", index=False)
    pd.DataFrame({"input": list("wxyz"), "N": ["1", "NA", "3", "4"], "M": ["2", "3", "4", "5"]}).to_csv(
        tmp_path / "gap" / "inputs.csv", index=False)
    pd.DataFrame({"device": ["d"], "cores": ["NA"], "ghz": [2.0]}).to_csv(tmp_path / "gap" / "devices.csv", index=False)
    gap = load_dataset_dir(tmp_path / "gap")
    assert list(gap.inputs.columns) == ["N", "M"] and list(gap.inputs.index) == ["w", "y", "z"]
    assert list(gap.times.index.get_level_values("input")) == ["w", "z"]
    assert np.isnan(gap.devices.loc["d", "cores"]) and not any("text" in n for n in gap.notes), gap.notes


def test_an_updated_value_takes_its_own_unit_and_a_unit_alone_differing_is_a_difference(store, tmp_path):
    def directory(name, clock, unit):
        d = tmp_path / name
        d.mkdir()
        pd.DataFrame({"device": ["g"], "clock": [clock]}).to_csv(d / "devices.csv", index=False)
        pd.DataFrame({"device": ["g"], "feature": ["clock"], "unit": [unit], "source": ["query"]}).to_csv(
            d / "device_features.csv", index=False)
        pd.DataFrame({"device": ["g"], "input": ["i"], "variant": ["a"], "time_s": [1e-3]}).to_csv(
            d / "measurements.csv", index=False)
        pd.DataFrame({"input": ["i"], "N": [1.0]}).to_csv(d / "inputs.csv", index=False)
        return d
    import_computation(store, "u", directory("mhz", 1200, "MHz"))
    with pytest.raises(ValueError, match="g clock unit: stored 'MHz', new 'kHz'"):    # same number, other unit
        import_computation(store, "u", directory("khz", 1200, "kHz"))
    assert store.device("g")["clock"]["unit"] == "MHz"
    import_computation(store, "u", directory("ghz", 1.2, "GHz"), update_devices=True)
    assert store.device("g")["clock"] == {"value": 1.2, "unit": "GHz", "source": "query"}    # not 1.2 MHz


def test_a_column_the_stored_computation_lacks_is_noted_not_read(store, tmp_path):
    store.declare("h", ["a"], ["N"])
    store.put_rows("h", "d1", [TrainingRow("i0", {"N": 1.0}, {"a": 1.0}, {})])
    export_computation(store, "h", tmp_path / "ds")
    inputs = pd.read_csv(tmp_path / "ds" / "inputs.csv")
    inputs["extra"] = 3.0
    inputs.to_csv(tmp_path / "ds" / "inputs.csv", index=False)
    notes = import_computation(store, "h", tmp_path / "ds")["notes"]
    assert notes == [f"{tmp_path / 'ds'}/inputs: columns ['extra'] are not features of the stored computation 'h' "
                     "(['N']): not read"]
    assert store.meta("h")["features"] == ["N"]


def test_an_input_no_measurement_names_is_noted_by_import_and_evaluate_alike(store, tmp_path):
    d = tmp_path / "ds"
    d.mkdir()
    pd.DataFrame({"device": ["g"], "cores": [2]}).to_csv(d / "devices.csv", index=False)
    pd.DataFrame({"input": ["i0", "i1", "lonely"], "N": [1.0, 2.0, 3.0]}).to_csv(d / "inputs.csv", index=False)
    pd.DataFrame({"device": ["g"] * 2, "input": ["i0", "i1"], "variant": ["a"] * 2, "time_s": [1e-3, 2e-3]}).to_csv(
        d / "measurements.csv", index=False)
    note = "1 inputs listed in inputs have no measurement (such as 'lonely'): left out"
    assert load_dataset_dir(d).notes == [note] == import_computation(store, "lone", d)["notes"]


def test_a_reimported_failure_replaces_the_stored_time_and_an_untimed_variant_keeps_it(store, tmp_path):
    store.declare("re", ["a", "b", "c"], ["N"])
    store.put_rows("re", "d1", [TrainingRow("i0", {"N": 1.0}, {"a": 1.0, "b": 2.0, "c": 3.0}, {})])
    d = tmp_path / "ds"
    d.mkdir()
    pd.DataFrame({"device": ["d1"], "cores": [2]}).to_csv(d / "devices.csv", index=False)
    pd.DataFrame({"input": ["i0"], "N": [1.0]}).to_csv(d / "inputs.csv", index=False)
    pd.DataFrame({"device": ["d1", "d1"], "input": ["i0", "i0"], "variant": ["a", "b"], "time_s": [4.0, None],
                  "error": [None, "wrong result"]}).to_csv(d / "measurements.csv", index=False)
    notes = import_computation(store, "re", d)["notes"]
    row, = store.rows("re", "d1")
    assert row.times == {"a": 4.0, "b": None, "c": 3.0} and row.failed == {"b": "wrong result"}
    assert notes == ["1 stored rows merged: they keep their stored times of variants this directory does not time "
                     "for their input (c)"]


def test_an_import_interrupted_while_writing_says_what_it_left_and_completes_when_run_again(redis_server, tmp_path,
                                                                                           monkeypatch, capsys):
    """A Ctrl-C that arrives as the third transaction is about to be sent (a KeyboardInterrupt
    raised inside redis-py): ``nitro store import`` exits 130 saying how many devices' rows are
    written and that running it again completes the import; the rows written are whole rows of
    the import, and the run again gives the rows of one import."""
    import redis

    from nitro.cli import main
    from nitro.store import Store
    monkeypatch.setattr(Store, "BATCH", 4)
    server = redis_server()
    src = _tricky_dataset(tmp_path / "src", inputs=30)
    admin = Store(server.url)
    import_computation(admin, "clean", src)
    full = {d: admin.rows("clean", d) for d in admin.devices("clean")}
    real, sent = redis.client.Pipeline.execute, []

    def execute(pipe, *args, **kwargs):
        if pipe.explicit_transaction:        # an import's transaction (MULTI ... EXEC)
            sent.append(1)
            if len(sent) == 3:
                raise KeyboardInterrupt
        return real(pipe, *args, **kwargs)
    monkeypatch.setattr(redis.client.Pipeline, "execute", execute)
    assert main(["store", "import", str(src), "t", "--store", server.url]) == 130
    err = capsys.readouterr().err
    assert "nitro: interrupted" in err and "the rows of 0 of 2 devices are written, 007's in part" in err
    assert "run the same import again to complete it" in err
    stored = admin.rows("t", "007")
    assert len(stored) == 4 and all(r in full["007"] for r in stored)     # the declaration, then one batch of 4
    monkeypatch.setattr(redis.client.Pipeline, "execute", real)
    assert main(["store", "import", str(src), "t", "--store", server.url]) == 0
    assert {d: admin.rows("t", d) for d in admin.devices("t")} == full


def test_a_measured_device_whose_devices_row_gives_no_feature_is_noted(store, tmp_path):
    """A devices.csv row with every numeric cell empty: the rows are imported, and the import
    says that the device has no features, as for a device without a row at all."""
    times = {(d, i, "a"): 1.0 for d in ("k40", "bare") for i in ("i0", "i1")}
    _folder(tmp_path / "ds", {"device": ["k40", "bare"], "cores": [2880, None], "arch": ["kepler", "pascal"]}, times)
    notes = import_computation(store, "x", tmp_path / "ds")["notes"]
    assert any(n.startswith("devices ['bare'] have no device feature in devices.csv") and
               "tune-from-source cannot use them as sources" in n for n in notes), notes
    assert not any("'k40'" in n for n in notes)
    store.put_device("bare", {"cores": {"value": 4.0}})             # recorded since: no such note
    assert not any("no device feature" in n for n in import_computation(store, "x", tmp_path / "ds")["notes"])


def test_an_import_notes_times_that_look_like_nanoseconds(store, tmp_path):
    """The import says what nitro evaluate says of a time_s column whose median run is hours."""
    times = {("d0", i, v): t for i, t0 in (("i0", 2e4), ("i1", 5e4)) for v, t in (("a", t0), ("b", 2 * t0))}
    _folder(tmp_path / "ds", {"device": ["d0"], "cores": [8]}, times, inputs=("i0", "i1"))
    notes = import_computation(store, "x", tmp_path / "ds")["notes"]
    assert any(n.startswith("the median time_s is 4.5e+04 s") for n in notes), notes
    assert load_dataset_dir(tmp_path / "ds").notes == [n for n in notes if "median time_s" in n]
