"""Listing 2 of the paper: build the histogram selector for this machine from the source
machines' data in the store, without measuring any training input here.

    NITRO_STORE=redis://store-host:6379/0 python examples/histogram_target.py

It needs the training rows of other devices in the store: run examples/histogram_source.py on each
source machine first, pointing NITRO_STORE at the same store. To try it on one machine, bring in the
rows recorded on five CPUs instead:
    for d in datasets/cpu_*; do nitro store import $d/histogram histogram; done
"""
import argparse

import numpy as np

from nitro import autotuner
from nitro.benchmarks import histogram

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
args = parser.parse_args()

hist = histogram.make_code_variant("histogram")
hist.profiling_based_dfs = False         # True once variant and proxy profiles are recorded
hist.search_based_dfs = None             # None: CV-DFS from 3 sources on, else every device feature (True insists)

tuner = autotuner("histogram")
[model] = tuner.tune_from_source([hist])
print("sources:", ", ".join(model.provenance["sources"]))
print("device features:", ", ".join(model.provenance["device_features"]))

image = np.random.default_rng(0).integers(0, 256, (512, 512), dtype=np.uint8)
print("dispatching to", hist.select(image), "->", hist(image)[:8], "...")
