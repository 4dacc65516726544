from __future__ import annotations

import threading

import pytest

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
