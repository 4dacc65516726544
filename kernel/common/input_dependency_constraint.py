"""``InputDependencyConstraint`` (``pyflink.common``, deprecated in Flink): when a task with
several inputs may be scheduled. rill schedules by pipelined regions, as current Flink."""

from enum import Enum

__all__ = ["InputDependencyConstraint"]


class InputDependencyConstraint(Enum):
    ANY = 0
    ALL = 1
