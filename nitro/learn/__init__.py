"""Learners: scikit-learn-compatible estimators that choose a variant from a feature vector.

Every selector is available by name (:data:`SELECTORS`, :func:`make_selector`) — in
``autotuner(name, learner="regression")``, ``tune_from_source(..., learner=...)`` and
``nitro evaluate --methods`` — and exports to a :class:`nitro.SelectorModel`:

| name | class | paper | model kind |
|---|---|---|---|
| ``svm`` | :class:`SVMSelector` | Nitro | ``svc`` |
| ``regression`` | :class:`RegressionSelector` | Bergstra et al. (boosted trees) | ``gbt`` |
| ``costmin`` | :class:`CostMinSelector` | Vuduc et al. (cost minimisation) | ``linear`` |
| ``lsq`` | :class:`LeastSquaresSelector` | Vuduc et al. (regression) | ``linear`` |
| ``tree`` | :class:`TreeSelector` | Starchart | ``tree`` |
| ``threshold`` | :class:`ThresholdSelector` | Futhark | ``intervals`` |
"""
from .base import TimeSelector, delta_err, delta_miss, fit_selector, predict_index
from .costmin import CostMinSelector, LeastSquaresSelector
from .preprocessing import LogHeavyTails
from .regression import RegressionSelector
from .svm import SVMSelector
from .threshold import ThresholdSelector, tune_thresholds
from .tree import TreeSelector, focused_sampling

SELECTORS = {
    "svm": SVMSelector,
    "regression": RegressionSelector,
    "costmin": CostMinSelector,
    "lsq": LeastSquaresSelector,
    "tree": TreeSelector,
    "threshold": ThresholdSelector,
}


def make_selector(name: str, **params):
    """A new selector by its name in :data:`SELECTORS`."""
    try:
        return SELECTORS[name](**params)
    except KeyError:
        raise ValueError(f"unknown selector {name!r}; known: {sorted(SELECTORS)}") from None


__all__ = ["SELECTORS", "CostMinSelector", "LeastSquaresSelector", "LogHeavyTails", "RegressionSelector",
           "SVMSelector", "ThresholdSelector", "TimeSelector", "TreeSelector", "delta_err", "delta_miss",
           "fit_selector", "focused_sampling", "make_selector", "predict_index", "tune_thresholds"]
