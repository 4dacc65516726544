"""The JobMaster's DefaultScheduler: the ExecutionGraph, its execution states and the job's
status, the scheduling strategy it serves (SchedulerOperations), and failure handling.

Failures (Flink's ExecutionFailureHandler): a failed execution is reported to the restart
back-off strategy; if it may restart, the failover strategy names the vertices to restart
(a global failure: all of them), they are cancelled, and after the back-off delay (once all of
them ended) they get new attempts, the state of the latest completed checkpoint, and go back
to the scheduling strategy; otherwise the job fails ("Recovery is suppressed by ...").
Cancelling the job cancels every execution; the job ends once all of them are terminal.

A STREAMING job has a CheckpointCoordinator (``checkpointing`` plugin; required when the job
takes checkpoints or starts from a snapshot), told of the job's status and of failed
executions: it takes periodic checkpoints when the job takes them (sinks then write at once —
no staging: print is at-least-once, as in Flink) and savepoints when asked. A job started from a
snapshot (``execution.state-recovery.path``) gets its state before it runs; a snapshot it
cannot take fails it at once. A stop-with-savepoint remembers the savepoint's path, which the
job's end reports when it FINISHED.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernel.runtime.checkpointing.failures import CheckpointException
from kernel.runtime.checkpointing.options import CheckpointingOptions, checkpointing_enabled
from kernel.runtime.checkpointing.recovery import RestoreError, StateRecoveryOptions
from kernel.clock import NS_PER_MS
from kernel.runtime.cluster_events import ExecutionStateChanged, JobStatusChanged, TaskFailureHandled, TasksRestarted
from kernel.runtime.graph.execution import LEGAL_TRANSITIONS, ExecutionState, ExecutionVertex, JobStatus
from kernel.errors import JobNotRunning
from kernel.runtime.graph.job import JobGraph
from kernel.messaging import Future
from kernel.runtime.streaming.committer import SinkCommitter
from plugins.local import messages as m
from plugins.local.jobmaster.checkpoints import JobMasterCheckpointContext
from plugins.local.jobmaster.deployer import RUNNING_STATES, ExecutionDeployer
from plugins.local.jobmaster.slotpool import AllocatedSlot, SlotPool
from plugins.local.jobmaster.slotsharing import ExecutionSlotSharingGroup, slot_sharing_groups

if TYPE_CHECKING:
    from kernel.runtime.checkpointing.assignment import TaskRestore
    from kernel.contracts.checkpointing import CheckpointCoordinator
    from kernel.events import Event
    from plugins.local.jobmaster.jobmaster import JobMaster

S = ExecutionState


@dataclass
class _PendingRestart:
    vertex_ids: set[str]
    due: int  # ns
    number: int


def job_is_bounded(job_graph: JobGraph) -> bool:
    """Whether every source of the job ends."""
    for node in job_graph.stream_graph.nodes.values():
        spec = node.operator
        if spec.kind == "source" and not bool(getattr(spec.function, "is_bounded", lambda: True)()):
            return False
    return True


class DefaultScheduler:
    def __init__(self, job_master: JobMaster) -> None:
        self.job_master = job_master
        run = self.run = job_master.run
        self.clock = job_master.clock
        self.job_graph = job_master.job_graph
        self.job_id = job_master.job_id
        self.options = job_master.options
        self.tracker = job_master.tracker
        self.status = JobStatus.CREATED
        self.graph = run.build_execution_graph(self.job_graph)
        groups = slot_sharing_groups(self.graph)
        self.group_by_index = {group.index: group for group in groups.values()}
        plugins = run.plugin_manager
        plugins.require("create_scheduling_strategy", "scheduling")
        plugins.require("create_restart_strategy", "failover")
        plugins.require("create_failover_strategy", "failover")
        hook = plugins.hook
        self.checkpointing = checkpointing_enabled(run.config.section(CheckpointingOptions),
                                                   self.job_graph.runtime_mode)
        self.strategy = hook.create_scheduling_strategy(execution_graph=self.graph, scheduler=self, config=run.config)
        self.restart_strategy = hook.create_restart_strategy(run=run, checkpointing=self.checkpointing)
        self.failover_strategy = hook.create_failover_strategy(execution_graph=self.graph, config=run.config)
        self.alignment = hook.create_watermark_alignment(run=run)  # the coordinator, when sources align
        self.checkpoints: CheckpointCoordinator | None = None
        self.recovery = run.config.section(StateRecoveryOptions)
        if self.checkpointing or self.recovery.path is not None:
            plugins.require("create_checkpoint_coordinator", "checkpointing")
        if self.job_graph.runtime_mode != "BATCH" and hook.create_checkpoint_coordinator.get_hookimpls():
            self.checkpoints = hook.create_checkpoint_coordinator(context=JobMasterCheckpointContext(self), run=run)
        #: the savepoint a stop-with-savepoint took (reported when the job FINISHED), or why it failed
        self.stopped_with_savepoint = ""
        self.stop_failure = ""
        #: what the current attempt of each execution vertex restores (by vertex id)
        self.task_restores: dict[str, TaskRestore] = {}
        self.committer: SinkCommitter | None = None
        if self.restart_strategy.can_restart() and job_is_bounded(self.job_graph) and not self.checkpointing:
            self.committer = SinkCommitter()
        self.slot_pool = SlotPool(job_master, self)
        self.deployer = ExecutionDeployer(job_master, self, self.slot_pool, groups)
        self.groups = groups
        self.pending_restarts: list[_PendingRestart] = []
        self.restarts = 0
        self.failure = ""

    # -- SchedulerOperations (used by the scheduling strategy) --------------------------------

    def emit(self, event: Event) -> None:
        self.job_master.emit(event)

    def now(self) -> int:
        return self.clock.now()

    def allocate_slots_and_deploy(self, vertices: list[ExecutionVertex]) -> None:
        if self.status is not JobStatus.RUNNING:
            return
        batch = [ev for ev in vertices if ev.current.state is S.CREATED]
        if not batch:
            return
        for ev in batch:
            self.transition(ev, S.SCHEDULED)
        pool = self.slot_pool
        for group in {id(self.groups[ev.id]): self.groups[ev.id] for ev in batch}.values():
            if group.index not in pool.slots and group not in pool.pending_requests:
                pool.request(group)
        self.deployer.add(batch)
        pool.declare()
        self.deployer.deploy_ready()

    # -- the job ------------------------------------------------------------------------------

    def start(self) -> None:
        if self.checkpoints is not None and self.recovery.path is not None:
            try:
                self.task_restores.update(self.checkpoints.restore_savepoint(
                    self.graph.vertices(), self.recovery.path, self.recovery.ignore_unclaimed_state))
            except RestoreError as exc:
                self._end(JobStatus.FAILED, str(exc))
                return
        self._set_status(JobStatus.RUNNING)

    def trigger_savepoint(self, directory: str | None, terminate: bool, drain: bool) -> Future:
        """Take a savepoint (``terminate``: stop the job with it); the answer is its path."""
        answer = Future(self.job_master.loop)
        if self.checkpoints is None or self.status is not JobStatus.RUNNING:
            why = (f"it is {self.status.value}" if self.checkpoints is not None else
                   "it runs in BATCH execution mode" if self.job_graph.runtime_mode == "BATCH" else
                   "no plugin of concern checkpointing is loaded")
            answer.set_exception(JobNotRunning(f"job {self.job_id} takes no savepoint: {why}"))
            return answer

        def done(path: str | None, failure: str | None) -> None:
            if path is None:
                if terminate:
                    self.stop_failure = failure or ""
                answer.set_exception(CheckpointException(failure))
                return
            if terminate:
                self.stopped_with_savepoint = path
            answer.set_result(path)

        self.checkpoints.trigger_savepoint(directory, terminate, drain, done)
        return answer

    def slot_request_failed(self, group: ExecutionSlotSharingGroup, cause: str) -> None:
        waiting = [ev for ev in group.vertices if ev.current.state is S.SCHEDULED]
        if waiting:
            self.execution_failed(waiting[0], cause)

    def slots_lost(self, resource_id: str, cause: str, allocations: set[str] | None = None) -> None:
        """The slots on a TaskExecutor (those of ``allocations``, or all) are gone: their
        executions fail; scheduled vertices that waited for them ask again."""
        pool = self.slot_pool
        for index, slot in list(pool.slots.items()):
            if slot.resource_id == resource_id and (allocations is None or slot.allocation_id in allocations):
                pool.remove(index, cause)
                for ev in self.graph.vertices():
                    if ev.current.slot is slot and not ev.current.state.is_terminal:
                        self.execution_failed(ev, cause)
        for group in self.group_by_index.values():
            if group.index not in pool.slots and group not in pool.pending_requests and any(
                    ev.current.state is S.SCHEDULED for ev in group.vertices):
                pool.request(group)
        pool.declare()

    # -- execution states ---------------------------------------------------------------------

    def transition(self, ev: ExecutionVertex, target: ExecutionState, failure: str = "") -> bool:
        execution = ev.current
        old = execution.state
        if not execution.transition(None, target):
            return False
        if failure:
            execution.failure = failure
        slot = execution.slot
        self.emit(ExecutionStateChanged(
            time=self.clock.now(), job_id=self.job_id, vertex_id=ev.job_vertex.id, vertex_name=ev.job_vertex.name,
            subtask=ev.subtask, attempt=execution.attempt, old_state=old.value, new_state=target.value,
            resource_id=slot.resource_id if isinstance(slot, AllocatedSlot) else "", failure=failure,
        ))
        if target is S.RUNNING:
            self.tracker.check_recovered(self.graph, self.clock.now())
        return True

    def update_task_execution_state(self, message: m.UpdateTaskExecutionState) -> None:
        ev = self.graph.vertex(f"{message.vertex_id}_{message.subtask}")
        if ev.current.attempt != message.attempt or ev.current.state.is_terminal:
            return
        target = S(message.state)
        if target is S.FAILED:
            self.execution_failed(ev, message.failure)
            return
        if target is S.FINISHED and ev.current.state is S.CANCELING:
            target = S.CANCELED  # it ended before the cancel arrived: cancelling is complete
        if target is S.CANCELED and ev.current.state is not S.CANCELING:
            self.execution_failed(ev, f"TaskExecutor {ev.current.slot.resource_id} cancelled {ev.name} "
                                      f"(attempt {message.attempt}) on its own")
            return
        if target not in LEGAL_TRANSITIONS[ev.current.state]:
            return  # a stale or out-of-order report
        self.transition(ev, target, message.failure)
        if target is S.FINISHED:
            self.strategy.on_execution_state_change(ev, target)
            self._release_finished_groups()
            if all(v.current.state is S.FINISHED for v in self.graph.vertices()):
                self._end(JobStatus.FINISHED, "")
        elif target is S.CANCELED:
            self._ended()

    def _release_finished_groups(self) -> None:
        """A slot whose every subtask finished goes back (batch jobs reuse it for later regions)."""
        pool = self.slot_pool
        for index in list(pool.slots):
            if all(ev.current.state is S.FINISHED for ev in self.group_by_index[index].vertices):
                pool.release(index, "tasks finished")
        pool.declare()

    # -- failures -----------------------------------------------------------------------------

    def execution_failed(self, ev: ExecutionVertex, cause: str) -> None:
        """An execution failed (reported by its TaskExecutor or noticed by the JobMaster)."""
        execution = ev.current
        if execution.state.is_terminal:
            return
        if execution.state is S.CANCELING:
            self.transition(ev, S.CANCELED)  # failing while cancelled completes the cancel
            self._ended()
            return
        self.transition(ev, S.FAILED, cause)
        if self.checkpoints is not None:
            self.checkpoints.task_failed(ev.job_vertex.id, ev.subtask, execution.attempt)
        self._handle_failure(ev, cause)

    def fail_global_if_execution_is_still_running(self, vertex_id: str, subtask: int, attempt: int,
                                                   cause: str) -> None:
        """A global failure caused by that attempt (e.g. its declined checkpoint was one too
        many), unless it is no longer the running attempt (Flink's method of that name)."""
        execution = self.graph.vertex(f"{vertex_id}_{subtask}").current
        if execution.attempt == attempt and execution.state in RUNNING_STATES:
            self.handle_global_failure(cause)

    def handle_global_failure(self, cause: str) -> None:
        """A failure of the job as a whole (e.g. too many failed checkpoints): every vertex
        restarts, if the restart strategy allows."""
        if self.status is JobStatus.RUNNING:
            self._handle_failure(None, cause)

    def _handle_failure(self, ev: ExecutionVertex | None, cause: str) -> None:
        if self.status is not JobStatus.RUNNING:
            self._ended()
            return
        now_ms = self.clock.now() // NS_PER_MS
        new_attempt = self.restart_strategy.notify_failure(now_ms)
        first_line = cause.splitlines()[0] if cause else ""
        event = dict(time=self.clock.now(), job_id=self.job_id, cause=first_line, subtask=-1, attempt=-1)
        if ev is not None:
            event.update(vertex_id=ev.job_vertex.id, vertex_name=ev.job_vertex.name, subtask=ev.subtask,
                         attempt=ev.current.attempt)
        if not self.restart_strategy.can_restart():
            reason = f"JobException: Recovery is suppressed by {self.restart_strategy}"
            self.emit(TaskFailureHandled(**event, restart=False, reason=reason))
            self.tracker.failure(self.clock.now(), first_line, restart=False)
            self._fail_job(f"{cause}\n{reason}")
            return
        vertex_ids = self.failover_strategy.tasks_to_restart(ev) if ev is not None else {
            vertex.id for vertex in self.graph.vertices()}
        delay = self.restart_strategy.backoff_time_ms(now_ms)
        if new_attempt:
            self.restarts += 1
        self.emit(TaskFailureHandled(**event, restart=True, vertices_to_restart=len(vertex_ids), delay_ms=float(delay),
                                     restart_number=self.restarts))
        self.tracker.failure(self.clock.now(), first_line, restart=True)
        self.pending_restarts.append(_PendingRestart(set(vertex_ids), self.clock.now() + delay * NS_PER_MS, self.restarts))
        for vertex in self.graph.vertices():
            if vertex.id in vertex_ids:
                self._cancel_execution(vertex)
        self.deployer.remove(vertex_ids)
        self.job_master.schedule(delay * NS_PER_MS, self._restart_ready)

    def _cancel_execution(self, ev: ExecutionVertex) -> None:
        execution = ev.current
        state = execution.state
        if state in (S.CREATED, S.SCHEDULED):
            self.transition(ev, S.CANCELED)
        elif state in RUNNING_STATES:
            self.transition(ev, S.CANCELING)
            slot = execution.slot
            answer = self.job_master.ask(slot.resource_id, m.CancelTask(ev.job_vertex.id, ev.subtask, execution.attempt),
                                         self.options.rpc_timeout * NS_PER_MS)

            def cancelled(done: Any) -> None:
                if ev.current is execution and execution.state is S.CANCELING and (
                        done.exception() is not None or done.result() == "unknown"):
                    self.transition(ev, S.CANCELED)  # nothing runs there (or nobody answers): it is gone
                    self._ended()

            answer.add_done_callback(cancelled)

    def cancel_on(self, resource_id: str, vertex_id: str, subtask: int, attempt: int) -> None:
        self.job_master.ask(resource_id, m.CancelTask(vertex_id, subtask, attempt), self.options.rpc_timeout * NS_PER_MS)

    def _ended(self) -> None:
        """An execution reached a terminal state: a pending restart or cancel may complete."""
        self._check_cancelled()
        self._restart_ready()

    def _restart_ready(self) -> None:
        if self.status is not JobStatus.RUNNING:
            return
        now = self.clock.now()
        for pending in list(self.pending_restarts):
            vertices = [ev for ev in self.graph.vertices() if ev.id in pending.vertex_ids]
            if now < pending.due or not all(ev.current.state.is_terminal for ev in vertices):
                continue
            self.pending_restarts.remove(pending)
            for ev in vertices:
                ev.reset_for_new_execution()
                self.task_restores.pop(ev.id, None)
            self.emit(TasksRestarted(time=now, job_id=self.job_id, vertices=len(vertices), restart_number=pending.number))
            if self.checkpoints is not None:
                self.task_restores.update(self.checkpoints.restore(vertices))
            self.strategy.restart_tasks(pending.vertex_ids)

    # -- ending -------------------------------------------------------------------------------

    def _fail_job(self, failure: str) -> None:
        if self.status is not JobStatus.RUNNING:
            return
        self.failure = failure
        self._set_status(JobStatus.FAILING, failure.splitlines()[0] if failure else "")
        self._cancel_all()

    def cancel(self, reason: str) -> None:
        if self.status is JobStatus.RUNNING:
            self._set_status(JobStatus.CANCELLING, reason)
            self._cancel_all()

    def _cancel_all(self) -> None:
        self.pending_restarts.clear()
        for ev in self.graph.vertices():
            self._cancel_execution(ev)
        self.deployer.clear()
        self.slot_pool.pending_requests.clear()
        self._check_cancelled()

    def _check_cancelled(self) -> None:
        if all(ev.current.state.is_terminal for ev in self.graph.vertices()):
            if self.status is JobStatus.FAILING:
                self._end(JobStatus.FAILED, self.failure)
            elif self.status is JobStatus.CANCELLING:
                self._end(JobStatus.CANCELED, "")

    def _end(self, status: JobStatus, failure: str) -> None:
        pool = self.slot_pool
        pool.cancel_requests()
        if self.alignment is not None:
            self.alignment.close()
        staged: tuple | None = None
        if self.committer is not None:  # the final attempts, with where they ran
            final = [(ev.current.slot.resource_id if ev.current.slot is not None else "",
                      (ev.job_vertex.id, ev.subtask, ev.current.attempt)) for ev in self.graph.vertices()]
            staged = tuple(final) if status is JobStatus.FINISHED else ()
            self.committer.commit([attempt for _, attempt in staged])
        self._set_status(status, failure.splitlines()[0] if failure else "")
        for index in list(pool.slots):
            pool.release(index, f"job {status.value.lower()}")
        pool.pending_requests.clear()
        pool.declare(force=True)
        self.job_master.job_ended(status, failure, staged)

    def _set_status(self, status: JobStatus, reason: str = "") -> None:
        old = self.status
        self.status = status
        self.emit(JobStatusChanged(time=self.clock.now(), job_id=self.job_id, old_status=old.value,
                                   new_status=status.value, reason=reason))
        if self.checkpoints is not None:
            self.checkpoints.job_status_changed(status.value)
