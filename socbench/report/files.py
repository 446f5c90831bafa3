"""The original system's result files, written atomically under ``<output_dir>/<model slug>/``.

Per domain: ``<Domain>_detailed.json`` (every scored item) and ``<Domain>_metrics.json``.
Per run: ``summary.json``, ``summary.md`` and ``domain_accuracy.png``. The original
system's keys are all present with its meaning; extra keys (per-question macro-F1, baselines,
per-country breakdowns) are added beside them. Engine errors (no reply) are counted apart
from parse failures (a reply that could not be read), each by reason; a domain with engine
errors is marked ``complete: false`` and its accuracy and F1s are ``null``, never a score.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from socbench.engines.usage import total_usage, usage_text
from socbench.metrics.baselines import best_baseline
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS as MIN_CI
from socbench.metrics.distribution import headline_level
from socbench.report.circular import write_domain_circular
from socbench.report.labels import baseline_label, domain_label, signed, study_title, weights_off_text
from socbench.report.output import (
    atomic_open,
    finite_mean,
    fmt,
    json_safe,
    markdown_table,
    model_dir,
    now_timestamp,
    write_json,
)
from socbench.report.plots import domain_accuracy_plot
from socbench.types import COUNTRY, CircularSettings, DomainResult, ScoredDomain, ScoredItem
from socbench.yardsticks import DEMOGRAPHIC, HEADLINE_KEYS, headline, pooled_simbench, yardstick

SUMMARY_METRICS = ("accuracy", "macro_f1", "micro_f1", "per_question_macro_f1")
DRAW_KEYS = ("samples", "draw_agreement", "draw_fleiss_kappa")  # socbench.draws' record (--samples K)
DISTRIBUTION_SCORES = ("wasserstein", "uniform_wasserstein", "js", "uniform_js")  # each beside its floor
ALIGNMENT_SCORES = ("modal_agreement", "uniform_modal_agreement", "kendall_tau", "kendall_tau_p")
ALIGNMENT_LEVEL = "question"  # the headline: per question, pooled over countries
_fmt = partial(fmt, digits=4)
YARDSTICK_ROWS = (("SimBench score", ("simbench",), ()),
                  ("structure: correlation of group differences", ("structure",), ("profile_correlation",)),
                  ("structure: heterogeneity ratio", ("structure",), ("heterogeneity_ratio",)))


# ------------------------------------------------------------------------- per domain


def detail_record(item: ScoredItem) -> dict[str, Any]:
    """One item of ``details[]``, with the original system's keys (codes stay strings)."""
    record: dict[str, Any] = {
        "person_id": item.person_id,
        "question_id": item.question_id,
        "country_code": item.country_code,
        "true_answer": item.true_code,
        "llm_answer": item.predicted_code,
        "correct": item.correct,
        "is_country_specific": item.country_specific,
        "parse_error": item.parse_error,
        "engine_error": item.engine_error,
        "raw_reply": item.raw_reply,
        "offered_codes": list(item.offered_codes),
    }
    if item.distribution is not None:
        record["option_distribution"] = item.distribution
    if item.draws is not None:
        record["draws"] = list(item.draws)
    return record


def _headline(result: DomainResult, scored: Sequence[ScoredItem]) -> dict[str, Any]:
    m = result.metrics
    return {
        "correct_count": sum(item.correct for item in scored),
        "total_count": result.scoreable_items,
        "accuracy": m.get("accuracy", math.nan),
        "macro_f1": m.get("macro_f1", math.nan),
        "micro_f1": m.get("micro_f1", math.nan),
        "parse_failures": result.parse_failures,
        "excluded_count": sum(result.excluded_by_reason.values()),
        "engine_errors": result.engine_errors,
        "complete": result.complete,
        "incomplete_reason": result.incomplete_reason,
        "parse_failure_reasons": result.parse_failure_reasons,
        "engine_error_reasons": result.engine_error_reasons,
    }


