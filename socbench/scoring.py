"""The ``score`` stage: Items + Extractions -> ScoredItems -> one DomainResult.

Only scoreable items (``excluded_reason is None``) are scored, each exactly once.
An item whose extraction is missing or failed is wrong and carries ``parse_error``;
so is one whose extracted code was not offered to that respondent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from socbench.extract import NOT_OFFERED
from socbench.metrics.baselines import baselines, margin_over_best
from socbench.metrics.classification import (
    accuracy,
    item_count,
    parse_failure_rate,
    per_question_macro_f1,
    seed_macro_f1,
    seed_micro_f1,
)
from socbench.metrics.grouped import breakdown
from socbench.types import DomainData, DomainResult, Extraction, Item, ScoredItem

NO_EXTRACTION = "no extraction for this item"

COUNTRY_METRICS = {"n": item_count, "accuracy": accuracy, "parse_failure_rate": parse_failure_rate}


def score_item(item: Item, extraction: Extraction | None) -> ScoredItem:
    """Score one scoreable item against its extraction (None when there is none)."""
    if item.true_code is None:
        raise ValueError(f"item {item.item_id} is scoreable but has no true code")
    predicted = extraction.code if extraction is not None else None
    if extraction is None:
        error: str | None = NO_EXTRACTION
    elif extraction.failure is not None or predicted is None:
        error = extraction.failure or "no code extracted"
    elif predicted not in item.offered_codes:
        error = NOT_OFFERED
    else:
        error = None
    return ScoredItem(
        person_id=item.person_id,
        question_id=item.question_id,
        country_code=item.country_code,
        true_code=item.true_code,
        predicted_code=predicted,
        correct=error is None and predicted == item.true_code,
        parse_error=error,
        country_specific=item.country_specific,
        offered_codes=item.offered_codes,
        distribution=extraction.distribution if extraction is not None else None,
    )


def score_items(items: Sequence[Item], extractions: Mapping[str, Extraction]) -> list[ScoredItem]:
    """Score every scoreable item; ``extractions`` is keyed by ``item.item_id``."""
    return [
        score_item(item, extractions.get(item.item_id))
        for item in items
        if item.excluded_reason is None
    ]


def domain_metrics(scored: Sequence[ScoredItem]) -> dict[str, float]:
    """The headline metrics of one domain, by name (see ``metrics.classification``)."""
    return {
        "accuracy": accuracy(scored),
        "macro_f1": seed_macro_f1(scored),
        "micro_f1": seed_micro_f1(scored),
        "per_question_macro_f1": per_question_macro_f1(scored),
        "parse_failure_rate": parse_failure_rate(scored),
    }


def summarize_domain(
    domain_id: int,
    domain_name: str,
    model: str,
    items: Sequence[Item],
    scored: Sequence[ScoredItem],
    unmapped_countries: Mapping[str, int],
    interview_count: int,
) -> DomainResult:
    """Counts, metrics, per-country breakdown and baselines of one domain run.

    ``metrics`` also holds ``margin_over_best_baseline`` (accuracy minus the strongest
    baseline), so a headline number is never read without its floor.
    """
    metrics = domain_metrics(scored)
    floor = baselines(scored)
    metrics["margin_over_best_baseline"] = margin_over_best(metrics["accuracy"], floor)
    excluded = Counter(item.excluded_reason for item in items if item.excluded_reason is not None)
    return DomainResult(
        domain_id=domain_id,
        domain_name=domain_name,
        model=model,
        total_items=len(items),
        scoreable_items=sum(item.excluded_reason is None for item in items),
        excluded_by_reason=dict(sorted(excluded.items())),
        parse_failures=sum(item.parse_error is not None for item in scored),
        metrics=metrics,
        per_country=breakdown(COUNTRY_METRICS, "country_code", scored),
        baselines=floor,
        unmapped_countries=dict(unmapped_countries),
        interview_count=interview_count,
    )


def score_domain(
    data: DomainData,
    items: Sequence[Item],
    extractions: Mapping[str, Extraction],
    *,
    model: str,
    interview_count: int | str = "all",
) -> tuple[list[ScoredItem], DomainResult]:
    """The whole ``score`` stage for one domain: scored items and their DomainResult.

    The recorded ``interview_count`` is the number of respondents actually interviewed
    (distinct person ids among the items); ``interview_count`` is the requested limit,
    and more respondents than it means an earlier stage ignored it (a bug, not user input).
    """
    interviewed = len({item.person_id for item in items})
    if isinstance(interview_count, int) and interviewed > interview_count:
        raise ValueError(f"{data.domain_name}: {interviewed} respondents in the items, "
                         f"more than interview_count={interview_count}")
    scored = score_items(items, extractions)
    result = summarize_domain(data.domain_id, data.domain_name, model, items, scored,
                              data.unmapped_countries, interviewed)
    return scored, result
