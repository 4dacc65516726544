"""Per-key timers of one operator (Flink's InternalTimerService), and the one place they fire.

Timers are unique per (key, namespace, timestamp). Event-time timers fire when a watermark
reaches them, in timestamp order, before the watermark is forwarded; processing-time timers
fire from a task mail when the processing clock reaches them (one wake-up scheduled at a time,
for the earliest). Timers with the same timestamp fire in the order they were registered
(:mod:`kernel.runtime.streaming.timer_queue`: Flink leaves that order open, its heap and RocksDB
backends differ); deleting a timer removes it at once. The timers due at once fire in rounds,
as PyFlink's Python operators get them (``_drain``): within a round in timestamp order; what
their callbacks register at or before that time, in the next.

Every keyed operator's timers fire here, through its :class:`Triggerable` ``on_timer`` (Flink's
``Triggerable``): the service switches the backend to the timer's key as PyFlink's Python
operators do (:meth:`~kernel.runtime.streaming.state.KeyedStateBackend.select_key`: the first timer after
records always switches; a timer whose Python key equals the previous timer's keeps that key's
state, so a timer of True right after one of 1 reads and clears 1's), calls ``on_timer`` with the
timer's Python key, its namespace (a window operator's window) and a :class:`TimerOutput` that
collects what the callbacks emit, counts the timers that fired (the task's ``timers_fired``) and
hands the output on through the operator's hand-over (:mod:`kernel.runtime.streaming.handover`): in one
batch when the drain is done, and what earlier callbacks emitted before that, within the buffer
timeout, while a later one blocks. (The keyed state user functions read stays in no
namespace while timers fire, as in PyFlink: a window operator moves only its own states to the
window.)

In BATCH execution (Flink's ``BatchExecutionInternalTimeService``) processing time does not
advance: processing-time timers are not scheduled, and all of them fire when the final
watermark arrives, right after the event-time timers; timers registered while they fire are
ignored (the service is quiesced, so a timer re-registering itself cannot loop forever).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

from kernel.clock import MAX_LONG, MIN_LONG
from kernel.jvm.keyidentity import user_key
from kernel.datastream.time_domain import TimeDomain
from kernel.runtime.streaming.state import KeyedStateBackend
from kernel.runtime.streaming.timer_queue import DistinctTimerQueue, TimerQueue, in_firing_order

if TYPE_CHECKING:
    from kernel.runtime.checkpointing.snapshots import Entry, OperatorSnapshot
    from kernel.runtime.streaming.handover import HandOver
    from kernel.runtime.streaming.runtime import OperatorRuntime

EVENT_TIME = TimeDomain.EVENT_TIME
PROCESSING_TIME = TimeDomain.PROCESSING_TIME
#: keyed state names of the timers in a checkpoint (entries: key, namespace, (timestamp, order))
EVENT_TIMERS = "_timer_state/event_timers"
PROCESSING_TIMERS = "_timer_state/processing_timers"


class _TimerQueue(TimerQueue):
    """One kind of timers (:class:`~kernel.runtime.streaming.timer_queue.TimerQueue`)."""

    __slots__ = ()

    def restore(self, entries: list[Entry]) -> None:
        """Register restored timers in the order of their positions."""
        for key, namespace, (timestamp, _) in sorted(entries, key=lambda e: e[2][1]):
            self.add(timestamp, key, namespace)


def view_entries(view: list[tuple[int, list[tuple[Any, Any]]]]) -> list[Entry]:
    """The checkpoint entries (key, namespace, (timestamp, position)) of a queue's view, their
    keys as Python keys: positions in firing order (restored in that order, they fire as they
    would have)."""
    return [(user_key(key), namespace, (timestamp, position))
            for position, (timestamp, key, namespace) in enumerate(in_firing_order(view), 1)]


class TimerOutput:
    """What the callbacks of timers firing at once emit: main output values and their
    timestamps, and per requested side output tag its values and timestamps (the lists
    :meth:`kernel.runtime.streaming.operators.base.StreamOperator.emit_results` appends to)."""

    __slots__ = ("values", "timestamps", "side")

    def __init__(self) -> None:
        self.values: list = []
        self.timestamps: list = []
        self.side: dict[str, tuple[list, list | None]] = {}


class Triggerable(Protocol):
    """The operator whose timers fire (Flink's ``Triggerable``)."""

    #: where what its timers emit waits to be handed on to its outputs, opened on the
    #: :class:`TimerOutput` of each drain
    handover: HandOver

    def on_timer(self, timestamp: int, key: Any, namespace: Any, domain: TimeDomain, out: TimerOutput) -> None:
        """A timer of ``key`` (the Python key, what the timer's context reports) and ``namespace``
        fired; state is read under the backend's current key, the key PyFlink would be holding
        (usually the timer's). What the operator emits goes to ``out``."""


class InternalTimerService:
    def __init__(self, backend: KeyedStateBackend, target: Triggerable, runtime: OperatorRuntime) -> None:
        self.backend = backend
        self.batch = runtime.batch
        self._target = target
        self._runtime = runtime
        self.event_timers = _TimerQueue()
        self.processing_timers = _TimerQueue()
        self.current_watermark = MIN_LONG
        self._wakeup: int | None = None  # when the scheduled wake-up fires
        self._wakeup_handle: Any = None
        self._wakeups = 0  # numbers the wake-ups: one superseded by an earlier one does nothing

    # -- registration (for the current key) ---------------------------------------------------

    def register_event_time_timer(self, namespace: Any, timestamp: int) -> None:
        if self.batch and self.current_watermark == MAX_LONG:
            return
        self.event_timers.add(timestamp, self.backend.current_key, namespace)

    def event_time_registration(self, namespace: Any) -> Callable[[int], None]:
        """``register_event_time_timer(namespace, timestamp)`` as a function of the timestamp,
        for a user function registering timers per record."""
        if self.batch:
            return lambda timestamp: self.register_event_time_timer(namespace, timestamp)
        add, backend = self.event_timers.add, self.backend

        def register(timestamp: int) -> None:
            add(timestamp, backend.current_key, namespace)

        return register

    def delete_event_time_timer(self, namespace: Any, timestamp: int) -> None:
        self.event_timers.remove(timestamp, self.backend.current_key, namespace)

    def register_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        if self.batch and self.current_watermark == MAX_LONG:
            return
        if self.processing_timers.add(timestamp, self.backend.current_key, namespace) and not self.batch:
            if self._wakeup is None or timestamp < self._wakeup:
                self._wake_at(timestamp)

    def delete_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        self.processing_timers.remove(timestamp, self.backend.current_key, namespace)

    # -- firing -------------------------------------------------------------------------------

    def advance_watermark(self, watermark: int) -> None:
        """Fire every event-time timer <= ``watermark`` in timestamp order (in BATCH, at the
        final watermark, every processing-time timer after them)."""
        self.current_watermark = watermark
        head = self.event_timers.head_time()
        final = self.batch and watermark == MAX_LONG
        if (head is not None and head <= watermark) or (final and len(self.processing_timers)):
            out = self._output()
            fired = self._drain(self.event_timers, watermark, EVENT_TIME, out)
            if final:
                fired += self._drain(self.processing_timers, MAX_LONG, PROCESSING_TIME, out)
            self._fired(fired)

    def fire_processing_time(self, now: int) -> None:
        """Fire every processing-time timer <= ``now`` in timestamp order."""
        head = self.processing_timers.head_time()
        if head is not None and head <= now:
            out = self._output()
            self._fired(self._drain(self.processing_timers, now, PROCESSING_TIME, out))

    def fire_event_time(self, queue: DistinctTimerQueue, watermark: int,
                        fire_round: Callable[[list, TimerOutput], int] | None = None) -> None:
        """The watermark is ``watermark``: fire the event-time timers of an operator that keeps
        them in a queue of its own (registered once each, never deleted) as this service fires
        its own. ``fire_round(buckets, out)``: fires a round's timers at once, (timestamp,
        [(key, namespace), ...]) in firing order, and says how many it fired — for an operator
        whose timers call no user code (when the backend does not switch keys; the last timer's
        key stays current, as after firing them one by one)."""
        self.current_watermark = watermark
        head = queue.head_time()
        if head is not None and head <= watermark:
            out = self._output()
            if fire_round is not None and not self.backend.switches_keys:
                buckets = queue.take_buckets(watermark)
                fired = fire_round(buckets, out)
                self.backend.current_key = buckets[-1][1][-1][0]
                self._fired(fired)
                return
            self._fired(self._drain(queue, watermark, EVENT_TIME, out))

    def _drain(self, queue: TimerQueue | DistinctTimerQueue, limit: int, domain: TimeDomain, out: TimerOutput) -> int:
        """Fire the timers of ``queue`` up to ``limit`` in rounds, as PyFlink's Python operators
        get them: the JVM takes every due timer from its queue (in firing order) and hands them to
        Python before the registrations and deletions their callbacks make come back. So a timer
        a callback registers at or before ``limit`` fires in the next round, and a timer taken
        in this round fires even when an earlier callback of the round deleted it. How many fired."""
        backend, take_buckets, on_timer = self.backend, queue.take_buckets, self._target.on_timer
        select = backend.select_key if backend.switches_keys else None
        fired = 0
        while True:
            due = take_buckets(limit)
            if not due:
                return fired
            for timestamp, timers in due:
                fired += len(timers)
                if select is None:
                    for key, namespace in timers:
                        backend.current_key = key
                        on_timer(timestamp, key, namespace, domain, out)
                else:
                    for key, namespace in timers:
                        on_timer(timestamp, select(key), namespace, domain, out)

    def _output(self) -> TimerOutput:
        """The output of timers about to fire, open on the operator's hand-over: what their
        callbacks emit can go on before the drain is done."""
        out = TimerOutput()
        self._target.handover.results(out.values, out.timestamps, out.side)
        return out

    def _fired(self, fired: int) -> None:
        """Count the timers that fired and hand on the rest of what their callbacks emitted
        (main output, then side outputs), once per drain."""
        if fired:
            self._runtime.count("timers_fired", fired)
        self._target.handover.end()

    def _wake_at(self, timestamp: int) -> None:
        if self._wakeup_handle is not None:
            self._wakeup_handle.cancel()
        self._wakeups += 1
        number = self._wakeups
        self._wakeup = timestamp
        self._wakeup_handle = self._runtime.schedule(timestamp, lambda: self._fire_processing_time(number))

    def _fire_processing_time(self, number: int) -> None:
        if number != self._wakeups:
            return  # superseded (it fired before it could be cancelled)
        self._wakeup = self._wakeup_handle = None
        self.fire_processing_time(self._runtime.now_ms())
        earliest = self.processing_timers.head_time()
        if earliest is not None:
            self._wake_at(earliest)

    def pending(self) -> int:
        return len(self.event_timers) + len(self.processing_timers)

    # -- checkpoints ------------------------------------------------------------------------------

    def snapshot(self, snapshot: OperatorSnapshot) -> None:
        """The timers, their keys as Python keys (as the backend's state): a view of each queue
        taken now, its entries made in the asynchronous part."""
        for name, queue in ((EVENT_TIMERS, self.event_timers), (PROCESSING_TIMERS, self.processing_timers)):
            if len(queue):
                view = queue.view()
                snapshot.defer(lambda into, name=name, view=view: into.add_keyed(name, "timers", view_entries(view)))

    def restore(self, event_timers: list[Entry], processing_timers: list[Entry]) -> None:
        """Timers restored from a checkpoint: event-time ones fire when a watermark reaches them,
        processing-time ones get their wake-up (at once when already due)."""
        restored_key = self.backend.restored_key
        self.event_timers.restore([(restored_key(key), namespace, order) for key, namespace, order in event_timers])
        self.processing_timers.restore([(restored_key(key), namespace, order)
                                        for key, namespace, order in processing_timers])
        earliest = self.processing_timers.head_time()
        if earliest is not None and not self.batch and (self._wakeup is None or earliest < self._wakeup):
            self._wake_at(earliest)
