"""Messaging between cluster components, like Flink's RPC endpoints.

A :class:`Component` has an address and an inbox; it handles one message at a time on the
event loop, in a method named ``handle_<MessageClass>``. Components only talk through
:class:`MessagingService`, which hands every envelope to a :class:`Transport`.
:class:`LocalTransport` delivers through the loop; :class:`NetworkConditions` can drop or
delay messages per (sender, receiver) and time window, which is how faults are injected.
A cross-process transport (:class:`kernel.remoting.transport.TcpTransport`) replaces the transport
(``use_transport``): components never see it.

``tell`` is fire-and-forget. ``ask`` returns a :class:`Future` completed by the handler's
return value (or by a :class:`Future` the handler returns); it fails with
:class:`RecipientUnreachable` when the receiver does not exist and with
:class:`AskTimeout` when no answer arrives in time. A crashed process (``crash``) is silent:
what is sent to it vanishes, so asks to it time out.
"""

from __future__ import annotations

import fnmatch
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

from kernel.clock import MAX_LONG
from kernel.loop import EventLoop, TimerGroup, TimerHandle


class RecipientUnreachable(Exception):
    """The receiver of a message is not registered (stopped, killed or never started)."""


class AskTimeout(Exception):
    """No answer to an ``ask`` within its timeout."""


class Future:
    """A result that arrives later; callbacks run on the loop, never re-entrantly."""

    __slots__ = ("_loop", "_done", "_result", "_exception", "_callbacks")

    def __init__(self, loop: EventLoop) -> None:
        self._loop = loop
        self._done = False
        self._result: Any = None
        self._exception: BaseException | None = None
        self._callbacks: list[Callable[[Future], Any]] = []

    def done(self) -> bool:
        return self._done

    def result(self) -> Any:
        if not self._done:
            raise RuntimeError("future is not done")
        if self._exception is not None:
            raise self._exception
        return self._result

    def exception(self) -> BaseException | None:
        return self._exception

    def set_result(self, value: Any) -> None:
        self._complete(value, None)

    def set_exception(self, exc: BaseException) -> None:
        self._complete(None, exc)

    def _complete(self, value: Any, exc: BaseException | None) -> None:
        if self._done:
            return
        self._done, self._result, self._exception = True, value, exc
        for callback in self._callbacks:
            self._loop.call_soon(callback, self)
        self._callbacks.clear()

    def add_done_callback(self, callback: Callable[[Future], Any]) -> None:
        if self._done:
            self._loop.call_soon(callback, self)
        else:
            self._callbacks.append(callback)


@dataclass(slots=True)
class Envelope:
    sender: str
    receiver: str
    message: Any
    ask_id: int = 0  # > 0: a request expecting a reply
    reply_to: int = 0  # > 0: the reply to that request
    failed: bool = False  # a reply carrying an exception


@dataclass(frozen=True)
class DeliveryRule:
    """Drop or delay messages from ``sender`` to ``receiver`` (glob patterns) while the clock
    is in ``[start, end)``. ``delay`` is in ns; ``drop`` wins over ``delay``."""

    sender: str
    receiver: str
    start: int = 0
    end: int = MAX_LONG
    drop: bool = False
    delay: int = 0
    jitter: int = 0  # ns: the delay varies uniformly by up to this much either way (seeded)
    both_ways: bool = False

    def applies(self, sender: str, receiver: str, now: int) -> bool:
        if not self.start <= now < self.end:
            return False
        if fnmatch.fnmatchcase(sender, self.sender) and fnmatch.fnmatchcase(receiver, self.receiver):
            return True
        return self.both_ways and (
            fnmatch.fnmatchcase(sender, self.receiver) and fnmatch.fnmatchcase(receiver, self.sender)
        )


