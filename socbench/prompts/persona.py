"""ISSP persona prompts: one respondent's attributes + one question -> a PromptRequest.

The original system's template without its defects (doubled braces, ``person_id`` and missing-value
labels in the persona, unfilled ``[COUNTRY]``). Laid out for prefix caching: the system message (instruction
plus persona JSON) is byte-identical for a respondent's questions, emitted respondent by respondent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from socbench.circular import issp_variants
from socbench.data.countries import CountryInfo, country_attribute_key, country_info
from socbench.data.missing_labels import is_missing_label
from socbench.data.options import plain_number
from socbench.draws import draw_prompts
from socbench.errors import DataError
from socbench.shuffle import display_order, render_options
from socbench.types import (
    CircularSettings,
    DomainData,
    Item,
    Message,
    Mode,
    PromptRequest,
    Question,
    Respondent,
    Role,
    SamplingSettings,
    Span,
)

if TYPE_CHECKING:
    from socbench.config import RunConfig

# 146 of the 555 real questions carry national-adaptation markers ([COUNTRY], [NATIONALITY], ... in any
# case) the original system never filled. Other bracketed notes ([County], [income tax]) are question text.

_BRACKET = re.compile(r"(?P<your>\byour\s+)?\[(?P<inner>[^\[\]\n]{1,120})\]", re.IGNORECASE)
_SPECIFIC = re.compile(r"^\s*country[-\s]specific(?:\s+list)?\s*[:,-]?\s*", re.IGNORECASE)
# Capitalise a filled placeholder at a sentence start or right after an item number ("Q2c");
# "..." is a continuation mark in ISSP wording, not a sentence end.
_SENTENCE_START = re.compile(r"(?:^|(?<!\.)\.\s+|[!?]\s+|\bQ\d+[a-z]?\s+)$")
UNKNOWN_COUNTRY = CountryInfo("", "your country", "your country's")
_TABLES = json.loads(Path(__file__).with_suffix(".json").read_text(encoding="utf-8"))
_PLACEHOLDERS = _TABLES["placeholders"]  # marker (upper case) -> its text, from the respondent's CountryInfo


def country_words(respondent: Respondent) -> CountryInfo:
    """Display name and nationality of a respondent's country (the country table's); an unmapped
    country's raw name also stands in for the nationality, as a noun adjunct ("Atlantis citizenship")."""
    if respondent.country_code:
        return country_info(respondent.country_code, respondent.country_name)
    if respondent.country_name and respondent.country_name.strip():
        name = " ".join(respondent.country_name.split())
        return CountryInfo("", name, name)
    return UNKNOWN_COUNTRY


@lru_cache(maxsize=1 << 16)
def fill_placeholders(text: str, words: CountryInfo) -> str:
    """``text`` with every country placeholder replaced; "your [COUNTRY]" becomes the name; brackets that
    are not placeholders stay. Remembered: a survey's labels and texts repeat for every respondent (0.2 ms
    each: 9 of 33 s of a domain's prompts)."""

    def substitute(match: re.Match[str]) -> str:
        inner = match.group("inner")
        key = " ".join(inner.replace("\u2019", "'").replace("\u2018", "'").upper().split())
        specific = key.startswith(("COUNTRY-SPECIFIC", "COUNTRY SPECIFIC"))
        if key in _PLACEHOLDERS:
            value = _PLACEHOLDERS[key].format(name=words.name, nationality=words.nationality,
                                              possessive=words.possessive)
        elif not specific or not (value := _SPECIFIC.sub("", inner).strip()):
            return match.group(0)
        your = "" if key == "COUNTRY" else match.group("your") or ""
        if not your and _SENTENCE_START.search(text[: match.start()]):
            value = value[:1].upper() + value[1:]
        return your + value

    return _BRACKET.sub(substitute, text)


