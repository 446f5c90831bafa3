"""Result files of one CP-vs-MCP run, written atomically under ``<output_dir>/<model slug>/mcq/``.

- ``<dataset>_predictions.jsonl``: one line per (item, k, method): id, gold, scores per
  option (source order), prediction, correct, the shots used;
- ``<dataset>_results.json``: accuracies ``{k: {column: accuracy}}``, splits, settings,
  the scoring definitions, chance level, MCP probability mass and timings;
- ``<dataset>_table.md`` / ``.csv``: the original system's table (rows k-shot, columns CP-RAW, CP-UN,
  CP-LN, CP-LN-char, MCP, MCP-Tolerance; empty where a method was not run);
- ``<dataset>_accuracy.png``: the same table as grouped bars with the chance level.

With ``--circular``, per k ``<dataset>_mcp_k<k>_circular.jsonl`` and ``_circular_metrics.json``
and one ``<dataset>_circular_summary.md``/``.csv``. A run with MCP engine errors is *incomplete*:
MCP's columns are left out (a wrong number is worse than none) and no circular files are written.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from socbench import errors
from socbench.mcq.circular import TABLE_MODE, circular_name, circular_notes
from socbench.mcq.prompts import MCP_ANSWER_PREFIX, UNCONDITIONAL_CONTEXT
from socbench.mcq.scoring import COLUMNS, METHODS, accuracies, chance_accuracy
from socbench.report.circular import (
    circular_table,
    default_metric_types,
    write_circular_files,
    write_circular_table,
)
from socbench.report.output import (
    atomic_open,
    fmt,
    json_safe,
    markdown_text,
    model_dir,
    new_figure,
    now_timestamp,
    save_figure,
    write_json,
)
from socbench.types import CircularSettings, McqAnswers, McqData, McqPlan, McqScores, Prediction

DEFINITIONS = {
    "CP-RAW": "sum of log P(' option text' | 'Question: q\\nAnswer:') (lm-evaluation-harness acc)",
    "CP-UN": f"CP-RAW minus log P(' option text' | '{UNCONDITIONAL_CONTEXT}')",
    "CP-LN": "CP-RAW divided by the option's token count (per-token length normalisation)",
    "CP-LN-char": "CP-RAW divided by the option text's character count (lm-evaluation-harness acc_norm)",
    "MCP": f"log P('{MCP_ANSWER_PREFIX}<letter>' | question, lettered options, 'Answer:')",
    "MCP-Tolerance": "log(P(' <letter>') + P(' <index digit>')): naming the option's digit also counts",
}
ENGINE_METHODS = ("mcp", "mcp_tolerance")  # scored from option requests: the ones an engine error leaves out


def prediction_record(pred: Prediction, split: str) -> dict[str, Any]:
    return {"id": pred.item_id, "split": split, "k_shot": pred.k_shot, "method": COLUMNS[pred.method],
            "gold": pred.gold, "prediction": pred.prediction, "correct": pred.correct,
            "scores": [json_safe(s) for s in pred.scores], "shot_ids": list(pred.shot_ids),
            "mass": json_safe(pred.mass)}


def table_rows(table: Mapping[int, Mapping[str, float]], k_shots: Sequence[int]) -> list[dict[str, Any]]:
    """One row per k: ``{"k-shot": k, "CP-RAW": acc or None, ...}``."""
    return [{"k-shot": k, **{COLUMNS[m]: table.get(k, {}).get(m) for m in METHODS}} for k in k_shots]


def table_markdown(rows: Sequence[Mapping[str, Any]], title: str, notes: Sequence[str] = ()) -> str:
    head = ["k-shot", *COLUMNS.values()]
    return markdown_text(head, [[fmt(row[h], 4, missing="–") for h in head] for row in rows], title, notes)


def table_notes(payload: Mapping[str, Any]) -> list[str]:
    """What a reader of the table needs: where shots came from, chance, the two CP-LNs."""
    shots = payload["fewshot_split"] or "none (0-shot only)"
    return [f"Accuracy on {payload['items']} items; chance {payload['chance_accuracy']:.4f}. "
            f"Shots from: {shots} (seed {payload['seed']}).",
            "CP-LN divides by the option's token count, CP-LN-char by its character count "
            "(lm-evaluation-harness acc_norm); CP-RAW is lm-evaluation-harness acc.",
            *(payload.get("circular") or {}).get("notes", []),
            *([f"**Incomplete run: not a result.** MCP and MCP-Tolerance are left out: "
               f"{payload['incomplete_reason']}. Run the same command again: it sends exactly the requests "
               "that have no answer."] if payload.get("complete") is False else [])]


def incomplete_reason(answers: McqAnswers) -> str | None:
    """``"K engine errors, first: <reason>"`` over MCP's option requests, or None when all were answered."""
    failed = [r.error for r in answers.options.values() if r.error is not None]
    return errors.incomplete_reason(len(failed), failed[0]) if failed else None


