"""Listing 2 of the paper for breadth-first search: build the BFS selector for this machine from
the source machines' data in the store, without measuring any training input here.

    NITRO_STORE=redis://store-host:6379/0 python examples/bfs_target.py [edges.txt]

It needs the training rows of other devices in the store: run examples/bfs_source.py on each
source machine first, pointing NITRO_STORE at the same store.

With an edge-list file (``u v`` lines, ``#`` comments) the search runs on that graph, from vertex 0.
"""
import argparse

import numpy as np

from nitro import autotuner
from nitro.benchmarks import bfs

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("edges", nargs="?", help="an edge-list file to search (default: a generated road graph)")
args = parser.parse_args()

search = bfs.make_code_variant("bfs")
search.profiling_based_dfs = False       # True once variant and proxy profiles are recorded
search.search_based_dfs = None           # None: CV-DFS from 3 sources on, else every device feature (True insists)

tuner = autotuner("bfs")
[model] = tuner.tune_from_source([search])
print("sources:", ", ".join(model.provenance["sources"]))
print("device features:", ", ".join(model.provenance["device_features"]))

if args.edges:
    graph, source = bfs.read_edge_list(args.edges), 0
else:
    graph = bfs.make_graph("road", 100_000, np.random.default_rng(0))
    source = bfs.pick_source(graph, np.random.default_rng(1))
print("dispatching to", search.select(graph, source), "->", search(graph, source).max(), "levels")
