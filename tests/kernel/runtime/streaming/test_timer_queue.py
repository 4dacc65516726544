"""kernel.runtime.streaming.timer_queue: timers bucketed by timestamp — timestamp order, and the timers
of one timestamp in the order registered (Flink leaves that order open)."""

from __future__ import annotations

import random

from kernel.runtime.streaming.timer_queue import DistinctTimerQueue, TimerQueue, in_firing_order


def drain(queue, limit: int = 1 << 62) -> list[tuple]:
    return [(timestamp, key, namespace) for timestamp, timers in queue.take_buckets(limit)
            for key, namespace in timers]


def test_timers_fire_by_timestamp_and_in_registration_order_within_one():
    queue = TimerQueue()
    for timestamp, key in ((20, "a"), (10, "b"), (20, "c"), (10, "a"), (30, "b"), (20, "b")):
        assert queue.add(timestamp, key, None)
    assert not queue.add(20, "c", None) and len(queue) == 6 and queue.head_time() == 10
    assert drain(queue, 20) == [(10, "b", None), (10, "a", None), (20, "a", None), (20, "c", None), (20, "b", None)]
    assert len(queue) == 1 and drain(queue) == [(30, "b", None)] and queue.head_time() is None


def test_a_deleted_timer_registered_again_goes_behind_the_others_of_its_timestamp():
    queue = TimerQueue()
    for key in "abc":
        queue.add(5, key, "w")
    assert queue.remove(5, "a", "w") and not queue.remove(5, "a", "w") and not queue.remove(6, "b", "w")
    queue.add(5, "a", "w")
    assert drain(queue) == [(5, "b", "w"), (5, "c", "w"), (5, "a", "w")]


def test_emptied_timestamps_do_not_pile_up():
    """A timeout moved at every record: the heap of timestamps is rebuilt once most of it is
    timestamps whose timers were all deleted."""
    queue = TimerQueue()
    for i in range(10_000):
        if i:
            queue.remove(1000 + i - 1, "k", None)
        queue.add(1000 + i, "k", None)
    assert len(queue) == 1 and len(queue.buckets) == 1 and len(queue.times) <= 2 * 64 + 2
    assert queue.head_time() == 10_999 and drain(queue) == [(10_999, "k", None)]


def test_the_same_order_as_a_reference_model_under_random_use():
    rng = random.Random(3)
    queue, model = TimerQueue(), []  # model: registered (timestamp, key) in order
    for _ in range(3000):
        timestamp, key = rng.randrange(40), rng.randrange(8)
        if rng.random() < 0.3:
            assert queue.remove(timestamp, key, None) == ((timestamp, key) in model)
            if (timestamp, key) in model:
                model.remove((timestamp, key))
        else:
            assert queue.add(timestamp, key, None) == ((timestamp, key) not in model)
            if (timestamp, key) not in model:
                model.append((timestamp, key))
        if rng.random() < 0.05:
            limit = rng.randrange(40)
            due = sorted((t for t in model if t[0] <= limit), key=lambda t: t[0])  # stable: registration order
            assert drain(queue, limit) == [(t, k, None) for t, k in due]
            model = [t for t in model if t[0] > limit]
        assert len(queue) == len(model)


def test_a_view_lists_the_timers_in_firing_order_and_rebuilds_the_queue():
    for queue in (TimerQueue(), DistinctTimerQueue()):
        for timestamp, key in ((7, "x"), (3, "y"), (7, "z"), (3, "x")):
            queue.add(timestamp, key, "n")
        view = queue.view()
        queue.add(1, "late", "n")  # after the view: not in it
        listed = in_firing_order(view)
        assert listed == [(3, "y", "n"), (3, "x", "n"), (7, "x", "n"), (7, "z", "n")]
        rebuilt = type(queue)()
        for timestamp, key, namespace in listed:
            rebuilt.add(timestamp, key, namespace)
        assert drain(rebuilt) == listed


def test_distinct_timers_fire_by_timestamp_then_as_added():
    queue = DistinctTimerQueue()
    for timestamp, key in ((9, "a"), (4, "b"), (9, "c"), (4, "d")):
        queue.add(timestamp, key, 0)
    assert len(queue) == 4 and queue.head_time() == 4
    assert queue.take_buckets(8) == [(4, [("b", 0), ("d", 0)])]
    assert drain(queue) == [(9, "a", 0), (9, "c", 0)] and queue.head_time() is None
