"""The whole report: leaderboard files, figures and one self-contained ``report.html`` (figures as base64
PNG, inline CSS, no scripts, fonts or links), so it reads offline and can be mailed or attached to a CI
run as one file, filled in from ``templates/report.html.j2``. Its sections run from the answer to the
definitions of every number. The leaderboard's tables are built once: the same cells fill
``leaderboard.md``, the console and ``report.html``."""

from __future__ import annotations

import base64
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from socbench.engines.usage import usage_text
from socbench.files import write_text
from socbench.log.read import ModelRun
from socbench.log.summary import ALIGNMENT_SCORES as ALIGNMENT
from socbench.log.summary import DISTRIBUTION_SCORES as SCORES
from socbench.log.summary import GAIN_KEYS
from socbench.metrics.numeric import numeric_rows
from socbench.metrics.uncertainty import BOOTSTRAP_SEED, DEFAULT_RESAMPLES, PairedComparison
from socbench.multi_select import set_rows
from socbench.report.answers import answer_markdown, domain_answers, persona_answers, small_note
from socbench.report.circular import circular_rows
from socbench.report.figures import Figures, draw_figures
from socbench.report.html_sections import ENV, NOTES
from socbench.report.labels import (
    accuracy_text,
    baseline_label,
    domain_label,
    grouping_words,
    p_text,
    runs_grouping,
    signed,
    study_title,
    weights_off_text,
)
from socbench.report.leaderboard import DRAW_SCORES, Leaderboard, leaderboard
from socbench.report.mcq import mcq_view
from socbench.report.output import HEADS, fmt, markdown_table, now_timestamp
from socbench.report.stand_in import gain_view
from socbench.report.units import by_study, unit_table, units_markdown
from socbench.types import COUNTRY
from socbench.yardsticks import HEADLINE_KEYS

CSV_COLUMNS = ("rank", "tied", "run", "model", "variant", "domain_id", "domain", "domains", "respondents",
               "items", "accuracy", "accuracy_ci_low", "accuracy_ci_high", "best_baseline",
               "best_baseline_accuracy", "margin_over_best_baseline", "domains_not_above_baseline",
               "per_question_macro_f1", "distribution_level", *(f"{name}_score" for name in SCORES),
               *ALIGNMENT, "parse_failure_rate", "failed_domains", "complete", "engine_errors",
               "incomplete_domains", "first_engine_error", *HEADLINE_KEYS, *DRAW_SCORES, *GAIN_KEYS)


def overall_cells(row: dict[str, Any]) -> list[str]:
    rank = f"{row['rank']} (tied)" if row.get("tied") else str(row["rank"])
    return [rank, row["run"], row["model"], row["variant"], str(row["domains"]),
            str(row["respondents"]), str(row["items"]), accuracy_text(row),
            fmt(row["best_baseline_accuracy"]), signed(row["margin_over_best_baseline"]),
            f"{row['domains_not_above_baseline']} of {row['domains']}", fmt(row["per_question_macro_f1"]),
            fmt(row["parse_failure_rate"])]


def incomplete_cells(row: dict[str, Any]) -> list[str]:
    return [row["run"], row["model"], str(row["domains"]), row["incomplete_domains"], str(row["items"]),
            str(row["engine_errors"]), str(row["parse_failures"]), str(row["first_engine_error"])[:160]]


def domain_title(row: dict[str, Any]) -> str:
    """"Role of Government (8)"; the name alone where the results do not record the id; a run's line (domain
    "ALL"): "all domains"."""
    if row["domain"] == "ALL":
        return "all domains"
    known = isinstance(row["domain_id"], int)
    return domain_label(row["domain"]) + (f" ({row['domain_id']})" if known else "")


def domain_cells(row: dict[str, Any]) -> list[str]:
    return [domain_title(row), row["run"], str(row["respondents"]), str(row["items"]), accuracy_text(row),
            baseline_label(row["best_baseline"]), fmt(row["best_baseline_accuracy"]),
            signed(row["margin_over_best_baseline"]), fmt(row["per_question_macro_f1"]),
            fmt(row["parse_failure_rate"])]


def distribution_cells(row: dict[str, Any]) -> list[str]:
    by = row.get("grouping") or COUNTRY  # a province or a year is no country
    level = {"country_question": f"{by} x question", "question": "question"}.get(row["distribution_level"])
    return [domain_title(row), row["run"], level or "n/a", *(fmt(row[f"{name}_score"]) for name in SCORES),
            *(fmt(row[name]) for name in ALIGNMENT[:3]), p_text(row["kendall_tau_p"])]


NO_DISTRIBUTIONS = "No distribution scores: too few respondents a question (see the note under The answer)."


