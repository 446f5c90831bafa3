"""Report figures across runs: per-domain bars (also a run's ``domain_accuracy.png``), a country x domain
heatmap (for papers: the page shows the grid as a table; thin cells grey) and model scale."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from socbench.log.read import ModelRun
from socbench.report.labels import country_label, domain_label, runs_grouping, study_title
from socbench.report.leaderboard import MIN_RESPONDENTS, Leaderboard
from socbench.report.output import finish_figure, new_figure, save_figure
from socbench.report.stand_in import GAINS, gain_figure

_SIZE = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)([MB])(?![A-Za-z])", re.IGNORECASE)
_SCALE = {"M": 1e6, "B": 1e9}


def parameter_count(model: str) -> float | None:
    """Parameters from the last size tag in a model name (``135M``, ``1.7B``, ``7b``), else None; not
    ``8x7B`` (active and total sizes differ) nor ``128k`` (a context length)."""
    matches = _SIZE.findall(model.rsplit("/", 1)[-1])
    return float(matches[-1][0]) * _SCALE[matches[-1][1].upper()] if matches else None


def size_label(params: float) -> str:
    return f"{params / 1e9:g}B" if params >= 1e9 else f"{params / 1e6:g}M"


DOMAIN_BARS = "domain_accuracy_by_run.png"
HEATMAP = "country_domain_heatmap.png"
SCALE = "model_scale.png"
PANELS = 6  # the heatmap's runs at most


@dataclass(frozen=True)
class Figures:
    """Figure name -> path for those drawn, and a note for each one left out."""

    paths: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def domain_bars(rows: Sequence[dict[str, Any]], runs: Sequence[str], path: Path, title: str) -> Path:
    """Accuracy per domain, one bar per run (``rows``: lines with their ``run``) with its 95% CI and a tick at
    the strongest baseline; an incomplete domain gets no bar and "(incomplete)" under its name."""
    domains = sorted({(r["domain_id"] or 99, r["domain"]) for r in rows})
    by_key = {(r["run"], r["domain"]): r for r in rows}
    unfinished = {r["domain"] for r in rows if r.get("complete") is False}
    width = 0.8 / max(len(runs), 1)
    fig = new_figure(max(7.0, 1.1 * len(domains) * max(1, len(runs) / 2) + 3), 4.8)
    ax = fig.add_subplot()
    for i, run in enumerate(runs):
        bars = [(x - 0.4 + width * (i + 0.5), row) for x, (_, domain) in enumerate(domains)
                if (row := by_key.get((run, domain))) is not None and math.isfinite(row["accuracy"])]
        err = [[_gap(r["accuracy"], r["accuracy_ci_low"]) for _, r in bars],
               [_gap(r["accuracy_ci_high"], r["accuracy"]) for _, r in bars]]
        ax.bar([p for p, _ in bars], [r["accuracy"] for _, r in bars], width * 0.9, yerr=err, capsize=2,
               label=run)
        ticks = [(p, b) for p, r in bars if math.isfinite(b := r["best_baseline_accuracy"])]
        if ticks:
            ax.hlines([b for _, b in ticks], [p - width / 2 for p, _ in ticks],
                      [p + width / 2 for p, _ in ticks],
                      colors="black", linewidth=2, label="strongest baseline" if i == 0 else None)
    ax.set_xticks(range(len(domains)), [domain_label(d) + (" (incomplete)" if d in unfinished else "")
                                        for _, d in domains], rotation=30, ha="right")
    ax.set_ylim(0, 1)
    return finish_figure(fig, ax, path, "accuracy (95% CI)", title)


def _gap(a: float, b: float) -> float:
    return max(0.0, a - b) if math.isfinite(a) and math.isfinite(b) else 0.0


def heat_rows(run: ModelRun) -> tuple[list[tuple[str, list[dict[str, Any] | None]]], int]:
    """Country (or group) x domain cells of a run (each domain's ``per_country`` row, None where it has
    none), the groups with ``MIN_RESPONDENTS`` respondents in some domain, and how many are left out:
    the heatmap's and the page's grid."""
    cells = {(c, d.domain): row for d in run.domains for c, row in d.stored.per_country.items()}
    domains = [d.domain for d in run.domains]
    countries = sorted({c for c, _ in cells}, key=lambda c: country_label(c, run.grouping))
    shown = [c for c in countries
             if any(cells[c, d]["respondents"] >= MIN_RESPONDENTS for d in domains if (c, d) in cells)]
    return ([(country_label(c, run.grouping), [cells.get((c, d)) for d in domains]) for c in shown],
            len(countries) - len(shown))


def country_domain_heatmap(board: Leaderboard, path: Path) -> Path | None:
    """Accuracy per country x domain, one panel per run (first ``PANELS`` runs), one colour
    scale; None when no country has enough respondents (nothing to draw)."""
    panels = [(run, rows) for run in board.ranked()[:PANELS] if (rows := heat_rows(run)[0])]
    if not panels:
        return None
    most = max(len(rows) for _, rows in panels)
    cols = max(len(run.domains) for run, _ in panels)
    fig = new_figure(min(34.0, len(panels) * (2.5 + 0.95 * cols) + 1.5), max(3.5, 0.34 * most + 2.4))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    image = None
    for ax, (run, rows) in zip(axes, panels, strict=True):
        values, people = (np.array([[math.nan if c is None else c[key] for c in cells] for _, cells in rows],
                                   dtype=float) for key in ("accuracy", "respondents"))
        thin = np.nan_to_num(people) < MIN_RESPONDENTS
        ax.imshow(np.where(thin, 1.0, np.nan), vmin=0, vmax=1, cmap="Greys", alpha=0.15, aspect="auto")
        image = ax.imshow(np.ma.masked_where(thin | ~np.isfinite(values), values), vmin=0, vmax=1,
                          cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(run.domains)), [domain_label(d.domain) for d in run.domains], rotation=40,
                      ha="right", fontsize="small")
        ax.set_yticks(range(len(rows)), [name for name, _ in rows], fontsize="small")
        ax.set_title(run.run, fontsize="medium")
        for (y, x), v in np.ndenumerate(values):
            if n := int(np.nan_to_num(people[y, x])):  # a thin cell: its n only, greyed
                shown = not thin[y, x]
                ax.text(x, y, f"{v:.2f}\nn={n}" if shown else f"n={n}", ha="center", va="center", fontsize=6,
                        color=("white" if v < 0.6 else "black") if shown else "0.45")
    fig.colorbar(image, ax=list(axes), label="accuracy", shrink=0.8)
    by = runs_grouping(run for run, _ in panels)
    fig.suptitle(f"Accuracy by {by} and domain (grey: fewer than {MIN_RESPONDENTS} respondents)")
    return save_figure(fig, path)


def model_scale(board: Leaderboard, path: Path) -> Path:
    """Accuracy against parameter count (from the model's name) over the complete runs: one thin line per
    domain and a thick one for the mean over the domains every plotted run has (like with like)."""
    sized = sorted((params, run.run) for run in board.runs if (params := parameter_count(run.model)))
    per_run = [{r["domain"]: r["accuracy"] for r in board.domains if r["run"] == name} for _, name in sized]
    xs = [params for params, _ in sized]
    fig = new_figure(8.0, 4.5)
    ax = fig.add_subplot()
    for domain in sorted(set().union(*per_run)):
        points = [(x, acc[domain]) for x, acc in zip(xs, per_run, strict=True) if domain in acc]
        ax.plot(*zip(*points, strict=True), marker=".", linewidth=0.8, alpha=0.5, label=domain_label(domain))
    common = set.intersection(*(set(acc) for acc in per_run))
    if common:
        means = [sum(acc[d] for d in common) / len(common) for acc in per_run]
        ax.plot(xs, means, color="black", marker="o", linewidth=2.5, label=f"mean ({len(common)} domains)")
    ax.set_xscale("log")
    ax.set_xticks(sorted(set(xs)), [size_label(x) for x in sorted(set(xs))], minor=False)
    ax.set_xticks([], minor=True)
    ax.set_xlabel("parameters")
    title = f"{study_title(run.study for run in board.runs)} accuracy by model size"
    return finish_figure(fig, ax, path, "accuracy", title)


def draw_figures(board: Leaderboard, out_dir: Path) -> Figures:
    """All report figures into ``out_dir``; the scale plot is left out (with a note) when the
    runs' model names give fewer than two distinct parameter counts. A figure not drawn this time is
    removed: never a stale plot from an earlier report."""
    paths: dict[str, Path | None] = {}
    notes = [] if board.runs else ["no complete run: no figures"]  # nothing may be drawn as a score
    if board.runs:  # what the complete runs allow into ``paths`` (None: left out), a note on what was not
        study = study_title(run.study for run in board.runs)
        paths["domain_bars"] = domain_bars(board.domains, [row["run"] for row in board.overall],
                                           out_dir / DOMAIN_BARS, f"{study} accuracy by domain and run")
        paths["heatmap"] = country_domain_heatmap(board, out_dir / HEATMAP)
        if paths["heatmap"] is None:
            by = " or ".join(sorted({run.grouping for run in board.runs}))  # a province is no country
            notes.append(f"no {by} has {MIN_RESPONDENTS} or more respondents in a domain: no {by} heatmap")
        if len(board.runs) > PANELS:
            notes.append(f"heatmap shows the {PANELS} most accurate of {len(board.runs)} runs")
        sizes = {size for run in board.runs if (size := parameter_count(run.model)) is not None}
        if len(sizes) >= 2:
            paths["model_scale"] = model_scale(board, out_dir / SCALE)
            notes += [f"{run.run}: no parameter count in the model's name, left out of the scale plot"
                      for run in board.runs if parameter_count(run.model) is None]
        elif sizes:
            notes.append(f"every run is of one model size ({size_label(next(iter(sizes)))}): no scale plot "
                         "(it needs runs of at least two sizes)")
        else:
            notes.append("no run's model name carries a size (such as 135M or 1.7B): no scale plot")
        paths["gains"] = gain_figure(board.runs, out_dir / GAINS)
    for name in {DOMAIN_BARS, HEATMAP, SCALE, GAINS} - {path.name for path in paths.values() if path}:
        (out_dir / name).unlink(missing_ok=True)
    return Figures({name: path for name, path in paths.items() if path}, notes)
