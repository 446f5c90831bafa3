"""The leaderboard over every model run under an output folder (``socbench report``).

A *run* is one folder ``<output_dir>/<model slug>/`` holding ``<Domain>_detailed.json``
files (and normally ``summary.json``); runs are named by their folder, so two runs of one
model (say with and without persona) can sit side by side under different folder names.

Accuracy, its CI and the parse-failure rate are recomputed from the per-item details;
baselines, per-question macro-F1, distribution scores and persona breakdowns are read from
what the score stage wrote beside them (they need the offered codes, which the details do
not carry). A run's overall numbers are unweighted means over its domains (as in
``summary.json``); its CI resamples respondents within each domain. A run with engine errors
is not ranked: it is listed apart (``report.incomplete``).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

import socbench.report.incomplete as unfinished
from socbench.domains import get_domain
from socbench.errors import ConfigError, DataError, SocbenchError
from socbench.metrics.baselines import best_baseline
from socbench.metrics.distribution import headline_level
from socbench.metrics.uncertainty import (
    BOOTSTRAP_SEED,
    DEFAULT_RESAMPLES,
    PairedComparison,
    cluster_bootstrap_ci,
    paired_comparison,
)
from socbench.models import model_slug
from socbench.report.output import atomic_open, finite_mean, fmt, markdown_table

DETAILED_SUFFIX = "_detailed.json"
SCORES = ("wasserstein", "js", "uniform_wasserstein", "uniform_js")
MAX_PAIRWISE_RUNS = 6  # all pairs are compared in the report up to this many runs


# ------------------------------------------------------------------------------ reading


class DetailRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")
    person_id: int | str
    question_id: str
    country_code: str | None = None
    correct: bool
    parse_error: str | None = None
    engine_error: str | None = None


class DetailedFile(BaseModel):
    """The parts of ``<Domain>_detailed.json`` the report reads."""

    model_config = ConfigDict(extra="ignore")
    domain: str
    model: str
    per_question_macro_f1: float | None = None
    baselines: dict[str, float | None] = {}
    breakdowns: dict[str, dict[str, dict[str, float | None]]] = {}
    distribution: dict[str, dict[str, float | None]] = {}
    complete: bool | None = None  # absent in files written before engine errors were counted apart
    engine_errors: int | None = None
    engine_error_reasons: dict[str, int] = {}
    details: list[DetailRecord]


@dataclass(frozen=True)
class DomainRun:
    """One domain of one run: per-item correctness plus the stored scores."""

    domain: str
    domain_id: int | None
    path: Path
    items: pd.DataFrame  # person_id, question_id, country_code, correct, parse_failure, engine_error (reason)
    stored: DetailedFile


@dataclass(frozen=True)
class ModelRun:
    run: str  # folder name
    model: str
    folder: Path
    domains: tuple[DomainRun, ...]
    failed: dict[str, str] = field(default_factory=dict)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}:{exc.colno}: malformed JSON: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None


def _domain_id(name: str) -> int | None:
    try:
        return get_domain(name).id
    except SocbenchError:
        return None


def read_domain(path: Path) -> DomainRun:
    """One ``<Domain>_detailed.json``; schema problems are one-line DataErrors."""
    try:
        stored = TypeAdapter(DetailedFile).validate_python(_read_json(path))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(map(str, err["loc"]))
        raise DataError(f"{path}: field '{where}': {err['msg']}") from None
    items = pd.DataFrame({
        "person_id": [str(d.person_id) for d in stored.details],
        "question_id": [d.question_id for d in stored.details],
        "country_code": [d.country_code or "unmapped" for d in stored.details],
        "correct": [d.correct for d in stored.details],
        "parse_failure": [d.parse_error is not None and unfinished.engine_error_of(d) is None
                          for d in stored.details],
        "engine_error": [unfinished.engine_error_of(d) for d in stored.details],
    })
    return DomainRun(stored.domain, _domain_id(stored.domain), path, items, stored)


def read_run(folder: Path) -> ModelRun | None:
    """A run folder, or None when it holds no detailed results."""
    paths = sorted(folder.glob(f"*{DETAILED_SUFFIX}"))
    if not paths:
        return None
    domains = sorted((read_domain(p) for p in paths), key=lambda d: (d.domain_id or 99, d.domain))
    summary = _read_json(folder / "summary.json") if (folder / "summary.json").is_file() else {}
    model = str(summary.get("model") or domains[0].stored.model)
    return ModelRun(folder.name, model, folder, tuple(domains), dict(summary.get("failed_domains") or {}))


def load_runs(output_dir: str | Path) -> list[ModelRun]:
    """Every run under ``output_dir`` (or ``output_dir`` itself when it is a run folder)."""
    root = Path(output_dir).expanduser()
    if not root.is_dir():
        raise DataError(f"{root}: results folder not found")
    own = read_run(root)
    if own is not None:
        return [own]
    runs = [run for folder in sorted(root.iterdir())
            if folder.is_dir() and not folder.name.startswith(".") and (run := read_run(folder)) is not None]
    if not runs:
        raise DataError(f"{root}: no model results found (expected <model>/<Domain>{DETAILED_SUFFIX} files)")
    return runs


# --------------------------------------------------------------------------------- rows


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _stored_scores(dom: DomainRun) -> dict[str, Any]:
    """Baseline, margin inputs, per-question F1 and headline distribution scores of a domain."""
    best = best_baseline({k: _nan(v) for k, v in dom.stored.baselines.items()})
    dist = {level: {k: _nan(v) for k, v in scores.items()}
            for level, scores in dom.stored.distribution.items()}
    level = headline_level(dist)
    return {
        "best_baseline": best[0] if best else None,
        "best_baseline_accuracy": best[1] if best else math.nan,
        "per_question_macro_f1": _nan(dom.stored.per_question_macro_f1),
        "distribution_level": level,
        **{f"{name}_score": dist[level].get(name, math.nan) if level else math.nan for name in SCORES},
    }


def domain_row(run: ModelRun, dom: DomainRun, *, n_resamples: int = DEFAULT_RESAMPLES,
               seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """One model x domain line of the leaderboard."""
    items = dom.items
    accuracy = float(items["correct"].mean()) if len(items) else math.nan
    low, high = cluster_bootstrap_ci(items["correct"], items["person_id"], n_resamples=n_resamples, seed=seed)
    stored = _stored_scores(dom)
    return {
        "run": run.run, "model": run.model, "domain_id": dom.domain_id, "domain": dom.domain,
        "respondents": int(items["person_id"].nunique()), "items": len(items),
        "accuracy": accuracy, "accuracy_ci_low": low, "accuracy_ci_high": high,
        **stored, "margin_over_best_baseline": accuracy - stored["best_baseline_accuracy"],
        "parse_failure_rate": float(items["parse_failure"].mean()) if len(items) else math.nan,
    }


def model_row(run: ModelRun, rows: Sequence[dict[str, Any]], *, n_resamples: int = DEFAULT_RESAMPLES,
              seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """One run's overall line: means over its domains; CI stratified by domain."""
    frame = pd.concat([d.items.assign(domain=d.domain) for d in run.domains], ignore_index=True)
    low, high = cluster_bootstrap_ci(frame["correct"], frame["person_id"], frame["domain"],
                                     n_resamples=n_resamples, seed=seed)
    means = {key: finite_mean(r[key] for r in rows) for key in (
        "accuracy", "best_baseline_accuracy", "margin_over_best_baseline", "per_question_macro_f1",
        *(f"{name}_score" for name in SCORES), "parse_failure_rate")}
    return {"run": run.run, "model": run.model, "domain_id": None, "domain": "ALL",
            "domains": len(rows), "respondents": sum(r["respondents"] for r in rows),
            "items": sum(r["items"] for r in rows), **means,
            "accuracy_ci_low": low, "accuracy_ci_high": high, "failed_domains": len(run.failed)}


