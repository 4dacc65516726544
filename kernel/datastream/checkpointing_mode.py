"""PyFlink's ``CheckpointingMode`` (``execution.checkpointing.mode``)."""

from enum import Enum

__all__ = ["CheckpointingMode"]


class CheckpointingMode(Enum):
    """What consistency a recovery gives. EXACTLY_ONCE: operators align the barriers of their
    inputs, so every record is reflected exactly once in the restored state. AT_LEAST_ONCE:
    no alignment; after a recovery some records may be reflected twice."""

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1
