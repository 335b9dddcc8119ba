"""Data generated with a known answer, shared by the transfer tests: which variant is fastest
follows two of four device features, and the same data recorded in a store."""
import numpy as np
import pandas as pd

from nitro.dataset import Measurements
from nitro.row import TrainingRow

VARIANTS = ["a", "b", "c"]


def planted(n_devices=7, n_inputs=160, seed=0):
    """Variant c is best where size > the device's `cache_kb`; a is best on small inputs of
    devices with many `atomic_units`, b otherwise. Two decoy device features are noise."""
    rng = np.random.default_rng(seed)
    devs = pd.DataFrame({
        "cache_kb": rng.uniform(200, 2000, n_devices),
        "atomic_units": rng.choice([1.0, 10.0], n_devices),
        "decoy1": rng.uniform(0, 1, n_devices),
        "decoy2": rng.uniform(5, 50, n_devices),
    }, index=[f"dev{i}" for i in range(n_devices)])
    devs.loc["dev0", "atomic_units"], devs.loc["dev1", "atomic_units"] = 1.0, 10.0
    size = np.exp(rng.uniform(np.log(50), np.log(5000), n_inputs))
    skew = rng.uniform(0, 1, n_inputs)
    inputs = pd.DataFrame({"size": size, "skew": skew}, index=[f"in{i}" for i in range(n_inputs)])
    rows = []
    for d, dv in devs.iterrows():
        for i, (s, k) in enumerate(zip(size, skew)):
            big = s > dv.cache_kb
            t = {"a": 1.0 if (not big and dv.atomic_units > 5) else 2.0,
                 "b": 1.0 if (not big and dv.atomic_units <= 5) else 2.0,
                 "c": 1.0 if big else 3.0}
            t = {v: x * (1 + 0.01 * rng.random()) for v, x in t.items()}
            rows += [{"device": d, "input": f"in{i}", **t}]
    times = pd.DataFrame(rows).set_index(["device", "input"])
    return Measurements(times, inputs, devs)



def record_planted(store) -> Measurements:
    """The planted data recorded in ``store`` as computation "toy" (rows and device records)."""
    m = planted()
    store.declare("toy", VARIANTS, ["size", "skew"])
    for d in m.device_ids:
        t = m.for_device(d)
        store.put_rows("toy", d, [TrainingRow(i, m.inputs.loc[i].to_dict(), t.loc[i].to_dict()) for i in t.index])
        store.put_device(d, {k: {"value": float(v), "unit": "", "source": "datasheet"} for k, v in m.devices.loc[d].items()})
    return m
