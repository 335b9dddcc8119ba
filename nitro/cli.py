"""The ``nitro`` command line."""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import sys
import threading
import warnings
from pathlib import Path

from .store.errors import StoreError, StorePermissionError


def _store(args) -> Store:
    from .store import Store
    return Store(args.store)


def _emit(args, result, text):
    print(json.dumps(result, indent=2, default=str) if args.json else text)


def cmd_demo(args):
    from .demo import format_demo, run_demo
    result = run_demo(_store(args), args.train, args.test, args.seed, progress=not args.json)
    _emit(args, result, format_demo(result))


def _model_summary(store, computation: str, device: str) -> str:
    """How ``store ls`` names a stored model: its method or kind, or why it does not load (one
    unreadable model does not make its computation's rows look unreadable)."""
    try:
        model = store.model(computation, device) or {}
    except StoreError as exc:
        return f"does not load ({exc})"
    return model.get("provenance", {}).get("method") or model.get("kind", "?")


def cmd_store_ls(args):
    store = _store(args)
    out = {}
    broken = {}
    with_models = store.models_by_computation()
    for comp in store.computations():
        try:
            meta = store.meta(comp, missing_ok=True)
            if meta is None:               # its declaration is gone (a server that evicts keys when full)
                broken[comp] = f"its declaration is missing: nitro store rm {comp} --yes removes what is left"
                continue
            models = {}
            for d in with_models.get(comp, []):
                models[d] = _model_summary(store, comp, d)
            out[comp] = {"variants": meta["variants"], "features": meta["features"],
                         "devices": {d: store.row_count(comp, d) for d in store.devices(comp)}, "models": models}
        except StoreError as exc:          # one unreadable computation does not hide the others
            broken[comp] = f"cannot be read ({exc}): nitro store rm {comp} --yes removes it"
    lines = [f"{repr(store)}: {len(out) + len(broken)} computation(s)"]
    for comp, info in out.items():
        lines.append(f"{comp}: {len(info['variants'])} variants, features {', '.join(info['features'])}")
        lines += [f"  {d}: {n} rows" for d, n in info["devices"].items()]
        lines += [f"  model for {d}: {how}" for d, how in info["models"].items()]
    lines += [f"{comp}: {why}" for comp, why in broken.items()]
    _emit(args, {**out, **{c: {"broken": why} for c, why in broken.items()}}, "\n".join(lines))


def cmd_store_export(args):
    from .store.csv_io import export_computation
    devices = None if args.devices is None else (_split(args.devices) or [])     # named, but none: an error
    result = export_computation(_store(args), args.computation, args.directory, devices=devices)
    _emit(args, result, f"exported {result['measurements']} measurements of {result['inputs']} inputs "
                        f"on {result['devices']} devices to {args.directory}")


def cmd_store_import(args):
    from .store.csv_io import import_computation
    result = import_computation(_store(args), args.computation, args.directory,
                                variants=_split(args.variants),
                                update_devices=args.update_devices, progress=not args.json)
    _emit(args, result, "\n".join([f"imported {result['rows']} rows on {result['devices']} devices as {args.computation!r}",
                                    *(f"note: {n}" for n in result["notes"])]))


def cmd_store_rm(args):
    store, name = _store(args), args.computation
    try:
        meta = store.meta(name, missing_ok=True)
        rows = {d: store.row_count(name, d) for d in store.devices(name)} if meta else {}
    except StoreError:                           # a malformed declaration or key: removed as what is left
        meta, rows = None, {}
    found = store.computation_keys(name)
    if meta is None and not found and name not in store.computations():
        store.meta(name)                         # an unknown computation: the error naming the known ones
    models = len(store.model_devices(name, found))
    what = f"{sum(rows.values())} rows on {len(rows)} devices, {models} model{'s' * (models != 1)}" if meta else \
        f"{len(found)} keys left without a readable declaration"
    if not args.yes:
        variants = f" (variants {', '.join(meta['variants'])})" if meta else ""
        raise ValueError(f"{name!r} holds {what}{variants}: export it first if it may be needed again "
                         "(nitro store export), then add --yes to remove it")
    store.drop_computation(name)
    _emit(args, {"removed": name, "rows": rows, "models": models, "keys": len(found)}, f"removed {name!r}: {what}")


def cmd_bundle_build(args):
    from .bundle import check_output_folder
    from .bundle_build import build_bundle
    check_output_folder(Path(args.output))           # before the fits, not after
    store = _store(args)
    bundle = build_bundle(store, args.computation, _split(args.devices), learner=args.learner,
                          default=args.default)
    path = bundle.save(args.output)
    # models of devices without rows (tune-from-source's targets) are in no default device list
    left_out = [d for d in store.model_devices(args.computation) if d not in bundle.devices]
    result = {"file": str(path), "bytes": path.stat().st_size, "devices": sorted(bundle.devices),
              "transfer_blocks": {k: b.sources for k, b in bundle.transfer.items()}, "default": bundle.default,
              "models_left_out": left_out}
    made = bundle.provenance
    result.update(stored_models=made["stored_models"], fitted=made["fitted"]["devices"],
                  low_estimates=made["low_estimates"], inputs_to_time=made.get("inputs_to_time", {}))
    count = result["inputs_to_time"]
    low = "".join(f"\nwarning: the model of {d} may be far off there ({why}): time inputs on it (nitro "
                  f"tune-from-source --target {d} --target-budget {count.get(d, 'N')}, or "
                  f"Autotuner.tune_from_source(..., target_budget={count.get(d, 'N')})) or refine it in "
                  "production before shipping" for d, why in result["low_estimates"].items())
    fitted = (f"; fitted with --learner {made['fitted']['learner']} and stored: {', '.join(result['fitted'])}"
              if result["fitted"] else "")
    stored = f"; the store's models of {', '.join(result['stored_models'])}" if result["stored_models"] else ""
    default = "" if args.default else (" (the store's first variant: pass --default with your code variant's own "
                                       "default, which C++ headers exported from the bundle fall back to)")
    left = (f"\nleft out the store's models of {', '.join(left_out)} (devices without rows): add them with "
            f"--devices {','.join(sorted(bundle.devices) + left_out)}" if left_out else "")
    _emit(args, result, f"wrote {path} ({result['bytes']:,} bytes): models of {len(bundle.devices)} device{'s' * (len(bundle.devices) != 1)}"
                        f"{stored}{fitted}; transfer blocks "
                        f"{', '.join(f'{k} ({len(v)} sources)' for k, v in result['transfer_blocks'].items()) or 'none'}"
                        f"; default {bundle.default}{default}{left}{low}")


def cmd_bundle_show(args):
    from .bundle import Bundle
    bundle = Bundle.load(args.file).check()     # every part read: show vouches for the whole file
    model, info = bundle.model_for(args.device, kind=args.kind, measure=args.measure)
    out = {"computation": bundle.computation, "devices": sorted(bundle.devices), "default": bundle.default,
           "transfer_blocks": {k: b.sources for k, b in bundle.transfer.items()}, "this_device": info,
           "model": model.kind if model else None}
    _emit(args, out, _shown(bundle, model, info))


