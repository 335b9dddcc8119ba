"""Kronecker kernel ridge regression over (input, device) pairs: the cross-device learner.

The kernel of two (input, device) pairs is ``k_x(x, x') · k_d(d, d')`` (RBF on standardised
input features times RBF on standardised device features), and the regression target of a
variant is its fraction of the optimum ``t_best / t_v`` — so a wrong choice costs what it
costs, not just a miss. When every source device has the same training inputs (a full grid),
the kernel matrix is ``K_d ⊗ K_x`` and one eigendecomposition of ``K_x`` serves every
device-feature subset and every choice of sources: a fit costs a tiny device eigenproblem and
one ``O(n·r·v)`` product (r: the rank of the input kernel's basis), which is what makes CV-DFS
fast. Large training sets use a Nyström basis of bounded rank (:class:`KronKRRGrid`).
"""
from __future__ import annotations

import numpy as np

from ..memo import content_key, recall
from .budget import reexpression_weights, resolve_max_centres


def rbf(A: np.ndarray, B: np.ndarray, gamma: float) -> np.ndarray:
    """The RBF kernel matrix ``exp(-gamma * |a - b|²)`` between the rows of ``A`` and ``B``
    (squared distances clipped at 0 against rounding)."""
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-gamma * np.maximum(d2, 0.0))


def signed_log(X: np.ndarray) -> np.ndarray:
    """``sign(x)·log1p(|x|)`` per element: sizes, counts and moments spanning orders of
    magnitude become comparable distances; the sign of skewness-like features is kept."""
    return np.sign(X) * np.log1p(np.abs(X))


def fraction_targets(times: np.ndarray) -> np.ndarray:
    """``t_best / t_v`` along the last axis (0 for failed variants)."""
    t = np.where(np.isfinite(times) & (times > 0), times, np.inf)
    return t.min(axis=-1, keepdims=True) / t


TIME_WEIGHT = 0.0   # default power of an input's typical fastest time in its weight (time_weights): all alike


def check_time_weight(power) -> float:
    """``power`` as a float, or a ValueError naming it: :func:`time_weights` takes a finite
    number >= 0."""
    if isinstance(power, bool) or not isinstance(power, (int, float, np.integer, np.floating)) \
            or not (np.isfinite(power) and power >= 0):
        raise ValueError(f"time_weight must be a finite number >= 0 (0: every input alike), not {power!r}")
    return float(power)


def time_weights(times: np.ndarray, power: float = TIME_WEIGHT) -> np.ndarray:
    """A weight per input for the cross-device fit from ``times`` (sources × inputs × variants):
    ``(t / median t)^power`` over the inputs, ``t`` the geometric mean over the sources of the
    input's fastest time, capped at its 99th percentile and normalised to mean 1.

    Why: the large inputs hold the time that a wrong choice costs, the small ones near the
    launch floor differ between devices by noise as much as by what their features describe.
    Weighting (``power`` 0.5) trades the mean % of the optimum per input for the total time of a
    stream of inputs, and depends on the data: on the SpMV data it gained 0.2 points leaving one
    GPU out and cut a stream's excess time by a fifth, on nitro's own histogram data it lost 0.6
    points (benchmarks/README "Weighting the inputs by their time"), so the default is 0, every
    input alike. The cap keeps one outlier from deciding the fit."""
    t = np.where(np.isfinite(times) & (times > 0), times, np.inf).min(axis=-1)     # fastest per source, input
    timed = np.isfinite(t)
    count = timed.sum(axis=0)
    typical = np.where(timed, np.log(np.where(timed, t, 1.0)), 0.0).sum(axis=0) / np.maximum(count, 1)
    if not count.any():
        return np.ones(t.shape[1])
    typical = np.where(count > 0, typical, np.median(typical[count > 0]))          # untimed: a median input
    ratio = np.exp(typical - np.median(typical))
    w = np.minimum(ratio, np.percentile(ratio, 99)) ** power
    return w / w.mean()


EXACT_MAX = 2000        # training inputs up to which the input kernel is exact (an n×n eigenproblem)
N_COMPONENTS = 800      # Nyström landmarks beyond: cost O(n·m²), memory O(n·m), an exported model of m centres
CHUNK = 8192            # rows of an input kernel computed at a time
REEXPRESS_ROWS = 20000  # training inputs an expansion is re-expressed on (a random sample beyond)
BASES_KEPT = 2          # input-kernel bases kept within memo.kept (nitro evaluate's targets share one)


def rbf_dot(A: np.ndarray, B: np.ndarray, gamma: float, W: np.ndarray, chunk: int = CHUNK) -> np.ndarray:
    """``rbf(A, B, gamma) @ W`` computed ``chunk`` rows of ``A`` at a time, so that no
    ``len(A) × len(B)`` matrix is held for large ``A``."""
    out = np.empty((len(A),) + W.shape[1:])
    for i in range(0, len(A), chunk):
        out[i:i + chunk] = rbf(A[i:i + chunk], B, gamma) @ W
    return out


