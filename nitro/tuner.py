"""``autotuner``: measures variants on training inputs, records them, and trains models."""
from __future__ import annotations

import hashlib
import math
import numbers
import warnings
from collections import Counter
from typing import Any, Iterable, Sequence

import numpy as np

from . import device_lock
from . import devices as devices_mod
from .dispatch import feature_vector, name_the_callable
from .learn import SVMSelector, fit_selector, make_selector
from .measurement import EXCLUDED, UNCOMPARABLE, TimingPolicy, hash_array, measure_variants
from .row import TrainingRow
from .model import SelectorModel
from .noise import NoisyMachineWarning, format_report, summarize
from .metrics import fraction_of_optimum
from .progress import progress_bar
from .search import (PLATEAU_INPUTS, PLATEAU_QUALITY, SKIPPED, EarlyStopping, budget_count, margins, prior_order,
                     spread_indices)
from .store import Store, StoreError
from .variant import CodeVariant


def input_id(args: tuple) -> str:
    """A stable id for one input: the content hash of its arrays and values."""
    h = hashlib.sha1()
    for a in args:
        if isinstance(a, np.generic):       # a NumPy number: the id of the same Python number
            a = a.item()
        if isinstance(a, np.ndarray) and a.dtype.hasobject:
            raise TypeError("cannot derive an input id from an array of Python objects: pass ids= to set_training_args")
        if isinstance(a, np.ndarray):
            hash_array(h, a)
        elif isinstance(a, (str, int, float, bool, bytes)) or a is None:
            h.update(repr(a).encode())
        elif hasattr(a, "input_id"):
            h.update(str(a.input_id).encode())
        else:
            raise TypeError(f"cannot derive an input id from {type(a).__name__}: pass ids= to set_training_args")
    return h.hexdigest()[:16]


def _warn_if_budget_exceeds_inputs(name: str, budget: int | float, n: int) -> None:
    """Say that a count budget above the training inputs measures them all: the user asked for
    more than exists, and silently measuring fewer hides a wrong set of training args."""
    if isinstance(budget, numbers.Integral) and budget > n:
        warnings.warn(f"{name}: a budget of {budget} inputs, but there are {n} training inputs: all {n} are "
                      "measured", stacklevel=4)


def _warn_if_only_the_reference_is_right(cv: CodeVariant, rows: Sequence[TrainingRow]) -> None:
    """Warn where, without ``reference=``, every other variant's result differed on every input
    from the variant whose output they were checked against: that one is more likely broken
    than all the others, and it would be chosen everywhere."""
    if cv.reference is not None or len(cv.variants) < 2 or not rows:
        return
    best = {r.best for r in rows}
    if len(best) == 1 and None not in best and all(
            all(r.failed.get(v, "").startswith("wrong result") for v in cv.variants if v != r.best) for r in rows):
        reasons = [r.failed[v] for r in rows for v in cv.variants if v != r.best]
        if cv.check is not None and all(why.startswith(UNCOMPARABLE) for why in reasons):
            raised = reasons[0][len(UNCOMPARABLE):]
            raised = raised[:-1] if raised.endswith(")") else raised
            warnings.warn(f"{cv.name}: the check (code_variant(..., check=)) raised on every comparison, so every "
                          f"variant but {next(iter(best))!r}, the one they were checked against, counts as wrong "
                          f"and it is chosen everywhere: is the check right? ({raised})",
                          stacklevel=3)
            return
        warnings.warn(f"{cv.name}: on all {len(rows)} inputs every other variant's result differed from that of "
                      f"{next(iter(best))!r}, the variant they were checked against: is it right? Give "
                      "code_variant(..., reference=) a known-good function to check all of them against, "
                      "or check=(result, expected) -> bool where results need a comparison of their own",
                      stacklevel=3)


NOT_FAILURES = (EXCLUDED, SKIPPED)   # not run: nothing went wrong