def _shown(bundle, model, info) -> str:
    """``nitro bundle show``'s text: the bundle's devices, default and transfer blocks, the path
    this device takes, and on the transfer path the block, where its features came from, those
    taken from the nearest source and whether it lies outside the sources."""
    blocks = "; ".join(f"{k} ({len(b.sources)} sources)" for k, b in bundle.transfer.items()) or "none"
    lines = [f"{bundle.computation}: models of {', '.join(sorted(bundle.devices))}; default {bundle.default}; "
             f"transfer blocks {blocks}",
             f"on {info['device']}: {info['path']}" + (f" ({model.kind} model)" if model else "")
             + (f": the model of {info['as']}, of the same product {info['product']}" if info["path"] == "product" else "")
             + (f" ({info['reason']})" if info.get("reason") else "")]
    if info["path"] == "transfer":
        weights = ", ".join(f"{s} {w:g}" for s, w in sorted(info["source_weights"].items(), key=lambda sw: -sw[1]))
        lines.append(f"  block {info['block']}, device features from {info['features_from']}"
                     + (f" ({info['product']})" if info.get("product") else "") + f"; source weights {weights}")
        if info["imputed"]:
            lines.append("  taken from the nearest source: "
                         + ", ".join(f"{f} ({s})" for f, s in info["imputed"].items()))
        if info["outside_sources"]:
            lines.append(f"warning: {info['device']} lies outside the sources' device features: it gets what the "
                         "sources show, not a model to trust (tune on it, or ship a model tuned there)")
    return "\n".join(lines)


def _model_file(path: str):
    """``(device, model)`` from a file written by ``nitro tune-from-source -o``."""
    from .model import SelectorModel, transfer_origin
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"no model file {path} (nitro tune-from-source NAME --target DEVICE -o FILE "
                                "writes one)") from None
    if raw[:2] == b"\x1f\x8b":
        raise ValueError(f"{path} is gzipped: a model file from tune-from-source -o is plain JSON "
                         "(a bundle goes to --bundle)")
    try:
        model = SelectorModel.from_dict(json.loads(raw))
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError) as exc:
        raise ValueError(f"{path} is not a nitro model ({exc})") from None
    except ValueError as exc:          # --model is repeatable: say which file
        raise ValueError(f"model file {path}: {exc}") from None
    target = model.provenance.get("target") or transfer_origin(model.provenance).get("target")
    if not target:
        raise ValueError(f"{path}: the model names no target device (provenance['target'], or that of the "
                         "tune_from_source model it was refined from)")
    return target, model


def cmd_export_cpp(args):
    from .bundle import Bundle
    from .export_cpp import bundle_from_store, narrowed, write_header
    if args.bundle and args.model:
        raise ValueError("--model adds to the store's models; a --bundle brings its own: give one or the other")
    if args.bundle:
        bundle = Bundle.load(args.bundle)
        if bundle.computation != args.computation:
            raise ValueError(f"bundle {args.bundle} holds {bundle.computation!r}, not {args.computation!r}")
        bundle = narrowed(bundle, _split(args.devices), args.default)
    else:
        bundle = bundle_from_store(_store(args), args.computation, _split(args.devices), args.default,
                                   models_given=dict(_model_file(f) for f in args.model or []))
    path = write_header(bundle, args.output, args.namespace)
    result = {"file": str(path), "bytes": path.stat().st_size,
              "models": {d: bundle.model(d).kind for d in bundle.devices}, "default": bundle.default}
    _emit(args, result, f"wrote {path} ({result['bytes']:,} bytes): models of {len(bundle.devices)} device{'s' * (len(bundle.devices) != 1)} "
                        f"({', '.join(f'{d}: {k}' for d, k in result['models'].items())}); default {bundle.default}"
                        + ("" if args.default else " (the bundle's)" if args.bundle else
                           " (the store's first variant: pass --default with your code variant's own default "
                           "so that C++ falls back as Python does)"))


def cmd_bench_startup(args):
    from .bench.startup import bench_startup, format_startup
    result = bench_startup(repeats=args.repeats)
    _emit(args, result, format_startup(result))


def cmd_bench_dispatch(args):
    from .bench.dispatch import bench_bundle, bench_dispatch, format_bundle, format_dispatch
    if (args.bundle is None) != (args.inputs is None) or args.devices and args.bundle is None:
        raise ValueError("--bundle FILE and --inputs CSV go together (--devices with them): the bundle's models "
                         "are timed on your inputs' feature rows")
    if args.bundle is not None:
        result = bench_bundle(args.bundle, args.inputs, calls=args.calls, devices=_split(args.devices))
        _emit(args, result, format_bundle(result))
        return
    result = bench_dispatch(calls=args.calls)
    _emit(args, result, format_dispatch(result))


def cmd_bench_noise(args):
    from .bench.noise import bench_noise, format_noise
    cores = [int(c) for c in _split(args.cores)] if args.cores else None
    result = bench_noise(args.train, args.test, args.seed, repeats=args.repeats, cores=cores)
    _emit(args, result, format_noise(result))


def cmd_bench_training(args):
    from .bench.training import bench_training, format_training
    result = bench_training(args.family, args.train, args.test, args.seed, budget=args.budget,
                            early_stopping=_early_stopping(args.epsilon, args.alpha, args.race),
                            repeats=args.repeats)
    _emit(args, result, format_training(result))


def cmd_bench_scale(args):
    from .bench.scale import bench_scale, format_scale
    result = bench_scale(sizes=args.sizes, devices=args.devices, evaluate_max=args.evaluate_max,
                         steps=args.steps.split(",") if args.steps else None, workdir=args.workdir,
                         progress=not args.json)
    _emit(args, result, format_scale(result))


def cmd_synthetic(args):
    from .synthetic import generate
    result = generate(args.directory, args.inputs, args.devices, n_features=args.features, seed=args.seed)
    _emit(args, result, f"wrote SYNTHETIC measurements of {result['inputs']} inputs x {result['devices']} devices "
                        f"x {result['variants']} variants to {result['directory']} (for speed tests only)")


def _whole_numbers(low: int):
    """An argparse type: comma-separated whole numbers of at least ``low``, each bad one named as
    given (``1.5`` is refused as 1.5, not read as 1)."""
    def numbers(text: str) -> list[int]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if not (t.isascii() and t.isdigit() and int(t) >= low)]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"comma-separated whole numbers of at least {low}, got {text!r}"
                                             + (f" ({', '.join(map(repr, bad))} is not one)" if bad else ""))
        return [int(t) for t in items]
    return numbers


_seed_list = _whole_numbers(0)


