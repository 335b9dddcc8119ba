"""The scripts under ``examples/`` run as the README and their --help say: a target (Listing 2) run
before its source says what to record first; a source (Listing 1) records its training rows and a
second run reads them back without losing or re-measuring any; the target then tunes from them;
and what each script dispatches equals the family's reference. The scripts run in this process
(``runpy``, as ``python examples/<script>.py ARGS``) on one private store for the module, with the
fewest training inputs they offer (``--n-train``), recorded under a source id of their own."""
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

from nitro.benchmarks import bfs, histogram, solver, sort, spmv, transpose
from nitro.store import Store, StoreError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SOURCE = "example_source_device"          # the source scripts' --device-id: the target is this machine
N_TRAIN = 3


def _matches_reference(family, out, *args) -> bool:
    """Whether a dispatched output is the family's right answer (the solver's: by residual)."""
    if family is solver:
        return bool(np.all(np.isfinite(out)) and solver.relative_residual(*args, out) <= solver.TOL * 1.05)
    ref = family.reference(*args)
    return out.shape == ref.shape and (np.allclose(out, ref, rtol=1e-10, atol=0) if family is spmv else
                                       np.array_equal(out, ref, equal_nan=True))


# family -> (code variant's name in the scripts, the names of one dispatched call's arguments in the
# source script, the same in the target script)
FAMILIES = {histogram: ("hist", ["image"], ["image"]), spmv: ("spmv_cv", ["A", "x"], ["A", "x"]),
            sort: ("sorter", ["keys"], ["keys"]), bfs: ("search", ["graph", "source"], ["graph", "source"]),
            transpose: ("tr", ["problem"], ["problem"]), solver: ("solve", ["A", "b"], ["A", "b"])}


def run_example(script: str, *argv: str) -> dict:
    """The script's globals after ``python examples/<script> ARGV``."""
    saved = sys.argv
    sys.argv = [str(EXAMPLES / script), *argv]
    try:
        return runpy.run_path(str(EXAMPLES / script), run_name="__main__")
    finally:
        sys.argv = saved


@pytest.fixture(scope="module")
def example_store(tmp_path_factory):
    """One private embedded store for the module's scripts (device records are measured once)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NITRO_DATA_DIR", str(tmp_path_factory.mktemp("examples-store")))
        mp.delenv("NITRO_STORE", raising=False)
        yield Store()


def test_every_script_is_run_by_its_tests_or_the_bundle_test():
    scripts = {p.name for p in EXAMPLES.glob("*.py")}
    covered = {f"{f.__name__.rsplit('.', 1)[1]}_{side}.py" for f in FAMILIES for side in ("source", "target")}
    assert scripts == covered | {"library_bundle.py"}


@pytest.mark.parametrize("script", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_help_prints_the_docstring_and_does_nothing_else(script, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        run_example(script, "--help")
    assert exit_.value.code == 0
    doc_line = (EXAMPLES / script).read_text().split('"""')[1].splitlines()[0]
    assert doc_line in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []          # no store, no folder named --help


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES), ids=lambda f: f.__name__.rsplit(".", 1)[1])
def test_source_then_target_records_resumes_tunes_and_dispatches_right(family, example_store):
    name = family.__name__.rsplit(".", 1)[1]
    cv_name, source_args, target_args = FAMILIES[family]
    with pytest.raises(StoreError, match=f"{name}: nothing is recorded under this name.*record them first"):
        run_example(f"{name}_target.py")

    first = run_example(f"{name}_source.py", "--n-train", str(N_TRAIN), "--device-id", SOURCE)
    rows = example_store.rows(name, SOURCE)
    assert len(rows) == N_TRAIN
    assert _matches_reference(family, first[cv_name](*[first[a] for a in source_args]),
                              *[first[a] for a in source_args])

    run_example(f"{name}_source.py", "--n-train", str(N_TRAIN), "--device-id", SOURCE)   # resumed
    assert example_store.rows(name, SOURCE) == rows          # nothing lost, nothing measured again

    target = run_example(f"{name}_target.py")
    assert target["model"].provenance["sources"] == [SOURCE]
    args = [target[a] for a in target_args]
    assert _matches_reference(family, target[cv_name](*args), *args)


@pytest.mark.slow
def test_library_bundle_writes_a_bundle_that_dispatches_right_from_a_store_of_its_own(tmp_path, monkeypatch, capsys):
    """The author side tunes in OUT_DIR/store whatever store the shell names (here one that does
    not answer, and another data directory); a second run reads its rows back."""
    monkeypatch.setenv("NITRO_STORE", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("NITRO_DATA_DIR", str(tmp_path / "the_users_own_store"))
    run_example("library_bundle.py", str(tmp_path))
    out = capsys.readouterr().out
    bundle = tmp_path / "histogram.nitro.json"
    assert f"bundle: {bundle}" in out and "model found by: exact" in out
    assert "on a device the bundle does not know: default" in out
    hist = histogram.make_code_variant()
    assert hist.use_bundle(bundle)["path"] == "exact"
    (_, _), (test, _) = histogram.train_test_inputs(n_train=1, n_test=3)
    assert all(np.array_equal(hist(image), histogram.reference(image)) for image in test)

    assert not (tmp_path / "the_users_own_store").exists()
    store = Store()                                           # the script's: OUT_DIR/store
    assert str(tmp_path / "store") in repr(store)
    [device] = store.devices("histogram")
    rows = store.rows("histogram", device)
    assert len(rows) == 16
    run_example("library_bundle.py", str(tmp_path))
    assert store.rows("histogram", device) == rows            # read back, not measured again
