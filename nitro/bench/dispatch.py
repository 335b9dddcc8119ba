"""Dispatch overhead (features + model + constraints, not the variant) against a plain
scikit-learn ``predict`` of one sample, on a histogram selector trained here; and the compiled
evaluator alone on RBF models of the largest sizes the learners export (kernel models and SVCs
at the dispatch budget, :mod:`nitro.learn.budget`) against NumPy's evaluation of one row; or
the models of a bundle a user built, on their own inputs' feature rows (:func:`bench_bundle`)."""
from __future__ import annotations

import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from ..benchmarks import histogram
from ..bundle import Bundle, load_bundle
from ..learn import SVMSelector
from ..learn.budget import max_centres
from ..measurement import TimingPolicy
from ..model import SelectorModel
from ..tuner import Autotuner


def median_call_seconds(fn, args_list, calls: int) -> float:
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


def kernel_model(n_centers: int, d: int, k: int = 6, seed: int = 0) -> SelectorModel:
    """A kernel model of the Kronecker learner's shape (``n_centers`` × ``d`` centres, ``k``
    variants) with random parameters: plain data, for timing and for checking evaluators."""
    rng = np.random.default_rng(seed)
    return SelectorModel.from_dict(SelectorModel(
        variants=[f"v{i}" for i in range(k)], input_features=[f"f{j}" for j in range(d)], kind="kernel",
        params={"mean": rng.normal(size=d).tolist(), "scale": (0.5 + rng.random(d)).tolist(), "gamma": 1.0 / d,
                "centers": rng.normal(size=(n_centers, d)).tolist(), "weights": rng.normal(size=(n_centers, k)).tolist(),
                "offset": (0.1 * rng.normal(size=k)).tolist()}).to_dict())


