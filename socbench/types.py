"""The frozen records that cross a pipeline stage (CP vs MCP's: ``mcq/types.py``): DomainData -> Item ->
PromptRequest -> EngineResult -> Extraction -> ScoredDomain; Variant -> VariantResult. Option codes are
always strings (``"1"``, ``"-4"``): JSON keys, prompts and answers compare."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from functools import cached_property, lru_cache
from operator import attrgetter
from typing import Any, Literal

from socbench.errors import incomplete_reason

Code = str
Mode = Literal["generate", "logprobs", "verbalized"]  # verbalized: socbench.verbalized
GENERATED = ("generate", "verbalized")  # the modes whose answer is generated text (it may be constrained)
Pick = Literal["mode", "draw"]  # a verbalized item's one answer: its most likely option, or a seeded draw
CircularMode = Literal["circular", "all_possible"]
CircularLabels = Literal["order_only", "relabel"]  # codes stay with their text | numbered 1..n by position
Pattern = tuple[str, ...]  # an item's original option labels in the order displayed
Span = tuple[float, float]  # a numeric question's valid range, lowest and highest answer
Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class MultiOption:
    """What makes a question one option of a multi-select set (``socbench.multi_select``): the set's name
    and question text, the option's label, and the code that means "selected"."""
    set: str
    question: str
    label: str
    selected: Code


@dataclass(frozen=True)
class Question:
    """A survey question: base options, per-country overrides, its own missing codes (code -> label)."""
    id: str
    text: str
    options: dict[Code, str]
    special: dict[str, dict[Code, str]] = field(default_factory=dict)
    missing: dict[Code, str] = field(default_factory=dict)
    multi: MultiOption | None = None  # one option of a multi-select set, asked once with the set
    numeric: Span | None = None  # a numeric question (no options): its valid range (socbench.numeric)


@dataclass(frozen=True)
class Respondent:
    """A real or synthetic person: attributes (no missing labels), answers; country_code None: unmapped."""
    person_id: int
    country_name: str | None
    country_code: str | None
    attributes: dict[str, str]
    answers: dict[str, Code | None]  # question id (as in the question set) -> normalised code
    weight: float | None = None  # the survey's design weight, when the data carries one
    group: str | None = None  # the value of the study's grouping variable that is not a country (region)

    @property
    def group_code(self) -> str | None:
        """What items, baselines and breakdowns group by (``Item.country_code``): group, else country."""
        return self.group if self.group is not None else self.country_code


COUNTRY = "country"  # DomainData.grouping of a study grouped by country


@dataclass(frozen=True)
class DomainData:
    """What ``load_data`` returns for one domain."""
    domain_id: int
    domain_name: str
    questions: tuple[Question, ...]
    respondents: tuple[Respondent, ...]
    unmapped_countries: dict[str, int]  # country (or group) name -> respondents not mapped to one
    source: str  # the answer file read
    sample: dict[str, Any] = field(default_factory=dict)  # who was asked, how drawn (sampling.sample_record)
    grouping: str = COUNTRY  # what respondents are grouped by: COUNTRY, or the grouping attribute ("Region")
    roles: dict[str, str] = field(default_factory=dict)  # role -> attribute key (socbench.manifest.Roles)
    issp_vocabulary: bool = True  # persona groups in ISSP's words (DomainSpec.issp_vocabulary), else its own


def _by_arguments(cls: type) -> type:
    """Pickled as its constructor's arguments, read by ``attrgetter`` in C: dataclasses' own pickling of a
    slots class runs Python for every field, seconds for a whole survey's items in each content key
    (``socbench.memo``) and in the classifier's input (``socbench.background``)."""
    arguments = attrgetter(*(f.name for f in fields(cls) if f.init))
    cls.__reduce__ = lambda self: (cls, arguments(self))  # type: ignore[method-assign,assignment]
    return cls


@lru_cache(maxsize=1 << 12)
def codes_of(options: tuple[tuple[Code, str], ...]) -> tuple[Code, ...]:
    """The codes of ``options``: one tuple for every item that shows these options (millions of items)."""
    return tuple(code for code, _ in options)


