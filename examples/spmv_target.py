"""Listing 2 of the paper for SpMV: build the selector for this machine from the source
machines' data in the store, without measuring any training input here.

    NITRO_STORE=redis://store-host:6379/0 python examples/spmv_target.py

It needs the training rows of other devices in the store: run examples/spmv_source.py on each
source machine first, pointing NITRO_STORE at the same store. To try it on one machine, bring in the
rows recorded on five CPUs instead:
    for d in datasets/cpu_*; do nitro store import $d/spmv spmv; done
"""
import argparse

import numpy as np
import scipy.sparse as sp

from nitro import autotuner
from nitro.benchmarks import spmv

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
args = parser.parse_args()

spmv_cv = spmv.make_code_variant("spmv")
spmv_cv.profiling_based_dfs = False       # True once variant and proxy profiles are recorded
spmv_cv.search_based_dfs = None           # None: CV-DFS from 3 sources on, else every device feature (True insists)

tuner = autotuner("spmv")
[model] = tuner.tune_from_source([spmv_cv])
print("sources:", ", ".join(model.provenance["sources"]))
print("device features:", ", ".join(model.provenance["device_features"]))

A = spmv.SpmvMatrix(sp.random(20_000, 20_000, density=5e-4, format="csr",   # a Generator: an int seed takes
                                 random_state=np.random.default_rng(0)))   # SciPy 80 s to sample this
x = np.ones(A.shape[1])
print(A, "dispatching to", spmv_cv.select(A, x), "->", spmv_cv(A, x)[:4], "...")
