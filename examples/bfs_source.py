"""Listing 1 of the paper for breadth-first search: record BFS training data on a source machine.

Run on every source machine (pointing NITRO_STORE at a shared Redis server), e.g.
    NITRO_STORE=redis://store-host:6379/0 python examples/bfs_source.py
"""
import argparse

from nitro import autotuner
from nitro.benchmarks import bfs

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--n-train", type=int, default=48,
                    help="training graphs to measure (default: %(default)s; fewer for a quick try)")
parser.add_argument("--device-id", help="record under this id (default: one derived from this machine)")
args = parser.parse_args()

search = bfs.make_code_variant("bfs")
search.record = True                     # keep rows, device features and the model in the store
search.device_id = args.device_id

tuner = autotuner("bfs")
(train, ids), _ = bfs.train_test_inputs(n_train=args.n_train, n_test=0)   # (graph, source) pairs
tuner.set_training_args(train, ids=ids)
tuner.tune([search])                     # exhaustive measurement -> labels -> SVM model

graph, source = train[0]
depth = search(graph, source)
print("dispatching to", search.select(graph, source), "->", (depth >= 0).sum(), "vertices reached,",
      depth.max(), "levels")