def write_domain_files(output_dir: str | os.PathLike[str], result: DomainResult,
                       scored: Sequence[ScoredItem], timestamp: str | None = None) -> tuple[Path, Path]:
    """Write ``<Domain>_detailed.json`` and ``<Domain>_metrics.json``; return their paths.

    ``total_count`` is the number of scoreable items, ``excluded_count`` the excluded ones.
    """
    if len(scored) != result.scoreable_items:
        raise ValueError(f"{result.domain_name}: {len(scored)} scored items but "
                         f"{result.scoreable_items} scoreable in the DomainResult")
    folder = model_dir(output_dir, result.run or result.model)
    stamp = timestamp or now_timestamp()
    head = _headline(result, scored)
    detailed = {
        "domain": result.domain_name, "domain_id": result.domain_id, "grouping": result.grouping,
        "timestamp": stamp, "model": result.model, "run": result.run or result.model, **head,
        "per_question_macro_f1": result.metrics.get("per_question_macro_f1", math.nan),
        "excluded_by_reason": result.excluded_by_reason,
        "baselines": result.baselines, "per_country": result.per_country, **_extras(result),
        "weighted_metrics_off": result.weights_off, "questions": result.questions,
        "persona_groups": persona_groups(scored),
        "details": [detail_record(item) for item in scored],
    }
    metrics = {
        "domain": result.domain_name, "domain_id": result.domain_id, "model": result.model,
        "run": result.run or result.model,
        "timestamp": stamp, "interview_count": result.interview_count, **head,
        "total_items": result.total_items, "excluded_by_reason": result.excluded_by_reason,
        "metrics": result.metrics, "baselines": result.baselines,
        "unmapped_countries": result.unmapped_countries, "grouping": result.grouping, **_extras(result),
        "weighted_metrics_off": result.weights_off, "sample": result.sample,
        "questions": {qid: {k: v for k, v in view.items() if k != "countries"}
                      for qid, view in result.questions.items()},
    }
    return (write_json(folder / f"{result.domain_name}_detailed.json", detailed),
            write_json(folder / f"{result.domain_name}_metrics.json", metrics))


def write_scored_domain(output_dir: str | os.PathLike[str], scored: ScoredDomain,
                        circular_settings: CircularSettings | None = None) -> tuple[Path, ...]:
    """The ``report`` stage's files for one domain: the original system's two and, when ``scored`` holds
    circular variants, ``<Domain>_circular.jsonl`` / ``_circular_metrics.json``."""
    paths = write_domain_files(output_dir, scored.result, scored.items)
    if scored.variants is None or circular_settings is None or not scored.result.complete:
        return paths  # an incomplete domain has no circular scores
    return (*paths, *write_domain_circular(output_dir, scored.result, scored.variants, circular_settings,
                                           scored.circular_scores))


def _extras(result: DomainResult) -> dict[str, Any]:
    """Accuracy CI, persona breakdowns, distribution scores, ranking alignment, yardsticks, draws."""
    return {"accuracy_ci": list(result.accuracy_ci) if result.accuracy_ci else None,
            "breakdowns": result.breakdowns, "distribution": result.distribution,
            "alignment": result.alignment, "yardsticks": result.yardsticks,
            "draws": {key: result.metrics[key] for key in DRAW_KEYS if key in result.metrics}}


def persona_groups(scored: Sequence[ScoredItem]) -> dict[str, dict[str, str]]:
    """``{person id: {attribute: group}}``: lets the report put CIs and baselines on each group."""
    return {str(item.person_id): item.groups for item in scored if item.groups}


def distribution_headline(result: DomainResult) -> dict[str, Any]:
    """The headline distribution scores (see ``metrics.distribution.headline_level``)."""
    level = headline_level(result.distribution)
    scores = result.distribution.get(level, {}) if level else {}
    return {"distribution_level": level,
            **{f"{name}_score": scores.get(name, math.nan) for name in DISTRIBUTION_SCORES}}


