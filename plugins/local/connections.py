"""What components use to keep in touch: retrying registrations and heartbeat targets.

``RetryingRegistration`` is Flink's: each attempt is a request with a timeout starting at
``cluster.registration.initial-timeout`` and doubling up to ``cluster.registration.max-timeout``;
a failed attempt (recipient unreachable, refused) waits ``cluster.registration.error-delay``
and starts over. ``HeartbeatTarget`` turns a heartbeat manager's calls into requests to
another component on one heartbeat channel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from kernel.clock import NS_PER_MS
from kernel.messaging import AskTimeout, Component, Future
from plugins.local import messages as m

if TYPE_CHECKING:
    from kernel.contracts.heartbeats import HeartbeatManager


class RetryingRegistration:
    def __init__(self, owner: Component, target: str, message: Any, options: Any,
                 on_success: Callable[[Any], None]) -> None:
        self.owner = owner
        self.target = target
        self.message = message
        self.options = options
        self.on_success = on_success
        self.cancelled = False
        self.attempts = 0

    def start(self) -> RetryingRegistration:
        self._attempt(self.options.registration_initial_timeout)
        return self

    def cancel(self) -> None:
        self.cancelled = True

    def _attempt(self, timeout_ms: int) -> None:
        if self.cancelled or self.owner.stopped:
            return
        self.attempts += 1
        answer = self.owner.ask(self.target, self.message, timeout_ms * NS_PER_MS)
        answer.add_done_callback(lambda done: self._answered(done, timeout_ms))

    def _answered(self, done: Future, timeout_ms: int) -> None:
        if self.cancelled:
            return
        error = done.exception()
        if error is None:
            self.cancelled = True
            self.on_success(done.result())
        elif isinstance(error, AskTimeout):
            self._attempt(min(2 * timeout_ms, self.options.registration_max_timeout))
        else:
            self.owner.schedule(self.options.registration_error_delay * NS_PER_MS, self._attempt,
                                self.options.registration_initial_timeout)


class HeartbeatTarget:
    """Heartbeat requests and responses to ``address`` on ``channel``, as requests whose
    delivery the heartbeat manager tracks."""

    def __init__(self, owner: Component, address: str, channel: str, timeout_ms: int) -> None:
        self.owner = owner
        self.address = address
        self.channel = channel
        self.timeout_ns = timeout_ms * NS_PER_MS

    def request_heartbeat(self, own_id: str, payload: Any) -> Future:
        return self.owner.ask(self.address, m.HeartbeatRequest(self.channel, own_id, payload), self.timeout_ns)

    def receive_heartbeat(self, own_id: str, payload: Any) -> Future:
        return self.owner.ask(self.address, m.HeartbeatResponse(self.channel, own_id, payload), self.timeout_ns)


def heartbeat_manager(owner: Component, listener: Listener, role: str) -> HeartbeatManager:
    """A heartbeat manager of the selected heartbeats plugin for one of ``owner``'s relations."""
    run = owner.run  # type: ignore[attr-defined]
    run.plugin_manager.require("create_heartbeat_manager", "heartbeats")
    return run.plugin_manager.hook.create_heartbeat_manager(owner=owner, listener=listener, role=role, run=run)


class Listener:
    """A heartbeat listener whose calls go to the owner's methods with a common prefix."""

    def __init__(self, owner: Any, prefix: str) -> None:
        self.owner = owner
        self.prefix = prefix

    def notify_heartbeat_timeout(self, resource_id: str) -> None:
        getattr(self.owner, f"{self.prefix}_lost")(resource_id, "heartbeat timeout")

    def notify_target_unreachable(self, resource_id: str) -> None:
        getattr(self.owner, f"{self.prefix}_lost")(resource_id, "unreachable")

    def report_payload(self, resource_id: str, payload: Any) -> None:
        getattr(self.owner, f"{self.prefix}_payload")(resource_id, payload)

    def retrieve_payload(self, resource_id: str) -> Any:
        return getattr(self.owner, f"{self.prefix}_heartbeat_payload")(resource_id)
