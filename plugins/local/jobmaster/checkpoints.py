"""The JobMaster's side of checkpointing: what its CheckpointCoordinator (from the
``checkpointing`` plugin) may do — read the ExecutionGraph, set timers, record events, send
triggers and notifications to the tasks' TaskExecutors, fail tasks or the whole job (Flink's
CheckpointCoordinator reaches them through Executions and the FailJobCallback)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from plugins.local import messages as m

if TYPE_CHECKING:
    from kernel.events import Event
    from kernel.runtime.graph.execution import ExecutionVertex
    from plugins.local.jobmaster.scheduler import DefaultScheduler


class JobMasterCheckpointContext:
    """The :class:`~kernel.contracts.checkpointing.CheckpointCoordinatorContext` of one job."""

    def __init__(self, scheduler: DefaultScheduler) -> None:
        self.scheduler = scheduler
        self.job_master = scheduler.job_master
        self.job_id = scheduler.job_id
        self.job_name = scheduler.job_graph.job_name
        self.execution_graph = scheduler.graph

    def now(self) -> int:
        return self.job_master.clock.now()

    def schedule(self, delay_ns: int, callback: Callable[[], None]) -> Any:
        return self.job_master.schedule(delay_ns, callback)

    def emit(self, event: Event) -> None:
        self.job_master.emit(event)

    def _tell(self, vertex: ExecutionVertex, message: Any) -> None:
        slot = vertex.current.slot
        if slot is not None:
            self.job_master.tell(slot.resource_id, message)

    def trigger_checkpoint(self, vertex: ExecutionVertex, checkpoint_id: int, timestamp: int, aligned: bool,
                           unaligned: bool = False, alignment_timeout: int = 0, stop: bool = False,
                           drain: bool = False, location: str = "") -> None:
        self._tell(vertex, m.TriggerCheckpoint(vertex.job_vertex.id, vertex.subtask, vertex.current.attempt,
                                               checkpoint_id, timestamp, aligned, unaligned, alignment_timeout,
                                               stop, drain, location))

    def notify_checkpoint_complete(self, vertex: ExecutionVertex, checkpoint_id: int) -> None:
        self._tell(vertex, m.NotifyCheckpointComplete(vertex.job_vertex.id, vertex.subtask, vertex.current.attempt,
                                                      checkpoint_id))

    def notify_checkpoint_aborted(self, vertex: ExecutionVertex, checkpoint_id: int) -> None:
        self._tell(vertex, m.NotifyCheckpointAborted(vertex.job_vertex.id, vertex.subtask, vertex.current.attempt,
                                                     checkpoint_id))

    def fail_job(self, cause: str) -> None:
        self.scheduler.handle_global_failure(cause)

    def fail_job_due_to_task_failure(self, vertex_id: str, subtask: int, attempt: int, cause: str) -> None:
        self.scheduler.fail_global_if_execution_is_still_running(vertex_id, subtask, attempt, cause)
