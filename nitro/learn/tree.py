"""Starchart's explainable partition: a regression tree over input (and device) features whose
leaves say which variant wins where.

The tree splits on the sum of squared errors of each variant's *lost fraction of the optimum*
``1 − t_best/t_v`` (1 for a failed variant) and stops splitting a region when the best split
removes less than ``min_gain`` of the total SSE (Starchart's threshold); leaves predict every
variant's loss and the choice is the smallest. :meth:`TreeSelector.explain` lists the splits
(which features decide first) and the regions where each variant wins;
:func:`focused_sampling` grows the training set where it matters (Starchart's iterative
sampling); with a ``power`` matrix (watts per input and variant, e.g. from NVML on GPUs) a
second tree predicts power and :meth:`TreeSelector.choose_under` / :meth:`fastest_region_under`
answer "fastest under P watts".
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
from sklearn.tree import DecisionTreeRegressor

from .base import TimeSelector, slowdown, tree_arrays


def losses(times: np.ndarray) -> np.ndarray:
    """``1 − t_best / t_v`` per input and variant (1 where a variant failed)."""
    return 1.0 - 1.0 / slowdown(times)


def _budget(watts) -> float:
    """A power budget in watts: a positive number (``inf``: no budget). A NaN, from a power
    reading that failed, would fit no variant and answer "none fits" for every input."""
    try:
        budget = float(watts)
    except (TypeError, ValueError):
        budget = float("nan")
    if isinstance(watts, bool) or not budget > 0:
        raise ValueError(f"a power budget is a positive number of watts, got {watts!r}")
    return budget


class TreeSelector(TimeSelector):
    """Regression tree on per-variant losses; choose the variant of the smallest leaf loss."""

    def __init__(self, min_gain: float = 0.01, min_samples_leaf: int = 3, max_depth: int | None = None,
                 power_min_gain: float = 0.005):
        self.min_gain = min_gain
        self.min_samples_leaf = min_samples_leaf
        self.max_depth = max_depth
        self.power_min_gain = power_min_gain

    def _tree(self, Y, gain):
        root = float(np.mean(np.var(Y, axis=0)))
        return DecisionTreeRegressor(criterion="squared_error", min_impurity_decrease=gain * root,
                                     min_samples_leaf=self.min_samples_leaf, max_depth=self.max_depth,
                                     random_state=0)

    def fit(self, X, times, power=None):
        X, times = self._start_fit(X, times)
        Y = losses(times)
        self.tree_ = self._tree(Y, self.min_gain).fit(X, Y)
        leaves = self.tree_.apply(X)
        best = np.log(np.nanmin(times, axis=1))
        self.leaf_best_log_time_ = {int(l): float(best[leaves == l].mean()) for l in np.unique(leaves)}
        self.power_tree_ = None
        if power is not None:
            power = np.asarray(power, dtype=np.float64)
            if power.shape != times.shape:
                raise ValueError(f"power must have the shape of times {times.shape}, got {power.shape}")
            fill = np.nanmean(power, axis=1, keepdims=True)
            power = np.where(np.isfinite(power), power, np.where(np.isfinite(fill), fill, np.nanmean(power)))
            self.power_tree_ = self._tree(power, self.power_min_gain).fit(X, power)
        return self

    def predict_loss(self, X):
        return self.tree_.predict(self._check_X(X)).reshape(-1, self.n_variants_)

    def predict(self, X):
        return self.predict_loss(X).argmin(axis=1)

    def export(self):
        return "tree", tree_arrays(self.tree_.tree_, self.tree_.tree_.value[:, :, 0])

    # -- power ---------------------------------------------------------------------------------
    def predict_power(self, X):
        if self.power_tree_ is None:
            raise ValueError("no power was given to fit: power queries need a power matrix")
        return self.power_tree_.predict(self._check_X(X)).reshape(-1, self.n_variants_)

    def choose_under(self, X, watts: float) -> np.ndarray:
        """Per input, the variant of least predicted loss whose predicted power is ≤ ``watts``
        (-1 where none is)."""
        watts = _budget(watts)
        loss, power = self.predict_loss(X), self.predict_power(X)
        loss = np.where(power <= watts, loss, np.inf)
        return np.where(np.isfinite(loss).any(axis=1), loss.argmin(axis=1), -1)

    def fastest_region_under(self, X, watts: float, feature_names=None, variant_names=None) -> dict | None:
        """Among the regions (leaves) that the inputs ``X`` fall in, the (region, variant) with
        the fastest predicted best time whose predicted power is ≤ ``watts``."""
        X, watts = self._check_X(X), _budget(watts)
        leaves, power, loss = self.tree_.apply(X), self.predict_power(X), self.predict_loss(X)
        best = None
        for leaf in np.unique(leaves):
            rows = leaves == leaf
            p, l = power[rows].mean(axis=0), loss[rows].mean(axis=0)
            ok = np.flatnonzero(p <= watts)
            if not ok.size:
                continue
            v = int(ok[l[ok].argmin()])
            # predicted time of v: the region's best time scaled by v's loss
            log_t = self.leaf_best_log_time_.get(int(leaf), np.mean(list(self.leaf_best_log_time_.values())))
            t = float(np.exp(log_t) / max(1.0 - l[v], 1e-12))
            if best is None or t < best["time"]:
                best = {"leaf": int(leaf), "variant": v, "time": t, "watts": float(p[v]),
                        "conditions": self._conditions(int(leaf), feature_names)}
        if best is not None and variant_names is not None:
            best["variant"] = variant_names[best["variant"]]
        return best

    # -- explanation ---------------------------------------------------------------------------
    def _paths(self):
        t = self.tree_.tree_
        paths, stack = {}, [(0, [])]
        while stack:
            node, conds = stack.pop()
            if t.children_left[node] < 0:
                paths[node] = conds
                continue
            f, thr = int(t.feature[node]), float(t.threshold[node])
            stack.append((t.children_right[node], conds + [(f, ">", thr)]))
            stack.append((t.children_left[node], conds + [(f, "<=", thr)]))
        return paths

    def _conditions(self, leaf: int, feature_names=None) -> dict[str, list[float]]:
        names = feature_names or [f"x{j}" for j in range(self.n_features_in_)]
        box = {}
        for f, op, thr in self._paths()[leaf]:
            lo, hi = box.get(names[f], [-np.inf, np.inf])
            box[names[f]] = [max(lo, thr), hi] if op == ">" else [lo, min(hi, thr)]
        return box

    def explain(self, feature_names=None, variant_names=None) -> dict:
        """Which features split first (breadth-first, with their share of the SSE removed) and,
        for every leaf, its region, sample count, winner and each variant's % of optimum."""
        t = self.tree_.tree_
        names = list(feature_names) if feature_names is not None else [f"x{j}" for j in range(self.n_features_in_)]
        vnames = list(variant_names) if variant_names is not None else [str(v) for v in range(self.n_variants_)]
        order, queue = [], [0]
        while queue:
            node = queue.pop(0)
            if t.children_left[node] >= 0:
                order.append(names[t.feature[node]])
                queue += [t.children_left[node], t.children_right[node]]
        first = list(dict.fromkeys(order))
        imp = self.tree_.feature_importances_
        leaves = []
        for leaf in self._paths():
            value = t.value[leaf][:, 0]
            leaves.append({"leaf": int(leaf), "conditions": self._conditions(leaf, names),
                           "n": int(t.n_node_samples[leaf]), "winner": vnames[int(value.argmin())],
                           "percent_of_optimum": {v: 100.0 * (1.0 - float(x)) for v, x in zip(vnames, value)}})
        wins = {v: [l["leaf"] for l in leaves if l["winner"] == v] for v in vnames}
        return {"features_by_first_split": first,
                "importance": {names[j]: float(imp[j]) for j in np.argsort(-imp) if imp[j] > 0},
                "n_leaves": len(leaves), "depth": int(self.tree_.get_depth()), "leaves": leaves,
                "wins": {v: ls for v, ls in wins.items() if ls}, "tree_text": self._text(names, vnames)}

    def _text(self, names, vnames) -> str:
        t = self.tree_.tree_
        lines = []

        def walk(node, depth):
            pad = "  " * depth
            if t.children_left[node] < 0:
                value = t.value[node][:, 0]
                order = np.argsort(value)
                runner = f", next {vnames[order[1]]} {100 * (1 - value[order[1]]):.0f}%" if len(order) > 1 else ""
                lines.append(f"{pad}→ {vnames[order[0]]} ({100 * (1 - value[order[0]]):.0f}% of optimum{runner}; "
                             f"{t.n_node_samples[node]} inputs)")
                return
            f, thr = names[t.feature[node]], t.threshold[node]
            lines.append(f"{pad}{f} <= {thr:.4g}")
            walk(t.children_left[node], depth + 1)
            lines.append(f"{pad}{f} > {thr:.4g}")
            walk(t.children_right[node], depth + 1)

        walk(0, 0)
        return "\n".join(lines)

    # -- focused sampling --------------------------------------------------------------------
    def focus(self, X_pool, n: int, by: str = "uncertain") -> np.ndarray:
        """Indices of up to ``n`` pool inputs to measure next: those in the leaves with the
        largest remaining SSE (``"uncertain"``: where the choice is least settled) or with the
        fastest best time (``"best"``: Starchart's focus on the best region), spread evenly
        over those leaves."""
        if by not in ("uncertain", "best"):
            raise ValueError(f"by must be 'uncertain' or 'best', not {by!r}")
        X_pool = self._check_X(X_pool)
        t = self.tree_.tree_
        leaves = self.tree_.apply(X_pool)
        if by == "uncertain":
            key = {int(l): -float(t.impurity[l] * t.n_node_samples[l]) for l in np.unique(leaves)}
        else:
            mean = np.mean(list(self.leaf_best_log_time_.values()))
            key = {int(l): self.leaf_best_log_time_.get(int(l), mean) for l in np.unique(leaves)}
        ranked = sorted(key, key=key.get)
        buckets = [list(np.flatnonzero(leaves == l)) for l in ranked]
        out = []
        while len(out) < n and any(buckets):     # round-robin over leaves, best-ranked first
            for b in buckets:
                if b and len(out) < n:
                    out.append(b.pop(0))
        return np.array(out, dtype=np.int64)


