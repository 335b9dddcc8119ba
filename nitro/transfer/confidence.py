"""How good a zero-shot model will be on its target, estimated before the target runs anything.

Two estimates from the data, averaged:

* the model's own: each score is a predicted fraction of the optimum, so the mean over the
  inputs of the chosen variant's score is what the model expects to reach (it knows where the
  sources disagree, since their disagreement lowers the best score, but not that the target may
  behave unlike every source);
* the held-out sources': the quality the same procedure reached on each source that it was
  fitted without (CV-DFS's temporary targets, without their family when the target's family is
  new, with the subsets chosen without them too), which knows how far transfer falls short
  between these devices, but not this target.

Neither is enough alone (the first is over-confident on a target unlike its sources, the
second blind to the target; with a single source there is no held-out source, and the estimate
is the model's own, marked "low"). ``outside`` flags a target farther from its nearest source than
any source is from its own nearest: zero-shot is then an extrapolation, whatever the estimate.
The estimate is "low" (``low_because`` says why) there, below ``LOW`` (or within two standard
errors of it: with few training inputs the held-out qualities are themselves noisy) and with one
source. A target of a family no source shares, where a source held out with its own family fell
below ``LOW``, may transfer as badly (the mean of the held-out sources hides it): "uncertain"
where that is the only reason (a check to make), "low" beside another.

Whether the model will beat the simpler choices is estimated the same way: on each held-out
source, the model's quality against the best single other source's true fastest variants
(chosen in hindsight), against their per-input majority and against the paper's full-set SVM
fitted on them (``baselines``: the model's lead in points of the optimum, its spread, and on how
many held-out sources it led). A target is one more device like the held-out sources, so the
lead it will see is drawn from their spread, not fixed at their mean: where the lower end of a
one-sided 90% prediction interval for one more device's lead (Student's t over the held-out
leads) reaches below zero, or where the baseline did better on any held-out source,
``may_trail`` names it: the model may fall below it on the target too. That rule is cautious
(it names the best single source and the full-set SVM on nearly every target); ``chance_below``
grades it: the probability, under the same Student-t prediction, that one more device's lead is
negative.
"""
from __future__ import annotations

import numpy as np
from scipy import stats

from ..learn.kron import source_distances, standardised_devices
from .fewshot_model import TREES_FROM

LOW = 0.90       # below this predicted fraction, the estimate says "low" and advises measuring
FEW_SHOT_SHARE = 0.02   # of the training inputs, the few-shot budget advised (SpMV: 97.1% leaving one GPU out)
BASELINES = ("best_single_source", "majority", "full_set_svm")   # keys of a held-out result
LEAD_LEVEL = 0.90   # one-sided prediction interval of the model's lead over a baseline on the target
FEW_SHOT_LEVEL = 0.90   # one-sided interval of the few-shot model's quality from its timed inputs
NEAR_LOW_FACTOR = 4     # beyond this many times the inputs timed, "uncertain" advises twice as many instead


class TransferEstimateWarning(UserWarning):
    """A zero-shot model's estimate on its target is "low" or "uncertain": the message says why and
    what to do (``tune_from_source`` in Python warns; ``nitro tune-from-source`` prints it instead)."""


def estimate_warning(name: str, target: str, estimate: dict) -> str | None:
    """The :class:`TransferEstimateWarning` text for ``estimate`` (:func:`estimate_quality`), or
    ``None`` where it is "high"."""
    if estimate["level"] == "high":
        return None
    figure = ("no figure to trust (the sources show " if estimate["outside_sources"] else "expected ") + \
        f"{100 * estimate['predicted_quality']:.1f}% of the optimum" + (")" if estimate["outside_sources"] else "")
    return (f"{name}: the zero-shot model's estimate on {target} is {estimate['level']}, {figure}: "
            f"{'; '.join(estimate['low_because'])}. {estimate['advice']}")


def nearest_distances(D: np.ndarray, sources: list[int], target: int) -> tuple[float, float, int]:
    """Standardised device-feature distance of ``target`` to its nearest source, the largest
    nearest-neighbour distance among the sources, and the nearest source's index."""
    Z = standardised_devices(D, sources)
    if Z is None:
        return 0.0, 0.0, sources[0]
    d2, spread2 = source_distances(Z, sources, target)
    return float(np.sqrt(d2.min())), float(np.sqrt(spread2)), sources[int(d2.argmin())]