def _warn_if_checked_against_a_stand_in(cv: CodeVariant, rows: Sequence[TrainingRow]) -> None:
    """Warn where, without ``reference=``, the default variant failed on an input (or a constraint
    kept it from running) and the others, checked against the first of them that ran instead,
    disagreed with it: which one is right is not known there, and the stand-in was labelled best
    even if it is the wrong one."""
    if cv.reference is not None or not rows:
        return
    unsure = [r.input_id for r in rows if cv.default in r.failed and not r.failed[cv.default].startswith(
        ("wrong result", SKIPPED)) and any(why.startswith("wrong result") for why in r.failed.values())]
    if unsure:
        warnings.warn(f"{cv.name}: on {len(unsure)} inputs (e.g. {', '.join(sorted(unsure)[:3])}) the default "
                      f"variant {cv.default!r} failed, and the others, checked against the first of them that ran, "
                      "disagreed with it: which is right is not known there. Give code_variant(..., reference=) a "
                      "known-good function to check all of them against", stacklevel=3)


def _under_constraints(cv: CodeVariant, row: TrainingRow) -> TrainingRow | None:
    """A recorded row as the code variant's constraints stand now: a variant they exclude is
    excluded (its stored time is not learned), and None where a variant they now allow was
    excluded when the row was measured (the input is measured again)."""
    allowed = cv.allowed([row.features[f] for f in cv.feature_names])
    if any(row.failed.get(v) == EXCLUDED for v, ok in allowed.items() if ok):
        return None
    out = [v for v, ok in allowed.items() if not ok and row.failed.get(v) != EXCLUDED]
    if not out:
        return row
    return TrainingRow(row.input_id, row.features, {**row.times, **dict.fromkeys(out)},
                       {**row.failed, **dict.fromkeys(out, EXCLUDED)})


def _fallback_reasons(cv: CodeVariant) -> tuple[str, ...]:
    """How a recorded failure (``"raised Name: ..."``) begins when it is an exception of the code
    variant's ``fallback_on`` types or their subclasses, which dispatch answers by running the default."""
    names, todo = set(), list(cv.fallback_on)
    while todo:
        t = todo.pop()
        names.add(t.__name__)
        todo += t.__subclasses__()
    return tuple(f"raised {n}:" for n in sorted(names))


def _warn_if_wrong_variants_are_chosen(cv: CodeVariant, rows: Sequence[TrainingRow], model: SelectorModel) -> None:
    """Warn where a variant failed on some training inputs (a wrong result, an exception, a
    crash, a time-out) and the model still chooses it on training inputs: a failed variant is
    never labelled best where it failed, but nothing stops the model from choosing it on inputs
    like those (a constraint does, or ``fallback_on`` for an exception: such failures of a variant
    other than the default are not warned of, as dispatch runs the default after them)."""
    caught = _fallback_reasons(cv)      # str.startswith(()) is False: none without fallback_on
    failed = {v: [r for r in rows if r.failed.get(v) and r.failed[v] not in NOT_FAILURES
                  and not (v != cv.default and r.failed[v].startswith(caught))] for v in cv.variant_names}
    failed = {v: bad for v, bad in failed.items() if bad}
    if not failed:
        return
    X = [[r.features[f] for f in cv.feature_names] for r in rows]
    chosen = model.predict(X)
    for v, bad in failed.items():
        ids = {r.input_id for r in bad}
        picked = [r.input_id for r, c, x in zip(rows, chosen, X) if c == v and cv.allowed(x)[v]]
        if picked:
            also = sum(i in ids for i in picked)
            how = sorted({r.failed[v] if r.failed[v].startswith("wrong result") else r.failed[v].split(":")[0]
                          for r in bad})
            warnings.warn(f"{cv.name}: variant {v!r} failed on {len(bad)} of {len(rows)} training inputs "
                          f"({'; '.join(how[:3])}; e.g. {', '.join(sorted(ids)[:3])}), yet the model chooses it on "
                          f"{len(picked)} training inputs{f', {also} of them among those' if also else ''}: fix it, "
                          f"or exclude it where it fails (cv.add_constraint({v!r}, valid_if))", stacklevel=3)