def reported_accuracies(predictions: Sequence[Prediction],
                        incomplete: str | None) -> dict[int, dict[str, float]]:
    """``accuracies``, less MCP's columns when requests failed: a wrong number is worse than none."""
    table = accuracies(predictions)
    if incomplete is None:
        return table
    return {k: {m: v for m, v in row.items() if m not in ENGINE_METHODS} for k, row in table.items()}


def mean_mass(predictions: Sequence[Prediction]) -> dict[int, dict[str, float]]:
    """Mean probability MCP puts on the scored codes, per k and method (format-following)."""
    masses: dict[tuple[int, str], list[float]] = defaultdict(list)
    for pred in predictions:
        if pred.mass is not None:
            masses[(pred.k_shot, pred.method)].append(pred.mass)
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for (k, method), values in sorted(masses.items()):
        out[k][COLUMNS[method]] = sum(values) / len(values)
    return dict(out)


def results_payload(data: McqData, plan: McqPlan, answers: McqAnswers, predictions: Sequence[Prediction],
                    model: str, wall_s: float | None, circular_report: CircularReport | None = None,
                    backend: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``<dataset>_results.json``: accuracies per k and method, settings, definitions, timings
    (and what the circular part wrote)."""
    incomplete = incomplete_reason(answers)
    table = reported_accuracies(predictions, incomplete)
    return {
        "dataset": data.dataset, "model": model, "engine": answers.identity, "backend": dict(backend or {}),
        "timestamp": now_timestamp(),
        "eval_split": data.eval_split, "fewshot_split": data.fewshot_split or None, "source": data.source,
        "items": len(data.items), "seed": plan.seed, "k_shots": list(plan.k_shots),
        "methods": list(plan.methods), "tolerance": plan.tolerance,
        "accuracy": {str(k): {COLUMNS[m]: acc for m, acc in row.items()} for k, row in table.items()},
        "chance_accuracy": chance_accuracy([len(item.choices) for item in data.items]),
        "mcp_probability_mass": {str(k): v for k, v in mean_mass(predictions).items()},
        "mcp_engine_errors": sum(r.error is not None for r in answers.options.values()),
        "complete": incomplete is None, "incomplete_reason": incomplete, "usage": answers.usage,
        "definitions": DEFINITIONS,
        "timing": {"engine_s": answers.seconds, "wall_s": wall_s, "engine_cache": answers.cache,
                   "loglikelihood_requests": len(answers.loglikelihoods),
                   "option_requests": len(answers.options)},
        **({"circular": circular_report.payload} if circular_report is not None else {}),
    }


@dataclass(frozen=True)
class CircularReport:
    """What the circular part of a run wrote; ``payload`` goes into ``<dataset>_results.json``."""

    payload: dict[str, Any]
    table_md: Path | None


def write_mcq_circular(folder: Path, model: str, plan: McqPlan, settings: CircularSettings,
                       scores: McqScores) -> CircularReport:
    """Per k the variants JSONL and metrics JSON; the summary table over k (none without MCP)."""
    by_k: dict[str, Any] = {}
    table_rows: dict[str, dict[str, float]] = {}
    for k, variants in scores.variants.items():
        name = circular_name(plan.dataset, k)
        jsonl, metrics, result = write_circular_files(folder, name, variants, settings, dataset=plan.dataset,
                                                      model=model, method="MCP", k_shot=k)
        table_rows[name] = result.metrics
        by_k[str(k)] = {"questions": result.questions, "variants": result.variants,
                        "sampled_questions": result.sampled_questions, "metrics": result.metrics,
                        "files": {"variants": str(jsonl), "metrics": str(metrics)}}
    md = csv = None
    if table_rows:
        table = circular_table({model: table_rows}, default_metric_types(settings.mode),
                               modes={name: TABLE_MODE for name in table_rows})
        md, csv = write_circular_table(folder, table, stem=f"{plan.dataset}_circular_summary")
    payload = {"mode": settings.mode, "max_variants": settings.max_variants, "seed": settings.seed,
               "method": "MCP" if by_k else None, "notes": list(circular_notes(plan.methods)),
               "scale": "fraction", "k": by_k,
               "table": {"markdown": str(md), "csv": str(csv)} if md else None}
    return CircularReport(payload, md)


def mcq_folder(output_dir: str | os.PathLike[str], model: str) -> Path:
    return model_dir(output_dir, model) / "mcq"


def mcq_files(folder: Path, dataset: str) -> dict[str, Path]:
    """A dataset's files, by the name the CLI gives them (the circular table exists with ``--circular``)."""
    names = {"results": "results.json", "predictions": "predictions.jsonl", "csv": "table.csv",
             "plot": "accuracy.png", "table": "table.md", "circular_table": "circular_summary.md"}
    return {name: folder / f"{dataset}_{suffix}" for name, suffix in names.items()}


def write_mcq_files(output_dir: str | os.PathLike[str], model: str, data: McqData, plan: McqPlan,
                    answers: McqAnswers, scores: McqScores, wall_s: float | None = None,
                    backend: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Write the five files of one run (with circular evaluation its circular files first); their paths."""
    import pandas as pd  # slow to load: only when writing

    folder = mcq_folder(output_dir, model)
    files = mcq_files(folder, data.dataset)
    predictions = scores.predictions
    incomplete = incomplete_reason(answers)
    circular = (write_mcq_circular(folder, model, plan, plan.circular_settings, scores)
                if plan.circular_settings is not None and incomplete is None else None)
    payload = results_payload(data, plan, answers, predictions, model, wall_s, circular, backend)
    split = {item.id: item.split for item in data.items}
    with atomic_open(files["predictions"]) as handle:
        for pred in predictions:
            handle.write(json.dumps(prediction_record(pred, split[pred.item_id]), allow_nan=False) + "\n")
    rows = table_rows(reported_accuracies(predictions, incomplete), plan.k_shots)
    title = f"{data.dataset} ({data.eval_split}, {len(data.items)} items): {model}"
    left_out = {COLUMNS[p.method] for p in predictions if p.method in ENGINE_METHODS} if incomplete else set()
    with atomic_open(files["table"]) as handle:
        marked = [{h: "incomplete" if h in left_out else v for h, v in row.items()} for row in rows]
        handle.write(table_markdown(marked, title, table_notes(payload)))
    with atomic_open(files["csv"]) as handle:
        frame = pd.DataFrame(rows, columns=["k-shot", *COLUMNS.values()])
        frame.to_csv(handle, index=False, float_format="%.6f")
    accuracy_plot(rows, payload["chance_accuracy"], title, files["plot"])
    write_json(files["results"], payload)
    written = circular is not None and circular.table_md is not None  # else an older run's table
    return {name: path for name, path in files.items() if name != "circular_table" or written}


def accuracy_plot(rows: Sequence[Mapping[str, Any]], chance: float, title: str, path: Path) -> Path:
    """Grouped bars: one group per method column, one bar per k; a dashed line at chance."""
    columns = [c for c in COLUMNS.values() if any(row[c] is not None for row in rows)]
    fig = new_figure(max(6.0, 1.2 * len(columns) + 2.5), 4.5)
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(rows))
    for i, row in enumerate(rows):
        xs = [j + (i - (len(rows) - 1) / 2) * width for j in range(len(columns))]
        ax.bar(xs, [row[c] or 0.0 for c in columns], width, label=f"{row['k-shot']}-shot")
    if math.isfinite(chance):
        ax.axhline(chance, color="black", linestyle="--", linewidth=1, label=f"chance ({chance:.2f})")
    ax.set_xticks(range(len(columns)), columns)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.set_title(title, fontsize="medium")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save_figure(fig, path)
