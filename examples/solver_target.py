"""Listing 2 of the paper for the linear solvers: build the selector for this machine from
the source machines' data in the store, without measuring here; then solve a user's system.

    NITRO_STORE=redis://store-host:6379/0 python examples/solver_target.py [matrix.mtx]
"""
import sys

import numpy as np

from nitro import autotuner
from nitro.benchmarks import solver

solve = solver.make_code_variant("solver")
solve.profiling_based_dfs = False        # True once variant and proxy profiles are recorded
solve.search_based_dfs = None            # None: CV-DFS from 3 sources on, else every device feature (True insists)

tuner = autotuner("solver")
[model] = tuner.tune_from_source([solve])
print("sources:", ", ".join(model.provenance["sources"]))
print("device features:", ", ".join(model.provenance["device_features"]))

if len(sys.argv) > 1:
    A, b = solver.system_from_file(sys.argv[1])          # a Matrix Market file of your own
else:
    A = solver.make_matrix("poisson2d", 4096, np.random.default_rng(0))
    b = np.ones(A.shape[0])
print("dispatching to", solve.select(A, b))
x = solve(A, b)                          # raises solver.ConvergenceError rather than return a wrong x
print("relative residual", solver.relative_residual(A, b, x))
