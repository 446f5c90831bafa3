"""Many calls, few at a time: a whole survey's requests (millions) are made and started a window at a time,
never all at once (a task and a request body per call were gigabytes at a whole module's 2.8 million)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
WINDOW = 1024  # calls started at once, at least (the OpenAI transport: 4 x concurrent_requests above that)


async def windowed(count: int, run: Callable[[int], Awaitable[T]], window: int) -> list[T]:
    """``run(i)`` for each ``i < count`` in order, at most ``window`` of them started and unfinished at once
    (a task per call made up front held every call's coroutine: millions at a whole survey's size); the
    results in order. The first that raises (a failing sink) cancels the rest and is raised."""
    results: list[Any] = [None] * count
    slots, running, failed = asyncio.Semaphore(window), set(), []

    async def one(index: int) -> None:
        try:
            results[index] = await run(index)
        finally:
            slots.release()

    def done(task: asyncio.Future[None]) -> None:
        running.discard(task)
        if not task.cancelled() and task.exception() is not None:
            failed.append(task.exception())

    try:
        for index in range(count):
            await slots.acquire()
            if failed:
                break
            task = asyncio.ensure_future(one(index))
            running.add(task)
            task.add_done_callback(done)
        while running and not failed:
            await asyncio.wait(set(running), return_when=asyncio.FIRST_EXCEPTION)
    finally:  # cancel the rest before the session closes
        for task in list(running):
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
    if failed:
        raise failed[0]
    return results


class LazyCalls(Sequence[T]):
    """``make(item)`` for each item, made when it is sent: a whole survey's request bodies at once were
    gigabytes (``windowed`` holds a window's)."""

    def __init__(self, items: Sequence[Any], make: Callable[[Any], T]) -> None:
        self.items, self.make = items, make

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: Any) -> Any:  # int indices only: calls are sent one by one, never sliced
        return self.make(self.items[index])