def _n_jobs(text: str) -> int:
    """``--n-jobs``: joblib's count of workers, a whole number other than 0 (-1: every core, -2: all but one)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value == 0:
        raise argparse.ArgumentTypeError(f"a whole number other than 0 (-1: every core), got {text!r}")
    return value


def cmd_bench_cvdfs(args):
    from .bench.cvdfs import bench_cvdfs, format_cvdfs
    result = bench_cvdfs(args.dataset, target=args.target, max_size=args.max_subset_size, seed=args.seed,
                         reference_fits=args.reference_fits, n_jobs=args.n_jobs)
    _emit(args, result, format_cvdfs(result))


def cmd_bench_refine(args):
    from .bench.refine import bench_refine, format_refine
    result = bench_refine(stream=args.stream, seed=args.seed, budget=args.budget, time_budget=args.time_budget or None,
                          candidates=args.candidates or None,
                          quantile=args.quantile, refit_every=args.refit_every, oracle_every=args.oracle_every,
                          overhead_calls=args.overhead_calls, datasets=args.datasets, n_train=args.train,
                          n_test=args.test, repeats=args.repeats, pause_seconds=args.pause_seconds,
                          fresh_stream=args.fresh_stream, audit=args.audit)
    _emit(args, result, format_refine(result))


def cmd_bench_store(args):
    from .bench.store import bench_store, format_store
    result = bench_store(rows=args.rows, writers=args.writers, batch=args.batch, targets=_split(args.targets))
    _emit(args, result, format_store(result))


def cmd_bench_variants(args):
    from .bench.variants import bench_variants, format_variants
    result = bench_variants(_split(args.families), seed=args.seed, progress=not args.json,
                            n_train=args.train, n_test=args.test)
    _emit(args, result, format_variants(result))


TIME_WEIGHT_HELP = ("weight each training input of the kernel models by its typical fastest time to this power "
                    "(0, the default: every input alike; 0.5 favours the inputs that take the most time, for the "
                    "total time of many calls over the mean %% of the optimum per input)")

AUDIT_HELP = "share of the other candidate calls, sure by their margin, explored all the same (0: none; default 0.1)"

ONLINE_DEFAULTS = {"passes": 10, "stream": None, "budget": 0.02, "time_budget": 0.01, "candidates": 2,
                   "quantile": 0.25, "audit": 0.1, "refit_every": 4, "refit": "trees", "zero_shot": "full"}


def cmd_evaluate(args):
    from .dataset import load_dataset_dir
    given = [f"--{k.replace('_', '-')}" for k, v in ONLINE_DEFAULTS.items() if getattr(args, k) != v]
    if given and not args.online:
        raise ValueError(f"{', '.join(given)} {'is an option' if len(given) == 1 else 'are options'} of the "
                         "refining replay: add --online")
    if args.online:
        from .online import evaluate_online, format_online
        if args.seeds:
            raise ValueError("--online replays one split: give --seed, not --seeds")
        if args.methods:
            raise ValueError("--online replays refining mode with every device left out in turn; "
                             "it takes no --methods")
        result = evaluate_online(load_dataset_dir(args.dataset), variants=_split(args.variants),
                                 devices=_split(args.devices), test_size=args.test_size, seed=args.seed,
                                 passes=args.passes, stream_length=args.stream, budget=args.budget,
                                 time_budget=args.time_budget or None,
                                 candidates=args.candidates or None, quantile=args.quantile, audit=args.audit,
                                 refit_every=args.refit_every, cvdfs=args.zero_shot == "cvdfs",
                                 max_size=args.max_subset_size, n_jobs=args.n_jobs, refit=args.refit,
                                 progress=True, time_weight=args.time_weight,     # on stderr: --json too
                                 holdout_by=args.holdout_by,
                                 targets=None if args.targets is None else _split(args.targets) or [])
        _emit(args, result, format_online(result))
        return
    from .evaluate import METHODS, evaluate, evaluate_splits, format_evaluation, format_splits
    if args.plot and args.methods and not set(_split(args.methods) or ()) & set(METHODS):
        raise ValueError(f"--plot draws the figures of nitro evaluate's methods ({', '.join(METHODS)}); the "
                         f"selector comparison of --methods {args.methods} has none: leave --plot out, or add one "
                         "of those methods")
    options = dict(variants=_split(args.variants), devices=_split(args.devices), test_size=args.test_size,
                   targets=None if args.targets is None else _split(args.targets) or [],   # "": none, not all
                   methods=_split(args.methods), max_size=args.max_subset_size, k=args.k, n_jobs=args.n_jobs,
                   progress=True, cross_features=args.cross_features, holdout_by=args.holdout_by,   # stderr
                   time_weight=args.time_weight)
    if args.seeds:
        if args.plot:
            raise ValueError("--plot draws one split's figures: give --seed, not --seeds")
        result = evaluate_splits(load_dataset_dir(args.dataset), args.seeds, **options)
        _emit(args, result, format_splits(result))
        return
    result = evaluate(load_dataset_dir(args.dataset), seed=args.seed, **options)
    if args.plot:
        from .plots import plot_evaluation
        result["plots"] = plot_evaluation(result, args.plot)
    _emit(args, result, format_evaluation(result))


def _at_least(low: int):
    """An argparse type: a whole number of at least ``low``."""
    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"a whole number, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"at least {low}, got {value}")
        return value
    return whole


def _real(accepts, wanted: str):
    """An argparse type: a number that ``accepts`` (NaN when the text is none), else ``wanted`` in the message."""
    def number(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not accepts(value):
            raise argparse.ArgumentTypeError(f"{wanted}, got {text!r}")
        return value
    return number


_fraction = _real(lambda v: 0.0 < v < 1.0, "a fraction in (0, 1)")
_share = _real(lambda v: 0.0 <= v < math.inf, "a finite number of at least 0")


def _target_budget(text: str) -> int | float:
    """``--target-budget``: a count of inputs (a whole number from 1) or a fraction in (0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a count or a fraction of the training inputs, got {text!r}") from None
    if value >= 1 and value.is_integer():
        return int(value)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"a count (1, 2, ...) or a fraction in (0, 1), got {text!r}")
    return value


def _may_fall_below(chance: float | None) -> str:
    """The estimate's warning that the model may trail a baseline, with its chance when known."""
    return "; it may fall below it here" + ("" if chance is None else f" (chance about {100 * chance:.0f}%)")


def _features_file(path: str) -> dict:
    """``--target-features``: a JSON object ``{feature: value}``, or an error naming the file."""
    try:
        value = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:       # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"--target-features {path}: not a readable JSON file ({exc})") from None
    if not isinstance(value, dict):
        raise ValueError(f"--target-features {path}: a JSON object {{feature: value}} is needed, "
                         f"not a {type(value).__name__}")
    return value


def cmd_tune_from_source(args):
    from .transfer.confidence import TransferEstimateWarning
    from .transfer.tune import recorded_meta, tune_from_source
    target_features = _features_file(args.target_features) if args.target_features else None
    store = _store(args)
    meta = recorded_meta(store, args.computation)
    try:
        with warnings.catch_warnings():        # the estimate is printed below, with the rest
            warnings.simplefilter("ignore", TransferEstimateWarning)
            model = tune_from_source(store, args.computation, meta["variants"], meta["features"],
                                     sources=_split(args.sources), target=args.target, target_features=target_features,
                                     profiling_based_dfs=args.p_dfs, search_based_dfs=args.cv_dfs, k=args.k,
                                     max_subset_size=args.max_subset_size, selection=args.selection,
                                     n_jobs=args.n_jobs, progress=not args.json, keep_variants=_split(args.variants),
                                     target_budget=args.target_budget, save=args.output is None,
                                     time_weight=args.time_weight)
    except StorePermissionError as exc:      # a reader: the model was built, then refused
        raise StorePermissionError(f"{exc}; nothing was stored: a user who may not store models keeps "
                                   "the model in a file with --output FILE") from None
    if args.output:
        Path(args.output).write_text(json.dumps(model.to_dict()))
    lines = _transfer_lines(args.computation, model.provenance)
    lines.append(f"model written to {args.output}" if args.output else
                 f"model stored for {model.provenance['target']} in {store!r}")
    _emit(args, model.provenance, "\n".join(lines))


