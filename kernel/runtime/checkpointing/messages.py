"""What a task reports to its job's CheckpointCoordinator (Flink's ``AcknowledgeCheckpoint``,
``DeclineCheckpoint`` with ``CheckpointMetrics`` and ``TaskStateSnapshot``): plain msgspec
data, so a cross-process transport can carry them."""

from __future__ import annotations

import msgspec

from kernel.runtime.checkpointing.format import StateHandle


class CheckpointMetrics(msgspec.Struct, frozen=True, kw_only=True):
    """How one subtask's part of a checkpoint went (ms of clock time): the alignment (first to
    last barrier), the records and bytes processed meanwhile, the in-flight data persisted
    (``unaligned``: the barrier overtook data), the synchronous part (snapshot) and the
    asynchronous part (writing it)."""

    alignment_ms: float = 0.0
    processed_records: int = 0
    processed_bytes: int = 0
    persisted_bytes: int = 0
    unaligned: bool = False
    sync_ms: float = 0.0
    async_ms: float = 0.0


class OperatorSubtaskSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    operator_id: str
    state: StateHandle | None = None


class TaskStateSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """The state of every operator of the subtask's chain; ``finished``: it had ended its input."""

    operators: list[OperatorSubtaskSnapshot] = []
    finished: bool = False

    @property
    def state_size(self) -> int:
        return sum(op.state.size for op in self.operators if op.state is not None)


class AcknowledgeCheckpoint(msgspec.Struct, frozen=True, kw_only=True):
    job_id: str
    vertex_id: str
    subtask: int
    attempt: int
    checkpoint_id: int
    state: TaskStateSnapshot = TaskStateSnapshot()
    metrics: CheckpointMetrics = CheckpointMetrics()


class DeclineCheckpoint(msgspec.Struct, frozen=True, kw_only=True):
    """``reason``: a :class:`kernel.runtime.checkpointing.failures.CheckpointFailureReason` name."""

    job_id: str
    vertex_id: str
    subtask: int
    attempt: int
    checkpoint_id: int
    reason: str
    message: str = ""