class NetworkConditions:
    """The drop/delay rules in force; empty by default (every message delivered at once)."""

    def __init__(self, rng: Any = None) -> None:
        self.rules: list[DeliveryRule] = []
        self.rng = rng  # for jitter
        #: called with (envelope, "dropped" | "delayed", delay_ns) for every affected message
        self.listeners: list[Callable[[Envelope, str, int], None]] = []

    def add(self, rule: DeliveryRule) -> None:
        self.rules.append(rule)

    def verdict(self, envelope: Envelope, now: int) -> tuple[bool, int]:
        """(drop, delay_ns) for one envelope."""
        delay = 0
        for rule in self.rules:
            if rule.applies(envelope.sender, envelope.receiver, now):
                if rule.drop:
                    return True, 0
                jitter = self.rng.randint(-rule.jitter, rule.jitter) if rule.jitter and self.rng else 0
                delay = max(delay, rule.delay + jitter)
        return False, delay

    def active(self, now: int) -> bool:
        """Whether a drop rule is in force now or later."""
        return any(rule.drop and rule.end > now for rule in self.rules)


class Transport:
    """Moves envelopes to the receiving component's inbox."""

    def deliver(self, envelope: Envelope) -> None:
        raise NotImplementedError


class LocalTransport(Transport):
    """In-process delivery through the event loop, subject to :class:`NetworkConditions`."""

    def __init__(self, loop: EventLoop, service: MessagingService) -> None:
        self.loop = loop
        self.service = service
        self.conditions = NetworkConditions()

    def deliver(self, envelope: Envelope) -> None:
        if self.conditions.rules:
            drop, delay = self.conditions.verdict(envelope, self.loop.clock.now())
            if drop or delay:
                for listener in self.conditions.listeners:
                    listener(envelope, "dropped" if drop else "delayed", delay)
                if drop:
                    return
                self.loop.call_later(delay, self.forward, envelope)
                return
        self.forward(envelope)

    def forward(self, envelope: Envelope) -> None:
        """Hand the envelope on (to the receiving component of this process)."""
        self.service.arrive(envelope)


class MessagingService:
    """Registry of components and router of their messages (Flink's RpcService)."""

    def __init__(self, loop: EventLoop, rng: Any = None) -> None:
        self.loop = loop
        self.components: dict[str, Component] = {}
        #: addresses of crashed processes: what is sent to them vanishes (asks time out)
        self.crashed: set[str] = set()
        self.transport: Transport = LocalTransport(loop, self)
        self.transport.conditions.rng = rng  # type: ignore[attr-defined]
        self._next_ask = 0
        self._pending: dict[int, tuple[Future, TimerHandle | None]] = {}

    @property
    def conditions(self) -> NetworkConditions:
        return self.transport.conditions  # type: ignore[attr-defined]

    def use_transport(self, transport: LocalTransport) -> None:
        """Deliver through ``transport`` from now on (the network conditions carry over)."""
        transport.conditions = self.transport.conditions  # type: ignore[attr-defined]
        self.transport = transport

    def register(self, component: Component) -> None:
        if component.address in self.components:
            raise ValueError(f"address {component.address!r} is already registered")
        self.components[component.address] = component

    def unregister(self, address: str) -> None:
        self.components.pop(address, None)

    def send(self, sender: str, receiver: str, message: Any) -> None:
        self.transport.deliver(Envelope(sender, receiver, message))

    def ask(self, sender: str, receiver: str, message: Any, timeout: int | None) -> Future:
        future = Future(self.loop)
        self._next_ask += 1
        ask_id = self._next_ask
        timer = None
        if timeout is not None:
            timer = self.loop.call_later(timeout, self._time_out, ask_id, receiver, message)
        self._pending[ask_id] = (future, timer)
        self.transport.deliver(Envelope(sender, receiver, message, ask_id=ask_id))
        return future

    def _time_out(self, ask_id: int, receiver: str, message: Any) -> None:
        entry = self._pending.pop(ask_id, None)
        if entry is not None:
            entry[0].set_exception(
                AskTimeout(f"{type(message).__name__} to {receiver} got no answer in time")
            )

    def crash(self, address: str) -> None:
        """The process at ``address`` died: stop its component; messages to it vanish."""
        self.crashed.add(address)
        component = self.components.get(address)
        if component is not None:
            component.stop()

    def arrive(self, envelope: Envelope) -> None:
        """Called by the transport when an envelope reaches this process."""
        if envelope.receiver in self.crashed:
            return
        if envelope.reply_to:
            self._settle(envelope)
            return
        component = self.components.get(envelope.receiver)
        if component is None or component.stopped:
            if envelope.ask_id:
                self._reply(envelope, RecipientUnreachable(f"{envelope.receiver} is unreachable"), True)
            return
        component._enqueue(envelope)

    def _settle(self, envelope: Envelope) -> None:
        entry = self._pending.pop(envelope.reply_to, None)
        if entry is None:
            return
        future, timer = entry
        if timer is not None:
            timer.cancel()
        if envelope.failed:
            future.set_exception(envelope.message)
        else:
            future.set_result(envelope.message)

    def _reply(self, request: Envelope, value: Any, failed: bool) -> None:
        reply = Envelope(request.receiver, request.sender, value, reply_to=request.ask_id, failed=failed)
        if failed and isinstance(value, RecipientUnreachable):
            # The failure is noticed by the sender's own messaging layer: no network involved.
            self.loop.call_soon(self._settle, reply)
            return
        self.transport.deliver(reply)


