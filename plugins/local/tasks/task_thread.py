"""A task in a thread of its own (realtime clock): Flink's Task, the TaskExecutor's side of one
running subtask — its thread, its interruption and the watchdog of its cancellation.

Under the realtime clock every StreamTask runs in a daemon thread of its own that steps an
event loop of its own (the task's mailbox, timers, async I/O results), as every task of
Flink's MiniCluster has its own thread: a task blocked in user code (a sleep, I/O, a busy
loop) stalls only itself, while the cluster's components (JobMaster, ResourceManager,
TaskExecutors, heartbeats) go on in the run's loop and the other tasks in their threads
(a busy loop holds Python's GIL only for a switch interval at a time). Other threads reach
the task only through its loop; what the task reports (state changes, messages to its
JobMaster) goes to the TaskExecutor's loop.

Stopping a task from outside (cancel, or fail with a cause) is Flink's
``Task.cancelExecution``: record it, interrupt the thread and queue the cancellation in the
task's loop, which ends the task at its next step (with the cause, or CANCELED). Interrupting
makes ``kernel.clock.sleep`` in user code raise :class:`InterruptedError` at once, as Java's
``Thread.interrupt`` ends a sleep; nothing can interrupt ``time.sleep`` or a busy loop. Every
``task.cancellation.interval`` the task still runs it is interrupted again (recorded, with the
operator it is busy in); once ``task.cancellation.timeout`` passed (0: never) it is stuck: the
TaskExecutor is told (Flink's watchdog raises a fatal error). Python cannot kill a thread:
the stuck one runs on (a daemon thread, it does not keep the process alive).
"""

from __future__ import annotations

import sys
import sysconfig
import threading
from typing import TYPE_CHECKING, Any, Callable

from kernel import clock as kclock
from kernel.clock import NS_PER_MS
from kernel.loop import EventLoop
from kernel.lifecycle.tracebacks import is_rill_frame
from plugins.local.events import TaskCancellationTimedOut, TaskCancelRequested, TaskInterrupted

if TYPE_CHECKING:
    from plugins.local.tasks.streamtask import StreamTask

TERMINAL = ("FINISHED", "FAILED", "CANCELED")
_STDLIB = tuple(sysconfig.get_paths()[name] for name in ("stdlib", "platstdlib"))


