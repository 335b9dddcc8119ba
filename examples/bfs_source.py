"""Listing 1 of the paper for breadth-first search: record BFS training data on a source machine.

Run on every source machine (pointing NITRO_STORE at a shared Redis server), e.g.
    NITRO_STORE=redis://store-host:6379/0 python examples/bfs_source.py
"""
from nitro import autotuner
from nitro.benchmarks import bfs

search = bfs.make_code_variant("bfs")
search.record = True                     # keep rows, device features and the model in the store
# search.device_id = "my_machine"        # optional: a stable id is derived otherwise

tuner = autotuner("bfs")
(train, ids), _ = bfs.train_test_inputs(n_train=48, n_test=0)   # (graph, source) pairs
tuner.set_training_args(train, ids=ids)
tuner.tune([search])                     # exhaustive measurement -> labels -> SVM model

graph, source = train[0]
depth = search(graph, source)
print("dispatching to", search.select(graph, source), "->", (depth >= 0).sum(), "vertices reached,",
      depth.max(), "levels")
