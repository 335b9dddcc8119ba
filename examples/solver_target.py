"""Listing 2 of the paper for the linear solvers: build the selector for this machine from
the source machines' data in the store, without measuring here; then solve a user's system.

    NITRO_STORE=redis://store-host:6379/0 python examples/solver_target.py [matrix.mtx]

It needs the training rows of other devices in the store: run examples/solver_source.py on each
source machine first, pointing NITRO_STORE at the same store.
"""
import argparse

import numpy as np

from nitro import autotuner
from nitro.benchmarks import solver

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("matrix", nargs="?", help="a Matrix Market file to solve (default: a generated 2-D Poisson system)")
args = parser.parse_args()

solve = solver.make_code_variant("solver")
solve.profiling_based_dfs = False        # True once variant and proxy profiles are recorded
solve.search_based_dfs = None            # None: CV-DFS from 3 sources on, else every device feature (True insists)

tuner = autotuner("solver")
[model] = tuner.tune_from_source([solve])
print("sources:", ", ".join(model.provenance["sources"]))
print("device features:", ", ".join(model.provenance["device_features"]))

if args.matrix:
    A, b = solver.system_from_file(args.matrix)          # a Matrix Market file of your own
else:
    A = solver.make_matrix("poisson2d", 4096, np.random.default_rng(0))
    b = np.ones(A.shape[0])
print("dispatching to", solve.select(A, b))
x = solve(A, b)                          # raises solver.ConvergenceError rather than return a wrong x
print("relative residual", solver.relative_residual(A, b, x))
