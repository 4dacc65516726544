"""The watermarking contract: watermark generators, the valve of an input gate, and the
coordinator aligning sources' watermarks (FLIP-182)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from kernel.runtime.streaming.alignment import AlignmentMember


class WatermarkOutput(Protocol):
    """Where a generator emits (Flink's WatermarkOutput)."""

    def emit_watermark(self, timestamp: int) -> None:
        """A watermark (ignored unless larger than the last one)."""

    def mark_idle(self) -> None:
        """The stream is idle: downstream ignores it until it is active again."""

    def mark_active(self) -> None:
        """The stream is active again."""


class WatermarkGenerator(Protocol):
    """Generates a source's or a timestamp assigner's watermarks (Flink's WatermarkGenerator)."""

    def on_events(self, values: list, timestamps: list | None, output: WatermarkOutput) -> None:
        """A batch of records with their timestamps (None when they have none)."""

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        """Every ``pipeline.auto-watermark-interval``: emit the current watermark, or idleness."""

    def max_event_time(self) -> int | None:
        """The largest timestamp seen so far (None before any)."""


class ValveOutput(Protocol):
    """Where a valve sends what passes it: into the task's head operator."""

    def emit_watermark(self, timestamp: int) -> None:
        """The input's combined watermark advanced."""

    def emit_watermark_status(self, idle: bool) -> None:
        """The input's combined status changed (True: IDLE)."""


class WatermarkValve(Protocol):
    """Combines the watermarks and statuses of one input gate's channels (Flink's
    StatusWatermarkValve)."""

    def input_watermark(self, watermark: int, channel: int, output: ValveOutput) -> None:
        """A watermark arrived on ``channel``."""

    def input_watermark_status(self, idle: bool, channel: int, output: ValveOutput) -> None:
        """A watermark status arrived on ``channel`` (True: IDLE)."""


class AlignmentMembership(Protocol):
    """One source subtask's membership in an alignment group."""

    #: how often the source reports its watermark
    update_interval_ms: int
    #: how far its watermark may run ahead of the group's minimum
    max_drift_ms: int

    def report(self, watermark: int) -> None:
        """The source's current watermark (``Long.MAX_VALUE`` while idle)."""

    def waiting(self, paused: bool, watermark: int) -> None:
        """The source started (True) or stopped waiting for alignment at ``watermark``."""

    def leave(self) -> None:
        """The source ended: it no longer holds the group back."""


class WatermarkAlignmentCoordinator(Protocol):
    """Aligns the watermarks of a job's sources, per alignment group."""

    def join(self, strategy: Any, member: AlignmentMember,
             deliver: Callable[[int, int], None]) -> AlignmentMembership:
        """A source subtask with event time joins its strategy's group; the coordinator calls
        ``deliver(max_allowed, group_min)`` with every announcement of the group's bound."""

    def close(self) -> None:
        """The job ended: no more announcements."""
