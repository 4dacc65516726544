"""Window assigners and triggers as PyFlink's tests describe them."""

from __future__ import annotations

import pytest

from kernel.common import Time
from kernel.datastream.window import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
    CountWindow,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindows,
    NeverTrigger,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
)


def test_window_start_is_non_negative_modulo_even_for_negative_times():
    assert TimeWindow.get_window_start_with_offset(7, 0, 5) == 5
    assert TimeWindow.get_window_start_with_offset(-3, 0, 5) == -5
    assert TimeWindow.get_window_start_with_offset(7, 2, 5) == 7


def test_tumbling_windows():
    assigner = TumblingEventTimeWindows.of(Time.milliseconds(5))
    assert assigner.assign_windows("x", 4, None) == [TimeWindow(0, 5)]
    assert assigner.assign_windows("x", 5, None) == [TimeWindow(5, 10)]
    assert repr(assigner) == "TumblingEventTimeWindows(5, 0)"
    with pytest.raises(Exception, match="abs\\(offset\\) < size"):
        TumblingEventTimeWindows.of(Time.seconds(1), Time.seconds(1))
    with pytest.raises(Exception, match="Long.MIN_VALUE timestamp"):
        assigner.assign_windows("x", None, None)


def test_sliding_windows_include_negative_starts():
    assigner = SlidingEventTimeWindows.of(Time.milliseconds(5), Time.milliseconds(2))
    assert assigner.assign_windows("x", 1, None) == [TimeWindow(0, 5), TimeWindow(-2, 3)]
    assert assigner.assign_windows("x", 4, None) == [TimeWindow(4, 9), TimeWindow(2, 7), TimeWindow(0, 5)]


def test_session_windows_merge_touching_windows():
    assigner = EventTimeSessionWindows.with_gap(Time.milliseconds(5))
    windows = [w for ts in (0, 8, 4) for w in assigner.assign_windows("x", ts, None)]
    merges = []

    class Callback:
        def merge(self, to_merge, result):
            merges.append((sorted(to_merge), result))

    assigner.merge_windows(windows, Callback())
    assert merges == [([TimeWindow(0, 5), TimeWindow(4, 9), TimeWindow(8, 13)], TimeWindow(0, 13))]


class _ValueState:
    def __init__(self):
        self._value = None

    def value(self):
        return self._value

    def update(self, value):
        self._value = value


class _Context:
    def __init__(self):
        self.states = {}

    def get_state(self, descriptor):
        return self.states.setdefault(descriptor.name, _ValueState())


def test_count_windows_as_pyflink_assigns_them():
    tumbling = CountTumblingWindowAssigner.of(3)
    tumbling.open(_Context())
    assert [tumbling.assign_windows(v, None, None) for v in range(4)] == [
        [CountWindow(0)], [CountWindow(0)], [CountWindow(0)], [CountWindow(1)],
    ]
    sliding = CountSlidingWindowAssigner.of(2, 1)
    sliding.open(_Context())
    assert [sliding.assign_windows(v, None, None) for v in range(4)] == [
        [CountWindow(0)], [CountWindow(0), CountWindow(1)], [CountWindow(1), CountWindow(2)],
        [CountWindow(2), CountWindow(3)],
    ]


def test_default_triggers():
    assert isinstance(TumblingEventTimeWindows.of(Time.seconds(1)).get_default_trigger(), EventTimeTrigger)
    assert isinstance(GlobalWindows.create().get_default_trigger(), NeverTrigger)
    assert TimeWindow(0, 5).max_timestamp() == 4
