"""Figures of an evaluation (matplotlib, PNG): per-device bars as the paper's Figs. 6–7 and
the best-variant distribution of its Table 4."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def method_colours(n: int) -> list:
    """``n`` bar colours, no two alike: matplotlib's ten ``tab10`` colours, then the ten lighter
    shades of ``tab20``, then evenly spaced ones of ``turbo`` beyond twenty (an evaluation shows
    up to 13 methods, more than one colour cycle)."""
    from matplotlib import colormaps
    if n > 20:
        return [colormaps["turbo"](x) for x in np.linspace(0.05, 0.95, n)]
    tab20 = colormaps["tab20"].colors
    return list(tab20[0::2] + tab20[1::2])[:n]


def plot_evaluation(result: dict, directory) -> list[str]:
    """Write an evaluation's figures (``nitro evaluate`` result) into ``directory``; their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    devices = list(result["targets"]) + list(result["cross_kind"])
    methods = list(result["methods"])
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(devices)) + 3, 4.5))      # + 3 in: the legend beside
    width = 0.8 / len(methods)
    lowest = 100.0
    for i, (m, colour) in enumerate(zip(methods, method_colours(len(methods)))):
        vals = [result["targets"].get(d, result["cross_kind"].get(d, {})).get(m, np.nan) for d in devices]
        ax.bar(np.arange(len(devices)) + i * width, vals, width, label=result["methods"][m], color=colour)
        lowest = min([lowest, *(v for v in vals if np.isfinite(v))])
    ax.set_xticks(np.arange(len(devices)) + 0.4 - width / 2, devices, rotation=30, ha="right")
    ax.set_ylabel("% of exhaustive optimum")
    ax.set_ylim(min(50, 10 * np.floor(lowest / 10 - 0.5)) if lowest > 5 else 0, 100)   # every bar's top shows
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)   # off the bars
    family = result.get("holdout_by", "device")
    ax.set_title(f"Leave-one-{family}-out variant selection")
    fig.tight_layout()
    paths = [str(out / "percent_of_optimum.png")]
    fig.savefig(paths[0], dpi=120, bbox_inches="tight")
    plt.close(fig)

    counts = result["analysis"]["best_variant_counts"]
    variants = result["variants"]
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(counts)), 4))
    bottom = np.zeros(len(counts))
    for v in variants:
        vals = np.array([counts[d].get(v, 0) for d in counts])
        ax.bar(list(counts), vals, bottom=bottom, label=v)
        bottom += vals
    ax.set_ylabel("inputs where fastest")
    ax.tick_params(axis="x", rotation=30)
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(str(out / "best_variant_counts.png"))
    fig.savefig(paths[1], dpi=120)
    plt.close(fig)
    series = []
    if result.get("calibration"):
        series.append(("CV-DFS zero-shot: its estimate, before the target runs anything", result["calibration"]))
    few = result.get("few_shot_calibration")
    if few:
        series.append(("few-shot at the advised count: cross-validated on its timed inputs", few))
    if series:
        fig, ax = plt.subplots(figsize=(5.5, 5.5))
        points = [(label, [(d, c["predicted"][d], c["measured"][d]) for d in c["predicted"] if d in c["measured"]])
                  for label, c in series]
        values = [v for _, pts in points for _, a, b in pts for v in (a, b)]
        lo, hi = min(values) - 2, max(values) + 2
        ax.fill_between([lo, hi], [lo - 3, hi - 3], [lo + 3, hi + 3], color="0.9", label="±3 points")
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        for k, ((label, pts), marker) in enumerate(zip(points, "os")):
            ax.scatter([a for _, a, _ in pts], [b for _, _, b in pts], marker=marker, label=label)
            for d, a, b in pts:          # the few-shot points crowd near the diagonal: named only off it
                if k == 0 or abs(a - b) > 3:
                    ax.annotate(d, (a, b), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel("predicted % of optimum")
        ax.set_ylabel("measured % of optimum on the test inputs")
        ax.set_title(f"Calibration, leave-one-{family}-out")
        ax.legend(fontsize=7)
        fig.tight_layout()
        paths.append(str(out / "calibration.png"))
        fig.savefig(paths[-1], dpi=120)
        plt.close(fig)
    return paths