def svc_model(n_sv: int, d: int, k: int = 4, seed: int = 0, device: dict | None = None) -> SelectorModel:
    """A one-versus-one RBF SVC in libsvm's layout (``n_sv`` support vectors grouped by class,
    ``k`` classes) with random parameters; ``device`` features, if given, lie among the SVs'."""
    rng = np.random.default_rng(seed)
    n_support = [n_sv // k + (1 if i < n_sv % k else 0) for i in range(k)]
    device = dict(device or {})
    width = d + len(device)
    log_mask = [bool(j % 2) for j in range(width)]
    mean, sv = rng.normal(size=width), rng.normal(size=(n_sv, width))
    for i, value in enumerate(device.values()):
        mean[d + i] = np.log1p(value) if log_mask[d + i] else value
        sv[:, d + i] *= 0.3
    return SelectorModel.from_dict(SelectorModel(
        variants=[f"v{i}" for i in range(k)], input_features=[f"f{j}" for j in range(d)], kind="svc",
        device_features=device,
        params={"log_mask": log_mask, "mean": mean.tolist(), "scale": (0.5 + rng.random(width)).tolist(),
                "gamma": 1.0 / width, "support_vectors": sv.tolist(), "n_support": n_support,
                "dual_coef": rng.normal(size=(k - 1, n_sv)).tolist(),
                "intercept": (0.1 * rng.normal(size=k * (k - 1) // 2)).tolist()}).to_dict())


# What the learners export at most (the dispatch budget's centres for 12, 21 and 55 features)
RBF_CASES = tuple((kind, max_centres(d), d) for kind in ("kernel", "svc") for d in (12, 21, 55))


def bench_rbf(calls: int = 3000, cases=RBF_CASES) -> list[dict]:
    """Per-call time of the compiled evaluator (``predict_one`` of a feature list) on RBF models
    of each (kind, centres, features) size, against NumPy's ``predict_index`` of one row in the
    same run, and whether both choose alike on 2,000 random rows."""
    out = []
    for kind, n, d in cases:
        model = kernel_model(n, d) if kind == "kernel" else svc_model(n, d)
        X = np.abs(np.random.default_rng(1).normal(size=(2000, d)) * 2)
        out.append({"kind": kind, "centres": n, "features": d, **_compiled_against_numpy(model, X[:100], X, calls)})
    return out


def _compiled_against_numpy(model: SelectorModel, timed: np.ndarray, checked: np.ndarray, calls: int) -> dict:
    """Per-call time of ``model``'s compiled evaluator (``predict_one`` of a feature list) and of
    NumPy's ``predict_index`` of one row, both over the rows of ``timed``, and whether the two
    choose alike on every row of ``checked``."""
    fast = model.compiled()
    t_compiled = median_call_seconds(fast.predict_one, [(list(map(float, x)),) for x in timed], calls)
    t_numpy = median_call_seconds(model.predict_index, [(x[None, :],) for x in timed], max(calls // 10, 300))
    return {"compiled_us": t_compiled * 1e6, "numpy_us": t_numpy * 1e6, "ratio": t_compiled / t_numpy,
            "identical_choices": bool((fast.predict_batch(checked) == model.predict_index(checked)).all())}


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
    t_bundle = median_call_seconds(shipped.select, [(img,) for img in test], calls)
    reference = est.pipeline_.predict if est.pipeline_ is not None else est.predict
    t_nitro = median_call_seconds(hist.select, [(img,) for img in test], calls)
    t_sklearn = median_call_seconds(reference, [(f,) for f in feats], max(calls // 10, 1000))
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
        "rbf_models": bench_rbf(),
    }


def _size(model: SelectorModel) -> int:
    """Support vectors, centres or tree nodes (of every tree of a boosted model): what a call's
    time grows with."""
    p = model.params
    if "trees" in p:
        return sum(len(tree["feature"]) for tree in p["trees"])
    for key in ("support_vectors", "centers", "thresholds", "feature"):
        if key in p:
            return len(p[key])
    return 0


def bench_bundle(path, inputs, calls: int = 20000, devices: list[str] | None = None) -> dict:
    """Per-call time of the compiled evaluator of each device model in the bundle at ``path``
    (``devices``, default every one) on the feature rows of ``inputs`` (a CSV file or frame with a
    column per input feature of the bundle; at most 200 rows used), against NumPy's
    ``predict_index`` of one row in the same run, and whether both choose alike on every row."""
    import pandas as pd
    bundle = load_bundle(path)
    frame = inputs if isinstance(inputs, pd.DataFrame) else pd.read_csv(inputs)
    missing = [f for f in bundle.input_features if f not in frame.columns]
    if missing:
        raise ValueError(f"{inputs}: no column for the bundle's input features {missing} "
                         f"(it has {list(frame.columns)[:12]})")
    X = frame[bundle.input_features].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    X = X[np.isfinite(X).all(axis=1)][:200]
    if not len(X):
        raise ValueError(f"{inputs}: no row has a finite number for every one of {bundle.input_features}")
    unknown = [d for d in devices or [] if d not in bundle.devices]
    if unknown:
        raise ValueError(f"{path}: no model for {unknown}; it has {sorted(bundle.devices)}")
    out = []
    for device in devices or sorted(bundle.devices):
        model = bundle.model(device)
        out.append({"device": device, "kind": model.kind, "size": _size(model),
                    **_compiled_against_numpy(model, X, X, calls)})
    return {"machine": f"{platform.node()} {platform.processor() or platform.machine()}", "bundle": str(path),
            "computation": bundle.computation, "rows": len(X), "models": out}


def format_bundle(r: dict) -> str:
    width = max(len(m["device"]) for m in r["models"])
    return (f"{r['computation']} bundle {r['bundle']}: compiled evaluator of each model, one feature list, "
            f"against NumPy predict_index of one row, on {r['rows']} of your inputs:\n"
            + "\n".join(f"  {m['device']:<{width}} {m['kind']:6} size {m['size']:5}: {m['compiled_us']:7.2f} us/call, "
                        f"NumPy {m['numpy_us']:7.1f} us, ratio {m['ratio']:.3f}, same choices: {m['identical_choices']}"
                        for m in r["models"]))


def format_dispatch(r: dict) -> str:
    return (f"dispatch overhead (features + model + constraints): {r['nitro_dispatch_us']:.2f} us/call\n"
            f"scikit-learn predict, one sample:                  {r['sklearn_predict_us']:.2f} us/call\n"
            f"ratio nitro / scikit-learn:                        {r['ratio']:.4f}\n"
            f"identical choices on {r['n_test_inputs']} test inputs: {r['identical_choices']}\n"
            f"through a bundle (saved, loaded, use_bundle):      {r['bundle_dispatch_us']:.2f} us/call, "
            f"same choices: {r['bundle_identical_choices']}\n"
            "compiled evaluator alone, one feature list, against NumPy predict_index of one row:\n"
            + "\n".join(f"  {m['kind']:6} {m['centres']:5} centres x {m['features']:2} features: "
                        f"{m['compiled_us']:7.2f} us/call, NumPy {m['numpy_us']:7.1f} us, ratio {m['ratio']:.3f}, "
                        f"same choices: {m['identical_choices']}" for m in r["rbf_models"]))
