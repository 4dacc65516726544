"""The heartbeat contract: a component's heartbeat manager for one monitored relation
(Flink's HeartbeatManager, HeartbeatListener and HeartbeatTarget).

A heartbeat manager records the heartbeat events of :mod:`kernel.runtime.cluster_events`
(``HeartbeatRequested``, ``HeartbeatReceived``, ``HeartbeatTimedOut``,
``HeartbeatTargetMarkedUnreachable``): replay's ``heartbeats`` view reads them whichever
heartbeat plugin ran.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kernel.messaging import Future


class HeartbeatTarget(Protocol):
    """Another component, reached with heartbeat messages; each returns a Future of the
    message's delivery (its failures count towards ``heartbeat.rpc-failure-threshold``)."""

    def request_heartbeat(self, own_id: str, payload: Any) -> Future:
        """Send a heartbeat request carrying ``payload``."""

    def receive_heartbeat(self, own_id: str, payload: Any) -> Future:
        """Send a heartbeat response carrying ``payload``."""


class HeartbeatListener(Protocol):
    """The owning component's side: verdicts and payloads."""

    def notify_heartbeat_timeout(self, resource_id: str) -> None:
        """Nothing was heard from ``resource_id`` in time: it is lost."""

    def notify_target_unreachable(self, resource_id: str) -> None:
        """Heartbeat messages to ``resource_id`` failed too often: it is lost."""

    def report_payload(self, resource_id: str, payload: Any) -> None:
        """A heartbeat of ``resource_id`` arrived with ``payload``."""

    def retrieve_payload(self, resource_id: str) -> Any:
        """The payload to send to ``resource_id`` with the next heartbeat."""


class HeartbeatManager(Protocol):
    """Monitors targets: a sender requests heartbeats every interval, a receiver answers."""

    def monitor_target(self, resource_id: str, target: HeartbeatTarget) -> None:
        """Start monitoring ``target`` (replacing an earlier monitor of ``resource_id``)."""

    def unmonitor_target(self, resource_id: str) -> None:
        """Stop monitoring ``resource_id``."""

    def request_heartbeat(self, requester_id: str, payload: Any) -> None:
        """A heartbeat request of ``requester_id`` arrived: it is alive; answer it."""

    def receive_heartbeat(self, sender_id: str, payload: Any) -> None:
        """A heartbeat response of ``sender_id`` arrived."""

    def stop(self) -> None:
        """Stop monitoring everything (the component stops)."""
