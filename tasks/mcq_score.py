"""MCQ stage 4: predictions per item, k and method (a pure function of the log-probs)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.mcq import McqAnswers, McqPlan, Prediction, score_plan


@task(name="mcq_score", cache_policy=NO_CACHE, persist_result=False)
def mcq_score(plan: McqPlan, answers: McqAnswers) -> list[Prediction]:
    return score_plan(plan, answers.loglikelihoods, answers.options)
