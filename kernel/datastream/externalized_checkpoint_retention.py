"""PyFlink's ``ExternalizedCheckpointRetention``
(``execution.checkpointing.externalized-checkpoint-retention``)."""

from enum import Enum

__all__ = ["ExternalizedCheckpointRetention"]


class ExternalizedCheckpointRetention(Enum):
    """Which completed checkpoints outlive their job. DELETE_ON_CANCELLATION: kept only when the
    job fails. RETAIN_ON_CANCELLATION: kept when it fails or is cancelled.
    NO_EXTERNALIZED_CHECKPOINTS: deleted whenever the job ends. Subsumed checkpoints are
    always deleted."""

    DELETE_ON_CANCELLATION = 0
    RETAIN_ON_CANCELLATION = 1
    NO_EXTERNALIZED_CHECKPOINTS = 2
