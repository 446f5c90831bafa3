"""MCQ stage 4: predictions per item, k and method (a pure function of the log-probs);
with ``--circular``, each MCP variant's letter mapped back to the original options."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.circular import VariantResult
from socbench.mcq import McqAnswers, McqPlan, Prediction, score_plan
from socbench.mcq.circular import CircularPlan, score_circular


@task(name="mcq_score", cache_policy=NO_CACHE, persist_result=False)
def mcq_score(plan: McqPlan, answers: McqAnswers) -> list[Prediction]:
    return score_plan(plan, answers.loglikelihoods, answers.options)


@task(name="mcq_circular_score", cache_policy=NO_CACHE, persist_result=False)
def mcq_circular_score(circular: CircularPlan, answers: McqAnswers) -> dict[int, list[VariantResult]]:
    return score_circular(circular, answers.options)
