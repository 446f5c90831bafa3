"""Prefect flows: composition only. A flow that ends Failed returns ``Failed(message=..., data=outcome)``
(never raises), so every flow's outcome is read the same way, in a worker or in this process."""

from __future__ import annotations

from typing import Any


def run_inprocess(flow: Any, config: Any) -> Any:
    """Run ``flow(config)`` in this process (ephemeral Prefect, no server); its outcome, a failed
    run's too (the data of its Failed state)."""
    outcome = flow(config, return_state=True).result(raise_on_failure=False)
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome
