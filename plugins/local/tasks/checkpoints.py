"""A task's part in checkpoints (Flink's SubtaskCheckpointCoordinatorImpl with StreamTask's
checkpoint methods).

Checkpoint n at a task — a mail when the coordinator triggers it (sources), or when its
barrier handler aligned barrier n (or, unaligned, took the first one): first the operators'
work in flight finishes (an async I/O operator's requests; the task takes no input
meanwhile), then ``prepare_snapshot_pre_barrier`` on every operator, barrier n to every
output partition (an unaligned barrier overtakes the queued output, which is persisted), the
snapshot of every operator (the synchronous part: copy-on-write views of keyed state, operator
list states encoded — :mod:`kernel.runtime.checkpointing.snapshots`), then the asynchronous part, as
Flink's heap backend takes it: the views encoded and the state written to the checkpoint
storage in a thread of its own while the task goes on with its records (under the simulated
clock, a callback of the run's loop, so a run stays a deterministic sequence), then, back in
the task's thread, the views released and the acknowledgement sent. State that cannot be
serialized declines the checkpoint (Flink's heap backend fails its asynchronous part); a task
that finishes waits for its asynchronous parts (its loop runs until they are done, as Flink's
``waitForPendingCheckpoints``). An unaligned checkpoint of a task with inputs
is written once its barrier handler persisted the in-flight data of every input channel;
the in-flight data goes with the head operator's state. A checkpoint cancelled or subsumed
on an input is declined and a cancellation marker goes downstream; one the coordinator
aborted before its barrier came is not taken. Completion and abortion are passed to the
operators; the first completed checkpoint taken after the task ended its input is its final
one (FLIP-147).

Triggers, completions and abortions come from the TaskExecutor (another thread under the
realtime clock) and run as mails of the task. A trigger whose mail the task never runs, as it
finished first (a task waiting for its final checkpoint finishes with the completion of an
earlier one), is declined when it finishes (Flink's ``CHECKPOINT_DECLINED_TASK_CLOSING``, as
for a mail its closed mailbox rejects), so the coordinator does not wait for it; a failed or
cancelled task's are aborted by the coordinator.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, NamedTuple

from kernel.runtime.checkpointing.channel_state import OUTPUT
from kernel.runtime.checkpointing.failures import CheckpointFailureReason
from kernel.runtime.checkpointing.format import ChannelState
from kernel.runtime.checkpointing.messages import (
    AcknowledgeCheckpoint,
    CheckpointMetrics,
    DeclineCheckpoint,
    OperatorSubtaskSnapshot,
    TaskStateSnapshot,
)
from kernel.runtime.checkpointing.snapshots import EncodedState, OperatorSnapshot, add_channel_state, collector_paused
from kernel.clock import NS_PER_MS
from kernel.runtime.streaming.elements import CancelCheckpointMarker, CheckpointBarrier
from kernel.lifecycle.tracebacks import describe

if TYPE_CHECKING:
    from kernel.contracts.checkpointing import CheckpointStorageWorker
    from plugins.local.tasks.streamtask import StreamTask


class _Snapshot:
    """A checkpoint the task is taking: its operators' snapshots (by stream node id), the
    in-flight data (unaligned), and what the acknowledgement reports."""

    __slots__ = ("barrier", "metrics", "operators", "channels", "sync_ms", "finished", "attempt", "taken",
                 "awaiting_inputs")

    def __init__(self, barrier: CheckpointBarrier, metrics: CheckpointMetrics, awaiting_inputs: bool) -> None:
        self.barrier = barrier
        self.metrics = metrics
        self.operators: dict[int, OperatorSnapshot] = {}
        self.channels: list[ChannelState] = []
        self.sync_ms = 0.0
        self.finished = False
        self.attempt: Any = None
        self.taken = False
        self.awaiting_inputs = awaiting_inputs  # the input channels' in-flight data is still being persisted

    def release(self) -> None:
        """Its asynchronous part is done or will never run: the operators' views may go."""
        operators, self.operators = self.operators, {}
        for operator in operators.values():
            operator.release()


