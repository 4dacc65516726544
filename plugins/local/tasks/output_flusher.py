"""Flink's OutputFlusher: a record a task's chain has emitted leaves the task within
``execution.buffer-timeout.interval``, whatever the task thread does next.

Flink's chained operators hand each record on as it is produced, into a network buffer, and
a daemon thread per task (``OutputFlusher for <task>``) flushes every partially filled buffer
on a timer, outside the task thread and its mailbox: a record written before the task thread
blocks in a user function (a sleep, I/O, a busy loop) is sent within the timeout all the same.
Timeout 0 flushes after every record (no thread), -1 (or ``execution.buffer-timeout.enabled``
false) only full buffers; each network output has the timeout of the operator producing it
(:func:`buffer_timeout`). rill's operators work a batch at a time; what an operator produced of
the batch in progress waits in its hand-over (:mod:`kernel.runtime.streaming.handover`), and reaching
the buffers is the flusher's first job:

* Realtime (:class:`OutputFlusher`, a thread per task, on every worker kind): every period —
  the timeout; 10 ms with timeout 0, 100 ms with -1 — if the task has been busy in its
  current mailbox step for longer than ``LONG_STEP_NS`` (a mailbox time slice: a task steps
  its default action for at most that long, so a longer step is a user function blocking or
  slow), every open hand-over of its chain with output ready is claimed and passed on in a
  relay thread of the task's (the task's sleeper installed: ``kernel.clock.sleep`` there stays
  interruptible), which runs the downstream chained operators on it, while the task thread is
  still inside the user function upstream; a relay blocking in turn is relayed one level down
  at the next tick; a relay flushes what it wrote. Then the flusher flushes each partition
  whose timeout (> 0) has passed since it last did. Relays start only
  while the task runs and never in a chain with an async I/O operator (its executor belongs to
  the task thread). A user function sleeping through ``kernel.clock.sleep`` hands its
  operators' output on itself, in the task thread, before it blocks (``StreamTask.
  hand_over_emitted``).
* Simulated (:class:`SimulatedOutputFlusher`): the flush is a timer of the run's loop every
  timeout of virtual time, flushing once everything else due at that instant ran (what is
  emitted at a tick's time leaves with it, whatever the order of timers). A user function's ``kernel.clock.sleep`` is charged to its task's
  step; before each charge the operators' output goes on, in the task's one thread, depth
  first, and :class:`EmissionTimes` has the record writers write it — and everything the step
  emits after a charge, records, watermarks and their ``records_out`` — at its virtual
  emission time (the step's start plus the work charged before it), where the next flush
  sends it: not at the step's start, not at its end. Deterministic.

Back pressure and credits are unchanged: a relay writes into the partitions as the task
thread does (a batch whole), and the task checks for room before its next batch.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from kernel import clock as kclock
from kernel.clock import NS_PER_MS
from kernel.loop import TimerGroup

if TYPE_CHECKING:
    from kernel.runtime.graph.stream import StreamNode
    from kernel.options import ExecutionOptions
    from kernel.runtime.streaming.handover import HandOver
    from plugins.local.network.partition import ResultPartition
    from plugins.local.tasks.streamtask import StreamTask

#: a mailbox step longer than this (a time slice of the mailbox) is a task busy in a user
#: function: its operators' output is relayed
LONG_STEP_NS = 10 * NS_PER_MS
#: how often the flusher relays without a timeout to flush on: with 0 (the record writer flushes
#: every batch itself) and with -1 (records leave in full buffers only)
RELAY_PERIOD_FLUSH_ALWAYS_MS = 10
RELAY_PERIOD_FULL_BUFFERS_MS = 100


class OutputFlusher:
    """The realtime flusher of one task: its own daemon thread, ticking every ``period_ms``;
    each of ``flushed`` (partition, timeout ms) is flushed at the first tick its timeout has
    passed since it was last."""

    def __init__(self, task: StreamTask, period_ms: int, flushed: list[tuple[ResultPartition, int]]) -> None:
        self.task = task
        self.period = period_ms / 1000
        self.flushed = [(partition, timeout * NS_PER_MS) for partition, timeout in flushed]
        self.relays = not task.async_executors  # see the module docstring
        self.clock = task.run.clock
        self._stopped = threading.Event()
        #: the relay threads started (the live ones say where a stuck task is busy)
        self.relay_threads: list[threading.Thread] = []
        self.thread = threading.Thread(target=self._run, name=f"OutputFlusher for {task.name}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        task, stopped, clock = self.task, self._stopped, self.clock
        due = [clock.now() + timeout for _, timeout in self.flushed]
        while not stopped.wait(self.period):
            if task.state != "RUNNING":
                return
            now = clock.now()
            if self.relays:
                started = task.mailbox.step_started
                if started is not None and now - started >= LONG_STEP_NS:
                    self._relay_ready()
            for index, (partition, timeout) in enumerate(self.flushed):
                if now >= due[index]:
                    partition.flush_all()
                    due[index] = now + timeout

    def _relay_ready(self) -> None:
        for handover in self.task.chain.handovers:
            chunk = handover.claim()
            if chunk is not None:
                self._start_relay(handover, chunk)

    def _start_relay(self, handover: HandOver, chunk: Any) -> None:
        thread = threading.Thread(target=self._relay, args=(handover, chunk), name=f"rill-relay {self.task.name}",
                                  daemon=True)
        self.relay_threads = [t for t in self.relay_threads if t.is_alive()] + [thread]
        thread.start()

    def _relay(self, handover: HandOver, chunk: Any) -> None:
        """A relay thread: pass ``chunk`` on through the rest of the chain (the hand-over's
        lock is held for it), then flush what it wrote, as the tick would have."""
        kclock.set_sleeper(self.task.sleeper)
        try:
            handover.pass_on(chunk)
        finally:
            handover.lock.release()
        if not self._stopped.is_set():
            for partition, _ in self.flushed:
                partition.flush_all()


class SimulatedOutputFlusher:
    """The simulated flusher of one task: a timer of the run's loop per buffer timeout,
    flushing its partitions every timeout of virtual time once everything else due at that
    instant ran (``EventLoop.call_at_rest``: what is emitted at a tick's time leaves with the
    tick, whatever the order of timers; the task's output relays itself before each charged
    sleep)."""

    def __init__(self, task: StreamTask, flushed: list[tuple[ResultPartition, int]]) -> None:
        self.task = task
        self.loop = task.run.loop
        self.groups: dict[int, list[ResultPartition]] = {}
        for partition, timeout in flushed:
            self.groups.setdefault(timeout * NS_PER_MS, []).append(partition)
        self._timers = TimerGroup()

    def start(self) -> None:
        for period, partitions in self.groups.items():
            self._timers.add(self.loop.call_later(period, self._flush, period, partitions))

    def _flush(self, period: int, partitions: list[ResultPartition]) -> None:
        if self.task.state == "RUNNING":
            self.loop.call_at_rest(self._flush_now, partitions)
            self._timers.add(self.loop.call_later(period, self._flush, period, partitions))

    def _flush_now(self, partitions: list[ResultPartition]) -> None:
        if self.task.state == "RUNNING":
            for partition in partitions:
                partition.flush_all()

    def stop(self) -> None:
        self._timers.cancel_all()


def buffer_timeout(node: StreamNode, options: ExecutionOptions) -> int:
    """The buffer timeout of the network outputs of ``node``, ms (-1: only full buffers, 0:
    flushed after every batch): its own (``ds.set_buffer_timeout``), the job's
    (``env.set_buffer_timeout``), else ``execution.buffer-timeout.interval`` / ``.enabled``."""
    if node.buffer_timeout is not None:
        return node.buffer_timeout
    return options.buffer_timeout if options.buffer_timeout_enabled else -1


def create_output_flusher(task: StreamTask, partitions: list[tuple[ResultPartition, int]]
                          ) -> OutputFlusher | SimulatedOutputFlusher | None:
    """The flusher of ``task``'s partitions, each with its buffer timeout (ms; 0: the record
    writer flushes every batch, -1: only full buffers); None without partitions."""
    if not partitions:
        return None
    flushed = [(partition, timeout) for partition, timeout in partitions if timeout > 0]
    if task.run.clock.mode == "simulated":
        return SimulatedOutputFlusher(task, flushed) if flushed else None
    if flushed:
        period = min(timeout for _, timeout in flushed)
    elif any(timeout == 0 for _, timeout in partitions):
        period = RELAY_PERIOD_FLUSH_ALWAYS_MS
    else:
        period = RELAY_PERIOD_FULL_BUFFERS_MS
    return OutputFlusher(task, period, flushed)


class EmissionTimes:
    """Simulated clock: when what a task emits now is emitted in virtual time — its step's
    start plus the work its user functions charged before (``MailboxProcessor.charged_ns``).
    The record writers write later what is emitted later (``later``: timers of the task's
    loop, in emission order, each before the task's next step, dropped if the task fails)."""

    def __init__(self, task: StreamTask) -> None:
        self.task = task
        self.clock = task.run.clock
        self._pending = TimerGroup()

    def delay(self) -> int:
        mailbox = self.task.mailbox
        return mailbox.charged_ns() if mailbox is not None else 0

    def later(self, delay: int, callback: Callable[..., Any], *args: Any) -> None:
        self._pending.add(self.task.loop.call_at(self.clock.now() + delay, callback, *args))

    def cancel(self) -> None:
        self._pending.cancel_all()


def emission_times(task: StreamTask) -> tuple[EmissionTimes | None, Any]:
    """The task's :class:`EmissionTimes` and its chain's ``records_out`` counter: under the
    simulated clock, counting at the virtual emission time; else none and its metrics."""
    if task.run.clock.mode != "simulated":
        return None, task.metrics
    times = EmissionTimes(task)
    return times, EmittedRecords(task.metrics, times)


class EmittedRecords:
    """The chain's ``records_out`` counter under the simulated clock: records count at their
    virtual emission time (:class:`EmissionTimes`), as they leave."""

    def __init__(self, metrics: Any, times: EmissionTimes) -> None:
        self._metrics = metrics
        self._times = times

    @property
    def records_out(self) -> int:
        return self._metrics.records_out

    @records_out.setter
    def records_out(self, total: int) -> None:
        count = total - self._metrics.records_out
        delay = self._times.delay()
        if delay:
            self._times.later(delay, self._count, count)
        else:
            self._metrics.records_out = total

    def _count(self, count: int) -> None:
        self._metrics.records_out += count
