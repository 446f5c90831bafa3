"""SimBench's distribution score (Hu et al. 2025, arXiv 2510.17516), to place a run beside its published
leaderboard: 100 x (1 - TV(model, human) / TV(uniform, human)), aggregated as the authors' released scorer
does: a row is a (country, question) group, the normaliser the mean uniform TV over a dataset's (here a
domain's) rows, not each row's own (so a row people answer uniformly is still scored), the score the mean
over rows (negative: worse than uniform)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from socbench.metrics.distribution import (
    DEFAULT_MIN_RESPONDENTS,
    Weights,
    human_distribution,
    model_distribution,
    scorable_groups,
)
from socbench.types import ScoredItem

ROW_KEYS = ("country_code", "question_id")


def total_variation(p: Sequence[float], q: Sequence[float]) -> float:
    """½ Σ |p − q| between two distributions over the same codes (each normalised first)."""
    a, b = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    return 0.5 * float(np.abs(a / a.sum() - b / b.sum()).sum())


@dataclass(frozen=True)
class SimBenchRow:
    """One question × country group: TV of the model and of uniform answers to the humans."""
    country_code: str | None
    question_id: str
    respondents: int
    tv_model: float
    tv_uniform: float


@dataclass(frozen=True)
class SimBenchScore:
    """A domain's SimBench score (0 = uniform, 100 = the human distribution), with its rows."""
    score: float
    norm: float  # mean TV(uniform, human) over the rows: the dataset's normaliser
    rows: tuple[SimBenchRow, ...]


def row_score(row: SimBenchRow, norm: float) -> float:
    return 100.0 * (1.0 - row.tv_model / norm) if norm > 0 else math.nan


def simbench_score(items: Sequence[ScoredItem], min_respondents: int = DEFAULT_MIN_RESPONDENTS,
                   weights: Weights | None = None) -> SimBenchScore:
    """SimBench's score of one domain's scored items (any predictor's answers)."""
    return simbench_of([simbench_rows(items, min_respondents, weights)])


def simbench_rows(items: Sequence[ScoredItem], min_respondents: int = DEFAULT_MIN_RESPONDENTS,
                  weights: Weights | None = None) -> list[SimBenchRow]:
    """The items' rows: items split by question give the rows of the whole, so a predictor's answers can be
    scored a question at a time. A qualifying row without a usable model answer is left out, not scored as
    zero."""
    rows = []
    for (country, qid), (group, codes) in scorable_groups(items, ROW_KEYS, min_respondents).items():
        model = model_distribution(group, codes, weights)
        if model is not None:
            human = human_distribution(group, codes, weights)
            rows.append(SimBenchRow(country, qid, len({item.person_id for item in group}),
                                    total_variation(model, human),
                                    total_variation(np.full(len(codes), 1.0 / len(codes)), human)))
    return rows


def simbench_of(parts: Sequence[list[SimBenchRow]]) -> SimBenchScore:
    """The score of ``simbench_rows``' parts (one domain's), in order."""
    rows = [row for part in parts for row in part]
    norm = float(np.mean([r.tv_uniform for r in rows])) if rows else math.nan
    score = float(np.mean([row_score(r, norm) for r in rows])) if rows else math.nan
    return SimBenchScore(score=score, norm=norm, rows=tuple(rows))
