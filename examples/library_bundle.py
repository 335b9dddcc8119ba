"""A library author ships nitro's choice to users who never tune and never run Redis.

Author side (once, on the author's machines): tune, then write one bundle file into the
library's package data. User side (every start of the application): import nitro, load the
bundle from package data, dispatch; no scikit-learn, no pandas, no server.

    .venv/bin/python examples/library_bundle.py [OUT_DIR]

Here both sides run in one script on a private store; in a real library the user side is the
library's own module (see the README, "Shipping models in a library").
"""
import argparse
import os
import tempfile
from pathlib import Path


def author(package_dir: Path) -> Path:
    """Tune the histogram on this machine and write the bundle into the package."""
    from nitro import autotuner
    from nitro.benchmarks import histogram
    from nitro.bundle_build import build_bundle

    hist = histogram.make_code_variant()
    hist.record = True                                   # keep the rows (and the model) in the store
    tuner = autotuner("histogram", progress=False)
    (train, ids), _ = histogram.train_test_inputs(n_train=16, n_test=1)
    tuner.set_training_args(train, ids=ids)
    tuner.tune([hist])                                   # rows and this device's model in the store
    bundle = build_bundle(tuner.store, "histogram", default=hist.default)
    return bundle.save(package_dir / "histogram.nitro.json")


def user(bundle_file: Path) -> None:
    """What the library runs on the user's machine: this device's model, or a fallback."""
    from nitro.benchmarks import histogram

    hist = histogram.make_code_variant()
    found = hist.use_bundle(bundle_file)                 # exact -> product -> transfer -> default
    print(f"model found by: {found['path']} (device {found['device']})")
    (_, _), (test, _) = histogram.train_test_inputs(n_train=1, n_test=3)
    for image in test:
        print(f"{image.size:>9} pixels -> {hist.select(image)}")
        hist(image)
    unknown = histogram.make_code_variant()
    print("on a device the bundle does not know:", unknown.use_bundle(bundle_file, device="gpu_of_the_future",
                                                                      query=False)["path"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", nargs="?", type=Path, help="where the bundle and the author's store go "
                        "(default: a new temporary folder; the same folder again reuses its store's rows)")
    out = parser.parse_args().out_dir or Path(tempfile.mkdtemp())
    os.environ["NITRO_DATA_DIR"] = str(out / "store")    # a private store for the author side, even where
    os.environ.pop("NITRO_STORE", None)                  # the shell names one (the bundle holds what it stores)
    path = author(out)
    print(f"bundle: {path} ({path.stat().st_size:,} bytes)")
    user(path)
