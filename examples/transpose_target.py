"""Listing 2 of the paper for in-place Transpose: build the selector for this machine from
the source machines' data in the store, without measuring any training input here.

    NITRO_STORE=redis://store-host:6379/0 python examples/transpose_target.py

It needs the training rows of other devices in the store: run examples/transpose_source.py on each
source machine first, pointing NITRO_STORE at the same store.
"""
import argparse

import numpy as np

from nitro import autotuner
from nitro.benchmarks import transpose

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
args = parser.parse_args()

tr = transpose.make_code_variant("transpose")
tr.profiling_based_dfs = False           # True once variant and proxy profiles are recorded
tr.search_based_dfs = None               # None: CV-DFS from 3 sources on, else every device feature (True insists)

tuner = autotuner("transpose")
[model] = tuner.tune_from_source([tr])
print("sources:", ", ".join(model.provenance["sources"]))
print("device features:", ", ".join(model.provenance["device_features"]))

problem = transpose.TransposeInput(np.random.default_rng(0).standard_normal((12, 300_000)))
print(problem, "dispatching to", tr.select(problem), "->", tr(problem).shape)
