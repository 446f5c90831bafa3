"""Multi-select questions ("tick all that apply"): a block of dichotomous variables (``Question.multi``) is
asked once per respondent with every option, the reply a JSON list of the chosen options; the reply is
spread back onto the block's variables (each its own dichotomy: selected or not), so scoring, estimates and
exports treat each as the dichotomy it is in the file. ``set_scores`` adds what only the set has: the
model's and the people's share per option, F1 per option, Jaccard of the chosen sets per respondent.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from socbench.draws import draw_prompts, item_of
from socbench.extract import EMPTY, NO_JSON, extract, extract_all, json_values, normalize_value
from socbench.prompts.persona import (
    PromptSettings,
    country_words,
    fill_placeholders,
    system_message,
    with_task,
)
from socbench.shuffle import display_order, render_options
from socbench.types import (
    Code,
    DomainData,
    EngineResult,
    Extraction,
    Item,
    Message,
    MultiOption,
    PromptRequest,
    Question,
    ScoredDomain,
    ScoredItem,
)

ANSWER_FORMAT = ('Reply with every option that applies, as a JSON list of the options\' texts, in this JSON '
                 'format and nothing else:\n{"answer": ["option", ...]}')
CHOOSE_ALL = "Select all of the offered options that apply (none, one or several)."


@dataclass(frozen=True)
class Member:
    """One option of a set as one respondent's item: its item, the code for selected and for not."""

    item_id: str
    option: Code  # its id in the prompt (1..n)
    selected: Code
    unselected: Code


def split_items(items: Sequence[Item], questions: Sequence[Question]) -> tuple[list[Item], dict[tuple, list]]:
    """The items asked one by one, and the set members' items by (respondent, set), in question order."""
    multi = {q.id: q for q in questions if q.multi is not None}
    sets: dict[tuple, list] = defaultdict(list)
    for item in items:
        if (question := multi.get(item.question_id)) is not None:
            sets[(item.person_id, question.multi.set)].append((item, question))
    return [item for item in items if item.question_id not in multi], sets


