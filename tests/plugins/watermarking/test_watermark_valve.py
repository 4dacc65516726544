"""The StatusWatermarkValve, case by case: seed 002 and reference §6.2 (current Flink)."""

from __future__ import annotations

import pytest

from plugins.watermarking.valve import StatusWatermarkValve

MIN = -(1 << 63)


class Recorder:
    def __init__(self) -> None:
        self.out: list[tuple[str, object]] = []

    def emit_watermark(self, timestamp: int) -> None:
        self.out.append(("wm", timestamp))

    def emit_watermark_status(self, idle: bool) -> None:
        self.out.append(("status", "IDLE" if idle else "ACTIVE"))


class Valve:
    """Drive a valve with ``wm(channel, ts)``, ``idle(channel)``, ``active(channel)``; each
    returns what that one input made the valve emit."""

    def __init__(self, channels: int) -> None:
        self.valve = StatusWatermarkValve(channels)
        self.recorder = Recorder()

    def _take(self) -> list:
        out, self.recorder.out = self.recorder.out, []
        return out

    def wm(self, channel: int, timestamp: int) -> list:
        self.valve.input_watermark(timestamp, channel, self.recorder)
        return self._take()

    def idle(self, channel: int) -> list:
        self.valve.input_watermark_status(True, channel, self.recorder)
        return self._take()

    def active(self, channel: int) -> list:
        self.valve.input_watermark_status(False, channel, self.recorder)
        return self._take()


def test_initial_state_every_channel_at_min_active_and_aligned():
    valve = StatusWatermarkValve(3)
    assert valve.watermarks == [MIN, MIN, MIN]
    assert valve.active == [True, True, True] and valve.aligned == [True, True, True]
    assert valve.last_output_watermark == MIN and valve.idle is False
    with pytest.raises(ValueError):
        StatusWatermarkValve(0)


def test_output_is_the_minimum_over_aligned_channels_once_every_channel_has_one():
    v = Valve(2)
    assert v.wm(0, 5) == []  # channel 1 still at MIN
    assert v.wm(1, 3) == [("wm", 3)]
    assert v.wm(1, 7) == [("wm", 5)]
    assert v.wm(0, 10) == [("wm", 7)]
    assert v.wm(1, 12) == [("wm", 10)]


def test_a_single_channel_forwards_every_increase():
    v = Valve(1)
    assert [v.wm(0, t) for t in (1, 2, 2, 5)] == [[("wm", 1)], [("wm", 2)], [], [("wm", 5)]]


def test_regressions_and_repeats_on_a_channel_are_ignored():
    v = Valve(2)
    v.wm(0, 10)
    assert v.wm(1, 10) == [("wm", 10)]
    assert v.wm(0, 8) == []  # lower than the channel's watermark: ignored
    assert v.valve.watermarks[0] == 10
    assert v.wm(1, 11) == []  # min(10, 11) = 10, not above the last output
    assert v.wm(0, 10) == []
    assert v.wm(0, 11) == [("wm", 11)]


def test_an_idle_channel_no_longer_holds_the_minimum_back():
    v = Valve(2)
    v.wm(0, 5)
    assert v.wm(1, 3) == [("wm", 3)]
    # channel 1 held the minimum: going idle re-derives it over the aligned channels
    assert v.idle(1) == [("wm", 5)]
    assert v.valve.aligned == [True, False]
    assert v.wm(1, 9) == []  # watermarks of an idle channel are ignored
    assert v.valve.watermarks[1] == 3
    assert v.wm(0, 6) == [("wm", 6)]


def test_a_channel_going_idle_above_the_minimum_changes_nothing():
    v = Valve(3)
    v.wm(0, 5)
    v.wm(1, 8)
    assert v.wm(2, 6) == [("wm", 5)]
    assert v.idle(1) == []  # 8 is not the last output: the minimum is unchanged
    assert v.wm(0, 9) == [("wm", 6)]


def test_statuses_that_do_not_change_a_channel_are_ignored():
    v = Valve(2)
    assert v.active(0) == []
    assert v.idle(0) == []
    assert v.idle(0) == []
    assert v.valve.active == [False, True]


