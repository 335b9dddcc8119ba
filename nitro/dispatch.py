"""Run-time choice of a variant: features → model → constraints → variant name."""
from __future__ import annotations

import math
from collections.abc import Callable

from .model import SelectorModel


def feature_vector(names, values, where: str = "") -> list[float]:
    """``values`` as floats, or a clear error naming the feature that is not a finite number
    (``where`` says which computation and input, when known)."""
    out = []
    for name, v in zip(names, values):
        if isinstance(v, (str, bytes)):     # float("5") would pass: text is a feature's bug, not a number
            raise TypeError(f"{where}input feature {name!r} returned the text {v!r}, not a number")
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise TypeError(f"{where}input feature {name!r} returned {v!r}, not a number") from None
        except OverflowError:
            raise ValueError(f"{where}input feature {name!r} is too large for a float") from None
        if not math.isfinite(f):
            raise ValueError(f"{where}input feature {name!r} is {f}: features must be finite")
        out.append(f)
    return out


def name_the_callable(error: BaseException, what: str) -> None:
    """Add to ``error`` (raised inside a user's callable) a note saying which one it was:
    the error keeps its type, so a caller catching it still does."""
    if hasattr(error, "add_note"):          # Python 3.11+; before that, the traceback alone says it
        error.add_note(f"(raised in {what})")


def failed_feature(error: BaseException, features: dict) -> str:
    """Which of ``features`` (name -> callable) raised ``error``, from its traceback: the first
    frame running one of their code objects; ``None`` when none is found (a builtin, say)."""
    codes = {}
    for name, fn in features.items():
        for obj in (fn, getattr(fn, "func", None), getattr(type(fn), "__call__", None)):
            code = getattr(obj, "__code__", None)
            if code is not None:
                codes.setdefault(code, name)
                break
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            return codes[tb.tb_frame.f_code]
        tb = tb.tb_next
    return None


def _pair(model: SelectorModel | None) -> tuple:
    """A model and its compiled evaluator, installed together (one assignment)."""
    return model, (model.compiled().predict_one if model is not None else None)


class Dispatcher:
    """Chooses a variant for a feature vector with a :class:`SelectorModel`.

    Nitro's rule: the model's choice runs unless a constraint excludes it, in which case the
    default runs; if the default is excluded too, that is an error.

    The model and its compiled evaluator are held as one pair, replaced by one assignment:
    :meth:`set_model` may be called from another thread (refining mode swaps in refitted
    models) while calls dispatch, and a call sees either the old pair or the new one, never
    one model's index read against the other's variant list.
    """

    def __init__(self, variants: list[str], features: list[str], default: str):
        self.variants, self.features, self.default = variants, features, default
        self.constraints: list[tuple[str, Callable]] = []
        self._active: tuple[SelectorModel | None, Callable | None] = (None, None)

    def __getstate__(self):
        """Pickled without the compiled evaluator (a C++ object): the model alone, from which
        :meth:`__setstate__` rebuilds the pair."""
        return {**self.__dict__, "_active": self._active[0]}

    def __setstate__(self, state):
        model = state.pop("_active")
        self.__dict__.update(state)
        self._active = _pair(model)

    @property
    def model(self) -> SelectorModel | None:
        return self._active[0]

    def set_model(self, model: SelectorModel | None):
        """Validate ``model``, build its compiled evaluator, then install both at once."""
        if model is not None:
            unknown = set(model.variants) - set(self.variants)
            if unknown:
                raise ValueError(f"the model chooses among variants {sorted(unknown)} this code variant does not have")
            if model.input_features != self.features:
                raise ValueError(f"the model was trained on features {model.input_features}, "
                                 f"not {self.features}")
        self._active = _pair(model)

    def _check(self, values: list[float]):
        if len(values) != len(self.features):
            raise ValueError(f"expected {len(self.features)} feature values, got {len(values)}")
        try:
            finite = all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)
        except OverflowError:           # an int beyond a double's range: feature_vector names it
            finite = False
        if not finite:
            feature_vector(self.features, values)

    def allowed(self, values: list[float]) -> dict[str, bool]:
        return {variant: self._valid(variant, values) for variant in self.variants}

    def choose(self, values: list[float], model: SelectorModel | None = None) -> str:
        """The variant to run on ``values``: the installed model's choice, or ``model``'s where
        given (refining mode asks what another model would run), under the constraints."""
        # one read of the installed pair: a concurrent set_model cannot tear it
        model, predict_one = self._active if model is None else (model, model.compiled().predict_one)
        index = predict_one(values) if predict_one is not None else -1
        if index >= 0:
            choice = model.variants[index]
        else:  # no model, or values the compiled path refused: validate (clear errors) and decide
            self._check(values)
            choice = self.default if model is None else model.predict([values])[0]
        if self.constraints and not self._valid(choice, values):
            first, choice = choice, self.default
            if not self._valid(choice, values):
                raise ValueError(self._both_excluded(model, first, values))
        return choice

    def _both_excluded(self, model: SelectorModel | None, first: str, values: list[float]) -> str:
        """Why no variant may run: which variants the constraints excluded, on which feature values."""
        where = ", ".join(f"{n}={v:.6g}" for n, v in zip(self.features, values))
        if model is None:
            what = f"no model is installed, and the default variant {self.default!r} is excluded"
        elif first == self.default:
            what = f"the model's choice, the default variant {self.default!r}, is excluded"
        else:
            what = f"the model's choice {first!r} and the default variant {self.default!r} are both excluded"
        return f"{what} by constraints for this input ({where})"

    def _valid(self, variant: str, values: list[float]) -> bool:
        """Whether every constraint on ``variant`` holds (only its own are evaluated: this is
        on the dispatch path)."""
        named = None
        for constrained, valid_if in self.constraints:
            if constrained == variant:
                named = named or dict(zip(self.features, values))
                try:
                    if not valid_if(named):
                        return False
                except Exception as error:
                    code = getattr(valid_if, "__code__", None)
                    where = f" at {code.co_filename}:{code.co_firstlineno}" if code else ""
                    name_the_callable(error, f"the constraint on variant {variant!r}{where}, "
                                             f"given the features {named}")
                    raise
        return True