def _transfer_lines(computation: str, p: dict) -> list[str]:
    """What ``tune-from-source`` prints of a transferred model's provenance ``p``."""
    selection = ("P-DFS, then " if "p_dfs" in p else "") + (
        f"CV-DFS, an ensemble of {len(p['subsets'])} subsets" if "cv_dfs" in p else f"no CV-DFS: {p.get('cv_dfs_off')}")
    trees = "zero_shot_device_features" in p     # few-shot trees: every known device feature, not the selection
    features = (f"device features (boosted trees: every one known on the target and the sources): "
                f"{', '.join(p['device_features'])}; the zero-shot model's ({selection}): "
                f"{', '.join(p['zero_shot_device_features']) or 'none'}" if trees else
                f"device features ({selection}): {', '.join(p['device_features']) or 'none'}")
    lines = [f"model of {computation!r} for {p['target']} from {len(p['sources'])} sources "
             f"({', '.join(p['sources'])}); {features}", f"variants: {', '.join(p['variants'])}"]
    lines += [f"left out variant {v}: {why}" for v, why in p["variants_left_out"].items()]
    lines += [f"left out source {s}: {why}" for s, why in p["sources_left_out"].items()]
    by_reason: dict[tuple, list[str]] = {}         # one line per reason: CPUs and GPUs differ in dozens
    for f, why in p.get("device_features_left_out", {}).items():
        by_reason.setdefault((why, f in p["device_features"]), []).append(f)
    lines += [f"left out device feature{'s' * (len(fs) > 1)} {', '.join(fs)}"
              f"{' of the zero-shot model (the trees use ' + ('them' if len(fs) > 1 else 'it') + ')' if used else ''}"
              f": {why}" for (why, used), fs in by_reason.items()]
    if "rows_filled_in" in p:
        n = p["rows_filled_in"]
        lines.append(f"the sources timed different inputs ({n['timed_on_every_source']} of {n['inputs']} on every "
                     f"source): {n['rows']} of their rows are filled in from each source's nearest timed inputs")
    c = p.get("confidence")
    if "few_shot" in p:
        z = p["zero_shot_confidence"]
        how = ("were learnt with the sources' rows by boosted trees, in place of the zero-shot model"
               if p["few_shot"].get("learner") == "trees" else "corrected the zero-shot model")
        lines.append(f"few-shot model: {len(p['few_shot']['inputs'])} inputs timed on {p['target']} {how}, whose "
                     f"expected quality was {100 * z['predicted_quality']:.1f}% ({z['level']})")
        e = p["few_shot"].get("estimate")
        if not e:
            lines.append(f"no cross-validated figure for the few-shot model from {len(p['few_shot']['inputs'])} timed "
                         "inputs: time 6 or more (a larger --target-budget) for one")
        else:
            lines.append(f"measured on those inputs: the zero-shot model {100 * e['zero_shot_on_timed']:.1f}% of the "
                         f"optimum, the few-shot model {100 * e['quality']:.1f} ± {100 * e['stderr']:.1f} "
                         f"({e['folds']}-fold cross-validation: each input chosen by "
                         f"{'trees' if e.get('learner', 'trees') == 'trees' else 'the correction'} fitted without it)"
                         + (f"; the zero-shot estimate was {100 * (z['predicted_quality'] - e['zero_shot_on_timed']):.1f} "
                            "points too high here" if z["predicted_quality"] - e["zero_shot_on_timed"] > 0.03 else ""))
            if e["quality"] < e["zero_shot_on_timed"]:
                lines.append("the few-shot model is kept although its cross-validated figure is the lower: with few "
                             "timed inputs each held-out one is often alone in its region, so the figure understates "
                             "the model fitted on all of them, while the zero-shot model's figure is measured on "
                             "inputs it never saw; choosing between the two by this comparison lost up to 1.6 "
                             "points on the SpMV data (benchmarks/README.md, \"Two rules to pick\"); time more "
                             "inputs (a larger --target-budget) for a figure to trust")
    if c:
        held = (f"held-out sources {100 * c['held_out_quality']:.1f}, worst {100 * c['held_out_worst']:.1f}"
                if c.get("held_out") else "no source to hold out: the model's own estimate alone, unvalidated")
        sampling = f"±{200 * c['standard_error']:.1f} from sampling the inputs; " if c.get("standard_error") else ""
        if c["outside_sources"]:         # a ± would read as a sound figure: the sources cannot vouch for the target
            lines.append(f"expected quality on {p['target']}: no figure to trust, its device features lie outside "
                         f"the sources' (nearest source {c['nearest_source']}); the sources show "
                         f"{100 * c['predicted_quality']:.1f}% of the optimum (model's own estimate "
                         f"{100 * c['self_estimate']:.1f}, {held}), and a behaviour none of them has can put the "
                         "target far below it")
        else:
            lines.append(f"expected quality on {p['target']}: {100 * c['predicted_quality']:.1f}% of the optimum "
                         f"({sampling}model's own estimate {100 * c['self_estimate']:.1f}, {held}); "
                         f"nearest source {c['nearest_source']}")
        if p.get("validated_without_family"):
            lines.append(f"family {p['target_metadata'].get('arch')}: no source shares it, so each source was "
                         "validated held out with its own family, as this target is predicted")
        names = {"best_single_source": "the best single source's own fastest variants (chosen in hindsight)",
                 "majority": "the sources' majority fastest variant",
                 "full_set_svm": "the paper's full-set SVM (learner='svm' in Python)"}
        for name, b in c.get("baselines", {}).items():
            lines.append(f"on held-out sources the model led {names[name]} on {b['model_ahead_on']} of "
                         f"{b['held_out_sources']} (their mean {100 * b['held_out_mean']:.1f}%; the model's lead "
                         f"{100 * b['lead']:+.1f} points, sd {100 * b['lead_sd']:.1f})"
                         + (_may_fall_below(b.get("chance_below")) if name in c["may_trail"] else ""))
        if c["level"] in ("low", "uncertain"):
            lines.append(f"estimate {c['level'].upper()} ({'; '.join(c.get('low_because', []))}): {c['advice']}")
    return lines


def cmd_record(args):
    from .benchmarks import load
    from .record import record_family
    families = _split(args.families)
    if not families:
        raise ValueError("name at least one benchmark family to record (histogram,spmv,..., or a module of your own)")
    for family in families:          # every name checked before anything is timed
        load(family)
    out = {}
    try:
        for i, family in enumerate(families):   # a disturbed device record is taken again once, not per family
            out[family] = record_family(_store(args), family, args.directory, device_id=args.device_id,
                                        device_record=i == 0,
                                        n_train=args.train, n_test=args.test, seed=args.seed,
                                        max_foreign=args.max_foreign, wait_share=args.wait_share,
                                        wait_window=args.wait_window,
                                        attempts=args.attempts, wait_timeout=args.wait_timeout, progress=not args.json)
    except KeyboardInterrupt:       # Ctrl-C or SIGTERM: say what is kept before "nitro: interrupted"
        print(f"nitro record: stopped; the inputs timed so far stay in the store and in "
              f"{Path(args.directory) / 'foreign_load.csv'}: run the same command again to resume "
              "(each family's folder is written when its recording ends)", file=sys.stderr)
        raise
    lines = []
    for r in out.values():
        if r["device_record_foreign_share"] is not None:
            lines.append(f"device record of {r['device']} taken with other work at "
                         f"{r['device_record_foreign_share']:.3f} of the CPUs"
                         + (": the earlier record, taken at a quieter moment, is kept" if r["device_record_kept_earlier"]
                            else " (disturbed: a later run takes it again)"
                            if r["device_record_foreign_share"] > args.max_foreign else ""))
        lines.append(f"{r['computation']} on {r['device']}: {r['measured']} inputs measured, {r['resumed']} already "
                     f"recorded, in {r['seconds']:.0f} s; written to {r['directory']}")
        if r["measured"]:
            lines.append(f"  other work's share of the CPUs during the stored timings: median {r['foreign_share_median']:.3f}, "
                         f"max {r['foreign_share_max']:.3f}; {r['inputs_above_max_foreign']} inputs above "
                         f"{args.max_foreign} after {args.attempts} attempts"
                         + (" (a later run times them again)" if r["inputs_above_max_foreign"] else ""))
        if r["kept_earlier"]:
            lines.append(f"  {r['kept_earlier']} inputs keep their earlier timing: this run's moment was busier")
        if r["inputs_not_waited_for"]:
            lines.append(f"  the machine never became quiet within --wait-timeout for {r['inputs_not_waited_for']} inputs")
        lines.append("  best variants: " + ", ".join(f"{v} {n}" for v, n in r["best_variants"].items()))
    _emit(args, out, "\n".join(lines))


