"""Circular-evaluation files: every variant as JSONL, the metrics JSON and the summary table.

``<name>_circular.jsonl`` holds one line per variant (``qid, pattern, gold, prediction,
correct`` plus the variant id, the original order and the answer mapped back), and
``<name>_circular_metrics.json`` the OpenCompass metrics (fractions) with the settings
that produced them (mode, seed, max_variants; a sample's orders are the patterns in the
JSONL). The summary table has OpenCompass's ``CircularSummarizer`` layout: a header row
``dataset, version, mode, <model>, -, ...``, a row of metric names, then one row per
dataset with percentages to two decimals and ``-`` where a value is missing.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from socbench.errors import DataError
from socbench.metrics.circular import circular_metrics, families
from socbench.report.output import atomic_open, markdown_text, model_dir, now_timestamp, write_json
from socbench.types import CircularScores, CircularSettings, DomainResult, VariantResult

if TYPE_CHECKING:
    import pandas as pd

TIE_RULE = "vote ties go to the answer seen first in the file (Counter.most_common, as OpenCompass)"
EMPTY_CELL = "-"
MEASURES = {
    "order_only": "order bias: each code stays with its text, only the lines move (the survey's own codes)",
    "relabel": "label and order bias: options numbered 1..n by position in each order, the answer mapped "
               "back (OpenCompass's relabelling)",
}
SAMPLED_NOTE = ("the *_sampled metrics are over a seeded sample of orders (the n rotations plus others, "
                "--max_variants), not all n! orders; perf_sampled is an upper bound of perf over all orders")


def circular_stem(settings: CircularSettings) -> str:
    """``circular`` (order-only, the default) or ``circular_relabel``: names files and metrics."""
    return "circular_relabel" if settings.labels == "relabel" else "circular"


# --------------------------------------------------------------------- variant files


def variant_record(result: VariantResult) -> dict[str, Any]:
    """One JSONL line; ``pattern``/``shown``/``origin`` are label lists (codes stay strings)."""
    return {
        "qid": result.qid, "variant_id": result.variant_id, "pattern": list(result.pattern),
        "gold": result.gold, "prediction": result.prediction, "correct": result.correct,
        "is_origin": result.is_origin, "origin": list(result.origin), "shown": list(result.shown),
        "gold_original": result.gold_original, "prediction_original": result.to_original(result.prediction),
        "sampled": result.sampled, "parse_error": result.parse_error,
    }


class VariantRecord(BaseModel):
    """A ``*_circular.jsonl`` line as read back (extra keys are derived and ignored)."""

    model_config = ConfigDict(extra="ignore")

    qid: str
    pattern: list[str]
    shown: list[str]
    origin: list[str]
    gold: str
    prediction: str | None
    sampled: bool = False
    parse_error: str | None = None

    def to_result(self) -> VariantResult:
        return VariantResult(self.qid, tuple(self.pattern), tuple(self.shown), tuple(self.origin), self.gold,
                             sampled=self.sampled, prediction=self.prediction, parse_error=self.parse_error)


def write_variants(path: Path, results: Sequence[VariantResult]) -> Path:
    """Atomically write one JSON line per variant."""
    with atomic_open(path) as handle:
        for result in results:
            handle.write(json.dumps(variant_record(result), ensure_ascii=False) + "\n")
    return path


def read_variants(path: Path) -> list[VariantResult]:
    """Variant results from a ``*_circular.jsonl`` file; a bad line names file and line."""
    results = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            results.append(VariantRecord.model_validate_json(line).to_result())
        except ValidationError as exc:
            reason = exc.errors()[0]["msg"]
            raise DataError(f"{path}:{number}: not a circular variant record ({reason})") from None
    return results


def metrics_payload(scores: CircularScores, settings: CircularSettings, **about: Any) -> dict[str, Any]:
    """The metrics JSON: ``about`` (dataset, model, ...) then settings, counts and metrics."""
    return {
        **about, "timestamp": now_timestamp(), "circular": settings.mode, "labels": settings.labels,
        "measures": MEASURES[settings.labels], "seed": settings.seed,
        "max_variants": settings.max_variants, "shuffle_options": settings.shuffle_options,
        "questions": scores.questions, "variants": scores.variants,
        "sampled_questions": scores.sampled_questions,
        **({"sampled": SAMPLED_NOTE} if scores.sampled_questions else {}),
        "scale": "fraction", "tie_rule": TIE_RULE, "metrics": scores.metrics,
    }


def write_circular_files(folder: Path, name: str, results: Sequence[VariantResult],
                         settings: CircularSettings, scores: CircularScores | None = None,
                         **about: Any) -> tuple[Path, Path, CircularScores]:
    """``<name>_circular.jsonl`` and ``<name>_circular_metrics.json`` in ``folder`` (``_circular_relabel``
    with relabelled options; ``scores``: the results' metrics when the score stage computed them)."""
    scores = scores or circular_metrics(results, settings.mode)
    stem = f"{name}_{circular_stem(settings)}"
    jsonl = write_variants(folder / f"{stem}.jsonl", results)
    payload = metrics_payload(scores, settings, **about)
    return jsonl, write_json(folder / f"{stem}_metrics.json", payload), scores


def write_domain_circular(output_dir: str | os.PathLike[str], result: DomainResult,
                          variants: Sequence[VariantResult], settings: CircularSettings,
                          scores: CircularScores | None = None) -> tuple[Path, Path]:
    """An ISSP domain's circular files beside its ``_detailed.json``."""
    jsonl, metrics, _ = write_circular_files(
        model_dir(output_dir, result.run or result.model), result.domain_name, variants, settings, scores,
        domain=result.domain_name, domain_id=result.domain_id, model=result.model)
    return jsonl, metrics


# ---------------------------------------------------------------------- summary table


def default_metric_types(mode: str) -> list[str]:
    """Columns of the summary table: origin accuracy and the run family's acc, perf, vote."""
    family = families(mode)[-1]  # type: ignore[arg-type]
    return ["acc_origin", f"acc_{family}", f"perf_{family}", f"vote_{family}"]


def _cell(value: float | None) -> str:
    return EMPTY_CELL if value is None or not math.isfinite(value) else f"{100 * value:.2f}"


def circular_table(results: Mapping[str, Mapping[str, Mapping[str, float]]], metric_types: Sequence[str],
                   datasets: Sequence[str] | None = None, versions: Mapping[str, str] | None = None,
                   modes: Mapping[str, str] | None = None) -> pd.DataFrame:
    """OpenCompass's circular summary: ``results[model][dataset][metric]`` (fractions).

    Rows are ``datasets`` (default: every dataset seen, in order); a dataset no model has
    is a row of ``-``. ``versions`` (a prompt hash) and ``modes`` (gen, ppl, ...) fill the
    second and third columns.
    """
    import pandas as pd

    models = list(results)
    names = list(datasets) if datasets is not None else list(dict.fromkeys(
        dataset for by_dataset in results.values() for dataset in by_dataset))
    header1 = ["dataset", "version", "mode"] + sum(
        ([model] + [EMPTY_CELL] * (len(metric_types) - 1) for model in models), [])
    rows = [[EMPTY_CELL] * 3 + list(metric_types) * len(models)]
    for name in names:
        if not any(name in results[model] for model in models):
            rows.append([name, EMPTY_CELL, EMPTY_CELL] + [EMPTY_CELL] * len(models) * len(metric_types))
            continue
        row = [name, (versions or {}).get(name, EMPTY_CELL), (modes or {}).get(name, EMPTY_CELL)]
        for model in models:
            values = results[model].get(name, {})
            row += [_cell(values.get(metric)) if metric in values else EMPTY_CELL for metric in metric_types]
        rows.append(row)
    return pd.DataFrame(rows, columns=header1)


def write_circular_table(folder: str | os.PathLike[str], table: pd.DataFrame,
                         stem: str = "circular_summary") -> tuple[Path, Path]:
    """``<stem>.md`` (first header row as header, like OpenCompass) and ``<stem>.csv`` (both header
    rows, then the datasets)."""
    folder = Path(folder)
    markdown, csv = folder / f"{stem}.md", folder / f"{stem}.csv"
    with atomic_open(markdown) as handle:
        handle.write(markdown_text([str(c) for c in table.columns], table.itertuples(index=False)))
    with atomic_open(csv) as handle:
        table.to_csv(handle, index=False, lineterminator="\n")
    return markdown, csv


def issp_stem(results: Sequence[DomainResult]) -> str:
    """The circular stem of ISSP results, read from their metric names."""
    relabelled = any(key.startswith("circular_relabel_") for r in results for key in r.metrics)
    return "circular_relabel" if relabelled else "circular"


def issp_circular_table(results: Sequence[DomainResult], mode: str, prompt_mode: str) -> pd.DataFrame:
    """Domains × (accuracy, circular acc/perf/vote, and over sampled orders) from the ISSP
    DomainResults; the mode column says whether options kept their codes or were relabelled."""
    family, stem = families(mode)[-1], issp_stem(results)  # type: ignore[arg-type]
    names = {"accuracy": "acc_origin", **{f"{stem}_{m}": f"{m}_{family}" for m in ("acc", "perf", "vote")},
             **{f"{stem}_sampled_{m}": f"{m}_sampled" for m in ("acc", "perf", "vote")}}
    present = [key for key in names if any(key in r.metrics for r in results)] or list(names)[:4]
    by_model: dict[str, dict[str, dict[str, float]]] = {}
    for result in sorted(results, key=lambda r: r.domain_id):
        by_model.setdefault(result.run or result.model, {})[result.domain_name] = {
            names[key]: value for key, value in result.metrics.items() if key in present}
    datasets = [r.domain_name for r in sorted(results, key=lambda r: r.domain_id)]
    labels = "relabelled" if stem == "circular_relabel" else "order-only"
    return circular_table(by_model, [names[key] for key in present], datasets,
                          modes={name: f"{prompt_mode}, {labels}" for name in datasets})


def write_run_circular_table(output_dir: str | os.PathLike[str], model: str, results: Sequence[DomainResult],
                             mode: str, prompt_mode: str) -> tuple[Path, Path]:
    """``circular_summary.md``/``.csv`` (``circular_relabel_summary`` when relabelled) of an ISSP
    run, beside ``summary.json``; ``model`` is the run's name."""
    return write_circular_table(model_dir(output_dir, model), issp_circular_table(results, mode, prompt_mode),
                                stem=f"{issp_stem(results)}_summary")
