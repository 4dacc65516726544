"""Why a checkpoint fails (Flink's ``CheckpointFailureReason``) and which reasons count against
``execution.checkpointing.tolerable-failed-checkpoints`` (Flink's ``CheckpointFailureManager``).

A *pre-flight* failure happens before the checkpoint reaches any task (no checkpoint id is
spent on it). Only I/O errors, failures of a task's asynchronous part, declines for other
reasons and expiry count; the rest (subsumed, tasks not ready or finishing, failover, ...)
are ignored, as in Flink.
"""

from __future__ import annotations

from enum import Enum


class CheckpointFailureReason(Enum):
    PERIODIC_SCHEDULER_SHUTDOWN = (True, "Periodic checkpoint scheduler is shut down.")
    TOO_MANY_CHECKPOINT_REQUESTS = (True, "The maximum number of queued checkpoint requests exceeded")
    MINIMUM_TIME_BETWEEN_CHECKPOINTS = (True, "The minimum time between checkpoints is still pending. "
                                              "Checkpoint will be triggered after the minimum time.")
    NOT_ALL_REQUIRED_TASKS_RUNNING = (True, "Not all required tasks are currently running.")
    IO_EXCEPTION = (True, "An Exception occurred while triggering the checkpoint. IO-problem detected.")
    CHECKPOINT_ASYNC_EXCEPTION = (False, "Asynchronous task checkpoint failed.")
    CHECKPOINT_EXPIRED = (False, "Checkpoint expired before completing.")
    CHECKPOINT_SUBSUMED = (False, "Checkpoint has been subsumed.")
    CHECKPOINT_DECLINED = (False, "Checkpoint was declined.")
    CHECKPOINT_DECLINED_TASK_NOT_READY = (False, "Checkpoint was declined (tasks not ready)")
    CHECKPOINT_DECLINED_TASK_CLOSING = (False, "Checkpoint was declined (task is closing)")
    CHECKPOINT_DECLINED_SUBSUMED = (False, "Checkpoint was canceled because a barrier from newer checkpoint "
                                           "was received.")
    CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER = (False, "Task received cancellation from one of its inputs")
    CHECKPOINT_DECLINED_INPUT_END_OF_STREAM = (False, "Checkpoint was declined because one input stream is finished")
    CHECKPOINT_COORDINATOR_SHUTDOWN = (False, "CheckpointCoordinator shutdown.")
    CHECKPOINT_COORDINATOR_SUSPEND = (False, "Checkpoint Coordinator is suspending.")
    JOB_FAILOVER_REGION = (False, "FailoverRegion is restarting.")
    TASK_FAILURE = (False, "Task has failed.")
    TASK_CHECKPOINT_FAILURE = (False, "Task local checkpoint failure.")
    FINALIZE_CHECKPOINT_FAILURE = (False, "Failure to finalize checkpoint.")

    def __init__(self, pre_flight: bool, message: str) -> None:
        self.pre_flight = pre_flight
        self.message = message

    @property
    def counted(self) -> bool:
        """Whether it counts against the tolerable failed checkpoints."""
        return self in _COUNTED


_R = CheckpointFailureReason
_COUNTED = frozenset({_R.IO_EXCEPTION, _R.CHECKPOINT_ASYNC_EXCEPTION, _R.CHECKPOINT_DECLINED, _R.CHECKPOINT_EXPIRED})

#: the message of the failure that fails the job when too many checkpoints failed in a row
EXCEEDED_CHECKPOINT_TOLERABLE_FAILURE_MESSAGE = "Exceeded checkpoint tolerable failure threshold."


class CheckpointException(Exception):
    """A checkpoint or savepoint failed (Flink's ``CheckpointException``): why, in one line."""
