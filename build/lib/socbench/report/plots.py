"""Result plots (matplotlib, Agg canvas, no pyplot state), written atomically.

``domain_accuracy_plot``: one model's accuracy per domain with the strongest baseline
marked. ``model_scale_plot``: accuracy against parameter count across every model folder
under an output folder.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from socbench.metrics.baselines import best_baseline
from socbench.report.labels import domain_label, study_title
from socbench.report.output import json_safe, new_figure, save_figure
from socbench.types import DomainResult

_SIZE = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)([MB])(?![A-Za-z])", re.IGNORECASE)
_SCALE = {"M": 1e6, "B": 1e9}


def parameter_count(model: str) -> float | None:
    """Parameters from a size tag in a model name: ``135M``, ``1.7B``, ``7b``; None if absent.

    The last tag wins (``org/Model-2-7B`` -> 7e9). Mixture tags such as ``8x7B`` are not
    read (the active and total sizes differ), nor ``128k`` (a context length), so such
    models are left out of scale plots.
    """
    matches = _SIZE.findall(model.rsplit("/", 1)[-1])
    if not matches:
        return None
    number, unit = matches[-1]
    return float(number) * _SCALE[unit.upper()]


def domain_accuracy_plot(results: Sequence[DomainResult], path: Path, study: str = "Survey") -> Path:
    """Bar chart of accuracy per domain; a black tick marks each domain's strongest baseline.

    An incomplete domain (engine errors) gets no bar and "(incomplete)" under its name.
    """
    rows = sorted(results, key=lambda r: r.domain_id)
    fig = new_figure(max(6.0, 0.8 * len(rows) + 2), 4.5)
    ax = fig.add_subplot()
    xs = range(len(rows))
    accuracy = [json_safe(r.metrics.get("accuracy")) or 0.0 if r.complete else math.nan for r in rows]
    ax.bar(xs, accuracy, color="tab:blue", label="model accuracy")
    best = [best_baseline(r.baselines) for r in rows]
    marks = [(x, b[1]) for x, b in zip(xs, best, strict=True) if b is not None]
    if marks:
        ax.hlines([m[1] for m in marks], [m[0] - 0.4 for m in marks], [m[0] + 0.4 for m in marks],
                  colors="black", linewidth=2.5, label="strongest baseline")
    names = [domain_label(r.domain_name) + ("" if r.complete else " (incomplete)") for r in rows]
    ax.set_xticks(list(xs), names, rotation=35, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.set_title(f"{study} accuracy by domain: {rows[0].run or rows[0].model if rows else ''}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save_figure(fig, path)


@dataclass(frozen=True)
class ScalePlot:
    """What ``model_scale_plot`` did: the plot (or None), models plotted, and notes."""

    path: Path | None
    models: list[tuple[str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _read_summaries(output_dir: Path) -> list[dict[str, Any]]:
    summaries = []
    for path in sorted(output_dir.glob("*/summary.json")):
        payload = json.loads(path.read_text(encoding="utf-8"))
        payload.setdefault("model", path.parent.name)
        summaries.append(payload)
    return summaries


def model_scale_plot(output_dir: str | Path, name: str = "model_scale.png") -> ScalePlot:
    """Accuracy against parameter count over every ``<model>/summary.json`` in ``output_dir``.

    One thin line per domain and a thick line for the mean over the domains every plotted
    model ran (so the mean compares like with like). Needs at least two models with a size
    tag in their name; models without one, and incomplete runs, are left out with a note.
    """
    output_dir = Path(output_dir)
    sized, notes = [], []
    for summary in _read_summaries(output_dir):
        params = parameter_count(str(summary["model"]))
        if summary.get("complete") is False:
            notes.append(f"{summary['model']}: incomplete run (engine errors), left out")
        elif params is None:
            notes.append(f"{summary['model']}: no parameter count in the name, left out")
        else:
            sized.append((params, summary))
    if len(sized) < 2:
        notes.append(f"{len(sized)} model(s) with a size under {output_dir}: no scale plot")
        return ScalePlot(None, [(str(s['model']), p) for p, s in sized], notes)
    sized.sort(key=lambda pair: pair[0])
    path = _draw_scale(sized, output_dir / name)
    return ScalePlot(path, [(str(s["model"]), p) for p, s in sized], notes)


def _draw_scale(sized: list[tuple[float, dict[str, Any]]], path: Path) -> Path:
    per_model = [{row["domain"]: row["accuracy"] for row in s["domains"] if row["accuracy"] is not None}
                 for _, s in sized]
    xs = [params for params, _ in sized]
    fig = new_figure(8.0, 4.5)
    ax = fig.add_subplot()
    for domain in sorted(set().union(*per_model)):
        points = [(x, acc[domain]) for x, acc in zip(xs, per_model, strict=True) if domain in acc]
        ax.plot(*zip(*points, strict=True), marker=".", linewidth=0.8, alpha=0.5, label=domain)
    common = set.intersection(*(set(acc) for acc in per_model))
    if common:
        means = [sum(acc[d] for d in common) / len(common) for acc in per_model]
        ax.plot(xs, means, color="black", marker="o", linewidth=2.5, label=f"mean ({len(common)} domains)")
    ax.set_xscale("log")
    ax.set_xticks(xs, [size_label(x) for x in xs], minor=False)
    ax.set_xticks([], minor=True)
    ax.set_xlabel("parameters")
    ax.set_ylabel("accuracy")
    study = study_title((s.get("data") or {}).get("study") for _, s in sized)
    ax.set_title(f"{study} accuracy by model size")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save_figure(fig, path)


def size_label(params: float) -> str:
    return f"{params / 1e9:g}B" if params >= 1e9 else f"{params / 1e6:g}M"
