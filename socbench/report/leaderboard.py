"""The leaderboard over every run under an output folder, read from the runs' results logs (a run x domain
line is the domain's record, a run's line its summary's ``pooled`` line); only the paired comparisons are
computed here. Ranks are tie-aware: 1 + the runs whose 95% CI lies wholly above (accuracy where a CI is
undefined), so overlapping CIs share a rank. A run with engine errors is listed apart, never ranked,
compared or plotted (its accuracy would count unanswered requests as wrong); an unfinished one is named."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from socbench.errors import ConfigError, DataError
from socbench.files import json_safe
from socbench.log.read import McqRun, ModelRun, UnitRun, load_runs
from socbench.log.summary import DRAW_KEYS, leaderboard_line
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS
from socbench.metrics.uncertainty import (
    BOOTSTRAP_SEED,
    DEFAULT_RESAMPLES,
    PairedComparison,
    paired_comparison,
)
from socbench.models import model_slug
from socbench.report.labels import variant_label

MIN_RESPONDENTS = DEFAULT_MIN_RESPONDENTS  # fewer respondents: no CI (NaN, never an interval from two people)
MAX_PAIRWISE_RUNS = 6  # all pairs are compared in the report up to this many runs
DRAW_SCORES = DRAW_KEYS[1:]  # agreement and Fleiss' kappa of --samples K (socbench.draws); NaN without
UNFINISHED = ("{folder}: its summary.json does not cover the domain records beside it (the run stopped "
              "before its end, or files were copied in): run the same command again to finish it (the "
              "answers come from the engine cache)")


def incomplete_row(run: ModelRun) -> dict[str, Any] | None:
    """A run's line in the list of incomplete runs (engine errors as each domain's record counts them, at
    least 1 for a domain marked incomplete), or None when every domain is complete."""
    bad = [(dom, max(dom.stored.engine_errors, 1), next(iter(dom.stored.engine_error_reasons), "unknown"))
           for dom in run.domains if not dom.stored.complete or dom.stored.engine_errors]
    if not bad:
        return None
    return {"run": run.run, "model": run.model, "complete": False, "domains": len(run.domains),
            "incomplete_domains": ", ".join(f"{dom.domain} ({n})" for dom, n, _ in bad),
            "items": sum(dom.stored.total_count for dom in run.domains),
            "engine_errors": sum(n for _, n, _ in bad),
            "parse_failures": sum(dom.stored.parse_failures for dom in run.domains),
            "first_engine_error": bad[0][2]}


def _names(run: ModelRun) -> dict[str, Any]:
    return {"run": run.run, "model": run.model, "variant": variant_label(run.run, run.model)}


def finished(run: ModelRun) -> bool:
    """The run's summary covers exactly the domain records in its folder."""
    stamps = {dom.domain: dom.stored.timestamp for dom in run.domains}
    return run.summary is not None and run.summary.pooled.get("records") == stamps