def _check_early_stopping(name: str, early_stopping) -> None:
    """Refuse an ``early_stopping`` that is not a :class:`nitro.search.EarlyStopping` (or None),
    before anything is measured: a number or True failed in the first input's measurement."""
    if early_stopping is not None and not isinstance(early_stopping, EarlyStopping):
        raise TypeError(f"{name}: early_stopping is a nitro.search.EarlyStopping (e.g. EarlyStopping(epsilon=0.05, "
                        f"alpha=0.1, race=0.2)) or None, got {early_stopping!r}")


class Autotuner:
    """Tunes code variants of one computation (the paper's ``autotuner``)."""

    def __init__(self, name: str, store: Store | str | None = None, policy: TimingPolicy | None = None,
                 learner=None, progress: bool = True):
        if not isinstance(name, str) or not name:
            raise ValueError(f"an autotuner needs a non-empty name, got {name!r}")
        if not (store is None or isinstance(store, (Store, str))):
            raise TypeError(f"{name}: store is a Store, a Redis URL or None (the embedded store), got {store!r}")
        if not (policy is None or isinstance(policy, TimingPolicy)):
            raise TypeError(f"{name}: policy is a nitro.measurement.TimingPolicy, got {policy!r}")
        if not (learner is None or isinstance(learner, str)
                or callable(getattr(learner, "fit", None)) and callable(getattr(learner, "predict", None))):
            raise TypeError(f"{name}: learner is a selector name or an estimator with fit and predict, got {learner!r}")
        self.name = name
        self._store = store
        self.policy = policy or TimingPolicy()
        # a learner instance or a selector name (nitro.learn.SELECTORS); time learners
        # (``fits_times = True``) are fitted on the time matrix, others on best-variant labels
        self.learner_given = learner is not None
        self.learner = make_selector(learner) if isinstance(learner, str) else (
            learner if learner is not None else SVMSelector())
        self.progress = progress
        self.training_args: list[tuple] = []
        self.training_ids: list[str] = []
        self.counts: dict = {"calls": 0, "seconds": 0.0}  # variant calls made by measure()
        self._best_counts: dict[str, Counter] = {}          # per computation: how often each variant won
        self.verdicts: dict[str, dict[str, dict]] = {}      # per computation: input id -> how sure its timing is
        self.timing_report: dict[str, dict] = {}            # per computation: summary of the last tune()
        self.training_rows: dict[str, list[TrainingRow]] = {}   # per computation: rows the last tune() fitted

    @property
    def store(self) -> Store:
        if not isinstance(self._store, Store):
            self._store = Store(self._store)
        return self._store

    def set_training_args(self, inputs: Iterable[Any], ids: Iterable[str] | None = None):
        """Training inputs: each item is the argument tuple of one call (a non-tuple item is
        a single argument). ``ids`` name them in the store (content hashes otherwise)."""
        args = [x if isinstance(x, tuple) else (x,) for x in inputs]
        if not args:
            raise ValueError("set_training_args: no training inputs given")
        ids_given = ids is not None
        ids = [str(i) for i in ids] if ids_given else [input_id(a) for a in args]
        if len(ids) != len(args):
            raise ValueError(f"set_training_args: {len(args)} inputs but {len(ids)} ids")
        if "" in ids:               # the store's rows are keyed by id: refused now, not after measuring
            raise ValueError(f"set_training_args: input {ids.index('')} has an empty id")
        if len(set(ids)) != len(ids):
            seen: dict[str, int] = {}
            pairs = [(seen[i], k, i) for k, i in enumerate(ids) if seen.setdefault(i, k) != k]
            where = "; ".join(f"inputs {a} and {b} have id {i!r}" for a, b, i in pairs[:3])
            raise ValueError(f"set_training_args: input ids are not unique ({len(pairs)} repeated: {where}): "
                             + ("give each input an id of its own" if ids_given else
                                "the same input given twice (drop the copy, or give ids=)"))
        self.training_args, self.training_ids = args, ids

    # -- measurement ---------------------------------------------------------------------------
    def measure(self, cv: CodeVariant, remeasure: bool = False, early_stopping: EarlyStopping | None = None,
                indices: Sequence[int] | None = None) -> list[TrainingRow]:
        """Time the variants on the training inputs (all, or those at ``indices``): every
        variant, or fewer with ``early_stopping``. Resumes: inputs already recorded for this
        device are read back, not re-measured (without ``early_stopping``, an input whose row an
        early-stopping run left with skipped variants is measured again, whole). Variant calls made are added to
        :attr:`counts` (``"calls"``, ``"seconds"``); how sure each input's timing is, to
        :attr:`verdicts` (:class:`nitro.noise.Verdict` as a dict)."""
        if not self.training_args:
            raise ValueError(f"{self.name}: call set_training_args before tuning")
        _check_early_stopping(self.name, early_stopping)
        picked = range(len(self.training_args)) if indices is None else indices
        device = cv.device_id or devices_mod.current_device_id()
        recorded: dict[str, TrainingRow] = {}
        if cv.record:
            self.store.declare(cv.name, cv.variant_names, cv.feature_names)
            if self.store.device(device, missing_ok=True) is None:
                record = devices_mod.local_record(device)
                self.store.put_device(device, record)
                self.store.put_device_metadata(device, devices_mod.local_metadata(device, record), replace=False)
            if not remeasure:
                recorded = {r.input_id: masked for r in self.store.rows(cv.name, device)
                            if early_stopping is not None or SKIPPED not in r.failed.values()
                            if (masked := _under_constraints(cv, r)) is not None}
        ids = [self.training_ids[k] for k in picked]
        todo = [(i, self.training_args[k]) for i, k in zip(ids, picked) if i not in recorded]
        rows = [recorded[i] for i in ids if i in recorded]
        best_counts = self._best_counts.setdefault(cv.name, Counter())   # kept across calls (batches)
        best_counts.update(r.best for r in rows)
        for iid, args in progress_bar(todo, desc=f"measuring {cv.name}", unit="input", enabled=self.progress):
            feats = feature_vector(cv.feature_names, cv.compute_features(*args), f"{cv.name}, input {iid}: ")
            try:
                reference = cv.reference(*args) if cv.reference is not None else None
            except Exception as error:    # the user's known-good function: which one, on which input
                name_the_callable(error, f"the reference of code variant {cv.name!r}, on input {iid}")
                raise
            order = prior_order(cv.variant_names, best_counts) if early_stopping is not None else None
            stopping = (early_stopping.for_input(best_counts, sum(best_counts.values()), len(cv.variant_names))
                        if early_stopping is not None else None)
            verdict: dict = {}
            with device_lock.timing_for(device, self.policy.exclusive):
                times, failed = measure_variants(cv.variants, args, reference=reference,
                                                 reference_variant=cv.default, check=cv.check,
                                                 allowed=cv.allowed(feats), policy=self.policy,
                                                 early_stopping=stopping, order=order, counts=self.counts,
                                                 verdict=verdict)
            self.verdicts.setdefault(cv.name, {})[iid] = verdict
            row = TrainingRow(iid, dict(zip(cv.feature_names, feats)), times, failed)
            best_counts[row.best] += 1
            if cv.record:
                self.store.put_row(cv.name, device, row)
            rows.append(row)
        return rows

    def measure_actively(self, cv: CodeVariant, budget: int | float, remeasure: bool = False,
                         early_stopping: EarlyStopping | None = None) -> list[TrainingRow]:
        """Measure at most ``budget`` training inputs (a count, or a fraction of them), chosen
        where the current model is least sure: a spread-out first quarter, then batches of the
        inputs with the smallest best-versus-second-best margin, until the budget is spent or the
        model has plateaued on two or more batches in a row holding ``PLATEAU_INPUTS`` inputs in
        all. A batch shows a plateau when the model chose for it, before it was measured, within
        ``PLATEAU_QUALITY`` of its optimum (a skipped or failed choice is a miss) *and* learning
        it changed none of the model's choices on the whole training pool. The first test alone
        is weak (margin-picked inputs are near ties, cheap to get wrong); the second alone is met
        by a model that predicts one variant everywhere; two small batches are met by chance
        (on a pool of 48 images, batches of 5 stopped half-way and lost 1-5 points)."""
        if not self.training_args:
            raise ValueError(f"{self.name}: call set_training_args before tuning")
        n = len(self.training_args)
        limit = budget_count(budget, n)
        _warn_if_budget_exceeds_inputs(cv.name, budget, n)
        X = np.array([feature_vector(cv.feature_names, cv.compute_features(*a), f"{cv.name}, input {i}: ")
                      for i, a in zip(self.training_ids, self.training_args)])
        index = {iid: k for k, iid in enumerate(self.training_ids)}
        chosen = spread_indices(X, max(2, math.ceil(limit / 4)))[:limit]
        rows = self.measure(cv, remeasure, early_stopping, indices=chosen)
        batch, passed, passed_inputs, pending = max(1, math.ceil(limit / 8)), 0, 0, None
        while len(chosen) < limit:
            est = self._fit(cv, rows) if any(r.best is not None for r in rows) else None
            pool = est.predict(X) if est is not None else None
            if pending is not None:   # the last batch was chosen well: did learning it change choices?
                same = np.array_equal(pool, pending[0])
                passed, passed_inputs = (passed + 1, passed_inputs + pending[1]) if same else (0, 0)
                pending = None
            if passed >= 2 and passed_inputs >= PLATEAU_INPUTS:
                break
            if est is None:
                extra = [i for i in spread_indices(X, len(chosen) + batch) if i not in chosen]
            else:
                rest = np.array([i for i in range(n) if i not in set(chosen)])
                extra = rest[np.argsort(margins(est, X[rest]), kind="stable")].tolist()
            extra = extra[:min(batch, limit - len(chosen))]
            new = self.measure(cv, remeasure, early_stopping, indices=extra)
            scored = [(index[r.input_id], r) for r in new if r.best is not None]
            if est is not None and scored:
                times = np.array([r.time_vector(cv.variant_names) for _, r in scored], dtype=np.float64)
                quality = fraction_of_optimum(times, pool[[k for k, _ in scored]])
                if quality >= PLATEAU_QUALITY:
                    pending = (pool, len(extra))
                else:
                    passed, passed_inputs = 0, 0
            rows += new
            chosen += extra
        return rows

    # -- profiling (for P-DFS) ----------------------------------------------------------------------
    def profile(self, variants: Sequence[CodeVariant], proxies: bool = True, reprofile: bool = False) -> dict:
        """Profile every variant on every training input and (``proxies``) the application
        proxies at intensities 0-5 on this device (:mod:`nitro.profiling`), and record them in
        the store (``Store.put_profiles``, ``Store.put_proxy_profiles``) for P-DFS. Pairs already
        recorded are not profiled again unless ``reprofile``. Returns the counts profiled."""
        from .profiling import record
        if not self.training_args:
            raise ValueError(f"{self.name}: call set_training_args before profiling")
        device = devices_mod.current_device_id()
        todo, owner = [], []
        for cv in variants:
            dev = cv.device_id or device
            done = set() if reprofile else set(self.store.profiles(cv.name, dev))
            calls = [c for c in record.variant_calls(cv, self.training_args, self.training_ids) if c[0] not in done]
            todo += calls
            owner += [(cv.name, dev)] * len(calls)
        if proxies and (reprofile or not self.store.proxy_profiles(device)):
            todo += record.proxy_calls()
            owner += [None] * (len(todo) - len(owner))
        by_owner: dict = {}
        for (key, metrics), who in zip(record.run_profiles(todo), owner):
            by_owner.setdefault(who, {})[key] = metrics
        for who, recorded in by_owner.items():
            if who is None:
                self.store.put_proxy_profiles(device, recorded)
            else:
                self.store.put_profiles(who[0], who[1], recorded)
        return {"variant_profiles": sum(len(v) for k, v in by_owner.items() if k is not None),
                "proxy_profiles": len(by_owner.get(None, {})), "device": device}

    # -- on-device tuning -------------------------------------------------------------------------
    def tune(self, variants: Sequence[CodeVariant], remeasure: bool = False, budget: int | float | None = None,
             early_stopping: EarlyStopping | None = None) -> list[SelectorModel]:
        """Measure, label each input with its fastest valid variant, train, and install the
        model on each code variant (and in the store when ``record`` is set). ``budget``
        measures only that many training inputs, chosen actively (:meth:`measure_actively`);
        ``early_stopping`` measures fewer variants and repetitions per input.

        The timing report of the inputs measured in this call (:func:`nitro.noise.summarize`:
        decided, ties, undecided, noise against gaps, advice) goes to :attr:`timing_report`
        and the model's provenance (``"timing"``); a :class:`nitro.noise.NoisyMachineWarning`
        says when the machine was too noisy for the gaps between variants."""
        if isinstance(variants, CodeVariant) or not all(isinstance(cv, CodeVariant) for cv in variants):
            raise TypeError(f"tune takes a list of code variants (tune([cv])), got {variants!r}")
        _check_early_stopping(self.name, early_stopping)
        for cv in variants:                # before any measurement: a choice needs features to learn from
            if not cv.feature_names:
                raise ValueError(f"{cv.name}: no input features: a model learns its choice from them; give "
                                 "code_variant(..., features=[...])")
        models = []
        for cv in variants:
            self.verdicts[cv.name] = {}
            if budget is None:
                rows = self.measure(cv, remeasure=remeasure, early_stopping=early_stopping)
            else:
                rows = self.measure_actively(cv, budget, remeasure=remeasure, early_stopping=early_stopping)
            self.training_rows[cv.name] = rows
            _warn_if_only_the_reference_is_right(cv, rows)
            _warn_if_checked_against_a_stand_in(cv, rows)
            report = summarize(list(self.verdicts[cv.name].values()), early_stopping=early_stopping is not None)
            read_back = not report["n_inputs"]
            if read_back:                       # all read back: the report of the run that measured them
                report = self._earlier_report(cv) or report
            self.timing_report[cv.name] = report
            if report["too_noisy"]:
                when = "timings read back from an earlier run (none measured now): " if read_back else ""
                warnings.warn(f"{cv.name}: {when}{format_report(report)}", NoisyMachineWarning, stacklevel=2)
            model = self.fit_rows(cv, rows)
            _warn_if_wrong_variants_are_chosen(cv, rows, model)
            model.provenance["timing"] = report
            cv.model = model
            if cv.record:
                self._put_model(cv, model)
            models.append(model)
        return models

    def _put_model(self, cv: CodeVariant, model) -> None:
        """Store the model; where the user may record rows but not store models (a recorder's
        ACL), say so and keep it in use here: the rows, the costly part, are stored."""
        from .store import StorePermissionError
        try:
            self.store.put_model(cv.name, cv.device_id or devices_mod.current_device_id(), model.to_dict())
        except StorePermissionError as exc:
            warnings.warn(f"{cv.name}: the model is in use here (cv.model) but not stored: {exc}", RuntimeWarning,
                          stacklevel=3)

    def _earlier_report(self, cv: CodeVariant) -> dict | None:
        """The timing report of the on-device model this device has (stored, or installed), whose
        measurement a resumed ``tune()`` read back without measuring anything (a stored model that
        does not load has none: the fit replaces it)."""
        device = cv.device_id or devices_mod.current_device_id()
        try:
            stored = self.store.model(cv.name, device) if cv.record else None
        except StoreError:
            stored = None
        for provenance in ((stored or {}).get("provenance") or {}, cv.model.provenance if cv.model else {}):
            if provenance.get("method") == "on-device" and provenance.get("device") == device \
                    and isinstance(provenance.get("timing"), dict) and provenance["timing"].get("n_inputs"):
                return provenance["timing"]
        return None

    def _fit(self, cv: CodeVariant, rows: Sequence[TrainingRow]):
        """The learner fitted on the rows' time matrix (:func:`nitro.learn.fit_selector`);
        its classes are variant indices."""
        labelled = [r for r in rows if r.best is not None]
        if not labelled:
            why = f" (on input {rows[0].input_id}: {rows[0].failed})" if rows and rows[0].failed else ""
            raise ValueError(f"{cv.name}: no training input has a valid variant to learn from{why}")
        X = np.array([[r.features[f] for f in cv.feature_names] for r in labelled])
        times = np.array([r.time_vector(cv.variant_names) for r in labelled], dtype=np.float64)
        return fit_selector(self.learner, X, times)

    def fit_rows(self, cv: CodeVariant, rows: Sequence[TrainingRow]) -> SelectorModel:
        est = self._fit(cv, rows)
        device = cv.device_id or devices_mod.current_device_id()
        return SelectorModel.from_estimator(est, cv.feature_names, variants=cv.variant_names, provenance={
            "method": "on-device", "device": device, "n_inputs": sum(r.best is not None for r in rows),
            "learner": type(est).__name__, "params": {k: str(v) for k, v in getattr(est, "best_params_", {}).items()}})

    # -- cross-device tuning ----------------------------------------------------------------------
    def tune_from_source(self, variants: Sequence[CodeVariant], target_budget: int | float | None = None,
                         **kwargs) -> list[SelectorModel]:
        """Build each code variant's model for this (or ``target=``) device from the source
        devices' data in the store (the paper's Listing 2). Keyword arguments: ``sources``,
        ``target``, ``target_features``, ``profiling_based_dfs``, ``search_based_dfs``, ``k``,
        ``max_subset_size``, ``selection``, ``n_jobs``, ``keep_variants`` (see
        :func:`nitro.transfer.tune.tune_from_source`). With ``target_budget`` (few-shot), that
        many representative training inputs (set with :meth:`set_training_args`, same ids as
        on the sources) are measured here and recorded for this device first."""
        from .transfer.tune import tune_from_source
        kwargs.setdefault("progress", self.progress)
        if self.learner_given:
            kwargs.setdefault("learner", self.learner)
        models = []
        for cv in variants:
            options = {"target": cv.device_id, "profiling_based_dfs": cv.profiling_based_dfs,
                       "search_based_dfs": cv.search_based_dfs, **kwargs}
            if target_budget is not None:
                options.update(target_budget=target_budget, measure_target=self._measure_ids(cv),
                               measurable=list(self.training_ids))
            cv.model = tune_from_source(self.store, cv.name, cv.variant_names, cv.feature_names, **options)
            models.append(cv.model)
        return models

    def _measure_ids(self, cv: CodeVariant):
        def measure(ids: list[str]) -> list[TrainingRow]:
            where = {i: k for k, i in enumerate(self.training_ids)}
            unknown = [i for i in ids if i not in where]
            if unknown:
                raise ValueError(f"{cv.name}: the target budget picked inputs {unknown[:3]} that are not among "
                                 "this tuner's training inputs: set_training_args with the sources' inputs and ids")
            return self.measure(cv, indices=[where[i] for i in ids])
        return measure


def autotuner(name: str, **kwargs) -> Autotuner:
    """An :class:`Autotuner` named ``name`` (the README's entry point); ``kwargs`` go to it."""
    return Autotuner(name, **kwargs)
