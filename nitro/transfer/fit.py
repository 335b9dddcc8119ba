"""Building the target's model from source data: feature concatenation learnt by Kronecker
kernel ridge regression, exported as a plain-data kernel expansion over input features."""
from __future__ import annotations

import numpy as np

from ..learn.kron import device_kernel, rbf_dot
from ..model import SelectorModel
from .prepare import Prepared

LAMBDA = 1.0


def transfer_scores(prep: Prepared, target: int, subsets: list[list[int]], lam: float = LAMBDA,
                    inputs: np.ndarray | None = None):
    """Predicted fraction of optimum (inputs × variants) on ``target``, averaged over the
    models of ``subsets``; also returns the expansion (β, μ) that produces it."""
    betas, mus = [], []
    kernels = [device_kernel(prep.D[:, list(subset)], prep.sources, target) for subset in subsets]
    for h, mu in prep.grid.duals(prep.sources, kernels, lam):
        betas.append(prep.grid.weights(h))
        mus.append(mu)
    beta, mu = np.mean(betas, axis=0), np.mean(mus, axis=0)
    if inputs is None:
        return None, beta, mu
    return rbf_dot(prep.X[inputs], prep.grid.centers, prep.grid.gamma_x, beta) + mu, beta, mu


def export_model(prep: Prepared, beta: np.ndarray, mu: np.ndarray, input_features: list[str],
                 provenance: dict, centers: np.ndarray | None = None) -> SelectorModel:
    """The expansion ``rbf(x, centers) @ beta + mu`` (centres: the grid's, i.e. the training
    inputs or the Nyström landmarks, unless given) as a plain-data kernel model."""
    data = prep.data
    centers = prep.grid.centers if centers is None else centers
    return SelectorModel(
        variants=list(data.variants), input_features=list(input_features), kind="kernel",
        params={**prep.input_params(),
                "gamma": float(prep.grid.gamma_x), "centers": centers.tolist(),
                "weights": beta.tolist(), "offset": mu.tolist()},
        provenance=provenance)
