"""The checkpointing contract: the JobMaster's CheckpointCoordinator, the storage tasks write
their state to, and the barrier handler of a task's input (Flink's CheckpointCoordinator,
CheckpointStorageWorkerView, CheckpointBarrierHandler).

Who talks to whom: the JobMaster owns the coordinator (:class:`CheckpointCoordinator`) and
offers it a :class:`CheckpointCoordinatorContext` (the ExecutionGraph, timers, messages to
tasks, failing the job); tasks get the coordinator's :class:`CheckpointStorageWorker` with
their deployment and acknowledge or decline through the JobMaster; a task with input gates
feeds barriers, cancellation markers and ended channels to its
:class:`CheckpointBarrierHandler`, which calls back the :class:`CheckpointableTask`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from kernel.runtime.checkpointing.assignment import TaskRestore
    from kernel.runtime.checkpointing.failures import CheckpointFailureReason
    from kernel.runtime.checkpointing.format import ChannelState, StateHandle
    from kernel.runtime.checkpointing.messages import AcknowledgeCheckpoint, CheckpointMetrics, DeclineCheckpoint
    from kernel.events import Event
    from kernel.runtime.graph.execution import ExecutionGraph, ExecutionVertex
    from kernel.runtime.streaming.elements import CancelCheckpointMarker, CheckpointBarrier
    from kernel.runtime.streaming.runtime import TaskInfo


class CheckpointCoordinatorContext(Protocol):
    """What the JobMaster offers its checkpoint coordinator."""

    job_id: str
    job_name: str
    execution_graph: ExecutionGraph

    def now(self) -> int:
        """Clock time (ns)."""

    def schedule(self, delay_ns: int, callback: Callable[[], None]) -> Any:
        """Run ``callback`` on the JobMaster after ``delay_ns``; the handle has ``cancel()``."""

    def emit(self, event: Event) -> None:
        """Record an event."""

    def trigger_checkpoint(self, vertex: ExecutionVertex, checkpoint_id: int, timestamp: int, aligned: bool,
                           unaligned: bool = False, alignment_timeout: int = 0, stop: bool = False,
                           drain: bool = False, location: str = "") -> None:
        """Ask the current attempt of ``vertex`` to start checkpoint ``checkpoint_id`` (a mail in
        its mailbox): it snapshots and sends barriers (``aligned``: EXACTLY_ONCE ones;
        ``unaligned``: priority barriers overtaking the queued data; ``alignment_timeout``:
        aligned ones that switch to unaligned that many ms after ``timestamp``). ``stop``: a
        stop-with-savepoint's savepoint — a source stops reading first (``drain``: after the
        final watermark, finishing its operators). ``location``: where the tasks write their
        state, carried by the barriers ("": the checkpoint's default location; a savepoint's
        directory)."""

    def notify_checkpoint_complete(self, vertex: ExecutionVertex, checkpoint_id: int) -> None:
        """Tell the current attempt of ``vertex`` that the checkpoint completed."""

    def notify_checkpoint_aborted(self, vertex: ExecutionVertex, checkpoint_id: int) -> None:
        """Tell the current attempt of ``vertex`` that the checkpoint was aborted."""

    def fail_job(self, cause: str) -> None:
        """A global failure: the job fails over as a whole (if its restart strategy allows)."""

    def fail_job_due_to_task_failure(self, vertex_id: str, subtask: int, attempt: int, cause: str) -> None:
        """A global failure caused by that attempt, unless it no longer runs (Flink's
        ``failGlobalIfExecutionIsStillRunning``)."""


class CheckpointCoordinator(Protocol):
    """Triggers checkpoints, collects acknowledgements, completes, stores and retains them,
    and gives restarted subtasks the state of the latest completed one."""

    #: where tasks write their state (handed to each deployment)
    storage: CheckpointStorageWorker

    def job_status_changed(self, status: str) -> None:
        """The job's status changed: RUNNING starts periodic checkpoints, FAILING or
        CANCELLING stops them (pending ones are aborted), FINISHED, CANCELED or FAILED shuts the
        coordinator down and keeps or deletes the completed checkpoints as the retention says."""

    def receive_acknowledge(self, message: AcknowledgeCheckpoint) -> None:
        """A subtask acknowledged a checkpoint with its state."""

    def receive_decline(self, message: DeclineCheckpoint) -> None:
        """A subtask declined a checkpoint: it is aborted."""

    def end_of_data(self, vertex_id: str, subtask: int, attempt: int) -> None:
        """A subtask finished its input (FLIP-147): once all have, a checkpoint is triggered."""

    def task_failed(self, vertex_id: str, subtask: int, attempt: int) -> None:
        """An attempt failed: pending checkpoints it did not acknowledge are aborted."""

    def restore(self, vertices: list[ExecutionVertex]) -> dict[str, TaskRestore]:
        """State for the new attempts of restarting vertices (by execution vertex id) from the
        latest completed checkpoint; empty without one. Aborts pending checkpoints."""

    def restore_savepoint(self, vertices: list[ExecutionVertex], path: str,
                          ignore_unclaimed_state: bool) -> dict[str, TaskRestore]:
        """The job starts from the savepoint or retained checkpoint at ``path``: state for the
        first attempts of ``vertices``; raises :class:`kernel.runtime.checkpointing.recovery.RestoreError`
        when the job cannot take it."""

    def trigger_savepoint(self, target: str | None, stop: bool, drain: bool,
                          on_done: Callable[[str | None, str | None], None]) -> None:
        """Take a savepoint under ``target`` (None: the configured default directory); ``stop``:
        stop the job with it (``drain``: sources emit the final watermark and operators finish
        first). ``on_done(path, None)`` once it completed, ``on_done(None, why)`` if it failed."""



class CheckpointStorageWorker(Protocol):
    """Where a task writes the state of a checkpoint (Flink's CheckpointStorageWorkerView)."""

    def write_state(self, checkpoint_id: int, name: str, data: bytes, key_groups: list[tuple[int, int, int]],
                    operator_state: tuple[int, int] | None,
                    channel_state: tuple[int, int] | None = None, location: str = "") -> StateHandle:
        """Store one operator subtask's state (a file ``name`` in the checkpoint's directory —
        ``location`` when the barrier names one, as a savepoint's does — or inline when small)
        with where its frames are: the handle the acknowledgement carries. A task may write
        through a copy of the storage made when it was deployed (in a TaskExecutor process)."""


class CheckpointableTask(Protocol):
    """What a barrier handler drives: the task (Flink's CheckpointableTask)."""

    job_id: str
    info: TaskInfo

    def trigger_checkpoint_on_barrier(self, barrier: CheckpointBarrier, metrics: CheckpointMetrics) -> None:
        """Every input delivered the barrier (aligned), or the checkpoint goes unaligned
        (``barrier.unaligned``): snapshot, forward the barrier. An unaligned checkpoint is
        acknowledged once :meth:`input_channel_state_completed` came."""

    def input_channel_state_completed(self, checkpoint_id: int, channels: list[ChannelState],
                                      metrics: CheckpointMetrics) -> None:
        """Every input delivered the barrier of an unaligned checkpoint: the in-flight data
        persisted per input channel, and the alignment's metrics."""

    def abort_checkpoint_on_barrier(self, checkpoint_id: int, reason: CheckpointFailureReason) -> None:
        """The checkpoint was cancelled or subsumed on an input: decline it, tell downstream."""

    def schedule_mail(self, when_ns: int, callback: Callable[[], None], description: str) -> Any:
        """Run ``callback`` as a mail of the task at clock time ``when_ns``; the handle has
        ``cancel()``."""


class CheckpointBarrierHandler(Protocol):
    """Handles the checkpoint events of a task's input channels (all gates together).

    A channel has ``index``, ``gate.index``, ``resume_consumption()`` and, for unaligned
    checkpoints, ``start_persisting(checkpoint_id)``, ``finish_persisting() -> list[bytes]``
    and ``convert_to_priority(checkpoint_id)``."""

    #: True while a checkpoint is being aligned (records processed meanwhile are reported)
    aligning: bool

    def process_barrier(self, barrier: CheckpointBarrier, channel: Any) -> None:
        """``channel`` delivered ``barrier`` (an aligned barrier blocked it upstream; an
        unaligned one overtook the data queued before it)."""

    def process_barrier_announcement(self, barrier: CheckpointBarrier, channel: Any) -> None:
        """``barrier`` (aligned, with an alignment timeout) is queued on ``channel``."""

    def process_cancel_marker(self, marker: CancelCheckpointMarker, channel: Any) -> None:
        """``channel`` delivered a cancellation of a checkpoint."""

    def process_end_of_partition(self, channel: Any) -> None:
        """``channel`` ended: it counts as having delivered every barrier."""

    def records_processed(self, values: list) -> None:
        """Records taken in while aligning."""

    def abort(self, checkpoint_id: int) -> None:
        """The coordinator aborted ``checkpoint_id``: stop aligning it, resume every channel."""
