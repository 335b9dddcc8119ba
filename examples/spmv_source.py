"""Listing 1 of the paper for SpMV: record training data on a source machine.

Run on every source machine (pointing NITRO_STORE at a shared Redis server), e.g.
    NITRO_STORE=redis://store-host:6379/0 python examples/spmv_source.py
Tune on your own matrices instead with spmv.matrix_market_inputs(["a.mtx", "b.mtx.gz"]).
"""
import argparse

from nitro import autotuner
from nitro.benchmarks import spmv

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--n-train", type=int, default=48,
                    help="training matrices to measure (default: %(default)s; fewer for a quick try)")
parser.add_argument("--device-id", help="record under this id (default: one derived from this machine)")
args = parser.parse_args()

spmv_cv = spmv.make_code_variant("spmv")  # ELL/DIA only where their fill-in is <= 10
spmv_cv.record = True                     # keep rows, device features and the model in the store
spmv_cv.device_id = args.device_id

tuner = autotuner("spmv")
(train, ids), _ = spmv.train_test_inputs(n_train=args.n_train, n_test=0)
tuner.set_training_args(train, ids=ids)   # each input is (SpmvMatrix, x)
tuner.tune([spmv_cv])                     # exhaustive measurement -> labels -> SVM model

A, x = train[0]
print(A, "dispatching to", spmv_cv.select(A, x), "->", spmv_cv(A, x)[:4], "...")