class Component:
    """A cluster role with an address and an inbox, handling one message at a time.

    Subclasses define ``handle_<MessageClass>(self, message, sender)``; for an ``ask`` the
    return value (or a :class:`Future` of it) is the answer.
    """

    def __init__(self, address: str, messaging: MessagingService) -> None:
        self.address = address
        self.messaging = messaging
        self.loop = messaging.loop
        self.clock = messaging.loop.clock
        self.stopped = True
        self._inbox: deque[Envelope] = deque()
        self._scheduled = False
        self._timers = TimerGroup()

    # -- life cycle -------------------------------------------------------------------------

    def start(self) -> None:
        self.messaging.register(self)
        self.stopped = False
        self.on_start()

    def stop(self) -> None:
        """Stop handling messages; timers of this component are cancelled."""
        if self.stopped:
            return
        self.stopped = True
        self._timers.cancel_all()
        self._inbox.clear()
        self.messaging.unregister(self.address)
        self.on_stop()

    def on_start(self) -> None:
        """Called once when started."""

    def on_stop(self) -> None:
        """Called once when stopped."""

    # -- sending ----------------------------------------------------------------------------

    def tell(self, receiver: str, message: Any) -> None:
        self.messaging.send(self.address, receiver, message)

    def ask(self, receiver: str, message: Any, timeout: int | None = None) -> Future:
        """Send a request; the answer's callbacks only run while this component is alive."""
        answer = self.messaging.ask(self.address, receiver, message, timeout)
        guarded = Future(self.loop)

        def settle(done: Future) -> None:
            if not self.stopped:
                guarded._complete(done._result, done._exception)

        answer.add_done_callback(settle)
        return guarded

    def schedule(self, delay: int, callback: Callable[..., Any], *args: Any, daemon: bool = False) -> TimerHandle:
        """Run ``callback(*args)`` on this component after ``delay`` ns, unless stopped first
        (a ``daemon`` timer does not keep the loop running: periodic background work)."""
        def fire() -> None:
            if not self.stopped:
                callback(*args)

        return self._timers.add(self.loop.call_later(delay, fire, daemon=daemon))

    # -- receiving --------------------------------------------------------------------------

    def _enqueue(self, envelope: Envelope) -> None:
        self._inbox.append(envelope)
        if not self._scheduled:
            self._scheduled = True
            self.loop.call_soon(self._process_one)

    def _process_one(self) -> None:
        self._scheduled = False
        if self.stopped or not self._inbox:
            return
        envelope = self._inbox.popleft()
        if self._inbox:
            self._scheduled = True
            self.loop.call_soon(self._process_one)
        handler = getattr(self, "handle_" + type(envelope.message).__name__, None)
        if handler is None:
            raise TypeError(f"{type(self).__name__} has no handler for {type(envelope.message).__name__}")
        try:
            answer = handler(envelope.message, envelope.sender)
        except Exception as exc:
            if not envelope.ask_id:
                raise
            self.messaging._reply(envelope, exc, True)
            return
        if envelope.ask_id:
            if isinstance(answer, Future):
                answer.add_done_callback(
                    lambda f: self.messaging._reply(
                        envelope, f.exception() or f._result, f.exception() is not None
                    )
                )
            else:
                self.messaging._reply(envelope, answer, False)