def landmarks(X: np.ndarray, m: int, seed: int = 0) -> np.ndarray:
    """``m`` Nyström landmarks among the rows of ``X``: a uniform random sample without
    replacement (sorted), the standard choice whose error bounds hold whatever the data."""
    return np.sort(np.random.default_rng(seed).choice(len(X), size=m, replace=False))


def pivoted_landmarks(X: np.ndarray, m: int, gamma: float) -> np.ndarray:
    """``m`` rows of ``X`` chosen by the pivoted Cholesky decomposition of their RBF kernel:
    each the row least explained by those before it (the largest residual variance), so that
    they cover the data's spread rather than its density. Sorted indices; O(n·m·(m + p))."""
    n = len(X)
    residual = np.ones(n)                          # k(x, x) = 1 less what the pivots explain
    L = np.zeros((m, n))
    picked = []
    for i in range(min(m, n)):
        p = int(np.argmax(residual))
        if residual[p] <= 1e-12:
            break
        picked.append(p)
        L[i] = (rbf(X[p:p + 1], X, gamma)[0] - L[:i, p] @ L[:i]) / np.sqrt(residual[p])
        residual = np.maximum(residual - L[i] ** 2, 0.0)
    return np.sort(np.array(picked, dtype=int))


class KronKRRGrid:
    """Shared state for Kronecker KRR fits on a grid of ``n`` training inputs.

    ``X``: transformed, standardised training inputs (n, p); ``Y``: targets (n, m, v) of those
    inputs on all ``m`` devices that may serve as sources.

    The input kernel is used through its eigenbasis ``K_x = U diag(ev) Uᵀ``. Up to
    ``EXACT_MAX`` inputs (``n_components="auto"``) that is the exact n×n decomposition and
    the model's centres are the training inputs. Beyond, it is the Nyström approximation
    on ``N_COMPONENTS`` landmarks ``C`` (``U`` is n×r, r ≤ m): time and memory grow linearly
    with n, and the exported model is an expansion over the m landmarks, whatever n. (Forced
    on the SpMV data's 1,069 inputs, 800 landmarks moved the CV-DFS ensemble by ≤0.1 point per
    GPU, but flipped the single subset that the paper's frequency rule keeps on two GPUs, −1.6
    points on its mean: the exact path is kept where it is affordable. On synthetic tables of
    10,000 training inputs, 400 landmarks lost 0.3 points against 800, and 1,600 gained 0.1.)
    ``n_components=None`` forces the exact path, an int forces that many landmarks.

    ``weights`` (one per training input, :func:`time_weights`) weigh each input's squared
    errors in the fit, on every device alike: the fit is the kernel ridge solution of
    ``S K_x S`` (``S = diag(√w)``) on ``S·Y``, whose expansion is ``S`` times that model's, so
    the Kronecker algebra, CV-DFS and the exported model are unchanged.

    ``max_centres`` bounds the exported expansion, so that a compiled call stays within the
    dispatch budget (:mod:`nitro.learn.budget`; ``"auto"``: 686 centres with 12 features, 504
    with 21): the Nyström path takes no more landmarks, and a fit with more centres (the exact
    path) keeps its basis, so its training predictions and CV-DFS are unchanged, but exports
    its function re-expressed on that many of them (:meth:`_reexpress`). ``None``: unbounded.
    """

    def __init__(self, X: np.ndarray, Y: np.ndarray, gamma_x: float | None = None,
                 n_components: int | str | None = "auto", max_centres: int | str | None = "auto", seed: int = 0,
                 weights: np.ndarray | None = None):
        self.X = X
        self.sw = np.ones(len(X)) if weights is None else np.sqrt(np.asarray(weights, dtype=float))
        if self.sw.shape != (len(X),) or not (np.isfinite(self.sw).all() and (self.sw > 0).all()):
            raise ValueError(f"weights must be {len(X)} finite positive numbers, one per training input")
        informative = int((np.ptp(X, axis=0) > 0).sum()) if len(X) else X.shape[1]   # constant columns add no distance
        self.gamma_x = gamma_x if gamma_x is not None else 1.0 / max(informative, 1)
        bound = resolve_max_centres(max_centres, X.shape[1])
        if n_components == "auto":
            n_components = min(N_COMPONENTS, bound or N_COMPONENTS) if len(X) > EXACT_MAX else None
        if n_components is not None and not (isinstance(n_components, (int, np.integer)) and n_components >= 1):
            raise ValueError(f"n_components must be 'auto', None or a positive int, not {n_components!r}")
        # the basis depends on the inputs, their weights and these settings only, not on Y
        key = content_key(X, self.sw, self.gamma_x, n_components, bound, seed)
        self.U, self.ev, self.centers, self._to_centers, self.n_components = recall(
            "input_basis", key, lambda: self._basis(n_components, bound, seed), BASES_KEPT)
        self.Y = Y
        self.UtY = np.einsum("ni,nmc->imc", self.U, self.sw[:, None, None] * Y)
        self.Ut1 = self.U.T @ self.sw

    def _basis(self, n_components: int | None, bound: int | None, seed: int) -> tuple:
        """``(U, ev, centers, _to_centers, n_components)`` of the input kernel: exact or Nyström,
        re-expressed on at most ``bound`` centres."""
        X = self.X
        if n_components is None or n_components >= len(X):
            K = rbf(X, X, self.gamma_x)
            if not (self.sw == 1.0).all():
                K *= np.outer(self.sw, self.sw)                    # S K S, in place: n² memory once
            ev, self.U = np.linalg.eigh(K)
            self.ev = np.maximum(ev, 0.0)
            self.centers, self._to_centers = X, None
        else:
            self._nystroem(int(n_components), seed)
        fitted = None if self._to_centers is None else len(self.centers)
        if bound is not None and len(self.centers) > bound:
            self._reexpress(bound, seed)
        return self.U, self.ev, self.centers, self._to_centers, fitted

    def _nystroem(self, m: int, seed: int):
        """``U`` (n×r), ``ev`` and the map from eigenbasis weights to landmark weights, from
        ``Φ = S K_xC K_CC^{-1/2}`` (``ΦΦᵀ`` approximates ``S K_x S``) and the eigenproblem of ``ΦᵀΦ``."""
        self.centers = self.X[landmarks(self.X, m, seed)]
        s, Q = np.linalg.eigh(rbf(self.centers, self.centers, self.gamma_x))
        keep = s > 1e-10 * s.max()
        root = Q[:, keep] / np.sqrt(s[keep])                        # K_CC^{-1/2} on its range (m×r)
        Phi = self.sw[:, None] * rbf_dot(self.X, self.centers, self.gamma_x, root)      # n×r
        sig2, V = np.linalg.eigh(Phi.T @ Phi)
        keep = sig2 > 1e-10 * sig2.max()
        sig2, V = sig2[keep], V[:, keep]
        sig = np.sqrt(sig2)
        self.U = Phi @ (V / sig)                                     # orthonormal columns
        self.ev = sig2
        self._to_centers = root @ (V * sig)                          # β_C = (K_CC^{-1/2} V S) h

    def _reexpress(self, m: int, seed: int):
        """Export every model as an expansion over ``m`` of the centres (:func:`pivoted_landmarks`)
        whose weights reproduce its training predictions ``U diag(ev) h`` best
        (:func:`nitro.learn.budget.reexpression_weights`, on at most ``REEXPRESS_ROWS`` training
        inputs, sampled at random beyond): one linear map from ``h`` to those weights. (On the
        SpMV data, 504 pivoted centres moved each target's figures by ≤0.09 points and 0.25% of
        its choices; 504 uniformly sampled ones by up to 0.38 points and 2.5% of choices.)"""
        C = self.centers[pivoted_landmarks(self.centers, m, self.gamma_x)]
        rows = np.arange(len(self.X)) if len(self.X) <= REEXPRESS_ROWS else landmarks(self.X, REEXPRESS_ROWS, seed)
        G = np.zeros((len(C), len(C)))
        B = np.zeros((len(C), self.U.shape[1]))
        for i in range(0, len(rows), CHUNK):
            K = rbf(self.X[rows[i:i + CHUNK]], C, self.gamma_x)
            G += K.T @ K
            B += K.T @ (self.U[rows[i:i + CHUNK]] / self.sw[rows[i:i + CHUNK], None])
        self._to_centers = reexpression_weights(G, B * self.ev, rbf(C, C, self.gamma_x), len(rows))
        self.centers = C

    def dual(self, sources: list[int], Kd: np.ndarray, kd: np.ndarray, lam: float):
        """Weights ``h`` (r, v) in the eigenbasis and the offset ``mu`` (v,) of the model for a
        device whose kernel values against ``sources`` are ``kd``."""
        return self.duals(sources, [(Kd, kd)], lam)[0]

    def duals(self, sources: list[int], kernels: list[tuple], lam: float) -> list[tuple]:
        """:meth:`dual` for each ``(Kd, kd)`` of ``kernels`` over the same ``sources`` (CV-DFS's
        subsets): the sources' centred targets in the eigenbasis are computed once for all."""
        mu = self.Y[:, sources].mean(axis=(0, 1))
        Z = self.UtY[:, sources, :] - self.Ut1[:, None, None] * mu[None, None, :]
        out = []
        for Kd, kd in kernels:
            sig, V = np.linalg.eigh(Kd)
            sig = np.maximum(sig, 0.0)
            W = np.einsum("imc,mj->ijc", Z, V) / (self.ev[:, None, None] * sig[None, :, None] + lam)
            out.append((np.einsum("ijc,j->ic", W, V.T @ kd), mu))
        return out

    def predict_train(self, h, mu):
        return self.U @ (self.ev[:, None] * h) / self.sw[:, None] + mu

    def predict_train_many(self, duals: list[tuple], rows: np.ndarray | None = None) -> np.ndarray:
        """Predictions (n, len(duals), v) of several models ``(h, mu)`` on the training inputs
        (or on those at ``rows``), by one product with the basis: it is read once for all of
        them, not once per model."""
        U, sw = (self.U, self.sw) if rows is None else (self.U[rows], self.sw[rows])
        H = np.stack([self.ev[:, None] * h for h, _ in duals], axis=1)          # (r, c, v)
        P = (U @ H.reshape(len(self.ev), -1)).reshape(len(U), len(duals), -1) / sw[:, None, None]
        return P + np.stack([mu for _, mu in duals])[None]

    def weights(self, h):
        """Expansion weights ``β`` so that ``f(x) = rbf(x, centers) @ β + mu``."""
        return self.sw[:, None] * (self.U @ h) if self._to_centers is None else self._to_centers @ h


