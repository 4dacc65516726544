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


class _Reducing:
    def __init__(self, reduce):
        self.reduce, self.value = reduce, None

    def get(self):
        return self.value

    def add(self, value):
        self.value = value if self.value is None else self.reduce(self.value, value)

    def clear(self):
        self.value = None


class _TriggerContext:
    """Timers and one reducing state per window, as the WindowOperator gives a trigger."""

    def __init__(self, watermark=-(1 << 63), now=0):
        self.watermark, self.now = watermark, now
        self.timers: set = set()
        self.states: dict = {}

    def get_current_watermark(self):
        return self.watermark

    def get_current_processing_time(self):
        return self.now

    def register_event_time_timer(self, time):
        self.timers.add(("event", time))

    def register_processing_time_timer(self, time):
        self.timers.add(("processing", time))

    def delete_event_time_timer(self, time):
        self.timers.discard(("event", time))

    def delete_processing_time_timer(self, time):
        self.timers.discard(("processing", time))

    def get_partitioned_state(self, descriptor):
        return self.states.setdefault(descriptor.name, _Reducing(descriptor.get_reduce_function()))


def test_continuous_event_time_trigger_fires_every_interval_and_at_the_end():
    from kernel.datastream.window import ContinuousEventTimeTrigger, TimeWindow, TriggerResult

    trigger, window, ctx = ContinuousEventTimeTrigger.of(Time.milliseconds(3)), TimeWindow(0, 10), _TriggerContext()
    assert trigger.on_element("a", 1, window, ctx) is TriggerResult.CONTINUE
    assert ctx.timers == {("event", 9), ("event", 3)}  # the window's end, the first interval
    trigger.on_element("b", 2, window, ctx)
    assert ctx.timers == {("event", 9), ("event", 3)}  # already scheduled
    assert trigger.on_event_time(3, window, ctx) is TriggerResult.FIRE
    assert ("event", 6) in ctx.timers
    assert trigger.on_event_time(5, window, ctx) is TriggerResult.CONTINUE  # not its firing time
    assert trigger.on_event_time(6, window, ctx) is TriggerResult.FIRE
    assert ctx.get_partitioned_state(trigger.state_desc).get() == 9  # capped at the window's end
    assert trigger.on_event_time(9, window, ctx) is TriggerResult.FIRE
    trigger.clear(window, ctx)
    assert ("event", 9) not in ctx.timers and ctx.get_partitioned_state(trigger.state_desc).get() is None
    ctx.watermark = 9
    assert trigger.on_element("late", 4, window, ctx) is TriggerResult.FIRE  # the window is complete
    assert repr(trigger) == "ContinuousEventTimeTrigger(3)" and trigger.can_merge()


def test_continuous_processing_time_trigger_fires_every_interval():
    from kernel.datastream.window import ContinuousProcessingTimeTrigger, TimeWindow, TriggerResult

    trigger, window = ContinuousProcessingTimeTrigger.of(Time.milliseconds(4)), TimeWindow(0, 100)
    ctx = _TriggerContext(now=5)
    assert trigger.on_element("a", None, window, ctx) is TriggerResult.CONTINUE
    assert ctx.timers == {("processing", 8)}
    assert trigger.on_processing_time(8, window, ctx) is TriggerResult.FIRE
    assert ctx.timers == {("processing", 8), ("processing", 12)}
    assert trigger.on_event_time(12, window, ctx) is TriggerResult.CONTINUE
    trigger.clear(window, ctx)
    assert ("processing", 12) not in ctx.timers
    assert repr(trigger) == "ContinuousProcessingTimeTrigger(4)"
