"""Listing 1 of the paper for the linear solvers: record training data on a source machine.

Run on every source machine (pointing NITRO_STORE at a shared Redis server), e.g.
    NITRO_STORE=redis://store-host:6379/0 python examples/solver_source.py
"""
from nitro import autotuner
from nitro.benchmarks import solver

solve = solver.make_code_variant("solver")
solve.record = True                      # keep rows (failed variants too), device features, model
# solve.device_id = "my_machine"         # optional: a stable id is derived otherwise

tuner = autotuner("solver")
(train, ids), _ = solver.train_test_inputs(n_test=0)   # 96 systems
tuner.set_training_args(train, ids=ids)
tuner.tune([solve])                      # exhaustive measurement -> labels -> SVM model

A, b = train[0]
x = solve(A, b)
print("dispatching to", solve.select(A, b), "-> relative residual", solver.relative_residual(A, b, x))
