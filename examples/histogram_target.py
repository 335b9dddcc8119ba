"""Listing 2 of the paper: build the histogram selector for this machine from the source
machines' data in the store, without measuring any training input here.

    NITRO_STORE=redis://store-host:6379/0 python examples/histogram_target.py
"""
import numpy as np

from nitro import autotuner
from nitro.benchmarks import histogram

hist = histogram.make_code_variant("histogram")
hist.profiling_based_dfs = False         # True once variant and proxy profiles are recorded
hist.search_based_dfs = None             # None: CV-DFS from 3 sources on, else every device feature (True insists)

tuner = autotuner("histogram")
[model] = tuner.tune_from_source([hist])
print("sources:", ", ".join(model.provenance["sources"]))
print("device features:", ", ".join(model.provenance["device_features"]))

image = np.random.default_rng(0).integers(0, 256, (512, 512), dtype=np.uint8)
print("dispatching to", hist.select(image))