def test_the_last_channel_going_idle_flushes_the_maximum_then_emits_idle():
    v = Valve(2)
    v.wm(0, 10)
    assert v.wm(1, 4) == [("wm", 4)]
    assert v.idle(0) == []  # 10 is not the minimum
    assert v.idle(1) == [("wm", 10), ("status", "IDLE")]
    assert v.valve.idle is True


def test_while_idle_the_valve_ignores_watermarks():
    v = Valve(1)
    v.wm(0, 3)
    assert v.idle(0) == [("status", "IDLE")]  # the maximum, 3, was already emitted
    assert v.wm(0, 7) == []


def test_the_all_idle_flush_is_unconditional_in_current_flink():
    """Seed 002 flushed only if the channel going idle last held the last output; since
    FLINK-40475 the maximum over all channels is flushed whenever everything is idle."""
    v = Valve(3)
    v.wm(0, 5)
    v.wm(1, 5)
    assert v.wm(2, 5) == [("wm", 5)]
    assert v.idle(0) == []
    assert v.wm(1, 20) == []
    assert v.idle(1) == []
    assert v.wm(2, 10) == [("wm", 10)]
    assert v.active(0) == []  # 5 < 10: active but unaligned
    assert v.valve.aligned == [False, False, True]
    assert v.idle(2) == []  # channel 0 is still active, though aligned with nothing
    # channel 0 (watermark 5, not the last output 10) goes idle last: the seed's valve would
    # emit only IDLE; current Flink flushes the maximum, 20, first
    assert v.idle(0) == [("wm", 20), ("status", "IDLE")]


def test_reactivation_re_derives_the_minimum_in_current_flink():
    """Seed 002: idle -> active only realigned the channel, so output could stall until its
    next watermark; current Flink re-derives the minimum right away."""
    v = Valve(3)
    v.wm(0, 5)
    v.wm(1, 5)
    assert v.wm(2, 5) == [("wm", 5)]
    assert v.idle(0) == []
    assert v.wm(1, 20) == []
    assert v.idle(1) == []  # above the minimum
    assert v.wm(2, 10) == [("wm", 10)]
    assert v.active(0) == []  # unaligned: 5 < 10
    assert v.idle(2) == []  # no aligned channel left: nothing to emit
    assert v.active(1) == [("wm", 20)]  # 20 >= 10: aligned again, and now the minimum


def test_reactivating_an_idle_valve_emits_active_before_any_watermark():
    v = Valve(2)
    v.wm(0, 10)
    assert v.wm(1, 12) == [("wm", 10)]
    assert v.idle(0) == [("wm", 12)]
    assert v.idle(1) == [("status", "IDLE")]  # the maximum, 12, is out already
    assert v.active(0) == [("status", "ACTIVE")]  # 10 < 12: unaligned, no watermark
    assert v.valve.aligned == [False, False]
    assert v.wm(0, 11) == []  # still below the last output
    assert v.wm(0, 13) == [("wm", 13)]  # caught up: aligned again
    assert v.valve.aligned == [True, False]


def test_an_unaligned_channel_never_makes_the_output_go_back():
    v = Valve(2)
    v.wm(0, 100)
    v.wm(1, 50)
    assert v.idle(1) == [("wm", 100)]
    assert v.active(1) == []
    assert v.wm(1, 60) == []  # below 100: unaligned channels do not count
    assert v.wm(0, 120) == [("wm", 120)]
    assert v.wm(1, 130) == []  # aligned again at 130, min(120, 130) = 120 already out
    assert v.wm(0, 140) == [("wm", 130)]


def test_all_active_but_unaligned_emits_nothing():
    v = Valve(2)
    v.wm(0, 10)
    v.wm(1, 10)
    v.idle(0)
    v.wm(1, 30)
    v.active(0)  # 10 < 30: unaligned
    assert v.idle(1) == []
    assert v.valve.aligned == [False, False]
    assert v.valve.last_output_watermark == 30
