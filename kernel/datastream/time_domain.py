"""``TimeDomain`` of a fired timer."""

from enum import Enum


class TimeDomain(Enum):
    EVENT_TIME = 0
    PROCESSING_TIME = 1
