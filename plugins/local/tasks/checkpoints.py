"""A task's part in checkpoints (Flink's SubtaskCheckpointCoordinatorImpl with StreamTask's
checkpoint methods).

Checkpoint n at a task — a mail when the coordinator triggers it (sources), or when its
barrier handler aligned barrier n: ``prepare_snapshot_pre_barrier`` on every operator, barrier
n to every output partition, the snapshot of every operator (the synchronous part: state
encoded, so later records cannot change it), then — off the mailbox — the state written to
the checkpoint storage and the acknowledgement sent (the asynchronous part). A checkpoint
cancelled or subsumed on an input is declined and a cancellation marker goes downstream; one
the coordinator aborted before its barrier came is not taken. Completion and abortion are
passed to the operators; the first completed checkpoint taken after the task ended its
input is its final one (FLIP-147).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.checkpointing.failures import CheckpointFailureReason
from kernel.checkpointing.messages import (
    AcknowledgeCheckpoint,
    CheckpointMetrics,
    DeclineCheckpoint,
    OperatorSubtaskSnapshot,
    TaskStateSnapshot,
)
from kernel.clock import NS_PER_MS
from kernel.streaming.elements import CancelCheckpointMarker, CheckpointBarrier

if TYPE_CHECKING:
    from kernel.contracts.checkpointing import CheckpointStorageWorker
    from plugins.local.tasks.streamtask import StreamTask


class SubtaskCheckpointCoordinator:
    def __init__(self, task: StreamTask, storage: CheckpointStorageWorker) -> None:
        self.task = task
        self.storage = storage
        self.clock = task.run.clock
        self.loop = task.loop
        #: the latest checkpoint this task took, declined or saw aborted
        self.last_checkpoint_id = 0
        self._aborted: set[int] = set()  # aborted by the coordinator before the task took them
        #: after the end of data: the checkpoint whose completion lets the task finish
        self.final_checkpoint_id: int | None = None
        self.final_completed = False

    # -- from the coordinator -----------------------------------------------------------------

    def trigger(self, checkpoint_id: int, timestamp: int, aligned: bool) -> None:
        task = self.task
        if task.state != "RUNNING":
            self.decline(checkpoint_id, CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_NOT_READY,
                         f"Task {task.name} is not running ({task.state})")
            return
        barrier = CheckpointBarrier(checkpoint_id, timestamp, aligned)
        task.mailbox.execute(lambda: self.checkpoint(barrier, CheckpointMetrics()), f"checkpoint {checkpoint_id}")

    def notify_complete(self, checkpoint_id: int) -> None:
        self.task.mailbox.execute(lambda: self._completed(checkpoint_id), f"checkpoint {checkpoint_id} complete")

    def _completed(self, checkpoint_id: int) -> None:
        task = self.task
        task.chain.notify_checkpoint_complete(checkpoint_id)
        final = self.final_checkpoint_id
        if final is not None and checkpoint_id >= final and not self.final_completed:
            self.final_completed = True
            task.final_checkpoint_completed()

    def notify_aborted(self, checkpoint_id: int) -> None:
        self.task.mailbox.execute(lambda: self._aborted_by_coordinator(checkpoint_id),
                                  f"checkpoint {checkpoint_id} aborted")

    def _aborted_by_coordinator(self, checkpoint_id: int) -> None:
        task = self.task
        task.chain.notify_checkpoint_aborted(checkpoint_id)
        if checkpoint_id > self.last_checkpoint_id:
            self._aborted.add(checkpoint_id)
            self._broadcast(CancelCheckpointMarker(checkpoint_id))
        if task.barriers is not None:
            task.barriers.abort(checkpoint_id)

    # -- taking a checkpoint ------------------------------------------------------------------

    def checkpoint(self, barrier: CheckpointBarrier, metrics: CheckpointMetrics) -> None:
        """Snapshot and forward the barrier (the task's mailbox thread)."""
        checkpoint_id = barrier.checkpoint_id
        if checkpoint_id <= self.last_checkpoint_id:
            return
        self.last_checkpoint_id = checkpoint_id
        aborted = checkpoint_id in self._aborted
        self._aborted = {other for other in self._aborted if other > checkpoint_id}
        if aborted:
            return
        task = self.task
        started = self.clock.now()
        task.chain.prepare_snapshot_pre_barrier(checkpoint_id)
        self._broadcast(barrier)
        encoded = []
        for node_id, snapshot in task.chain.snapshot_state().items():
            if not snapshot.empty:
                encoded.append((task.vertex.operator_ids[node_id], snapshot.encode()))
        sync_ms = (self.clock.now() - started) / NS_PER_MS
        finished = task.data_ended
        attempt = task.attempt_key
        self.loop.call_soon(lambda: self._write(checkpoint_id, encoded, finished, attempt, metrics, sync_ms))

    def _write(self, checkpoint_id: int, encoded: list[tuple[str, Any]], finished: bool, attempt: Any,
               metrics: CheckpointMetrics, sync_ms: float) -> None:
        """The asynchronous part: write the state, acknowledge."""
        task = self.task
        if task.state in ("FAILED", "CANCELED"):
            return
        started = self.clock.now()
        subtask = task.deployment.subtask
        try:
            operators = [
                OperatorSubtaskSnapshot(operator_id=operator_id, state=self.storage.write_state(
                    checkpoint_id, f"{operator_id}-{subtask}", data, key_groups, operator_state))
                for operator_id, (data, key_groups, operator_state) in encoded]
        except OSError as exc:
            self.decline(checkpoint_id, CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION,
                         f"{CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION.message} {exc}")
            return
        d = task.deployment
        task.tell_job_master(AcknowledgeCheckpoint(
            job_id=d.job_id, vertex_id=attempt[0], subtask=attempt[1], attempt=attempt[2],
            checkpoint_id=checkpoint_id, state=TaskStateSnapshot(operators=operators, finished=finished),
            metrics=CheckpointMetrics(alignment_ms=metrics.alignment_ms, processed_records=metrics.processed_records,
                                      processed_bytes=metrics.processed_bytes, sync_ms=sync_ms,
                                      async_ms=(self.clock.now() - started) / NS_PER_MS)))

    def abort_on_barrier(self, checkpoint_id: int, reason: CheckpointFailureReason) -> None:
        """Cancelled or subsumed on an input: tell downstream, decline."""
        self.last_checkpoint_id = max(self.last_checkpoint_id, checkpoint_id)
        self._aborted.discard(checkpoint_id)
        self._broadcast(CancelCheckpointMarker(checkpoint_id))
        self.decline(checkpoint_id, reason, reason.message)

    def decline(self, checkpoint_id: int, reason: CheckpointFailureReason, message: str) -> None:
        d = self.task.deployment
        self.task.tell_job_master(DeclineCheckpoint(
            job_id=d.job_id, vertex_id=d.vertex.id, subtask=d.subtask, attempt=d.attempt,
            checkpoint_id=checkpoint_id, reason=reason.name, message=message))

    def _broadcast(self, event: Any) -> None:
        for partition in self.task.partitions:
            partition.broadcast_event(event)

    # -- the end of data ----------------------------------------------------------------------

    def end_of_data(self) -> None:
        """The task ended its input: its next checkpoint to complete is its final one."""
        self.final_checkpoint_id = self.last_checkpoint_id + 1
