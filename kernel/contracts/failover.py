"""The failover contract: whether and when a failed job restarts (Flink's
RestartBackoffTimeStrategy) and which execution vertices restart (FailoverStrategy)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kernel.runtime.graph.execution import ExecutionVertex


class RestartBackoffTimeStrategy(Protocol):
    """Decides whether a failure may restart the job and after how long. ``str()`` names it
    as Flink does ("Recovery is suppressed by ...")."""

    def notify_failure(self, now_ms: int) -> bool:
        """Record a failure; True when it starts a new restart attempt, False when it is
        merged into one already pending."""

    def can_restart(self) -> bool:
        """Whether the job may restart (before any failure: whether restarts are possible)."""

    def backoff_time_ms(self, now_ms: int) -> int:
        """How long to wait before restarting."""


class FailoverStrategy(Protocol):
    """Names the execution vertices to restart when one fails."""

    def tasks_to_restart(self, failed: ExecutionVertex) -> set[str]:
        """Ids of the execution vertices to restart (including ``failed``)."""
