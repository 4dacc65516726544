"""The JobMaster: builds the ExecutionGraph, asks for slots, deploys tasks, tracks states,
handles failures.

Slots are declarative (current Flink): the slot pool declares how many slots the job needs
to the ResourceManager, whose slot manager asks TaskExecutors to offer slots; the pool
accepts offers (from TaskExecutors connected to this JobMaster) that match outstanding
requests. A scheduled batch of vertices (a pipelined region, or everything for eager
scheduling) is deployed, in topological order, once every slot sharing group it needs has a
slot.

Failures (Flink's DefaultScheduler with its ExecutionFailureHandler): a failed execution is
reported to the restart back-off strategy; if it may restart, the failover strategy names
the vertices to restart, they are cancelled, and after the back-off delay (once all of them
ended) they get new attempts and go back to the scheduling strategy; otherwise the job
fails ("Recovery is suppressed by ..."). Executions on a TaskExecutor the JobMaster loses
(heartbeat timeout, unreachable, its slots reported gone by the ResourceManager) fail with
that cause. Heartbeats (seed 003): the JobMaster requests heartbeats from its
TaskExecutors, sending the allocations it holds there, and reconciles the executions they
report; it answers the ResourceManager's requests and reconnects when it loses it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernel.cluster_events import (
    ConnectionClosed,
    ExecutionStateChanged,
    JobStatusChanged,
    ResourceRequirementsDeclared,
    SlotAllocated,
    SlotReleased,
    TaskDeployed,
    TaskExecutorConnected,
    TaskFailureHandled,
    TasksRestarted,
)
from kernel.compiler import build_execution_graph
from kernel.execution import record_execution_graph
from kernel.graph.execution import LEGAL_TRANSITIONS, ExecutionGraph, ExecutionState, ExecutionVertex, JobStatus
from kernel.graph.job import DistributionPattern, JobGraph
from kernel.messaging import AskTimeout, Component, MessagingService
from kernel.streaming.committer import SinkCommitter
from plugins.local import messages as m
from plugins.local.connections import HeartbeatTarget, Listener, RetryingRegistration, heartbeat_manager
from plugins.local.slotsharing import ExecutionSlotSharingGroup, slot_sharing_groups
from plugins.local.task import ConsumedInput, ProducedPartition, TaskDeploymentDescriptor

if TYPE_CHECKING:
    from kernel.run import Run

S = ExecutionState
RESOURCE_MANAGER = "resourcemanager"
NS_PER_MS = 1_000_000
RUNNING_STATES = (S.DEPLOYING, S.INITIALIZING, S.RUNNING)


class _Slot:
    __slots__ = ("allocation_id", "resource_id", "slot_index")

    def __init__(self, allocation_id: str, resource_id: str, slot_index: int) -> None:
        self.allocation_id = allocation_id
        self.resource_id = resource_id
        self.slot_index = slot_index


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


class JobMaster(Component):
    def __init__(self, address: str, messaging: MessagingService, run: Run, job_graph: JobGraph,
                 dispatcher: str, options: Any, tracker: Any) -> None:
        super().__init__(address, messaging)
        self.run = run
        self.job_graph = job_graph
        self.job_id = job_graph.job_id
        self.dispatcher = dispatcher
        self.options = options
        self.tracker = tracker
        self.status = JobStatus.CREATED
        self.graph: ExecutionGraph | None = None
        self.strategy: Any = None
        self.restart_strategy: Any = None
        self.failover_strategy: Any = None
        self.alignment: Any = None  # the watermark alignment coordinator, when sources align
        self.committer: SinkCommitter | None = None
        self.groups: dict[str, ExecutionSlotSharingGroup] = {}
        self.group_slots: dict[int, _Slot] = {}
        self.pending_requests: deque[ExecutionSlotSharingGroup] = deque()
        self.batches: list[list[ExecutionVertex]] = []
        self.pending_restarts: list[_PendingRestart] = []
        self.task_managers: set[str] = set()
        self.deployed: set[tuple[str, int, int]] = set()  # attempts whose SubmitTask was acknowledged
        self.restarts = 0
        self.declared = -1
        self.rm_connected = False
        self.started_scheduling = False
        self.failure = ""
        self._request_timers: dict[int, Any] = {}
        self._registration: RetryingRegistration | None = None

    # -- start --------------------------------------------------------------------------------

    def on_start(self) -> None:
        session = self.run.session
        self.graph = build_execution_graph(session, self.job_graph)
        record_execution_graph(self.run, self.graph)
        self.groups = slot_sharing_groups(self.graph)
        self.group_by_index = {group.index: group for group in self.groups.values()}
        plugins = self.run.plugin_manager
        plugins.require("create_scheduling_strategy", "scheduling")
        plugins.require("create_restart_strategy", "failover")
        plugins.require("create_failover_strategy", "failover")
        hook = plugins.hook
        self.strategy = hook.create_scheduling_strategy(execution_graph=self.graph, scheduler=self, config=self.run.config)
        self.restart_strategy = hook.create_restart_strategy(run=self.run)
        self.failover_strategy = hook.create_failover_strategy(execution_graph=self.graph, config=self.run.config)
        self.alignment = hook.create_watermark_alignment(run=self.run)
        if self.restart_strategy.can_restart() and job_is_bounded(self.job_graph):
            self.committer = SinkCommitter()
        self.rm_heartbeats = heartbeat_manager(self, Listener(self, "resource_manager"), "receiver")
        self.tm_heartbeats = heartbeat_manager(self, Listener(self, "task_manager"), "sender")
        self._set_status(JobStatus.RUNNING)
        self._connect_to_resource_manager()

    def on_stop(self) -> None:
        if self._registration is not None:
            self._registration.cancel()
        self.rm_heartbeats.stop()
        self.tm_heartbeats.stop()

    # -- the ResourceManager ------------------------------------------------------------------

    def _connect_to_resource_manager(self) -> None:
        self._registration = RetryingRegistration(self, RESOURCE_MANAGER, m.RegisterJobMaster(self.job_id, self.address),
                                                  self.options, self._connected_to_resource_manager).start()

    def _connected_to_resource_manager(self, answer: Any) -> None:
        self.rm_connected = True
        self.rm_heartbeats.monitor_target(RESOURCE_MANAGER, HeartbeatTarget(self, RESOURCE_MANAGER, "rm-jm",
                                                                            self.options.rpc_timeout))
        if not self.started_scheduling:
            self.started_scheduling = True
            self.strategy.start_scheduling()
        else:
            self._declare(force=True)

    def resource_manager_lost(self, address: str, reason: str) -> None:
        self.tracker.detected(self.clock.now(), self.address, address, reason)
        self._close_resource_manager(f"the ResourceManager's {reason}")

    def handle_DisconnectResourceManager(self, message: m.DisconnectResourceManager, sender: str) -> None:
        self._close_resource_manager(f"the ResourceManager closed the connection: {message.reason}")

    def _close_resource_manager(self, reason: str) -> None:
        if not self.rm_connected or self.status.is_globally_terminal:
            return
        self.rm_connected = False
        self.rm_heartbeats.unmonitor_target(RESOURCE_MANAGER)
        self.emit(ConnectionClosed(time=self.clock.now(), owner=self.address, target=RESOURCE_MANAGER, reason=reason))
        self._connect_to_resource_manager()  # slots are kept; requirements are declared again

    def resource_manager_payload(self, address: str, payload: Any) -> None:
        """The ResourceManager's requests carry nothing."""

    def resource_manager_heartbeat_payload(self, address: str) -> Any:
        return None

    def _declare(self, force: bool = False) -> None:
        wanted = len(self.group_slots) + len(self.pending_requests) if not self.status.is_globally_terminal else 0
        if not self.rm_connected or (not force and wanted == self.declared):
            return
        self.declared = wanted
        self.emit(ResourceRequirementsDeclared(time=self.clock.now(), job_id=self.job_id, slots=wanted))
        answer = self.ask(RESOURCE_MANAGER, m.DeclareResourceRequirements(self.job_id, self.address, wanted),
                          self.options.rpc_timeout * NS_PER_MS)

        def declared(done: Any) -> None:
            if done.exception() is not None and self.rm_connected and self.declared == wanted:
                self.schedule(self.options.registration_error_delay * NS_PER_MS, self._declare, True)

        answer.add_done_callback(declared)

    # -- TaskExecutors ------------------------------------------------------------------------

    def handle_RegisterTaskManager(self, message: m.RegisterTaskManager, sender: str) -> str:
        if message.job_id != self.job_id or self.status.is_globally_terminal:
            raise RuntimeError(f"JobMaster {self.address} does not run job {message.job_id}")
        if message.resource_id not in self.task_managers:
            self.task_managers.add(message.resource_id)
            self.tm_heartbeats.monitor_target(message.resource_id, HeartbeatTarget(self, message.resource_id, "jm-te",
                                                                                   self.options.rpc_timeout))
            self.emit(TaskExecutorConnected(time=self.clock.now(), job_id=self.job_id, resource_id=message.resource_id))
        return m.ACK

    def task_manager_lost(self, resource_id: str, reason: str) -> None:
        self.tracker.detected(self.clock.now(), self.address, resource_id, reason)
        cause = (f"TimeoutException: Heartbeat of TaskManager with id {resource_id} timed out."
                 if reason == "heartbeat timeout" else
                 f"RecipientUnreachableException: TaskManager with id {resource_id} is no longer reachable.")
        self._disconnect_task_manager(resource_id, cause, tell=True)

    def handle_DisconnectTaskManager(self, message: m.DisconnectTaskManager, sender: str) -> None:
        self._disconnect_task_manager(message.resource_id, f"TaskManager {message.resource_id} disconnected: "
                                                           f"{message.reason}", tell=False)

    def _disconnect_task_manager(self, resource_id: str, cause: str, tell: bool) -> None:
        """Release the TaskExecutor's slots (their executions fail) and close the connection."""
        if resource_id in self.task_managers:
            self.task_managers.discard(resource_id)
            self.tm_heartbeats.unmonitor_target(resource_id)
            self.emit(ConnectionClosed(time=self.clock.now(), owner=self.address, target=resource_id, reason=cause))
            if tell:
                self.tell(resource_id, m.DisconnectJobManager(self.job_id, cause))
        self._lose_slots(resource_id, cause)

    def handle_AllocationsFailed(self, message: m.AllocationsFailed, sender: str) -> None:
        self._lose_slots(message.resource_id, message.reason, set(message.allocation_ids))

    def _lose_slots(self, resource_id: str, cause: str, allocations: set[str] | None = None) -> None:
        for index, slot in list(self.group_slots.items()):
            if slot.resource_id == resource_id and (allocations is None or slot.allocation_id in allocations):
                del self.group_slots[index]
                self.emit(SlotReleased(time=self.clock.now(), job_id=self.job_id, allocation_id=slot.allocation_id,
                                       resource_id=slot.resource_id, slot_index=slot.slot_index, reason=cause))
                for ev in self.graph.vertices():
                    if ev.current.slot is slot and not ev.current.state.is_terminal:
                        self._execution_failed(ev, cause)
        for group in self.group_by_index.values():  # scheduled vertices waiting for a lost slot ask again
            if group.index not in self.group_slots and group not in self.pending_requests and any(
                    ev.current.state is S.SCHEDULED for ev in group.vertices):
                self._request_slot(group)
        self._declare()

    def task_manager_payload(self, resource_id: str, deployed: Any) -> None:
        """Reconcile the executions the TaskExecutor runs with what this JobMaster expects."""
        if deployed is None or self.status.is_globally_terminal:
            return
        reported = set(deployed)
        for vertex_id, subtask, attempt in reported:
            try:
                ev = self.graph.vertex(f"{vertex_id}_{subtask}")
            except (KeyError, IndexError):
                continue
            if ev.current.attempt != attempt or ev.current.state.is_terminal:
                self._cancel_on(resource_id, vertex_id, subtask, attempt)
        for ev in self.graph.vertices():
            execution = ev.current
            slot = execution.slot
            key = (ev.job_vertex.id, ev.subtask, execution.attempt)
            if slot is None or slot.resource_id != resource_id or key in reported or key not in self.deployed:
                continue
            if execution.state in RUNNING_STATES or execution.state is S.CANCELING:
                self._execution_failed(ev, f"Execution {ev.name} (attempt {execution.attempt}) is missing on "
                                           f"TaskExecutor {resource_id}")

    def task_manager_heartbeat_payload(self, resource_id: str) -> Any:
        """The AllocatedSlotReport: the allocations this JobMaster holds on that TaskExecutor."""
        return tuple(s.allocation_id for s in self.group_slots.values() if s.resource_id == resource_id)

    def handle_HeartbeatRequest(self, message: m.HeartbeatRequest, sender: str) -> str:
        self.rm_heartbeats.request_heartbeat(message.sender_id, message.payload)
        return m.ACK

    def handle_HeartbeatResponse(self, message: m.HeartbeatResponse, sender: str) -> str:
        self.tm_heartbeats.receive_heartbeat(message.sender_id, message.payload)
        return m.ACK

    # -- scheduler operations (used by the scheduling strategy) -------------------------------

    def emit(self, event: Any) -> None:
        self.run.bus.emit(event)

    def now(self) -> int:
        return self.clock.now()

    def allocate_slots_and_deploy(self, vertices: list[ExecutionVertex]) -> None:
        if self.status is not JobStatus.RUNNING:
            return
        batch = [ev for ev in vertices if ev.current.state is S.CREATED]
        if not batch:
            return
        for ev in batch:
            self._transition(ev, S.SCHEDULED)
        for group in {id(self.groups[ev.id]): self.groups[ev.id] for ev in batch}.values():
            if group.index not in self.group_slots and group not in self.pending_requests:
                self._request_slot(group)
        self.batches.append(batch)
        self._declare()
        self._deploy_ready_batches()

    def _request_slot(self, group: ExecutionSlotSharingGroup) -> None:
        self.pending_requests.append(group)
        timeout = self.options.slot_request_timeout * NS_PER_MS
        self._request_timers[group.index] = self.schedule(timeout, self._slot_request_timed_out, group)

    def _slot_request_timed_out(self, group: ExecutionSlotSharingGroup) -> None:
        self._request_timers.pop(group.index, None)
        if group not in self.pending_requests:
            return
        self.pending_requests.remove(group)
        self._declare()
        cause = (f"NoResourceAvailableException: could not acquire the minimum required resources (a slot for "
                 f"slot sharing group {group.slot_sharing_group!r}) within slot.request.timeout "
                 f"({self.options.slot_request_timeout} ms)")
        waiting = [ev for ev in group.vertices if ev.current.state is S.SCHEDULED]
        if waiting:
            self._execution_failed(waiting[0], cause)

    # -- slots --------------------------------------------------------------------------------

    def handle_OfferSlots(self, message: m.OfferSlots, sender: str) -> m.SlotOfferReply:
        accepted, rejected = [], []
        held = {slot.allocation_id for slot in self.group_slots.values()}
        for allocation_id, slot_index in message.offers:
            if allocation_id in held:
                accepted.append(allocation_id)  # offered again (a repeated or reconnecting offer)
            elif (message.resource_id in self.task_managers and self.pending_requests
                  and self.status is JobStatus.RUNNING):
                group = self.pending_requests.popleft()
                timer = self._request_timers.pop(group.index, None)
                if timer is not None:
                    timer.cancel()
                self.group_slots[group.index] = _Slot(allocation_id, message.resource_id, slot_index)
                accepted.append(allocation_id)
                self.emit(SlotAllocated(time=self.clock.now(), job_id=self.job_id, allocation_id=allocation_id,
                                        resource_id=message.resource_id, slot_index=slot_index))
            else:
                rejected.append(allocation_id)
        self.loop.call_soon(self._deploy_ready_batches)
        return m.SlotOfferReply(tuple(accepted), tuple(rejected))

    def _release_slot(self, group_index: int, reason: str) -> None:
        slot = self.group_slots.pop(group_index, None)
        if slot is not None:
            self.emit(SlotReleased(time=self.clock.now(), job_id=self.job_id, allocation_id=slot.allocation_id,
                                   resource_id=slot.resource_id, slot_index=slot.slot_index, reason=reason))
            self.tell(slot.resource_id, m.FreeSlot(slot.allocation_id, reason))

    # -- deployment ---------------------------------------------------------------------------

    def _deploy_ready_batches(self) -> None:
        if self.status is not JobStatus.RUNNING:
            return
        remaining = []
        for batch in self.batches:
            batch = [ev for ev in batch if ev.current.state is S.SCHEDULED]
            if not batch:
                continue
            if all(self.groups[ev.id].index in self.group_slots for ev in batch):
                for ev in batch:
                    self._deploy(ev)
            else:
                remaining.append(batch)
        self.batches = remaining

    def _deploy(self, ev: ExecutionVertex) -> None:
        slot = self.group_slots[self.groups[ev.id].index]
        execution = ev.current
        execution.slot = slot
        self._transition(ev, S.DEPLOYING)
        deployment = self._deployment(ev, slot)
        self.emit(TaskDeployed(time=self.clock.now(), job_id=self.job_id, vertex_id=ev.job_vertex.id,
                               vertex_name=ev.job_vertex.name, subtask=ev.subtask, attempt=execution.attempt,
                               resource_id=slot.resource_id, allocation_id=slot.allocation_id,
                               slot_index=slot.slot_index))
        answer = self.ask(slot.resource_id, m.SubmitTask(deployment), self.options.rpc_timeout * NS_PER_MS)
        key = (ev.job_vertex.id, ev.subtask, execution.attempt)

        def submitted(done: Any) -> None:
            error = done.exception()
            if error is None:
                self.deployed.add(key)
            elif ev.current is execution and not execution.state.is_terminal:
                what = "timed out" if isinstance(error, AskTimeout) else f"failed: {error}"
                self._execution_failed(ev, f"Could not deploy {ev.name} (attempt {execution.attempt}) to "
                                           f"{slot.resource_id}: SubmitTask {what}")

        answer.add_done_callback(submitted)

    def _deployment(self, ev: ExecutionVertex, slot: _Slot) -> TaskDeploymentDescriptor:
        produced = []
        for partition in ev.produced:
            edge = partition.result.consumers[0]
            consumer = self.graph.job_vertex(edge.target.id)
            produced.append(ProducedPartition(
                partition_id=f"{partition.id}@{ev.current.attempt}",
                num_subpartitions=partition.num_subpartitions(0),
                blocking=not partition.result.result_type.is_pipelined,
                edge=edge.stream_edge,
                consumer_max_parallelism=consumer.max_parallelism,
            ))
        inputs: dict[int, ConsumedInput] = {}
        for group in ev.inputs:
            type_number = group.edge.type_number if group.edge.type_number else 0
            consumed = inputs.setdefault(type_number, ConsumedInput(type_number, []))
            for partition in group.partitions:
                if group.edge.distribution_pattern is DistributionPattern.ALL_TO_ALL:
                    subpartition = ev.subtask
                else:
                    subpartition = partition.consumer_vertices[partition.result.consumers.index(group.edge)].index(ev)
                consumed.channels.append((f"{partition.id}@{partition.producer.current.attempt}", subpartition))
        return TaskDeploymentDescriptor(
            job_id=self.job_id, job_graph=self.job_graph, vertex=ev.job_vertex.job_vertex, subtask=ev.subtask,
            attempt=ev.current.attempt, max_parallelism=ev.job_vertex.max_parallelism,
            allocation_id=slot.allocation_id, produced=produced, inputs=list(inputs.values()),
            alignment=self.alignment, committer=self.committer,
        )

    # -- execution states ---------------------------------------------------------------------

    def _transition(self, ev: ExecutionVertex, target: ExecutionState, failure: str = "") -> bool:
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
            resource_id=slot.resource_id if isinstance(slot, _Slot) else "", failure=failure,
        ))
        if target is S.RUNNING:
            self.tracker.check_recovered(self.graph, self.clock.now())
        return True

    def handle_UpdateTaskExecutionState(self, message: m.UpdateTaskExecutionState, sender: str) -> str:
        ev = self.graph.vertex(f"{message.vertex_id}_{message.subtask}")
        if ev.current.attempt != message.attempt or ev.current.state.is_terminal:
            return m.ACK
        target = S(message.state)
        if target is S.FAILED:
            self._execution_failed(ev, message.failure)
            return m.ACK
        if target is S.FINISHED and ev.current.state is S.CANCELING:
            target = S.CANCELED  # it ended before the cancel arrived: cancelling is complete
        if target is S.CANCELED and ev.current.state is not S.CANCELING:
            self._execution_failed(ev, f"TaskExecutor {ev.current.slot.resource_id} cancelled {ev.name} "
                                       f"(attempt {message.attempt}) on its own")
            return m.ACK
        if target not in LEGAL_TRANSITIONS[ev.current.state]:
            return m.ACK  # a stale or out-of-order report
        self._transition(ev, target, message.failure)
        if target is S.FINISHED:
            self.strategy.on_execution_state_change(ev, target)
            self._release_finished_groups()
            if all(v.current.state is S.FINISHED for v in self.graph.vertices()):
                self._end(JobStatus.FINISHED, "")
        elif target is S.CANCELED:
            self._ended()
        return m.ACK

    def _release_finished_groups(self) -> None:
        """A slot whose every subtask finished goes back (batch jobs reuse it for later regions)."""
        for index in list(self.group_slots):
            if all(ev.current.state is S.FINISHED for ev in self.group_by_index[index].vertices):
                self._release_slot(index, "tasks finished")
        self._declare()

    def _execution_failed(self, ev: ExecutionVertex, cause: str) -> None:
        """An execution failed (reported by its TaskExecutor or noticed here)."""
        execution = ev.current
        if execution.state.is_terminal:
            return
        if execution.state is S.CANCELING:
            self._transition(ev, S.CANCELED)  # failing while cancelled completes the cancel
            self._ended()
            return
        self._transition(ev, S.FAILED, cause)
        self._handle_task_failure(ev, cause)

    def _handle_task_failure(self, ev: ExecutionVertex, cause: str) -> None:
        if self.status is not JobStatus.RUNNING:
            self._ended()
            return
        now_ms = self.clock.now() // NS_PER_MS
        new_attempt = self.restart_strategy.notify_failure(now_ms)
        first_line = cause.splitlines()[0] if cause else ""
        event = dict(time=self.clock.now(), job_id=self.job_id, vertex_id=ev.job_vertex.id,
                     vertex_name=ev.job_vertex.name, subtask=ev.subtask, attempt=ev.current.attempt, cause=first_line)
        if not self.restart_strategy.can_restart():
            reason = f"JobException: Recovery is suppressed by {self.restart_strategy}"
            self.emit(TaskFailureHandled(**event, restart=False, reason=reason))
            self.tracker.failure(self.clock.now(), first_line, restart=False)
            self._fail_job(f"{cause}\n{reason}")
            return
        vertex_ids = self.failover_strategy.tasks_to_restart(ev)
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
        self.batches = [[v for v in batch if v.id not in vertex_ids] for batch in self.batches]
        self.schedule(delay * NS_PER_MS, self._restart_ready)

    def _cancel_execution(self, ev: ExecutionVertex) -> None:
        execution = ev.current
        state = execution.state
        if state in (S.CREATED, S.SCHEDULED):
            self._transition(ev, S.CANCELED)
        elif state in RUNNING_STATES:
            self._transition(ev, S.CANCELING)
            slot = execution.slot
            answer = self.ask(slot.resource_id, m.CancelTask(ev.job_vertex.id, ev.subtask, execution.attempt),
                              self.options.rpc_timeout * NS_PER_MS)

            def cancelled(done: Any) -> None:
                if ev.current is execution and execution.state is S.CANCELING and (
                        done.exception() is not None or done.result() == "unknown"):
                    self._transition(ev, S.CANCELED)  # nothing runs there (or nobody answers): it is gone
                    self._ended()

            answer.add_done_callback(cancelled)

    def _cancel_on(self, resource_id: str, vertex_id: str, subtask: int, attempt: int) -> None:
        self.ask(resource_id, m.CancelTask(vertex_id, subtask, attempt), self.options.rpc_timeout * NS_PER_MS)

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
            self.emit(TasksRestarted(time=now, job_id=self.job_id, vertices=len(vertices), restart_number=pending.number))
            self.strategy.restart_tasks(pending.vertex_ids)

    # -- ending -------------------------------------------------------------------------------

    def _fail_job(self, failure: str) -> None:
        if self.status is not JobStatus.RUNNING:
            return
        self.failure = failure
        self._set_status(JobStatus.FAILING, failure.splitlines()[0] if failure else "")
        self._cancel_all()

    def handle_CancelJob(self, message: m.CancelJob, sender: str) -> None:
        if self.status is JobStatus.RUNNING:
            self._set_status(JobStatus.CANCELLING, message.reason)
            self._cancel_all()

    def _cancel_all(self) -> None:
        self.pending_restarts.clear()
        for ev in self.graph.vertices():
            self._cancel_execution(ev)
        self.batches.clear()
        self.pending_requests.clear()
        self._check_cancelled()

    def _check_cancelled(self) -> None:
        if all(ev.current.state.is_terminal for ev in self.graph.vertices()):
            if self.status is JobStatus.FAILING:
                self._end(JobStatus.FAILED, self.failure)
            elif self.status is JobStatus.CANCELLING:
                self._end(JobStatus.CANCELED, "")

    def _end(self, status: JobStatus, failure: str) -> None:
        for timer in self._request_timers.values():
            timer.cancel()
        self._request_timers.clear()
        if self.alignment is not None:
            self.alignment.close()
        if self.committer is not None:
            if status is JobStatus.FINISHED:
                self.committer.commit([(ev.job_vertex.id, ev.subtask, ev.current.attempt) for ev in self.graph.vertices()])
            else:
                self.committer.discard_all()
        self._set_status(status, failure.splitlines()[0] if failure else "")
        for index in list(self.group_slots):
            self._release_slot(index, f"job {status.value.lower()}")
        self.pending_requests.clear()
        self._declare(force=True)
        for resource_id in sorted(self.task_managers):
            self.tell(resource_id, m.DisconnectJobManager(self.job_id, f"job {status.value.lower()}"))
        self.tell(self.dispatcher, m.JobTerminated(self.job_id, status.value, failure))

    def _set_status(self, status: JobStatus, reason: str = "") -> None:
        old = self.status
        self.status = status
        self.emit(JobStatusChanged(time=self.clock.now(), job_id=self.job_id, old_status=old.value,
                                   new_status=status.value, reason=reason))