def estimate_quality(scores: np.ndarray, held_out: dict[str, dict], D: np.ndarray, sources: list[int],
                     target: int, device_names: list[str], new_family: bool = False,
                     wrong_choice_loss: float = 0.0) -> dict:
    """The expected fraction of the optimum on the target (see the module docstring) from the
    model's ``scores`` (inputs × variants) on inputs of the target and CV-DFS's ``held_out``
    results (``{source: {"quality", "expected"}}``). ``new_family``: no source shares the
    target's family, and ``held_out`` held each source out with its family. ``wrong_choice_loss``:
    what a wrong choice costs on the sources (:func:`nitro.transfer.fewshot_model.sources_wrong_choice_loss`),
    which sizes the few-shot count the advice names (:func:`few_shot_count`)."""
    own = float(np.clip(scores.max(axis=1), 0.0, 1.0).mean())
    qualities = [v["quality"] for v in held_out.values()]
    sources_q = float(np.mean(qualities)) if qualities else own
    worst = float(min(qualities)) if qualities else own
    predicted = 0.5 * (own + sources_q)
    # sampling error only (the held-out sources share their inputs, so their errors are not
    # averaged away): small with many training inputs, decisive with a few dozen
    se = 0.5 * float(np.mean([v.get("quality_se", 0.0) for v in held_out.values()])) if qualities else 0.0
    # the standard error falls as 1/sqrt(inputs): how many training inputs timed on every source
    # would put two standard errors above LOW
    n = float(np.mean([v.get("inputs", 0) for v in held_out.values()])) if qualities else 0.0
    few = LOW <= predicted < LOW + 2 * se
    needed = int(np.ceil(n * (2 * se / (predicted - LOW)) ** 2)) if few and n and predicted > LOW else None
    distance, spread, nearest = nearest_distances(D, sources, target)
    outside = distance > spread
    baselines = {}
    for name in BASELINES:
        pairs = [(v["quality"], v[name]) for v in held_out.values() if name in v]
        if pairs:
            baselines[name] = {"held_out_mean": float(np.mean([b for _, b in pairs])),
                               "model_ahead_on": int(sum(q >= b for q, b in pairs)), "held_out_sources": len(pairs),
                               **lead_interval(np.array([q - b for q, b in pairs]))}
    family_risk = new_family and bool(qualities) and worst < LOW
    low_because = [why for why, holds in (
        ("one source: no held-out source to validate the model on", not qualities),
        (f"expected {100 * predicted:.1f}% of the optimum, below {100 * LOW:g}%", predicted < LOW),
        (f"few inputs to judge by: {100 * predicted:.1f} ± {200 * se:.1f} points (two standard errors over the "
         f"held-out sources' inputs) reaches below {100 * LOW:g}%"
         + (f"; about {needed} training inputs timed on every source (now {n:.0f}) would narrow it enough"
            if needed else ""), few),
        (f"outside the sources' device features ({distance:.1f} from {device_names[nearest]}, where the "
         f"sources lie within {spread:.1f} of each other)", outside),
        (f"a family no source shares: held out with its family, a source got {100 * worst:.1f}%",
         family_risk)) if holds]
    # a new family alone, among the sources' device features, is a check to make, not an alarm:
    # on nitro's CPU and the SpMV data it measured below 90% once in 11 (89.7), outside 5 in 11
    level = "high" if not low_because else "uncertain" if len(low_because) == 1 and family_risk else "low"
    return {
        "predicted_quality": predicted, "standard_error": se, "inputs_needed": needed, "self_estimate": own, "held_out_quality": sources_q,
        "held_out_worst": worst,
        "nearest_source": device_names[nearest], "distance": distance, "sources_spread": spread,
        "outside_sources": bool(outside), "level": level, "low_because": low_because, "baselines": baselines,
        "may_trail": [name for name, b in baselines.items()
                      if b["model_ahead_on"] < b["held_out_sources"] or b["lead_lower"] < 0],
        "advice": ("" if level == "high" else advice(n, check=level == "uncertain", wrong_choice_loss=wrong_choice_loss)),
        # the target inputs the advice names (None where the level is high: no advice)
        "few_shot_inputs": None if level == "high" else few_shot_count(n, wrong_choice_loss),
    }