@_by_arguments
@dataclass(frozen=True, slots=True)
class Item:
    """One (respondent, question) pair with the options that respondent was shown. Slots, and the codes
    shared with every item showing the same options: a whole survey holds millions of items."""
    person_id: int
    question_id: str
    country_code: str | None
    options: tuple[tuple[Code, str], ...]  # effective options in survey order
    true_code: Code | None
    country_specific: bool
    excluded_reason: str | None = None
    numeric: Span | None = None  # Question.numeric: answered with a number in this range
    offered_codes: tuple[Code, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "offered_codes", codes_of(self.options))

    @property
    def item_id(self) -> str:
        return f"{self.person_id}:{self.question_id}"


@_by_arguments
@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str


@lru_cache(maxsize=1 << 12)
def _message_json(message: Message) -> str:
    """``message`` as ``PromptRequest.key`` writes it, once: encoding each prompt's persona again was
    three quarters of the keys' time."""
    return json.dumps([message.role, message.content])


@lru_cache(maxsize=1 << 12)
def _key_frame(mode: Mode, codes: tuple[Code, ...], prefix: str, structured: bool, chat: bool,
               sampling: SamplingSettings, choose_all: bool, numeric: Span | None,
               kinds: tuple[type, ...]) -> tuple[str, str]:
    """The JSON a ``PromptRequest.key`` hashes, before and after its messages: shared by a question's
    prompts. ``kinds``: the numbers' types, as the cache compares by ``==`` and 0 == 0.0 writes otherwise."""
    payload = {"messages": 0, "mode": mode, "codes": list(codes), "prefix": prefix, "structured": structured,
               "chat": chat, "sampling": [getattr(sampling, f.name) for f in fields(sampling)]}  # astuple's,
    # without its deep copy
    if choose_all:  # a single question's key stays what it was
        payload["choose_all"] = True
    if numeric is not None:  # a categorical request's key stays what it was
        payload["numeric"] = list(numeric)
    head, tail = json.dumps(payload, sort_keys=True).split('"messages": 0', 1)  # sorted: only codes before
    return head, tail


@dataclass(frozen=True)
class SamplingSettings:
    """Decoding settings; part of every cache key."""
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 64
    seed: int | None = None


@_by_arguments
@dataclass(frozen=True, slots=True)
class PromptRequest:
    """A prompt ready for an engine. ``chat`` False: one user message sent as raw text (ARC). ``logprobs``
    mode scores each offered code after ``answer_prefix``; ``structured`` constrains the reply to JSON."""
    item_id: str
    messages: tuple[Message, ...]
    mode: Mode = "generate"
    offered_codes: tuple[Code, ...] = ()
    option_order: tuple[Code, ...] = ()  # codes in the order shown (after any shuffle)
    answer_prefix: str = ""
    structured: bool = False
    chat: bool = True
    sampling: SamplingSettings = SamplingSettings()
    options: tuple[tuple[Code, str], ...] = ()  # (label, text) as shown: the labels an answer may name
    variant: Variant | None = None  # which variant of its item this request shows (expanded items only)
    choose_all: bool = False  # a multi-select set: its reply is a list of option texts (multi_select)
    numeric: Span | None = None  # asked for a number in this range, not an option
    _key: str | None = field(default=None, init=False, repr=False, compare=False)  # ``key``, once made

    @property
    def key(self) -> str:
        """Content hash over everything that can change the engine's answer (once: every stage asks)."""
        if self._key is not None:
            return self._key
        kinds = tuple(map(type, (*vars(self.sampling).values(), *(self.numeric or ()))))
        head, tail = _key_frame(self.mode, self.offered_codes, self.answer_prefix, self.structured, self.chat,
                                self.sampling, self.choose_all, self.numeric, kinds)
        messages = ", ".join(map(_message_json, self.messages))  # a persona is in each of its prompts
        key = hashlib.sha256(f'{head}"messages": [{messages}]{tail}'.encode()).hexdigest()
        object.__setattr__(self, "_key", key)
        return key


