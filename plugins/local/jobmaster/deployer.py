"""The JobMaster's ExecutionDeployer (Flink's DefaultExecutionDeployer, with the deployment
tracking and reconciliation beside it).

A scheduled batch of execution vertices (a pipelined region, or everything for eager
scheduling) is deployed, in topological order, once every slot sharing group it needs has a
slot: each execution goes DEPLOYING and its TaskDeploymentDescriptor is submitted to the
slot's TaskExecutor. An execution counts as deployed once the submission is acknowledged; a
failed or unanswered submission fails it. The executions TaskExecutors report in their
heartbeats are reconciled with what was deployed there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.clock import NS_PER_MS
from kernel.runtime.graph.execution import ExecutionState, ExecutionVertex, JobStatus
from kernel.runtime.graph.job import DistributionPattern
from kernel.messaging import AskTimeout
from plugins.local import messages as m
from plugins.local.deployment import (
    STAGED_IN_TASK_EXECUTOR,
    ConsumedInput,
    ProducedPartition,
    TaskDeploymentDescriptor,
)
from plugins.local.events import TaskDeployed

if TYPE_CHECKING:
    from plugins.local.jobmaster.jobmaster import JobMaster
    from plugins.local.jobmaster.scheduler import DefaultScheduler
    from plugins.local.jobmaster.slotpool import AllocatedSlot, SlotPool
    from plugins.local.jobmaster.slotsharing import ExecutionSlotSharingGroup

S = ExecutionState
RUNNING_STATES = (S.DEPLOYING, S.INITIALIZING, S.RUNNING)


class ExecutionDeployer:
    def __init__(self, job_master: JobMaster, scheduler: DefaultScheduler, slot_pool: SlotPool,
                 groups: dict[str, ExecutionSlotSharingGroup]) -> None:
        self.job_master = job_master
        self.scheduler = scheduler
        self.slot_pool = slot_pool
        self.groups = groups
        self.graph = scheduler.graph
        self.clock = job_master.clock
        self.options = job_master.options
        self.batches: list[list[ExecutionVertex]] = []
        self.deployed: set[tuple[str, int, int]] = set()  # attempts whose SubmitTask was acknowledged

    # -- batches ------------------------------------------------------------------------------

    def add(self, batch: list[ExecutionVertex]) -> None:
        self.batches.append(batch)

    def remove(self, vertex_ids: set[str]) -> None:
        """These vertices are being restarted: they wait no more."""
        self.batches = [[v for v in batch if v.id not in vertex_ids] for batch in self.batches]

    def clear(self) -> None:
        self.batches.clear()

    def deploy_ready(self) -> None:
        if self.scheduler.status is not JobStatus.RUNNING:
            return
        slots = self.slot_pool.slots
        remaining = []
        for batch in self.batches:
            batch = [ev for ev in batch if ev.current.state is S.SCHEDULED]
            if not batch:
                continue
            if all(self.groups[ev.id].index in slots for ev in batch):
                for ev in batch:
                    self._deploy(ev)
            else:
                remaining.append(batch)
        self.batches = remaining

    # -- deployment ---------------------------------------------------------------------------

    def _deploy(self, ev: ExecutionVertex) -> None:
        slot = self.slot_pool.slots[self.groups[ev.id].index]
        execution = ev.current
        execution.slot = slot
        scheduler = self.scheduler
        scheduler.transition(ev, S.DEPLOYING)
        remote = bool(self.job_master.task_manager_locations.get(slot.resource_id))
        if remote and scheduler.alignment is not None:
            scheduler.execution_failed(ev, f"Could not deploy {ev.name} (attempt {execution.attempt}) to "
                                           f"{slot.resource_id}: watermark alignment needs the TaskExecutors in the "
                                           f"JobMaster's process (plugins.workers=embedded)")
            return
        deployment = self._deployment(ev, slot, remote)
        self.job_master.emit(TaskDeployed(
            time=self.clock.now(), job_id=scheduler.job_id, vertex_id=ev.job_vertex.id, vertex_name=ev.job_vertex.name,
            subtask=ev.subtask, attempt=execution.attempt, resource_id=slot.resource_id,
            allocation_id=slot.allocation_id, slot_index=slot.slot_index))
        answer = self.job_master.ask(slot.resource_id, m.SubmitTask(deployment), self.options.rpc_timeout * NS_PER_MS)
        key = (ev.job_vertex.id, ev.subtask, execution.attempt)

        def submitted(done: Any) -> None:
            error = done.exception()
            if error is None:
                self.deployed.add(key)
            elif ev.current is execution and not execution.state.is_terminal:
                what = "timed out" if isinstance(error, AskTimeout) else f"failed: {error}"
                scheduler.execution_failed(ev, f"Could not deploy {ev.name} (attempt {execution.attempt}) to "
                                               f"{slot.resource_id}: SubmitTask {what}")

        answer.add_done_callback(submitted)

    def _deployment(self, ev: ExecutionVertex, slot: AllocatedSlot, remote: bool) -> TaskDeploymentDescriptor:
        """What the TaskExecutor needs to run the execution (``remote``: in another process)."""
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
        locations = self.job_master.task_manager_locations
        for group in ev.inputs:
            type_number = group.edge.type_number if group.edge.type_number else 0
            consumed = inputs.setdefault(type_number, ConsumedInput(type_number, []))
            for partition in group.partitions:
                if group.edge.distribution_pattern is DistributionPattern.ALL_TO_ALL:
                    subpartition = ev.subtask
                else:
                    subpartition = partition.consumer_vertices[partition.result.consumers.index(group.edge)].index(ev)
                producer = partition.producer.current
                consumed.channels.append((f"{partition.id}@{producer.attempt}", subpartition))
                consumed.locations.append(locations.get(producer.slot.resource_id, "") if producer.slot else "")
                consumed.edges.append(group.edge.stream_edge)
        scheduler = self.scheduler
        return TaskDeploymentDescriptor(
            job_id=scheduler.job_id, job_graph=scheduler.job_graph, vertex=ev.job_vertex.job_vertex,
            subtask=ev.subtask, attempt=ev.current.attempt, max_parallelism=ev.job_vertex.max_parallelism,
            allocation_id=slot.allocation_id, produced=produced, inputs=list(inputs.values()),
            alignment=scheduler.alignment,
            committer=STAGED_IN_TASK_EXECUTOR if remote and scheduler.committer is not None else scheduler.committer,
            checkpoint_storage=scheduler.checkpoints.storage if scheduler.checkpoints is not None else None,
            restore=scheduler.task_restores.get(ev.id),
        )

    # -- reconciliation -----------------------------------------------------------------------

    def reconcile(self, resource_id: str, reported: set[tuple[str, int, int]]) -> None:
        """A TaskExecutor's heartbeat reported the executions it runs: cancel there what this
        JobMaster does not expect; fail what was deployed there but is missing."""
        scheduler = self.scheduler
        for vertex_id, subtask, attempt in reported:
            try:
                ev = self.graph.vertex(f"{vertex_id}_{subtask}")
            except (KeyError, IndexError):
                continue
            if ev.current.attempt != attempt or ev.current.state.is_terminal:
                scheduler.cancel_on(resource_id, vertex_id, subtask, attempt)
        for ev in self.graph.vertices():
            execution = ev.current
            slot = execution.slot
            key = (ev.job_vertex.id, ev.subtask, execution.attempt)
            if slot is None or slot.resource_id != resource_id or key in reported or key not in self.deployed:
                continue
            if execution.state in RUNNING_STATES or execution.state is S.CANCELING:
                scheduler.execution_failed(ev, f"Execution {ev.name} (attempt {execution.attempt}) is missing on "
                                               f"TaskExecutor {resource_id}")
