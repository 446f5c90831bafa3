"""CP vs MCP as a Prefect flow: composition only, one line per stage.

load -> prompts -> engine (cached, retried) -> score -> report; the engine is torn down
in ``finally`` whatever happens. A run whose MCP requests got engine errors ends Failed once its
files are written (incomplete: MCP is left out of its table). With ``circular``, each stage
takes the MCP variants along with the normal requests. ``socbench mcq`` runs the same flow
in-process.
"""

from __future__ import annotations

import time
from functools import partial

from prefect import flow
from prefect.states import State

from socbench.flows import failed as failed_state
from socbench.mcq import ask_engine, request_count
from socbench.mcq.config import McqConfig
from socbench.records import McqOutcome
from socbench.tasks.mcq_load import mcq_load
from socbench.tasks.mcq_prompts import mcq_prompts
from socbench.tasks.mcq_report import mcq_report
from socbench.tasks.mcq_score import mcq_score
from socbench.tasks.secrets import with_secret_key
from socbench.tasks.teardown import teardown_safely
from socbench.tasks.vllm_generate import vllm_generate

mcq_engine = vllm_generate.with_options(name="mcq_engine")  # the one engine task, under MCQ's stage name

DEFAULT_CONFIG = McqConfig()  # ARC-Easy, CP and MCP, 0-shot, the embedded model


@flow(name="mcq", persist_result=True)
def mcq(config: McqConfig = DEFAULT_CONFIG, api_key_secret: str | None = None) -> McqOutcome:
    """CP-RAW/UN/LN and MCP(-Tolerance) accuracies for each k (and with ``circular``
    (circular | all_possible) MCP's circular metrics); the files' paths. The API key is read
    as in ``issp`` (``config.engine.api_key_env`` or the Secret block ``api_key_secret``)."""
    return run_mcq(with_secret_key(config, api_key_secret))


def run_mcq(config: McqConfig) -> McqOutcome | State:
    """The flow's body: each stage once, the engine released at the end; Failed (its outcome
    kept) when incomplete."""
    started = time.time()
    try:
        data = mcq_load(config)
        plan = mcq_prompts(data, config)
        answers = mcq_engine(plan, config, "mcq-progress", plan.dataset,
                             partial(ask_engine, backend=config.backend_choice().record()), request_count)
        scores = mcq_score(plan, answers)
        outcome = mcq_report(data, plan, answers, scores, config, started)
        if not outcome.complete:
            return failed_state(f"{outcome.dataset}: {outcome.incomplete_reason}", outcome)
        return outcome
    finally:
        teardown_safely()

