import json
import os

import numpy as np

import pytest

from nitro.cli import main


def test_every_subcommand_has_help(capsys):
    for argv in (["--help"], ["demo", "--help"], ["store", "ls", "--help"], ["store", "export", "--help"],
                 ["store", "import", "--help"], ["bench", "dispatch", "--help"], ["bench", "noise", "--help"], ["evaluate", "--help"],
                 ["tune-from-source", "--help"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 0
    out = capsys.readouterr().out
    assert "usage" in out and "The nitro command line: variant tuning" in out and "``" not in out   # no reST markup


def test_bundle_build_help_names_every_learner_it_takes(capsys):
    """--learner's help named none of the learners it takes (an unknown one is refused)."""
    from nitro.learn import SELECTORS
    with pytest.raises(SystemExit):
        main(["bundle", "build", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    start = text.rindex("--learner LEARNER")           # its option's help, not the usage line
    learner = text[start:text.index("--default DEFAULT", start)]
    assert all(name in learner for name in SELECTORS), learner
    assert "the store's first" in text


def test_errors_are_one_line_and_name_the_problem(capsys, tmp_path):
    assert main(["store", "export", "nope", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("nitro: error:") and "unknown computation 'nope'" in err and "\n" not in err
    assert main(["store", "ls", "--store", "redis://127.0.0.1:1/0"]) == 2
    assert "does not answer" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "afile").write_text("")
    assert main(["store", "import", str(tmp_path / "afile"), "x"]) == 2
    assert f"{tmp_path / 'afile'} is a file: a dataset is a directory of devices" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path), "--stream", "100", "--budget", "0.5"]) == 2
    assert "--stream, --budget are options of the refining replay: add --online" in capsys.readouterr().err


def test_evaluate_with_empty_targets_is_refused_not_run_on_every_device(capsys, tmp_path):
    """``--targets "$T"`` with T empty read as no --targets: every device evaluated (an hour on a
    large data set) instead of an error."""
    from nitro.synthetic import generate
    syn = generate(tmp_path / "syn", n_inputs=20, n_devices=4)["directory"]
    assert main(["evaluate", str(syn), "--targets", "", "--methods", "majority"]) == 2
    assert "targets none: the devices evaluated are" in capsys.readouterr().err


def test_evaluate_plot_of_only_the_selector_comparison_is_refused_not_skipped(capsys, tmp_path):
    """``--plot DIR --methods lsq`` wrote no figure and said nothing (the comparison has none)."""
    from nitro.synthetic import generate
    syn = generate(tmp_path / "syn", n_inputs=20, n_devices=4)["directory"]
    assert main(["evaluate", str(syn), "--methods", "lsq", "--plot", str(tmp_path / "figs")]) == 2
    assert "the selector comparison of --methods lsq has none" in capsys.readouterr().err
    assert not (tmp_path / "figs").exists()


def test_store_rm_says_what_it_would_remove_and_removes_only_with_yes(capsys, tmp_path):
    from nitro.synthetic import generate
    syn = generate(tmp_path / "syn", n_inputs=20, n_devices=4)["directory"]
    assert main(["store", "import", syn, "gone"]) == 0 and main(["store", "import", syn, "kept"]) == 0
    capsys.readouterr()
    assert main(["store", "rm", "gone"]) == 2
    assert "'gone' holds 80 rows on 4 devices" in capsys.readouterr().err
    assert main(["store", "rm", "gone", "--yes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == {f"synthetic_{f}_{i}": 20 for f, i in
                                                           (("alpha", 0), ("alpha", 1), ("beta", 2), ("beta", 3))}
    assert main(["store", "ls", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert "gone" not in listing and listing["kept"]["devices"]["synthetic_alpha_0"] == 20
    assert main(["store", "rm", "gone", "--yes"]) == 2 and "unknown computation 'gone'" in capsys.readouterr().err
    from nitro.store import Store, keys
    store = Store()                  # a model of a device without rows (a transfer target) goes too
    store.put_model("kept", "new_gpu", {"format": 1, "kind": "constant", "variants": store.meta("kept")["variants"],
                                        "input_features": store.meta("kept")["features"], "params": {"label": 0}})
    assert main(["store", "ls", "--json"]) == 0                       # listed, though new_gpu has no rows
    assert json.loads(capsys.readouterr().out)["kept"]["models"] == {"new_gpu": "constant"}
    assert main(["store", "rm", "kept", "--yes"]) == 0 and "80 rows on 4 devices, 1 model" in capsys.readouterr().out
    assert store.computation_keys("kept") == [] and store.model("kept", "new_gpu") is None
    assert main(["store", "import", syn, "evicted"]) == 0 and main(["store", "import", syn, "whole"]) == 0
    store.client.delete(keys.meta("evicted"))      # what a server that evicts keys when full may leave
    capsys.readouterr()
    assert main(["store", "ls"]) == 0              # the other computations are still listed
    listing = capsys.readouterr().out
    assert "whole: " in listing and "evicted: its declaration is missing: nitro store rm evicted --yes" in listing
    assert main(["store", "rm", "evicted", "--yes"]) == 0
    assert "keys left without a readable declaration" in capsys.readouterr().out and store.computation_keys("evicted") == []
    for name in ("garbled", "wrongtype"):
        assert main(["store", "import", syn, name]) == 0
    store.client.hset(keys.meta("garbled"), "variants", "[not json")       # one unreadable computation
    store.client.delete(keys.rows("wrongtype", "synthetic_alpha_0"))
    store.client.lpush(keys.rows("wrongtype", "synthetic_alpha_0"), "x")    # a key of another type
    capsys.readouterr()
    assert main(["store", "ls"]) == 0              # the others are still listed, each broken one named
    listing = capsys.readouterr().out
    assert "whole: " in listing and "garbled: cannot be read (malformed metadata" in listing
    assert "wrongtype: cannot be read (" in listing
    for name in ("garbled", "wrongtype"):
        assert main(["store", "rm", name, "--yes"]) == 0 and store.computation_keys(name) == []
    assert main(["store", "rm", "whole", "--yes"]) == 0


def test_store_ls_names_a_stored_model_that_does_not_load_and_still_lists_its_rows(capsys, tmp_path):
    from nitro.store import Store, keys
    from nitro.synthetic import generate
    syn = generate(tmp_path / "syn", n_inputs=20, n_devices=4)["directory"]
    assert main(["store", "import", syn, "old"]) == 0
    Store().client.set(keys.model("old", "synthetic_alpha_0"), '{"kind": "svc", "version": 0}')    # an older run's
    capsys.readouterr()
    assert main(["store", "ls", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)["old"]
    assert listing["devices"]["synthetic_alpha_0"] == 20
    assert listing["models"]["synthetic_alpha_0"].startswith("does not load (the model of old/synthetic_alpha_0")


def test_store_import_ls_export(capsys, tmp_path, spmv_dataset):
    assert main(["store", "import", str(spmv_dataset), "spmv", "--variants", "csr,coo,ell,sellp"]) == 0
    capsys.readouterr()
    assert main(["store", "ls", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["spmv"]["variants"] == ["csr", "coo", "ell", "sellp"] and len(listing["spmv"]["devices"]) == 9
    assert main(["store", "export", "spmv", str(tmp_path / "out"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["devices"] == 9 and (tmp_path / "out" / "measurements.csv").exists()
    assert main(["tune-from-source", "spmv", "--target", "tesla_k40m", "--sources",
                 "tesla_p100,titan_v,tesla_v100_sxm2,radeon_vii", "--cv-dfs", "--max-subset-size", "2", "--json"]) == 0
    prov = json.loads(capsys.readouterr().out)
    assert prov["target"] == "tesla_k40m" and prov["device_features"] and "cv_dfs" in prov
    import warnings
    from nitro.transfer.confidence import TransferEstimateWarning
    with warnings.catch_warnings(record=True) as caught:     # printed below, not warned a second time
        warnings.simplefilter("always")
        assert main(["tune-from-source", "spmv", "--target", "tesla_k40m", "--sources",
                     "tesla_p100,titan_v,tesla_v100_sxm2,radeon_vii", "--cv-dfs", "--max-subset-size", "2"]) == 0
    printed = capsys.readouterr().out
    assert "estimate LOW (" in printed and not [w for w in caught if issubclass(w.category, TransferEstimateWarning)]
    led = [line for line in printed.splitlines() if line.startswith("on held-out sources the model led")]
    assert len(led) == 3 and all(("may fall below it here" in line) == ("chance about" in line)
                                 for line in led)
    assert any("may fall below it here (chance about" in line for line in led)   # the best single source, at least
    assert main(["tune-from-source", "spmv", "--target", "tesla_k40m", "--sources", "tesla_p100,titan_v,radeon_vii",
                 "--no-cv-dfs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cv_dfs_off"] == "search_based_dfs=False"
    # few-shot from the target's recorded rows: picked among them, and measured on them
    assert main(["tune-from-source", "spmv", "--target", "tesla_k40m", "--sources", "tesla_p100,titan_v,radeon_vii",
                 "--target-budget", "0.02"]) == 0
    out = capsys.readouterr().out
    assert "few-shot model: " in out and "measured on those inputs: the zero-shot model" in out
    assert "inputs timed on tesla_k40m were learnt with the sources' rows by boosted trees" in out   # 2%: 22 inputs
    assert main(["tune-from-source", "spmv", "--target", "tesla_k40m", "--sources", "tesla_p100,titan_v,radeon_vii",
                 "--target-budget", "12", "--json"]) == 0
    prov = json.loads(capsys.readouterr().out)
    assert len(prov["few_shot"]["inputs"]) == 12 and prov["few_shot"]["estimate"]["folds"] == 5
    from nitro.cli import _transfer_lines      # a cross-validated figure below the zero-shot one is explained
    e = prov["few_shot"]["estimate"]
    said = "\n".join(_transfer_lines("spmv", prov))
    assert ("the few-shot model is kept although its cross-validated figure is the lower" in said) == \
        (e["quality"] < e["zero_shot_on_timed"])
    lower = {**prov, "few_shot": {**prov["few_shot"], "estimate": {**e, "quality": e["zero_shot_on_timed"] - 0.1}}}
    assert "understates the model fitted on all of them" in "\n".join(_transfer_lines("spmv", lower))
    far = {**prov, "confidence": {**prov["zero_shot_confidence"], "outside_sources": True, "standard_error": 0.004}}
    headline = next(line for line in _transfer_lines("spmv", far) if line.startswith("expected quality on"))
    assert "no figure to trust" in headline and "±" not in headline    # a ± would read as a sound figure
    unsure = {**prov, "few_shot": {**prov["few_shot"], "estimate": None}}     # fewer than 6 timed: no figure
    assert "no cross-validated figure for the few-shot model from 12 timed inputs" in "\n".join(
        _transfer_lines("spmv", unsure))
    # the trees use every known device feature: the first line says so beside the zero-shot selection, and a
    # feature the zero-shot model left out (constant over the sources) is not said to be left out of the trees
    assert prov["zero_shot_device_features"] and set(prov["zero_shot_device_features"]) <= set(prov["device_features"])
    first = _transfer_lines("spmv", prov)[0]
    assert "boosted trees: every one known" in first and "the zero-shot model's (CV-DFS" in first
    constant = {**prov, "device_features_left_out": {prov["device_features"][0]: "constant (within about 1%)"}}
    assert f"left out device feature {prov['device_features'][0]} of the zero-shot model (the trees use it)" in \
        "\n".join(_transfer_lines("spmv", constant))
    # features left out for the same reason share one line
    alike = {**prov, "zero_shot_device_features": [], "device_features": [],
             "device_features_left_out": {"a": "unknown on the target", "b": "unknown on the target", "c": "constant"}}
    said = _transfer_lines("spmv", alike)
    assert "left out device features a, b: unknown on the target" in said and "left out device feature c: constant" in said
    with pytest.raises(SystemExit):
        main(["tune-from-source", "spmv", "--target", "tesla_k40m", "--target-budget", "1.5"])
    assert "a count (1, 2, ...) or a fraction in (0, 1)" in capsys.readouterr().err
    assert main(["store", "ls"]) == 0
    assert "model for tesla_k40m: tune_from_source" in capsys.readouterr().out


def test_bench_dispatch_json(capsys):
    assert main(["bench", "dispatch", "--json", "--calls", "2000"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["identical_choices"] and r["nitro_dispatch_us"] > 0 and r["sklearn_predict_us"] > 0


def test_demo_runs_end_to_end_on_the_embedded_store(capsys):
    assert main(["demo", "--json", "--train", "14", "--test", "7"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert set(r["percent_of_optimum"]) >= {"tuned", "random", "shared_atomic_even"}
    assert r["dispatch_example"]["correct"] and "embedded store" in r["store"]
    timing = r["timing"]   # inputs recorded by an earlier run are not measured again
    assert timing["decided"] + timing["ties"] + timing["undecided"] == timing["n_inputs"] <= 14
    assert isinstance(timing["too_noisy"], bool) and timing["advice"]


def test_progress_is_not_written_to_a_file(tmp_path):
    """With stderr sent to a file, measuring prints no progress bar (it would write a line
    per redraw); the result still goes to stdout."""
    import os
    import subprocess
    import sys
    env = {**os.environ, "NITRO_DATA_DIR": str(tmp_path / "store")}
    with open(tmp_path / "err.txt", "w") as err:
        done = subprocess.run([sys.executable, "-m", "nitro.cli", "demo", "--train", "6", "--test", "3"],
                              stdout=subprocess.PIPE, stderr=err, env=env, text=True, timeout=300)
    assert done.returncode == 0 and "histogram" in done.stdout
    log = (tmp_path / "err.txt").read_text()
    assert "measuring" not in log and "\r" not in log and "it/s" not in log and "input/s" not in log


def test_bench_training_json_totals_its_draws(capsys):
    assert main(["bench", "training", "--json", "--train", "8", "--test", "4", "--repeats", "2", "--budget", "0.5"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert [run["seed"] for run in r["runs"]] == [0, 1]
    calls = {side: sum(run[side]["variant_calls"] for run in r["runs"]) for side in ("exhaustive", "reduced")}
    assert calls["reduced"] < calls["exhaustive"]
    assert np.isclose(r["calls_ratio"], calls["reduced"] / calls["exhaustive"])
    assert r["worst_quality_ratio"] == min(run["quality_ratio"] for run in r["runs"]) > 0
    means = [np.mean([run[side]["percent_of_optimum"] for run in r["runs"]]) for side in ("reduced", "exhaustive")]
    assert np.isclose(r["quality_ratio"], means[0] / means[1])


def test_bench_variants_json_scores_every_test_input(capsys):
    assert main(["bench", "variants", "--json", "--families", "sort", "--train", "6", "--test", "3"]) == 0
    r = json.loads(capsys.readouterr().out)["families"]["sort"]
    assert r["n_test"] == 3 and len(r["inputs"]) == 3 and sum(r["best_variant_counts"].values()) == r["n_scored"]
    for row in r["inputs"]:
        assert 0 < row["percent_of_best"] <= 100 and row["tuned_call_s"] > 0 and row["baseline_s"] > 0
        assert np.isclose(row["speedup"], row["baseline_s"] / row["tuned_call_s"])
    share = np.mean([row["speedup"] >= 1 for row in r["inputs"]])
    assert np.isclose(r["speedup_over_baseline"]["share_at_least_as_fast"], share)
    assert main(["bench", "variants", "--families", "sort", "--train", "1"]) == 2
    assert "at least 2 training" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["evaluate", "DIR", "--test-size", "1"], "argument --test-size: a fraction in (0, 1), got '1'"),
    (["evaluate", "DIR", "--k", "0"], "argument --k: at least 1, got 0"),
    (["evaluate", "DIR", "--seeds", "1.5,2"], "argument --seeds: comma-separated whole numbers of at least 0, got "
     "'1.5,2' ('1.5' is not one)"),             # before: read as seeds 1 and 2 without a word
    (["evaluate", "DIR", "--seeds=-1,2"], "argument --seeds: comma-separated whole numbers of at least 0"),
    (["evaluate", "DIR", "--seeds", "-1,2"], "argument --seeds: comma-separated whole numbers of at least 0, got "
     "'-1,2' ('-1' is not one)"),               # before: "expected one argument", as if no value were given
    (["evaluate", "DIR", "--online", "--passes", "0"], "argument --passes: at least 1, got 0"),   # before: "a replayed
    (["evaluate", "DIR", "--online", "--stream", "0"], "argument --stream: at least 1, got 0"),   # stream needs ..."
    (["evaluate", "DIR", "--n-jobs", "0"], "argument --n-jobs: a whole number other than 0 (-1: every core), got '0'"),
    (["tune-from-source", "x", "--n-jobs", "0"], "argument --n-jobs: a whole number other than 0"),  # before: joblib's
    (["bench", "cvdfs", "DIR", "--n-jobs", "x"], "argument --n-jobs: a whole number other than 0"),  # error, minutes in
    (["tune-from-source", "x", "--target", "t", "--max-subset-size", "0"], "argument --max-subset-size: at least 1, got 0"),
    (["bench", "cvdfs", "DIR", "--reference-fits", "0"], "argument --reference-fits: at least 1, got 0"),
    (["bench", "dispatch", "--calls", "-5"], "argument --calls: at least 1, got -5"),
    (["synthetic", "DIR", "--seed", "-1"], "argument --seed: at least 0, got -1"),
    # before: --inputs 0 said no input had at most 262144 bytes, and --inputs -3 profiled all but the last three
    (["profile", "histogram", "--inputs", "0"], "argument --inputs: at least 1, got 0"),
    (["profile", "histogram", "--inputs=-3"], "argument --inputs: at least 1, got -3"),
    (["profile", "histogram", "--max-bytes", "0"], "argument --max-bytes: at least 1, got 0"),
    (["explain", "x", "--min-gain", "nan"], "argument --min-gain: a finite number of at least 0, got 'nan'")])
def test_out_of_range_options_are_refused_by_name(capsys, tmp_path, argv, message):
    """Refused by the parser, naming the option: a zero budget of fits, a split with no test
    input or a negative seed used to end in a ZeroDivisionError or a library's message."""
    with pytest.raises(SystemExit) as e:
        main([a.replace("DIR", str(tmp_path)) for a in argv])
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_bad_values_that_reach_a_command_are_named_before_any_work(capsys, tmp_path):
    from nitro.synthetic import generate
    syn = generate(tmp_path / "syn", n_inputs=20, n_devices=4)["directory"]
    for argv, message in (
            (["evaluate", syn, "--devices", "nosuch"], "devices ['nosuch'] have no measurements; measured: synthetic_alpha_0"),
            (["evaluate", syn, "--variants", "nosuch,tiled"], "unknown variants ['nosuch']; measured: ['atomic', 'cache_blocked'"),
            (["bench", "scale", "--sizes", "50", "--steps", "nosuch"], "unknown steps ['nosuch']; known: tune_fit"),
            (["tune-from-source", "x", "--target", "t", "--target-features", str(tmp_path / "syn" / "README.md")],
             "--target-features " + str(tmp_path / "syn" / "README.md") + ": not a readable JSON file"),
            (["bundle", "build", "x", "-o", str(tmp_path / "b.json"), "--learner", "nosuch"],
             "unknown learner 'nosuch'; known: svm"),
            (["explain", "x", "--plot", str(tmp_path)], f"{tmp_path} is a directory: give the PNG file's name")):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("nitro: error:") and message in err and "\n" not in err.strip(), err
    (tmp_path / "syn" / "measurements.csv.gz").unlink()
    (tmp_path / "syn" / "measurements.csv").write_text("device,input,variant,time_s\n")
    assert main(["evaluate", syn]) == 2
    assert "no device has a measurement with a valid time" in capsys.readouterr().err


def test_a_reader_that_left_early_is_no_error(tmp_path):
    """``nitro ... | head``: the pipe closes before nitro writes; that ends it quietly, with no
    'Broken pipe' error of its own."""
    import os
    import subprocess
    import sys
    read, write = os.pipe()
    os.close(read)
    try:
        out = subprocess.run([sys.executable, "-m", "nitro.cli", "synthetic", str(tmp_path / "s"), "--inputs", "20",
                              "--devices", "1"], stdout=write, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write)
    assert out.returncode == 0 and b"Broken pipe" not in out.stderr and b"Traceback" not in out.stderr, out.stderr
    assert (tmp_path / "s" / "devices.csv").exists()


def test_sigterm_stops_evaluate_and_its_workers(spmv_dataset):
    """SIGTERM during `nitro evaluate` ends it as a Ctrl-C would (exit 143, one line): its joblib
    workers end with it (with the signal's default they ran on, orphaned)."""
    import signal
    import subprocess
    import sys
    import time
    psutil = pytest.importorskip("psutil")
    run = subprocess.Popen([sys.executable, "-m", "nitro.cli", "evaluate", str(spmv_dataset), "--methods", "few_shot",
                            "--n-jobs", "2", "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    main_process, workers = psutil.Process(run.pid), []
    deadline = time.monotonic() + 120
    while not workers and time.monotonic() < deadline and run.poll() is None:
        workers = [p for p in main_process.children(recursive=True) if "loky" in " ".join(p.cmdline())]
        time.sleep(0.2)
    assert workers, "evaluate started no joblib worker"
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 143 and err.strip().splitlines()[-1] == "nitro: terminated"
    gone, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive, f"workers left running: {alive}"


def test_a_variant_name_holding_a_comma_is_named_with_csv_quoting(capsys, tmp_path):
    import pandas as pd
    from nitro.store import Store
    from nitro.synthetic import VARIANTS, generate
    syn = generate(tmp_path / "syn", n_inputs=20, n_devices=4)["directory"]
    path = f"{syn}/measurements.csv.gz"
    rows = pd.read_csv(path)
    rows["variant"] = rows["variant"].replace(VARIANTS[0], "csr,merge")
    rows.to_csv(path, index=False)                 # pandas quotes the name: "csr,merge"
    assert main(["store", "import", syn, "commas", "--variants", f'"csr,merge", {VARIANTS[1]}']) == 0
    assert Store().meta("commas")["variants"] == ["csr,merge", VARIANTS[1]]
    capsys.readouterr()
    assert main(["store", "import", syn, "split", "--variants", f"csr,merge,{VARIANTS[1]}"]) == 0
    assert "variants ['csr', 'merge'] have no valid time" in capsys.readouterr().out     # unquoted: two names
    assert main(["evaluate", syn, "--variants", f"csr,merge,{VARIANTS[1]}"]) == 2
    assert "unknown variants ['csr', 'merge']" in capsys.readouterr().err


def test_bundle_build_and_show_say_which_model_a_device_gets_and_why(capsys, tmp_path):
    from nitro.synthetic import generate
    syn = generate(tmp_path / "syn", n_inputs=20, n_devices=4)["directory"]
    assert main(["store", "import", syn, "shown"]) == 0
    out = tmp_path / "b.json"
    capsys.readouterr()
    assert main(["bundle", "build", "shown", "-o", str(out), "--devices", "synthetic_alpha_0"]) == 0
    built = capsys.readouterr().out
    assert "models of 1 device;" in built and "pass --default" in built
    assert main(["bundle", "show", str(out), "--device", "synthetic_alpha_0"]) == 0
    assert "on synthetic_alpha_0: exact (svc model)" in capsys.readouterr().out
    assert main(["bundle", "show", str(out), "--device", "elsewhere"]) == 0
    shown = capsys.readouterr().out
    assert "on elsewhere: default (" in shown, shown          # the reason, as --json gives it
    assert main(["bundle", "show", str(out), "--device", "elsewhere", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["this_device"]["reason"] in shown


def test_bundle_show_names_the_blocks_and_what_a_transfer_rests_on(capsys, tmp_path):
    """``nitro bundle show`` said only "transfer (kernel model)" for a device taking a transfer
    block, and never listed the blocks: the block, where the features came from, those taken
    from the nearest source and a device far outside the sources (a model not to trust) were in
    --json alone. It reads a file: no --store to give."""
    from nitro.bundle import Bundle, Transfer
    from nitro.model import SelectorModel
    block = Transfer(sources=["dev1", "dev2"], device_features=["cores", "clock"], variants=["a", "b"],
                     input={"signed_log": True, "mean": [0.0], "scale": [1.0], "gamma": 0.5, "centers": [[0.0], [3.0]]},
                     weights=[[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]], offset=[0.0, 0.0],
                     dev_mean=[2.22, 1.08], dev_std=[0.61, 0.17], varies=[True, True], spread2=8.0)
    model = SelectorModel(["a", "b"], ["n"], "constant", {"label": 1})
    info = {"dev1": {"features": {"cores": 4, "clock": 1.5}, "product": "gpu_one"},
            "dev2": {"features": {"cores": 16, "clock": 2.5}}}
    sheet = {"gpu_one": {"kind": "gpu", "names": ["Gpu One"], "features": {"cores": 4, "clock": 1.5}},
             "big_gpu": {"kind": "gpu", "names": ["Big Gpu 9000"], "features": {"cores": 4000}}}
    out = Bundle.build("toy", ["a", "b"], ["n"], "a", {"dev1": model, "dev2": model}, info=info,
                       transfer={"*": block}, datasheet=sheet).save(tmp_path / "toy.json")
    assert main(["bundle", "show", str(out), "--device", "Big Gpu 9000"]) == 0
    shown = capsys.readouterr().out
    assert "default a; transfer blocks * (2 sources)" in shown
    assert "on Big Gpu 9000: transfer (kernel model)\n  block *, device features from datasheet (big_gpu)" in shown
    assert "taken from the nearest source: clock (dev2)" in shown
    assert "warning: Big Gpu 9000 lies outside the sources' device features" in shown
    assert main(["bundle", "show", str(out), "--device", "Gpu One"]) == 0
    assert "on Gpu One: product (constant model): the model of dev1, of the same product gpu_one" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["bundle", "show", str(out), "--store", "redis://localhost:1"])
    assert "unrecognized arguments: --store" in capsys.readouterr().err


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="recording checks /proc/stat (Linux)")
def test_ctrl_c_in_record_says_what_is_kept_and_how_to_resume(tmp_path):
    """Before 2026-11-28 a Ctrl-C in `nitro record` printed only "nitro: interrupted", though the
    inputs timed so far are kept and the same command resumes."""
    import signal
    import subprocess
    import sys
    import time
    env = {**os.environ, "NITRO_DATA_DIR": str(tmp_path / "store")}
    load = tmp_path / "rec" / "foreign_load.csv"
    run = subprocess.Popen([sys.executable, "-m", "nitro.cli", "record", "histogram", str(tmp_path / "rec"),
                            "--train", "40", "--test", "0", "--wait-timeout", "0", "--attempts", "1",
                            "--max-foreign", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and run.poll() is None and not (
            load.exists() and "histogram," in load.read_text()):
        time.sleep(0.1)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    lines = err.strip().splitlines()
    assert lines[-1] == "nitro: interrupted" and "run the same command again to resume" in lines[-2]


def test_bench_dispatch_times_a_users_bundle_on_their_inputs(capsys, tmp_path):
    """``--bundle FILE --inputs CSV``: each device model of a bundle one built, timed compiled
    against NumPy on one's own feature rows (a library author could not time their own)."""
    import numpy as np
    import pandas as pd
    from nitro.bench.dispatch import kernel_model, svc_model
    from nitro.bundle import Bundle
    kernel, svc = kernel_model(50, 4, k=4), svc_model(40, 4, k=4)
    path = Bundle.build("mine", kernel.variants, kernel.input_features, kernel.variants[0],
                        {"dev_a": kernel, "dev_b": svc}).save(tmp_path / "mine.json")
    rows = pd.DataFrame(np.abs(np.random.default_rng(0).normal(size=(30, 4))), columns=kernel.input_features)
    rows.assign(id=range(30)).to_csv(tmp_path / "inputs.csv", index=False)
    assert main(["bench", "dispatch", "--bundle", str(path), "--inputs", str(tmp_path / "inputs.csv"),
                 "--calls", "300", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["rows"] == 30 and [m["device"] for m in r["models"]] == ["dev_a", "dev_b"]
    assert [m["kind"] for m in r["models"]] == ["kernel", "svc"] and [m["size"] for m in r["models"]] == [50, 40]
    assert all(m["identical_choices"] and m["compiled_us"] > 0 for m in r["models"])
    rows.drop(columns=[kernel.input_features[0]]).to_csv(tmp_path / "short.csv", index=False)
    for argv, said in [(["--bundle", str(path)], "--bundle FILE and --inputs CSV go together"),
                       (["--bundle", str(path), "--inputs", str(tmp_path / "short.csv")],
                        f"no column for the bundle's input features ['{kernel.input_features[0]}']"),
                       (["--bundle", str(path), "--inputs", str(tmp_path / "inputs.csv"), "--devices", "nope"],
                        "no model for ['nope']")]:
        assert main(["bench", "dispatch", *argv]) == 2
        assert said in capsys.readouterr().err


def test_devices_keeps_a_space_before_each_source_however_long_the_value(capsys):
    """A long "missing: ..." reason ran into its [source] tag ("...(machine busy?)[microbench]")."""
    assert main(["devices", "--no-measure"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  ") and line.endswith("]")
            and "[metadata" not in line]
    assert rows and all(" [" in row for row in rows)
