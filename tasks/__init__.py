"""Prefect tasks: one pipeline stage per module, each a thin wrapper over ``socbench``."""

from functools import partial

from prefect import task
from prefect.cache_policies import NO_CACHE

# No task keeps a result of its own: the engine cache is the one answer cache, and what the stages hand
# on (every prompt and answer of a unit) is too big to persist for nothing.
stage = partial(task, cache_policy=NO_CACHE, persist_result=False)
