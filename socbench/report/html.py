"""The whole report: leaderboard files, figures and one self-contained ``report.html``.

``report.html`` needs nothing but a browser: figures are embedded as base64 PNG, the CSS
is inline, and there are no scripts, fonts or links to fetch, so it reads offline and
can be mailed or attached to a CI run as one file.
"""

from __future__ import annotations

import base64
import html
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from socbench.metrics.uncertainty import BOOTSTRAP_SEED, DEFAULT_RESAMPLES
from socbench.report.figures import Figures, draw_figures
from socbench.report.incomplete import INCOMPLETE_HEAD, INCOMPLETE_NOTE, incomplete_cells, incomplete_notes
from socbench.report.leaderboard import (
    COMPARE_HEAD,
    DOMAIN_HEAD,
    NOTES,
    OVERALL_HEAD,
    Leaderboard,
    ModelRun,
    compare_cells,
    domain_cells,
    leaderboard,
    overall_cells,
    write_leaderboard,
)
from socbench.report.output import atomic_open, fmt, now_timestamp

REPORT_FOLDER = "report"
CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1400px;
       padding: 0 1rem; color: #1d1d1f; line-height: 1.45; }
h1 { margin-bottom: 0.2rem; }
h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; }
.meta, .note { color: #555; font-size: 0.9rem; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.8rem; }
th, td { border: 1px solid #d0d0d0; padding: 0.3rem 0.55rem; text-align: right; white-space: nowrap; }
th { background: #f2f4f7; text-align: center; white-space: normal; min-width: 3.5rem; }
td:nth-child(-n+3) { text-align: left; }
.scroll { overflow-x: auto; }
tr:nth-child(even) td { background: #fafafa; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5rem 0; }
.breakdowns { display: flex; flex-wrap: wrap; gap: 1.5rem; }
"""


@dataclass(frozen=True)
class ReportPaths:
    """Where ``write_report`` put everything, the leaderboard it computed, and notes."""

    out_dir: Path
    leaderboard_md: Path
    leaderboard_csv: Path
    html: Path
    figures: dict[str, Path]
    leaderboard: Leaderboard
    notes: list[str] = field(default_factory=list)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<div class='scroll'><table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table></div>"


def _image(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def pooled_breakdowns(run: ModelRun) -> dict[str, dict[str, tuple[int, float]]]:
    """``{attribute: {group: (items, accuracy)}}`` pooled over domains (item-weighted)."""
    totals: dict[str, dict[str, list[float]]] = {}
    for dom in run.domains:
        for attribute, groups in dom.stored.breakdowns.items():
            for group, values in groups.items():
                n, acc = values.get("n") or 0.0, values.get("accuracy")
                if n > 0 and acc is not None and math.isfinite(acc):
                    entry = totals.setdefault(attribute, {}).setdefault(group, [0.0, 0.0])
                    entry[0] += n
                    entry[1] += n * acc
    return {attr: {g: (int(n), s / n) for g, (n, s) in sorted(groups.items())}
            for attr, groups in totals.items()}


def _breakdown_section(board: Leaderboard) -> str:
    parts = []
    by_name = {run.run: run for run in board.runs}
    for run in (by_name[row["run"]] for row in board.overall):  # leaderboard order
        pooled = pooled_breakdowns(run)
        if not pooled:
            continue
        rows = [[attr, group, str(n), fmt(acc)]
                for attr, groups in pooled.items() for group, (n, acc) in groups.items()]
        parts.append(f"<div><h3>{html.escape(run.run)}</h3>"
                     f"{_table(('attribute', 'group', 'items', 'accuracy'), rows)}</div>")
    if not parts:
        return "<p class='note'>No persona attributes were recorded with these results.</p>"
    return ("<p class='note'>Accuracy by persona group, pooled over domains (item-weighted).</p>"
            f"<div class='breakdowns'>{''.join(parts)}</div>")


def render_html(board: Leaderboard, figures: Figures, title: str) -> str:
    """The report page as one HTML string (figures embedded)."""
    domains = sorted(board.domains, key=lambda r: (r["domain_id"] or 99, r["domain"], -(r["accuracy"] or 0)))
    sections = [
        f"<h1>{html.escape(title)}</h1>",
        f"<p class='meta'>Generated {html.escape(now_timestamp())}; {len(board.runs)} run(s), "
        f"{len(board.domains)} run x domain result(s).</p>",
        "<h2>Leaderboard</h2>",
        _table(OVERALL_HEAD, [overall_cells(i, r) for i, r in enumerate(board.overall, 1)]),
        f"<p class='note'>{html.escape(NOTES)}</p>",
    ]
    if board.incomplete:
        sections += ["<h2 id='incomplete'>Incomplete runs (not ranked)</h2>",
                     f"<p class='note'>{html.escape(INCOMPLETE_NOTE)}</p>",
                     _table(INCOMPLETE_HEAD, [incomplete_cells(r) for r in board.incomplete])]
    if "domain_bars" in figures.paths:
        sections.append(_image(figures.paths["domain_bars"], "accuracy by domain and run"))
    sections += ["<h2>By domain</h2>", _table(DOMAIN_HEAD, [domain_cells(r) for r in domains])]
    if board.comparisons:
        sections += ["<h2>Paired comparisons</h2>",
                     _table(COMPARE_HEAD, [compare_cells(*c) for c in board.comparisons])]
    sections.append("<h2>Countries</h2>")
    if "heatmap" in figures.paths:
        sections.append(_image(figures.paths["heatmap"], "accuracy by country and domain"))
    sections += ["<h2>Persona groups</h2>", _breakdown_section(board), "<h2>Model size</h2>"]
    if "model_scale" in figures.paths:
        sections.append(_image(figures.paths["model_scale"], "accuracy by model size"))
    failed = [f"{run.run}: domain {k} failed ({v})" for run in board.runs for k, v in run.failed.items()]
    notes = [*figures.notes, *failed]
    if notes:
        sections.append("<ul class='note'>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(sections) + "\n</body></html>\n")


def write_report(output_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None, *,
                 n_resamples: int = DEFAULT_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> ReportPaths:
    """Read every run under ``output_dir``; write the leaderboard, figures and report.html.

    ``out_dir`` defaults to ``<output_dir>/report``. Raises DataError when there is nothing
    to report.
    """
    output_dir = Path(output_dir).expanduser()
    board = leaderboard(output_dir, n_resamples=n_resamples, seed=seed)
    out = Path(out_dir).expanduser() if out_dir is not None else output_dir / REPORT_FOLDER
    out.mkdir(parents=True, exist_ok=True)
    md, csv = write_leaderboard(board, out)
    figures = draw_figures(board, output_dir, out)
    page = out / "report.html"
    with atomic_open(page) as handle:
        handle.write(render_html(board, figures, f"socbench report: {output_dir.resolve().name}"))
    notes = [*figures.notes, *incomplete_notes(board.incomplete)]
    return ReportPaths(out, md, csv, page, figures.paths, board, notes)