@dataclass(frozen=True)
class LoglikelihoodRequest:
    """Score ``continuation`` given ``context`` (raw text, no chat template)."""
    context: str
    continuation: str

    @cached_property
    def key(self) -> str:
        return hashlib.sha256(json.dumps([self.context, self.continuation]).encode()).hexdigest()


@_by_arguments
@dataclass(frozen=True, slots=True)
class EngineResult:
    """An engine's answer to one PromptRequest; ``error`` set means no usable answer."""
    key: str
    text: str | None = None
    option_logprobs: dict[Code, float] | None = None
    error: str | None = None
    cached: bool = False


@dataclass(frozen=True)
class LoglikelihoodResult:
    key: str
    logprob: float
    n_tokens: int
    is_greedy: bool
    cached: bool = False


@dataclass(frozen=True)
class Answers:
    """The engine's answers to a unit's requests, in request order, and what they cost."""
    results: tuple[Any, ...]  # EngineResult | LoglikelihoodResult
    seconds: float
    identity: dict[str, str]  # the engine's (backend, model, dtype...)
    cache: dict[str, int]  # CachedEngine's hits/misses, if any
    usage: dict[str, int] = field(default_factory=dict)  # pipeline.answer's: requests sent, tokens


@_by_arguments
@dataclass(frozen=True, slots=True)
class Extraction:
    """The code of an answer, or None and why: ``failure`` (unreadable), ``engine_error`` (no reply)."""
    code: Code | None
    failure: str | None = None
    distribution: dict[Code, float] | None = None  # normalised probabilities (logprobs mode)
    engine_error: str | None = None
    raw_reply: str | None = None  # the reply text as the engine gave it (generate mode)
    variant: Variant | None = None  # the request's variant, passed on for the reducer
    draws: tuple[Code | None, ...] | None = None  # --samples K: every draw's code, in draw order
    note: str | None = None  # what reading the answer changed (verbalized: shares normalised)


@_by_arguments
@dataclass(frozen=True, slots=True)
class ScoredItem:
    person_id: int
    question_id: str
    country_code: str | None
    true_code: Code
    predicted_code: Code | None
    correct: bool
    parse_error: str | None
    country_specific: bool
    offered_codes: tuple[Code, ...]
    distribution: dict[Code, float] | None = None
    groups: dict[str, str] = field(default_factory=dict)  # persona attribute -> group (sex, age_group, ...)
    engine_error: str | None = None  # no reply (the engine failed): not a parse failure, not an answer
    raw_reply: str | None = None  # the reply text as the engine gave it (generate mode)
    draws: tuple[Code | None, ...] | None = None  # --samples K: every draw's code (the long export's rows)
    numeric: Span | None = None  # Item.numeric: scored by its error (socbench.metrics.numeric), not as a code


@dataclass(frozen=True)
class DomainResult:
    """One domain run's counts and metrics, for ``report`` (see metrics.persona_groups, .distribution...)."""
    domain_id: int
    domain_name: str
    model: str
    total_items: int
    scoreable_items: int
    excluded_by_reason: dict[str, int]
    parse_failures: int
    metrics: dict[str, float]
    per_country: dict[str, dict[str, float]]
    baselines: dict[str, float]
    unmapped_countries: dict[str, int]
    interview_count: int
    breakdowns: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    distribution: dict[str, dict[str, float]] = field(default_factory=dict)
    accuracy_ci: tuple[float, float] | None = None  # 95% respondent-cluster bootstrap
    engine_errors: int = 0  # requests the engine could not answer: any makes the domain incomplete
    engine_error_reasons: dict[str, int] = field(default_factory=dict)
    parse_failure_reasons: dict[str, int] = field(default_factory=dict)
    alignment: dict[str, dict[str, float]] = field(default_factory=dict)
    questions: dict[str, dict[str, Any]] = field(default_factory=dict)
    run: str = ""  # the run's folder name ("" = the model's); ``model`` is always the model asked
    weights_off: str | None = None  # why there are no weighted metrics (None: there are)
    yardsticks: dict[str, Any] = field(default_factory=dict)  # socbench.yardsticks (empty: older results)
    sample: dict[str, Any] = field(default_factory=dict)  # DomainData.sample (empty: older results)
    grouping: str = COUNTRY  # what ``per_country`` and the items' country_code group by (DomainData's)
    usage: dict[str, int] = field(default_factory=dict)  # Answers.usage: this run's requests and tokens
    estimates: dict[str, Any] = field(default_factory=dict)  # estimates.study.gain_record (empty: older)
    numeric: dict[str, Any] = field(default_factory=dict)  # metrics.numeric.numeric_scores (empty: none)

    @property
    def complete(self) -> bool:
        """Every request was answered by the engine; only then are the metrics a result."""
        return self.engine_errors == 0

    @property
    def unit_id(self) -> int:
        return self.domain_id

    @property
    def incomplete_reason(self) -> str | None:
        return incomplete_reason(self.engine_errors, self.engine_error_reasons)


