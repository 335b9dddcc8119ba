"""``code_variant``: one computation, several functionally equivalent implementations."""
from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterable, Mapping

from .dispatch import Dispatcher, failed_feature, name_the_callable
from .model import SelectorModel


def _named(items, what: str) -> dict[str, Callable]:
    """``{name: callable}`` of ``items`` (a mapping, or callables named by ``__name__``)."""
    if isinstance(items, Mapping):
        named = dict(items)
        wrong = [k for k in named if not (isinstance(k, str) and k)]
        if wrong:       # names are keys of the store's rows and models: an int would come back a str
            raise TypeError(f"{what} are named by non-empty strings, got {wrong[0]!r}")
    elif items is None or isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise TypeError(f"give {what} as a list of named callables or a dict name -> callable, got {items!r}")
    else:
        named = {}
        for item in items:
            name = getattr(item, "__name__", None)
            if not name or name == "<lambda>":
                raise ValueError(f"give {what} as a dict name -> callable; {item!r} has no usable name")
            if name in named:
                raise ValueError(f"two {what} are named {name!r}")
            named[name] = item
    for name, fn in named.items():
        if not callable(fn):
            raise TypeError(f"{what[:-1]} {name!r} is not callable")
    return named


class CodeVariant:
    """A computation with variants, input features, constraints and a default.

    Calling it computes the input features, asks the model for a variant, and runs it;
    without a model, or when the model's choice is excluded by a constraint, the default
    variant runs (Nitro's rule). Input features are callables taking the same arguments
    as the variants and returning a number. ``fallback_on``: exception types after which a
    call runs the default variant instead of the chosen one (e.g. a solver that did not
    converge), as a constraint would have; other exceptions propagate.
    """

    def __init__(self, name: str, variants, features, default=None, constraints=(),
                 check: Callable | None = None, reference: Callable | None = None,
                 fallback_on: tuple[type[BaseException], ...] = ()):
        if not isinstance(name, str) or not name:
            raise ValueError("a code variant needs a non-empty name")
        self.name = name
        self.variants = _named(variants, "variants")
        if not self.variants:
            raise ValueError(f"{name}: no variants given")
        self.features = _named(features, "features")
        self._feature_fns = tuple(self.features.values())   # the dispatch path's feature calls
        if default is None:
            default = next(iter(self.variants))
        elif callable(default):
            matches = [n for n, fn in self.variants.items() if fn is default]
            if not matches:
                raise ValueError(f"{name}: the default is not one of the variants")
            default = matches[0]
        if not isinstance(default, str) or default not in self.variants:
            raise ValueError(f"{name}: unknown default variant {default!r}")
        self.default = default
        for what, fn in (("check", check), ("reference", reference)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name}: {what} is a callable, got {fn!r}")
        self.check = check
        self.reference = reference
        if isinstance(fallback_on, type):    # one exception type: a tuple of one
            fallback_on = (fallback_on,)
        self.fallback_on = tuple(fallback_on)
        if not all(isinstance(t, type) and issubclass(t, Exception) for t in self.fallback_on):
            raise TypeError(f"{name}: fallback_on must be a tuple of Exception types, got {fallback_on!r}")
        self._dispatcher = Dispatcher(self.variant_names, self.feature_names, self.default)
        self.constraints = self._dispatcher.constraints
        for item in (constraints.items() if isinstance(constraints, Mapping) else constraints):
            if not (isinstance(item, (tuple, list)) and len(item) == 2):
                raise TypeError(f"{name}: constraints are (variant, valid_if) pairs, got {item!r}")
            self.add_constraint(*item)
        # Listing-1/2 knobs
        self.record = False
        self.device_id: str | None = None
        self.profiling_based_dfs = False
        self.search_based_dfs: bool | None = None   # None: CV-DFS wherever 3 or more sources
        self._refiner = None
        self.bundle_choice: dict | None = None   # how use_bundle found the model

    @property
    def variant_names(self) -> list[str]:
        return list(self.variants)

    @property
    def feature_names(self) -> list[str]:
        return list(self.features)

    def add_constraint(self, variant: str, valid_if: Callable[[Mapping[str, float]], bool]):
        """Allow ``variant`` only on inputs whose feature dict satisfies ``valid_if``."""
        if not isinstance(variant, str) or variant not in self.variants:
            raise ValueError(f"{self.name}: constraint on unknown variant {variant!r}")
        if not callable(valid_if):
            raise TypeError(f"{self.name}: the constraint on {variant!r} is a callable valid_if(features) -> bool, "
                            f"got {valid_if!r}")
        self.constraints.append((variant, valid_if))

    # -- model -----------------------------------------------------------------------------
    @property
    def model(self) -> SelectorModel | None:
        return self._dispatcher.model

    @model.setter
    def model(self, model: SelectorModel | None):
        self._dispatcher.set_model(model)
        refiner = self._refiner
        if refiner is not None:     # its refits, of the model it started from, would replace this one
            refiner.stop(wait=False)
            import warnings
            warnings.warn(f"{self.name}: refining mode stopped, since a model was installed by hand; call "
                          "refine() again to refine it", RuntimeWarning, stacklevel=2)

    def use_bundle(self, bundle, device: str | None = None, **options) -> dict:
        """Take this device's model from a bundle (a :class:`nitro.bundle.Bundle` or its file):
        exact device, same datasheet product, transfer from the device's features, else none
        (the default variant runs). Returns how it was found (``path``: exact, product, transfer
        or default), also kept in :attr:`bundle_choice`. Options: see
        :meth:`nitro.bundle.Bundle.model_for` (``device_features``, ``kind``, ``query``, ``measure``)."""
        from .bundle import Bundle
        if not isinstance(bundle, Bundle):
            bundle = Bundle.load(bundle)
        if bundle.computation != self.name or bundle.input_features != self.feature_names:
            raise ValueError(f"{self.name}: the bundle is for {bundle.computation!r} with features "
                             f"{bundle.input_features}, not {self.name!r} with {self.feature_names}")
        lacking = [v for v in bundle.variants if v not in self.variants]
        if lacking:           # checked up front: on a device without a model it would pass unseen
            raise ValueError(f"{self.name}: the bundle's models choose among variants {lacking} that this code "
                             f"variant does not have (its variants: {self.variant_names}); build the bundle again")
        model, info = bundle.model_for(self.device_id if device is None else device, **options)
        if model is None:           # this code variant's default runs, whatever the bundle's says
            info = {**info, "variant": self.default}
        self.model = model
        self.bundle_choice = info
        return info

    # -- run ---------------------------------------------------------------------------------
    def compute_features(self, *args, **kwargs) -> list[float]:
        try:
            return [f(*args, **kwargs) for f in self._feature_fns]
        except Exception as error:
            self._name_feature(error)
            raise

    def _name_feature(self, error: Exception) -> None:
        """Note on ``error``, raised while computing the input features, which feature raised it."""
        name = failed_feature(error, self.features)
        name_the_callable(error, f"input feature {name!r} of code variant {self.name!r}" if name else
                          f"one of the input features {self.feature_names} of code variant {self.name!r}")

    def allowed(self, feature_values: Iterable[float]) -> dict[str, bool]:
        return self._dispatcher.allowed(list(feature_values))

    def select(self, *args, **kwargs) -> str:
        """The variant that a call with these arguments would run."""
        return self._dispatcher.choose(self.compute_features(*args, **kwargs))

    def explain(self, *args, **kwargs) -> dict:
        """How sure the model is of the choice for ``args``: the variant that would run, the
        model's runner-up and the gap between their scores (:meth:`SelectorModel.scores`; for a
        transferred kernel model, scores are predicted fractions of the optimum, so
        ``expected_fraction`` is what the model expects the choice to reach), and the model's
        predicted quality on this device when it has one (``tune_from_source``; for a few-shot
        model, its quality cross-validated on the inputs timed on the target), with ``level`` and,
        where it is "low" or "uncertain", why (``low_because``, ``outside_sources``) and what to do (``advice``)."""
        values = self.compute_features(*args, **kwargs)
        choice = self._dispatcher.choose(values)
        out = {"variant": choice, "model": self.model is not None}
        if self.model is None:
            return out
        import numpy as np
        scores = self.model.scores([values])[0]
        order = np.argsort(-scores, kind="stable")
        out.update(scores=dict(zip(self.model.variants, scores.tolist())),
                   runner_up=self.model.variants[order[1]] if len(order) > 1 else None,
                   margin=float(scores[order[0]] - scores[order[1]]) if len(order) > 1 else float("inf"),
                   overridden=choice != self.model.variants[order[0]])
        if self.model.kind == "kernel":
            out["expected_fraction"] = float(np.clip(scores[order[0]], 0.0, 1.0))
        confidence = self.model.provenance.get("confidence")
        measured = (self.model.provenance.get("few_shot") or {}).get("estimate")
        if confidence:
            out["predicted_quality"] = confidence["predicted_quality"]
            out["level"] = confidence["level"]
            if confidence["level"] != "high":    # why, and what to do: the figure alone reads as sound
                out.update(low_because=list(confidence.get("low_because", [])), advice=confidence.get("advice", ""),
                           outside_sources=bool(confidence.get("outside_sources")))
        elif measured:       # a few-shot model: cross-validated on the inputs timed on the target
            out["predicted_quality"] = measured["quality"]
            if measured.get("level"):
                out["level"] = measured["level"]
                if measured["level"] != "high":      # "low", or "uncertain": too few inputs to vouch for it
                    out["advice"] = measured["advice"]
        return out

    def __call__(self, *args, **kwargs) -> object:
        """Run the variant chosen for these arguments (positional and keyword, passed as they
        are to the input features and the variant)."""
        refiner = self._refiner
        if refiner is not None and refiner.tick():     # refining mode: an integer test first
            return self._refining_call(refiner, args, kwargs)
        if kwargs:                      # apart: passing an empty **kwargs costs 0.1 us a call
            return self._keyword_call(args, kwargs)
        try:
            values = [f(*args) for f in self._feature_fns]
        except Exception as error:      # free when nothing is raised (Python 3.11+)
            self._name_feature(error)
            raise
        choice = self._dispatcher.choose(values)
        if not self.fallback_on or choice == self.default:
            return self.variants[choice](*args)
        return self._run(choice, args, kwargs)

    def _keyword_call(self, args: tuple, kwargs: dict) -> object:
        return self._run(self._dispatcher.choose(self.compute_features(*args, **kwargs)), args, kwargs)

    def _run(self, choice: str, args: tuple, kwargs: dict) -> object:
        if not self.fallback_on or choice == self.default:
            return self.variants[choice](*args, **kwargs)
        try:
            return self.variants[choice](*args, **kwargs)
        except self.fallback_on:
            return self.variants[self.default](*args, **kwargs)

    def _refining_call(self, refiner, args: tuple, kwargs: dict) -> object:
        """A candidate call of refining mode: explore it if the model is unsure, and return
        what the plain call would have returned (see :mod:`nitro.refine`)."""
        values = self.compute_features(*args, **kwargs)
        model = self._dispatcher.model          # one read: the choice and its scores from one model
        choice = self._dispatcher.choose(values, model)
        reference = (lambda: self.reference(*args, **kwargs)) if self.reference is not None else None
        ex = refiner.maybe_explore(values, choice, refiner.timed(self.variants, args, kwargs), model, reference)
        if ex is None:                 # timed: the time budget's account of the served calls
            start = time.perf_counter()
            out = self._run(choice, args, kwargs)
            refiner.observe(values, time.perf_counter() - start)
            return out
        if choice in ex.results:
            return ex.results[choice]
        error = ex.errors[choice]
        if self.fallback_on and isinstance(error, self.fallback_on) and choice != self.default:
            if self.default in ex.results:
                return ex.results[self.default]
            return self.variants[self.default](*args, **kwargs)
        raise error

    # -- refining mode ---------------------------------------------------------------------------
    def refine(self, on: bool | None = True, /, *, store=None, device_id: str | None = None, **options):
        """Turn refining mode on (or off with ``refine(False)`` / ``refine(None)``): a bounded
        share of calls on inputs where the model is unsure time the plausible variants, the rows
        are recorded in ``store`` (a :class:`nitro.Store` or URL; ``None`` keeps them in memory)
        for ``device_id`` (default: ``self.device_id``, else this machine), and the model is
        refitted in the background: a model from ``tune_from_source`` with ``store`` given is
        refitted from its sources' rows in ``store`` and the target's rows together
        (:class:`nitro.transfer.tune.SourcesRefit`), any other by :func:`nitro.refine.default_refit`.
        Options: ``budget`` (0.02 of calls), ``time_budget`` (0.01 of the served time),
        ``candidates`` (2), ``quantile``, ``refit_every``, ``refit``, ``refit_in`` (``"process"``:
        refits in a child process; ``"thread"``), ... (:class:`nitro.refine.Refiner`).
        Returns the :class:`~nitro.refine.Refiner` (``stats()``, ``stop()``), or ``None`` when
        turned off. A previous refiner is stopped first."""
        if on is not None and not isinstance(on, bool):
            raise TypeError(f"{self.name}: refine(on) takes True, False or None; give the store as store=")
        if on:                                # a bad option leaves a running refiner running
            from .refine import CHECKED_OPTIONS, OPTIONS, check_options
            own = sorted({"check", "reference"} & set(options))
            if own:                           # the code variant's, as in tune(): set there, used by both
                raise TypeError(f"{self.name}: {' and '.join(own)} belong to the code variant, not to refine(): "
                                f"give them to code_variant(..., {', '.join(o + '=' for o in own)}) or set "
                                f"{', '.join('cv.' + o for o in own)} before refine()")
            unknown = sorted(set(options) - set(OPTIONS))
            if unknown:
                raise TypeError(f"{self.name}: unknown refining options {unknown}; known: {', '.join(OPTIONS)}")
            check_options(self.name, store=store, device_id=device_id,
                          **{k: v for k, v in options.items() if k in CHECKED_OPTIONS})
        old = self._refiner
        if old is not None:
            old.stop()
        if not on:
            return None
        from .refine import TIME_BUDGET, Refiner, warn_if_far_and_sure
        warn_if_far_and_sure(self.name, self.model, options.get("time_budget", TIME_BUDGET))
        if store is not None and device_id is None:
            from .devices import current_device_id
            device_id = self.device_id or current_device_id()
        if store is not None and "refit" not in options and self.model is not None:
            from .transfer.tune import SourcesRefit   # a transferred model relearns from its sources too
            refit = SourcesRefit.for_model(self.model, store, self.name, self.variant_names, self.feature_names)
            if refit is not None:
                options["refit"] = refit
        this = weakref.ref(self)          # the refiner's threads must not keep the code variant alive
        from .measurement import outputs_match
        refiner = Refiner(self._dispatcher, self.name, store=store, device_id=device_id,
                          on_stop=lambda r: (cv := this()) is not None and cv._detach(r),
                          check=self.check or outputs_match, **options)
        self._refiner_finalizer = weakref.finalize(self, refiner.stop, wait=False)   # dropped while refining
        self._refiner = refiner
        return refiner

    @property
    def refiner(self):
        """The active :class:`nitro.refine.Refiner`, or ``None``."""
        return self._refiner

    def _detach(self, refiner) -> None:
        if self._refiner is refiner:
            self._refiner = None
            self._refiner_finalizer.detach()

    def __repr__(self):
        return (f"code_variant({self.name!r}, variants={self.variant_names}, "
                f"features={self.feature_names}, default={self.default!r})")


def code_variant(name: str, variants, features=(), default=None, constraints=(), **kwargs) -> CodeVariant:
    """Declare a computation's variants (see :class:`CodeVariant`)."""
    return CodeVariant(name, variants, features, default, constraints, **kwargs)