@dataclass(frozen=True)
class Leaderboard:
    runs: list[ModelRun]  # the complete runs (ranked)
    overall: list[dict[str, Any]]  # one per complete run, best accuracy first
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
    overall.sort(key=lambda r: -r["accuracy"] if math.isfinite(r["accuracy"]) else math.inf)
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


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}


def leaderboard_rows(source: str | Path | Leaderboard, *, per_domain: bool = True) -> list[dict[str, Any]]:
    """Overall rows, incomplete runs, then model x domain rows, NaN as None, for a table artifact."""
    board = source if isinstance(source, Leaderboard) else leaderboard(source)
    return [_jsonable(r) for r in board.overall + board.incomplete + (board.domains if per_domain else [])]


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



# ------------------------------------------------------------------------ markdown, CSV

CSV_COLUMNS = ("run", "model", "domain_id", "domain", "domains", "respondents", "items", "accuracy",
               "accuracy_ci_low", "accuracy_ci_high", "best_baseline", "best_baseline_accuracy",
               "margin_over_best_baseline", "per_question_macro_f1", "distribution_level",
               *(f"{name}_score" for name in SCORES), "parse_failure_rate", "failed_domains", "complete",
               "engine_errors", "incomplete_domains", "first_engine_error")


def accuracy_text(row: dict[str, Any]) -> str:
    return f"{fmt(row['accuracy'])} [{fmt(row['accuracy_ci_low'])}, {fmt(row['accuracy_ci_high'])}]"


