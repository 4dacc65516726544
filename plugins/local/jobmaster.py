"""The JobMaster: builds the ExecutionGraph, asks for slots, deploys tasks, tracks states.

Slots are declarative (current Flink): the slot pool declares how many slots the job needs
to the ResourceManager, whose slot manager asks TaskExecutors to offer slots; the pool
accepts offers that match outstanding requests. A scheduled batch of vertices (a pipelined
region, or everything for eager scheduling) is deployed, in topological order, once every
slot sharing group it needs has a slot.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from kernel.cluster_events import (
    ExecutionStateChanged,
    JobStatusChanged,
    ResourceRequirementsDeclared,
    SlotAllocated,
    SlotReleased,
    TaskDeployed,
)
from kernel.compiler import build_execution_graph
from kernel.execution import record_execution_graph
from kernel.graph.execution import LEGAL_TRANSITIONS, ExecutionGraph, ExecutionState, ExecutionVertex, JobStatus
from kernel.graph.job import DistributionPattern, JobGraph
from kernel.messaging import Component, MessagingService
from plugins.local import messages as m
from plugins.local.slotsharing import ExecutionSlotSharingGroup, slot_sharing_groups
from plugins.local.task import ConsumedInput, ProducedPartition, TaskDeploymentDescriptor

if TYPE_CHECKING:
    from kernel.run import Run

S = ExecutionState
RESOURCE_MANAGER = "resourcemanager"


class _Slot:
    __slots__ = ("allocation_id", "resource_id", "slot_index")

    def __init__(self, allocation_id: str, resource_id: str, slot_index: int) -> None:
        self.allocation_id = allocation_id
        self.resource_id = resource_id
        self.slot_index = slot_index


class JobMaster(Component):
    def __init__(self, address: str, messaging: MessagingService, run: Run, job_graph: JobGraph,
                 dispatcher: str, options: Any) -> None:
        super().__init__(address, messaging)
        self.run = run
        self.job_graph = job_graph
        self.job_id = job_graph.job_id
        self.dispatcher = dispatcher
        self.options = options
        self.status = JobStatus.CREATED
        self.graph: ExecutionGraph | None = None
        self.strategy: Any = None
        self.alignment: Any = None  # the watermark alignment coordinator, when sources align
        self.groups: dict[str, ExecutionSlotSharingGroup] = {}
        self.group_slots: dict[int, _Slot] = {}
        self.pending_requests: deque[ExecutionSlotSharingGroup] = deque()
        self.batches: list[list[ExecutionVertex]] = []
        self.declared = 0
        self.registered = False
        self.failure = ""
        self._request_timers: dict[int, Any] = {}

    # -- start --------------------------------------------------------------------------------

    def on_start(self) -> None:
        session = self.run.session
        self.graph = build_execution_graph(session, self.job_graph)
        record_execution_graph(self.run, self.graph)
        self.groups = slot_sharing_groups(self.graph)
        self.group_by_index = {group.index: group for group in self.groups.values()}
        hook = self.run.plugin_manager.hook
        self.run.plugin_manager.require("create_scheduling_strategy", "scheduling")
        self.strategy = hook.create_scheduling_strategy(execution_graph=self.graph, scheduler=self, config=self.run.config)
        self.alignment = hook.create_watermark_alignment(run=self.run)
        self._set_status(JobStatus.RUNNING)
        self.tell(RESOURCE_MANAGER, m.RegisterJobMaster(self.job_id, self.address))

    def handle_JobMasterRegistrationSuccess(self, message: m.JobMasterRegistrationSuccess, sender: str) -> None:
        first = not self.registered
        self.registered = True
        if first:
            self.strategy.start_scheduling()
        else:
            self._declare(force=True)

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
        timeout = self.options.slot_request_timeout * 1_000_000
        self._request_timers[group.index] = self.schedule(timeout, self._slot_request_timed_out, group)

    def _slot_request_timed_out(self, group: ExecutionSlotSharingGroup) -> None:
        if group in self.pending_requests:
            self._fail_job(
                f"NoResourceAvailableException: could not acquire the minimum required resources (a slot for "
                f"slot sharing group {group.slot_sharing_group!r}) within slot.request.timeout "
                f"({self.options.slot_request_timeout} ms)"
            )

    def _declare(self, force: bool = False) -> None:
        wanted = len(self.group_slots) + len(self.pending_requests)
        if self.registered and (force or wanted != self.declared):
            self.declared = wanted
            self.emit(ResourceRequirementsDeclared(time=self.clock.now(), job_id=self.job_id, slots=wanted))
            self.tell(RESOURCE_MANAGER, m.DeclareResourceRequirements(self.job_id, self.address, wanted))

    # -- slots --------------------------------------------------------------------------------

    def handle_OfferSlots(self, message: m.OfferSlots, sender: str) -> None:
        accepted, rejected = [], []
        for allocation_id, slot_index in message.offers:
            if self.pending_requests and self.status is JobStatus.RUNNING:
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
        self.tell(sender, m.SlotOfferReply(tuple(accepted), tuple(rejected)))
        self._deploy_ready_batches()

    def _release_slot(self, group_index: int, reason: str) -> None:
        slot = self.group_slots.pop(group_index, None)
        if slot is not None:
            self.emit(SlotReleased(time=self.clock.now(), job_id=self.job_id, allocation_id=slot.allocation_id,
                                   resource_id=slot.resource_id, slot_index=slot.slot_index, reason=reason))
            self.tell(slot.resource_id, m.FreeSlot(slot.allocation_id, reason))

    # -- deployment ---------------------------------------------------------------------------

    def _deploy_ready_batches(self) -> None:
        remaining = []
        for batch in self.batches:
            if all(self.groups[ev.id].index in self.group_slots for ev in batch):
                for ev in batch:
                    if ev.current.state is S.SCHEDULED:
                        self._deploy(ev)
            else:
                remaining.append(batch)
        self.batches = remaining

    def _deploy(self, ev: ExecutionVertex) -> None:
        slot = self.group_slots[self.groups[ev.id].index]
        self._transition(ev, S.DEPLOYING)
        ev.current.slot = slot
        deployment = self._deployment(ev, slot)
        self.emit(TaskDeployed(time=self.clock.now(), job_id=self.job_id, vertex_id=ev.job_vertex.id, vertex_name=ev.job_vertex.name,
                               subtask=ev.subtask, attempt=ev.current.attempt, resource_id=slot.resource_id,
                               allocation_id=slot.allocation_id, slot_index=slot.slot_index))
        self.tell(slot.resource_id, m.SubmitTask(deployment))

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
            alignment=self.alignment,
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
            time=self.clock.now(), job_id=self.job_id, vertex_id=ev.job_vertex.id, vertex_name=ev.job_vertex.name, subtask=ev.subtask,
            attempt=execution.attempt, old_state=old.value, new_state=target.value,
            resource_id=slot.resource_id if slot is not None else "", failure=failure,
        ))
        return True

    def handle_UpdateTaskExecutionState(self, message: m.UpdateTaskExecutionState, sender: str) -> None:
        ev = self.graph.vertex(f"{message.vertex_id}_{message.subtask}")
        if ev.current.attempt != message.attempt or ev.current.state.is_terminal:
            return
        target = S(message.state)
        if target in (S.FAILED, S.FINISHED) and ev.current.state is S.CANCELING:
            target = S.CANCELED  # it ended before the cancel arrived: cancelling is complete
        if target is S.CANCELED and ev.current.state is not S.CANCELING:
            self._transition(ev, S.CANCELING)
        if target not in LEGAL_TRANSITIONS[ev.current.state]:
            return  # a stale or out-of-order report
        self._transition(ev, target, message.failure)
        if target is S.FINISHED:
            self.strategy.on_execution_state_change(ev, target)
            self._release_finished_groups()
            if all(v.current.state is S.FINISHED for v in self.graph.vertices()):
                self._end(JobStatus.FINISHED, "")
        elif target is S.FAILED:
            self.on_task_failure(ev, message.failure)
        elif target is S.CANCELED:
            self._check_cancelled()

    def _release_finished_groups(self) -> None:
        """A slot whose every subtask finished goes back (batch jobs reuse it for later regions)."""
        for index in list(self.group_slots):
            if all(ev.current.state is S.FINISHED for ev in self.group_by_index[index].vertices):
                self._release_slot(index, "tasks finished")
        self._declare()

    def on_task_failure(self, ev: ExecutionVertex, failure: str) -> None:
        """No restart strategy here: the job fails (failover is added by the failover plugin)."""
        self._fail_job(failure)

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
        for ev in self.graph.vertices():
            state = ev.current.state
            if state in (S.CREATED, S.SCHEDULED):
                self._transition(ev, S.CANCELED)
            elif state in (S.DEPLOYING, S.INITIALIZING, S.RUNNING):
                self._transition(ev, S.CANCELING)
                self.tell(ev.current.slot.resource_id, m.CancelTask(ev.job_vertex.id, ev.subtask, ev.current.attempt))
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
        self._set_status(status, failure.splitlines()[0] if failure else "")
        for index in list(self.group_slots):
            self._release_slot(index, f"job {status.value.lower()}")
        self.pending_requests.clear()
        self._declare()
        self.tell(self.dispatcher, m.JobTerminated(self.job_id, status.value, failure))

    def _set_status(self, status: JobStatus, reason: str = "") -> None:
        old = self.status
        self.status = status
        self.emit(JobStatusChanged(time=self.clock.now(), job_id=self.job_id, old_status=old.value, new_status=status.value, reason=reason))

