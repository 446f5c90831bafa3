"""Which in-process backend runs a job: the one the user forced, or ``auto``'s pick for the method and host.

Why a choice at all: on a CPU host the fastest backend depends on the method.
Scoring-only jobs (CP's log-likelihoods, MCP's option log-probs) run ~3x faster end to
end on transformers here: it starts in ~2 s where vLLM's CPU engine needs 10-40 s, and
``engines/_packed`` computes each context once, many contexts per forward pass (vLLM
recomputes a context for every option because prompt-logprob requests skip its prefix
cache). Generation needs vLLM's constrained decoding, and ISSP prompts share persona
prefixes across questions that only vLLM's prefix cache reuses. On a GPU vLLM wins both.

The choice is made once per run here and recorded in its results (requested, chosen,
why); ``vllm``/``hf`` are always obeyed as given.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from socbench.engines.settings import EngineSettings, cuda_available

AUTO = "auto"
IN_PROCESS = ("vllm", "hf")
Work = Literal["scoring", "generation"]


@dataclass(frozen=True)
class BackendChoice:
    requested: str
    chosen: str
    reason: str

    def record(self) -> dict[str, str]:
        return asdict(self)


def choose_backend(requested: str, work: Work, *, cuda: bool | None = None) -> BackendChoice:
    """``requested`` as given unless it is ``auto``; then vLLM on a GPU host or for generation,
    transformers for scoring-only work on a CPU host."""
    if requested != AUTO:
        return BackendChoice(requested, requested, "forced by the user")
    if cuda_available() if cuda is None else cuda:
        return BackendChoice(AUTO, "vllm", "GPU host: vLLM batches best")
    if work == "generation":
        return BackendChoice(AUTO, "vllm",
                             "CPU host, generation: vLLM's constrained decoding and prefix cache")
    return BackendChoice(AUTO, "hf", "CPU host, scoring only: transformers starts in seconds and "
                                     "computes each context once (packed scoring)")


def resolve_engine(settings: EngineSettings, work: Work) -> EngineSettings:
    """``settings`` with ``auto`` replaced by the chosen backend (its ``--engine`` values are
    checked against that backend here); other backends come back unchanged."""
    if settings.api_type != AUTO:
        return settings
    chosen = choose_backend(AUTO, work).chosen
    return EngineSettings.model_validate({**settings.model_dump(), "api_type": chosen})
