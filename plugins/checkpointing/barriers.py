"""Barrier handlers of a task's input (Flink's ``SingleCheckpointBarrierHandler`` for aligned
checkpoints and ``CheckpointBarrierTracker`` for at-least-once), over every channel of every
input gate together.

Aligned (EXACTLY_ONCE): barrier n blocks its channel (upstream, the subpartition that sent it
holds everything after it); records of the channels without it yet go on. When every channel
that has not ended delivered it, the task checkpoints (and forwards the barrier), then every
channel resumes. A barrier of a newer checkpoint, a cancellation marker, or the coordinator's
abort ends the alignment of n (declined as subsumed / cancelled on an input); barriers of a
checkpoint already completed or aborted only resume their channel.

At-least-once: nothing blocks; the task checkpoints when every open channel delivered barrier
n (records after a barrier may be in the snapshot and are replayed after a restore). A
completed checkpoint drops older pending ones; a cancellation marker aborts one.

Both report the alignment (first barrier to last) and what was processed meanwhile, and ignore
barrier announcements (they wait for the barriers themselves; announced barriers are a
matter for handlers of unaligned checkpoints).
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any

from kernel.runtime.checkpointing.failures import CheckpointFailureReason
from kernel.runtime.checkpointing.messages import CheckpointMetrics
from kernel.clock import NS_PER_MS
from plugins.checkpointing.events import CheckpointBarrierAligned

if TYPE_CHECKING:
    from kernel.contracts.checkpointing import CheckpointableTask
    from kernel.lifecycle.run import Run
    from kernel.runtime.streaming.elements import CancelCheckpointMarker, CheckpointBarrier

#: checkpoints an at-least-once tracker keeps track of at most (Flink's MAX_CHECKPOINTS_TO_TRACK)
MAX_CHECKPOINTS_TO_TRACK = 50


class Alignment:
    """One checkpoint being aligned: channels seen, when it started, what was taken in since."""

    __slots__ = ("barrier", "received", "started", "records", "bytes", "aborted")

    def __init__(self, barrier: CheckpointBarrier, started: int) -> None:
        self.barrier = barrier
        self.received: set[Any] = set()
        self.started = started
        self.records = 0
        self.bytes = 0
        self.aborted = False

    def took_in(self, values: list) -> None:
        self.records += len(values)
        if self.bytes >= 0:
            try:
                self.bytes += len(pickle.dumps(values, protocol=pickle.HIGHEST_PROTOCOL))
            except Exception:  # a record that cannot be pickled has no size to report
                self.bytes = -1


class BarrierHandler:
    def __init__(self, task: CheckpointableTask, channels: list[Any], run: Run) -> None:
        self.task = task
        self.channels = list(channels)
        self.open: set[Any] = set(channels)
        self.clock = run.clock
        self.bus = run.bus
        self.aligning = False

    def _aligned(self, alignment: Alignment, persisted_bytes: int = 0, unaligned: bool = False) -> CheckpointMetrics:
        """Report a completed alignment (``unaligned``: the barrier overtook in-flight data, of
        which ``persisted_bytes`` were persisted); the metrics the acknowledgement carries."""
        info = self.task.info
        duration = (self.clock.now() - alignment.started) / NS_PER_MS
        self.bus.emit(CheckpointBarrierAligned(
            time=self.clock.now(), job_id=self.task.job_id, vertex_id=info.vertex_id, vertex_name=info.task_name,
            subtask=info.subtask, attempt=info.attempt, checkpoint_id=alignment.barrier.checkpoint_id,
            channels=len(self.channels), alignment_ms=duration, processed_records=alignment.records,
            processed_bytes=alignment.bytes, persisted_bytes=persisted_bytes, unaligned=unaligned))
        return CheckpointMetrics(alignment_ms=duration, processed_records=alignment.records,
                                 processed_bytes=alignment.bytes, persisted_bytes=persisted_bytes, unaligned=unaligned)

    def process_barrier_announcement(self, barrier: CheckpointBarrier, channel: Any) -> None:
        """Wait for the announced barrier itself."""


class SingleCheckpointBarrierHandler(BarrierHandler):
    """EXACTLY_ONCE, one checkpoint at a time (Flink's ``SingleCheckpointBarrierHandler``):
    aligned here, unaligned in :mod:`.unaligned_barriers`. A cancellation marker or a newer
    barrier aborts the checkpoint in progress (``_abort``); ``_drop`` ends it without a word."""

    def __init__(self, task: CheckpointableTask, channels: list[Any], run: Run) -> None:
        super().__init__(task, channels, run)
        self.current_id = -1
        self.alignment: Alignment | None = None

    def _abort(self, reason: CheckpointFailureReason) -> None:
        raise NotImplementedError

    def _drop(self) -> Alignment:
        raise NotImplementedError

    def _stale(self, checkpoint_id: int) -> bool:
        """Whether what came for ``checkpoint_id`` is too late: an older checkpoint's, or the
        current one's after it ended."""
        return checkpoint_id < self.current_id or (checkpoint_id == self.current_id and self.alignment is None)

    def _resume(self, alignment: Alignment) -> None:
        """The channels that delivered the barrier consume again."""
        for channel in self.channels:
            if channel in alignment.received:
                channel.resume_consumption()

    def process_cancel_marker(self, marker: CancelCheckpointMarker, channel: Any) -> None:
        checkpoint_id = marker.checkpoint_id
        if self._stale(checkpoint_id):
            return
        if checkpoint_id > self.current_id:
            if self.alignment is not None:
                self._abort(CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED)
            self.current_id = checkpoint_id
            self.task.abort_checkpoint_on_barrier(checkpoint_id,
                                                  CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER)
            return
        self._abort(CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER)

    def records_processed(self, values: list) -> None:
        self.alignment.took_in(values)

    def abort(self, checkpoint_id: int) -> None:
        if checkpoint_id > self.current_id:
            self.current_id = checkpoint_id
        elif checkpoint_id == self.current_id and self.alignment is not None:
            self._drop()


class AlignedBarrierHandler(SingleCheckpointBarrierHandler):
    """EXACTLY_ONCE: blocks channels until every open one delivered the barrier."""

    def process_barrier(self, barrier: CheckpointBarrier, channel: Any) -> None:
        checkpoint_id = barrier.checkpoint_id
        if self._stale(checkpoint_id):
            channel.resume_consumption()  # a checkpoint completed or aborted already
            return
        if checkpoint_id > self.current_id:
            if self.alignment is not None:
                self._abort(CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED)
            self.current_id = checkpoint_id
            self.alignment = Alignment(barrier, self.clock.now())
            self.aligning = True
        self.alignment.received.add(channel)
        self._check_complete()

    def _check_complete(self) -> None:
        alignment = self.alignment
        if alignment is None or not self.open <= alignment.received:
            return
        self.alignment = None
        self.aligning = False
        metrics = self._aligned(alignment)
        self.task.trigger_checkpoint_on_barrier(alignment.barrier, metrics)
        self._resume(alignment)

    def _abort(self, reason: CheckpointFailureReason) -> None:
        alignment, self.alignment = self.alignment, None
        self.aligning = False
        self.task.abort_checkpoint_on_barrier(self.current_id, reason)
        self._resume(alignment)

    def _drop(self) -> Alignment:
        alignment, self.alignment = self.alignment, None
        self.aligning = False
        self._resume(alignment)
        return alignment

    def process_end_of_partition(self, channel: Any) -> None:
        self.open.discard(channel)
        self._check_complete()


class CheckpointBarrierTracker(BarrierHandler):
    """AT_LEAST_ONCE: counts barriers per checkpoint; nothing waits."""

    def __init__(self, task: CheckpointableTask, channels: list[Any], run: Run) -> None:
        super().__init__(task, channels, run)
        self.pending: list[Alignment] = []  # by checkpoint id
        self.latest_id = -1

    def _find(self, checkpoint_id: int) -> tuple[int, Alignment | None]:
        for position, alignment in enumerate(self.pending):
            if alignment.barrier.checkpoint_id == checkpoint_id:
                return position, alignment
        return -1, None

    def process_barrier(self, barrier: CheckpointBarrier, channel: Any) -> None:
        position, alignment = self._find(barrier.checkpoint_id)
        if alignment is None:
            if barrier.checkpoint_id <= self.latest_id:
                return  # older than a checkpoint already tracked: it was dropped
            self.latest_id = barrier.checkpoint_id
            alignment = Alignment(barrier, self.clock.now())
            self.pending.append(alignment)
            if len(self.pending) > MAX_CHECKPOINTS_TO_TRACK:
                self.pending.pop(0)
            position = len(self.pending) - 1
        alignment.received.add(channel)
        self.aligning = True
        self._check_complete(position)

    def _check_complete(self, position: int) -> None:
        alignment = self.pending[position]
        if not self.open <= alignment.received:
            return
        del self.pending[:position + 1]  # this one and every older one (subsumed)
        self.aligning = bool(self.pending)
        if not alignment.aborted:
            self.task.trigger_checkpoint_on_barrier(alignment.barrier, self._aligned(alignment))

    def process_cancel_marker(self, marker: CancelCheckpointMarker, channel: Any) -> None:
        _, alignment = self._find(marker.checkpoint_id)
        if alignment is None:
            if marker.checkpoint_id <= self.latest_id:
                return
            self.latest_id = marker.checkpoint_id
            self.task.abort_checkpoint_on_barrier(marker.checkpoint_id,
                                                  CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER)
        elif not alignment.aborted:
            alignment.aborted = True
            self.task.abort_checkpoint_on_barrier(marker.checkpoint_id,
                                                  CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER)

    def process_end_of_partition(self, channel: Any) -> None:
        self.open.discard(channel)
        for position in range(len(self.pending) - 1, -1, -1):
            if self.open <= self.pending[position].received:
                self._check_complete(position)
                return

    def records_processed(self, values: list) -> None:
        self.pending[-1].took_in(values)

    def abort(self, checkpoint_id: int) -> None:
        _, alignment = self._find(checkpoint_id)
        if alignment is not None:
            alignment.aborted = True