def cmd_explain(args):
    from .explain import explain_computation, format_explanation
    result = explain_computation(_store(args), args.computation, devices=_split(args.devices),
                                 min_gain=args.min_gain, plot=args.plot)
    _emit(args, result, format_explanation(result))


def cmd_selftest(args):
    if not args.gpu:
        raise ValueError("nitro selftest: nothing to test; pass --gpu to check nitro's GPU paths on this machine's GPU")
    from .selftest import format_gpu, run_gpu
    result = run_gpu()
    _emit(args, result, format_gpu(result))
    if not result["passed"]:
        raise SystemExit(1)


def cmd_devices(args):
    from . import devices
    from .devices import lineage
    records = devices.describe_all(measure=not args.no_measure)
    lines = []
    for device_id, record in records.items():
        lines.append(f"{device_id}:")
        if device_id != "gpu":      # "gpu" only says why no GPU is listed
            meta = lineage.gpu_metadata(record) if "compute_capability" in record else devices.local_metadata(device_id)
            lines.append("  " + ", ".join(f"{k} {v}" for k, v in meta.items()) + "  [metadata, not features]")
        for name, rec in record.items():
            value = "missing: " + rec["missing"] if rec.get("value") is None else f"{rec['value']:.4g} {rec['unit']}"
            lines.append(f"  {name:<24}{value:<39} [{rec['source']}]")
    _emit(args, records, "\n".join(lines))


def cmd_profile(args):
    import time

    import numpy as np

    from .benchmarks import load
    from .profiling.cpu import available
    from .transfer.pdfs import select_proxies
    from .tuner import Autotuner
    family = load(args.computation)
    why = available()                   # before any input is made: callgrind runs in a subprocess later
    if why is not None:
        raise OSError(f"nitro profile needs callgrind on this machine: {why}")
    cv = family.make_code_variant()
    (train, ids), _ = family.train_test_inputs()
    size = lambda a: sum(x.nbytes for x in (a if isinstance(a, tuple) else (a,)) if isinstance(x, np.ndarray))  # noqa: E731
    small = [(a, i) for a, i in zip(train, ids) if size(a) <= args.max_bytes][:args.inputs]
    if not small:
        raise ValueError(f"no training input of {args.computation!r} has at most {args.max_bytes} bytes")
    store = _store(args)
    tuner = Autotuner(cv.name, store=store, progress=False)
    tuner.set_training_args([a for a, _ in small], ids=[i for _, i in small])
    start = time.perf_counter()
    result = tuner.profile([cv], reprofile=args.reprofile)
    result["seconds"] = round(time.perf_counter() - start, 1)
    result["inputs"] = [i for _, i in small]
    variant_profiles = {k: v for k, v in store.profiles(cv.name, result["device"]).items() if k[1] in result["inputs"]}
    result["pdfs_winners"] = select_proxies(store.proxy_profiles(result["device"]), variant_profiles)
    lines = [f"profiled {result['variant_profiles']} variant calls and {result['proxy_profiles']} proxy calls "
             f"on {result['device']} in {result['seconds']} s; P-DFS proxies per variant:"]
    lines += [f"  {v:<24}{', '.join(p)}" for v, p in sorted(result["pdfs_winners"].items())]
    _emit(args, result, "\n".join(lines))


