"""The CheckpointCoordinator in the JobMaster (Flink's class of that name).

Periodic checkpoints start when the job runs: the first after a random delay between
``min-pause`` and the interval (seeded), then every interval (the interval is at least the
minimum pause), each a request the :class:`CheckpointRequestDecider` runs, holds back or drops.
Once every task ended its input (FLIP-147) a checkpoint is requested at once.

Triggering checkpoint n: the plan names the tasks to trigger and to wait for (a task not
deployed fails the trigger before it has an id), ``chk-n`` is created, the expiry timer
(``execution.checkpointing.timeout``) starts, and the tasks to trigger get a mail. Completion:
when every task acknowledged, ``_metadata`` is written, the checkpoint enters the store (which
deletes what it subsumes), older pending checkpoints are subsumed, the tasks are notified.
Abort (declined, expired, subsumed, a task failed, the job fails over or stops): its directory
is deleted, the failure manager counts it, the tasks are notified. A restarted region's new
attempts get the state of the latest completed checkpoint.

Savepoints (Flink's savepoints and stop-with-savepoint) take the same path as checkpoints, forced
past the request decider, under ``savepoint-<job>-<random>`` in the directory asked for (or
``execution.checkpointing.savepoint-dir``). A completed savepoint is never in the store nor
subsumes anything, counts against no tolerable failures, and its tasks are not notified — unless
it stops the job: then periodic checkpoints stop and pending ones are aborted first, the sources
stop (and drain, if asked) before they take it, and its completion lets every task finish. A
stop-with-savepoint that fails once sources stopped fails the job over; before, the job goes on
with periodic checkpoints. Without an interval the coordinator takes only savepoints.

A job that starts from a snapshot (``execution.state-recovery.path``) gets its state at once:
vertices of derived max parallelism take the snapshot's, the snapshot enters the store (never
deleted) and checkpoint ids continue after its.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from kernel.runtime.checkpointing.assignment import TaskRestore, assign, state_of
from kernel.runtime.checkpointing.failures import EXCEEDED_CHECKPOINT_TOLERABLE_FAILURE_MESSAGE, CheckpointFailureReason
from kernel.runtime.checkpointing.format import CheckpointMetadata
from kernel.runtime.checkpointing.options import CheckpointingOptions
from plugins.checkpointing.options import CheckpointStorageOptions
from kernel.runtime.checkpointing.recovery import check_state_mapping, open_snapshot, restored_max_parallelism
from kernel.clock import MIN_LONG, NS_PER_MS
from plugins.checkpointing.decider import CheckpointRequestDecider, CheckpointTriggerRequest
from plugins.checkpointing.events import (
    CheckpointAcknowledged,
    CheckpointCompleted,
    CheckpointDeclined,
    CheckpointFailed,
    CheckpointStateRestored,
    CheckpointTriggered,
)
from plugins.checkpointing.failures import UNKNOWN_CHECKPOINT_ID, CheckpointFailureManager
from plugins.checkpointing.plan import CheckpointPlanError, PendingCheckpoint, TaskKey, calculate_plan, task_key
from plugins.checkpointing.storage import CheckpointStorage
from plugins.checkpointing.store import CompletedCheckpoint, CompletedCheckpointStore

if TYPE_CHECKING:
    from kernel.runtime.checkpointing.messages import AcknowledgeCheckpoint, DeclineCheckpoint
    from kernel.contracts.checkpointing import CheckpointCoordinatorContext
    from kernel.runtime.graph.execution import ExecutionVertex
    from kernel.lifecycle.run import Run

R = CheckpointFailureReason


class DefaultCheckpointCoordinator:
    def __init__(self, context: CheckpointCoordinatorContext, run: Run) -> None:
        options = run.config.section(CheckpointingOptions)
        self.context = context
        self.options = options
        self.graph = context.execution_graph
        self.job_id = context.job_id
        #: None: no periodic checkpoints (savepoints only)
        self.interval = None if options.interval is None else max(options.interval, options.min_pause)
        self.aligned = options.mode == "EXACTLY_ONCE"
        unaligned = options.unaligned_enabled
        #: barriers overtake data at once, or start aligned and switch after the timeout
        self.unaligned = unaligned and options.aligned_timeout == 0
        self.alignment_timeout = options.aligned_timeout if unaligned else 0
        storage = run.config.section(CheckpointStorageOptions)
        self.storage = CheckpointStorage(storage, context.job_id)
        self.store = CompletedCheckpointStore(self.storage, storage.num_retained, options.retention)
        self.failures = CheckpointFailureManager(options.tolerable_failures)
        self.decider = CheckpointRequestDecider(options.max_concurrent, options.min_pause, self._reschedule,
                                                self._now_ms)
        self.rng = run.rng.stream("checkpoint-coordinator")
        existing = self.storage.existing_checkpoints()
        self.next_id = existing[-1] + 1 if existing else 1
        self.pending: dict[int, PendingCheckpoint] = {}
        self.last_completion_ms = MIN_LONG
        self.periodic = False
        self.shut_down = False
        self._trigger: Any = None
        self._next_trigger_ms = 0
        self._requests = 0
        self._starting = False  # starting queued requests (see _execute)
        self._started_later: list[CheckpointTriggerRequest] = []
        self._ended_data: set[TaskKey] = set()
        #: a stop-with-savepoint is in progress
        self.stopping = False

    def _now_ms(self) -> int:
        return self.context.now() // NS_PER_MS

    # -- the job's status ---------------------------------------------------------------------

    def job_status_changed(self, status: str) -> None:
        if self.shut_down:
            return
        if status == "RUNNING":
            self._start_periodic()
        elif status in ("FINISHED", "CANCELED", "FAILED"):
            self._stop(R.CHECKPOINT_COORDINATOR_SHUTDOWN)
            self.shut_down = True
            self.store.shutdown(status)
        else:
            self._stop(R.CHECKPOINT_COORDINATOR_SUSPEND)

    def _start_periodic(self) -> None:
        if not self.periodic and self.interval is not None:
            self.periodic = True
            self._schedule_trigger(self.rng.randint(self.options.min_pause, self.interval))

    def _stop(self, reason: CheckpointFailureReason) -> None:
        self.periodic = False
        if self._trigger is not None:
            self._trigger.cancel()
            self._trigger = None
        self.decider.abort_all()
        for pending in list(self.pending.values()):
            self._abort(pending, reason, reason.message)

    # -- periodic triggering ------------------------------------------------------------------

    def _schedule_trigger(self, delay_ms: int) -> None:
        self._next_trigger_ms = self._now_ms() + delay_ms
        self._trigger = self.context.schedule(delay_ms * NS_PER_MS, self._periodic_trigger)

    def _reschedule(self, delay_ms: int) -> None:
        """The minimum pause moves the periodic trigger."""
        if self._trigger is not None:
            self._trigger.cancel()
        self._schedule_trigger(delay_ms)

    def _periodic_trigger(self) -> None:
        self._next_trigger_ms += self.interval
        delay = max(0, self._next_trigger_ms - self._now_ms())
        self._trigger = self.context.schedule(delay * NS_PER_MS, self._periodic_trigger)
        self._request(periodic=True)

    def _request(self, periodic: bool) -> None:
        self._requests += 1
        request = CheckpointTriggerRequest(periodic, self.context.now(), self._requests)
        self._execute(request)

    def _execute_queued(self) -> None:
        self._execute(None)

    def _execute(self, request: CheckpointTriggerRequest | None) -> None:
        """Queue ``request`` (if any) and start what the decider lets run, one after another
        (a start that fails at once lets the next queued request run; a start within a start
        leaves that to the outer one)."""
        chosen = self.decider.choose(request, len(self.pending), self.last_completion_ms)
        if self._starting:
            if chosen is not None:
                self._started_later.append(chosen)
            return
        self._starting = True
        try:
            while chosen is not None and not self.shut_down:
                self._start(chosen)
                chosen = self._started_later.pop(0) if self._started_later else self.decider.choose(
                    None, len(self.pending), self.last_completion_ms)
        finally:
            self._starting = False

    # -- triggering ---------------------------------------------------------------------------

    def _start(self, request: CheckpointTriggerRequest, savepoint: _Savepoint | None = None) -> None:
        try:
            plan = calculate_plan(self.graph, self.options.after_tasks_finish)
        except CheckpointPlanError as exc:
            self._failed(UNKNOWN_CHECKPOINT_ID, exc.reason, str(exc), None, "savepoint" if savepoint else "checkpoint")
            if savepoint is not None:
                self._savepoint_failed(savepoint.on_done, savepoint.stop, str(exc), stopped=False)
            self._execute_queued()
            return
        checkpoint_id = self.next_id
        self.next_id += 1
        now = self.context.now()
        pending = PendingCheckpoint(checkpoint_id, now // NS_PER_MS, now, plan, request.periodic)
        if savepoint is not None:
            pending.kind, pending.stop, pending.drain, pending.on_done = (
                "savepoint", savepoint.stop, savepoint.drain, savepoint.on_done)
        self.pending[checkpoint_id] = pending
        self.context.emit(CheckpointTriggered(
            time=now, job_id=self.job_id, checkpoint_id=checkpoint_id, checkpoint_kind=pending.kind,
            timestamp=pending.timestamp, periodic=request.periodic, tasks_to_trigger=len(plan.to_trigger),
            tasks_to_acknowledge=len(plan.to_wait_for), finished_tasks=len(plan.finished)))
        location = ""
        try:
            if savepoint is None:
                self.storage.initialize_location(checkpoint_id)
            else:
                location = self.storage.initialize_savepoint_location(checkpoint_id, savepoint.target, self.rng)
        except OSError as exc:
            self._abort(pending, R.IO_EXCEPTION, f"{R.IO_EXCEPTION.message} {exc}")
            return
        pending.canceller = self.context.schedule(self.options.timeout * NS_PER_MS, lambda: self._expire(pending))
        for ev in plan.to_trigger:
            savepoint = pending.kind == "savepoint"  # a savepoint's barriers are always aligned, as in Flink
            self.context.trigger_checkpoint(ev, checkpoint_id, pending.timestamp, self.aligned,
                                            self.unaligned and not savepoint,
                                            0 if savepoint else self.alignment_timeout, pending.stop, pending.drain,
                                            location)
        if pending.fully_acknowledged:
            self._complete(pending)

    def _expire(self, pending: PendingCheckpoint) -> None:
        self._abort(pending, R.CHECKPOINT_EXPIRED, R.CHECKPOINT_EXPIRED.message)

    def end_of_data(self, vertex_id: str, subtask: int, attempt: int) -> None:
        """FLIP-147: once every running task ended its input, checkpoint at once (the final
        checkpoint the tasks wait for before they finish)."""
        self._ended_data.add((vertex_id, subtask, attempt))
        if self.shut_down or not self.periodic or self.stopping:
            return
        if all(task_key(ev) in self._ended_data or ev.current.state.is_terminal for ev in self.graph.vertices()):
            self._request(periodic=False)

    # -- acknowledgements ---------------------------------------------------------------------

    def receive_acknowledge(self, message: AcknowledgeCheckpoint) -> None:
        pending = self.pending.get(message.checkpoint_id)
        if self.shut_down or pending is None or not pending.acknowledge(message):
            return
        ev = self.graph.job_vertex(message.vertex_id).vertices[message.subtask]
        metrics = message.metrics
        self.context.emit(CheckpointAcknowledged(
            time=self.context.now(), job_id=self.job_id, vertex_id=message.vertex_id, vertex_name=ev.job_vertex.name,
            subtask=message.subtask, attempt=message.attempt, checkpoint_id=message.checkpoint_id,
            state_size=message.state.state_size, sync_ms=metrics.sync_ms, async_ms=metrics.async_ms,
            alignment_ms=metrics.alignment_ms, processed_records=metrics.processed_records,
            processed_bytes=metrics.processed_bytes, persisted_bytes=metrics.persisted_bytes,
            unaligned=metrics.unaligned, end_to_end_ms=(self.context.now() - pending.triggered_ns) / NS_PER_MS, finished=message.state.finished))
        if pending.fully_acknowledged:
            self._complete(pending)

    def receive_decline(self, message: DeclineCheckpoint) -> None:
        pending = self.pending.get(message.checkpoint_id)
        if self.shut_down or pending is None:
            return
        ev = self.graph.job_vertex(message.vertex_id).vertices[message.subtask]
        self.context.emit(CheckpointDeclined(
            time=self.context.now(), job_id=self.job_id, vertex_id=message.vertex_id, vertex_name=ev.job_vertex.name,
            subtask=message.subtask, attempt=message.attempt, checkpoint_id=message.checkpoint_id,
            reason=message.reason, message=message.message))
        self._abort(pending, R[message.reason], message.message,
                    (message.vertex_id, message.subtask, message.attempt))

    def task_failed(self, vertex_id: str, subtask: int, attempt: int) -> None:
        """Flink's ``failUnacknowledgedPendingCheckpointsFor``."""
        key = (vertex_id, subtask, attempt)
        self._ended_data.discard(key)
        for pending in list(self.pending.values()):
            if key in pending.not_yet_acknowledged:
                self._abort(pending, R.TASK_FAILURE, R.TASK_FAILURE.message)

    # -- completing and aborting --------------------------------------------------------------

    def _complete(self, pending: PendingCheckpoint) -> None:
        self._dispose(pending)
        now = self.context.now()
        metadata = CheckpointMetadata(
            job_id=self.job_id, job_name=self.context.job_name, checkpoint_id=pending.checkpoint_id, kind=pending.kind,
            timestamp=pending.timestamp, completed=now // NS_PER_MS, operators=pending.operator_states(self.graph))
        try:
            pointer = self.storage.write_metadata(metadata)
        except OSError as exc:
            self._abort(pending, R.FINALIZE_CHECKPOINT_FAILURE, f"{R.FINALIZE_CHECKPOINT_FAILURE.message} {exc}",
                        disposed=True)
            return
        savepoint = pending.kind == "savepoint"
        subsumed = [] if savepoint else self.store.add(CompletedCheckpoint(metadata, pointer))
        if not savepoint:
            self.failures.succeeded(pending.checkpoint_id)
        self.last_completion_ms = now // NS_PER_MS
        self.context.emit(CheckpointCompleted(
            time=now, job_id=self.job_id, checkpoint_id=pending.checkpoint_id, checkpoint_kind=pending.kind,
            state_size=metadata.state_size, duration_ms=(now - pending.triggered_ns) / NS_PER_MS,
            external_path=pointer, subsumed=subsumed))
        if not savepoint:
            for older in [p for p in self.pending.values() if p.checkpoint_id < pending.checkpoint_id]:
                self._abort(older, R.CHECKPOINT_SUBSUMED, R.CHECKPOINT_SUBSUMED.message)
        if not savepoint or pending.stop:
            for ev in pending.current_tasks():
                self.context.notify_checkpoint_complete(ev, pending.checkpoint_id)
        if pending.on_done is not None:
            pending.on_done(pointer, None)
        self._execute_queued()

    def _dispose(self, pending: PendingCheckpoint) -> None:
        pending.disposed = True
        self.pending.pop(pending.checkpoint_id, None)
        if pending.canceller is not None:
            pending.canceller.cancel()

    def _abort(self, pending: PendingCheckpoint, reason: CheckpointFailureReason, message: str,
               failing_task: TaskKey | None = None, disposed: bool = False) -> None:
        if pending.disposed and not disposed:
            return
        self._dispose(pending)
        self.storage.discard(pending.checkpoint_id)
        self._failed(pending.checkpoint_id, reason, message, failing_task, pending.kind)
        for ev in pending.current_tasks():
            self.context.notify_checkpoint_aborted(ev, pending.checkpoint_id)
        if pending.on_done is not None:  # triggered: sources stopped (a failover under way needs no other)
            self._savepoint_failed(pending.on_done, pending.stop, message, stopped=pending.canceller is not None
                                   and reason not in (R.TASK_FAILURE, R.JOB_FAILOVER_REGION))
        self._execute_queued()

    def _failed(self, checkpoint_id: int, reason: CheckpointFailureReason, message: str,
                failing_task: TaskKey | None, kind: str = "checkpoint") -> None:
        if kind == "savepoint":  # savepoints count against no tolerable failures
            self.context.emit(CheckpointFailed(
                time=self.context.now(), job_id=self.job_id, checkpoint_id=checkpoint_id, checkpoint_kind=kind,
                reason=reason.name, message=message, counted=False, consecutive=self.failures.consecutive))
            return
        consecutive, exceeded = self.failures.failed(checkpoint_id, reason)
        self.context.emit(CheckpointFailed(
            time=self.context.now(), job_id=self.job_id, checkpoint_id=checkpoint_id, reason=reason.name,
            message=message, counted=reason.counted, consecutive=consecutive))
        if not exceeded:
            return
        cause = (f"{EXCEEDED_CHECKPOINT_TOLERABLE_FAILURE_MESSAGE} The latest checkpoint failed due to "
                 f"{reason.message}, see the checkpoints view to find out why continuous checkpoints failed.")
        if failing_task is not None:
            self.context.fail_job_due_to_task_failure(*failing_task, cause)
        else:
            self.context.fail_job(cause)

    # -- restoring ----------------------------------------------------------------------------

    def restore(self, vertices: list[ExecutionVertex]) -> dict[str, TaskRestore]:
        for pending in list(self.pending.values()):
            self._abort(pending, R.JOB_FAILOVER_REGION, R.JOB_FAILOVER_REGION.message)
        restarted = {ev.id for ev in vertices}
        self._ended_data = {key for key in self._ended_data if f"{key[0]}_{key[1]}" not in restarted}
        latest = self.store.latest()
        if latest is None:
            return {}
        directory = latest.external_pointer or None
        restores = {}
        for ev in vertices:
            restore = restores[ev.id] = assign(latest.metadata, directory, ev.job_vertex.job_vertex,
                                               ev.job_vertex.max_parallelism, ev.subtask)
            self.context.emit(CheckpointStateRestored(
                time=self.context.now(), job_id=self.job_id, vertex_id=ev.job_vertex.id,
                vertex_name=ev.job_vertex.name, subtask=ev.subtask, attempt=ev.current.attempt,
                checkpoint_id=latest.checkpoint_id, checkpoint_kind=latest.metadata.kind,
                external_path=latest.external_pointer, state_size=restore.state_size, finished=restore.finished))
        return restores

    def restore_savepoint(self, vertices: list[ExecutionVertex], path: str,
                          ignore_unclaimed_state: bool) -> dict[str, TaskRestore]:
        snapshot = open_snapshot(path)
        check_state_mapping(snapshot, self.graph.job_graph, ignore_unclaimed_state)
        metadata = snapshot.metadata
        for ejv in self.graph.job_vertices:
            vertex = ejv.job_vertex
            for node_id in vertex.chained_node_ids:
                state = state_of(metadata, vertex, node_id)
                if state is not None:
                    ejv.max_parallelism = restored_max_parallelism(state, vertex, snapshot.directory)
        self.store.add(CompletedCheckpoint(metadata, snapshot.directory, owned=False))
        self.next_id = max(self.next_id, metadata.checkpoint_id + 1)
        return self.restore(vertices)

    # -- savepoints ---------------------------------------------------------------------------

    def trigger_savepoint(self, target: str | None, stop: bool, drain: bool,
                          on_done: Callable[[str | None, str | None], None]) -> None:
        target = target or self.options.savepoint_dir
        if target is None:
            on_done(None, "No savepoint directory configured: give one, or set execution.checkpointing.savepoint-dir")
            return
        if self.shut_down or self.stopping:
            on_done(None, f"job {self.job_id} is {'stopping' if self.stopping else 'not running'}: no savepoint")
            return
        if stop:
            self.stopping = True
            self._stop(R.CHECKPOINT_COORDINATOR_SUSPEND)
        self._requests += 1
        self._start(CheckpointTriggerRequest(False, self.context.now(), self._requests),
                    _Savepoint(target, stop, drain, on_done))

    def _savepoint_failed(self, on_done: Callable[[str | None, str | None], None], stop: bool, message: str,
                          stopped: bool) -> None:
        """A savepoint failed; a stop-with-savepoint whose sources had stopped fails the job over."""
        on_done(None, message)
        if not stop or self.shut_down:
            return
        self.stopping = False
        if stopped:
            self.context.fail_job(f"stop-with-savepoint failed: {message}")
        else:
            self._start_periodic()


@dataclass(frozen=True)
class _Savepoint:
    target: str
    stop: bool
    drain: bool
    on_done: Callable[[str | None, str | None], None]

