"""Dispatch overhead (features + model + constraints, not the variant) against a plain
scikit-learn ``predict`` of one sample, on a histogram selector trained here."""
from __future__ import annotations

import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from ..benchmarks import histogram
from ..bundle import Bundle
from ..learn import SVMSelector
from ..measurement import TimingPolicy
from ..model import SelectorModel
from ..tuner import Autotuner


def _median_call_seconds(fn, args_list, calls: int) -> float:
    """Median over batches of the mean time per call (batches amortise the timer)."""
    batch = 100
    samples = []
    for b in range(max(1, calls // batch)):
        args = args_list[b % len(args_list)]
        start = time.perf_counter()
        for _ in range(batch):
            fn(*args)
        samples.append((time.perf_counter() - start) / batch)
    return float(np.median(samples))


def bench_dispatch(calls: int = 20000, n_train: int = 24, n_test: int = 24) -> dict:
    (train, train_ids), (test, _) = histogram.train_test_inputs(n_train, n_test, seed=7)
    hist = histogram.make_code_variant("histogram-bench")
    tuner = Autotuner("histogram-bench", progress=False,
                      policy=TimingPolicy(min_repeats=3, max_repeats=5, target_seconds=0.005))
    tuner.set_training_args(train, ids=train_ids)
    rows = tuner.measure(hist)
    X = np.array([[r.features[f] for f in hist.feature_names] for r in rows if r.best])
    y = np.array([r.best for r in rows if r.best])
    est = SVMSelector().fit(X, y)
    hist.model = SelectorModel.from_estimator(est, hist.feature_names)

    feats = [np.array([hist.compute_features(img)]) for img in test]
    same = all(hist.select(img) == est.predict(f)[0] for img, f in zip(test, feats))
    with tempfile.TemporaryDirectory() as tmp:     # the same model shipped in a bundle and loaded back
        path = Bundle.build(hist.name, hist.variant_names, hist.feature_names, hist.default,
                            {"here": hist.model}).save(Path(tmp) / "histogram.json")
        shipped = histogram.make_code_variant("histogram-bench")
        shipped.use_bundle(path, device="here")
    same_bundle = all(shipped.select(img) == hist.select(img) for img in test)
    t_bundle = _median_call_seconds(shipped.select, [(img,) for img in test], calls)
    reference = est.pipeline_.predict if est.pipeline_ is not None else est.predict
    t_nitro = _median_call_seconds(hist.select, [(img,) for img in test], calls)
    t_sklearn = _median_call_seconds(reference, [(f,) for f in feats], max(calls // 10, 1000))
    return {
        "machine": f"{platform.node()} {platform.processor() or platform.machine()}",
        "nitro_dispatch_us": t_nitro * 1e6,
        "sklearn_predict_us": t_sklearn * 1e6,
        "ratio": t_nitro / t_sklearn,
        "identical_choices": bool(same),
        "bundle_dispatch_us": t_bundle * 1e6,
        "bundle_identical_choices": bool(same_bundle),
        "n_test_inputs": len(test),
        "model": hist.model.kind,
    }


def format_dispatch(r: dict) -> str:
    return (f"dispatch overhead (features + model + constraints): {r['nitro_dispatch_us']:.2f} us/call\n"
            f"scikit-learn predict, one sample:                  {r['sklearn_predict_us']:.2f} us/call\n"
            f"ratio nitro / scikit-learn:                        {r['ratio']:.4f}\n"
            f"identical choices on {r['n_test_inputs']} test inputs: {r['identical_choices']}\n"
            f"through a bundle (saved, loaded, use_bundle):      {r['bundle_dispatch_us']:.2f} us/call, "
            f"same choices: {r['bundle_identical_choices']}")
