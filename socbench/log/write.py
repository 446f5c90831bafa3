"""Writing a unit's records of the results log, atomically, under ``<output_dir>/<run slug>/`` (an MCQ
dataset's under ``<model slug>/mcq/``). A domain with engine errors is ``complete: false``, its accuracy
and F1s ``null``, never a score.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from socbench.circular import circular_metrics, circular_name, circular_notes
from socbench.files import atomic_open, json_safe, write_json
from socbench.log.read import ITEMS_SUFFIX, MCQ_FOLDER, RESPONDENTS_SUFFIX, UNIT_SUFFIX
from socbench.log.records import (
    FORMAT,
    CircularRecord,
    DomainRecord,
    McqRecord,
    UnitRecord,
    detail_row,
    prediction_row,
    variant_row,
)
from socbench.log.rerun import forget
from socbench.log.summary import DRAW_KEYS, SUMMARY_METRICS, summary_row
from socbench.mcq.mcq_types import McqAnswers, McqData, McqPlan, McqScores
from socbench.mcq.scoring import (
    COLUMNS,
    DEFINITIONS,
    chance_accuracy,
    mean_mass,
    reported_accuracies,
)
from socbench.report.output import LABELS, model_dir, now_timestamp
from socbench.task import UnitResult
from socbench.types import (
    CircularScores,
    CircularSettings,
    DomainResult,
    ScoredDomain,
    ScoredItem,
    VariantResult,
)

# what a circular record says of itself (report/texts.json)
TIE_RULE, MEASURES, SAMPLED_NOTE = (LABELS[f"circular_{k}"] for k in ("tie_rule", "measures", "sampled"))


def domain_record(result: DomainResult, scored: Sequence[ScoredItem], timestamp: str) -> DomainRecord:
    """The domain's record: the original system's keys, every breakdown, its line of ``summary.json``."""
    m = result.metrics
    own = {f.name: getattr(result, f.name) for f in fields(result)
           if f.name not in ("domain_name", "scoreable_items", "weights_off", "run")}
    return DomainRecord(
        **own, format=FORMAT, task="issp", run=result.run or result.model, timestamp=timestamp,
        domain=result.domain_name, respondents=len({item.person_id for item in scored}),
        correct_count=sum(item.correct for item in scored), total_count=result.scoreable_items,
        **{name: m.get(name, math.nan) for name in SUMMARY_METRICS},
        excluded_count=sum(result.excluded_by_reason.values()), complete=result.complete,
        incomplete_reason=result.incomplete_reason, draws={key: m[key] for key in DRAW_KEYS if key in m},
        weighted_metrics_off=result.weights_off, summary=summary_row(result))


def write_unit_record(folder: Path, task: str, model: str, result: UnitResult) -> Path:
    """The unit's record in the shape every study shares, ``<unit>_unit.json`` in the study's folder."""
    record = UnitRecord(format=FORMAT, task=task, model=model, timestamp=now_timestamp(), unit=result.unit,
                        unit_id=result.unit_id, complete=result.incomplete_reason is None,
                        incomplete_reason=result.incomplete_reason, metrics=result.metrics,
                        extras=result.extras)
    return write_json(folder / f"{result.unit}{UNIT_SUFFIX}", record.model_dump())


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """JSON Lines, one row a line, written as ``rows`` go (strict JSON: NaN as null), atomically. A row
    (string keys) is copied by ``json_safe`` only when it holds a NaN: a third of a domain's report."""
    with atomic_open(path) as handle:
        for row in rows:
            try:
                line = json.dumps(row, ensure_ascii=False, allow_nan=False)
            except ValueError:
                line = json.dumps(json_safe(row), ensure_ascii=False, allow_nan=False)
            handle.write(line + "\n")
    return path


def write_domain_files(output_dir: str | os.PathLike[str], result: DomainResult,
                       scored: Sequence[ScoredItem], timestamp: str | None = None) -> tuple[Path, Path]:
    """Write ``<Domain>_items.jsonl`` (a line per scored item), ``<Domain>_respondents.jsonl`` (a line per
    respondent with persona groups), then the records ``<Domain>_detailed.json`` and ``_metrics.json``;
    return the records' paths (the lines sit beside them). Why lines: a whole survey's millions of items
    are written and read a line at a time, and the records a user opens stay small."""
    if len(scored) != result.scoreable_items:
        raise ValueError(f"{result.domain_name}: {len(scored)} scored items but "
                         f"{result.scoreable_items} scoreable in the DomainResult")
    folder = model_dir(output_dir, result.run or result.model)
    forget(folder)
    record = domain_record(result, scored, timestamp or now_timestamp()).model_dump()
    people = {item.person_id: item.groups for item in scored if item.groups}  # each respondent once, with
    # persona groups (``sex``, ...): a respondents line
    metrics = {**record, "questions": {qid: {k: v for k, v in view.items() if k != "countries"}
                                       for qid, view in result.questions.items()}}
    write_jsonl(folder / f"{result.domain_name}{ITEMS_SUFFIX}", map(detail_row, scored))
    write_jsonl(folder / f"{result.domain_name}{RESPONDENTS_SUFFIX}",
                ({"person_id": pid, **groups} for pid, groups in people.items()))
    return (write_json(folder / f"{result.domain_name}_detailed.json", record),
            write_json(folder / f"{result.domain_name}_metrics.json", metrics))


