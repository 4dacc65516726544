"""Flink's ``CheckpointRequestDecider``: whether a checkpoint request runs now, waits, or is
dropped.

Requests queue (requests the coordinator makes itself before periodic ones, then by time). While
``max-concurrent-checkpoints`` are in progress they wait. A periodic request due before
``min-pause`` has passed since the last completed checkpoint is dropped and the periodic
trigger moved to when the pause ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

MAX_QUEUED_REQUESTS = 1000


@dataclass(order=True)
class CheckpointTriggerRequest:
    sort_key: tuple[bool, int, int] = field(init=False, repr=False)
    periodic: bool
    timestamp: int  # clock ns of the request
    seq: int

    def __post_init__(self) -> None:
        self.sort_key = (self.periodic, self.timestamp, self.seq)


class CheckpointRequestDecider:
    def __init__(self, max_concurrent: int, min_pause_ms: int, reschedule: Callable[[int], None],
                 now_ms: Callable[[], int]) -> None:
        self.max_concurrent = max_concurrent
        self.min_pause_ms = min_pause_ms
        self.reschedule = reschedule
        self.now_ms = now_ms
        self.queued: list[CheckpointTriggerRequest] = []

    def choose(self, new: CheckpointTriggerRequest | None, pending: int,
               last_completion_ms: int) -> CheckpointTriggerRequest | None:
        """Queue ``new`` (if any) and return the request to run now, if one may."""
        if new is not None:
            self.queued.append(new)
            self.queued.sort()
            if len(self.queued) > MAX_QUEUED_REQUESTS:
                self.queued.pop()
        if not self.queued or pending >= self.max_concurrent:
            return None
        first = self.queued[0]
        if first.periodic:
            delay = last_completion_ms + self.min_pause_ms - self.now_ms()
            if delay > 0:
                self.queued.pop(0)
                self.reschedule(delay)
                return None
        return self.queued.pop(0)

    def abort_all(self) -> None:
        self.queued.clear()
