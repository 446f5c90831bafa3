"""The run's files for people beside its results log: a domain's markdown (the UI artifact), ``summary.md``
and ``domain_accuracy.png``, written at the end of a run by ``write_run_summary``."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from socbench.engines.usage import usage_text
from socbench.files import json_safe, write_text
from socbench.log.summary import (
    ALIGNMENT_SCORES,
    DISTRIBUTION_SCORES,
    alignment_headline,
    distribution_headline,
    write_summary_json,
)
from socbench.metrics.baselines import best_baseline
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS as MIN_CI
from socbench.metrics.headline import summary_note
from socbench.metrics.numeric import DEMOGRAPHIC as DEMOGRAPHIC_NUMERIC
from socbench.metrics.numeric import MEDIAN_GROUP
from socbench.report.figures import domain_bars
from socbench.report.html_sections import NOTES
from socbench.report.labels import (
    baseline_label,
    domain_label,
    grouping_words,
    signed,
    study_title,
    weights_off_text,
)
from socbench.report.output import HEADS, fmt, markdown_table, model_dir
from socbench.types import COUNTRY, DomainResult
from socbench.yardsticks import DEMOGRAPHIC, HEADLINE_KEYS, yardstick

_fmt = partial(fmt, digits=4)
SCORE_KEYS = ("per_question_macro_f1", "macro_f1", "micro_f1", *(f"{n}_score" for n in DISTRIBUTION_SCORES),
              *ALIGNMENT_SCORES[:3], *HEADLINE_KEYS)  # summary.md's columns after the margin
YARDSTICK_ROWS = (("SimBench score", ("simbench",), ()),
                  ("structure: correlation of group differences", ("structure",), ("profile_correlation",)),
                  ("structure: heterogeneity ratio", ("structure",), ("heterogeneity_ratio",)))


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
    for qid, q in result.numeric.get("questions", {}).items():  # metrics.numeric: errors, lower is better
        floors = " / ".join(_fmt(q["baselines"].get(name)) for name in (MEDIAN_GROUP, DEMOGRAPHIC_NUMERIC))
        rows.append((f"numeric {qid}: MAE, W1 / range (baselines' MAE: group median / demographic)",
                     f"{_fmt(q['mae'])}, {_fmt(q['wasserstein'])} ({floors}; {q['answered']} of "
                     f"{q['respondents']} answered)"))
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


@dataclass(frozen=True)
class RunSummary:
    """Where the run summary went, and its per-domain rows (for a table artifact)."""

    path: Path
    markdown: Path
    plot: Path | None
    rows: list[dict[str, Any]]


def summary_markdown(payload: Mapping[str, Any]) -> str:
    """``summary.md``: the same table as ``summary.json``, for people; an incomplete domain
    shows "incomplete" where its accuracy would be, and an incomplete run has no means."""
    rows = [[f"{domain_label(row['domain'])} ({row['domain_id']})", *_metric_cells(row),
             *_count_cells(row)] for row in payload["domains"]]
    mean, totals = payload["mean"], payload["totals"]
    rows.append(["**mean**", *_metric_cells(mean), *_count_cells(totals)])
    run = payload.get("run") or payload["model"]
    title = payload["model"] if run == payload["model"] else f"{run} (model {payload['model']})"
    lines = [f"# {study_title([(payload.get('data') or {}).get('study')])} results: {title}", "",
             *markdown_table(HEADS["summary"], rows)]
    small = summary_note(payload["domains"])
    lines += ["", small] if small else []
    if payload["incomplete_domains"]:
        lines += ["", "**Incomplete run: not a result.** Requests without an answer (engine errors) in "
                  + "; ".join(f"domain {k}: {v}" for k, v in payload["incomplete_domains"].items())
                  + ". Run the same command again: it sends exactly the requests that have no answer."]
    groupings = {row.get("grouping") or COUNTRY for row in payload["domains"]}  # a province is no country
    by = groupings.pop() if len(groupings) == 1 else "group"
    unmapped = grouping_words("Respondents in no country or group (kept, pooled as one unknown group)", by)
    lines += ["", grouping_words(NOTES["summary"], by), "",
              f"{unmapped}: {_counts_text(payload['unmapped_countries'])}.", "",
              usage_text(totals.get("usage") or {})]
    off = weights_off_text((domain_label(row["domain"]), row.get("weighted_metrics_off"))
                           for row in payload["domains"])
    if off:
        lines += ["", f"Weighted metrics (design-weighted baselines and distributions) are off: {off}."]
    failed = "; ".join(f"{k}: {v}" for k, v in payload["failed_domains"].items())
    lines += ["", f"Failed domains: {failed}"] if failed else []
    if payload.get("export_failed"):
        lines += ["", "**Export failed** (every other format was written): "
                  + "; ".join(payload["export_failed"])]
    return "\n".join(lines) + "\n"


def _count_cells(row: Mapping[str, Any]) -> list[str]:
    return [str(row[key]) for key in ("scoreable_items", "parse_failures", "engine_errors", "excluded_count")]


def _metric_cells(row: Mapping[str, Any]) -> list[str]:
    """accuracy, its CI (rows only), baseline and margin, the F1s, distribution and alignment scores."""
    ci = ("" if "accuracy_ci_low" not in row else f"n/a (n < {MIN_CI})" if row["accuracy_ci_low"] is None
          or row["accuracy_ci_low"] != row["accuracy_ci_low"] else
          f"[{_fmt(row['accuracy_ci_low'])}, {_fmt(row['accuracy_ci_high'])}]")
    accuracy = "incomplete" if row.get("complete") is False else _fmt(row["accuracy"])
    return [accuracy, ci, baseline_label(row.get("best_baseline")) if "best_baseline" in row else "",
            _fmt(row["best_baseline_accuracy"]), signed(row["margin_over_best_baseline"], 4),
            *(_fmt(row.get(key)) for key in SCORE_KEYS)]


def write_run_summary(output_dir: str | os.PathLike[str], run: str, results: Sequence[DomainResult],
                      failed: Mapping[int, str] | None = None, data: Mapping[str, Any] | None = None,
                      export_failed: Sequence[str] = ()) -> RunSummary:
    """The end of a run: ``summary.json`` (``log.summary``), ``summary.md`` and ``domain_accuracy.png`` in
    ``<output_dir>/<run slug>/`` (``run``: ``RunConfig.run_name``; ``data``: ``RunConfig.data_record``)."""
    folder = model_dir(output_dir, run)
    payload = write_summary_json(folder, results, failed, run, data, export_failed)
    markdown = write_text(folder / "summary.md", summary_markdown(payload))
    rows = [{**row, "run": run} for row in payload["domains"]]
    study = study_title([(data or {}).get("study")])
    plot = domain_bars(rows, [run], folder / "domain_accuracy.png", f"{study} accuracy by domain: {run}") \
        if results else None
    return RunSummary(folder / "summary.json", markdown, plot, json_safe(payload["domains"]))