def advice(n_train: float, check: bool = False, wrong_choice_loss: float = 0.0) -> str:
    """What to do where the estimate is low, and what it costs: time a few inputs on the target
    (:func:`few_shot_count` of the ``n_train`` training inputs), each running every variant, or
    refine in production, where a bounded share of calls explores. ``check``: the same, worded
    as a check where the estimate is "uncertain" (a family no source shares, among the sources)."""
    from ..refine.options import BUDGET, TIME_BUDGET
    k = few_shot_count(n_train, wrong_choice_loss)
    vouch = inputs_to_vouch_if_right(wrong_choice_loss)
    share = ", and ".join(
        ([f"{100 * FEW_SHOT_SHARE:g}% of the {n_train:.0f} training inputs"] if n_train else [])
        + ([f"{vouch} for a figure to vouch for {100 * LOW:g}% where a wrong choice costs "
            f"{100 * wrong_choice_loss:.0f}% as on the sources"] if vouch > TREES_FROM else []))
    share += ", " if share else ""
    head = ("a family no source shares may transfer as badly as a source's did: check it by timing "
            if check else "zero-shot may be far off here: time ")
    return (f"{head}{k} inputs on the target (few-shot: "
            f"tuner.tune_from_source([cv], target_budget={k}) in Python, or --target-budget {k} on nitro tune-from-source "
            f"where the target's rows are recorded: {share}at least {TREES_FROM}; it costs {k} inputs × every "
            "variant, each after a checked warm-up, and where the few-shot model's cross-validated figure stays "
            f"below {100 * LOW:g}%, or too few inputs to vouch for it, time more) or run the code variant in refining mode (cv.refine(): at most "
            f"{100 * BUDGET:g}% of calls explore, each running one variant more, adding at most {100 * TIME_BUDGET:g}% "
            "to the served calls' time, or the loss explored calls measure where higher); where the target lies "
            "outside the sources, few-shot first: refining learns only from the calls it explores")


def few_shot_count(n_train: float, wrong_choice_loss: float = 0.0) -> int:
    """Inputs to time on the target that :func:`advice` names: 2% of ``n_train``, at least
    :data:`TREES_FROM`, and at least the count whose cross-validated figure could vouch for
    :data:`LOW` if every choice on them is right (:func:`inputs_to_vouch_if_right` for
    ``wrong_choice_loss``, what a wrong choice costs): fewer would be called "uncertain" by
    :func:`few_shot_verdict` however well they went. Never more than ``n_train`` (where known)."""
    k = max(TREES_FROM, int(round(FEW_SHOT_SHARE * n_train)), inputs_to_vouch_if_right(wrong_choice_loss))
    return min(k, int(n_train)) if n_train else k


def inputs_to_vouch_if_right(wrong_choice_loss: float) -> int:
    """The fewest timed inputs, all chosen right, whose rule-of-three floor
    (:func:`unseen_error_rate` × ``wrong_choice_loss``) leaves :data:`LOW` within reach: 1 where a
    wrong choice costs less than ``1 - LOW``. On the SpMV data (a wrong format costs the sources
    31-32% of the optimum) 6-7, below 2% of its 1,069 training inputs; on nitro's CPU histogram 17
    of 48, where 6 inputs had read 99.5 ± 0.5 and reached 87.1 on the Intel host (17: 92.4)."""
    return inputs_to_vouch(1.0, 0.0, 1, wrong_choice_loss)


def few_shot_verdict(estimate: dict | None, n_timed: int) -> dict:
    """Whether the few-shot model's cross-validated ``estimate`` on the ``n_timed`` inputs timed on
    the target (``quality`` ± ``stderr``, ``wrong_choice_loss``) vouches for :data:`LOW`: "low"
    where the figure is below it, with advice to time twice as many inputs (on the Ginkgo SpMV data
    with one GPU's formats permuted, 2% of its inputs gave 84.5%, cross-validated 83.4 ± 5.9; 5%
    91.3, 10% 95.8); "uncertain" where the figure is above it but the lower end of its interval
    (:func:`few_shot_lower`) is not, with the count of inputs that would put it there
    (:func:`inputs_to_vouch`): six inputs of nitro's histogram on an Intel host no source is like
    read 99.5 ± 0.5 and the model reached 87.1% on the others."""
    if not estimate:
        return {"level": None, "advice": ""}
    q, se, n = estimate["quality"], estimate["stderr"], n_timed
    loss = estimate.get("wrong_choice_loss", 0.0)
    lower = few_shot_lower(q, se, n, loss)
    figure = (f"the few-shot model reached {100 * q:.1f} ± {100 * se:.1f}% of the optimum on the {n} inputs "
              "timed (cross-validated)")
    if q < LOW:
        return {"level": "low", "lower": lower, "inputs_needed": None,
                "advice": (f"{figure}, below {100 * LOW:g}%: the target behaves unlike every source there; time "
                           f"more of its inputs (twice as many: target_budget={2 * n} in Python, --target-budget "
                           f"{2 * n} on the command line), or train on the target (tune())")}
    if lower >= LOW:
        return {"level": "high", "lower": lower, "inputs_needed": None, "advice": ""}
    needed = inputs_to_vouch(q, se, n, loss)
    unseen = unseen_error_rate(n) * loss
    why = (f"a wrong choice costs {100 * loss:.0f}% of the optimum there on average, and so few inputs leave the "
           f"rate of wrong choices on the others up to {100 * unseen_error_rate(n):.0f}%"
           if unseen >= _sampling_margin(se, n) else "its standard error over so few inputs is wide")
    if needed is None or needed > NEAR_LOW_FACTOR * n:      # a figure just above LOW: no count settles it soon
        needed, until = 2 * n, f", twice as many (the figure lies too near {100 * LOW:g}% for a count to settle it)"
    else:
        until = f" for it to vouch for {100 * LOW:g}% if the model stays as right"
    return {"level": "uncertain", "lower": lower, "inputs_needed": needed,
            "advice": (f"{figure}, but {n} inputs cannot vouch for {100 * LOW:g}%: {why} "
                       f"({100 * FEW_SHOT_LEVEL:g}% confidence): the figure vouches for {100 * lower:.1f}%; time "
                       f"about {needed} inputs (target_budget={needed} in Python, --target-budget {needed} on the "
                       f"command line){until}, or train on the target (tune())")}


