"""Prefect tasks: one pipeline stage per module, each a thin wrapper over ``socbench``."""

from functools import partial
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

# No task keeps a result of its own: the engine cache is the one answer cache, and what the stages hand
# on (every prompt and answer of a unit) is too big to persist for nothing.
stage = partial(task, cache_policy=NO_CACHE, persist_result=False)



class Sealed:
    """A unit flow's result as the flow returns it: Prefect walks a flow's return value for futures, every
    nested value of a domain's record (0.35 s a domain at 1,000 respondents), but not an object it does not
    know. (Not ``quote``: a retried parent read a persisted one back as a bare tuple.)"""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def unsealed(value: Any) -> Any:
    """The result a unit flow sealed (one persisted before it sealed them: as it is)."""
    return value.value if isinstance(value, Sealed) else value
