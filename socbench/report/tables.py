"""The leaderboard's tables: the same cells fill ``leaderboard.md``, the console and ``report.html``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from socbench.files import atomic_open
from socbench.log.summary import ALIGNMENT_SCORES as ALIGNMENT
from socbench.log.summary import DISTRIBUTION_SCORES as SCORES
from socbench.log.summary import GAIN_KEYS
from socbench.metrics.uncertainty import PairedComparison
from socbench.report.answers import answer_markdown
from socbench.report.html_sections import NOTES
from socbench.report.labels import accuracy_text, baseline_label, domain_label, p_text, signed, study_title
from socbench.report.leaderboard import DRAW_SCORES, Leaderboard
from socbench.report.output import fmt, markdown_table
from socbench.yardsticks import HEADLINE_KEYS

CSV_COLUMNS = ("rank", "tied", "run", "model", "variant", "domain_id", "domain", "domains", "respondents",
               "items", "accuracy", "accuracy_ci_low", "accuracy_ci_high", "best_baseline",
               "best_baseline_accuracy", "margin_over_best_baseline", "domains_not_above_baseline",
               "per_question_macro_f1", "distribution_level", *(f"{name}_score" for name in SCORES),
               *ALIGNMENT, "parse_failure_rate", "failed_domains", "complete", "engine_errors",
               "incomplete_domains", "first_engine_error", *HEADLINE_KEYS, *DRAW_SCORES, *GAIN_KEYS)

OVERALL_HEAD = ("rank", "run", "model", "variant", "domains", "respondents", "items", "accuracy [95% CI]",
                "strongest baseline (mean over domains)", "margin", "domains not above baseline",
                "per-question macro-F1", "parse failures")
DOMAIN_HEAD = ("domain", "run", "respondents", "items", "accuracy [95% CI]", "strongest baseline",
               "baseline accuracy", "margin", "per-question macro-F1", "parse failures")
DISTRIBUTION_HEAD = ("domain", "run", "level", "1-W1", "1-W1 uniform", "1-JS", "1-JS uniform",
                     "modal agreement", "modal agreement uniform", "Kendall tau", "Kendall tau p (mean)")
YARDSTICK_HEAD = ("domain", "run", "SimBench", "demographic model accuracy", "structure correlation",
                  "heterogeneity ratio", "median gain (PPI) [95% CI]")
DRAWS_HEAD = ("domain", "run", "mean agreement across draws", "Fleiss' kappa across draws")
INCOMPLETE_HEAD = ("run", "model", "domains", "incomplete domains", "items", "engine errors",
                   "parse failures", "first engine error")
COMPARE_HEAD = ("A", "B", "shared items", "accuracy A", "accuracy B", "A - B [95% CI]",
                "A only / B only right", "McNemar p")


def rank_text(row: dict[str, Any]) -> str:
    return f"{row['rank']} (tied)" if row.get("tied") else str(row["rank"])


def overall_cells(row: dict[str, Any]) -> list[str]:
    return [rank_text(row), row["run"], row["model"], row["variant"], str(row["domains"]),
            str(row["respondents"]), str(row["items"]), accuracy_text(row),
            fmt(row["best_baseline_accuracy"]), signed(row["margin_over_best_baseline"]),
            f"{row['domains_not_above_baseline']} of {row['domains']}", fmt(row["per_question_macro_f1"]),
            fmt(row["parse_failure_rate"])]


def incomplete_cells(row: dict[str, Any]) -> list[str]:
    return [row["run"], row["model"], str(row["domains"]), row["incomplete_domains"], str(row["items"]),
            str(row["engine_errors"]), str(row["parse_failures"]), str(row["first_engine_error"])[:160]]


def incomplete_notes(rows: list[dict[str, Any]]) -> list[str]:
    """One line per incomplete run, for the console and the report's notes."""
    return [f"incomplete run {r['run']} (not ranked): {r['engine_errors']} engine error(s) in "
            f"{r['incomplete_domains']}; first: {r['first_engine_error']}; rerun it to fill the gaps"
            for r in rows]


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
    level = {"country_question": "country x question", "question": "question"}.get(row["distribution_level"],
                                                                                   "n/a")
    return [domain_title(row), row["run"], level, *(fmt(row[f"{name}_score"]) for name in SCORES),
            *(fmt(row[name]) for name in ALIGNMENT[:3]), p_text(row["kendall_tau_p"])]


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
    ordered = domain_order(board)
    lines = [f"# {study_title(run.study for run in board.runs)} leaderboard", "",
             *markdown_table(OVERALL_HEAD, [overall_cells(r) for r in board.overall])]
    if board.incomplete:
        lines += ["", "## Incomplete runs (not ranked)", "", NOTES["incomplete"], "", *markdown_table(
            INCOMPLETE_HEAD, [incomplete_cells(r) for r in board.incomplete])]
    lines += ["", *answer_markdown(board)] if board.runs else []
    lines += ["", "## By domain", "", *markdown_table(DOMAIN_HEAD, [domain_cells(r) for r in ordered]),
              "", "## Answer distributions and ranking alignment", "",
              *markdown_table(DISTRIBUTION_HEAD, [distribution_cells(r) for r in ordered]),
              "", "## Yardsticks", "", NOTES["yardsticks"], "",
              *markdown_table(YARDSTICK_HEAD, [yardstick_cells(r) for r in board.overall + ordered])]
    drawn = [r for r in board.overall + ordered if math.isfinite(r["draw_agreement"])]
    if drawn:  # runs with --samples K
        lines += ["", "## Repeated draws", "", *markdown_table(DRAWS_HEAD, [draw_cells(r) for r in drawn])]
    if board.comparisons:
        lines += ["", "## Paired comparisons", "",
                  *markdown_table(COMPARE_HEAD, [compare_cells(*c) for c in board.comparisons])]
    return "\n".join([*lines, "", NOTES["leaderboard"]]) + "\n"


def write_leaderboard(board: Leaderboard, out_dir: Path) -> tuple[Path, Path]:
    """``leaderboard.md`` and ``leaderboard.csv`` (overall rows first, domain = ALL)."""
    md, csv = out_dir / "leaderboard.md", out_dir / "leaderboard.csv"
    with atomic_open(md) as handle:
        handle.write(leaderboard_markdown(board))
    frame = pd.DataFrame(board.overall + board.incomplete + board.domains).reindex(columns=list(CSV_COLUMNS))
    with atomic_open(csv) as handle:
        frame.to_csv(handle, index=False, float_format="%.6g")
    return md, csv
