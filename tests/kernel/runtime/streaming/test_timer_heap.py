"""kernel.runtime.streaming.timer_heap: Flink's timer heap (HeapPriorityQueueSet), whose array decides
which of several timers with one timestamp fires first."""

from __future__ import annotations

import random

from kernel.runtime.streaming.timer_heap import TimerHeap


def drain(heap: TimerHeap) -> list[tuple]:
    return [tuple(heap.poll()[:3]) for _ in range(len(heap))]


def test_timers_of_one_timestamp_leave_as_the_heap_array_says():
    """Four timers at 5: the head goes first; the last one takes its place and, with no child
    strictly earlier, stays — and so on: a, d, c, b (neither registration order nor its reverse)."""
    heap = TimerHeap()
    for key in "abcd":
        assert heap.add(5, key, None)
    assert drain(heap) == [(5, "a", None), (5, "d", None), (5, "c", None), (5, "b", None)]


def test_a_timer_is_registered_once_and_a_deleted_one_leaves_at_once():
    heap = TimerHeap()
    assert heap.add(7, "a", 1) and not heap.add(7, "a", 1) and heap.add(7, "a", 2) and heap.add(3, "b", 1)
    assert heap.remove(7, "a", 1) and not heap.remove(7, "a", 1) and not heap.remove(9, "z", 1)
    assert len(heap) == 2 and heap.head_time() == 3
    assert drain(heap) == [(3, "b", 1), (7, "a", 2)] and heap.head_time() is None


def test_timers_leave_in_timestamp_order_whatever_was_added_and_deleted():
    rng = random.Random(3)
    for _ in range(200):
        heap, live, polled = TimerHeap(), set(), []
        for _ in range(rng.randrange(1, 200)):
            timer = (rng.randrange(10), rng.randrange(6), None)
            choice = rng.random()
            if choice < 0.6:
                assert heap.add(*timer) == (timer not in live)
                live.add(timer)
            elif choice < 0.8:
                assert heap.remove(*timer) == (timer in live)
                live.discard(timer)
            elif live:
                head = tuple(heap.poll()[:3])
                assert head[0] == min(t for t, _, _ in live)
                live.discard(head)
                polled.append(head)
        rest = drain(heap)
        assert sorted(rest) == sorted(live) and [t for t, _, _ in rest] == sorted(t for t, _, _ in live)


def test_adding_the_timers_in_array_order_rebuilds_the_same_heap():
    """What a checkpoint keeps: restored in array order, the heap (so the order of ties) is the same."""
    rng = random.Random(8)
    heap = TimerHeap()
    for _ in range(300):
        heap.add(rng.randrange(20), rng.randrange(30), None)
        if rng.random() < 0.3:
            heap.poll()
    rebuilt = TimerHeap()
    for timestamp, key, namespace, _ in heap:
        rebuilt.add(timestamp, key, namespace)
    assert [timer[:3] for timer in rebuilt] == [timer[:3] for timer in heap]
    assert drain(rebuilt) == drain(heap)
