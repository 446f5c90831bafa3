"""The whole report: leaderboard files, figures and one self-contained ``report.html`` (figures as base64
PNG, inline CSS, no scripts, fonts or links), so it reads offline and can be mailed or attached to a CI
run as one file. Its sections run from the answer to the definitions of every number. The leaderboard's
tables are built once: the same cells fill ``leaderboard.md``, the console and ``report.html``."""

from __future__ import annotations

import base64
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from socbench.engines.usage import usage_text
from socbench.files import atomic_open
from socbench.log.summary import ALIGNMENT_SCORES as ALIGNMENT
from socbench.log.summary import DISTRIBUTION_SCORES as SCORES
from socbench.log.summary import GAIN_KEYS
from socbench.metrics.uncertainty import BOOTSTRAP_SEED, DEFAULT_RESAMPLES, PairedComparison
from socbench.report.answers import answer_html, answer_markdown
from socbench.report.circular import circular_section
from socbench.report.figures import Figures, draw_figures
from socbench.report.html_sections import (
    CSS,
    DEFINITIONS,
    NOTES,
    QUESTION_HEAD,
    country_table,
    details,
    distribution_blocks,
    esc,
    exports_section,
    heat_table,
    lead,
    note,
    persona_table,
    question_rows,
    run_heading,
    table,
)
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
from socbench.report.mcq import mcq_section
from socbench.report.output import HEADS, LABELS, fmt, markdown_table, now_timestamp
from socbench.report.stand_in import stand_in_section
from socbench.report.units import units_markdown, units_section
from socbench.types import COUNTRY
from socbench.yardsticks import HEADLINE_KEYS

CSV_COLUMNS = ("rank", "tied", "run", "model", "variant", "domain_id", "domain", "domains", "respondents",
               "items", "accuracy", "accuracy_ci_low", "accuracy_ci_high", "best_baseline",
               "best_baseline_accuracy", "margin_over_best_baseline", "domains_not_above_baseline",
               "per_question_macro_f1", "distribution_level", *(f"{name}_score" for name in SCORES),
               *ALIGNMENT, "parse_failure_rate", "failed_domains", "complete", "engine_errors",
               "incomplete_domains", "first_engine_error", *HEADLINE_KEYS, *DRAW_SCORES, *GAIN_KEYS)

OVERALL_HEAD, DOMAIN_HEAD, DISTRIBUTION_HEAD, YARDSTICK_HEAD = (
    HEADS[name] for name in ("overall", "domain", "distribution", "yardstick"))
DRAWS_HEAD, INCOMPLETE_HEAD, COMPARE_HEAD = (HEADS[name] for name in ("draws", "incomplete", "compare"))


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
    """"Role of Government (8)"; the name alone where the results do not record the id."""
    known = isinstance(row["domain_id"], int)
    return f"{domain_label(row['domain'])} ({row['domain_id']})" if known else domain_label(row["domain"])


def domain_cells(row: dict[str, Any]) -> list[str]:
    return [domain_title(row), row["run"], str(row["respondents"]), str(row["items"]), accuracy_text(row),
            baseline_label(row["best_baseline"]), fmt(row["best_baseline_accuracy"]),
            signed(row["margin_over_best_baseline"]), fmt(row["per_question_macro_f1"]),
            fmt(row["parse_failure_rate"])]


def distribution_cells(row: dict[str, Any]) -> list[str]:
    by = row.get("grouping") or COUNTRY  # a province or a year is no country
    level = {"country_question": f"{by} x question", "question": "question"}.get(row["distribution_level"],
                                                                                 "n/a")
    return [domain_title(row), row["run"], level, *(fmt(row[f"{name}_score"]) for name in SCORES),
            *(fmt(row[name]) for name in ALIGNMENT[:3]), p_text(row["kendall_tau_p"])]


NO_DISTRIBUTIONS = "No distribution scores: too few respondents a question (see the note under The answer)."


