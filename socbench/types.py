"""Every record that crosses a pipeline stage, in one file (simple-evals' ``types.py``).

Records are frozen: each stage returns new ones. Option codes are always strings
(``"1"``, ``"-4"``, ``"95"``) so that JSON keys, prompts and answers compare directly.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Literal

Code = str
Mode = Literal["generate", "logprobs"]


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Question:
    """One survey question: base options plus per-country overrides."""

    id: str
    text: str
    options: dict[Code, str]
    special: dict[str, dict[Code, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Respondent:
    """A real (or synthetic) person: attributes without missing-value labels, and answers.

    ``country_code`` is None when the country name could not be mapped; such respondents
    are kept and reported, never dropped silently.
    """

    person_id: int
    country_name: str | None
    country_code: str | None
    attributes: dict[str, str]
    answers: dict[str, Code | None]  # question id (as in the question set) -> normalised code


@dataclass(frozen=True)
class DomainData:
    """What ``load_data`` returns for one domain."""

    domain_id: int
    domain_name: str
    questions: tuple[Question, ...]
    respondents: tuple[Respondent, ...]
    unmapped_countries: dict[str, int]  # country name -> respondents that could not be mapped
    source: str  # the answer file read


@dataclass(frozen=True)
class Item:
    """One (respondent, question) pair with the options that respondent was shown."""

    person_id: int
    question_id: str
    country_code: str | None
    options: tuple[tuple[Code, str], ...]  # effective options in survey order
    true_code: Code | None
    country_specific: bool
    excluded_reason: str | None = None

    @property
    def item_id(self) -> str:
        return f"{self.person_id}:{self.question_id}"

    @property
    def offered_codes(self) -> tuple[Code, ...]:
        return tuple(code for code, _ in self.options)


# ------------------------------------------------------------------------ prompts


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class SamplingSettings:
    """Decoding settings; part of every cache key."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 64
    seed: int | None = None


@dataclass(frozen=True)
class PromptRequest:
    """A prompt ready for an engine, with its provenance.

    ``chat`` False means ``messages`` holds one user message whose content is sent as
    raw text (no chat template), as for ARC prompts. In ``logprobs`` mode the engine
    scores each offered code as the continuation of ``answer_prefix``. ``structured``
    asks the engine to constrain the reply to ``{"answer": "<offered code>"}``.
    """

    item_id: str
    messages: tuple[Message, ...]
    mode: Mode = "generate"
    offered_codes: tuple[Code, ...] = ()
    option_order: tuple[Code, ...] = ()  # codes in the order shown (after any shuffle)
    answer_prefix: str = ""
    structured: bool = False
    chat: bool = True
    sampling: SamplingSettings = SamplingSettings()

    @property
    def key(self) -> str:
        """Content hash over everything that can change the engine's answer."""
        payload = {
            "messages": [[m.role, m.content] for m in self.messages],
            "mode": self.mode,
            "codes": list(self.offered_codes),
            "prefix": self.answer_prefix,
            "structured": self.structured,
            "chat": self.chat,
            "sampling": [self.sampling.temperature, self.sampling.top_p,
                         self.sampling.max_tokens, self.sampling.seed],
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class LoglikelihoodRequest:
    """Score ``continuation`` given ``context`` (raw text, no chat template)."""

    context: str
    continuation: str

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps([self.context, self.continuation]).encode()).hexdigest()


# ------------------------------------------------------------------------ results


@dataclass(frozen=True)
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
class Extraction:
    """The code read from an answer, or None with the reason it could not be read.

    ``failure`` is an extraction failure (the reply could not be read); ``engine_error`` means
    there was no reply at all (the engine failed): that is not an answer, and a domain with one
    is incomplete. ``raw_reply`` is the reply text as the engine gave it (generate mode).
    """

    key: str
    code: Code | None
    failure: str | None = None
    distribution: dict[Code, float] | None = None  # normalised probabilities (logprobs mode)
    engine_error: str | None = None
    raw_reply: str | None = None


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class DomainResult:
    """Counts and metrics of one domain run; what ``report`` writes."""

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
    # {persona attribute: {group: {n, accuracy, parse_failure_rate}}} (metrics.persona_groups)
    breakdowns: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    # {level: {groups, wasserstein, js, uniform_wasserstein, uniform_js, ...}} (metrics.distribution)
    distribution: dict[str, dict[str, float]] = field(default_factory=dict)
    accuracy_ci: tuple[float, float] | None = None  # 95% respondent-cluster bootstrap
    # requests the engine could not answer, by reason (first seen first); any makes the domain incomplete
    engine_errors: int = 0
    engine_error_reasons: dict[str, int] = field(default_factory=dict)
    parse_failure_reasons: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Every request was answered by the engine; only then are the metrics a result."""
        return self.engine_errors == 0

    @property
    def incomplete_reason(self) -> str | None:
        """``"K engine errors, first: <reason>"``, or None for a complete domain."""
        if self.complete:
            return None
        first = next(iter(self.engine_error_reasons), "unknown")
        return f"{self.engine_errors} engine error{'s' * (self.engine_errors != 1)}, first: {first}"