def _split(text):
    """A comma-separated option as a list; CSV quoting keeps a comma in a name (``'"a,b",c'``)."""
    return [t for t in next(csv.reader([text], skipinitialspace=True)) if t] if text else None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nitro", description="The nitro command line: variant tuning across architectures.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", default=None, help="Redis URL (default: $NITRO_STORE, else the embedded store)")
    common.add_argument("--json", action="store_true", help="print JSON instead of a table")
    common.add_argument("--backend", default=None, help="joblib backend for parallel loops: loky (processes), "
                                                         "threading, multiprocessing, dask or ray")
    common.add_argument("--backend-address", default=None, metavar="ADDRESS",
                        help="dask scheduler (tcp://host:8786) or Ray cluster (ray://host:10001, auto) to run on "
                             "(default: $DASK_SCHEDULER_ADDRESS / $RAY_ADDRESS, else a local cluster of processes)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", parents=[common], help="tune the C++ histogram variants here and report quality")
    p.add_argument("--train", type=int, default=48, help="training images (default 48)")
    p.add_argument("--test", type=int, default=48, help="test images (default 48)")
    p.add_argument("--seed", type=_at_least(0), default=0)
    p.set_defaults(func=cmd_demo)

    store = sub.add_parser("store", help="inspect and move recorded data").add_subparsers(dest="store_command", required=True)
    p = store.add_parser("ls", parents=[common], help="list computations, devices and row counts")
    p.set_defaults(func=cmd_store_ls)
    p = store.add_parser("export", parents=[common], help="write a computation as devices/inputs/measurements CSV")
    p.add_argument("computation")
    p.add_argument("directory")
    p.add_argument("--devices", help="comma-separated devices (default: every device with rows)")
    p.set_defaults(func=cmd_store_export)
    p = store.add_parser("import", parents=[common], help="read a devices/inputs/measurements CSV directory")
    p.add_argument("directory")
    p.add_argument("computation")
    p.add_argument("--variants", help="comma-separated variants to keep (default: all)")
    p.add_argument("--update-devices", action="store_true",
                   help="overwrite stored device features/metadata that devices.csv gives other values "
                        "(shared by every computation; without it such a difference is an error)")
    p.set_defaults(func=cmd_store_import)
    p = store.add_parser("rm", parents=[common], help="remove a computation: its rows, models and profiles "
                         "(device records stay, shared by every computation)")
    p.add_argument("computation")
    p.add_argument("--yes", action="store_true", help="remove it (without: say what it holds, remove nothing)")
    p.set_defaults(func=cmd_store_rm)

    bundle = sub.add_parser("bundle", help="ship models in one file").add_subparsers(dest="bundle_command", required=True)
    p = bundle.add_parser("build", parents=[common], help="write a computation's models and unknown-device fallbacks to a file")
    p.add_argument("computation")
    p.add_argument("-o", "--output", required=True, help="bundle file (.json, or .json.gz gzipped)")
    p.add_argument("--devices", help="comma-separated devices (default: every device with rows)")
    p.add_argument("--learner", default="svm", help="learner fitted (and stored) for devices without a stored "
                   "model: svm, regression, costmin, lsq, tree or threshold (default svm)")
    p.add_argument("--default", help="the variant run where no model applies (default: the store's first; give "
                   "your code variant's own, which C++ headers exported from the bundle fall back to)")
    p.set_defaults(func=cmd_bundle_build)
    shown = argparse.ArgumentParser(add_help=False)     # reads a file: no store, no parallel loops
    shown.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p = bundle.add_parser("show", parents=[shown], help="a bundle's devices and transfer blocks, and which model "
                          "this device gets")
    p.add_argument("file")
    p.add_argument("--device", help="device id or reported name (default: this machine's CPU)")
    p.add_argument("--kind", help="cpu or gpu: the transfer block for an unknown device")
    p.add_argument("--measure", action="store_true", help="allow microbenchmarks for an unknown device's features")
    p.set_defaults(func=cmd_bundle_show)
    p = sub.add_parser("export-cpp", parents=[common],
                       help="write a C++17 header choosing the variant (device models + fallback table)")
    p.add_argument("computation")
    p.add_argument("-o", "--output", required=True, help="header file, e.g. selector.hpp")
    p.add_argument("--bundle", help="take the models from this bundle file instead of the store")
    p.add_argument("--devices", help="comma-separated device ids (default: every device with a stored model, "
                                     "or every device of the --bundle)")
    p.add_argument("--model", action="append", metavar="JSON",
                   help="a model file written by tune-from-source -o, for the device it names (repeatable; "
                        "beside the store's models)")
    p.add_argument("--default", help="variant run where no model applies (default: the bundle's, else the "
                                     "store's first variant)")
    p.add_argument("--namespace", help="C++ namespace (default: nitro_<computation>)")
    p.set_defaults(func=cmd_export_cpp)

    p = sub.add_parser("evaluate", parents=[common], help="leave-one-device-out evaluation of a measurement directory")
    p.add_argument("dataset", help="directory with devices.csv, inputs.csv[.gz], measurements.csv[.gz]")
    p.add_argument("--variants", help="comma-separated variants (default: those measured on every device)")
    p.add_argument("--devices", help="comma-separated devices (default: all)")
    p.add_argument("--targets", help="comma-separated devices to evaluate, each with every other device as a "
                   "source (default: all); the time grows with targets x sources")
    p.add_argument("--methods", help="comma-separated methods (default: all); selector names "
                   "(svm,regression,costmin,lsq,tree,threshold) are compared side by side")
    p.add_argument("--cross-features", choices=["cvdfs", "all"], default="cvdfs",
                   help="device features of the selectors' cross-device models (default: CV-DFS)")
    p.add_argument("--holdout-by", default="device", metavar="COLUMN",
                   help="'device' (default: leave one device out) or a column of devices.csv such as "
                        "'arch' or 'compute_capability' (hold out each family, one per value: its devices "
                        "are the targets, the other families the sources)")
    p.add_argument("--test-size", type=_fraction, default=0.5)
    p.add_argument("--seed", type=_at_least(0), default=0)
    p.add_argument("--seeds", metavar="SEEDS", type=_seed_list, help="comma-separated split seeds (two or more): evaluate on each "
                   "random split and report every method's mean ± sd over them and its worst target")
    p.add_argument("--k", type=_at_least(1), default=1, help="features kept by the k-most-frequent CV-DFS rule")
    p.add_argument("--max-subset-size", type=_at_least(1), default=3)
    p.add_argument("--n-jobs", type=_n_jobs, default=None)
    p.add_argument("--plot", metavar="DIR", help="write PNG figures to DIR")
    p.add_argument("--time-weight", type=float, default=0.0, metavar="POWER", help=TIME_WEIGHT_HELP)
    online = p.add_argument_group("--online: replay refining mode on each target's recorded times")
    online.add_argument("--online", action="store_true",
                        help="replay a stream of training inputs through refining mode from the zero-shot model")
    online.add_argument("--passes", type=_at_least(1), default=ONLINE_DEFAULTS["passes"], help="shuffled passes over the training inputs (default 10)")
    online.add_argument("--stream", type=_at_least(1), default=None, metavar="N", help="stream length in calls (overrides --passes)")
    online.add_argument("--budget", type=float, default=ONLINE_DEFAULTS["budget"], help="largest share of calls that explore (default 0.02)")
    online.add_argument("--time-budget", type=float, default=ONLINE_DEFAULTS["time_budget"],
                        help="largest share of the served calls' time that exploring may add (0: no bound; default 0.01)")
    online.add_argument("--candidates", type=int, default=ONLINE_DEFAULTS["candidates"], help="variants an explored call runs (0: all; default 2)")
    online.add_argument("--quantile", type=float, default=ONLINE_DEFAULTS["quantile"],
                        help="explore candidate calls whose margin is in this lowest share of recent margins")
    online.add_argument("--audit", type=float, default=ONLINE_DEFAULTS["audit"],
                        help=AUDIT_HELP)
    online.add_argument("--refit-every", type=int, default=ONLINE_DEFAULTS["refit_every"], help="new target rows between refits (default 4)")
    online.add_argument("--refit", choices=["trees", "kernel"], default=ONLINE_DEFAULTS["refit"],
                        help="refit from the sources' and the target's rows by per-variant boosted trees "
                             "(default), or correct the zero-shot kernel model")
    online.add_argument("--zero-shot", choices=["full", "cvdfs"], default=ONLINE_DEFAULTS["zero_shot"],
                        help="zero-shot model: full-set Kronecker KRR (default) or the CV-DFS ensemble")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("tune-from-source", parents=[common], help="build a target's model from source devices in the store")
    p.add_argument("computation")
    p.add_argument("--target", help="target device id (default: this machine)")
    p.add_argument("--sources", help="comma-separated source devices (default: all others; only those of the "
                   "target's kind when the store knows it and at least three share it)")
    p.add_argument("--variants", help="comma-separated variants the model chooses among "
                   "(default: those timed on every source)")
    p.add_argument("--target-features", metavar="JSON",
                   help="file with the target's device features {name: value} (or a device.json as nitro "
                        "writes it); text values such as \"kind\": \"gpu\" are metadata")
    p.add_argument("--cv-dfs", action=argparse.BooleanOptionalAction, default=None,
                   help="search-based device-feature selection (default: on with 3 or more sources)")
    p.add_argument("--p-dfs", action="store_true", help="profile-based device-feature selection")
    p.add_argument("--selection", choices=["ensemble", "frequency"], default="ensemble")
    p.add_argument("--k", type=_at_least(1), default=1)
    p.add_argument("--max-subset-size", type=_at_least(1), default=3)
    p.add_argument("--n-jobs", type=_n_jobs, default=None)
    p.add_argument("--target-budget", type=_target_budget, metavar="N", help="few-shot: the model also learns "
                   "from N of the target's training inputs (boosted trees from 6 of them, below that a correction of "
                   "the zero-shot model; a count, or a fraction such as 0.02), chosen by k-means "
                   "among the inputs the target already has recorded in the store (measuring new ones runs the "
                   "variants: Autotuner.tune_from_source in Python)")
    p.add_argument("--time-weight", type=float, default=0.0, metavar="POWER", help=TIME_WEIGHT_HELP)
    p.add_argument("-o", "--output", metavar="JSON", help="write the model to this file instead of the store "
                   "(for a read-only store user)")
    p.set_defaults(func=cmd_tune_from_source)

    p = sub.add_parser("record", parents=[common],
                       help="time benchmark families' training and test inputs here, at quiet moments, "
                            "and write them as a dataset folder with the device record")
    p.add_argument("families", help="comma-separated benchmark families (histogram,spmv,...), nitro's or "
                   "your own family modules by import name (mylib.tuning.sumsq) or file (tuning/sumsq.py)")
    p.add_argument("directory", help="folder for device.json, foreign_load.csv and one sub-folder per family")
    p.add_argument("--device-id", help="id to record under (default: the GPU of a GPU family (histogram_cuda, spmv_cuda), else this machine's CPU id)")
    p.add_argument("--train", type=int, default=48, help="training inputs per family (default 48)")
    p.add_argument("--test", type=int, default=48, help="test inputs per family (default 48)")
    p.add_argument("--seed", type=_at_least(0), default=0, help="the inputs' seed: the same ids on every machine (default 0)")
    p.add_argument("--max-foreign", type=float, default=0.05,
                   help="share of the machine other work may take while an input is timed before it is timed again")
    p.add_argument("--wait-share", type=float, default=0.10,
                   help="before each input, wait until other work takes less than this share for --wait-window s")
    p.add_argument("--wait-window", type=float, default=2.0,
                   help="seconds of quiet awaited before each input (default 2; the GPU recordings under "
                        "datasets/ used 0.3 on an otherwise idle 16-core machine)")
    p.add_argument("--attempts", type=int, default=5, help="timings of a disturbed input at most (the quietest is kept)")
    p.add_argument("--wait-timeout", type=float, default=600.0, help="seconds to wait for a quiet moment at most")
    p.set_defaults(func=cmd_record)
    p = sub.add_parser("explain", parents=[common],
                       help="which features decide a computation's best variant, and where each variant wins")
    p.add_argument("computation")
    p.add_argument("--devices", help="comma-separated devices whose rows to explain (default: all recorded; "
                   "with several, their device features join the input features)")
    p.add_argument("--min-gain", type=_share, default=0.01,
                   help="stop splitting when a split removes less than this share of the total SSE")
    p.add_argument("--plot", metavar="PNG", help="draw the tree into this PNG file")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("selftest", parents=[common], help="run nitro's GPU paths on this GPU: pass/FAIL per path")
    p.add_argument("--gpu", action="store_true", help="check the GPU paths (skipped, saying why, without a GPU)")
    p.set_defaults(func=cmd_selftest)

    p = sub.add_parser("devices", parents=[common], help="this machine's CPU and NVIDIA GPUs and their features")
    p.add_argument("--no-measure", action="store_true", help="skip the microbenchmarks")
    p.set_defaults(func=cmd_devices)

    p = sub.add_parser("profile", parents=[common],
                       help="profile a benchmark family's variants and the application proxies here (for P-DFS)")
    p.add_argument("computation", help="benchmark family, e.g. histogram")
    p.add_argument("--inputs", type=_at_least(1), default=4,
                   help="training inputs to profile (the first small ones; default 4)")
    p.add_argument("--max-bytes", type=_at_least(1), default=256 << 10,
                   help="largest input profiled, in bytes (callgrind is ~50x slower; default 262144)")
    p.add_argument("--reprofile", action="store_true", help="profile again what the store already has")
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser("synthetic", parents=[common],
                       help="write a SYNTHETIC measurement directory (roofline-style times) for speed tests")
    p.add_argument("directory", help="folder to write devices.csv, inputs.csv.gz, measurements.csv.gz and a README into")
    p.add_argument("--inputs", type=_at_least(20), default=10000,
                   help="inputs, each timed on every device (default 10000, at least 20)")
    p.add_argument("--devices", type=_at_least(1), default=4,
                   help="GPU-like devices, two per architecture family (default 4)")
    p.add_argument("--features", type=_at_least(8), default=12,
                   help="input features: 8 that the times depend on, the rest noise (default 12, at least 8)")
    p.add_argument("--seed", type=_at_least(0), default=0, help="random seed of devices, inputs and times (default 0)")
    p.set_defaults(func=cmd_synthetic)

    bench = sub.add_parser("bench", help="measure nitro's own speed").add_subparsers(dest="bench_command", required=True)
    p = bench.add_parser("startup", parents=[common],
                         help="fresh-process import + bundle load + first dispatch against import numpy")
    p.add_argument("--repeats", type=int, default=15)
    p.set_defaults(func=cmd_bench_startup)
    p = bench.add_parser("dispatch", parents=[common], help="dispatch overhead against scikit-learn predict")
    p.add_argument("--calls", type=_at_least(1), default=20000)
    p.add_argument("--bundle", metavar="FILE", help="time this bundle's models instead (with --inputs)")
    p.add_argument("--inputs", metavar="CSV", help="feature rows to time the bundle's models on: a column per input "
                   "feature (a data set's inputs.csv)")
    p.add_argument("--devices", help="comma-separated bundle devices to time (default: every one)")
    p.set_defaults(func=cmd_bench_dispatch)
    p = bench.add_parser("training", parents=[common],
                         help="exhaustive training against early stopping + active learning")
    p.add_argument("--family", default="histogram", help="benchmark family (default histogram)")
    p.add_argument("--train", type=int, default=48)
    p.add_argument("--test", type=int, default=48)
    p.add_argument("--seed", type=_at_least(0), default=0, help="first train/test draw")
    p.add_argument("--repeats", type=int, default=3, help="independent train/test draws (default 3)")
    p.add_argument("--budget", type=float, default=0.75, help="fraction of training inputs to measure (default 0.75)")
    p.add_argument("--epsilon", type=float, help="early stopping: tolerated distance to the best (default: EarlyStopping's)")
    p.add_argument("--alpha", type=float, help="early stopping: tolerated probability of missing it (default: EarlyStopping's)")
    p.add_argument("--race", type=float, help="stop repeating a variant this much slower than the best "
                                              "(default: EarlyStopping's)")
    p.set_defaults(func=cmd_bench_training)
    p = bench.add_parser("noise", parents=[common],
                         help="histogram tuned without and with a busy loop on the other core(s): quality, label agreement")
    p.add_argument("--train", type=int, default=48, help="training images per draw (default 48)")
    p.add_argument("--test", type=int, default=48, help="test images per draw (default 48)")
    p.add_argument("--seed", type=_at_least(0), default=0, help="first draw's seed (default 0)")
    p.add_argument("--repeats", type=int, default=3, help="independent draws (default 3)")
    p.add_argument("--cores", help="comma-separated cores to load (default: every core but the first)")
    p.set_defaults(func=cmd_bench_noise)
    p = bench.add_parser("variants", parents=[common],
                         help="every benchmark family: best-variant counts, tuned quality, speed against NumPy/SciPy")
    p.add_argument("--families", help="comma-separated families (default: all)")
    p.add_argument("--train", type=int, default=None, help="training inputs per family (default: the family's, 48; 96 for the solver)")
    p.add_argument("--test", type=int, default=48, help="test inputs per family (default 48)")
    p.add_argument("--seed", type=_at_least(0), default=0)
    p.set_defaults(func=cmd_bench_variants)
    p = bench.add_parser("refine", parents=[common],
                         help="refining mode here: a histogram stream from a transferred model, against tune()")
    p.add_argument("--stream", type=int, default=400, help="stream images (default 400)")
    p.add_argument("--train", type=int, default=48, help="training images of the tune() comparison (default 48)")
    p.add_argument("--test", type=int, default=48, help="test images (default 48)")
    p.add_argument("--seed", type=_at_least(0), default=0)
    p.add_argument("--budget", type=float, default=0.02, help="largest share of calls that explore (default 0.02)")
    p.add_argument("--time-budget", type=float, default=0.01,
                   help="largest share of the served calls' time that exploring may add (0: no bound; default 0.01)")
    p.add_argument("--candidates", type=int, default=2, help="variants an explored call runs (0: all; default 2)")
    p.add_argument("--quantile", type=float, default=0.25, help="share of candidate calls judged uncertain")
    p.add_argument("--audit", type=float, default=0.1, help=AUDIT_HELP)
    p.add_argument("--refit-every", type=int, default=4,
                   help="new target rows between refits (default 4: a short stream explores few calls)")
    p.add_argument("--repeats", type=int, default=1,
                   help="rounds of the candidates per explored call, fastest kept (default 1)")
    p.add_argument("--oracle-every", type=int, default=20,
                   help="time every variant on every N-th stream image to estimate the optimum (default 20)")
    p.add_argument("--overhead-calls", type=int, default=20000, help="calls per side of the overhead measurement")
    p.add_argument("--pause-seconds", type=float, default=10.0,
                   help="seconds of calls timed with no refit, a refit in a thread and one in a process (0: skip)")
    p.add_argument("--fresh-stream", type=int, default=1000,
                   help="images of a second, fresh stream on which the three models' choices are timed (0: skip)")
    p.add_argument("--datasets", default=None, help="folder of recorded <device>/histogram data (default: datasets/)")
    p.set_defaults(func=cmd_bench_refine)
    p = bench.add_parser("scale", parents=[common],
                         help="time and peak memory of training steps on synthetic tables of growing size")
    p.add_argument("--sizes", type=_whole_numbers(1), default="1000,3000,10000,20000,30000,50000,100000",
                   help="comma-separated inputs per device")
    p.add_argument("--devices", type=_at_least(1), default=4,
                   help="devices of each synthetic table (default 4; tune_from_source and evaluate need 4 or more)")
    p.add_argument("--steps", help="comma-separated: tune_fit,tune_from_source,evaluate (default: all)")
    p.add_argument("--evaluate-max", type=int, default=50000, help="largest size evaluate runs on (default 50000)")
    p.add_argument("--workdir", help="where the synthetic tables go (default: the system's temporary directory)")
    p.set_defaults(func=cmd_bench_scale)
    p = bench.add_parser("cvdfs", parents=[common], help="CV-DFS time against from-scratch fits")
    p.add_argument("dataset", help="measurement directory (layout of spmv_ginkgo)")
    p.add_argument("--target", help="target device (default: the first one)")
    p.add_argument("--max-subset-size", type=_at_least(1), default=3)
    p.add_argument("--seed", type=_at_least(0), default=0)
    p.add_argument("--reference-fits", type=_at_least(1), default=2, help="from-scratch fits to time")
    p.add_argument("--n-jobs", type=_n_jobs, default=None)
    p.set_defaults(func=cmd_bench_cvdfs)
    p = bench.add_parser("store", parents=[common], help="rows/s written and read by the embedded store, "
                         "a redis-server and a Redis Cluster, started here")
    p.add_argument("--rows", type=_at_least(1), default=1_000_000, help="rows written by the writers together and read back")
    p.add_argument("--writers", type=_at_least(1), default=8, help="writer processes (default 8)")
    p.add_argument("--batch", type=_at_least(1), default=1000, help="rows per put_rows call (default 1000)")
    p.add_argument("--targets", default="embedded,server,cluster", help="comma-separated: embedded, server, cluster")
    p.set_defaults(func=cmd_bench_store)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, as a Ctrl-C would be: joblib's workers, the
    measurement worker and the embedded store are then cleaned up as after a Ctrl-C (the signal's
    default left joblib's workers running, orphaned)."""


def _terminated(signum, frame):
    raise Terminated()


def _dash_lists_joined(argv: list[str]) -> list[str]:
    """``argv`` with ``--option -1,2`` given as ``--option=-1,2``: argparse takes a value that
    starts with "-" and is not one number for an option and refuses ``--seeds -1,2`` with
    "expected one argument"; joined, the option's own check names the bad value."""
    out: list[str] = []
    for arg in argv:
        option = out[-1] if out and "--" not in out[:-1] else ""     # none after "--": positionals only
        if re.fullmatch(r"--[^=]+", option) and re.fullmatch(r"-[0-9.][^\s=]*,\S*", arg):
            out[-1] = f"{option}={arg}"
        else:
            out.append(arg)
    return out


def main(argv=None) -> int:
    args = build_parser().parse_args(_dash_lists_joined(sys.argv[1:] if argv is None else argv))
    import signal
    own = signal.getsignal(signal.SIGTERM) is signal.SIG_DFL and threading.current_thread() is threading.main_thread()
    if own:
        signal.signal(signal.SIGTERM, _terminated)
    try:
        return _run(args)
    finally:
        if own:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _early_stopping(epsilon=None, alpha=None, race=None):
    """:class:`nitro.search.EarlyStopping` with the options given (None: its default)."""
    from .search import EarlyStopping
    return EarlyStopping(**{k: v for k, v in (("epsilon", epsilon), ("alpha", alpha), ("race", race)) if v is not None})


def _run(args) -> int:
    try:
        backend, address = getattr(args, "backend", None), getattr(args, "backend_address", None)
        if backend is None and address is None:
            args.func(args)             # joblib's own choice (and no joblib import for the light commands)
        else:
            from .parallel import parallel_backend
            with parallel_backend(backend, address=address):
                args.func(args)
    except ModuleNotFoundError as exc:   # a run-time-only install (pip install --no-deps): a tuning command
        from .bench.startup import HEAVY       # the tuning side's packages a run-time-only install lacks
        if (exc.name or "").split(".")[0] not in {*HEAVY, "msgspec", "tqdm", "hiredis"}:
            raise
        print(f"nitro: error: this command needs the package {exc.name!r}, which is not installed here "
              "(a run-time-only install has none of the tuning side's packages)", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"nitro: {'terminated' if isinstance(exc, Terminated) else 'interrupted'}", file=sys.stderr)
        for note in getattr(exc, "__notes__", ()):      # what the command had done (store import)
            print(f"nitro: {note}", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    except BrokenPipeError:         # the reader left (``| head``): not an error of ours; stdout goes
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # nowhere, so exit's flush is quiet
        return 0
    except (StoreError, ValueError, TypeError, LookupError, OSError) as exc:
        print(f"nitro: error: {exc}", file=sys.stderr)
        return 2
    return 0


def entry() -> int:
    """The ``nitro`` command: :func:`main`, with warnings printed as its other messages are (one
    ``nitro: warning:`` line on stderr, not Python's file and source line)."""

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"nitro: warning: {message}", file=file or sys.stderr)
    warnings.showwarning = show
    return main()


if __name__ == "__main__":
    sys.exit(entry())
