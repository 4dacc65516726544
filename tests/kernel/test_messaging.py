from __future__ import annotations

import msgspec
import pytest

from kernel.clock import NS_PER_MS, NS_PER_S, SimulatedClock
from kernel.events import MessageDelayed, MessageDropped
from kernel.loop import EventLoop
from kernel.messaging import AskTimeout, Component, DeliveryRule, MessagingService, RecipientUnreachable
from kernel.testing import EventCapture


class Ping(msgspec.Struct, frozen=True):
    n: int


class Echo(msgspec.Struct, frozen=True):
    text: str


class Recorder(Component):
    def __init__(self, address, messaging):
        super().__init__(address, messaging)
        self.received = []

    def handle_Ping(self, message, sender):
        self.received.append((message.n, sender, self.clock.now()))

    def handle_Echo(self, message, sender):
        if message.text == "fail":
            raise ValueError("refused")
        return message.text.upper()


def cluster():
    loop = EventLoop(SimulatedClock())
    messaging = MessagingService(loop)
    a, b = Recorder("a", messaging), Recorder("b", messaging)
    a.start()
    b.start()
    return loop, messaging, a, b


def test_tell_delivers_in_order_one_message_at_a_time():
    loop, _, a, b = cluster()
    order = []

    class Chatty(Recorder):
        def handle_Ping(self, message, sender):
            order.append(("start", message.n))
            if message.n == 0:
                self.tell("c", Ping(99))  # handled after this handler returns
            order.append(("end", message.n))

    c = Chatty("c", a.messaging)
    c.start()
    for n in range(3):
        a.tell("c", Ping(n))
    loop.run()
    assert order == [("start", 0), ("end", 0), ("start", 1), ("end", 1), ("start", 2), ("end", 2), ("start", 99), ("end", 99)]


def test_ask_returns_the_handlers_answer_or_exception():
    loop, _, a, b = cluster()
    ok = a.ask("b", Echo("hi"))
    failed = a.ask("b", Echo("fail"))
    loop.run()
    assert ok.result() == "HI"
    with pytest.raises(ValueError, match="refused"):
        failed.result()


def test_ask_to_a_missing_or_stopped_component_fails_as_unreachable():
    loop, _, a, b = cluster()
    b.stop()
    gone = a.ask("b", Echo("x"), timeout=10 * NS_PER_S)
    never = a.ask("nobody", Echo("x"))
    loop.run()
    assert isinstance(gone.exception(), RecipientUnreachable)
    assert isinstance(never.exception(), RecipientUnreachable)
    assert loop.clock.now() == 0  # failed at once, not by timeout


def test_delay_rule_applies_per_sender_receiver_and_time_window():
    loop, messaging, a, b = cluster()
    messaging.conditions.add(DeliveryRule("a", "b", start=NS_PER_S, end=3 * NS_PER_S, delay=500 * NS_PER_MS))
    loop.call_at(0, a.tell, "b", Ping(0))  # before the window
    loop.call_at(NS_PER_S, a.tell, "b", Ping(1))  # delayed
    loop.call_at(2 * NS_PER_S, b.tell, "a", Ping(2))  # other direction: not delayed
    loop.call_at(3 * NS_PER_S, a.tell, "b", Ping(3))  # window over
    loop.run()
    assert b.received == [(0, "a", 0), (1, "a", 1_500_000_000), (3, "a", 3 * NS_PER_S)]
    assert a.received == [(2, "b", 2 * NS_PER_S)]


def test_drop_rule_both_ways_and_ask_timeout():
    loop, messaging, a, b = cluster()
    messaging.conditions.add(DeliveryRule("a", "b", start=0, end=10 * NS_PER_S, drop=True, both_ways=True))
    a.tell("b", Ping(1))
    b.tell("a", Ping(2))
    lost = a.ask("b", Echo("x"), timeout=2 * NS_PER_S)
    loop.call_at(10 * NS_PER_S, a.tell, "b", Ping(3))
    loop.run()
    assert a.received == []
    assert b.received == [(3, "a", 10 * NS_PER_S)]
    assert isinstance(lost.exception(), AskTimeout)


def test_stopped_component_timers_do_not_fire():
    loop, _, a, b = cluster()
    fired = []
    a.schedule(NS_PER_S, fired.append, "a")
    b.schedule(NS_PER_S, fired.append, "b")
    loop.call_later(NS_PER_S // 2, a.stop)
    loop.run()
    assert fired == ["b"]


def test_dropped_and_delayed_messages_are_events(session_factory):
    capture = EventCapture()
    session = session_factory("rill.clock=simulated", plugins=[capture])
    run = session.new_run("faults")
    run.start()
    a, b = Recorder("a", run.messaging), Recorder("b", run.messaging)
    a.start()
    b.start()
    run.messaging.conditions.add(DeliveryRule("a", "b", end=NS_PER_S, drop=True))
    run.messaging.conditions.add(DeliveryRule("b", "a", delay=250 * NS_PER_MS))
    a.tell("b", Ping(1))
    b.tell("a", Ping(2))
    run.loop.run()
    run.finish("finished")
    dropped, delayed = capture.last.of(MessageDropped), capture.last.of(MessageDelayed)
    assert [(e.sender, e.receiver, e.message) for e in dropped] == [("a", "b", "Ping")]
    assert [(e.sender, e.receiver, e.message, e.delay_ms) for e in delayed] == [("b", "a", "Ping", 250.0)]
    assert a.received == [(2, "b", 250 * NS_PER_MS)]
