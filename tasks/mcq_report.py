"""MCQ stage 5: predictions, results, the seed's table and a plot; the table as a UI artifact."""

from __future__ import annotations

import time

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from socbench.mcq import McqAnswers, McqConfig, McqData, McqPlan, Prediction, write_mcq_files


@task(name="mcq_report", cache_policy=NO_CACHE, persist_result=False)
def mcq_report(data: McqData, plan: McqPlan, answers: McqAnswers, predictions: list[Prediction],
               config: McqConfig, started: float) -> dict:
    files = write_mcq_files(config.output_dir, config.model, data, plan, answers, predictions,
                            wall_s=time.time() - started)
    create_markdown_artifact(files.table_md.read_text(encoding="utf-8"), key="mcq-table",
                             description=f"CP vs MCP: {data.dataset}, {config.model}")
    return {"dataset": data.dataset, "table": str(files.table_md), "results": str(files.results),
            "predictions": str(files.predictions), "csv": str(files.table_csv), "plot": str(files.plot)}