def yardstick_cells(row: dict[str, Any]) -> list[str]:
    """A run's (domain "ALL") or a domain's SimBench score and demographic-model and structure figures."""
    return [domain_title(row), row["run"], fmt(row["simbench_score"], 1),
            *(fmt(row[key]) for key in HEADLINE_KEYS[1:]), gain_text(row)]


def gain_text(row: dict[str, Any]) -> str:
    """"1.31 [1.12, 1.52]": the median effective-sample-size gain and its CI over repeated splits (a run's
    line: the mean of its domains', no CI); "n/a" with too few respondents, or in older results."""
    low, high = (row.get(key, math.nan) for key in GAIN_KEYS[1:])
    ci = f" [{fmt(low, 2)}, {fmt(high, 2)}]" if math.isfinite(low) and math.isfinite(high) else ""
    return fmt(row.get(GAIN_KEYS[0], math.nan), 2) + ci


def compare_cells(a: str, b: str, cmp: PairedComparison) -> list[str]:
    low, high = cmp.difference_ci
    return [a, b, str(cmp.n_items), fmt(cmp.accuracy_a), fmt(cmp.accuracy_b),
            f"{cmp.difference:+.3f} [{fmt(low)}, {fmt(high)}]", f"{cmp.a_only} / {cmp.b_only}",
            f"{cmp.mcnemar_p:.3g}"]


def domain_order(board: Leaderboard) -> list[dict[str, Any]]:
    rank = {row["run"]: i for i, row in enumerate(board.overall)}
    return sorted(board.domains, key=lambda r: (r["domain_id"] or 99, r["domain"], rank[r["run"]]))


def board_rows(board: Leaderboard) -> dict[str, list[list[str]]]:
    """The leaderboard's tables by ``HEADS`` name: the same cells in ``leaderboard.md`` and the page."""
    ordered = domain_order(board)
    return {"overall": [overall_cells(r) for r in board.overall],
            "incomplete": [incomplete_cells(r) for r in board.incomplete],
            "domain": [domain_cells(r) for r in ordered],
            "distribution": [distribution_cells(r) for r in ordered if r["distribution_level"]],  # else: few
            "yardstick": [yardstick_cells(r) for r in board.overall + ordered],
            "draws": [[domain_title(r), r["run"], fmt(r["draw_agreement"]), fmt(r["draw_fleiss_kappa"])]
                      for r in board.overall + ordered if math.isfinite(r["draw_agreement"])],  # --samples K
            "compare": [compare_cells(*c) for c in board.comparisons]}


def leaderboard_markdown(board: Leaderboard) -> str:
    rows, by = board_rows(board), runs_grouping(board.runs)

    def section(title: str, name: str, *lead: str, optional: bool = False) -> list[str]:
        """A table by its ``HEADS`` name under its heading (``optional``: nothing without rows)."""
        table = markdown_table(HEADS[name], rows[name]) if rows[name] or not optional else []
        return ["", f"## {title}", "", *lead, *table] if table else []

    lines = [f"# {study_title(run.study for run in board.runs)} leaderboard", "",
             *markdown_table(HEADS["overall"], rows["overall"]),
             *section("Incomplete runs (not ranked)", "incomplete", NOTES["incomplete"], "", optional=True),
             *(["", *answer_markdown(board)] if board.runs else []), *section("By domain", "domain"),
             *(section("Answer distributions and ranking alignment", "distribution", optional=True) or
               ["", "## Answer distributions and ranking alignment", "", NO_DISTRIBUTIONS]),
             *section("Yardsticks", "yardstick", grouping_words(NOTES["yardsticks"], by), ""),
             *section("Repeated draws", "draws", optional=True),
             *section("Paired comparisons", "compare", optional=True), *units_markdown(board.units)]
    return "\n".join([*lines, "", grouping_words(NOTES["leaderboard"], by)]) + "\n"


def write_leaderboard(board: Leaderboard, out_dir: Path) -> tuple[Path, Path]:
    """``leaderboard.md`` and ``leaderboard.csv`` (overall rows first, domain = ALL)."""
    frame = pd.DataFrame(board.overall + board.incomplete + board.domains).reindex(columns=list(CSV_COLUMNS))
    return (write_text(out_dir / "leaderboard.md", leaderboard_markdown(board)),
            write_text(out_dir / "leaderboard.csv", frame.to_csv(index=False, float_format="%.6g")))


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


def not_above_note(rows: list[dict[str, Any]]) -> str:
    """The run x domains not above their strongest baseline, in one sentence ("" when there is none)."""
    found = [r for r in rows if not r["margin_over_best_baseline"] > 0]
    if not found:
        return ""
    places = "; ".join(f"{domain_label(r['domain'])} in {r['run']}" for r in found)
    return f"Not above the strongest baseline ({len(found)} of {len(rows)} run x domain): {places}."


