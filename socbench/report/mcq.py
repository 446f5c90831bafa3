"""CP vs MCP as people read it: the original system's table per dataset (rows k-shot, a column per method)
as ``<dataset>_table.md``/``.csv``, its bars with chance (``_accuracy.png``), the circular summary, and the
MCQ section of ``report.html``; a run with MCP engine errors shows "incomplete" in MCP's columns."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from socbench.circular import circular_name
from socbench.files import write_text
from socbench.log.records import McqRecord
from socbench.log.write import write_mcq_log
from socbench.mcq.mcq_types import McqAnswers, McqData, McqPlan, McqScores
from socbench.mcq.scoring import COLUMNS, ENGINE_METHODS
from socbench.report.circular import circular_table, default_metric_types, write_circular_table
from socbench.report.output import finish_figure, fmt, markdown_text, new_figure

if TYPE_CHECKING:
    from socbench.log.read import McqRun

TABLE_MODE = "mcp"  # the circular summary table's ``mode`` column (OpenCompass: gen, ppl, ...)
INCOMPLETE = "incomplete"


def table_rows(record: McqRecord) -> list[dict[str, Any]]:
    """One row per k: ``{"k-shot": k, "CP-RAW": acc or None, ...}``; a column an engine error left out
    reads "incomplete"."""
    asked = [m for m in ENGINE_METHODS if "mcp" in record.methods and (m == "mcp" or record.tolerance)]
    left_out = {COLUMNS[m] for m in asked} if not record.complete else set()
    return [{"k-shot": k, **{c: INCOMPLETE if c in left_out else record.accuracy.get(str(k), {}).get(c)
                             for c in COLUMNS.values()}} for k in record.k_shots]


def table_markdown(rows: Sequence[Mapping[str, Any]], title: str, notes: Sequence[str] = ()) -> str:
    head = ["k-shot", *COLUMNS.values()]
    return markdown_text(head, [[fmt(row[h], 4, missing="–") for h in head] for row in rows], title, notes)


def table_notes(record: McqRecord) -> list[str]:
    """What a reader of the table needs: where shots came from, chance, the two CP-LNs."""
    shots = record.fewshot_split or "none (0-shot only)"
    return [f"Accuracy on {record.items} items; chance {record.chance_accuracy:.4f}. "
            f"Shots from: {shots} (seed {record.seed}).",
            "CP-LN divides by the option's token count, CP-LN-char by its character count "
            "(lm-evaluation-harness acc_norm); CP-RAW is lm-evaluation-harness acc.",
            *(record.circular or {}).get("notes", []),
            *([f"**Incomplete run: not a result.** MCP and MCP-Tolerance are left out: "
               f"{record.incomplete_reason}. Run the same command again: it sends exactly the requests "
               "that have no answer."] if not record.complete else [])]


def title(record: McqRecord) -> str:
    return f"{record.dataset} ({record.eval_split}, {record.items} items): {record.model}"


def write_mcq_files(output_dir: str | os.PathLike[str], model: str, data: McqData, plan: McqPlan,
                    answers: McqAnswers, scores: McqScores, wall_s: float | None = None,
                    backend: Mapping[str, str] | None = None) -> dict[str, Path]:
    """The dataset's records (``log.write.write_mcq_log``), table, CSV, plot and circular summary: paths."""
    import pandas as pd  # slow to load: only when writing

    record, files = write_mcq_log(output_dir, model, data, plan, answers, scores, wall_s, backend)
    rows = table_rows(record)
    write_text(files["table"], table_markdown(rows, title(record), table_notes(record)))
    numbers = [{k: None if v == INCOMPLETE else v for k, v in row.items()} for row in rows]
    frame = pd.DataFrame(numbers, columns=["k-shot", *COLUMNS.values()])
    write_text(files["csv"], frame.to_csv(index=False, float_format="%.6f"))
    accuracy_plot(numbers, record.chance_accuracy, title(record), files["plot"])
    by_k = (record.circular or {}).get("k") or {}
    if by_k:  # else an older run's table stays unnamed
        names = {circular_name(data.dataset, int(k)): found["metrics"] for k, found in by_k.items()}
        summary = circular_table({model: names}, default_metric_types(record.circular["mode"]),  # type: ignore[index]
                                 modes=dict.fromkeys(names, TABLE_MODE))
        write_circular_table(files["table"].parent, summary, stem=f"{data.dataset}_circular_summary")
    return {name: path for name, path in files.items() if name != "circular_table" or by_k}


def accuracy_plot(rows: Sequence[Mapping[str, Any]], chance: float, heading: str, path: Path) -> Path:
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
    return finish_figure(fig, ax, path, "accuracy", heading, legend=None, fontsize="medium")


def circular_rows(record: McqRecord) -> tuple[list[str], list[list[str]]]:
    """Per k the circular metrics (acc, more_N, perf, vote of each family), in OpenCompass's order."""
    by_k = (record.circular or {}).get("k") or {}
    names = list(dict.fromkeys(name for found in by_k.values() for name in found["metrics"]))
    return (["k-shot", "questions", *names],
            [[k, str(max(found["questions"].values(), default=0)),
              *(fmt(found["metrics"].get(n)) for n in names)] for k, found in by_k.items()])


def mcq_view(run: McqRun) -> tuple[str, tuple[list[str], list[list[str]]], str, str, tuple[list[str], list]]:
    """What section 7 of ``report.html`` shows of one run: its heading, the CP/MCP table (k-shot x method),
    its notes with chance, and its circular metrics (mode, table)."""
    record, head = run.record, ["k-shot", *COLUMNS.values()]
    cells = [[str(row["k-shot"]), *(fmt(row[c], 4) for c in COLUMNS.values())] for row in table_rows(record)]
    notes, mode = " ".join(table_notes(record)).replace("**", ""), (record.circular or {}).get("mode", "")
    return f"{title(record)} (run {run.run})", (head, cells), notes, mode, circular_rows(record)
