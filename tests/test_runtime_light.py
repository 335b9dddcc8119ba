"""The run time is light: importing nitro, loading a bundle (plain or gzipped, with a transfer
block), taking a model by any path and dispatching import neither NumPy nor any of the tuning
side's heavy packages and start no server (checked in a fresh process)."""
from __future__ import annotations

import subprocess
import sys

from nitro.bench.startup import HEAVY
from nitro.bundle import Bundle, Transfer
from nitro.model import SelectorModel

DISPATCH = """
import sys
import nitro
cv = nitro.code_variant("toy", {"a": lambda n: "a", "b": lambda n: "b"}, {"n": lambda n: n}, default="a")
found = [cv.use_bundle(sys.argv[1], device=d, query=False)["path"] for d in ("dev1", "elsewhere", "dev1")]
print(found, cv(1), cv(30), cv.select(30.0))
info = cv.use_bundle(nitro.load_bundle(sys.argv[2]), device="new_device", device_features={"cores": 8})
print(info["path"], cv(1), cv(30), sorted(info["source_weights"]))
print(",".join(m for m in %r if m in sys.modules))
""" % (HEAVY,)


def _transfer() -> Transfer:
    """A transfer block over dev1 (4 cores) and dev2 (16 cores) whose kernel model chooses ``a``
    near signed-log 0 and ``b`` near 3 (log1p(1) ≈ 0.7, log1p(30) ≈ 3.4), whatever the device."""
    return Transfer(sources=["dev1", "dev2"], device_features=["cores"], variants=["a", "b"],
                    input={"signed_log": True, "mean": [0.0], "scale": [1.0], "gamma": 0.5, "centers": [[0.0], [3.0]]},
                    weights=[[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]], offset=[0.0, 0.0],
                    dev_mean=[2.2], dev_std=[0.6], varies=[True], spread2=1.0)


def test_import_bundle_load_and_dispatch_import_no_numpy_nor_heavy_package(tmp_path):
    assert "numpy" in HEAVY           # what `nitro bench startup` checks for the nitro case
    model = SelectorModel(variants=["a", "b"], input_features=["n"], kind="linear",
                          params={"log_mask": [True], "mean": [0.0], "scale": [1.0], "coef": [[-1.0, 1.0]],
                                  "intercept": [2.0, 0.0], "choose": "max"})
    path = Bundle.build("toy", ["a", "b"], ["n"], "a", {"dev1": model}).save(tmp_path / "toy.json")
    info = {d: {"features": {"cores": c}} for d, c in (("dev1", 4), ("dev2", 16))}
    gz = Bundle.build("toy", ["a", "b"], ["n"], "a", {"dev1": model, "dev2": model}, info=info,
                      transfer={"*": _transfer()}).save(tmp_path / "transfer.json.gz")
    out = subprocess.run([sys.executable, "-c", DISPATCH, str(path), str(gz)], capture_output=True, text=True,
                         timeout=60, env={"PATH": "/usr/bin:/bin", "NITRO_DATA_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    choices, transferred, imported = out.stdout.splitlines()
    assert choices == "['exact', 'default', 'exact'] a b b"        # log1p(1) < 1 < log1p(30)
    assert transferred == "transfer a b ['dev1', 'dev2']"
    assert imported == "", f"the run time imported {imported}"
    assert not (tmp_path / "nitro.rdb.settings").exists()         # no embedded server was started


def test_batch_paths_load_numpy_when_used():
    out = subprocess.run([sys.executable, "-c", "import sys; from nitro.model import SelectorModel; "
                          "m = SelectorModel(['x', 'y'], ['a'], 'constant', {'label': 1}); a = 'numpy' in sys.modules; "
                          "print(a, m.predict([[1.0], [2.0]]), 'numpy' in sys.modules)"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "['y',", "'y']", "True"]


def test_tuning_names_load_lazily_from_nitro():
    out = subprocess.run([sys.executable, "-c", "import sys, nitro; a = 'sklearn' in sys.modules; "
                          "nitro.autotuner; print(a, 'sklearn' in sys.modules, nitro.Store.__module__)"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "nitro.store.redis_store"]


# the heavy packages made unimportable, as in an install of nitro alone (pip install --no-deps)
WITHOUT_HEAVY = """
import sys
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in %r:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Absent())
from nitro.cli import main
sys.exit(main(sys.argv[1:]))
""" % (HEAVY,)


def test_bundle_show_runs_without_the_tuning_packages_and_the_others_say_what_they_lack(tmp_path):
    model = SelectorModel(variants=["a", "b"], input_features=["n"], kind="constant", params={"label": 1})
    path = Bundle.build("toy", ["a", "b"], ["n"], "a", {"dev1": model}).save(tmp_path / "toy.json")
    env = {"PATH": "/usr/bin:/bin", "NITRO_DATA_DIR": str(tmp_path)}
    shown = subprocess.run([sys.executable, "-c", WITHOUT_HEAVY, "bundle", "show", str(path), "--device", "dev1"],
                           capture_output=True, text=True, timeout=60, env=env)
    assert shown.returncode == 0 and "on dev1: exact (constant model)" in shown.stdout, shown.stderr
    listed = subprocess.run([sys.executable, "-c", WITHOUT_HEAVY, "store", "ls"], capture_output=True, text=True,
                            timeout=60, env=env)
    assert listed.returncode == 2 and "nitro: error: this command needs the package 'redis'" in listed.stderr, \
        listed.stderr