def write_scored_domain(output_dir: str | os.PathLike[str], scored: ScoredDomain,
                        circular_settings: CircularSettings | None = None) -> tuple[Path, ...]:
    """The ``report`` stage's files for one domain: its two records and, with variants, the circular ones."""
    paths = write_domain_files(output_dir, scored.result, scored.items)
    result = scored.result
    if scored.variants is None or circular_settings is None or not result.complete:
        return paths  # an incomplete domain has no circular scores
    scores = scored.circular_scores or circular_metrics(scored.variants, circular_settings.mode)
    return (*paths, *write_circular_files(
        model_dir(output_dir, result.run or result.model), result.domain_name, scored.variants,
        circular_settings, scores, domain=result.domain_name, domain_id=result.domain_id, model=result.model))


def write_circular_files(folder: Path, name: str, results: Sequence[VariantResult],
                         settings: CircularSettings, scores: CircularScores,
                         **about: Any) -> tuple[Path, Path]:
    """``<name>_circular[_relabel].jsonl`` (a line per variant) and ``_metrics.json`` in ``folder``;
    ``about``: dataset or domain, model, ..."""
    stem = f"{name}_circular_relabel" if settings.labels == "relabel" else f"{name}_circular"
    jsonl = write_jsonl(folder / f"{stem}.jsonl", map(variant_row, results))
    record = CircularRecord(
        format=FORMAT, task="mcq" if "dataset" in about else "issp", timestamp=now_timestamp(), **about,
        circular=settings.mode, labels=settings.labels, measures=MEASURES[settings.labels],
        seed=settings.seed, max_variants=settings.max_variants, shuffle_options=settings.shuffle_options,
        questions=scores.questions, variants=scores.variants, sampled_questions=scores.sampled_questions,
        **({"sampled": SAMPLED_NOTE} if scores.sampled_questions else {}), scale="fraction",
        tie_rule=TIE_RULE, metrics=scores.metrics)
    return jsonl, write_json(folder / f"{stem}_metrics.json", record.model_dump(exclude_unset=True))


def mcq_files(folder: Path, dataset: str) -> dict[str, Path]:
    """A dataset's files, by the name the CLI gives them (the circular table exists with ``--circular``)."""
    names = {"results": "results.json", "predictions": "predictions.jsonl", "csv": "table.csv",
             "plot": "accuracy.png", "table": "table.md", "circular_table": "circular_summary.md"}
    return {name: folder / f"{dataset}_{suffix}" for name, suffix in names.items()}


def mcq_circular(folder: Path, model: str, plan: McqPlan, scores: McqScores) -> dict[str, Any]:
    """Per k the circular files (MCP's only: CP is not expanded); the part of ``<dataset>_results.json``
    that says what they hold and where."""
    settings = plan.circular_settings
    assert settings is not None
    by_k: dict[str, Any] = {}
    for k, variants in scores.variants.items():
        found = circular_metrics(variants, settings.mode)
        jsonl, metrics = write_circular_files(folder, circular_name(plan.dataset, k), variants, settings,
                                              found, dataset=plan.dataset, model=model, method="MCP",
                                              k_shot=k)
        by_k[str(k)] = {"questions": found.questions, "variants": found.variants,
                        "sampled_questions": found.sampled_questions, "metrics": found.metrics,
                        "files": {"variants": str(jsonl), "metrics": str(metrics)}}
    table = folder / f"{plan.dataset}_circular_summary"
    return {"mode": settings.mode, "max_variants": settings.max_variants, "seed": settings.seed,
            "method": "MCP" if by_k else None, "notes": list(circular_notes(plan.methods)),
            "scale": "fraction", "k": by_k,
            "table": {"markdown": f"{table}.md", "csv": f"{table}.csv"} if by_k else None}


def write_mcq_log(output_dir: str | os.PathLike[str], model: str, data: McqData, plan: McqPlan,
                  answers: McqAnswers, scores: McqScores, wall_s: float | None = None,
                  backend: Mapping[str, str] | None = None) -> tuple[McqRecord, dict[str, Path]]:
    """``<dataset>_predictions.jsonl``, ``<dataset>_results.json`` and, with ``--circular`` and every
    request answered, the circular files; the record and the dataset's files (``mcq_files``)."""
    folder = model_dir(output_dir, model) / MCQ_FOLDER
    files, predictions = mcq_files(folder, data.dataset), scores.predictions
    incomplete = answers.incomplete_reason
    circular = mcq_circular(folder, model, plan, scores) \
        if plan.circular_settings is not None and incomplete is None else None
    split = {item.id: item.split for item in data.items}
    write_jsonl(files["predictions"], (prediction_row(pred, split[pred.item_id], COLUMNS[pred.method])
                                       for pred in predictions))
    record = McqRecord(
        format=FORMAT, task="mcq", dataset=data.dataset, model=model, engine=answers.identity,
        backend=dict(backend or {}), timestamp=now_timestamp(), eval_split=data.eval_split,
        fewshot_split=data.fewshot_split or None, source=data.source, items=len(data.items), seed=plan.seed,
        k_shots=list(plan.k_shots), methods=list(plan.methods), tolerance=plan.tolerance,
        accuracy={str(k): {COLUMNS[m]: acc for m, acc in row.items()}
                  for k, row in reported_accuracies(predictions, incomplete).items()},
        chance_accuracy=chance_accuracy([len(item.choices) for item in data.items]),
        mcp_probability_mass={str(k): v for k, v in mean_mass(predictions).items()},
        mcp_engine_errors=sum(r.error is not None for r in answers.options.values()),
        complete=incomplete is None, incomplete_reason=incomplete, usage=answers.usage,
        definitions=DEFINITIONS,
        timing={"engine_s": answers.seconds, "wall_s": wall_s, "engine_cache": answers.cache,
                "loglikelihood_requests": len(answers.loglikelihoods),
                "option_requests": len(answers.options)},
        **({"circular": circular} if circular is not None else {}))
    write_json(files["results"], record.model_dump(exclude_unset=True))
    return record, files