def distribution_text(row: dict[str, Any]) -> str:
    return (f"{fmt(row['wasserstein_score'])} / {fmt(row['js_score'])} "
            f"({fmt(row['uniform_wasserstein_score'])} / {fmt(row['uniform_js_score'])})")


OVERALL_HEAD = ("rank", "run", "model", "domains", "accuracy [95% CI]", "strongest baseline (mean)",
                "margin", "per-question macro-F1", "W1 / JS (uniform)", "parse failures", "items")
DOMAIN_HEAD = ("domain", "run", "accuracy [95% CI]", "strongest baseline", "margin", "per-question macro-F1",
               "W1 / JS (uniform)", "distribution level", "parse failures", "items")
COMPARE_HEAD = ("A", "B", "shared items", "accuracy A", "accuracy B", "A - B [95% CI]",
                "A only / B only right", "McNemar p")


def overall_cells(rank: int, row: dict[str, Any]) -> list[str]:
    return [str(rank), row["run"], row["model"], str(row["domains"]), accuracy_text(row),
            fmt(row["best_baseline_accuracy"]), fmt(row["margin_over_best_baseline"]),
            fmt(row["per_question_macro_f1"]), distribution_text(row), fmt(row["parse_failure_rate"]),
            str(row["items"])]


def domain_cells(row: dict[str, Any]) -> list[str]:
    return [f"{row['domain']} ({fmt(row['domain_id'])})", row["run"], accuracy_text(row),
            f"{row['best_baseline']} {fmt(row['best_baseline_accuracy'])}",
            fmt(row["margin_over_best_baseline"]), fmt(row["per_question_macro_f1"]), distribution_text(row),
            str(row["distribution_level"] or "n/a"),
            fmt(row["parse_failure_rate"]), str(row["items"])]


def compare_cells(a: str, b: str, cmp: PairedComparison) -> list[str]:
    low, high = cmp.difference_ci
    return [a, b, str(cmp.n_items), fmt(cmp.accuracy_a), fmt(cmp.accuracy_b),
            f"{cmp.difference:+.3f} [{fmt(low)}, {fmt(high)}]", f"{cmp.a_only} / {cmp.b_only}",
            f"{cmp.mcnemar_p:.3g}"]


NOTES = (
    "Accuracy: share of scoreable items answered with the respondent's own code; a run's overall numbers "
    "are unweighted means over its domains. 95% CI: percentile bootstrap resampling respondents "
    "(within each domain). Strongest baseline: the best of uniform guessing and the leave-one-respondent-out "
    "majority answer per question and per (country, question), on the same items; "
    "margin = accuracy minus it. "
    "W1 / JS: 1 - normalised Wasserstein distance (codes in offered order as ordinal positions) and "
    "1 - Jensen-Shannon distance between the model's and the humans' answer distributions per "
    "(country, question) (or per question when no country group is large enough); uniform answers in "
    "brackets. Paired comparisons: McNemar's exact test on the discordant items and the "
    "respondent-bootstrap CI of the accuracy difference."
)


def leaderboard_markdown(board: Leaderboard) -> str:
    lines = ["# ISSP leaderboard", "", *markdown_table(
        OVERALL_HEAD, [overall_cells(i, r) for i, r in enumerate(board.overall, 1)])]
    if board.incomplete:
        lines += ["", "## Incomplete runs (not ranked)", "", unfinished.INCOMPLETE_NOTE, "", *markdown_table(
            unfinished.INCOMPLETE_HEAD, [unfinished.incomplete_cells(r) for r in board.incomplete])]
    lines += ["", "## By domain", "", *markdown_table(DOMAIN_HEAD, [domain_cells(r) for r in sorted(
        board.domains, key=lambda r: (r["domain_id"] or 99, r["domain"], -_nan(r["accuracy"])))])]
    if board.comparisons:
        lines += ["", "## Paired comparisons", "",
                  *markdown_table(COMPARE_HEAD, [compare_cells(*c) for c in board.comparisons])]
    return "\n".join([*lines, "", NOTES]) + "\n"


def write_leaderboard(board: Leaderboard, out_dir: Path) -> tuple[Path, Path]:
    """``leaderboard.md`` and ``leaderboard.csv`` (overall rows first, domain = ALL)."""
    md, csv = out_dir / "leaderboard.md", out_dir / "leaderboard.csv"
    with atomic_open(md) as handle:
        handle.write(leaderboard_markdown(board))
    frame = pd.DataFrame(board.overall + board.incomplete + board.domains).reindex(columns=list(CSV_COLUMNS))
    with atomic_open(csv) as handle:
        frame.to_csv(handle, index=False, float_format="%.6g")
    return md, csv