def distribution_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    """The cells of the run x domains whose distributions were scored (none: too few respondents)."""
    return [distribution_cells(r) for r in rows if r["distribution_level"]]


def yardstick_cells(row: dict[str, Any]) -> list[str]:
    """A run's (domain "ALL") or a domain's SimBench score and demographic-model and structure figures."""
    title = "all domains" if row["domain"] == "ALL" else domain_title(row)
    return [title, row["run"], fmt(row["simbench_score"], 1), *(fmt(row[key]) for key in HEADLINE_KEYS[1:]),
            gain_text(row)]


def gain_text(row: dict[str, Any]) -> str:
    """"1.31 [1.12, 1.52]": the median effective-sample-size gain and its CI over repeated splits (a run's
    line: the mean of its domains', no CI); "n/a" with too few respondents, or in older results."""
    low, high = (row.get(key, math.nan) for key in GAIN_KEYS[1:])
    ci = f" [{fmt(low, 2)}, {fmt(high, 2)}]" if math.isfinite(low) and math.isfinite(high) else ""
    return fmt(row.get(GAIN_KEYS[0], math.nan), 2) + ci


def draw_cells(row: dict[str, Any]) -> list[str]:
    """A run's or a domain's mean agreement and Fleiss' kappa across its --samples draws."""
    title = "all domains" if row["domain"] == "ALL" else domain_title(row)
    return [title, row["run"], fmt(row["draw_agreement"]), fmt(row["draw_fleiss_kappa"])]


def compare_cells(a: str, b: str, cmp: PairedComparison) -> list[str]:
    low, high = cmp.difference_ci
    return [a, b, str(cmp.n_items), fmt(cmp.accuracy_a), fmt(cmp.accuracy_b),
            f"{cmp.difference:+.3f} [{fmt(low)}, {fmt(high)}]", f"{cmp.a_only} / {cmp.b_only}",
            f"{cmp.mcnemar_p:.3g}"]


def domain_order(board: Leaderboard) -> list[dict[str, Any]]:
    rank = {row["run"]: i for i, row in enumerate(board.overall)}
    return sorted(board.domains, key=lambda r: (r["domain_id"] or 99, r["domain"], rank[r["run"]]))


def leaderboard_markdown(board: Leaderboard) -> str:
    ordered, by = domain_order(board), runs_grouping(board.runs)
    lines = [f"# {study_title(run.study for run in board.runs)} leaderboard", "",
             *markdown_table(OVERALL_HEAD, [overall_cells(r) for r in board.overall])]
    if board.incomplete:
        lines += ["", "## Incomplete runs (not ranked)", "", NOTES["incomplete"], "", *markdown_table(
            INCOMPLETE_HEAD, [incomplete_cells(r) for r in board.incomplete])]
    lines += ["", *answer_markdown(board)] if board.runs else []
    lines += ["", "## By domain", "", *markdown_table(DOMAIN_HEAD, [domain_cells(r) for r in ordered]),
              "", "## Answer distributions and ranking alignment", "",
              *(markdown_table(DISTRIBUTION_HEAD, rows) if (rows := distribution_rows(ordered)) else
                [NO_DISTRIBUTIONS]),
              "", "## Yardsticks", "", grouping_words(NOTES["yardsticks"], by), "",
              *markdown_table(YARDSTICK_HEAD, [yardstick_cells(r) for r in board.overall + ordered])]
    drawn = [r for r in board.overall + ordered if math.isfinite(r["draw_agreement"])]
    if drawn:  # runs with --samples K
        lines += ["", "## Repeated draws", "", *markdown_table(DRAWS_HEAD, [draw_cells(r) for r in drawn])]
    if board.comparisons:
        lines += ["", "## Paired comparisons", "",
                  *markdown_table(COMPARE_HEAD, [compare_cells(*c) for c in board.comparisons])]
    lines += units_markdown(board.units)
    return "\n".join([*lines, "", grouping_words(NOTES["leaderboard"], by)]) + "\n"


