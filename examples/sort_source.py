"""Listing 1 of the paper for Sort: record training data on a source machine.

Run on every source machine (pointing NITRO_STORE at a shared Redis server), e.g.
    NITRO_STORE=redis://store-host:6379/0 python examples/sort_source.py
"""
import argparse

from nitro import autotuner
from nitro.benchmarks import sort

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--n-train", type=int, default=48,
                    help="training key arrays to measure (default: %(default)s; fewer for a quick try)")
parser.add_argument("--device-id", help="record under this id (default: one derived from this machine)")
args = parser.parse_args()

sorter = sort.make_code_variant("sort")
sorter.record = True                     # keep rows, device features and the model in the store
sorter.device_id = args.device_id

tuner = autotuner("sort")
(train, ids), _ = sort.train_test_inputs(n_train=args.n_train, n_test=0)   # max_keys=sort.MAX_KEYS: the paper's 20 M
tuner.set_training_args(train, ids=ids)
tuner.tune([sorter])                     # exhaustive measurement -> labels -> SVM model

keys = train[0]
print("dispatching to", sorter.select(keys), "->", sorter(keys)[:4], "...")
