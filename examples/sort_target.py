"""Listing 2 of the paper for Sort: build the selector for this machine from the source
machines' data in the store, without measuring any training input here.

    NITRO_STORE=redis://store-host:6379/0 python examples/sort_target.py

It needs the training rows of other devices in the store: run examples/sort_source.py on each
source machine first, pointing NITRO_STORE at the same store.
"""
import argparse

import numpy as np

from nitro import autotuner
from nitro.benchmarks import sort

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
args = parser.parse_args()

sorter = sort.make_code_variant("sort")
sorter.profiling_based_dfs = False       # True once variant and proxy profiles are recorded
sorter.search_based_dfs = None           # None: CV-DFS from 3 sources on, else every device feature (True insists)

tuner = autotuner("sort")
[model] = tuner.tune_from_source([sorter])
print("sources:", ", ".join(model.provenance["sources"]))
print("device features:", ", ".join(model.provenance["device_features"]))

keys = np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)
print("dispatching to", sorter.select(keys), "->", sorter(keys)[:4], "...")
