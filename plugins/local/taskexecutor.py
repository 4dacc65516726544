"""The TaskExecutor: a worker with slots that runs the tasks deployed into them.

It registers at the ResourceManager, allocates a slot when the slot manager requests one and
offers it to the job's JobMaster, runs the tasks the JobMaster submits, reports every state
change of them, and gives slots back when they are freed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.cluster_events import TaskMetricsSampled
from kernel.messaging import Component, MessagingService
from plugins.local import messages as m
from plugins.local.task import StreamTask

if TYPE_CHECKING:
    from kernel.run import Run
    from plugins.local.minicluster import MiniCluster

RESOURCE_MANAGER = "resourcemanager"


class TaskExecutor(Component):
    def __init__(self, address: str, messaging: MessagingService, run: Run, cluster: MiniCluster, slots: int) -> None:
        super().__init__(address, messaging)
        self.run = run
        self.cluster = cluster
        self.slot_allocations: list[str | None] = [None] * slots
        self.allocation_jobs: dict[str, tuple[str, str]] = {}  # allocation id -> (job id, job master)
        self.tasks: dict[tuple[str, int, int], StreamTask] = {}

    @property
    def resource_id(self) -> str:
        return self.address

    def on_start(self) -> None:
        self.tell(RESOURCE_MANAGER, m.RegisterTaskExecutor(self.resource_id, len(self.slot_allocations)))

    def handle_TaskExecutorRegistrationSuccess(self, message: m.TaskExecutorRegistrationSuccess, sender: str) -> None:
        """Registered; slots are offered once the slot manager requests them."""

    # -- slots --------------------------------------------------------------------------------

    def handle_RequestSlot(self, message: m.RequestSlot, sender: str) -> None:
        if self.slot_allocations[message.slot_index] is not None:
            return
        self.slot_allocations[message.slot_index] = message.allocation_id
        self.allocation_jobs[message.allocation_id] = (message.job_id, message.job_master)
        self.tell(message.job_master, m.OfferSlots(self.resource_id, ((message.allocation_id, message.slot_index),)))

    def handle_SlotOfferReply(self, message: m.SlotOfferReply, sender: str) -> None:
        for allocation_id in message.rejected:
            self._free(allocation_id)

    def handle_FreeSlot(self, message: m.FreeSlot, sender: str) -> None:
        self._free(message.allocation_id)

    def _free(self, allocation_id: str) -> None:
        if allocation_id not in self.allocation_jobs:
            return
        for task in list(self.tasks.values()):
            if task.deployment.allocation_id == allocation_id:
                task.cancel()
        del self.allocation_jobs[allocation_id]
        index = self.slot_allocations.index(allocation_id)
        self.slot_allocations[index] = None
        self.tell(RESOURCE_MANAGER, m.SlotFreed(self.resource_id, index, allocation_id))

    # -- tasks --------------------------------------------------------------------------------

    def handle_SubmitTask(self, message: m.SubmitTask, sender: str) -> None:
        deployment = message.deployment
        if deployment.allocation_id not in self.allocation_jobs:
            self.tell(sender, m.UpdateTaskExecutionState(
                deployment.vertex.id, deployment.subtask, deployment.attempt, "FAILED",
                f"TaskSubmissionException: no slot allocated for {deployment.allocation_id} on {self.resource_id}",
            ))
            return
        task = StreamTask(deployment, self.run, self.cluster.shuffle, self.cluster.network_settings,
                          self.cluster.options, self._report)
        task.job_master = sender  # type: ignore[attr-defined]
        self.tasks[task.attempt_key] = task
        self.loop.call_soon(task.start)

    def handle_CancelTask(self, message: m.CancelTask, sender: str) -> None:
        task = self.tasks.get((message.vertex_id, message.subtask, message.attempt))
        if task is not None:
            task.cancel()
        else:  # ended already (its last report is on the way) or never arrived: nothing runs
            self.tell(sender, m.UpdateTaskExecutionState(message.vertex_id, message.subtask, message.attempt, "CANCELED"))

    def _report(self, task: StreamTask, state: str, failure: str) -> None:
        d = task.deployment
        if state in ("FINISHED", "FAILED", "CANCELED"):
            self.tasks.pop(task.attempt_key, None)
            self.cluster.task_ended(task)
            self.sample(task, final=True)
        if not self.stopped:
            self.tell(task.job_master, m.UpdateTaskExecutionState(d.vertex.id, d.subtask, d.attempt, state, failure))

    # -- metrics ------------------------------------------------------------------------------

    def sample(self, task: StreamTask, final: bool = False) -> None:
        d = task.deployment
        values: dict[str, Any] = task.metrics.sample(self.clock.now())
        if final and values["interval_ms"] <= 0:
            return
        self.run.bus.emit(TaskMetricsSampled(
            time=self.clock.now(), job_id=d.job_id, vertex_id=d.vertex.id, vertex_name=d.vertex.name,
            subtask=d.subtask, attempt=d.attempt, final=final, **values,
        ))

    def sample_running(self) -> None:
        for task in list(self.tasks.values()):
            if task.state == "RUNNING":
                self.sample(task)

    def on_stop(self) -> None:
        for task in list(self.tasks.values()):
            task.cancel()
