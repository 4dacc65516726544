"""Heartbeat managers as Flink's (HeartbeatManagerImpl, HeartbeatManagerSenderImpl) and the
default monitor (DefaultHeartbeatMonitor).

A manager belongs to one component and one relation (e.g. the JobMaster's TaskExecutors).
``monitor_target(id, target)`` starts a monitor whose timeout is armed at once; every
heartbeat heard from the target (a request on the receiver side, a response on the sender
side) re-arms it and hands its payload to the listener. The sender side requests heartbeats
from every monitored target at start and then every ``heartbeat.interval``; the receiver side
answers each request with its own payload. A heartbeat message that fails because the
recipient is unreachable counts against the target; ``heartbeat.rpc-failure-threshold``
consecutive failures (a success resets the count) make it unreachable. A monitor that expires
or finds its target unreachable tells the listener once and stops.

Listener and targets are :mod:`kernel.contracts.heartbeats`'s; a target's message returns a
Future of its delivery (or None).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from kernel.clock import NS_PER_MS
from kernel.runtime.cluster_events import (
    HeartbeatReceived,
    HeartbeatRequested,
    HeartbeatTargetMarkedUnreachable,
    HeartbeatTimedOut,
)
from kernel.messaging import RecipientUnreachable

if TYPE_CHECKING:
    from kernel.contracts.heartbeats import HeartbeatListener

#: makes a monitor of one target: ``factory(manager, resource_id, target)``
MonitorFactory = Callable[["HeartbeatManagerImpl", str, Any], "DefaultHeartbeatMonitor"]


class DefaultHeartbeatMonitor:
    """Flink's DefaultHeartbeatMonitor: a fixed timeout, re-armed by every heartbeat."""

    def __init__(self, manager: HeartbeatManagerImpl, resource_id: str, target: Any) -> None:
        self.manager = manager
        self.resource_id = resource_id
        self.target = target
        self.last_heartbeat = manager.now()
        self.last_heard: int | None = None  # when a heartbeat of the target last arrived
        self.last_request: int | None = None
        self.failures = 0
        self.cancelled = False
        self._timer: Any = None
        self.arm()

    def arm(self) -> None:
        self.schedule_suspicion(self.manager.timeout_ms * NS_PER_MS)

    def schedule_suspicion(self, delay_ns: int) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.manager.owner.schedule(delay_ns, self._suspect, daemon=True)

    def report_heartbeat(self) -> None:
        self.last_heartbeat = self.last_heard = self.manager.now()
        self.arm()

    def report_rpc_result(self, error: BaseException | None) -> None:
        if self.cancelled:
            return
        threshold = self.manager.rpc_failure_threshold
        if error is None:
            self.failures = 0
        elif isinstance(error, RecipientUnreachable) and threshold > 0:
            self.failures += 1
            if self.failures >= threshold:
                self.cancel()
                self.manager.target_unreachable(self)

    def _suspect(self) -> None:
        self._timer = None
        if not self.cancelled:
            self.cancel()
            self.manager.timed_out(self)

    def cancel(self) -> None:
        self.cancelled = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class HeartbeatManagerImpl:
    """The receiver side: answers requests, monitors who requests."""

    def __init__(self, owner: Any, listener: HeartbeatListener, run: Any, timeout_ms: int, rpc_failure_threshold: int,
                 monitor_factory: MonitorFactory = DefaultHeartbeatMonitor) -> None:
        self.owner = owner
        self.listener = listener
        self.run = run
        self.timeout_ms = timeout_ms
        self.rpc_failure_threshold = rpc_failure_threshold
        self.monitor_factory = monitor_factory
        self.monitors: dict[str, DefaultHeartbeatMonitor] = {}
        self.stopped = False

    @property
    def own_id(self) -> str:
        return self.owner.address

    def now(self) -> int:
        return self.run.clock.now()

    def _emit(self, event: Any) -> None:
        self.run.bus.emit(event)

    # -- targets ------------------------------------------------------------------------------

    def monitor_target(self, resource_id: str, target: Any) -> None:
        if self.stopped:
            return
        old = self.monitors.pop(resource_id, None)
        if old is not None:
            old.cancel()
        self.monitors[resource_id] = self.monitor_factory(self, resource_id, target)

    def unmonitor_target(self, resource_id: str) -> None:
        monitor = self.monitors.pop(resource_id, None)
        if monitor is not None:
            monitor.cancel()

    def stop(self) -> None:
        self.stopped = True
        for monitor in self.monitors.values():
            monitor.cancel()
        self.monitors.clear()

    # -- messages -----------------------------------------------------------------------------

    def request_heartbeat(self, requester_id: str, payload: Any) -> None:
        """A heartbeat request arrived: the requester is alive; answer it."""
        monitor = self.monitors.get(requester_id)
        if self.stopped or monitor is None:
            return
        self._heard(monitor, "request", payload)
        self._track(monitor, monitor.target.receive_heartbeat(self.own_id, self.listener.retrieve_payload(requester_id)))

    def receive_heartbeat(self, sender_id: str, payload: Any) -> None:
        """A heartbeat response arrived."""
        monitor = self.monitors.get(sender_id)
        if self.stopped or monitor is None:
            return
        self._heard(monitor, "response", payload)

    def _heard(self, monitor: DefaultHeartbeatMonitor, message: str, payload: Any) -> None:
        monitor.report_heartbeat()
        round_trip = float("nan")
        if message == "response" and monitor.last_request is not None:
            round_trip = (self.now() - monitor.last_request) / NS_PER_MS
        self._emit(HeartbeatReceived(time=self.now(), owner=self.own_id, target=monitor.resource_id, message=message,
                                     round_trip_ms=round_trip))
        self.listener.report_payload(monitor.resource_id, payload)

    def _track(self, monitor: DefaultHeartbeatMonitor, delivery: Any) -> None:
        if delivery is not None:
            delivery.add_done_callback(lambda done: monitor.report_rpc_result(done.exception()))

    # -- verdicts -----------------------------------------------------------------------------

    def timed_out(self, monitor: DefaultHeartbeatMonitor) -> None:
        if self.monitors.get(monitor.resource_id) is monitor:
            del self.monitors[monitor.resource_id]
        self._emit(HeartbeatTimedOut(time=self.now(), owner=self.own_id, target=monitor.resource_id,
                                     silent_ms=(self.now() - monitor.last_heartbeat) / NS_PER_MS))
        self.listener.notify_heartbeat_timeout(monitor.resource_id)

    def target_unreachable(self, monitor: DefaultHeartbeatMonitor) -> None:
        if self.monitors.get(monitor.resource_id) is monitor:
            del self.monitors[monitor.resource_id]
        self._emit(HeartbeatTargetMarkedUnreachable(time=self.now(), owner=self.own_id, target=monitor.resource_id,
                                                    failures=monitor.failures))
        self.listener.notify_target_unreachable(monitor.resource_id)


