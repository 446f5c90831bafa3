"""Report figures across runs: per-domain bars, country x domain heatmap, model scale.

The heatmap file is for papers and slides (the page shows the same grid as a table); cells
with fewer than ``MIN_RESPONDENTS`` respondents are grey without a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from socbench.report.labels import country_label, domain_label, study_title
from socbench.report.leaderboard import MIN_RESPONDENTS, Leaderboard, ModelRun, pooled_items
from socbench.report.output import new_figure, save_figure
from socbench.report.plots import model_scale_plot, parameter_count, size_label

DOMAIN_BARS = "domain_accuracy_by_run.png"
HEATMAP = "country_domain_heatmap.png"
SCALE = "model_scale.png"


@dataclass(frozen=True)
class Figures:
    """Figure name -> path for those drawn, and a note for each one left out."""

    paths: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def domain_bars(board: Leaderboard, path: Path) -> Path:
    """Accuracy per domain, one bar per run with its 95% CI; a black tick marks the
    strongest baseline on that run's items."""
    domains = sorted({(r["domain_id"] or 99, r["domain"]) for r in board.domains})
    runs = [row["run"] for row in board.overall]
    by_key = {(r["run"], r["domain"]): r for r in board.domains}
    width = 0.8 / max(len(runs), 1)
    fig = new_figure(max(7.0, 1.1 * len(domains) * max(1, len(runs) / 2) + 3), 4.8)
    ax = fig.add_subplot()
    for i, run in enumerate(runs):
        xs, acc, err, ticks = [], [], [[], []], []
        for x, (_, domain) in enumerate(domains):
            row = by_key.get((run, domain))
            if row is None or not math.isfinite(row["accuracy"]):
                continue
            pos = x - 0.4 + width * (i + 0.5)
            xs.append(pos)
            acc.append(row["accuracy"])
            err[0].append(_gap(row["accuracy"], row["accuracy_ci_low"]))
            err[1].append(_gap(row["accuracy_ci_high"], row["accuracy"]))
            ticks.append((pos, row["best_baseline_accuracy"]))
        ax.bar(xs, acc, width * 0.9, yerr=err, capsize=2, label=run)
        ticks = [(p, b) for p, b in ticks if math.isfinite(b)]
        if ticks:
            ax.hlines([b for _, b in ticks], [p - width / 2 for p, _ in ticks],
                      [p + width / 2 for p, _ in ticks],
                      colors="black", linewidth=2, label="strongest baseline" if i == 0 else None)
    ax.set_xticks(range(len(domains)), [domain_label(d) for _, d in domains], rotation=30, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy (95% CI)")
    ax.set_title(f"{study_title(run.study for run in board.runs)} accuracy by domain and run")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save_figure(fig, path)


def _gap(a: float, b: float) -> float:
    return max(0.0, a - b) if math.isfinite(a) and math.isfinite(b) else 0.0


def country_domain_accuracy(run: ModelRun) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Accuracy and respondents per country (rows, by name) and domain (columns, in domain order);
    countries with fewer than ``MIN_RESPONDENTS`` respondents in every domain are left out."""
    frame = pooled_items(run)
    columns = [d.domain for d in run.domains]
    accuracy = frame.pivot_table(index="country_code", columns="domain", values="correct", aggfunc="mean")
    people = frame.pivot_table(index="country_code", columns="domain", values="respondent", aggfunc="nunique")
    accuracy, people = accuracy.reindex(columns=columns), people.reindex(columns=columns).fillna(0)
    by = run.grouping
    keep = sorted((c for c in people.index if (people.loc[c] >= MIN_RESPONDENTS).any()),
                  key=lambda c: country_label(c, by))
    return accuracy.reindex(keep), people.reindex(keep)


def country_domain_heatmap(board: Leaderboard, path: Path, max_panels: int = 6) -> Path | None:
    """Accuracy per country x domain, one panel per run (first ``max_panels`` runs), one colour
    scale; None when no country has enough respondents (nothing to draw)."""
    runs = {run.run: run for run in board.runs}
    order = [row["run"] for row in board.overall][:max_panels]
    tables = [(name, *country_domain_accuracy(runs[name])) for name in order]
    tables = [t for t in tables if len(t[1].index)]
    if not tables:
        return None
    rows = max(len(t.index) for _, t, _ in tables)
    cols = max(len(t.columns) for _, t, _ in tables)
    fig = new_figure(min(34.0, len(tables) * (2.5 + 0.95 * cols) + 1.5), max(3.5, 0.34 * rows + 2.4))
    axes = fig.subplots(1, len(tables), squeeze=False)[0]
    image = None
    for ax, (name, table, people) in zip(axes, tables, strict=True):
        values = table.to_numpy(dtype=float)
        thin = people.to_numpy(dtype=float) < MIN_RESPONDENTS
        ax.imshow(np.where(thin, 1.0, np.nan), vmin=0, vmax=1, cmap="Greys", alpha=0.15, aspect="auto")
        image = ax.imshow(np.ma.masked_where(thin | ~np.isfinite(values), values), vmin=0, vmax=1,
                          cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(table.columns)), [domain_label(d) for d in table.columns], rotation=40,
                      ha="right", fontsize="small")
        by = runs[name].grouping
        ax.set_yticks(range(len(table.index)), [country_label(c, by) for c in table.index], fontsize="small")
        ax.set_title(name, fontsize="medium")
        for (y, x), v in np.ndenumerate(values):
            n = int(people.iat[y, x])
            if n and not thin[y, x]:
                ax.text(x, y, f"{v:.2f}\nn={n}", ha="center", va="center", fontsize=6,
                        color="white" if v < 0.6 else "black")
            elif n:
                ax.text(x, y, f"n={n}", ha="center", va="center", fontsize=6, color="0.45")
    fig.colorbar(image, ax=list(axes), label="accuracy", shrink=0.8)
    groupings = {runs[name].grouping for name, *_ in tables}
    by = groupings.pop() if len(groupings) == 1 else "group"
    fig.suptitle(f"Accuracy by {by} and domain (grey: fewer than {MIN_RESPONDENTS} respondents)")
    return save_figure(fig, path)


def draw_figures(board: Leaderboard, output_dir: Path, out_dir: Path) -> Figures:
    """All report figures into ``out_dir``; the scale plot is left out (with a note) when the
    runs' model names give fewer than two distinct parameter counts."""
    if not board.runs:  # every run is incomplete: nothing may be drawn as a score
        for name in (DOMAIN_BARS, HEATMAP, SCALE):
            (out_dir / name).unlink(missing_ok=True)
        return Figures({}, ["no complete run: no figures"])
    paths = {"domain_bars": domain_bars(board, out_dir / DOMAIN_BARS)}
    notes = []
    heatmap = country_domain_heatmap(board, out_dir / HEATMAP)
    if heatmap is None:
        (out_dir / HEATMAP).unlink(missing_ok=True)
        notes.append(f"no country has {MIN_RESPONDENTS} or more respondents in a domain: no country heatmap")
    else:
        paths["heatmap"] = heatmap
    if len(board.runs) > 6:
        notes.append(f"heatmap shows the 6 most accurate of {len(board.runs)} runs")
    sizes = {size for run in board.runs if (size := parameter_count(run.model)) is not None}
    if len(sizes) >= 2:
        # model_scale_plot writes to output_dir / name; an absolute name puts it in out_dir.
        scale = model_scale_plot(output_dir, name=str((out_dir / SCALE).resolve()))
        if scale.path is not None:
            paths["model_scale"] = scale.path
        notes += scale.notes
    elif sizes:
        notes.append(f"every run is of one model size ({size_label(next(iter(sizes)))}): no scale plot "
                     "(it needs runs of at least two sizes)")
    else:
        notes.append("no run's model name carries a size (such as 135M or 1.7B): no scale plot")
    if "model_scale" not in paths:
        (out_dir / SCALE).unlink(missing_ok=True)  # never leave a stale plot from an earlier report
    return Figures(paths, notes)
