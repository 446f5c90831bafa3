"""MCQ stage 4: predictions per item, k and method (a pure function of the log-probs);
with ``--circular``, each MCP variant's letter mapped back to the original options."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from socbench.mcq import score_mcq
from socbench.types import McqAnswers, McqPlan, McqScores


@task(name="mcq_score", cache_policy=NO_CACHE, persist_result=False)
def mcq_score(plan: McqPlan, answers: McqAnswers) -> McqScores:
    return score_mcq(plan, answers)