def unseen_error_rate(n: int) -> float:
    """The largest rate of wrong choices that ``n`` inputs, all chosen right, leave plausible at
    :data:`FEW_SHOT_LEVEL` (the exact form of the rule of three, about 2.3/n at 90%)."""
    return 1.0 - (1.0 - FEW_SHOT_LEVEL) ** (1.0 / n)


def few_shot_lower(quality: float, stderr: float, n: int, wrong_choice_loss: float) -> float:
    """The lower end of a one-sided :data:`FEW_SHOT_LEVEL` interval of the few-shot model's quality
    from its cross-validated figure on ``n`` timed inputs: Student's t over the inputs, and never
    nearer than :func:`unseen_error_rate` × ``wrong_choice_loss`` (where a handful of inputs were all
    chosen right, the standard error is near 0 and says nothing of the inputs not timed)."""
    return float(quality - max(_sampling_margin(stderr, n), unseen_error_rate(n) * wrong_choice_loss))


def _sampling_margin(stderr: float, n: int) -> float:
    """Student's t at :data:`FEW_SHOT_LEVEL` (one-sided) times the standard error of ``n`` inputs."""
    return float(stats.t.ppf(FEW_SHOT_LEVEL, n - 1) * stderr) if n > 1 else 0.0


def inputs_to_vouch(quality: float, stderr: float, n: int, wrong_choice_loss: float) -> int | None:
    """The fewest timed inputs, ``n`` or more, at which :func:`few_shot_lower` reaches :data:`LOW` if
    the figure stays ``quality`` (its standard error falling as 1/√inputs); ``None`` where no count
    up to a million does (``quality`` at LOW or below)."""
    def vouches(m: int) -> bool:
        return few_shot_lower(quality, stderr * np.sqrt(n / m), m, wrong_choice_loss) >= LOW
    if vouches(n):
        return n
    lo, hi = n, 2 * n
    while not vouches(hi):        # quality > LOW: both terms fall to 0 as inputs grow
        if hi > 10 ** 6:          # quality at LOW itself: no count will do
            return None
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if vouches(mid) else (mid, hi)
    return hi


def lead_interval(lead: np.ndarray) -> dict[str, float | None]:
    """The model's lead over a baseline on the held-out sources (fractions of the optimum): mean,
    standard deviation, the lower end of a one-sided ``LEAD_LEVEL`` prediction interval for
    one more device (mean − t·sd·√(1 + 1/n); with one held-out source, its lead) and the
    chance that one more device's lead is below zero under the same prediction
    (``chance_below``; ``None`` with one held-out source: no spread to judge by)."""
    n = len(lead)
    mean = float(lead.mean())
    sd = float(lead.std(ddof=1)) if n > 1 else 0.0
    scale = sd * np.sqrt(1 + 1 / n)
    lower = mean - stats.t.ppf(LEAD_LEVEL, n - 1) * scale if n > 1 else float(lead[0])
    if n < 2:
        chance = None
    elif scale > 0:
        chance = float(stats.t.cdf(-mean / scale, n - 1))
    else:                                   # every held-out source gave the same lead
        chance = float(mean < 0)
    return {"lead": mean, "lead_sd": sd, "lead_lower": float(lower), "chance_below": chance}


def per_input(scores: np.ndarray) -> dict[str, np.ndarray]:
    """Per input: the chosen variant, its predicted fraction of the optimum, the runner-up and
    the margin between them (small margin: the choice is a near-tie or uncertain)."""
    order = np.argsort(-scores, axis=1)
    rows = np.arange(len(scores))
    best, second = order[:, 0], order[:, 1] if scores.shape[1] > 1 else order[:, 0]
    return {"choice": best, "expected_fraction": np.clip(scores[rows, best], 0.0, 1.0),
            "runner_up": second, "margin": scores[rows, best] - scores[rows, second]}