class PromptSettings(BaseModel):
    """How prompts are built; every field changes the prompts or their cache keys. ``seed`` drives
    option shuffling only; ``include_persona`` False is the persona-free control prompt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Mode = "generate"
    structured: bool = False
    shuffle_options: bool = False
    seed: int = 42
    sampling: SamplingSettings = SamplingSettings()
    include_persona: bool = True


# Attribute keys (codebook labels, matched case- and space-insensitively) that identify the case or describe
# how the survey was administered (persona.json): they say nothing about the person.
_NOT_PERSONA_KEYS = _TABLES["not_persona"]
_NOT_PERSONA = re.compile("|".join(p for group in _NOT_PERSONA_KEYS.values() for p in group), re.IGNORECASE)


@lru_cache(maxsize=1 << 12)
def _persona_name(key: str) -> str | None:
    """An attribute key as the persona names it, or None for one that says nothing about the person (once a
    key: every respondent has the same)."""
    name = " ".join(key.split())
    return None if _NOT_PERSONA.search(name) else name


@lru_cache(maxsize=1 << 16)
def _persona_value(value: str) -> str | None:
    """A value as the persona shows it, or None for an empty or missing one (once a label)."""
    text = value.strip()
    return None if not text or is_missing_label(text) else text


def persona_attributes(respondent: Respondent, words: CountryInfo) -> dict[str, str]:
    """What the persona JSON shows: "Country" first (when known: a single-country study has
    none), then the remaining attributes in order."""
    country_key = country_attribute_key(respondent.attributes)
    persona = {"Country": words.name} if words is not UNKNOWN_COUNTRY else {}
    shown = ((_persona_name(str(key)), _persona_value(str(value)))
             for key, value in respondent.attributes.items() if key != country_key)
    return persona | {fill_placeholders(name, words): fill_placeholders(text, words) for name, text in shown
                      if text is not None and name is not None}


PERSONA_HEAD = ("You are taking part in a survey. Answer each question as the person described below "
                "would, based on their personal information.")
NO_PERSONA_HEAD = "You are taking part in a survey. Answer each question as a typical respondent would."
INSTRUCTION = f"{PERSONA_HEAD} Choose exactly one of the offered options."
INSTRUCTION_NO_PERSONA = f"{NO_PERSONA_HEAD} Choose exactly one of the offered options."
ANSWER_FORMAT = ('Reply with the id of your chosen option in this JSON format and nothing else:\n'
                 '{"answer": "option_id"}')
ANSWER_PREFIX = '{"answer": "'
# --mode verbalized (socbench.verbalized): the same persona, asked for the shares of people like them
VERBALIZED_INSTRUCTION = ("You are taking part in a survey. Think of the people like the person described "
                          "below, based on their personal information. For each question, estimate what "
                          "percentage of such people would choose each of the offered options.")
VERBALIZED_INSTRUCTION_NO_PERSONA = ("You are taking part in a survey. For each question, estimate what "
                                     "percentage of respondents would choose each of the offered options.")
VERBALIZED_FORMAT = ("Reply with the percentage for every option id (whole numbers summing to 100) in this "
                     "JSON format and nothing else:\n{example}")
NUMBER_FORMAT = 'Reply with your number in this JSON format and nothing else:\n{"answer": number}'
GIVE_NUMBER = "Answer with the number they would give."


def with_task(system: str, settings: PromptSettings, task: str) -> str:
    """A respondent's system message (``system_message``, built once per respondent) asking for ``task``
    instead of one option or the shares: the same persona, the instruction's last sentence swapped (a
    numeric question's number, a multi-select set's options)."""
    _, gap, persona = system.partition("\n\n")
    return f"{PERSONA_HEAD if settings.include_persona else NO_PERSONA_HEAD} {task}{gap}{persona}"


def system_message(respondent: Respondent, settings: PromptSettings) -> str:
    """The fixed instruction plus the persona JSON: identical for all of a respondent's questions."""
    verbalized = settings.mode == "verbalized"
    if not settings.include_persona:
        return VERBALIZED_INSTRUCTION_NO_PERSONA if verbalized else INSTRUCTION_NO_PERSONA
    persona = persona_attributes(respondent, country_words(respondent))
    instruction = VERBALIZED_INSTRUCTION if verbalized else INSTRUCTION
    return f"{instruction}\n\nPersonal information:\n{json.dumps(persona, ensure_ascii=False, indent=2)}"


@lru_cache(maxsize=1 << 12)
def message(role: Role, content: str) -> Message:
    """One Message for every prompt that says ``content`` (a respondent's system message, a question's
    user message): a whole survey's prompts hold millions; they are built respondent by respondent."""
    return Message(role, content)


@lru_cache(maxsize=1 << 14)
def user_message(question_text: str, item_options: tuple[tuple[str, str], ...], order: tuple[str, ...],
                 words: CountryInfo, shown: tuple[str, ...] | None = None, verbalized: bool = False) -> str:
    """Question, options as ``id. text`` lines in the shown order, and the answer format (``verbalized``:
    a percentage per option id); whitespace collapsed so a raw newline cannot break the list. ``shown``
    relabels the lines (circular ``relabel``).
    Remembered: a question's respondents of one country see the same message (18 of 33 s of a domain's
    prompts when each was built anew)."""
    options = [(code, fill_placeholders(" ".join(label.split()), words)) for code, label in item_options]
    if shown is not None:
        texts = dict(options)
        options, order = [(label, texts[code]) for label, code in zip(shown, order, strict=True)], shown
    question = fill_placeholders(" ".join(question_text.split()), words)
    example = "{" + ", ".join(f'"{label}": <percent>' for label in order) + "}"
    answer = VERBALIZED_FORMAT.format(example=example) if verbalized else ANSWER_FORMAT
    return f"Question: {question}\n\nOptions:\n{render_options(options, order)}\n\n{answer}"


@lru_cache(maxsize=1 << 12)
def numeric_message(question_text: str, span: Span, words: CountryInfo) -> str:
    """A numeric question: its text, the range a number must lie in, and the answer format."""
    question = fill_placeholders(" ".join(question_text.split()), words)
    low, high = (plain_number(end) for end in span)
    return f"Question: {question}\n\nAnswer with a number from {low} to {high}.\n\n{NUMBER_FORMAT}"