def set_prompts(data: DomainData, sets: Mapping[tuple, list], settings: PromptSettings, samples: int = 1
                ) -> tuple[list[PromptRequest], dict[str, tuple[Member, ...]]]:
    """One request per respondent and set with at least one scoreable option, its id ``<person>:$<set>``
    (SPSS's mark of a set: no question's id), ``samples`` draws of it (``socbench.draws``); the members
    it answers, by that id."""
    people = {r.person_id: r for r in data.respondents}
    requests, plan = [], {}
    for (pid, name), pairs in sets.items():
        if all(item.excluded_reason is not None for item, _ in pairs):
            continue
        respondent, first = people[pid], pairs[0][1].multi
        words = country_words(respondent)
        options = tuple((str(i), fill_placeholders(q.multi.label, words)) for i, (_, q)
                        in enumerate(pairs, 1))
        order = display_order([c for c, _ in options], settings.shuffle_options, settings.seed, pid, name)
        system = with_task(system_message(respondent, settings), settings, CHOOSE_ALL)
        user = (f"Question: {fill_placeholders(' '.join(first.question.split()), words)}\n\nOptions (select "
                f"all that apply):\n{render_options(options, order)}\n\n{ANSWER_FORMAT}")
        room = 16 + sum(len(text) // 2 + 6 for _, text in options)  # every option named, with margin
        sampling = replace(settings.sampling, max_tokens=max(settings.sampling.max_tokens, room))
        request = PromptRequest(f"{pid}:${name}", (Message("system", system), Message("user", user)),
                                offered_codes=tuple(order), option_order=tuple(order), sampling=sampling,
                                options=options, structured=settings.structured, choose_all=True)
        requests.append(request)
        plan[request.item_id] = tuple(Member(item.item_id, code, q.multi.selected,  # and the other answer:
                                             next(c for c in q.options if c != q.multi.selected))
                                      for (item, q), (code, _) in zip(pairs, options, strict=True)
                                      if item.excluded_reason is None)
    return draw_prompts(requests, samples, settings.seed), plan


def chosen(text: str | None, options: Sequence[tuple[Code, str]]) -> tuple[set[Code] | None, str | None]:
    """The option ids a reply chooses (the last JSON list, bare or as ``"answer"``), or (None, why not)."""
    if text is None or not text.strip():
        return None, EMPTY
    values = (value.get("answer") if isinstance(value, dict) else value for value in json_values(text, "[{"))
    lists = [value for value in values if isinstance(value, list)]
    if not lists:
        return None, NO_JSON
    codes = [normalize_value(value, options) for value in lists[-1]]
    failure = next((why for code, why in codes if code is None), None)
    return (None, failure) if failure else ({code for code, _ in codes if code is not None}, None)


def spread(request: PromptRequest, result: EngineResult, members: Sequence[Member]) -> dict[str, Extraction]:
    """A set's reply as each member's extraction (a draw's under the draw's id): its selected or
    unselected code, or the set's failure."""
    draw = request.item_id.removeprefix(item_of(request.item_id))
    if result.error is not None:
        return {m.item_id + draw: Extraction(None, engine_error=result.error) for m in members}
    picked, failure = chosen(result.text, request.options)
    return {m.item_id + draw: Extraction(None if picked is None else
                                         m.selected if m.option in picked else m.unselected, failure,
                                         raw_reply=result.text) for m in members}


def extract_with_sets(requests: Sequence[PromptRequest], results: Sequence[Any],
                      plan: Mapping[str, tuple[Member, ...]],
                      read: Callable[[PromptRequest, Any], Extraction] = extract) -> dict[str, Extraction]:
    """``extract_all`` (each reply by ``read``) over the single questions' requests, ``spread`` over the
    sets' (the last ones)."""
    n = len(requests) - sum(item_of(request.item_id) in plan for request in requests)
    found = extract_all(requests[:n], results[:n], read)
    for request, result in zip(requests[n:], results[n:], strict=True):
        found.update(spread(request, result, plan[item_of(request.item_id)]))
    return found


def _f1(true: np.ndarray, pred: np.ndarray) -> float:
    """F1 of "selected" (scikit-learn's binary ``f1_score``, ``zero_division=1``: 1 where neither side
    selects it), from counts: importing scikit-learn took a run 1.2 s."""
    both, either = int((true & pred).sum()), int(true.sum() + pred.sum())
    return 2.0 * both / either if either else 1.0


def _jaccard(true: set[str], predicted: set[str]) -> float:
    union = true | predicted
    return len(true & predicted) / len(union) if union else 1.0


def set_scores(questions: Sequence[Question], items: Sequence[ScoredItem]) -> dict[str, float]:
    """Per set: each option's share selected by the model and by the people (unweighted), its F1 (selected
    as the positive class; 1 where neither selects it), and the mean Jaccard of each respondent's chosen
    set against theirs (a reply that could not be read: 0). Empty for a domain without sets."""
    multi: dict[str, MultiOption] = {q.id: q.multi for q in questions if q.multi is not None}
    by_set: dict[str, list[ScoredItem]] = defaultdict(list)
    for item in items:
        if item.question_id in multi:
            by_set[multi[item.question_id].set].append(item)
    scores: dict[str, float] = {}
    for name, members in by_set.items():
        for qid in dict.fromkeys(i.question_id for i in members):
            option = multi[qid]
            true = np.array([i.true_code == option.selected for i in members if i.question_id == qid])
            pred = np.array([i.predicted_code == option.selected for i in members if i.question_id == qid])
            label = f"multi {name}: {option.label}"
            scores |= {f"{label} share (model)": float(pred.mean()),
                       f"{label} share (people)": float(true.mean()), f"{label} F1": _f1(true, pred)}
        people: dict[int, list[ScoredItem]] = defaultdict(list)
        for item in members:
            people[item.person_id].append(item)
        scores[f"multi {name}: Jaccard (per respondent)"] = float(np.mean([
            0.0 if any(i.parse_error for i in rows) else _jaccard(
                {i.question_id for i in rows if i.true_code == multi[i.question_id].selected},
                {i.question_id for i in rows if i.predicted_code == multi[i.question_id].selected})
            for rows in people.values()]))
    return scores


def with_set_scores(scored: ScoredDomain, questions: Sequence[Question]) -> ScoredDomain:
    """The domain's metrics with ``set_scores`` beside them (a complete domain's only)."""
    result = scored.result
    extra = set_scores(questions, scored.items) if result.complete else {}
    return replace(scored, result=replace(result, metrics={**result.metrics, **extra})) if extra else scored


_KEY = re.compile(r"^multi (?P<set>[^:]+): (?P<option>.+?) (?P<what>share \(model\)|share \(people\)|F1)$")


def set_rows(metrics: Mapping[str, Any]) -> list[list[Any]]:
    """A domain's ``set_scores`` as report rows: set, option, model share, people share, F1; then each
    set's Jaccard (per respondent) in the F1 column's place of a row without an option."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for key, value in metrics.items():
        if (match := _KEY.match(key)) is not None:
            rows.setdefault((match["set"], match["option"]), {})[match["what"]] = value
    jaccard = {key[6:].removesuffix(": Jaccard (per respondent)"): value for key, value in metrics.items()
               if key.startswith("multi ") and key.endswith(": Jaccard (per respondent)")}
    return [*([name, option, got.get("share (model)"), got.get("share (people)"), got.get("F1")]
              for (name, option), got in rows.items()),
            *([name, "Jaccard (per respondent)", None, None, value] for name, value in jaccard.items())]
