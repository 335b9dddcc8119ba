"""nitro.bench.dispatch: timing a user's bundle on their own feature rows."""
import numpy as np
import pandas as pd

from nitro.bench.dispatch import bench_bundle
from nitro.bundle import Bundle
from nitro.model import SelectorModel

TREE = {"children_left": [1, -1, -1], "children_right": [2, -1, -1], "feature": [1, -1, -1],
        "threshold": [0.5, 0.0, 0.0], "value": [0.1, 0.2, 0.3]}
LEAF = {"children_left": [-1], "children_right": [-1], "feature": [-1], "threshold": [0.0], "value": [0.4]}


def test_a_boosted_models_size_counts_the_nodes_of_all_its_trees(tmp_path):
    """A few-shot model (kind gbt) keeps its nodes in a list of trees: its size read 0."""
    gbt = SelectorModel(variants=["a", "b"], input_features=["x", "y"], kind="gbt",
                        params={"trees": [TREE, LEAF], "learning_rate": 0.1, "init": 0.5,
                                "variant_codes": [[1.0, 0.0], [0.0, 1.0]]})
    path = Bundle.build("mine", gbt.variants, gbt.input_features, "a", {"dev": gbt}).save(tmp_path / "mine.json")
    rows = pd.DataFrame(np.random.default_rng(0).random((10, 2)), columns=["x", "y"])
    r = bench_bundle(path, rows, calls=200)
    assert [(m["kind"], m["size"]) for m in r["models"]] == [("gbt", 4)] and r["models"][0]["identical_choices"]
