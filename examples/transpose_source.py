"""Listing 1 of the paper for in-place Transpose: record training data on a source machine.

Run on every source machine (pointing NITRO_STORE at a shared Redis server), e.g.
    NITRO_STORE=redis://store-host:6379/0 python examples/transpose_source.py

Each input is a TransposeInput (matrix + scratch buffer): the variants transpose a copy of the
matrix in place, so every variant and repetition sees the same matrix.
"""
import argparse

from nitro import autotuner
from nitro.benchmarks import transpose

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--n-train", type=int, default=48,
                    help="training matrices to measure (default: %(default)s; fewer for a quick try)")
parser.add_argument("--device-id", help="record under this id (default: one derived from this machine)")
args = parser.parse_args()

tr = transpose.make_code_variant("transpose")
tr.record = True                         # keep rows, device features and the model in the store
tr.device_id = args.device_id

tuner = autotuner("transpose")
(train, ids), _ = transpose.train_test_inputs(n_train=args.n_train, n_test=0)
tuner.set_training_args(train, ids=ids)
tuner.tune([tr])                         # exhaustive measurement -> labels -> SVM model

problem = train[0]
print(problem, "dispatching to", tr.select(problem), "->", tr(problem).shape)
