"""The leaderboard over every run under an output folder (``socbench report``).

Accuracy, its CI and the parse-failure rate are recomputed from the per-item details
(``report.runs``); baselines, per-question macro-F1, distribution scores and ranking
alignment are read from what the score stage wrote beside them. A run's overall numbers
are unweighted means over its domains (as in ``summary.json``); its CI resamples
respondents within each domain. A CI needs at least ``MIN_RESPONDENTS`` respondents: below
that it is NaN (shown as "n/a (n < 10)"), never an interval from two people.

Ranks are tie-aware: a run's rank is 1 + the number of runs *clearly* ahead of it, i.e.
whose 95% CI lies wholly above its own (or, where a CI is undefined, whose accuracy is
higher). Runs with overlapping CIs, and runs with equal accuracy, share a rank. A run
with engine errors is not ranked: it is listed apart (``report.incomplete``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

import socbench.report.incomplete as unfinished
from socbench.errors import ConfigError, DataError
from socbench.metrics.baselines import best_baseline
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS, headline_level
from socbench.metrics.uncertainty import (
    BOOTSTRAP_SEED,
    DEFAULT_RESAMPLES,
    PairedComparison,
    accuracy_ci,
    paired_comparison,
)
from socbench.models import model_slug
from socbench.report.files import ALIGNMENT_LEVEL, DRAW_KEYS
from socbench.report.files import ALIGNMENT_SCORES as ALIGNMENT
from socbench.report.files import DISTRIBUTION_SCORES as SCORES
from socbench.report.labels import variant_label
from socbench.report.output import finite_mean, json_safe
from socbench.report.runs import (  # noqa: F401  (re-exported: the report's readers live in runs)
    DETAILED_SUFFIX,
    DomainRun,
    ModelRun,
    load_runs,
    pooled_items,
    read_domain,
    read_run,
)
from socbench.yardsticks import HEADLINE_KEYS, headline, pooled_simbench

MIN_RESPONDENTS = DEFAULT_MIN_RESPONDENTS  # fewer respondents: no CI (NaN, never an interval from two people)
NO_CI = (math.nan, math.nan)
MAX_PAIRWISE_RUNS = 6  # all pairs are compared in the report up to this many runs

DRAW_SCORES = DRAW_KEYS[1:]  # agreement and Fleiss' kappa of --samples K (socbench.draws); NaN without

def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _stored_scores(dom: DomainRun) -> dict[str, Any]:
    """Baseline, per-question F1, headline distribution scores and alignment of a domain."""
    best = best_baseline({k: _nan(v) for k, v in dom.stored.baselines.items()})
    dist = {level: {k: _nan(v) for k, v in scores.items()}
            for level, scores in dom.stored.distribution.items()}
    level = headline_level(dist)
    aligned = dom.stored.alignment.get(ALIGNMENT_LEVEL, {})
    return {
        "best_baseline": best[0] if best else None,
        "best_baseline_accuracy": best[1] if best else math.nan,
        "per_question_macro_f1": _nan(dom.stored.per_question_macro_f1),
        "distribution_level": level,
        **{f"{name}_score": dist[level].get(name, math.nan) if level else math.nan for name in SCORES},
        **{name: _nan(aligned.get(name)) for name in ALIGNMENT}, **headline(dom.stored.yardsticks),
        **{name: _nan(dom.stored.draws.get(name)) for name in DRAW_SCORES},
    }


def domain_row(run: ModelRun, dom: DomainRun, *, n_resamples: int = DEFAULT_RESAMPLES,
               seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """One run x domain line of the leaderboard."""
    items = dom.items
    accuracy = float(items["correct"].mean()) if len(items) else math.nan
    low, high = accuracy_ci(items["correct"], items["person_id"], min_respondents=MIN_RESPONDENTS,
                            n_resamples=n_resamples, seed=seed) or NO_CI
    stored = _stored_scores(dom)
    return {
        "run": run.run, "model": run.model, "variant": variant_label(run.run, run.model),
        "domain_id": dom.domain_id, "domain": dom.domain,
        "respondents": int(items["person_id"].nunique()), "items": len(items),
        "accuracy": accuracy, "accuracy_ci_low": low, "accuracy_ci_high": high,
        **stored, "margin_over_best_baseline": accuracy - stored["best_baseline_accuracy"],
        "parse_failure_rate": float(items["parse_failure"].mean()) if len(items) else math.nan,
    }


def model_row(run: ModelRun, rows: Sequence[dict[str, Any]], *, n_resamples: int = DEFAULT_RESAMPLES,
              seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """One run's overall line: means over its domains; CI stratified by domain."""
    frame = pooled_items(run)
    low, high = accuracy_ci(frame["correct"], frame["respondent"], frame["domain"],
                            min_respondents=MIN_RESPONDENTS, n_resamples=n_resamples, seed=seed) or NO_CI
    means = {key: finite_mean(r[key] for r in rows) for key in (
        "accuracy", "best_baseline_accuracy", "margin_over_best_baseline", "per_question_macro_f1",
        *(f"{name}_score" for name in SCORES), *ALIGNMENT[:3], "parse_failure_rate", *HEADLINE_KEYS[1:],
        *DRAW_SCORES)}
    means["simbench_score"] = pooled_simbench(rows)  # SimBench's pooling: every row of every domain once
    below = [r["domain"] for r in rows if not r["margin_over_best_baseline"] > 0]
    return {"run": run.run, "model": run.model, "variant": variant_label(run.run, run.model),
            "domain_id": None, "domain": "ALL", "domains": len(rows),
            "respondents": sum(r["respondents"] for r in rows), "items": sum(r["items"] for r in rows),
            **means, "accuracy_ci_low": low, "accuracy_ci_high": high, "failed_domains": len(run.failed),
            "domains_not_above_baseline": len(below)}