def groups_title(runs: list[ModelRun]) -> str:
    """Section 2's heading: the study's own grouping variables (a province is no country)."""
    groupings = sorted({run.grouping for run in runs} - {COUNTRY})
    return f"2. For whom? {'By ' + ', '.join(groupings) if groupings else 'Countries'} and persona groups"


def export_links(runs: list[ModelRun], out_dir: Path) -> list[tuple[str, list[tuple[str, str]], list[str]]]:
    """Per run with exported answers (``socbench export`` / ``--export``) or a failed format: its files
    (link relative to ``out_dir``, name) and why each failed format could not be written."""
    links = {run.run: [(Path(os.path.relpath(p, out_dir)).as_posix(), p.name)
                       for p in sorted((run.folder / "export").glob("*")) if p.is_file() and p.name[0] != "."]
             for run in runs}
    return [(run.run, links[run.run], list(failed)) for run in runs  # runs: finished (a summary each)
            if (failed := run.summary.export_failed) or links[run.run]]


def page_notes(board: Leaderboard, figures: Figures) -> list[str]:
    """The notes under the model-size figure: what was left out, failed domains, weights off, usage."""
    failed = [f"{run.run}: domain {k} failed ({v})" for run in board.runs
              for k, v in run.summary.failed_domains.items()]  # board.runs: finished (a summary each)
    unweighted = [f"{run.run}: weighted metrics off: {text}" for run in board.runs
                  if (text := weights_off_text((domain_label(d.domain), d.stored.weighted_metrics_off)
                                               for d in run.domains))]
    used = [f"{run.run}: {usage_text(u)}" for run in board.runs if (u := run.summary.totals.get("usage"))]
    return [*board.notes, *figures.notes, *failed, *unweighted, *used]


def render_html(board: Leaderboard, figures: Figures, title: str, *, out_dir: Path | None = None) -> str:
    """The report page as one HTML string (figures embedded; exported answers linked from ``out_dir``)."""
    found = domain_answers(board) if board.runs else []
    images = {name: base64.b64encode(figures.paths[name].read_bytes()).decode("ascii")
              for name in ("domain_bars", "model_scale", "gains") if name in figures.paths}
    return ENV.get_template("report.html.j2").render(
        board=board, title=title, now=now_timestamp(), by=runs_grouping(board.runs), rows=board_rows(board),
        images=images, notes=page_notes(board, figures), found=found,
        mcq=[mcq_view(run) for run in board.mcq], studies=by_study(board.units), unit_table=unit_table,
        small=small_note([answer for _, answers in found for answer in answers]),
        effects=persona_answers(board.runs) if board.runs else [],
        not_above_note=not_above_note(domain_order(board)), groups_title=groups_title(board.ranked()),
        circular=[row for run in board.runs for row in circular_rows(run)], gains=gain_view,
        multi=[[run.run, domain_label(d.domain), *(fmt(v, missing="") for v in row)]
               for run in board.runs for d in run.domains for row in set_rows(d.stored.metrics)],
        numeric=[[run.run, domain_label(d.domain), *(fmt(v, missing="") for v in row)]
                 for run in board.runs for d in run.domains for row in numeric_rows(d.stored.numeric)],
        no_distributions=NO_DISTRIBUTIONS,
        exports=export_links(board.runs, out_dir) if out_dir is not None else [])


def write_report(output_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None, *,
                 n_resamples: int = DEFAULT_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> ReportPaths:
    """Read every run under ``output_dir``; write the leaderboard, figures and report.html into
    ``out_dir`` (``<output_dir>/report``); DataError when there is nothing to report."""
    output_dir = Path(output_dir).expanduser()
    board = leaderboard(output_dir, n_resamples=n_resamples, seed=seed)
    out = Path(out_dir).expanduser() if out_dir is not None else output_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    md, csv = write_leaderboard(board, out)
    figures = draw_figures(board, out)
    title = (f"{study_title(r.study for r in board.runs)} results: "
             f"{output_dir.resolve().name} (socbench report)")
    page = write_text(out / "report.html", render_html(board, figures, title, out_dir=out))
    notes = [*board.notes, *figures.notes, *(
        f"incomplete run {r['run']} (not ranked): {r['engine_errors']} engine error(s) in "
        f"{r['incomplete_domains']}; first: {r['first_engine_error']}; rerun it to fill the gaps"
        for r in board.incomplete)]
    return ReportPaths(out, md, csv, page, figures.paths, board, notes)
