"""Prefect flows: composition only. A flow that ends Failed returns ``failed(message, outcome)``
(never raises), so every flow's outcome is read the same way, in a worker or in this process."""

from __future__ import annotations

from typing import Any

from socbench.errors import RunFailed


def failed(message: str, outcome: Any) -> Any:
    """A Failed state that carries ``outcome`` inside a ``RunFailed`` (Prefect's data of a Failed
    state must be an exception: a worker raises it when the run ends)."""
    from prefect.states import Failed

    return Failed(message=message, data=RunFailed(message, outcome))


def run_inprocess(flow: Any, config: Any) -> Any:
    """Run ``flow(config)`` in this process (ephemeral Prefect, no server); its outcome, a failed
    run's too (carried by its ``RunFailed``)."""
    outcome = flow(config, return_state=True).result(raise_on_failure=False)
    if isinstance(outcome, RunFailed):
        return outcome.outcome
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome
