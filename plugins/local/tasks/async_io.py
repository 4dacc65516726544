"""The local runtime's :class:`~kernel.runtime.streaming.async_io.AsyncExecutor`: an async operator's
coroutines run on an asyncio loop of the operator's own while its task goes on.

* Simulated clock: a :class:`~kernel.runtime.simulated_asyncio.SimulatedAsyncioLoop` whose time is the
  kernel clock and whose callbacks run on the task's kernel loop, so ``await asyncio.sleep(2)`` takes 2 s
  of simulated time and a re-run gives the same events.
* Realtime clock: a real asyncio loop in a thread of the operator's own (PyFlink runs one loop
  thread per operator), so real I/O works; the task's kernel loop waits for it (``io_started``).

Either way every outcome comes back to the task as a mail, and timeouts and retry delays are
timers of the task on the kernel clock: the operator's state is only touched in its task's
thread of control. When the operator yields (its capacity is used up), the task's default
action is suspended with the back-pressured timer (reason ``async_capacity``) until the
operator can take input again: the task is back pressured by its own async operator. Flink's
AsyncWaitOperator yields inside ``processElement`` (``MailboxExecutor.yield()``), which
Flink's TimerGauges count as busy time; rill shows it as back pressure.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any, Callable

from kernel.clock import NS_PER_MS
from kernel.runtime.simulated_asyncio import SimulatedAsyncioLoop
from kernel.runtime.streaming.async_io import AsyncExecutor, Completion, Invocation, attempt
from kernel.runtime.streaming.outputs import blaming

if TYPE_CHECKING:
    from kernel.contracts.mailbox import MailboxProcessor
    from plugins.local.tasks.io_metrics import TaskIOMetrics
    from plugins.local.tasks.streamtask import StreamTask


class AsyncioThread(threading.Thread):
    """A real asyncio loop running in a daemon thread (realtime clock)."""

    def __init__(self, name: str) -> None:
        super().__init__(name=f"rill-async {name}", daemon=True)
        self.loop = asyncio.new_event_loop()

    def run(self) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        finally:
            loop.close()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.join(timeout=1.0)


class LocalAsyncExecutor(AsyncExecutor):
    def __init__(self, task: StreamTask, operator_name: str) -> None:
        self.task = task
        self.operator_name = operator_name
        run = task.run
        self._kernel = task.loop
        self._clock = run.clock
        self._closed = False
        self._blocked: Callable[[], bool] | None = None  # the operator yields until this holds
        self._resume: Callable[[], None] | None = None  # of the task's suspension while blocked
        self._waiting: list[tuple[Callable[[], bool], Callable[[], None]]] = []  # (condition, then) of ``when``
        self._io = 0  # realtime: requests announced to the kernel loop and not yet back
        self._thread: AsyncioThread | None = None
        self._simulated: SimulatedAsyncioLoop | None = None
        if run.clock.mode == "simulated":
            self._simulated = SimulatedAsyncioLoop(task.loop)
        else:
            self._thread = AsyncioThread(operator_name)
            self._thread.start()

    def now_ms(self) -> int:
        return self._clock.now_ms()

    # -- requests -----------------------------------------------------------------------------

    def submit(self, invocation: Invocation, completion: Completion) -> None:
        if self._closed:
            return
        if self._simulated is not None:
            async def simulated() -> None:
                result, error = await attempt(invocation)
                self._deliver(completion, result, error)

            self._simulated.create_task(simulated())
            return
        kernel = self._kernel
        kernel.io_started()
        self._io += 1

        async def threaded() -> None:
            result, error = await attempt(invocation)
            kernel.call_soon_threadsafe(self._arrived, completion, result, error)

        asyncio.run_coroutine_threadsafe(threaded(), self._thread.loop)

    def _arrived(self, completion: Completion, result: Any, error: BaseException | None) -> None:
        """A realtime request came back (in the kernel loop's thread)."""
        if self._closed:
            return  # close() released what was announced
        self._io -= 1
        self._kernel.io_finished()
        self._deliver(completion, result, error)

    def _deliver(self, completion: Completion, result: Any, error: BaseException | None) -> None:
        if not self._closed:
            self.task.mailbox.execute(lambda: self._run(completion, result, error), "async result")

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Any:
        when = self._clock.now() + max(delay_ms, 0) * NS_PER_MS
        return self.task.schedule_mail(when, lambda: self._run(lambda _r, _e: callback(), None, None), "async timer")

    def _run(self, completion: Completion, result: Any, error: BaseException | None) -> None:
        """A callback of the operator, as a mail of its task; then whoever waits for the
        operator learns whether it may go on."""
        if self._closed:
            return
        with blaming(self.operator_name):
            completion(result, error)
        self._check()

    # -- waiting ------------------------------------------------------------------------------

    def yield_until(self, condition: Callable[[], bool]) -> None:
        self._blocked = condition

    @property
    def blocked(self) -> bool:
        """The operator yields: it cannot take more input yet."""
        return self._blocked is not None

    def input_blocked(self, suspend: Callable[[], Callable[[], None]]) -> bool:
        """Whether the operator yields: then the task suspends its input with ``suspend()``
        (which returns the resume callback) until the operator can go on."""
        if self._blocked is None:
            return False
        self._resume = suspend()
        return True

    def when(self, condition: Callable[[], bool], then: Callable[[], None]) -> bool:
        if condition():
            return True
        self._waiting.append((condition, then))
        return False

    def _check(self) -> None:
        blocked = self._blocked
        if blocked is not None and blocked():
            self._blocked = None
            resume, self._resume = self._resume, None
            if resume is not None:
                resume()
        if self._waiting:
            ready = [wait for wait in self._waiting if wait[0]()]
            self._waiting = [wait for wait in self._waiting if wait not in ready]
            for _, then in ready:
                if not self._closed:
                    then()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._blocked = self._resume = None
        self._waiting = []
        if self._simulated is not None:
            self._simulated.close()
        else:
            self._thread.stop()
            if self._io:
                self._kernel.io_finished(self._io)
                self._io = 0


def blocked_by_async_io(executors: list[LocalAsyncExecutor], metrics: TaskIOMetrics, mailbox: MailboxProcessor,
                        source: Any) -> bool:
    """Whether an async operator of the task yields; if so the task is suspended, back pressured
    (a back-pressured ``source`` head is not idle)."""
    for executor in executors:
        if executor.input_blocked(lambda: metrics.back_pressure(mailbox, source, "async_capacity")):
            return True
    return False
