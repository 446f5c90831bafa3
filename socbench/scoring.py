"""The ``score`` stage: Items + Extractions -> ScoredItems -> one DomainResult (a ScoredDomain).

Each scoreable item is scored once, and each request that showed a variant of one. A missing, failed or
unoffered answer is wrong (``parse_error``); an item the engine could not answer has ``engine_error``:
no answer at all, and a domain with any is *incomplete*, its answer metrics NaN, never shown as a score.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from socbench.estimates.items import domain_frame
from socbench.estimates.study import gain_record
from socbench.extract import NOT_OFFERED
from socbench.memo import content_key, memo
from socbench.metrics.baselines import baselines, item_baselines, margin_over_best
from socbench.metrics.classification import (
    accuracy,
    parse_failure_rate,
    per_question_macro_f1,
    seed_macro_f1,
    seed_micro_f1,
)
from socbench.metrics.distribution import DEFAULT_MIN_RESPONDENTS
from socbench.metrics.grouped import group_rows
from socbench.metrics.numeric import numeric_scores
from socbench.metrics.persona_groups import persona_breakdowns, respondent_groups
from socbench.metrics.ranking import question_view
from socbench.metrics.uncertainty import accuracy_ci
from socbench.types import (
    COUNTRY,
    DomainData,
    DomainResult,
    Extraction,
    Item,
    ScoredDomain,
    ScoredItem,
    Variant,
    VariantResult,
)
from socbench.weights import weights_off_reason
from socbench.yardsticks import DEMOGRAPHIC, begin_demographic, domain_yardsticks, shown_attributes

NO_EXTRACTION = "no extraction for this item"
_UNANSWERED = Extraction(None, NO_EXTRACTION)  # an item without an extraction: unanswered, and why
NO_CODE = "no code extracted"

METRIC_NAMES = ("accuracy", "macro_f1", "micro_f1", "per_question_macro_f1", "parse_failure_rate",
                "margin_over_best_baseline")


def score_item(item: Item, extraction: Extraction | None,
               groups: Mapping[str, str] | None = None) -> ScoredItem:
    """One scoreable item against its extraction (None: there is none); ``groups``: for the breakdowns."""
    if item.true_code is None:
        raise ValueError(f"item {item.item_id} is scoreable but has no true code")
    e = extraction or _UNANSWERED
    error = None
    if e.engine_error is None and (e.failure is not None or e.code is None):
        error = e.failure or NO_CODE
    elif e.engine_error is None and item.numeric is None and e.code not in item.offered_codes:
        error = NOT_OFFERED
    return ScoredItem(
        person_id=item.person_id, question_id=item.question_id, country_code=item.country_code,
        true_code=item.true_code, predicted_code=e.code,
        correct=error is None and e.engine_error is None and e.code == item.true_code, parse_error=error,
        country_specific=item.country_specific, offered_codes=item.offered_codes,
        # a number's draws are no option distribution (the long export's p_<code> columns, the shares)
        distribution=e.distribution if item.numeric is None else None,
        groups=groups if isinstance(groups, dict) else dict(groups or {}),  # one per person, shared
        engine_error=e.engine_error, raw_reply=e.raw_reply, draws=e.draws, numeric=item.numeric)


def score_items(items: Sequence[Item], extractions: Mapping[str, Extraction],
                groups: Mapping[int, Mapping[str, str]] | None = None) -> list[ScoredItem]:
    """Score every scoreable item; ``extractions`` keyed by item id, ``groups`` by person id."""
    groups = groups or {}
    return [score_item(item, extractions.get(item.item_id), groups.get(item.person_id))
            for item in items if item.excluded_reason is None]


def summarize_domain(domain_id: int, domain_name: str, model: str, items: Sequence[Item],
                     scored: Sequence[ScoredItem], unmapped_countries: Mapping[str, int],
                     interview_count: int, *, min_respondents: int = DEFAULT_MIN_RESPONDENTS, seed: int = 0,
                     weights: Mapping[int, float] | None = None, weights_off: str | None = None,
                     engine_errors: Sequence[str] | None = None, texts: Mapping[str, str] | None = None,
                     run: str = "", attributes: Mapping[int, Mapping[str, str]] | None = None,
                     grouping: str = COUNTRY, cache: Path | None = None, estimate: bool = False,
                     ) -> DomainResult:
    """Counts, metrics, breakdowns, baselines, distribution scores and CI of one domain run.

    ``margin_over_best_baseline`` joins the metrics, so a headline number is never read without its
    floor. Any ``engine_errors`` (default: ``scored``'s) leave counts and baselines only. ``attributes``
    (what the prompts showed) add the yardsticks and the demographic baseline; ``cache``: ``socbench.memo``;
    ``estimate``: the estimates too (``socbench.estimates``), while the demographic model is still fitted.
    """
    if engine_errors is None:
        engine_errors = [item.engine_error for item in scored if item.engine_error is not None]
    every, numbers = scored, [item for item in scored if item.numeric is not None]  # metrics.numeric's
    scored = [item for item in scored if item.numeric is None]  # the codes' metrics and baselines
    settings = dict(weights=weights, min_respondents=min_respondents, seed=seed, cache=cache)
    begun = None if attributes is None or engine_errors else begin_demographic(scored, attributes, **settings)
    # the memos' keys: a domain's items pickled once (0.1 s), and only for a cache (``memo``)
    answers = content_key("answers", items, every) if cache is not None else ""
    try:  # the rest of the domain is scored while the demographic model is fitted (``socbench.background``)
        expected = item_baselines(scored, grouping)  # each baseline on each item: domain's, each group's
        floor = memo(cache, content_key("baselines", answers, weights, grouping),
                     lambda: baselines(scored, weights, grouping, expected))
        excluded = Counter(item.excluded_reason for item in items if item.excluded_reason is not None)
        counts = dict(
            domain_id=domain_id, domain_name=domain_name, model=model, total_items=len(items),
            scoreable_items=sum(item.excluded_reason is None for item in items),
            excluded_by_reason=dict(sorted(excluded.items())),
            parse_failures=sum(item.parse_error is not None for item in every),
            parse_failure_reasons=dict(Counter(i.parse_error for i in every if i.parse_error is not None)),
            engine_errors=len(engine_errors), engine_error_reasons=dict(Counter(engine_errors)),
            baselines=floor, unmapped_countries=dict(unmapped_countries), interview_count=interview_count,
            run=run, weights_off=None if weights is not None else weights_off or "no design weights given",
            grouping=grouping,
        )
        if engine_errors:  # not a result: no number that could be read as a score
            return DomainResult(metrics=dict.fromkeys(METRIC_NAMES, math.nan), per_country={}, **counts)
        counts["numeric"] = numeric_scores(numbers, attributes, weights, seed)
        view = (items, scored, texts, min_respondents, weights, seed)
        alignment, questions, distribution = memo(cache, content_key("questions", answers, *view[2:]),
                                                  lambda: question_view(*view))
        # per country: none (not one group "unmapped") for a study without countries
        countries = unmapped_countries or any(item.country_code is not None for item in scored)
        parts = dict(per_country=group_rows(scored, "country_code", expected) if countries else {},
                     breakdowns=persona_breakdowns(scored, expected),
                     distribution=distribution,
                     accuracy_ci=accuracy_ci([i.correct for i in scored], [i.person_id for i in scored],
                                             min_respondents=min_respondents, seed=seed))
        answer_metrics = (accuracy, seed_macro_f1, seed_micro_f1, per_question_macro_f1, parse_failure_rate)
        metrics = {name: score(scored) for name, score in zip(METRIC_NAMES, answer_metrics)}  # margin: below
        if estimate:  # what the answers are worth as respondents, once per answers
            by_id = weights and {str(p): w for p, w in weights.items()}
            key = content_key("estimates", domain_name, answers, by_id, questions, grouping)
            counts["estimates"] = memo(cache, key, lambda: gain_record(
                domain_name, domain_frame(domain_name, every, by_id, questions, grouping)))
        extra = {} if begun is None else domain_yardsticks(scored, attributes or {}, begun=begun,
                                                           answers=answers, **settings)
    finally:
        if begun is not None:
            begun.cancel()
    if extra:
        floor = counts["baselines"] = {**floor, DEMOGRAPHIC: extra[DEMOGRAPHIC]["accuracy"]}
    metrics["margin_over_best_baseline"] = margin_over_best(metrics["accuracy"], floor)
    return DomainResult(metrics=metrics, **counts, **parts, alignment=alignment, questions=questions,
                        yardsticks=extra)


def score_domain(data: DomainData, items: Sequence[Item], extractions: Mapping[str, Extraction], *,
                 model: str, interview_count: int | str = "all",
                 min_respondents: int = DEFAULT_MIN_RESPONDENTS, run: str = "", include_persona: bool = True,
                 cache: Path | None = None) -> ScoredDomain:
    """The ``score`` stage of one domain: scored items, their DomainResult and every variant's answer
    (``score_stage`` reduces them); ``extractions`` by request id. More respondents than
    ``interview_count`` means an earlier stage ignored it (a bug, not user input)."""
    interviewed = len({item.person_id for item in items})
    if isinstance(interview_count, int) and interviewed > interview_count:
        raise ValueError(f"{data.domain_name}: {interviewed} respondents in the items, "
                         f"more than interview_count={interview_count}")
    groups = respondent_groups(data.respondents, data.roles, data.issp_vocabulary)
    scored = score_items(items, extractions, groups)
    failed = [e.engine_error for e in extractions.values() if e.engine_error is not None]  # variants too
    weights, weights_off = design_weights(data)
    result = summarize_domain(data.domain_id, data.domain_name, model, items, scored, data.unmapped_countries,
                              interviewed, min_respondents=min_respondents, weights=weights,
                              weights_off=weights_off, engine_errors=failed,
                              texts={q.id: q.text for q in data.questions}, run=run,
                              attributes=shown_attributes(data, include_persona), grouping=data.grouping,
                              cache=cache, estimate=True)
    result = replace(result, sample=data.sample)
    variants = score_variants(items, extractions) if result.complete else []
    return ScoredDomain(tuple(scored), result, tuple(variants) or None)


def design_weights(data: DomainData) -> tuple[dict[int, float] | None, str | None]:
    """(person id -> design weight, None) when every respondent has a usable one, else (None, why not)."""
    people = data.respondents
    reason = weights_off_reason([p.weight for p in people], [p.person_id for p in people]) if people \
        else "no respondents"
    return ({p.person_id: p.weight for p in people}, None) if reason is None else (None, reason)  # type: ignore[misc]


# ------------------------------------------------------------------- expanded items


def variant_answer(variant: Variant, extraction: Extraction) -> VariantResult:
    """A variant's answer, read as ``score_item`` reads one, against the labels the variant displayed."""
    error = extraction.engine_error or extraction.failure or (None if extraction.code else NO_CODE)
    if error is None and extraction.code not in variant.shown:
        error = NOT_OFFERED
    return VariantResult.of(variant, extraction.code if error is None else None, error)


def score_variants(items: Sequence[Item], extractions: Mapping[str, Extraction]) -> list[VariantResult]:
    """Every variant's answer, by item in ``items`` order; a failed one: a None prediction and its reason."""
    answers = [variant_answer(e.variant, e) for e in extractions.values() if e.variant is not None]
    rank = {item.item_id: i for i, item in enumerate(items)} if answers else {}  # no item ids made for none
    return sorted(answers, key=lambda answer: rank.get(answer.qid, len(rank)))
