"""``nitro bench refine`` end to end on a tiny run: a source folder relabelled from this
repository's recorded histogram data (a device id that is not this machine's)."""
import json
from pathlib import Path

import pandas as pd

from nitro.bench.refine import import_sources
from nitro.cli import main
from nitro.devices import cpu_device_id
from nitro.store import Store

RECORDED = "datasets/cpu_amd_epyc_2t/histogram"


def relabelled(tmp_path, device="cpu_elsewhere"):
    folder = tmp_path / device / "histogram"
    folder.mkdir(parents=True)
    src = Path(__file__).resolve().parents[2] / RECORDED
    for name in ("devices.csv", "inputs.csv", "measurements.csv"):
        frame = pd.read_csv(src / name)
        if "device" in frame.columns:
            frame["device"] = device
        frame.to_csv(folder / name, index=False)
    return tmp_path


def test_import_sources_leaves_this_machine_out(tmp_path, embedded_redis):
    embedded_redis.flushall()
    root = relabelled(tmp_path)
    relabelled(tmp_path, device=cpu_device_id())
    store = Store(client=embedded_redis)
    assert import_sources(store, root, exclude=cpu_device_id()) == ["cpu_elsewhere"]
    assert store.devices("histogram") == ["cpu_elsewhere"]


def test_bench_refine_json(tmp_path, capsys):
    root = relabelled(tmp_path)
    # no time budget: on a loaded machine 1% of 30 calls' time can keep back every exploration,
    # and without target rows there are no refits to time calls against
    assert main(["bench", "refine", "--json", "--stream", "30", "--train", "6", "--test", "4", "--budget", "0.1",
                 "--time-budget", "0", "--refit-every", "1", "--oracle-every", "10", "--overhead-calls", "300",
                 "--pause-seconds", "0.5", "--fresh-stream", "20", "--datasets", str(root)]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["sources"] == ["cpu_elsewhere"] and r["device"] == cpu_device_id()
    assert set(r["percent_of_optimum"]) == {"start (tune_from_source)", "refined", "tuned here (tune)"}
    s = r["stats"]
    assert 0 < s["explored"] <= 0.1 * s["calls"] + 1 and s["rows_written"] == s["rows_recorded"]
    assert s["store_errors"] == 0 and r["oracle_images"] == 3 and r["overhead"]["calls"] == 300
    assert 0.0 <= r["foreign_cpu_share"] <= 1.0
    assert s["refit"] == "SourcesRefit" and s["refit_fallback"] is None and s["refit_errors"] == 0
    during = r["calls_during_refits"]
    assert list(during) == ["none", "thread", "process"] and all(d["calls"] > 0 for d in during.values())
    f = r["fresh_stream"]
    assert f["images"] == 20 and f["vs_reference"]["tuned here (tune)"] == 1.0
    assert all(s > 0 for s in f["seconds"].values()) and f["images_differing_from_reference"]["tuned here (tune)"] == 0
    assert main(["bench", "refine", "--datasets", str(tmp_path / "nothing")]) == 2


def test_fresh_stream_charges_one_timing_to_every_model_that_chose_it():
    """Models that choose alike are charged the same timing (their ratio is exactly 1); a model
    that chooses otherwise on every image is timed on its own copy of each image."""
    from nitro.bench.refine import _fresh_stream
    from nitro.benchmarks import histogram
    from nitro.variant import code_variant

    def pinned(name, variant):   # no model: dispatch runs the default
        return code_variant(name, histogram.VARIANTS, histogram.FEATURES, default=variant,
                            reference=histogram.reference)
    models = {"a": pinned("fresh-a", "shared_atomic_even"), "b": pinned("fresh-b", "sort_even"),
              "c": pinned("fresh-c", "shared_atomic_even")}
    f = _fresh_stream(models, 5, seed=0, reference="a")
    assert f["images_differing_from_reference"] == {"a": 0, "b": 5, "c": 0}
    assert f["vs_reference"]["c"] == 1.0 and f["geomean_vs_reference"]["c"] == 1.0
    assert f["seconds"]["a"] == f["seconds"]["c"] > 0
    assert f["seconds"]["b"] > 0 and f["seconds"]["b"] != f["seconds"]["a"]