class TaskThread:
    """One task's thread, created by its TaskExecutor; ``owner`` is the TaskExecutor's loop.
    ``on_stuck(thread, operator, location)`` is called (in the owner's loop) when a stop
    request times out."""

    def __init__(self, task: StreamTask, owner: EventLoop, resource_id: str, interval_ms: int, timeout_ms: int,
                 on_stuck: Callable[[TaskThread, str, str], None]) -> None:
        self.task = task
        self.owner = owner
        self.resource_id = resource_id
        self.interval_ms = interval_ms
        self.timeout_ms = timeout_ms
        self.on_stuck = on_stuck
        self.loop = EventLoop(task.run.clock, bound=False)
        task.loop = self.loop
        task.sleeper = self._sleep
        self._report = task.report
        task.report = self._report_state
        self.interrupted = threading.Event()
        self.stop_requested_at: int | None = None
        self.thread = threading.Thread(target=self._run, name=f"rill-task {task.name}", daemon=True)

    def start(self) -> None:
        """Start the thread; the task starts in it. (Owner's thread.)"""
        self.loop.io_started()  # the loop runs until the task ended
        self.loop.call_soon(self.task.start)
        self.thread.start()

    def _run(self) -> None:
        kclock.set_sleeper(self._sleep)
        try:
            self.loop.run()
        except BaseException as exc:  # rill's own error (the mailbox turns user code's into task failures)
            self.owner.call_soon_threadsafe(_reraise, exc)  # it surfaces in the run's loop, as when simulated

    def _sleep(self, seconds: float) -> None:
        """``kernel.clock.sleep`` in the task's threads (its own, its relays): what the chain
        emitted so far goes on first; interrupted when the task is stopped."""
        self.task.hand_over_emitted()
        if self.interrupted.wait(seconds):
            raise InterruptedError(f"sleep interrupted: task {self.task.name} is being stopped")

    def _report_state(self, task: StreamTask, state: str, failure: str) -> None:
        """The task changed state (task's thread): tell the TaskExecutor in its own loop."""
        if state in TERMINAL:
            self.loop.io_finished()  # the loop ends once what is left in it ran
        self.owner.call_in_thread(self._report, task, state, failure)

    @property
    def ended(self) -> bool:
        return self.task.state in TERMINAL or not self.thread.is_alive()

    # -- stopping (owner's thread) --------------------------------------------------------------

    def stop(self, reason: str, failure: BaseException | None = None) -> None:
        """Cancel the task (or, with ``failure``, fail it): interrupt it and, unless it ends
        in time, watch it."""
        task = self.task
        if self.stop_requested_at is not None or task.state in TERMINAL:
            return
        now = task.run.clock.now()
        self.stop_requested_at = now
        if failure is not None:
            task.external_failure = failure
        else:
            task.cancel_requested = True
        self._emit(TaskCancelRequested, time=now, action="fail" if failure is not None else "cancel", reason=reason)
        self.interrupted.set()
        if failure is not None:
            self.loop.call_soon_threadsafe(task.fail, failure)
        else:
            self.loop.call_soon_threadsafe(task.cancel)
        self._watch_in(self.interval_ms)

    def _watch_in(self, interval_ms: int) -> None:
        if self.timeout_ms > 0:
            waited = (self.task.run.clock.now() - self.stop_requested_at) // NS_PER_MS
            interval_ms = min(interval_ms, max(self.timeout_ms - waited, 0))
        self.owner.call_later(interval_ms * NS_PER_MS, self._watch, daemon=True)

    def _watch(self) -> None:
        if self.ended:
            return
        now = self.task.run.clock.now()
        waited_ms = (now - self.stop_requested_at) / NS_PER_MS
        operator, location = self.where()
        if self.timeout_ms > 0 and waited_ms >= self.timeout_ms:
            self._emit(TaskCancellationTimedOut, time=now, operator=operator, location=location, waited_ms=waited_ms)
            self.on_stuck(self, operator, location)
            return
        self._emit(TaskInterrupted, time=now, operator=operator, location=location, waited_ms=waited_ms)
        self.interrupted.set()
        self._watch_in(self.interval_ms)

    def where(self) -> tuple[str, str]:
        """The operator the task is busy in (the innermost one on the stack of its thread, or
        of its latest relay thread still running user code: :mod:`.output_flusher`; else the
        chain's head) and the innermost frame of user code (``file:line in function``)."""
        task = self.task
        chain = task.chain
        operators = {id(operator): operator for operator in (chain.operators if chain is not None else ())}
        flusher = task._flusher
        relays = [t for t in getattr(flusher, "relay_threads", ()) if t.is_alive()]
        frames = sys._current_frames()
        found: tuple[Any, str] = (None, "")
        for thread in [*reversed(relays), self.thread]:
            operator, location = _innermost(frames.get(thread.ident), operators)
            if location:
                found = (operator, location)
                break
            if found[0] is None:
                found = (operator, location)
        operator, location = found
        name = operator.name if operator is not None else (chain.head.name if chain is not None else task.vertex.name)
        return name, location

    def _emit(self, event_type: type, **fields: Any) -> None:
        d = self.task.deployment
        self.task.run.bus.emit(event_type(job_id=d.job_id, vertex_id=d.vertex.id, vertex_name=d.vertex.name,
                                          subtask=d.subtask, attempt=d.attempt, resource_id=self.resource_id, **fields))


def _innermost(frame: Any, operators: dict[int, Any]) -> tuple[Any, str]:
    """The innermost operator on a thread's stack (by its ``self``) and user code frame."""
    operator: Any = None
    location = ""
    while frame is not None and (operator is None or not location):
        code = frame.f_code
        if not location and not is_rill_frame(code.co_filename) and not code.co_filename.startswith(_STDLIB):
            location = f"{code.co_filename}:{frame.f_lineno} in {code.co_name}"
        if operator is None and "self" in code.co_varnames[:1]:
            operator = operators.get(id(frame.f_locals.get("self")))
        frame = frame.f_back
    return operator, location


def _reraise(exc: BaseException) -> None:
    raise exc