class HeartbeatManagerSenderImpl(HeartbeatManagerImpl):
    """The sender side: requests heartbeats from every target now and every interval."""

    def __init__(self, owner: Any, listener: HeartbeatListener, run: Any, timeout_ms: int, rpc_failure_threshold: int,
                 interval_ms: int, monitor_factory: MonitorFactory = DefaultHeartbeatMonitor) -> None:
        super().__init__(owner, listener, run, timeout_ms, rpc_failure_threshold, monitor_factory)
        self.interval_ms = interval_ms
        self.owner.schedule(0, self._run, daemon=True)

    def _run(self) -> None:
        if self.stopped:
            return
        for monitor in list(self.monitors.values()):
            self._request(monitor)
        self.owner.schedule(self.interval_ms * NS_PER_MS, self._run, daemon=True)

    def _request(self, monitor: DefaultHeartbeatMonitor) -> None:
        monitor.last_request = self.now()
        self._emit(HeartbeatRequested(time=self.now(), sender=self.own_id, target=monitor.resource_id))
        self._track(monitor, monitor.target.request_heartbeat(self.own_id,
                                                              self.listener.retrieve_payload(monitor.resource_id)))


def create_manager(owner: Any, listener: HeartbeatListener, role: str, run: Any,
                   monitor_factory: MonitorFactory = DefaultHeartbeatMonitor) -> HeartbeatManagerImpl:
    from plugins.heartbeats.options import HeartbeatOptions

    options = run.config.section(HeartbeatOptions)
    if role == "sender":
        return HeartbeatManagerSenderImpl(owner, listener, run, options.timeout, options.rpc_failure_threshold,
                                          options.interval, monitor_factory)
    if role == "receiver":
        return HeartbeatManagerImpl(owner, listener, run, options.timeout, options.rpc_failure_threshold,
                                    monitor_factory)
    raise ValueError(f"unknown heartbeat role {role!r} (sender, receiver)")