def _ahead(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Run ``a`` is clearly ahead of ``b``: its CI lies wholly above b's (accuracy when a CI is NaN)."""
    if all(math.isfinite(x) for x in (a["accuracy_ci_low"], b["accuracy_ci_high"])):
        return a["accuracy_ci_low"] > b["accuracy_ci_high"]
    mine, theirs = a["accuracy"], b["accuracy"]
    return math.isfinite(mine) and (not math.isfinite(theirs) or mine > theirs)


def tie_aware_ranks(rows: list[dict[str, Any]]) -> None:
    """Sort ``rows`` best first and set ``rank`` (1 + runs clearly ahead) and ``tied`` on each."""
    rows.sort(key=lambda r: -r["accuracy"] if math.isfinite(r["accuracy"]) else math.inf)
    for row in rows:
        row["rank"] = 1 + sum(_ahead(other, row) for other in rows if other is not row)
    for row in rows:
        row["tied"] = sum(other["rank"] == row["rank"] for other in rows) > 1


@dataclass(frozen=True)
class Leaderboard:
    runs: list[ModelRun]  # the complete runs
    overall: list[dict[str, Any]]  # one per complete run, best accuracy first, with its rank
    domains: list[dict[str, Any]]  # one per complete run x domain
    comparisons: list[tuple[str, str, PairedComparison]]
    incomplete: list[dict[str, Any]] = field(default_factory=list)  # runs with engine errors: never ranked
    mcq: list[McqRun] = field(default_factory=list)  # CP vs MCP runs, beside (``report.mcq``)
    notes: list[str] = field(default_factory=list)  # runs left out, each with what to do
    units: list[UnitRun] = field(default_factory=list)  # every study's unit records (``report.units``)

    def ranked(self) -> list[ModelRun]:
        """The complete runs best first (``runs`` keeps the order they were read in)."""
        by_name = {run.run: run for run in self.runs}
        return [by_name[row["run"]] for row in self.overall]


def leaderboard(output_dir: str | Path, *, n_resamples: int = DEFAULT_RESAMPLES,
                seed: int = BOOTSTRAP_SEED) -> Leaderboard:
    """Rows for every complete run and domain under ``output_dir``, paired comparisons of all their pairs
    (few runs only), the incomplete runs apart and the unfinished ones named."""
    found = load_runs(output_dir)
    left_out = [UNFINISHED.format(folder=run.folder) for run in found.issp if not finished(run)]
    runs = [run for run in found.issp if finished(run)]
    incomplete = [row for run in runs if (row := incomplete_row(run)) is not None]
    runs = [run for run in runs if run.run not in {row["run"] for row in incomplete}]
    domains = [{**_names(run), **leaderboard_line(dom.stored), "grouping": dom.stored.grouping}
               for run in runs for dom in run.domains]
    overall = [{**_names(run), "domain_id": None, "domain": "ALL", **run.summary.pooled["line"],  # as its
                "failed_domains": len(run.summary.failed_domains)} for run in runs]  # summary pooled it
    tie_aware_ranks(overall)
    board = Leaderboard(runs, overall, domains, [], incomplete, found.mcq, [*found.notes, *left_out],
                        found.units)
    if 2 <= len(runs) <= MAX_PAIRWISE_RUNS:  # A is the higher-ranked run of each pair
        for a, b in itertools.combinations(board.ranked(), 2):
            try:
                found = compare_runs(a, b, n_resamples=n_resamples, seed=seed)
            except DataError:
                continue  # no shared items: nothing to compare
            board.comparisons.append((a.run, b.run, found))
    return board


def leaderboard_rows(board: Leaderboard, *, per_domain: bool = True) -> list[dict[str, Any]]:
    """Overall rows, incomplete runs, then run x domain rows, NaN as None, for a table artifact."""
    return [json_safe(r) for r in board.overall + board.incomplete + (board.domains if per_domain else [])]


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


def compare_runs(a: ModelRun, b: ModelRun, domain: str | None = None, *,
                 n_resamples: int = DEFAULT_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> PairedComparison:
    """Paired comparison of two complete runs on their shared items (strata: domains): the items both
    scored, joined on domain, person_id (as text) and question_id."""
    for run in (a, b):  # an incomplete run's accuracy is not a result
        if (row := incomplete_row(run)) is not None:
            raise ConfigError(f"--compare {run.run}: the run is incomplete ({row['engine_errors']} engine "
                              f"error(s) in {row['incomplete_domains']}); rerun it before comparing")
    keys, fields = ["domain", "person_id", "question_id"], ("person_id", "question_id", "correct")

    def frame(run: ModelRun) -> pd.DataFrame:
        parts = [pd.DataFrame(d.columns(fields)).assign(domain=d.domain) for d in run.domains
                 if domain in (None, d.domain)]
        found = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=[*keys, "correct"])
        return found.astype({"person_id": str})
    joined = frame(a).merge(frame(b), on=keys, suffixes=("_a", "_b"))
    if joined.empty:
        scope = f" in domain {domain}" if domain else ""
        raise DataError(f"runs {a.run} and {b.run} share no scored items{scope}")
    return paired_comparison(joined["correct_a"], joined["correct_b"], joined["person_id"], joined["domain"],
                             n_resamples=n_resamples, seed=seed)
