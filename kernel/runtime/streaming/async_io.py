"""Where an async operator's coroutines run: the :class:`AsyncExecutor` a backend gives it.

The operator (:mod:`kernel.runtime.streaming.operators.async_wait`) starts a coroutine per input and is
called back, in its task's thread of control, with the result or the exception; its timeouts
and retry delays are timers on the same thread. When it cannot take an element (its capacity
is used up) it *yields*, as Flink's AsyncWaitOperator yields to the mailbox: a blocking
executor runs the coroutines until there is room again; the local runtime's executor stops
the task's input instead (the task is back pressured) and lets mails run.

:class:`BlockingAsyncExecutor` is the blocking kind: one asyncio loop of its own, driven in the
calling thread whenever the operator has to wait (the Spark backend's partitions, BATCH).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Coroutine

#: an ``async_invoke`` bound to its input: starts the coroutine of one attempt
Invocation = Callable[[], Coroutine[Any, Any, Any]]
#: called with ``(result, None)`` or ``(None, exception)`` when an attempt ended
Completion = Callable[[Any, "BaseException | None"], None]


class AsyncExecutor:
    """Runs an operator's coroutines; every callback runs in the operator's task."""

    def now_ms(self) -> int:
        """The task's processing time (ms)."""
        raise NotImplementedError

    def submit(self, invocation: Invocation, completion: Completion) -> None:
        """Start ``invocation()``; ``completion`` gets its result or exception later."""
        raise NotImplementedError

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Any:
        """Run ``callback`` after ``delay_ms`` of the task's time; the handle has ``cancel()``."""
        raise NotImplementedError

    def yield_until(self, condition: Callable[[], bool]) -> None:
        """The operator cannot go on with its input until ``condition()`` holds."""
        raise NotImplementedError

    def when(self, condition: Callable[[], bool], then: Callable[[], None]) -> bool:
        """True if ``condition()`` holds now (a blocking executor first runs the coroutines
        until it does); else False, and ``then()`` runs once a callback made it hold."""
        raise NotImplementedError

    def close(self) -> None:
        """Cancel what still runs; no callback comes after this."""
        raise NotImplementedError


async def attempt(invocation: Invocation) -> tuple[Any, BaseException | None]:
    """One attempt of a user coroutine: its result, or what it raised (task cancellation apart)."""
    try:
        return await invocation(), None
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # the operator decides (retry, fail the task)
        return None, exc


class BlockingAsyncExecutor(AsyncExecutor):
    """An asyncio loop of the operator's own, run in the calling thread while the operator
    waits (``yield_until``, ``when``); coroutines started meanwhile run concurrently. An
    exception of a callback stops the loop and is raised where the operator waited."""

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now_ms = now_ms
        self._loop = asyncio.new_event_loop()
        self._wakeup: asyncio.Future | None = None
        self._failure: BaseException | None = None

    def now_ms(self) -> int:
        return self._now_ms()

    def submit(self, invocation: Invocation, completion: Completion) -> None:
        async def run() -> None:
            result, error = await attempt(invocation)
            self._deliver(completion, result, error)

        self._loop.create_task(run())

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Any:
        return self._loop.call_later(max(delay_ms, 0) / 1000, self._deliver, lambda _r, _e: callback(), None, None)

    def _deliver(self, completion: Completion, result: Any, error: BaseException | None) -> None:
        try:
            completion(result, error)
        except BaseException as exc:
            if self._failure is None:
                self._failure = exc
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    def _run_until(self, condition: Callable[[], bool]) -> None:
        while self._failure is None and not condition():
            self._wakeup = self._loop.create_future()
            self._loop.run_until_complete(self._wakeup)
        self._wakeup = None
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def yield_until(self, condition: Callable[[], bool]) -> None:
        self._run_until(condition)

    def when(self, condition: Callable[[], bool], then: Callable[[], None]) -> bool:
        self._run_until(condition)
        return True

    def close(self) -> None:
        loop = self._loop
        if loop.is_closed():
            return
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.close()
