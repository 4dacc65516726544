"""The coordinator of watermark alignment (Flink's SourceCoordinator part of FLIP-182).

Per alignment group: the last watermark each member (a source subtask) reported, and a
periodic announcement every update interval of ``max_allowed = min(reported) + max drift``
(saturating at ``Long.MAX_VALUE``) to every member; the first announcement goes out as soon as
every member has reported once (sources report their first watermark at once), so a group is
bounded from its first watermarks on. Members that have not reported yet do not count; an idle
member reports ``Long.MAX_VALUE``; a member that finished leaves the group and no longer holds
it back. Announcements go out only while the group has members.

Members report from their tasks' threads (realtime): the groups are kept under a lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from kernel.clock import MAX_LONG, NS_PER_MS
from kernel.runtime.streaming.alignment import AlignmentMember
from plugins.watermarking.events import SourceAlignmentChanged, WatermarkAlignmentAnnounced

if TYPE_CHECKING:
    from kernel.lifecycle.run import Run


@dataclass
class AlignmentGroup:
    name: str
    max_drift_ms: int
    update_interval_ms: int
    deliveries: dict[AlignmentMember, Callable[[int, int], None]] = field(default_factory=dict)
    reports: dict[AlignmentMember, int] = field(default_factory=dict)
    max_allowed: int = MAX_LONG
    announced: bool = False
    timer: Any = None


class Membership:
    def __init__(self, coordinator: DefaultWatermarkAlignmentCoordinator, group: AlignmentGroup,
                 member: AlignmentMember) -> None:
        self.coordinator = coordinator
        self.group = group
        self.member = member
        self.update_interval_ms = group.update_interval_ms
        self.max_drift_ms = group.max_drift_ms

    def report(self, watermark: int) -> None:
        group = self.group
        with self.coordinator.lock:
            if self.member in group.deliveries:
                first = len(group.reports) < len(group.deliveries)
                group.reports[self.member] = watermark
                if first and not group.announced and len(group.reports) == len(group.deliveries):
                    self.coordinator.announce(group)

    def waiting(self, paused: bool, watermark: int) -> None:
        member, run = self.member, self.coordinator.run
        run.bus.emit(SourceAlignmentChanged(
            time=run.clock.now(), group=self.group.name, vertex_id=member.vertex_id, vertex_name=member.vertex_name,
            subtask=member.subtask, attempt=member.attempt, waiting=paused, watermark=watermark,
            max_allowed_watermark=self.group.max_allowed,
        ))

    def leave(self) -> None:
        self.coordinator.leave(self.group, self.member)


class DefaultWatermarkAlignmentCoordinator:
    def __init__(self, run: Run, max_drift_ms: int, update_interval_ms: int, group: str) -> None:
        self.run = run
        self.default = (group, max_drift_ms, update_interval_ms)
        self.groups: dict[str, AlignmentGroup] = {}
        self.closed = False
        #: guards the groups (members join, report and leave from their tasks' threads)
        self.lock = threading.Lock()

    def join(self, strategy: Any, member: AlignmentMember, deliver: Callable[[int, int], None]) -> Membership:
        """A source subtask joins the group its strategy names (``with_watermark_alignment``),
        else the configured default group."""
        name, drift, interval = strategy.alignment or self.default
        with self.lock:
            group = self.groups.get(name)
            if group is None:
                group = self.groups[name] = AlignmentGroup(name, drift, interval)
            group.deliveries[member] = deliver
            if group.timer is None and not self.closed:
                self._schedule(group)
        return Membership(self, group, member)

    def leave(self, group: AlignmentGroup, member: AlignmentMember) -> None:
        with self.lock:
            group.deliveries.pop(member, None)
            group.reports.pop(member, None)
            if not group.deliveries and group.timer is not None:
                group.timer.cancel()
                group.timer = None

    def _schedule(self, group: AlignmentGroup) -> None:
        loop = self.run.loop
        group.timer = loop.call_later(group.update_interval_ms * NS_PER_MS, lambda: self._announce_periodically(group))

    def _announce_periodically(self, group: AlignmentGroup) -> None:
        with self.lock:
            group.timer = None
            if self.closed or not group.deliveries:
                return
            self.announce(group)
            self._schedule(group)

    def announce(self, group: AlignmentGroup) -> None:
        """Tell every member the group's bound (the lock is held)."""
        if group.reports:
            group.announced = True
            minimum = min(group.reports.values())
            group.max_allowed = min(minimum + group.max_drift_ms, MAX_LONG)
            self.run.bus.emit(WatermarkAlignmentAnnounced(
                time=self.run.clock.now(), group=group.name, members=len(group.reports), min_watermark=minimum,
                max_allowed_watermark=group.max_allowed,
            ))
            for deliver in list(group.deliveries.values()):
                deliver(group.max_allowed, minimum)

    def close(self) -> None:
        with self.lock:
            self.closed = True
            for group in self.groups.values():
                if group.timer is not None:
                    group.timer.cancel()
                    group.timer = None