def focused_sampling(X_pool, measure: Callable[[np.ndarray], np.ndarray], n_initial: int = 20,
                     batch: int = 10, rounds: int = 3, by: str = "uncertain", seed: int = 0,
                     selector: TreeSelector | None = None):
    """Starchart's iterative sampling: measure ``n_initial`` random pool inputs, fit the tree,
    then ``rounds`` times measure ``batch`` more chosen by :meth:`TreeSelector.focus` and refit.
    ``measure(indices)`` returns their (len, n_variants) times. Returns ``(selector, indices)``."""
    X_pool = np.asarray(X_pool, dtype=np.float64)
    rng = np.random.default_rng(seed)
    chosen = list(rng.choice(len(X_pool), size=min(n_initial, len(X_pool)), replace=False))
    times = list(np.asarray(measure(np.array(chosen)), dtype=np.float64))
    sel = selector if selector is not None else TreeSelector()
    sel.fit(X_pool[chosen], np.array(times))
    for _ in range(rounds):
        rest = np.setdiff1d(np.arange(len(X_pool)), chosen)
        if not rest.size:
            break
        new = rest[sel.focus(X_pool[rest], batch, by=by)]
        chosen += list(new)
        times += list(np.asarray(measure(new), dtype=np.float64))
        sel.fit(X_pool[chosen], np.array(times))
    return sel, np.array(chosen)


