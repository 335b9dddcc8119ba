"""Listing 1 of the paper: record histogram training data on a source machine.

Run on every source machine (pointing NITRO_STORE at a shared Redis server), e.g.
    NITRO_STORE=redis://store-host:6379/0 python examples/histogram_source.py
"""
import argparse

from nitro import autotuner
from nitro.benchmarks import histogram

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--n-train", type=int, default=48,
                    help="training images to measure (default: %(default)s; fewer for a quick try)")
parser.add_argument("--device-id", help="record under this id (default: one derived from this machine)")
args = parser.parse_args()

hist = histogram.make_code_variant("histogram")
hist.record = True                       # keep rows, device features and the model in the store
hist.device_id = args.device_id

tuner = autotuner("histogram")
(train, ids), _ = histogram.train_test_inputs(n_train=args.n_train, n_test=0)
tuner.set_training_args(train, ids=ids)
tuner.tune([hist])                       # exhaustive measurement -> labels -> SVM model

image = train[0]
print("dispatching to", hist.select(image), "->", hist(image)[:8], "...")
