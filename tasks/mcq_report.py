"""MCQ stage 5: predictions, results, the original system's table and a plot (with ``--circular``, the
circular files and summary table first); the tables as UI artifacts."""

from __future__ import annotations

import time
from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from socbench import progress
from socbench.mcq import McqConfig, write_mcq_files
from socbench.records import McqOutcome
from socbench.types import McqAnswers, McqData, McqPlan, McqScores


@task(name="mcq_report", cache_policy=NO_CACHE, persist_result=False)
def mcq_report(data: McqData, plan: McqPlan, answers: McqAnswers, scores: McqScores,
               config: McqConfig, started: float) -> McqOutcome:
    outcome = write_mcq_files(config.output_dir, config.engine.model, data, plan, answers, scores,
                              wall_s=time.time() - started)
    create_markdown_artifact(Path(outcome.table).read_text(encoding="utf-8"), key="mcq-table",
                             description=f"CP vs MCP: {data.dataset}, {config.engine.model}")
    if outcome.circular_table is not None:
        create_markdown_artifact(Path(outcome.circular_table).read_text(encoding="utf-8"), key="mcq-circular",
                                 description=f"Circular evaluation ({config.circular}): {data.dataset}")
    incomplete = outcome.incomplete_reason
    progress.end(f"{data.dataset}: {len(data.items)} items, "
                 + (f"INCOMPLETE, not a result ({incomplete})" if incomplete else "every request answered"))
    return outcome
