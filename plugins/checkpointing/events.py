"""Events of checkpointing (plugin ``checkpointing.default``): what the coordinator and the
barrier handlers did, for the ``checkpoints`` and ``checkpoint_subtasks`` views."""

from __future__ import annotations

from kernel.runtime.cluster_events import TaskEvent
from kernel.events import Event


class CheckpointTriggered(Event, tag="checkpoint_triggered"):
    """The coordinator started checkpoint ``checkpoint_id`` (``timestamp``: clock ms) at
    ``tasks_to_trigger`` tasks; ``tasks_to_acknowledge`` must acknowledge it, ``finished_tasks``
    had finished. ``periodic``: by the interval, else because every task ended its input."""

    job_id: str = ""
    checkpoint_id: int = 0
    checkpoint_kind: str = "checkpoint"
    timestamp: int = 0
    periodic: bool = True
    tasks_to_trigger: int = 0
    tasks_to_acknowledge: int = 0
    finished_tasks: int = 0


class CheckpointBarrierAligned(TaskEvent, tag="checkpoint_barrier_aligned"):
    """A task with inputs received the barrier on all ``channels``: ``alignment_ms`` from the
    first barrier to the last, ``processed_records``/``processed_bytes`` (pickled size) taken in
    from the channels still without it meanwhile (at-least-once: nothing waits). ``unaligned``:
    the barrier overtook in-flight data (from the start, or once the alignment timed out), of
    which ``persisted_bytes`` (pickled) went into the checkpoint."""

    checkpoint_id: int = 0
    channels: int = 0
    alignment_ms: float = 0.0
    processed_records: int = 0
    processed_bytes: int = 0
    persisted_bytes: int = 0
    unaligned: bool = False


class CheckpointAcknowledged(TaskEvent, tag="checkpoint_acknowledged"):
    """A subtask acknowledged: ``state_size`` bytes (in-flight data included), its synchronous
    and asynchronous parts, its alignment, ``end_to_end_ms`` since the checkpoint was triggered;
    ``unaligned``: it persisted ``persisted_bytes`` of in-flight data (input channels and output
    subpartitions); ``finished``: it had ended its input."""

    checkpoint_id: int = 0
    state_size: int = 0
    sync_ms: float = 0.0
    async_ms: float = 0.0
    alignment_ms: float = 0.0
    processed_records: int = 0
    processed_bytes: int = 0
    persisted_bytes: int = 0
    unaligned: bool = False
    end_to_end_ms: float = 0.0
    finished: bool = False


class CheckpointDeclined(TaskEvent, tag="checkpoint_declined"):
    """A subtask declined a pending checkpoint (``reason``: Flink's CheckpointFailureReason)."""

    checkpoint_id: int = 0
    reason: str = ""
    message: str = ""


class CheckpointCompleted(Event, tag="checkpoint_completed"):
    """Every task acknowledged: ``state_size`` bytes, ``duration_ms`` since triggered,
    ``external_path`` its directory ("" when kept in memory), ``subsumed`` the ids it deleted."""

    environment = ("external_path",)

    job_id: str = ""
    checkpoint_id: int = 0
    checkpoint_kind: str = "checkpoint"
    state_size: int = 0
    duration_ms: float = 0.0
    external_path: str = ""
    subsumed: list[int] = []


class CheckpointFailed(Event, tag="checkpoint_failed"):
    """A checkpoint failed (``checkpoint_id`` -1: before it got an id). ``counted``: against the
    tolerable failed checkpoints, of which ``consecutive`` in a row now."""

    job_id: str = ""
    checkpoint_id: int = 0
    checkpoint_kind: str = "checkpoint"
    reason: str = ""
    message: str = ""
    counted: bool = False
    consecutive: int = 0


class CheckpointStateRestored(TaskEvent, tag="checkpoint_state_restored"):
    """A restarted subtask (``attempt``), or one of a job started from a snapshot, gets
    ``state_size`` bytes of checkpoint ``checkpoint_id`` (``checkpoint_kind`` checkpoint or
    savepoint, at ``external_path``: "" in memory); ``finished``: it had ended its input then
    and reads nothing more."""

    environment = ("external_path",)

    checkpoint_id: int = 0
    state_size: int = 0
    finished: bool = False
    checkpoint_kind: str = "checkpoint"
    external_path: str = ""


CHECKPOINT_EVENT_TYPES: tuple[type[Event], ...] = (
    CheckpointTriggered, CheckpointBarrierAligned, CheckpointAcknowledged, CheckpointDeclined, CheckpointCompleted,
    CheckpointFailed, CheckpointStateRestored,
)