def _ahead(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Run ``a`` is clearly ahead of ``b``: its CI lies wholly above b's (accuracy when a CI is NaN)."""
    if all(math.isfinite(x) for x in (a["accuracy_ci_low"], b["accuracy_ci_high"])):
        return a["accuracy_ci_low"] > b["accuracy_ci_high"]
    if not math.isfinite(a["accuracy"]):
        return False
    return not math.isfinite(b["accuracy"]) or a["accuracy"] > b["accuracy"]


def tie_aware_ranks(rows: list[dict[str, Any]]) -> None:
    """Sort ``rows`` best first and set ``rank`` (1 + runs clearly ahead) and ``tied`` on each."""
    rows.sort(key=lambda r: -r["accuracy"] if math.isfinite(r["accuracy"]) else math.inf)
    for row in rows:
        row["rank"] = 1 + sum(_ahead(other, row) for other in rows if other is not row)
    for row in rows:
        row["tied"] = sum(other["rank"] == row["rank"] for other in rows) > 1


@dataclass(frozen=True)
class Leaderboard:
    runs: list[ModelRun]  # the complete runs (ranked)
    overall: list[dict[str, Any]]  # one per complete run, best accuracy first, with its rank
    domains: list[dict[str, Any]]  # one per complete run x domain
    comparisons: list[tuple[str, str, PairedComparison]]
    incomplete: list[dict[str, Any]] = field(default_factory=list)  # runs with engine errors: never ranked


def build_leaderboard(runs: Sequence[ModelRun], *, n_resamples: int = DEFAULT_RESAMPLES,
                      seed: int = BOOTSTRAP_SEED) -> Leaderboard:
    """Rows for every complete run and domain, paired comparisons of all their pairs (few runs
    only), and the incomplete runs apart (``report.incomplete``)."""
    incomplete = [row for run in runs if (row := unfinished.incomplete_row(run)) is not None]
    runs = [run for run in runs if run.run not in {row["run"] for row in incomplete}]
    domains, overall = [], []
    for run in runs:
        rows = [domain_row(run, d, n_resamples=n_resamples, seed=seed) for d in run.domains]
        domains += rows
        overall.append(model_row(run, rows, n_resamples=n_resamples, seed=seed))
    tie_aware_ranks(overall)
    comparisons = []
    if 2 <= len(runs) <= MAX_PAIRWISE_RUNS:
        by_name = {run.run: run for run in runs}
        ranked = [by_name[row["run"]] for row in overall]  # A is the higher-ranked run of each pair
        for a, b in itertools.combinations(ranked, 2):
            try:
                comparisons.append((a.run, b.run, compare_runs(a, b, n_resamples=n_resamples, seed=seed)))
            except DataError:
                continue  # no shared items: nothing to compare
    return Leaderboard(list(runs), overall, domains, comparisons, incomplete)


def leaderboard(output_dir: str | Path, **kwargs: Any) -> Leaderboard:
    return build_leaderboard(load_runs(output_dir), **kwargs)


def leaderboard_rows(source: str | Path | Leaderboard, *, per_domain: bool = True) -> list[dict[str, Any]]:
    """Overall rows, incomplete runs, then run x domain rows, NaN as None, for a table artifact."""
    board = source if isinstance(source, Leaderboard) else leaderboard(source)
    return [json_safe(r) for r in board.overall + board.incomplete + (board.domains if per_domain else [])]


# -------------------------------------------------------------------------- comparisons


def find_run(runs: Sequence[ModelRun], name: str) -> ModelRun:
    """A run by folder name, else by model name or its slug; ambiguity is an error."""
    for matches in ([r for r in runs if r.run == name],
                    [r for r in runs if name in (r.model, model_slug(r.model))]):
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise ConfigError(f"--compare {name!r} matches runs {', '.join(r.run for r in matches)}: "
                              f"give a folder name")
    raise ConfigError(f"--compare {name!r}: no such run; runs: {', '.join(r.run for r in runs)}")


def shared_items(a: ModelRun, b: ModelRun, domain: str | None = None) -> pd.DataFrame:
    """Items both runs scored: domain, person_id, question_id, correct_a, correct_b."""
    def frame(run: ModelRun) -> pd.DataFrame:
        parts = [d.items.assign(domain=d.domain) for d in run.domains if domain in (None, d.domain)]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
            columns=["domain", "person_id", "question_id", "correct"])
    keys = ["domain", "person_id", "question_id"]
    joined = frame(a)[keys + ["correct"]].merge(frame(b)[keys + ["correct"]], on=keys, suffixes=("_a", "_b"))
    if joined.empty:
        scope = f" in domain {domain}" if domain else ""
        raise DataError(f"runs {a.run} and {b.run} share no scored items{scope}")
    return joined


def compare_runs(a: ModelRun, b: ModelRun, domain: str | None = None, *,
                 n_resamples: int = DEFAULT_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> PairedComparison:
    """Paired comparison of two complete runs on their shared items (strata: domains)."""
    unfinished.require_complete(a)
    unfinished.require_complete(b)
    joined = shared_items(a, b, domain)
    return paired_comparison(joined["correct_a"], joined["correct_b"], joined["person_id"], joined["domain"],
                             n_resamples=n_resamples, seed=seed)
