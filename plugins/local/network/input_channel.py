"""The consumer side's channels: one :class:`InputChannel` per consumed subpartition.

Credit-based flow control: the channel gives credit for a buffer from its exclusive buffers
(``buffers-per-channel``), else from its gate's floating buffers (``floating-buffers-per-gate``);
without credit the producer keeps the buffer queued and the channel waits in its gate's queue
for a floating buffer. Processing a buffer (``recycle``) gives its credit back. An aligned
checkpoint barrier blocks the subpartition that sent it until the consumer, aligned, resumes
consumption (``resume_consumption``).

Priority events (unaligned barriers, barrier announcements) wait apart from the queue and the
gate has its task handle them at once; a priority barrier also goes into the queue where it
overtook, marking what came before it. For an unaligned checkpoint the channel persists its
in-flight data: what is queued before the barrier and, until the barrier arrives, what is
delivered (``start_persisting`` / ``finish_persisting``); ``convert_to_priority`` makes an
announced barrier overtake the data before it, here or still at the producer. Data an
unaligned checkpoint persisted is queued again on restore, without credit.

The consumer's calls take the network's lock (its gate's); ``reserve`` and the deliveries run
under it, called by the producer's side.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from kernel.runtime.checkpointing.channel_state import persist, persist_all
from kernel.runtime.streaming.elements import CheckpointBarrier, RecordBatch

if TYPE_CHECKING:
    from plugins.local.network.input_gate import InputGate
    from plugins.local.network.partition import Subpartition


class InputChannel:
    __slots__ = ("gate", "index", "exclusive_free", "queue", "credits", "subpartition", "finished", "data_ended",
                 "waiting", "priority", "barrier_seen", "persisted", "persisting")
    #: reads a subpartition of another TaskExecutor (over TCP: :mod:`.remote`)
    remote = False

    def __init__(self, gate: InputGate, index: int) -> None:
        self.gate = gate
        self.index = index
        self.exclusive_free = gate.settings.buffers_per_channel
        self.queue: deque[Any] = deque()
        #: per received buffer: came from the exclusive buffers? (None: restored, without credit)
        self.credits: deque[bool | None] = deque()
        self.subpartition: Subpartition | None = None
        self.finished = False
        self.data_ended = False  # the producer ended its data (FLIP-147); barriers may still come
        self.waiting = False  # queued for a floating buffer
        self.priority: deque[Any] = deque()  # priority events not yet handled
        self.barrier_seen = 0  # the latest checkpoint whose barrier was delivered here
        self.persisted: list[bytes] | None = None  # in-flight data persisted for an unaligned checkpoint
        self.persisting = 0  # persist what is delivered until this checkpoint's barrier (0: nothing)

    def reserve(self) -> bool:
        """Credit for one more buffer: an exclusive one, else a floating one of the gate."""
        if self.exclusive_free > 0:
            self.exclusive_free -= 1
            self.credits.append(True)
            return True
        gate = self.gate
        if gate.floating_free > 0:
            gate.floating_free -= 1
            self.credits.append(False)
            return True
        if not self.waiting:
            self.waiting = True
            gate.waiting_for_credit.append(self)
        return False

    def buffer_available(self) -> None:
        """A floating buffer of the gate is free again: the producer may send."""
        if self.subpartition is not None:
            self.subpartition.try_send()

    def deliver(self, item: Any) -> None:
        self.queue.append(item)
        if self.persisting:
            data = persist(item)
            if data is not None:
                self.persisted.append(data)
        self.gate.data_arrived(self)

    def deliver_event(self, item: Any) -> None:
        if type(item) is CheckpointBarrier:
            self._barrier_arrived(item.checkpoint_id)
        self.deliver(item)

    def deliver_priority(self, item: Any) -> None:
        if type(item) is CheckpointBarrier:
            self.deliver_event(item)  # the mark of where it overtook
        self._priority(item)

    def _priority(self, item: Any) -> None:
        self.priority.append(item)
        self.gate.priority_arrived(self)

    def _barrier_arrived(self, checkpoint_id: int) -> None:
        self.barrier_seen = max(self.barrier_seen, checkpoint_id)
        if self.persisting and checkpoint_id >= self.persisting:
            self.persisting = 0

    def recycle(self) -> None:
        """The consumer processed a buffer: its credit goes back."""
        gate = self.gate
        with gate.lock:
            credit = self.credits.popleft()
            if credit is None:
                return
            if credit:
                self._exclusive_returned()
            else:
                gate.floating_free += 1
                gate.retry_waiting()

    def _exclusive_returned(self) -> None:
        """An exclusive buffer is free again (the lock is held): the subpartition may send."""
        self.exclusive_free += 1
        if self.subpartition is not None:
            self.subpartition.try_send()

    def acknowledge_data_processed(self) -> None:
        """The consumer processed every record before the end of data: the producer hears it."""
        with self.gate.lock:
            if self.subpartition is not None:
                self.subpartition.all_data_processed()

    def resume_consumption(self) -> None:
        """The consumer is aligned: the subpartition a barrier blocked sends again."""
        with self.gate.lock:
            self._resume()

    def _resume(self) -> None:
        """Resume the subpartition (the lock is held)."""
        if self.subpartition is not None:
            self.subpartition.resume()

    # -- unaligned checkpoints ------------------------------------------------------------------

    def start_persisting(self, checkpoint_id: int) -> None:
        """Persist the in-flight data before the barrier of ``checkpoint_id`` (which the task
        has not handled here yet): what is queued before it, and — until it is delivered —
        whatever is delivered. A barrier delivered whose mark is no longer queued was taken
        from the queue before its priority event was handled (the producer runs in another
        thread): what came before it was processed, nothing is in flight."""
        with self.gate.lock:
            arrived = self.barrier_seen >= checkpoint_id
            before = []
            for item in self.queue:
                if type(item) is CheckpointBarrier and item.checkpoint_id >= checkpoint_id:
                    break
                before.append(item)
            else:
                if arrived:
                    before = []
            self.persisted = persist_all(before)
            self.persisting = 0 if arrived else checkpoint_id

    def convert_to_priority(self, checkpoint_id: int) -> None:
        """The barrier of ``checkpoint_id``, queued here or still at the producer, overtakes
        the data before it as an unaligned barrier (the data overtaken at the producer is
        persisted here)."""
        with self.gate.lock:
            if self._convert_queued(checkpoint_id):
                return
            subpartition = self.subpartition
            if subpartition is not None:
                overtaken = subpartition.convert_to_priority(checkpoint_id)
                if overtaken is not None:
                    if self.persisted is not None:
                        self.persisted.extend(overtaken)
                    subpartition.try_send()

    def _convert_queued(self, checkpoint_id: int) -> bool:
        """The barrier of ``checkpoint_id`` queued here overtakes the data before it (the
        barrier stays in the queue as the mark); False when it is not queued here. The lock is
        held."""
        for item in self.queue:
            if type(item) is CheckpointBarrier and item.checkpoint_id == checkpoint_id:
                self._priority(item.as_unaligned())
                if item.blocks:
                    self._resume()
                return True
        return False

    def finish_persisting(self) -> list[bytes]:
        """The data persisted for the checkpoint (persisting ends)."""
        with self.gate.lock:
            persisted = self.persisted or []
            self.persisted = None
            self.persisting = 0
            return persisted

    def restore_in_flight(self, elements: list) -> None:
        """Queue the in-flight data an unaligned checkpoint persisted here (before the
        producer is connected); its buffers took no credit."""
        with self.gate.lock:
            for element in elements:
                if type(element) is RecordBatch:
                    self.credits.append(None)
                self.queue.append(element)
                self.gate.data_arrived(self)