def device_kernel(D: np.ndarray, sources: list[int], target: int, gamma: float | None = None):
    """RBF kernel among ``sources`` and of ``target`` against them, on device features
    standardised over the sources.

    Two rules keep a target that lies outside the sources from being extrapolated into
    nonsense: a feature constant over the sources is left out (the sources cannot show its
    effect, and its unit would set the target's distance), and the target's row is divided
    by its largest entry, so that its nearest sources keep their weight however far they are
    (an RBF row that vanishes would predict the sources' mean fraction, one constant choice
    for every input). A target farther from its nearest source than any source is from its own
    nearest is outside what the sources show: its row is flattened by the ratio of those
    squared distances, so that the farther out it lies, the more it gets the sources' pooled
    model rather than one source's."""
    Z = standardised_devices(D, sources)
    if Z is None:              # the sources cannot be told apart: equal weights
        return np.ones((len(sources), len(sources))), np.ones(len(sources))
    g = gamma if gamma is not None else 1.0 / Z.shape[1]
    d2, spread2 = source_distances(Z, sources, target)
    Kd = rbf(Z[sources], Z[sources], g)
    if d2.min() > spread2 > 0:   # outside the sources: flatten towards their pooled model
        g = g * spread2 / d2.min()
    return Kd, np.exp(-g * (d2 - d2.min()))