class _Persisted(NamedTuple):
    """What the asynchronous part did: the operators' state handles, or why it declines."""

    operators: list[OperatorSubtaskSnapshot]
    persisted_bytes: int
    async_ms: float
    declined: tuple[CheckpointFailureReason, str] | None = None


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
        self._in_progress: dict[int, _Snapshot] = {}  # taken or being taken, not yet written
        self._draining: list[_Snapshot] = []  # waiting for the operators' work in flight, in order
        #: triggered, their mails not run yet (guarded by ``_lock``: triggers come from another thread)
        self._to_take: set[int] = set()
        self._closed = False  # the task finished: triggers are declined
        self._lock = threading.Lock()
        #: the asynchronous part runs in threads of its own (else in the loop: simulated clock)
        self._threads = task.run.clock.mode != "simulated"

    # -- from the coordinator -----------------------------------------------------------------

    def trigger(self, checkpoint_id: int, timestamp: int, aligned: bool, unaligned: bool = False,
                alignment_timeout: int = 0, stop: bool = False, drain: bool = False, location: str = "") -> None:
        """``stop``: the savepoint of a stop-with-savepoint: a source stops first; ``location``:
        where the state goes (the barrier carries it downstream)."""
        task = self.task
        with self._lock:
            running = task.state == "RUNNING" and not self._closed
            if running:
                self._to_take.add(checkpoint_id)
        if not running:
            self.decline(checkpoint_id, CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_NOT_READY,
                         f"Task {task.name} is not running ({task.state})")
            return
        barrier = CheckpointBarrier(checkpoint_id, timestamp, aligned, unaligned, alignment_timeout, location)

        def take() -> None:
            with self._lock:
                if checkpoint_id not in self._to_take:
                    return  # declined as the task finished
                self._to_take.discard(checkpoint_id)
            if stop and checkpoint_id > self.last_checkpoint_id and checkpoint_id not in self._aborted:
                task.stop_for_savepoint(drain, lambda: self._triggered(barrier))
            else:
                self._triggered(barrier)

        task.mailbox.execute(take, f"checkpoint {checkpoint_id}")

    def _triggered(self, barrier: CheckpointBarrier) -> None:
        """A source checkpoints; a task whose inputs all finished takes the barrier as if every
        channel that has not ended had delivered it (Flink's
        ``triggerUnfinishedChannelsCheckpoint``): aligned, it checkpoints at once; unaligned,
        what those channels still hold is persisted."""
        task = self.task
        channels = task.unfinished_channels()
        if task.barriers is None or not channels:
            self.checkpoint(barrier, CheckpointMetrics())
            return
        for channel in channels:
            task.barriers.process_barrier(barrier, channel)

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
        self._drop(checkpoint_id)
        if checkpoint_id > self.last_checkpoint_id:
            self._aborted.add(checkpoint_id)
            self._broadcast(CancelCheckpointMarker(checkpoint_id))
        if task.barriers is not None:
            task.barriers.abort(checkpoint_id)

    # -- taking a checkpoint ------------------------------------------------------------------

    def checkpoint(self, barrier: CheckpointBarrier, metrics: CheckpointMetrics, awaiting_inputs: bool = False) -> None:
        """Snapshot and forward the barrier (the task's mailbox thread) once the operators'
        work in flight has finished; ``awaiting_inputs``: the barrier handler is still
        persisting the in-flight data of the input channels (unaligned)."""
        checkpoint_id = barrier.checkpoint_id
        if checkpoint_id <= self.last_checkpoint_id:
            return
        self.last_checkpoint_id = checkpoint_id
        aborted = checkpoint_id in self._aborted
        self._aborted = {other for other in self._aborted if other > checkpoint_id}
        if aborted:
            return
        task = self.task
        snapshot = self._in_progress[checkpoint_id] = _Snapshot(barrier, metrics, awaiting_inputs)
        if self._draining:
            self._draining.append(snapshot)  # behind a checkpoint that waits for the work in flight
        elif not task.chain.drain(self._drained):
            self._draining.append(snapshot)
            task.hold_input(True)
        else:
            self._take(snapshot)

    def _drained(self) -> None:
        waiting, self._draining = self._draining, []
        for snapshot in waiting:
            self._take(snapshot)
        self.task.hold_input(False)

    def _take(self, snapshot: _Snapshot) -> None:
        """The synchronous part."""
        task = self.task
        barrier = snapshot.barrier
        checkpoint_id = barrier.checkpoint_id
        if self._in_progress.get(checkpoint_id) is not snapshot:
            return  # aborted while the work in flight finished
        started = self.clock.now()
        task.chain.prepare_snapshot_pre_barrier(checkpoint_id)
        if barrier.unaligned:
            for index, partition in enumerate(task.partitions):
                for subpartition, elements in enumerate(partition.broadcast_priority_event(barrier)):
                    if elements:
                        snapshot.channels.append(ChannelState(kind=OUTPUT, gate=index, index=subpartition,
                                                              elements=elements))
        else:
            self._broadcast(barrier)
        snapshot.operators = task.chain.snapshot_state()
        for node_id, operator_snapshot in snapshot.operators.items():
            try:
                operator_snapshot.freeze()
            except Exception as exc:  # a value that cannot be serialized
                self._drop(checkpoint_id)
                self.decline(checkpoint_id, *self._unserializable(node_id, exc))
                return
        snapshot.sync_ms = (self.clock.now() - started) / NS_PER_MS
        snapshot.finished = task.data_ended and task.drained
        snapshot.attempt = task.attempt_key
        snapshot.taken = True
        self._written_when_ready(snapshot)

    def input_channel_state_completed(self, checkpoint_id: int, channels: list[ChannelState],
                                      metrics: CheckpointMetrics) -> None:
        """The barrier handler persisted the in-flight data of every input channel of an
        unaligned checkpoint."""
        snapshot = self._in_progress.get(checkpoint_id)
        if snapshot is None:
            return
        snapshot.channels.extend(channels)
        snapshot.metrics = metrics
        snapshot.awaiting_inputs = False
        self._written_when_ready(snapshot)

    def _unserializable(self, node_id: int, exc: Exception) -> tuple[CheckpointFailureReason, str]:
        """Why a checkpoint is declined whose state of operator ``node_id`` cannot be serialized
        (Flink's heap backend fails its asynchronous part)."""
        task = self.task
        reason = CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION
        return reason, (f"{reason.message} {task.vertex.name}: state of "
                        f"{task.deployment.job_graph.stream_graph.nodes[node_id].name} cannot be serialized: "
                        f"{describe(exc)}")

    def _drop(self, checkpoint_id: int) -> None:
        """Forget a checkpoint in progress (its views, if it took them)."""
        snapshot = self._in_progress.pop(checkpoint_id, None)
        if snapshot is not None:
            snapshot.release()

    def _written_when_ready(self, snapshot: _Snapshot) -> None:
        """Start the asynchronous part once the snapshot is taken and, unaligned, every input's
        in-flight data persisted."""
        if not (snapshot.taken and not snapshot.awaiting_inputs):
            return
        del self._in_progress[snapshot.barrier.checkpoint_id]
        if not self._threads:
            self.loop.call_soon(lambda: self._persisted(snapshot, self._persist(snapshot)))
            return
        loop = self.loop
        loop.io_started()  # the task's loop runs until the asynchronous part is done

        def run() -> None:
            try:
                persisted = self._persist(snapshot)
            except BaseException as exc:  # rill's own error: it surfaces in the task's loop
                loop.call_soon_threadsafe(self._failed_in_thread, exc)
                return
            loop.call_soon_threadsafe(self._persisted_in_thread, snapshot, persisted)

        threading.Thread(target=run, name=f"rill-snapshot {self.task.name} {snapshot.barrier.checkpoint_id}",
                         daemon=True).start()

    def _persist(self, snapshot: _Snapshot) -> _Persisted | None:
        """The asynchronous part (its own thread; reads only the snapshot): encode the
        operators' state and write it to the checkpoint storage. None when the task failed or
        was cancelled meanwhile."""
        task = self.task
        started = self.clock.now()
        checkpoint_id = snapshot.barrier.checkpoint_id
        encoded: dict[int, EncodedState] = {}
        with collector_paused():
            for node_id, operator_snapshot in snapshot.operators.items():
                if operator_snapshot.empty:
                    continue
                try:
                    encoded[node_id] = operator_snapshot.encode()
                except Exception as exc:  # a value that cannot be serialized
                    return _Persisted([], 0, 0.0, self._unserializable(node_id, exc))
        if task.state in ("FAILED", "CANCELED"):
            return None
        subtask = task.deployment.subtask
        persisted = sum(len(element) for channel in snapshot.channels for element in channel.elements)
        if snapshot.channels:
            head = task.vertex.head_node_id
            encoded[head] = add_channel_state(encoded.get(head), snapshot.channels)
        operator_ids = task.vertex.operator_ids
        try:
            operators = [
                OperatorSubtaskSnapshot(operator_id=operator_ids[node_id], state=self.storage.write_state(
                    checkpoint_id, f"{operator_ids[node_id]}-{subtask}", state.data, state.key_groups,
                    state.operator_state, state.channel_state, snapshot.barrier.location))
                for node_id, state in encoded.items()]
        except OSError as exc:
            reason = CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION
            return _Persisted([], 0, 0.0, (reason, f"{reason.message} {exc}"))
        return _Persisted(operators, persisted, (self.clock.now() - started) / NS_PER_MS)

    def _persisted_in_thread(self, snapshot: _Snapshot, persisted: _Persisted | None) -> None:
        self.loop.io_finished()
        self._persisted(snapshot, persisted)

    def _failed_in_thread(self, exc: BaseException) -> None:
        self.loop.io_finished()
        raise exc

    def _persisted(self, snapshot: _Snapshot, persisted: _Persisted | None) -> None:
        """The asynchronous part is done (the task's thread): release the views, acknowledge
        or decline."""
        snapshot.release()
        task = self.task
        if persisted is None or task.state in ("FAILED", "CANCELED"):
            return
        checkpoint_id = snapshot.barrier.checkpoint_id
        if persisted.declined is not None:
            self.decline(checkpoint_id, *persisted.declined)
            return
        d = task.deployment
        vertex_id, subtask, attempt = snapshot.attempt
        metrics = snapshot.metrics
        task.tell_job_master(AcknowledgeCheckpoint(
            job_id=d.job_id, vertex_id=vertex_id, subtask=subtask, attempt=attempt, checkpoint_id=checkpoint_id,
            state=TaskStateSnapshot(operators=persisted.operators, finished=snapshot.finished),
            metrics=CheckpointMetrics(alignment_ms=metrics.alignment_ms, processed_records=metrics.processed_records,
                                      processed_bytes=metrics.processed_bytes, persisted_bytes=persisted.persisted_bytes,
                                      unaligned=snapshot.barrier.unaligned, sync_ms=snapshot.sync_ms,
                                      async_ms=persisted.async_ms)))

    def abort_on_barrier(self, checkpoint_id: int, reason: CheckpointFailureReason) -> None:
        """Cancelled or subsumed on an input: tell downstream, decline."""
        self._drop(checkpoint_id)
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

    def finished(self) -> None:
        """The task finished (its thread): decline the checkpoints triggered that it did not take."""
        with self._lock:
            self._closed = True
            pending, self._to_take = sorted(self._to_take), set()
        reason = CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_CLOSING
        for checkpoint_id in pending:
            self.decline(checkpoint_id, reason, f"Task {self.task.name} finished before it took the checkpoint")

    # -- the end of data ----------------------------------------------------------------------

    def end_of_data(self, partitions: Any = ()) -> None:
        """The task ended its data: its final checkpoint is the next one once every consumer of
        ``partitions`` processed all their records (FLIP-147, Flink's ``getAllDataProcessedFuture``:
        else what is in flight when the task finishes would be in no later checkpoint)."""
        remaining = [len(partitions)]

        def processed() -> None:
            remaining[0] -= 1
            if remaining[0] == 0:
                self.task.mailbox.execute(self._data_processed, "all data processed")

        for partition in partitions:
            partition.when_all_data_processed(processed)
        if not partitions:
            self._data_processed()

    def _data_processed(self) -> None:
        self.final_checkpoint_id = self.last_checkpoint_id + 1
