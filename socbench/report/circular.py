"""Circular evaluation in the report: OpenCompass's ``CircularSummarizer`` table (header ``dataset, version,
mode, <model>, -, ...``, a row of metric names, a row per dataset in percent, ``-`` where missing) for an
ISSP run and an MCQ dataset, and the rows of section 5 of ``report.html`` from each run's circular records."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from socbench.circular import families
from socbench.files import write_text
from socbench.report.labels import domain_label
from socbench.report.output import LABELS, fmt, markdown_text, model_dir
from socbench.types import DomainResult

if TYPE_CHECKING:
    import pandas as pd

    from socbench.log.read import ModelRun

EMPTY_CELL = "-"


def default_metric_types(mode: str) -> list[str]:
    """Columns of the summary table: origin accuracy and the run family's acc, perf, vote."""
    family = families(mode)[-1]  # type: ignore[arg-type]
    return ["acc_origin", f"acc_{family}", f"perf_{family}", f"vote_{family}"]


def _cell(value: float | None) -> str:
    return EMPTY_CELL if value is None or not math.isfinite(value) else f"{100 * value:.2f}"


def circular_table(results: Mapping[str, Mapping[str, Mapping[str, float]]], metric_types: Sequence[str],
                   modes: Mapping[str, str] | None = None) -> pd.DataFrame:
    """OpenCompass's circular summary of ``results[model][dataset][metric]`` (fractions); a row per
    dataset seen, in the order seen; ``modes`` fills the 3rd column (no versions: ``-``)."""
    import pandas as pd

    header1 = ["dataset", "version", "mode"] + sum(
        ([model] + [EMPTY_CELL] * (len(metric_types) - 1) for model in results), [])
    names = dict.fromkeys(dataset for by_dataset in results.values() for dataset in by_dataset)
    rows = [[name, EMPTY_CELL, (modes or {}).get(name, EMPTY_CELL), *(
        _cell(results[model].get(name, {}).get(metric)) for model in results for metric in metric_types)]
        for name in names]
    return pd.DataFrame([[EMPTY_CELL] * 3 + list(metric_types) * len(results), *rows], columns=header1)


def write_circular_table(folder: str | os.PathLike[str], table: pd.DataFrame,
                         stem: str = "circular_summary") -> tuple[Path, Path]:
    """``<stem>.md`` (first header row as header, like OpenCompass) and ``<stem>.csv`` (both header
    rows, then the datasets)."""
    folder = Path(folder)
    return (write_text(folder / f"{stem}.md", markdown_text([str(c) for c in table.columns],
                                                            table.itertuples(index=False))),
            write_text(folder / f"{stem}.csv", table.to_csv(index=False, lineterminator="\n")))


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
    by_model: dict[str, dict[str, dict[str, float]]] = {}  # a row per domain, by id
    for result in sorted(results, key=lambda r: r.domain_id):
        by_model.setdefault(result.run or result.model, {})[result.domain_name] = {
            names[key]: value for key, value in result.metrics.items() if key in present}
    labels = "relabelled" if stem == "circular_relabel" else "order-only"
    return circular_table(by_model, [names[key] for key in present],
                          modes={r.domain_name: f"{prompt_mode}, {labels}" for r in results})


def write_run_circular_table(output_dir: str | os.PathLike[str], model: str, results: Sequence[DomainResult],
                             mode: str, prompt_mode: str) -> tuple[Path, Path]:
    """An ISSP run's ``circular[_relabel]_summary.md``/``.csv`` beside ``summary.json``."""
    return write_circular_table(model_dir(output_dir, model), issp_circular_table(results, mode, prompt_mode),
                                stem=f"{issp_stem(results)}_summary")


FAMILY_LABELS, LABEL_MODES = LABELS["circular_families"], LABELS["circular_labels"]


def circular_rows(run: ModelRun) -> list[list[str]]:
    """One row per (domain file, family) of a run's circular metrics."""
    return [[domain_label(str(record.domain)), run.run, LABEL_MODES.get(record.labels, record.labels), label,
             str(record.questions.get(family, "n/a")), *(fmt(record.metrics.get(key)) for key in (
                 "acc_origin", f"acc_{family}", f"perf_{family}", f"vote_{family}"))]
            for record in run.circular.values() for family, label in FAMILY_LABELS.items()
            if f"perf_{family}" in record.metrics]