MIN_SPREAD = 0.01   # signed-log units: devices that differ by about 1% or less in a feature


def varying(A: np.ndarray) -> np.ndarray:
    """Per column of ``A`` (signed-log device features, one row per device), whether it varies
    over those devices by more than ``MIN_SPREAD`` (standard deviation): a constant feature
    cannot show its effect on them, and a nearly constant one, standardised, would put any
    device that differs from them tens of units away (sources at 48, 48, 48, 48 and 49 KB of
    shared memory put a 64 KB target 34 standard deviations out)."""
    return A.std(axis=0) > MIN_SPREAD


def varying_columns(D: np.ndarray, sources, cols) -> list[int]:
    """The columns ``cols`` of ``D`` (one row per device) that vary over the ``sources``."""
    cols = list(cols)
    return [c for c, v in zip(cols, varying(D[np.ix_(list(sources), cols)])) if v] if cols else []


def standardised_devices(D: np.ndarray, sources: list[int]) -> np.ndarray | None:
    """All devices' features standardised over ``sources``, keeping those that vary over them
    (``None`` when none does)."""
    A = D[sources]
    keep = varying(A)
    if not keep.any():
        return None
    return (D[:, keep] - A[:, keep].mean(axis=0)) / A[:, keep].std(axis=0)


def source_distances(Z: np.ndarray, sources: list[int], target: int) -> tuple[np.ndarray, float]:
    """Squared distances of ``target`` to each source, and the largest squared distance of a
    source to its own nearest other (0 for a single source): beyond it, the target is outside.
    Sources with equal features count as one (twins would make that spread 0)."""
    d2 = ((Z[sources] - Z[target]) ** 2).sum(axis=1)
    among = ((Z[sources][:, None] - Z[sources][None]) ** 2).sum(axis=2)
    among[among <= 1e-12] = np.inf                    # itself and its twins
    nearest = among.min(axis=1)
    nearest = nearest[np.isfinite(nearest)]
    return d2, float(nearest.max()) if len(nearest) else 0.0