@dataclass(frozen=True)
class ScoredDomain:
    """What ``score`` hands to ``report`` (variants and their scores with circular evaluation)."""
    items: tuple[ScoredItem, ...]
    result: DomainResult
    variants: tuple[VariantResult, ...] | None = None
    circular_scores: CircularScores | None = None


@dataclass(frozen=True)
class CircularSettings:
    """How a run expands items (``socbench.circular``); seed/shuffle_options also fix ISSP's base order.
    Built from a validated configuration (``RunConfig``, ``McqConfig``): the flags' checks are theirs."""
    mode: CircularMode
    max_variants: int | None = None
    seed: int = 42
    shuffle_options: bool = False
    labels: CircularLabels = "order_only"


@dataclass(frozen=True)
class Variant:
    """One displayed order of an item (conventions in ``socbench.circular``)."""
    qid: str
    pattern: Pattern  # original labels in displayed order
    shown: Pattern  # the label displayed at each position
    origin: Pattern  # original labels in original order
    gold: str  # displayed label of the gold option
    texts: tuple[str, ...] = ()  # the option text displayed at each position
    sampled: bool = False  # one of a seeded sample of all_possible orders

    @property
    def options(self) -> tuple[tuple[str, str], ...]:
        return tuple(zip(self.shown, self.texts, strict=True))

    @property
    def variant_id(self) -> str:
        """``<qid>--ABCD`` (one-character labels, OpenCompass's form), else ``<qid>--1,10,-4``."""
        joint = "" if all(len(label) == 1 for label in self.pattern) else ","
        return f"{self.qid}--{joint.join(self.pattern)}"

    @property
    def is_origin(self) -> bool:
        return self.pattern == self.origin

    @property
    def request_id(self) -> str:
        """The id its request carries: the plain qid for the normal prompt (identity order, own labels)."""
        return self.qid if self.is_origin and self.shown == self.pattern else self.variant_id

    @property
    def gold_original(self) -> str:
        return self.pattern[self.shown.index(self.gold)]

    def to_original(self, label: str | None) -> str | None:
        """A displayed label mapped back to the original label of the same option."""
        return self.pattern[self.shown.index(label)] if label in self.shown else None


@dataclass(frozen=True)
class VariantResult(Variant):
    """A variant with the model's answer (a displayed label, None when unreadable)."""
    prediction: str | None = None
    parse_error: str | None = None

    @classmethod
    def of(cls, variant: Variant, prediction: str | None, parse_error: str | None = None) -> VariantResult:
        return cls(variant.qid, variant.pattern, variant.shown, variant.origin, variant.gold, (),
                   variant.sampled, prediction, parse_error)

    @property
    def correct(self) -> bool:
        return self.prediction is not None and self.prediction == self.gold


@dataclass(frozen=True)
class CircularScores:
    """Metrics by OpenCompass name; per family how many questions and variants entered."""
    metrics: dict[str, float]
    questions: dict[str, int]
    variants: dict[str, int]
    sampled_questions: int
