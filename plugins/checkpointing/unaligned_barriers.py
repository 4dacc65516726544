"""The barrier handler of unaligned checkpoints (Flink's ``SingleCheckpointBarrierHandler`` in
its unaligned and alternating states), over every channel of every input gate together.

Unaligned (``execution.checkpointing.aligned-checkpoint-timeout`` 0): barriers are priority
events that overtook the data queued before them. The first barrier n starts the checkpoint
at once: every channel still without barrier n starts persisting its in-flight data — what
is queued before the barrier, and what arrives until the barrier does — and the channel that
delivered it persists what the barrier overtook (up to the barrier's mark in its queue, which
the handler meets again later and ignores); the task snapshots and forwards barrier n,
unaligned, ahead of its own queued output. Nothing blocks: the persisted data is processed
as usual too. When barrier n came on every open channel (an ended channel counts), the
persisted data of every channel goes to the task, which then acknowledges.

With an alignment timeout (> 0) a checkpoint starts aligned, as :class:`AlignedBarrierHandler`
aligns it: a channel that delivered barrier n is blocked. The timer starts with the first
barrier n or the first announcement of one (a producer announces a barrier with a timeout as
soon as it queues it) and fires at the checkpoint's trigger time plus the timeout; a barrier
or announcement that comes later than that switches at once, as does an unaligned barrier
(an upstream task already switched). Switching: the blocked channels resume, every channel
without barrier n starts persisting, the task snapshots and forwards barrier n unaligned,
and every announced barrier is converted to overtake the data before it. A checkpoint whose
barriers all arrived in time stays aligned.

A barrier of a newer checkpoint subsumes the pending one, a cancellation marker cancels it
(declined either way), the coordinator's abort drops it; persisting stops and every channel
resumes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.runtime.checkpointing.channel_state import INPUT
from kernel.runtime.checkpointing.failures import CheckpointFailureReason
from kernel.runtime.checkpointing.format import ChannelState
from kernel.runtime.checkpointing.messages import CheckpointMetrics
from kernel.clock import NS_PER_MS
from plugins.checkpointing.barriers import Alignment, SingleCheckpointBarrierHandler

if TYPE_CHECKING:
    from kernel.contracts.checkpointing import CheckpointableTask
    from kernel.lifecycle.run import Run
    from kernel.runtime.streaming.elements import CheckpointBarrier

R = CheckpointFailureReason


class UnalignedBarrierHandler(SingleCheckpointBarrierHandler):
    """EXACTLY_ONCE with unaligned checkpoints enabled."""

    def __init__(self, task: CheckpointableTask, channels: list[Any], run: Run) -> None:
        super().__init__(task, channels, run)
        self.unaligned = False  # the current checkpoint is (now) unaligned
        self.persisting: list[Any] = []  # channels persisting their in-flight data, in channel order
        self.persisted: list[ChannelState] = []
        self.persisted_bytes = 0
        self._timer: Any = None

    # -- barriers and announcements -----------------------------------------------------------

    def process_barrier(self, barrier: CheckpointBarrier, channel: Any) -> None:
        checkpoint_id = barrier.checkpoint_id
        if checkpoint_id < self.current_id or (checkpoint_id == self.current_id and (
                self.alignment is None or channel in self.alignment.received)):
            if barrier.blocks:
                channel.resume_consumption()  # a checkpoint completed or aborted already, or its barrier's mark
            return
        if checkpoint_id > self.current_id:
            self._start(barrier)
        alignment = self.alignment
        if self.unaligned:
            self._channel_persisted(channel)
            if barrier.blocks:
                channel.resume_consumption()
        elif barrier.unaligned:
            self._persist_overtaken(channel, checkpoint_id)
        alignment.received.add(channel)
        if not self.unaligned and (barrier.unaligned or self._timed_out(barrier)):
            self._switch()
        elif not self.unaligned and barrier.alignment_timeout and self._timer is None:
            self._start_timer(barrier)
        self._check_complete()

    def process_barrier_announcement(self, barrier: CheckpointBarrier, channel: Any) -> None:
        checkpoint_id = barrier.checkpoint_id
        if self._stale(checkpoint_id):
            return
        if checkpoint_id > self.current_id:
            self._start(barrier)
        if self.unaligned:
            if channel in self.persisting:
                channel.convert_to_priority(checkpoint_id)
        elif self._timed_out(barrier):
            self._switch()
        elif self._timer is None:
            self._start_timer(barrier)

    def _start(self, barrier: CheckpointBarrier) -> None:
        if self.alignment is not None:
            self._abort(R.CHECKPOINT_DECLINED_SUBSUMED)
        self.current_id = barrier.checkpoint_id
        self.alignment = Alignment(barrier, self.clock.now())
        self.aligning = True
        self.unaligned = False
        self.persisted = []
        self.persisted_bytes = 0

    def _timed_out(self, barrier: CheckpointBarrier) -> bool:
        timeout = barrier.alignment_timeout
        return bool(timeout) and self.clock.now() >= (barrier.timestamp + timeout) * NS_PER_MS

    def _start_timer(self, barrier: CheckpointBarrier) -> None:
        checkpoint_id = barrier.checkpoint_id

        def expired() -> None:
            self._timer = None
            if checkpoint_id == self.current_id and self.alignment is not None and not self.unaligned:
                self._switch()

        self._timer = self.task.schedule_mail((barrier.timestamp + barrier.alignment_timeout) * NS_PER_MS, expired,
                                              f"alignment timeout of checkpoint {checkpoint_id}")

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # -- unaligned ----------------------------------------------------------------------------

    def _switch(self) -> None:
        """Checkpoint now, unaligned: persist what is in flight until each barrier comes."""
        self._cancel_timer()
        self.unaligned = True
        alignment = self.alignment
        checkpoint_id = self.current_id
        received = alignment.received
        self.persisting = [channel for channel in self.channels if channel in self.open and channel not in received]
        for channel in self.persisting:
            channel.start_persisting(checkpoint_id)
        for channel in self.channels:
            if channel in received:
                channel.resume_consumption()
        metrics = self._metrics(alignment)
        self.task.trigger_checkpoint_on_barrier(alignment.barrier.as_unaligned(), metrics)
        for channel in list(self.persisting):
            channel.convert_to_priority(checkpoint_id)

    def _persist_overtaken(self, channel: Any, checkpoint_id: int) -> None:
        """An unaligned barrier overtook the data queued on ``channel``: persist it."""
        channel.start_persisting(checkpoint_id)
        self._add_persisted(channel, channel.finish_persisting())

    def _channel_persisted(self, channel: Any) -> None:
        if channel in self.persisting:
            self.persisting.remove(channel)
            self._add_persisted(channel, channel.finish_persisting())

    def _add_persisted(self, channel: Any, elements: list[bytes]) -> None:
        if elements:
            self.persisted.append(ChannelState(kind=INPUT, gate=channel.gate.index, index=channel.index,
                                               elements=elements))
            self.persisted_bytes += sum(len(element) for element in elements)

    def _metrics(self, alignment: Alignment) -> CheckpointMetrics:
        return CheckpointMetrics(alignment_ms=(self.clock.now() - alignment.started) / NS_PER_MS,
                                 processed_records=alignment.records, processed_bytes=alignment.bytes, unaligned=True)

    # -- completion and abortion --------------------------------------------------------------

    def _check_complete(self) -> None:
        alignment = self.alignment
        if alignment is None or not self.open <= alignment.received:
            return
        self.alignment = None
        self.aligning = False
        self._cancel_timer()
        if self.unaligned:
            metrics = self._aligned(alignment, self.persisted_bytes, unaligned=True)
            persisted, self.persisted = self.persisted, []
            self.task.input_channel_state_completed(alignment.barrier.checkpoint_id, persisted, metrics)
            return
        metrics = self._aligned(alignment)
        self.task.trigger_checkpoint_on_barrier(alignment.barrier, metrics)
        self._resume(alignment)

    def _drop(self) -> Alignment:
        """Stop the current checkpoint: persisting ends, every channel resumes."""
        alignment, self.alignment = self.alignment, None
        self.aligning = False
        self._cancel_timer()
        for channel in self.persisting:
            channel.finish_persisting()
        self.persisting = []
        self.persisted = []
        self._resume(alignment)
        return alignment

    def _abort(self, reason: CheckpointFailureReason) -> None:
        self._drop()
        self.task.abort_checkpoint_on_barrier(self.current_id, reason)

    def process_end_of_partition(self, channel: Any) -> None:
        self.open.discard(channel)
        if self.unaligned:
            self._channel_persisted(channel)
        self._check_complete()