def write_leaderboard(board: Leaderboard, out_dir: Path) -> tuple[Path, Path]:
    """``leaderboard.md`` and ``leaderboard.csv`` (overall rows first, domain = ALL)."""
    md, csv = out_dir / "leaderboard.md", out_dir / "leaderboard.csv"
    with atomic_open(md) as handle:
        handle.write(leaderboard_markdown(board))
    frame = pd.DataFrame(board.overall + board.incomplete + board.domains).reindex(columns=list(CSV_COLUMNS))
    with atomic_open(csv) as handle:
        frame.to_csv(handle, index=False, float_format="%.6g")
    return md, csv


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


def _image(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def baselines_section(board: Leaderboard, figures: Figures) -> list[str]:
    """1. Is the model better than the answer-free baselines, and where not?"""
    rows = domain_order(board)
    not_above, by = [r for r in rows if not r["margin_over_best_baseline"] > 0], runs_grouping(board.runs)
    parts = ["<h2 id='baselines'>1. Is the model better than answer-free baselines?</h2>",
             lead("baselines", by), table(OVERALL_HEAD, [overall_cells(r) for r in board.overall]),
             note(grouping_words(NOTES["leaderboard"], by))]
    if board.incomplete:
        parts += ["<h3 id='incomplete'>Incomplete runs (not ranked)</h3>", note(NOTES["incomplete"]),
                  table(INCOMPLETE_HEAD, [incomplete_cells(r) for r in board.incomplete])]
    if "domain_bars" in figures.paths:
        parts.append(_image(figures.paths["domain_bars"], "accuracy by domain and run"))
    parts += ["<h3>By domain</h3>", table(DOMAIN_HEAD, [domain_cells(r) for r in rows])]
    if not_above:
        parts.append(note(f"Not above the strongest baseline ({len(not_above)} of {len(rows)} run x domain): "
                          + "; ".join(f"{domain_label(r['domain'])} in {r['run']}" for r in not_above) + "."))
    if board.comparisons:
        parts += ["<h3>Paired comparisons</h3>",
                  table(COMPARE_HEAD, [compare_cells(*c) for c in board.comparisons])]
    return parts


def groups_section(board: Leaderboard) -> list[str]:
    """2. For whom: countries (pooled and by domain) and persona groups, per run, as the run computed them
    (``summary.json``'s ``pooled``, each domain's ``per_country``)."""
    groupings = sorted({run.grouping for run in board.ranked()} - {COUNTRY})  # a province is no country
    head = f"By {', '.join(groupings)}" if groupings else "Countries"
    parts = [f"<h2 id='groups'>2. For whom? {esc(head)} and persona groups</h2>",
             lead("groups", runs_grouping(board.runs))]
    for i, run in enumerate(board.ranked()):
        body, by, pooled = [], run.grouping, run.summary.pooled if run.summary else {}
        countries = pooled.get("countries") or {}
        if countries:
            heading = "Countries" if by == COUNTRY else f"By {by}"
            cells = {(country, d.domain): row for d in run.domains
                     for country, row in d.stored.per_country.items()}
            body += [f"<h4>{esc(heading)} (pooled over domains)</h4>", country_table(countries, by),
                     f"<h4>{esc(heading)} by domain</h4>",
                     heat_table(cells, [d.domain for d in run.domains], by)]
        else:
            body.append(note(LABELS["no_groups"]))
        personas = pooled.get("persona_groups") or {}
        body += (["<h4>Persona groups (pooled over domains)</h4>", persona_table(personas)] if personas
                 else [note("No persona groups were recorded with these results.")])
        parts.append(details(run_heading(run), "".join(body), open_=i == 0))
    return parts


def questions_section(board: Leaderboard) -> list[str]:
    """3. On which questions, and 4. how the answer distribution differs from people's."""
    parts = ["<h2 id='questions'>3. On which questions?</h2>", lead("questions")]
    heading = "<h2 id='distributions'>4. How do its answers differ from people's?</h2>"
    rows = distribution_rows(domain_order(board))
    blocks = [heading, lead("distributions"),
              table(DISTRIBUTION_HEAD, rows) if rows else note(NO_DISTRIBUTIONS)]
    drawn = [r for r in board.overall + domain_order(board) if math.isfinite(r["draw_agreement"])]
    if drawn:  # --samples K: how often the K draws of an item agree
        blocks += [note(LABELS["draws"]), table(DRAWS_HEAD, [draw_cells(r) for r in drawn])]
    for i, run in enumerate(board.ranked()):
        domains = [d for d in run.domains if d.stored.questions]
        if not domains:
            parts.append(note(f"{run.run}: no per-question view in these files (rerun to compute it)."))
            continue
        parts.append(details(run_heading(run), "".join(
            details(domain_label(d.domain), table(QUESTION_HEAD, question_rows(d)), open_=i == 0 and j == 0)
            for j, d in enumerate(domains)), open_=i == 0))
        blocks.append(details(run_heading(run), "".join(
            details(domain_label(d.domain), distribution_blocks(d), open_=i == 0 and j == 0)
            for j, d in enumerate(domains)), open_=i == 0))
    return parts + blocks


def render_html(board: Leaderboard, figures: Figures, title: str, *, out_dir: Path | None = None) -> str:
    """The report page as one HTML string (figures embedded; exported answers linked from ``out_dir``)."""
    sections = [
        f"<h1>{esc(title)}</h1>",
        f"<p class='meta'>Generated {esc(now_timestamp())}; {len(board.runs)} complete run(s), "
        f"{len(board.incomplete)} incomplete; {len(board.domains)} run x domain result(s); "
        f"{len(board.mcq)} multiple-choice result(s).</p>",
        LABELS["contents"],  # links to the sections
        *(answer_html(board) if board.runs else []),
        *(baselines_section(board, figures) if board.runs or board.incomplete else []),
    ]
    if board.runs:
        sections += [*groups_section(board), *questions_section(board)]
    sections += circular_section(board.runs)
    sections.append("<h2 id='scale'>6. Model size</h2>")
    if "model_scale" in figures.paths:
        sections.append(_image(figures.paths["model_scale"], "accuracy by model size"))
    failed = [f"{run.run}: domain {k} failed ({v})" for run in board.runs for k, v in run.failed.items()]
    unweighted = [f"{run.run}: weighted metrics off: {text}" for run in board.runs
                  if (text := weights_off_text((domain_label(d.domain), d.stored.weighted_metrics_off)
                                               for d in run.domains))]
    used = [f"{run.run}: {usage_text(run.usage)}" for run in board.runs if run.usage]
    notes = [*board.notes, *figures.notes, *failed, *unweighted, *used]
    if notes:
        sections.append("<ul class='note'>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    sections += [*mcq_section(board.mcq), *units_section(board.units)]
    if board.runs:
        gains = figures.paths.get("gains")
        sections += stand_in_section(board.ranked(), gains and _image(gains, "gain per question and domain"))
    sections += exports_section(board.runs, out_dir) if out_dir is not None else []
    by = runs_grouping(board.runs)
    sections += ["<h2 id='definitions'>Definitions</h2>", "<dl>" + "".join(
        f"<dt>{esc(term)}</dt><dd>{esc(grouping_words(text, by))}</dd>" for term, text in DEFINITIONS)
        + "</dl>"]
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{esc(title)}</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(sections) + "\n</body></html>\n")


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
    page = out / "report.html"
    with atomic_open(page) as handle:
        title = f"{study_title(run.study for run in board.runs)} results: {output_dir.resolve().name}"
        handle.write(render_html(board, figures, f"{title} (socbench report)", out_dir=out))
    notes = [*board.notes, *figures.notes, *(
        f"incomplete run {r['run']} (not ranked): {r['engine_errors']} engine error(s) in "
        f"{r['incomplete_domains']}; first: {r['first_engine_error']}; rerun it to fill the gaps"
        for r in board.incomplete)]
    return ReportPaths(out, md, csv, page, figures.paths, board, notes)
