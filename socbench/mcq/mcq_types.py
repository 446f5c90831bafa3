"""The records of a CP vs MCP run: McqData -> McqPlan -> McqAnswers -> McqScores."""

from __future__ import annotations

from dataclasses import dataclass, field

from socbench.errors import incomplete_reason
from socbench.types import (
    Answers,
    CircularSettings,
    EngineResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    PromptRequest,
    Variant,
    VariantResult,
)


@dataclass(frozen=True)
class McqItem:
    """One question, options in the source's order and labels (A-E, 1-4, else letters by
    position); ``gold`` indexes ``choices``. Prompts always show letters by position."""
    id: str
    question: str
    choices: tuple[tuple[str, str], ...]
    gold: int
    split: str
    subject: str | None = None

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(text for _, text in self.choices)

    @property
    def gold_text(self) -> str:
        return self.choices[self.gold][1]


@dataclass(frozen=True)
class McqData:
    """What one run evaluates, and the pool its few-shot examples come from."""
    dataset: str  # task name or file stem: names the result files
    eval_split: str
    fewshot_split: str  # recorded in the results: where shots were drawn from
    items: tuple[McqItem, ...]
    fewshot_pool: tuple[McqItem, ...]
    source: str  # files read, for the results


@dataclass(frozen=True)
class ItemPrompts:
    """The requests of one (item, k) (empty where a method is not run), or of one variant."""
    item: McqItem
    k_shot: int
    shot_ids: tuple[str, ...]
    cp: tuple[LoglikelihoodRequest, ...]
    uncond: tuple[LoglikelihoodRequest, ...]
    mcp: PromptRequest | None
    variant: Variant | None = None


@dataclass(frozen=True)
class McqPlan:
    """Every request of a run: per (item, k), items in order, k inner; then MCP variants."""
    dataset: str
    methods: tuple[str, ...]
    k_shots: tuple[int, ...]
    tolerance: bool
    seed: int
    prompts: tuple[ItemPrompts, ...]
    circular_settings: CircularSettings | None = None
    variants: tuple[ItemPrompts, ...] = ()


@dataclass(frozen=True)
class McqAnswers(Answers):
    """The engine's answers (and what they cost), also by request key and kind (required: without its
    option answers a run could not say it is incomplete)."""
    loglikelihoods: dict[str, LoglikelihoodResult] = field(kw_only=True)
    options: dict[str, EngineResult] = field(kw_only=True)

    @property
    def incomplete_reason(self) -> str | None:
        """Over MCP's option requests (the ones an engine error leaves out)."""
        failed = [r.error for r in self.options.values() if r.error is not None]
        return incomplete_reason(len(failed), failed)


@dataclass(frozen=True)
class Prediction:
    """One item, k and method: its scores per option (source order) and what it predicts."""
    item_id: str
    k_shot: int
    method: str
    gold: int
    scores: tuple[float | None, ...]
    prediction: int | None
    shot_ids: tuple[str, ...]
    mass: float | None = None  # MCP only: probability on the codes scored

    @property
    def correct(self) -> bool:
        return self.prediction == self.gold


@dataclass(frozen=True)
class McqScores:
    """What ``mcq_score`` hands to ``mcq_report``: predictions, and variant results per k."""
    predictions: tuple[Prediction, ...]
    variants: dict[int, tuple[VariantResult, ...]] = field(default_factory=dict)
