"""``nitro explain`` on the histogram benchmark's stored training rows."""
import json

from nitro import TimingPolicy, autotuner
from nitro.benchmarks import histogram
from nitro.cli import main
from nitro.store import Store


def test_explain_histogram_names_deciding_features_and_where_variants_win(tmp_path):
    store = Store()     # the embedded store, private to the test session
    (train, ids), _ = histogram.train_test_inputs(14, 1, seed=3)
    hist = histogram.make_code_variant("histogram_explain")
    hist.record, hist.device_id = True, "cpu_a"
    store.put_device("cpu_a", {"cores": {"value": 2, "unit": "", "source": "test"}})
    tuner = autotuner("histogram_explain", store=store, progress=False,
                      policy=TimingPolicy(min_repeats=1, max_repeats=3, target_seconds=0.0))
    tuner.set_training_args(train, ids=ids)
    tuner.tune([hist])
    from nitro.explain import explain_computation, format_explanation
    r = explain_computation(store, "histogram_explain", plot=tmp_path / "hist.png")
    assert r["n_rows"] == 14 and r["devices"] == ["cpu_a"]
    assert set(r["features_by_first_split"]) <= set(histogram.FEATURES) and r["features_by_first_split"]
    assert set(r["wins"]) <= set(histogram.VARIANT_NAMES) and r["wins"]
    assert sum(l["n"] for l in r["leaves"]) == 14
    text = format_explanation(r)
    assert ("features that decide" in text) == (len(r["wins"]) > 1) and "where each variant wins" in text
    one = {**r, "wins": {"global_atomic_even": [leaf["leaf"] for leaf in r["leaves"]]}}     # one winner everywhere
    assert "one variant, global_atomic_even, wins in every region" in format_explanation(one)
    assert (tmp_path / "hist.png").read_bytes()[:4] == b"\x89PNG"


def test_explain_command_reads_the_store(capsys, tmp_path):
    store = Store()     # the embedded store, private to the test session
    store.declare("toy", ["a", "b"], ["n"])
    from nitro.row import TrainingRow
    for dev, shift in (("d1", 1.0), ("d2", 4.0)):
        store.put_device(dev, {"width": {"value": shift, "unit": "", "source": "test"}})
        for i, n in enumerate(range(1, 41)):
            store.put_row("toy", dev, TrainingRow(f"i{i}", {"n": float(n)}, {"a": float(n), "b": 10.0 * shift}))
    assert main(["explain", "toy", "--json", "--plot", str(tmp_path / "t.png")]) == 0
    r = json.loads(capsys.readouterr().out)
    # with two devices, their device feature joins the inputs' and takes part in the choice
    assert set(r["features_by_first_split"]) == {"n", "width"} and set(r["wins"]) == {"a", "b"}
    assert main(["explain", "toy", "--devices", "d1", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    # one device: a costs n, b costs 10, so a wins below n = 10 and b above (leaves hold ≥ 3 inputs)
    regions = [(l["winner"], *l["conditions"]["n"]) for l in r["leaves"]]
    assert all(hi <= 12 for w, lo, hi in regions if w == "a"), regions
    assert all(lo >= 8 for w, lo, hi in regions if w == "b"), regions
    assert r["n_rows_with_skipped_variants"] == 0
    store.put_row("toy", "d1", TrainingRow("i0", {"n": 1.0}, {"a": 1.0, "b": None}, {"b": "skipped by early stopping"}))
    assert main(["explain", "toy", "--devices", "d1"]) == 0
    assert "note: 1 rows have variants skipped by early stopping, counted here as if they had failed" \
        in capsys.readouterr().out
    assert main(["explain", "nope"]) == 2
