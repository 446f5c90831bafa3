"""The ISSP persona benchmark (and any imported survey) as Prefect flows: composition only.

Retrying a failed ``issp`` run reruns only the domains that did not complete (the others come back from
their persisted results), and the engine cache sends only the requests without an answer.
"""

from __future__ import annotations

from prefect import flow

from socbench.config import RunConfig
from socbench.flows import run_unit, run_units
from socbench.outcomes import Outcome
from socbench.tasks import Sealed

DEFAULT_CONFIG = RunConfig()  # the embedded model on the demo data


@flow(name="issp-domain", persist_result=True, flow_run_name="issp-domain-{domain_id}")
def issp_domain(domain_id: int, config: RunConfig, own_engine: bool = True) -> Sealed:
    """One domain, stage by stage; its DomainResult sealed (``tasks.unsealed`` reads it); Failed once its
    files are written if requests went unanswered."""
    return run_unit(config, domain_id, own_engine)


@flow(name="issp", persist_result=True)
def issp(config: RunConfig = DEFAULT_CONFIG, api_key_secret: str | None = None) -> Outcome:
    """All requested domains on one engine (loaded on the first cache miss); Failed if any domain failed or
    is incomplete. The API key: ``config.engine.api_key_env`` on the worker, or the Secret block
    ``api_key_secret``; never a parameter itself."""
    return run_units(config, issp_domain, api_key_secret)
