"""Which in-process backend runs a job: the one the user forced, or ``auto``'s pick for the method and host.

On a CPU host scoring-only jobs run ~3x faster on transformers (quick start, ``_packed``
computes each context once); generation needs vLLM's constrained decoding and prefix cache.
On a GPU vLLM wins both. The choice is recorded in the run's results (requested, chosen, why)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from socbench.engines.settings import EngineSettings, cuda_available

AUTO = "auto"
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
