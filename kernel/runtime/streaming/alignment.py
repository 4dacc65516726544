"""The source side of watermark alignment (FLIP-182) and the source's activity clock.

A source subtask in an alignment group reports its current watermark to the group's
coordinator every update interval (``Long.MAX_VALUE`` while idle; nothing before its first
watermark) and receives announcements ``(max_allowed, group_min)`` with
``max_allowed = group_min + max drift``. It emits a record only while the watermark the record
implies (``timestamp - out_of_orderness - 1``) stays within ``max_allowed``; the rest of the
batch waits, and the subtask waits for alignment (reads nothing) until an announcement lets
it go on. So its watermark never runs more than the drift ahead of the slowest source of the
group. Until the first announcement a source goes at most the drift beyond its first record. A subtask whose records so far imply no more than the group minimum always gets its next
record: it holds the minimum, nobody else can move it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kernel.clock import MAX_LONG, MIN_LONG


@dataclass(frozen=True)
class AlignmentMember:
    """Who joins an alignment group: one attempt of one source subtask."""

    vertex_id: str
    vertex_name: str
    subtask: int
    attempt: int = 0


class SourceAlignment:
    def __init__(self, membership: Any, out_of_orderness_ms: int) -> None:
        self.membership = membership
        self.slack = out_of_orderness_ms + 1
        self.max_allowed: int | None = None  # until the first announcement: the first record's + drift
        self.group_min = MIN_LONG
        self.max_timestamp = MIN_LONG + self.slack  # of the records emitted so far
        self.waiting = False
        self._resume: list[Callable[[], None]] = []

    def announce(self, max_allowed: int, group_min: int) -> None:
        """An announcement of the coordinator arrived (as a task mail)."""
        self.max_allowed = max_allowed
        self.group_min = group_min
        if self.waiting:
            callbacks, self._resume = self._resume, []
            for callback in callbacks:
                callback()

    def admit(self, timestamps: list) -> int:
        """How many records of the batch (in order) may be emitted now."""
        limit = self.max_allowed
        if limit is None:
            limit = self.max_allowed = min(timestamps[0] - self.slack + self.membership.max_drift_ms, MAX_LONG)
        count = len(timestamps)
        if limit != MAX_LONG:
            limit += self.slack
            count = next((i for i, timestamp in enumerate(timestamps) if timestamp > limit), count)
            if count == 0 and self.max_timestamp - self.slack <= self.group_min:
                count = 1  # the slowest source of the group always makes progress
        if count:
            latest = max(timestamps[:count])
            if latest > self.max_timestamp:
                self.max_timestamp = latest
        return count

    def set_waiting(self, waiting: bool, watermark: int) -> None:
        if waiting != self.waiting:
            self.waiting = waiting
            self.membership.waiting(waiting, watermark)

    def when_announced(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` at the next announcement (to retry reading)."""
        self._resume.append(callback)


class ActivityClock:
    """Processing time that stands still while the source is paused (Flink's input activity
    clock): what idleness detection measures, so a paused source is never declared idle."""

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now_ms = now_ms
        self._paused_total = 0
        self._paused_since: int | None = None
        self._reasons: set[str] = set()

    def now_ms(self) -> int:
        now = self._now_ms()
        paused = self._paused_total + (now - self._paused_since if self._paused_since is not None else 0)
        return now - paused

    def pause(self, reason: str) -> None:
        if not self._reasons:
            self._paused_since = self._now_ms()
        self._reasons.add(reason)

    def resume(self, reason: str) -> None:
        if reason not in self._reasons:
            return
        self._reasons.discard(reason)
        if not self._reasons and self._paused_since is not None:
            self._paused_total += self._now_ms() - self._paused_since
            self._paused_since = None
