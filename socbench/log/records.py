"""The records of a run's results log: one pydantic model per file, built by the writer and validated by
every reader; it declares what readers rely on and keeps the rest as written. A number the run could not
give is written ``null`` and read back as NaN (``Num``). Per-item rows are plain dicts from the functions
beside their models (millions in a whole survey), one JSON line each, read back line by line.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from socbench.mcq.mcq_types import Prediction
from socbench.types import COUNTRY, ScoredItem, VariantResult

# 1: files without ``format`` (socbench before the results log); 2: every item inside
# ``<Domain>_detailed.json`` (one JSON document: ~1.3 GB at a whole ISSP module); both read only by re-scoring
FORMAT = 3
TEXT_KEYS = ("domain", "best_baseline", "distribution_level", "incomplete_reason", "weighted_metrics_off")
Num = Annotated[int | float, BeforeValidator(lambda value: math.nan if value is None else value)]


def nan_for_null(value: Any) -> Any:
    """A table of numbers as the run held it: JSON's null back to NaN (text fields keep None)."""
    return {k: math.nan if v is None and k not in TEXT_KEYS else nan_for_null(v)
            for k, v in value.items()} if isinstance(value, dict) else value


Numbers = Annotated[dict[str, Any], BeforeValidator(nan_for_null)]  # rows of numbers (group rows, lines)


class Record(BaseModel):
    """What every record carries: which socbench ``format`` and study (``task``), model and run."""

    model_config = ConfigDict(extra="allow")
    format: int
    task: str
    model: str
    run: str | None = None
    timestamp: str = ""


class DomainRecord(Record):
    """``<Domain>_metrics.json`` and ``<Domain>_detailed.json`` (with each question's per-country rows): one
    ISSP domain's counts, metrics, baselines and breakdowns (the
    per-country and per-persona-group rows are ``metrics.grouped.group_row``)."""

    domain: str
    domain_id: int
    grouping: str = COUNTRY  # what country_code holds: a country, or the study's grouping variable
    respondents: int  # respondents with a scored item
    total_count: int  # scoreable items
    parse_failures: int
    engine_errors: int
    complete: bool
    engine_error_reasons: dict[str, int]
    metrics: dict[str, Num]
    baselines: dict[str, Num]
    per_country: Numbers  # country -> metrics.grouped.group_row
    breakdowns: Numbers  # persona attribute -> group -> metrics.grouped.group_row
    yardsticks: dict[str, Any] = {}  # none for an incomplete domain
    draws: dict[str, Num]
    weighted_metrics_off: str | None
    questions: dict[str, dict[str, Any]]
    summary: Numbers  # the domain's line of ``summary.json`` (``log.summary.summary_row``)
    estimates: Numbers = {}  # estimates.study.gain_record: the gain per question (none: older results)
    numeric: Numbers = {}  # metrics.numeric.numeric_scores: numeric questions' errors (none: none asked)


class UnitRecord(Record):
    """``<unit>_unit.json``: one unit of any study in the shape they all share (``task.UnitResult``); ISSP
    and MCQ write it beside their own records, a study without its own writes only this."""

    unit: str
    unit_id: int
    complete: bool
    incomplete_reason: str | None = None
    metrics: dict[str, Num]
    extras: Numbers = {}  # the study's own: ISSP's baselines and scoreable items, MCQ's chance


def detail_row(item: ScoredItem) -> dict[str, Any]:
    """A line of ``<Domain>_items.jsonl`` (optional keys only when the item has them; ``log.lines.ITEM_TYPES``
    reads them back; codes are strings, as the survey's)."""
    return {
        "person_id": item.person_id, "question_id": item.question_id, "country_code": item.country_code,
        "true_answer": item.true_code, "llm_answer": item.predicted_code, "correct": item.correct,
        "is_country_specific": item.country_specific, "parse_error": item.parse_error,
        "engine_error": item.engine_error, "raw_reply": item.raw_reply,
        "offered_codes": list(item.offered_codes),
        **({"option_distribution": item.distribution} if item.distribution is not None else {}),
        **({"draws": list(item.draws)} if item.draws is not None else {}),
    }


class SummaryRecord(Record):
    """``summary.json``: the domains run by the last command (``domains``, ``mean``: the original
    system's) and ``pooled``: the run folder's leaderboard line over every domain record it holds."""

    failed_domains: dict[str, str]
    export_failed: list[str] = []  # the --export formats not written, one line why each
    data: dict[str, Any] = {}  # which respondents the run read (``RunConfig.data_record``: study, data_dir)
    pooled: Numbers
    totals: dict[str, Any] = {}  # summed over ``domains``; ``usage``: the backend's request and token counts


class CircularRecord(Record):
    """``<name>_circular[_relabel]_metrics.json``: OpenCompass's metrics (fractions) of one ISSP domain
    or one MCQ dataset and k, with the settings that produced them."""

    domain: str | None = None  # an MCQ dataset's has ``dataset``
    labels: str
    questions: dict[str, int]
    metrics: dict[str, Num]


class VariantRow(BaseModel):
    """A ``*_circular.jsonl`` line as read back (its other keys are derived)."""

    model_config = ConfigDict(extra="ignore")
    qid: str
    pattern: tuple[str, ...]
    shown: tuple[str, ...]
    origin: tuple[str, ...]
    gold: str
    prediction: str | None
    sampled: bool = False
    parse_error: str | None = None

    def result(self) -> VariantResult:
        return VariantResult(**dict(self))


def variant_row(result: VariantResult) -> dict[str, Any]:
    """A ``VariantRow`` as written, with the answer mapped back to the original labels."""
    return {
        "qid": result.qid, "variant_id": result.variant_id, "pattern": list(result.pattern),
        "gold": result.gold, "prediction": result.prediction, "correct": result.correct,
        "is_origin": result.is_origin, "origin": list(result.origin), "shown": list(result.shown),
        "gold_original": result.gold_original, "prediction_original": result.to_original(result.prediction),
        "sampled": result.sampled, "parse_error": result.parse_error,
    }


class McqRecord(Record):
    """``<dataset>_results.json``: CP and MCP accuracies per k and method column, chance, settings,
    the scoring definitions, MCP's probability mass, timings and the circular part."""

    dataset: str
    eval_split: str
    fewshot_split: str | None
    items: int
    seed: int
    k_shots: list[int]
    methods: list[str]
    tolerance: bool
    accuracy: dict[str, dict[str, Num]]
    chance_accuracy: Num
    complete: bool
    incomplete_reason: str | None
    usage: dict[str, int] = {}  # what the backend reported (``socbench.engines.usage``)
    circular: dict[str, Any] | None = None


def prediction_row(pred: Prediction, split: str, column: str) -> dict[str, Any]:
    """One line of ``<dataset>_predictions.jsonl`` (``column``: the method's table name)."""
    return {"id": pred.item_id, "split": split, "k_shot": pred.k_shot, "method": column, "gold": pred.gold,
            "prediction": pred.prediction, "correct": pred.correct, "scores": list(pred.scores),
            "shot_ids": list(pred.shot_ids), "mass": pred.mass}
