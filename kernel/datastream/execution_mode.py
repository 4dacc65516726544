"""``RuntimeExecutionMode`` (``execution.runtime-mode``)."""

from enum import Enum


class RuntimeExecutionMode(Enum):
    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2