def plot_partition(selector: TreeSelector, feature_names, variant_names, path, title: str = "") -> str:
    """Draw the tree into a PNG at ``path``: splits at the nodes, each leaf with its winning
    variant and % of optimum, leaves coloured by winner."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.tree import plot_tree

    t = selector.tree_.tree_
    n_leaves = int((t.children_left < 0).sum())
    fig, ax = plt.subplots(figsize=(max(8, 2.2 * n_leaves), 2 + 1.6 * selector.tree_.get_depth()))
    anns = plot_tree(selector.tree_, feature_names=list(feature_names), ax=ax, impurity=False, fontsize=8)
    colours = plt.get_cmap("tab10")
    # plot_tree draws nodes in pre-order, the order in which scikit-learn numbers them (its
    # "True"/"False" labels on the first split are annotations too)
    anns = [a for a in anns if a.get_text().strip() not in ("True", "False")]
    if len(anns) != t.node_count:
        raise RuntimeError(f"plot_tree drew {len(anns)} nodes, the tree has {t.node_count}")
    for node, ann in enumerate(anns):
        if t.children_left[node] >= 0:
            ann.set_text(f"{feature_names[t.feature[node]]} <= {t.threshold[node]:.4g}\n{t.n_node_samples[node]} inputs")
        else:
            value = t.value[node][:, 0]
            w = int(value.argmin())
            ann.set_text(f"{variant_names[w]}\n{100 * (1 - value[w]):.0f}% of optimum\n{t.n_node_samples[node]} inputs")
            ann.set_bbox({"boxstyle": "round", "facecolor": colours(w % 10), "alpha": 0.45})
    ax.set_title(title or "where each variant wins (left branch: condition true)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def png_path(path) -> Path:
    """``path`` as the PNG file a figure is written to (``.png`` added where it has no suffix,
    as matplotlib adds it); a directory is refused, as the figure would go beside it."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a directory: give the PNG file's name")
    return path if path.suffix else path.with_suffix(".png")
