"""CP vs MCP on multiple-choice questions (Robinson et al. 2022): cloze and letter prompting.

Stages, each a plain function the Prefect tasks call once: ``load_mcq`` (items and the
few-shot pool) -> ``build_plan`` (engine requests per item and k) -> ``ask_engine``
(answers by request key) -> ``score_plan`` (predictions per item, k and method; pure) ->
``write_mcq_files`` (predictions, results, the seed's table, a plot).
"""

from socbench.mcq.config import McqConfig, make_mcq_config
from socbench.mcq.datasets import McqData, McqItem, load_jsonl, load_mcq
from socbench.mcq.evaluate import McqAnswers, ask_engine, preload
from socbench.mcq.prompts import McqPlan, build_plan, draw_shots
from socbench.mcq.results import McqFiles, write_mcq_files
from socbench.mcq.scoring import COLUMNS, METHODS, Prediction, accuracies, score_plan
from socbench.mcq.specs import TASKS, McqTaskSpec, get_task

__all__ = [
    "COLUMNS", "METHODS", "TASKS", "McqAnswers", "McqConfig", "McqData", "McqFiles", "McqItem", "McqPlan",
    "McqTaskSpec", "Prediction", "accuracies", "ask_engine", "build_plan", "draw_shots", "get_task",
    "load_jsonl", "load_mcq", "make_mcq_config", "preload", "score_plan", "write_mcq_files",
]
