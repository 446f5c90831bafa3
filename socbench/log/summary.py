"""``summary.json``: the run's line per domain (in each domain's record too), the original system's means
over the domains run, and ``pooled``: the run folder's leaderboard line, countries and persona groups over
every domain record it holds. Written at the end: these numbers pool domains; the report only reads them.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from socbench.engines.usage import total_usage
from socbench.files import write_json
from socbench.log.read import DomainRun, read_domains
from socbench.log.records import FORMAT, DomainRecord, SummaryRecord
from socbench.log.rerun import forget
from socbench.metrics.baselines import best_baseline, group_baseline
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS, headline_level
from socbench.metrics.grouped import pooled_rows
from socbench.metrics.persona_groups import ATTRIBUTES, UNKNOWN
from socbench.metrics.uncertainty import accuracy_ci
from socbench.report.output import finite_mean, now_timestamp
from socbench.types import DomainResult
from socbench.yardsticks import HEADLINE_KEYS, headline, pooled_simbench

SUMMARY_METRICS = ("accuracy", "macro_f1", "micro_f1", "per_question_macro_f1")
DRAW_KEYS = ("samples", "draw_agreement", "draw_fleiss_kappa")  # socbench.draws' record (--samples K)
DISTRIBUTION_SCORES = ("wasserstein", "uniform_wasserstein", "js", "uniform_js")  # each beside its floor
ALIGNMENT_SCORES = ("modal_agreement", "uniform_modal_agreement", "kendall_tau", "kendall_tau_p")
ALIGNMENT_LEVEL = "question"  # the headline: per question, pooled over countries
MEAN_KEYS = (*SUMMARY_METRICS, "best_baseline_accuracy", "margin_over_best_baseline",
             *(f"{name}_score" for name in DISTRIBUTION_SCORES), *ALIGNMENT_SCORES[:3], *HEADLINE_KEYS[1:])
LEADERBOARD_MEANS = ("accuracy", "best_baseline_accuracy", "margin_over_best_baseline",
                     "per_question_macro_f1",
                     *(f"{name}_score" for name in DISTRIBUTION_SCORES), *ALIGNMENT_SCORES[:3],
                     "parse_failure_rate", *HEADLINE_KEYS[1:], *DRAW_KEYS[1:], "median_gain")
GAIN_KEYS = ("median_gain", "median_gain_ci_low", "median_gain_ci_high")


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


def gain_headline(estimates: Mapping[str, Any]) -> dict[str, float]:
    """The domain's median effective-sample-size gain and its spread over repeated splits
    (``estimates.study.gain_record``; NaN with too few respondents, and in older results)."""
    ci = estimates.get("median_gain_ci")
    return dict(zip(GAIN_KEYS, (estimates.get("median_gain", math.nan),
                                *(ci if isinstance(ci, list) else (math.nan, math.nan))), strict=True))


def summary_row(result: DomainResult) -> dict[str, Any]:
    """One domain's line of the summary table (and of the leaderboard)."""
    best = best_baseline(result.baselines)
    accuracy = result.metrics.get("accuracy", math.nan)
    ci = result.accuracy_ci or (math.nan, math.nan)
    return {
        "domain_id": result.domain_id, "domain": result.domain_name, "grouping": result.grouping,
        **{name: result.metrics.get(name, math.nan) for name in SUMMARY_METRICS},
        "accuracy_ci_low": ci[0], "accuracy_ci_high": ci[1], **distribution_headline(result),
        **alignment_headline(result.alignment), **headline(result.yardsticks),
        **gain_headline(result.estimates),
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


def leaderboard_line(record: DomainRecord) -> dict[str, Any]:
    """A complete domain's leaderboard line: its summary line, respondents, items, parse failure rate and
    the agreement of repeated draws (NaN without ``--samples``)."""
    line = {k: v for k, v in record.summary.items()
            if k not in ("complete", "engine_errors", "incomplete_reason")}
    return {**line, "respondents": record.respondents, "items": record.total_count,
            "parse_failure_rate": record.metrics.get("parse_failure_rate", math.nan),
            **{key: record.draws.get(key, math.nan) for key in DRAW_KEYS[1:]}}


def pooled(domains: Sequence[DomainRun]) -> dict[str, Any]:
    """The run folder's leaderboard line over its ``domains``' records (with their timestamps, so the report
    knows which it covers); with an incomplete domain no number at all (the run is not ranked)."""
    records = [d.stored for d in domains]
    stamps = {r.domain: r.timestamp for r in records}
    if not records or not all(r.complete for r in records):
        return {"records": stamps, "complete": False}
    rows = [leaderboard_line(r) for r in records]
    items = [(d.domain, list(d.scored())) for d in domains]
    correct = [i.correct for _, found in items for i in found]
    ci = accuracy_ci(correct, [f"{d}:{i.person_id}" for d, found in items for i in found],
                     [d for d, found in items for _ in found], min_respondents=DEFAULT_MIN_RESPONDENTS)
    line = {"domains": len(rows), "respondents": sum(r["respondents"] for r in rows),
            "items": sum(r["items"] for r in rows),
            **{key: finite_mean(r.get(key) for r in rows) for key in LEADERBOARD_MEANS},
            "simbench_score": pooled_simbench(rows),  # SimBench's pooling: every row of every domain once
            "accuracy_ci_low": ci[0] if ci else math.nan, "accuracy_ci_high": ci[1] if ci else math.nan,
            "domains_not_above_baseline": sum(not r["margin_over_best_baseline"] > 0 for r in rows)}
    names = [("uniform", "majority_question", group_baseline(r.grouping)) for r in records]
    parts = [(r.domain, found, {b: r.baselines[b] for b in own})
             for r, (_, found), own in zip(records, items, names, strict=True)]
    countries = pooled_rows([(d, found, r.per_country, f) for r, (d, found, f) in zip(records, parts)],
                            "country_code") if any(r.per_country for r in records) else {}
    persona = {attr: pooled_rows([(d, found, r.breakdowns.get(attr, {}), f) for r, (d, found, f)
                                  in zip(records, parts)], lambda i, a=attr: i.groups.get(a, UNKNOWN))
               for attr in ATTRIBUTES if any(attr in r.breakdowns for r in records)}
    return {"records": stamps, "complete": True, "line": line, "countries": countries,
            "persona_groups": persona}


def summary_payload(results: Sequence[DomainResult], failed: Mapping[int, str] | None = None,
                    model: str | None = None, pooled_line: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``summary.json``: per-domain rows, unweighted means over the domains run (null with an incomplete
    domain: not a result), and ``pooled``; ``model``: the model asked, naming the run folder."""
    rows = [summary_row(r) for r in sorted(results, key=lambda r: r.domain_id)]
    incomplete = {str(r.domain_id): r.incomplete_reason for r in results if not r.complete}
    unmapped = sum((Counter(row["unmapped_countries"]) for row in rows), Counter[str]())  # counts: all >= 1
    return {
        "format": FORMAT, "task": "issp", "model": results[0].model if results else model,
        "run": model or (results[0].run or results[0].model if results else None),
        "timestamp": now_timestamp(), "domains": rows, "complete": not incomplete,
        "incomplete_domains": incomplete,
        "mean": {key: math.nan if incomplete else finite_mean(row[key] for row in rows) for key in MEAN_KEYS}
        | {"simbench_score": math.nan if incomplete else pooled_simbench(rows)},
        "totals": {key: sum(row[key] for row in rows)
                   for key in ("scoreable_items", "parse_failures", "engine_errors", "excluded_count")}
        | {"usage": total_usage(row.get("usage") or {} for row in rows)},
        "unmapped_countries": dict(sorted(unmapped.items())),
        "failed_domains": {str(k): v for k, v in (failed or {}).items()}, "pooled": dict(pooled_line or {}),
        "estimates": {r.domain_name: r.estimates for r in results if r.estimates},  # gain per question
    }


def write_summary_json(folder: str | os.PathLike[str], results: Sequence[DomainResult],
                       failed: Mapping[int, str] | None = None, model: str | None = None,
                       data: Mapping[str, Any] | None = None,
                       export_failed: Sequence[str] = ()) -> dict[str, Any]:
    """Write ``summary.json`` (``pooled`` over every domain record in ``folder``); its payload. ``data``
    (``RunConfig.data_record``) lets ``socbench export`` find the respondents' source rows."""
    folder = Path(folder)
    forget(folder)
    payload = summary_payload(results, failed, model, pooled(read_domains(folder)))
    payload |= {"data": dict(data)} if data else {}
    payload |= {"export_failed": list(export_failed)} if export_failed else {}
    SummaryRecord.model_validate(payload)  # the reader's model: what is written can be read
    write_json(folder / "summary.json", payload)
    return payload