def alignment_headline(alignment: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Ranking alignment per question (``metrics.ranking``): modal agreement, tau, their floors."""
    scores = alignment.get(ALIGNMENT_LEVEL, {})
    return {name: scores.get(name, math.nan) for name in ALIGNMENT_SCORES}


def _extra_rows(result: DomainResult) -> list[tuple[str, str]]:
    ci = result.accuracy_ci
    rows = [("accuracy 95% CI (respondent bootstrap)",
             f"[{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else f"n/a (fewer than {MIN_CI} respondents)")]
    head = distribution_headline(result)
    level = head["distribution_level"]
    if level:
        weighted = result.distribution.get(level, {})  # weighted scores beside, when the survey has weights
        rows += [(f"distribution ({level}): {name}", _fmt(head[f"{name}_score"])
                  + (f" (weighted {_fmt(weighted[f'weighted_{name}'])})"
                     if f"weighted_{name}" in weighted else ""))
                 for name in DISTRIBUTION_SCORES]
    rows += [(f"ranking alignment (per question): {name.replace('_', ' ')}", _fmt(value))
             for name, value in alignment_headline(result.alignment).items()]
    if result.yardsticks:  # the LLM's answers beside the demographic model's
        rows += [(f"{label} (model / demographic model)", " / ".join(
            _fmt(yardstick(result.yardsticks, *path, who, *key)) for who in ("model", DEMOGRAPHIC)))
            for label, path, key in YARDSTICK_ROWS]
    for attribute, groups in result.breakdowns.items():
        text = ", ".join(f"{g} {_fmt(v.get('accuracy'))} (n={int(v.get('n', 0))})" for g, v in groups.items())
        rows.append((f"accuracy by {attribute}", text))
    return rows


def domain_markdown(result: DomainResult) -> str:
    """A short markdown report of one domain (for the UI artifact and humans)."""
    m = result.metrics
    best = best_baseline(result.baselines)
    lines = [
        f"# {domain_label(result.domain_name)} (domain {result.domain_id}): {result.run or result.model}", "",
        *([f"**Incomplete, not a result**: {result.incomplete_reason}. Run the same command again to "
           "send exactly the requests that have no answer.", ""] if not result.complete else []),
        f"- scoreable items: {result.scoreable_items} of {result.total_items} "
        f"({result.interview_count} respondents); parse failures: {result.parse_failures} "
        f"({_counts_text(result.parse_failure_reasons)}); engine errors: {result.engine_errors}",
        f"- excluded: {_counts_text(result.excluded_by_reason)}",
        f"- pooled as one unknown {'country' if result.grouping == COUNTRY else result.grouping} (kept): "
        f"{_counts_text(result.unmapped_countries)}",
        *([f"- weighted metrics: off ({result.weights_off})"] if result.weights_off else []), "",
        *markdown_table(("metric", "value"), [
            *((name, _fmt(value)) for name, value in m.items()),
            *((f"baseline: {baseline_label(name)}", _fmt(value)) for name, value in result.baselines.items()),
            *_extra_rows(result)]),
    ]
    if best is not None:
        lines += ["", f"Strongest baseline: {baseline_label(best[0])} ({_fmt(best[1])}); margin "
                  f"{signed(m.get('margin_over_best_baseline'), 4)}."]
    return "\n".join(lines) + "\n"


def _counts_text(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} ({n})" for name, n in counts.items()) or "none"


# --------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class RunSummary:
    """Where the run summary went, and its per-domain rows (for a table artifact)."""

    path: Path
    markdown: Path
    plot: Path | None
    rows: list[dict[str, Any]]


def summary_row(result: DomainResult) -> dict[str, Any]:
    """One domain's line of the summary table."""
    best = best_baseline(result.baselines)
    accuracy = result.metrics.get("accuracy", math.nan)
    ci = result.accuracy_ci or (math.nan, math.nan)
    return {
        "domain_id": result.domain_id, "domain": result.domain_name,
        **{name: result.metrics.get(name, math.nan) for name in SUMMARY_METRICS},
        "accuracy_ci_low": ci[0], "accuracy_ci_high": ci[1], **distribution_headline(result),
        **alignment_headline(result.alignment), **headline(result.yardsticks),
        "best_baseline": best[0] if best else None,
        "best_baseline_accuracy": best[1] if best else math.nan,
        "margin_over_best_baseline": accuracy - best[1] if best else math.nan,
        "scoreable_items": result.scoreable_items, "parse_failures": result.parse_failures,
        "engine_errors": result.engine_errors, "complete": result.complete,
        "incomplete_reason": result.incomplete_reason,
        "excluded_count": sum(result.excluded_by_reason.values()),
        "unmapped_countries": dict(result.unmapped_countries),
        "weighted_metrics_off": result.weights_off, "usage": dict(result.usage),
        "sample": {k: v for k, v in result.sample.items() if k != "person_ids"},  # those: _metrics.json
        **{key: result.metrics[key] for key in DRAW_KEYS if key in result.metrics},  # --samples K
    }


def summary_payload(results: Sequence[DomainResult], failed: Mapping[int, str] | None = None,
                    model: str | None = None) -> dict[str, Any]:
    """``summary.json``: per-domain rows and unweighted means over the domains run.

    ``model`` is the model asked (the results' own when they have one) and ``run`` the run's
    folder name (``model`` here, or the results' ``run``). A run with an incomplete domain is
    incomplete: ``complete`` is false, the domains are listed under ``incomplete_domains`` and
    the means are null (not a result).
    """
    rows = [summary_row(r) for r in sorted(results, key=lambda r: r.domain_id)]
    incomplete = {str(r.domain_id): r.incomplete_reason for r in results if not r.complete}
    mean_keys = (*SUMMARY_METRICS, "best_baseline_accuracy", "margin_over_best_baseline",
                 *(f"{name}_score" for name in DISTRIBUTION_SCORES), *ALIGNMENT_SCORES[:3],
                 *HEADLINE_KEYS[1:])  # SimBench's mean pools rows: below
    unmapped: dict[str, int] = {}
    for row in rows:
        for name, n in row["unmapped_countries"].items():
            unmapped[name] = unmapped.get(name, 0) + n
    return {
        "model": results[0].model if results else model,
        "run": model or (results[0].run or results[0].model if results else None),
        "timestamp": now_timestamp(),
        "domains": rows,
        "complete": not incomplete,
        "incomplete_domains": incomplete,
        "mean": {key: math.nan if incomplete else finite_mean(row[key] for row in rows) for key in mean_keys}
        | {"simbench_score": math.nan if incomplete else pooled_simbench(rows)},
        "totals": {key: sum(row[key] for row in rows)
                   for key in ("scoreable_items", "parse_failures", "engine_errors", "excluded_count")}
        | {"usage": total_usage(row["usage"] for row in rows)},
        "unmapped_countries": dict(sorted(unmapped.items())),
        "failed_domains": {str(k): v for k, v in (failed or {}).items()},
    }


def summary_markdown(payload: Mapping[str, Any]) -> str:
    """``summary.md``: the same table as ``summary.json``, for people; an incomplete domain
    shows "incomplete" where its accuracy would be, and an incomplete run has no means."""
    head = ("domain", "accuracy", "95% CI", "strongest baseline", "baseline accuracy", "margin",
            "per-question macro-F1", "macro-F1 (seed)", "micro-F1 (seed)", "1-W1", "1-W1 uniform", "1-JS",
            "1-JS uniform", "modal agreement", "modal agreement uniform", "Kendall tau", "SimBench",
            "demographic model", "structure correlation", "heterogeneity ratio", "items",
            "parse failures", "engine errors", "excluded")
    rows = [[f"{domain_label(row['domain'])} ({row['domain_id']})", *_metric_cells(row),
             *_count_cells(row)] for row in payload["domains"]]
    mean, totals = payload["mean"], payload["totals"]
    rows.append(["**mean**", *_metric_cells(mean), *_count_cells(totals)])
    run = payload.get("run") or payload["model"]
    title = payload["model"] if run == payload["model"] else f"{run} (model {payload['model']})"
    lines = [f"# {study_title([(payload.get('data') or {}).get('study')])} results: {title}", "",
             *markdown_table(head, rows)]
    if payload["incomplete_domains"]:
        lines += ["", "**Incomplete run: not a result.** Requests without an answer (engine errors) in "
                  + "; ".join(f"domain {k}: {v}" for k, v in payload["incomplete_domains"].items())
                  + ". Run the same command again: it sends exactly the requests that have no answer."]
    lines += ["", "Means are unweighted over domains. Margin: accuracy minus the strongest answer-free",
              "baseline on the same items (negative: the model does worse). macro-F1 and micro-F1 are the",
              "original system's pooled ones (pooled micro-F1 = accuracy); per-question macro-F1 is the",
              "meaningful one. 95% CI: respondent-cluster bootstrap. 1-W1, 1-JS: 1 - normalised Wasserstein",
              "and 1 - Jensen-Shannon distance between model and human answer distributions, beside what",
              "uniform answers get. Modal agreement: the model's most chosen option is the people's, per",
              "question (uniform answers: 1/k); Kendall tau: rank correlation of the option shares (a random",
              "order: 0; n/a where the shares are all equal). SimBench: 100 x (1 - TV(model, people) /",
              "TV(uniform, people)) per country x question",
              "(0 = uniform answers, 100 = the people's distribution; its mean pools the domains' rows, as",
              "SimBench does). Demographic model: a classifier on the persona attributes the model was",
              "shown, cross-fitted over respondents (also a baseline). Structure correlation: how well the",
              "differences between groups in the model's answers follow the real ones; heterogeneity ratio:",
              "how varied its answers are against the real ones (< 1: less varied). See docs/results.md",
              "(Scores and the report), docs/yardsticks.md and `socbench report`.",
              "Parse failures: replies that could not be read (wrong answers); engine errors: requests",
              "the engine did not answer (not answers at all; any makes the domain incomplete).",
              "", f"Respondents in no country or group (kept, pooled as one unknown group): "
              f"{_counts_text(payload['unmapped_countries'])}.", "", usage_text(totals.get("usage") or {})]
    off = weights_off_text((domain_label(row["domain"]), row.get("weighted_metrics_off"))
                           for row in payload["domains"])
    if off:
        lines += ["", f"Weighted metrics (design-weighted baselines and distributions) are off: {off}."]
    if payload["failed_domains"]:
        failed = "; ".join(f"{k}: {v}" for k, v in payload["failed_domains"].items())
        lines += ["", f"Failed domains: {failed}"]
    if payload.get("export_failed"):
        lines += ["", "**Export failed** (every other format was written): "
                  + "; ".join(payload["export_failed"])]
    return "\n".join(lines) + "\n"


def _count_cells(row: Mapping[str, Any]) -> list[str]:
    return [str(row["scoreable_items"]), str(row["parse_failures"]), str(row["engine_errors"]),
            str(row["excluded_count"])]


def _metric_cells(row: Mapping[str, Any]) -> list[str]:
    """accuracy, its CI (rows only), baseline and margin, the F1s, distribution and alignment scores."""
    ci = ("" if "accuracy_ci_low" not in row else f"n/a (n < {MIN_CI})" if row["accuracy_ci_low"] is None
          or row["accuracy_ci_low"] != row["accuracy_ci_low"] else
          f"[{_fmt(row['accuracy_ci_low'])}, {_fmt(row['accuracy_ci_high'])}]")
    accuracy = "incomplete" if row.get("complete") is False else _fmt(row["accuracy"])
    return [accuracy, ci, baseline_label(row.get("best_baseline")) if "best_baseline" in row else "",
            _fmt(row["best_baseline_accuracy"]), signed(row["margin_over_best_baseline"], 4),
            _fmt(row["per_question_macro_f1"]), _fmt(row["macro_f1"]), _fmt(row["micro_f1"]),
            *(_fmt(row.get(f"{name}_score")) for name in DISTRIBUTION_SCORES),
            _fmt(row.get("modal_agreement")), _fmt(row.get("uniform_modal_agreement")),
            _fmt(row.get("kendall_tau")), *(_fmt(row.get(key)) for key in HEADLINE_KEYS)]


def write_summary(folder: str | os.PathLike[str], results: Sequence[DomainResult],
                  failed: Mapping[int, str] | None = None, model: str | None = None,
                  data: Mapping[str, Any] | None = None, export_failed: Sequence[str] = ()) -> RunSummary:
    """Write ``summary.json``, ``summary.md`` and ``domain_accuracy.png`` into a model folder;
    ``data`` (``RunConfig.data_record``: which respondents the run read) is recorded under
    ``data``, so ``socbench export`` finds their weights, labels and rows in the source file;
    ``export_failed``: the ``--export`` formats that could not be written, one line why each."""
    folder = Path(folder)
    payload = summary_payload(results, failed, model) | ({"data": dict(data)} if data else {})
    payload |= {"export_failed": list(export_failed)} if export_failed else {}
    path = write_json(folder / "summary.json", payload)
    markdown = folder / "summary.md"
    with atomic_open(markdown) as handle:
        handle.write(summary_markdown(payload))
    study = study_title([(data or {}).get("study")])
    plot = domain_accuracy_plot(results, folder / "domain_accuracy.png", study) if results else None
    return RunSummary(path, markdown, plot, json_safe(payload["domains"]))


def write_run_summary(output_dir: str | os.PathLike[str], run: str, results: Sequence[DomainResult],
                      failed: Mapping[int, str] | None = None,
                      data: Mapping[str, Any] | None = None, export_failed: Sequence[str] = ()) -> RunSummary:
    """``write_summary`` into ``<output_dir>/<run slug>/`` (``run``: the run's name, e.g.
    ``RunConfig.run_name``; a model's own runs are named after it)."""
    return write_summary(model_dir(output_dir, run), results, failed, run, data, export_failed)
