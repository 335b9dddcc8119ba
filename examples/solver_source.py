"""Listing 1 of the paper for the linear solvers: record training data on a source machine.

Run on every source machine (pointing NITRO_STORE at a shared Redis server), e.g.
    NITRO_STORE=redis://store-host:6379/0 python examples/solver_source.py
"""
import argparse

from nitro import autotuner
from nitro.benchmarks import solver

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--n-train", type=int, default=solver.N_TRAIN,
                    help="training systems to measure (default: %(default)s; fewer for a quick try)")
parser.add_argument("--device-id", help="record under this id (default: one derived from this machine)")
args = parser.parse_args()

solve = solver.make_code_variant("solver")
solve.record = True                      # keep rows (failed variants too), device features, model
solve.device_id = args.device_id

tuner = autotuner("solver")
(train, ids), _ = solver.train_test_inputs(n_train=args.n_train, n_test=0)
tuner.set_training_args(train, ids=ids)
tuner.tune([solve])                      # exhaustive measurement -> labels -> SVM model

A, b = train[0]
x = solve(A, b)
print("dispatching to", solve.select(A, b), "-> relative residual", solver.relative_residual(A, b, x))
