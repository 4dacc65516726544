from __future__ import annotations

import threading
import time

import pytest

from kernel import eventbus
from kernel.eventbus import EventBus
from kernel.events import RunFinished, RunStarted
from kernel.testing import CapturedEvents


def test_events_are_numbered_in_emission_order_across_flushes():
    captured = CapturedEvents()
    bus = EventBus("r1", [captured])
    bus.emit(RunStarted(time=1))
    bus.emit(RunFinished(time=2))
    assert bus.flush() == 2
    bus.emit(RunStarted(time=3))
    bus.close("finished")
    assert [(e.seq, e.time) for e in captured.events] == [(0, 1), (1, 2), (2, 3)]
    assert captured.status == "finished"
    assert bus.emitted == 3


def test_batches_carry_run_id_and_first_seq():
    batches = []

    class Observer:
        def events_emitted(self, batch):
            batches.append((batch.run_id, batch.first_seq, len(batch.events)))

        def close(self, status):
            pass

    bus = EventBus("r2", [Observer()])
    for t in range(3):
        bus.emit(RunStarted(time=t))
    bus.flush()
    bus.emit(RunStarted(time=9))
    bus.close("finished")
    assert batches == [("r2", 0, 3), ("r2", 3, 1)]


def test_flusher_thread_delivers_without_being_asked():
    delivered = threading.Event()

    class Observer:
        def events_emitted(self, batch):
            delivered.set()

        def close(self, status):
            pass

    bus = EventBus("r3", [Observer()], flush_interval=0.01)
    bus.start()
    bus.emit(RunStarted(time=1))
    assert delivered.wait(5)
    bus.close("finished")


def test_a_failing_observer_is_isolated_and_reported():
    good = CapturedEvents()

    class Broken:
        def events_emitted(self, batch):
            raise RuntimeError("disk full")

        def close(self, status):
            raise RuntimeError("still broken")

    broken = Broken()
    bus = EventBus("r4", [broken, good])
    bus.emit(RunStarted(time=1))
    bus.flush()
    bus.emit(RunStarted(time=2))
    bus.close("finished")
    assert [e.time for e in good.events] == [1, 2]
    assert [str(exc) for _, exc in bus.errors] == ["disk full", "still broken"]


def test_emit_is_list_append():
    bus = EventBus("r5")
    assert bus.emit.__self__ is bus._pending
    with pytest.raises(TypeError):
        bus.emit()


def test_a_bus_without_observers_keeps_no_events():
    bus = EventBus("r6")
    bus.start()
    for t in range(10_000):
        bus.emit(RunStarted(time=t))
    assert bus._pending == []
    bus.close("finished")


class Settling:
    """An observer recording its batches (their sizes, deferrable or not, and the thread that
    delivered them) and the threads it was asked to settle on."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, bool]] = []
        self.threads: list[str] = []
        self.settled: list[str] = []
        self.done = threading.Event()

    def events_emitted(self, batch):
        self.batches.append((len(batch.events), batch.deferrable))
        self.threads.append(threading.current_thread().name)

    def close(self, status):
        pass

    def settle(self):
        self.settled.append(threading.current_thread().name)
        self.done.set()


def test_periodic_and_final_batches_may_be_deferred_an_explicit_flush_not():
    observer = Settling()
    bus = EventBus("r7", [observer], flush_interval=0.01)
    bus.start()
    bus.emit(RunStarted(time=1))
    deadline = time.monotonic() + 30
    while not observer.batches and time.monotonic() < deadline:
        time.sleep(0.01)
    bus.emit(RunStarted(time=2))
    bus.emit(RunStarted(time=3))
    bus.flush()
    bus.emit(RunFinished(time=4))
    bus.close("finished")
    bus.join()
    assert observer.batches == [(1, True), (2, False), (1, True)]


def test_a_deferrable_flush_delivers_on_the_callers_thread_and_an_explicit_one_then_asks_for_the_rest():
    observer = Settling()
    bus = EventBus("r7b", [observer], flush_interval=3600)
    bus.start()
    bus.emit(RunStarted(time=1))
    assert bus.flush(deferrable=True) == 1  # what a run's start does: durable before user code runs
    assert bus.flush(deferrable=True) == 0  # nothing new, nothing delivered
    assert bus.flush() == 0  # nothing new, but what was put off is to be stored now: an empty batch
    assert bus.flush() == 0  # nothing put off since: nothing delivered
    bus.close("finished")
    bus.join()
    assert observer.batches == [(1, True), (0, False)]
    assert observer.threads == ["MainThread", "MainThread"]


def test_join_settles_here_once_and_the_exit_leaves_the_rest_to_the_next_reader():
    joined, left = Settling(), Settling()
    first, second = EventBus("r8", [joined]), EventBus("r9", [left])
    for bus in (first, second):
        bus.start()
        bus.emit(RunStarted(time=1))
        bus.close("finished")
    first.join()
    first.join()
    second.join(settle=False)  # what a command does before it reports the buses' errors
    eventbus.drain_buses(settle=False)  # what the process's exit does
    assert joined.settled == ["MainThread"]
    assert left.settled == []


def test_a_closed_bus_nobody_waits_for_settles_on_its_flusher(monkeypatch):
    monkeypatch.setattr(eventbus, "SETTLE_GRACE", 0.01)
    observer = Settling()
    bus = EventBus("r10", [observer])
    bus.start()
    bus.emit(RunStarted(time=1))
    bus.close("finished")
    assert observer.done.wait(30)
    assert observer.settled == ["rill-eventbus-r10"]
    bus.join()
    assert observer.settled == ["rill-eventbus-r10"]  # once
