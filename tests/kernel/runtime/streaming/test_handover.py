"""Hand-over points (kernel/runtime/streaming/handover.py): what an operator produced of the batch in
progress is handed on early, in order, exactly once; the rest at the end."""

from __future__ import annotations

import threading
import time

import pytest

from kernel.runtime.streaming.handover import HandOver


class Received:
    def __init__(self) -> None:
        self.main: list = []
        self.side: list = []

    def collect(self, values, timestamps):
        self.main.append((list(values), None if timestamps is None else list(timestamps)))

    def collect_side(self, tag_id, values, timestamps):
        self.side.append((tag_id, list(values), None if timestamps is None else list(timestamps)))


def test_a_mapped_batch_hands_on_what_is_ready_then_the_rest_once_each():
    received = Received()
    handover = HandOver(received.collect)
    out: list = []
    timestamps = [10, 11, 12, 13, 14]
    handover.mapped(out, timestamps)
    out.extend(["a", "b"])
    handover.relay()
    handover.relay()  # nothing new: nothing handed on
    out.append("c")
    handover.relay()
    out.extend(["d", "e"])
    handover.end()
    assert received.main == [(["a", "b"], [10, 11]), (["c"], [12]), (["d", "e"], [13, 14])]
    handover.relay()  # closed
    assert len(received.main) == 3


def test_an_untouched_batch_goes_on_as_it_is():
    seen = []
    handover = HandOver(lambda values, timestamps: seen.append((values, timestamps)))
    out, timestamps = [], [1, 2]
    handover.mapped(out, timestamps)
    out.extend([5, 6])
    handover.end()
    assert seen[0][0] is out and seen[0][1] is timestamps  # no copies without a relay


def test_a_filter_hands_on_the_kept_values_of_the_inputs_decided():
    received = Received()
    handover = HandOver(received.collect)
    keep: list = []
    handover.selected(keep, ["a", "b", "c", "d"], [1, 2, 3, 4])
    keep.extend([True, False])
    handover.relay()
    keep.extend([False])
    handover.relay()  # nothing kept among the new ones: nothing handed on
    keep.append(True)
    handover.end()
    assert received.main == [(["a"], [1]), (["d"], [4])]


def test_a_growing_batch_gives_the_values_of_the_input_in_progress_its_timestamp():
    """A flat_map's generator yielded values of input 1 and blocks before its last one: those
    carry input 1's timestamp, although its timestamps are not written yet."""
    received = Received()
    handover = HandOver(received.collect)
    out: list = []
    out_ts: list = []
    timestamps = [100, 200, 300]
    positions = iter(timestamps)
    handover.grown(out, out_ts, timestamps, positions)
    next(positions)  # input 0: two values
    out.extend(["a0", "a1"])
    out_ts.extend([100, 100])
    next(positions)  # input 1: one value so far
    out.append("b0")
    handover.relay()
    out.append("b1")
    out_ts.extend([200, 200])
    next(positions)
    out.append("c0")
    out_ts.append(300)
    handover.end()
    assert received.main == [(["a0", "a1", "b0"], [100, 100, 200]), (["b1", "c0"], [200, 300])]


def test_results_hand_on_main_and_side_outputs_of_complete_entries():
    received = Received()
    handover = HandOver(received.collect, received.collect_side)
    values: list = []
    timestamps: list = []
    side: dict = {}
    handover.results(values, timestamps, side)
    values.append("x")
    timestamps.append(1)
    side["late"] = (["l1"], [5])
    values.append("y")  # its timestamp is not appended yet: not complete
    handover.relay()
    timestamps.append(2)
    side["late"][0].append("l2")
    side["late"][1].append(6)
    handover.end()
    assert received.main == [(["x"], [1]), (["y"], [2])]
    assert received.side == [("late", ["l1"], [5]), ("late", ["l2"], [6])]


def test_an_error_of_a_relay_is_raised_by_the_end_in_the_operators_thread():
    def target(values, timestamps):
        raise ValueError(f"bad {values}")

    handover = HandOver(target)
    out: list = []
    handover.mapped(out, None)
    out.append(1)
    handover.relay()  # raises nothing here
    out.append(2)
    handover.relay()  # relays stop at the first error
    with pytest.raises(ValueError, match=r"bad \[1\]"):
        handover.end()


def test_a_relay_in_another_thread_finishes_before_the_rest_is_handed_on():
    """The flusher claims what is ready while the operator's thread is busy; the relay's
    downstream work is slow; the operator's end waits for it, so the order holds."""
    order: list = []

    def target(values, timestamps):
        if values == [1, 2]:
            time.sleep(0.2)
        order.append(list(values))

    handover = HandOver(target)
    out: list = []
    handover.mapped(out, None)
    out.extend([1, 2])
    chunk = handover.claim()
    assert handover.claim() is None  # claimed: nobody else relays it meanwhile

    def relay():
        try:
            handover.pass_on(chunk)
        finally:
            handover.lock.release()

    thread = threading.Thread(target=relay)
    thread.start()
    out.append(3)
    handover.end()
    thread.join()
    assert order == [[1, 2], [3]]