def build_prompt(item: Item, respondent: Respondent, question: Question, settings: PromptSettings,
                 system: str | None = None, order: tuple[str, ...] | None = None,
                 shown: tuple[str, ...] | None = None) -> PromptRequest:
    """One request (``system``: the respondent's message, reused); ``order``: a circular variant's option
    order, ``shown``: its labels per position, the codes the model may answer (``relabel``)."""
    words = country_words(respondent)
    system = system if system is not None else system_message(respondent, settings)
    if item.numeric is not None:  # generated (no option to score), its range in the structured schema
        messages = (message("system", with_task(system, settings, GIVE_NUMBER)),
                    message("user", numeric_message(question.text, item.numeric, words)))
        return PromptRequest(item_id=item.item_id, messages=messages, structured=settings.structured,
                             sampling=settings.sampling, numeric=item.numeric)
    if order is None:
        order = display_order(item.offered_codes, settings.shuffle_options, settings.seed,
                              item.person_id, item.question_id)
    labels = shown if shown is not None and shown != order else None  # relabelled
    logprobs, verbalized = settings.mode == "logprobs", settings.mode == "verbalized"
    need = 12 * len(order) + 8 if verbalized else 0  # ``"10": 25, `` an option + margin
    sampling = settings.sampling if settings.sampling.max_tokens >= need else \
        replace(settings.sampling, max_tokens=need)  # else one settings object shared by every prompt
    user = user_message(question.text, item.options, order, words, labels, verbalized)
    return PromptRequest(item_id=item.item_id, messages=(message("system", system), message("user", user)),
                         mode=settings.mode, offered_codes=labels or item.offered_codes,
                         option_order=labels or order, answer_prefix=ANSWER_PREFIX if logprobs else "",
                         structured=settings.structured and not logprobs,
                         # Decoding settings do not change log-probs: keep them out of logprobs cache keys.
                         sampling=SamplingSettings() if logprobs else sampling, options=item.options)


def variant_prompts(item: Item, respondent: Respondent, question: Question, settings: PromptSettings,
                    expansion: CircularSettings, system: str) -> list[PromptRequest]:
    """One request per variant of ``item`` (ids and the normal request: ``socbench.circular``),
    preceded by the normal request when no variant is it."""
    variants = issp_variants(item, expansion)
    normal = [] if any(v.request_id == item.item_id for v in variants) else \
        [build_prompt(item, respondent, question, settings, system)]
    return normal + [replace(build_prompt(item, respondent, question, settings, system, order=v.pattern,
                                          shown=v.shown), item_id=v.request_id, options=v.options, variant=v)
                     for v in variants]


def build_prompts(items: Sequence[Item], respondents: Mapping[int, Respondent],
                  questions: Mapping[str, Question], settings: PromptSettings,
                  expansion: CircularSettings | None = None) -> list[PromptRequest]:
    """Prompts for the scoreable items, respondent by respondent (survey order within one, one
    system message each); with an ``expansion`` each item's variants, adjacent."""
    rank = {pid: i for i, pid in enumerate(respondents)}
    index = {qid.lower(): q for qid, q in questions.items()} | {q.id.lower(): q for q in questions.values()}
    scoreable = [item for item in items if item.excluded_reason is None]
    for item in scoreable:
        if item.person_id not in rank:
            raise DataError(f"item {item.item_id}: respondent {item.person_id} is not in the data")
        if item.question_id.lower() not in index:
            raise DataError(f"item {item.item_id}: question {item.question_id!r} is not in the question set")
    systems = {pid: system_message(respondents[pid], settings) for pid in {i.person_id for i in scoreable}}
    prompts = []
    for item in sorted(scoreable, key=lambda i: rank[i.person_id]):  # stable: survey order within one
        args = (item, respondents[item.person_id], index[item.question_id.lower()], settings)
        prompts += (variant_prompts(*args, expansion, systems[item.person_id])
                    if expansion and item.numeric is None  # a number has no option order to vary
                    else [build_prompt(*args, systems[item.person_id])])
    return prompts


def prompt_settings(config: RunConfig) -> PromptSettings:
    """How a run configuration builds its prompts."""
    return PromptSettings(mode=config.mode, structured=config.use_structured, seed=config.seed,
                          shuffle_options=config.shuffle_options, sampling=config.sampling,
                          include_persona=config.include_persona)


def build_domain_prompts(data: DomainData, items: Sequence[Item], config: RunConfig) -> list[PromptRequest]:
    """The ``build_prompts`` stage: one domain's items under one run configuration."""
    respondents, questions = {r.person_id: r for r in data.respondents}, {q.id: q for q in data.questions}
    prompts = build_prompts(items, respondents, questions, prompt_settings(config), config.expansion)
    return draw_prompts(prompts, config.samples, config.seed)


def prompt_text(request: PromptRequest) -> str:
    """A request as readable text: each message under a ``--- role ---`` rule, then the prefix."""
    parts = [f"--- {m.role} ---\n{m.content}" for m in request.messages]
    if request.answer_prefix:
        parts.append(f"--- assistant (answer prefix) ---\n{request.answer_prefix}")
    return "\n".join(parts)
