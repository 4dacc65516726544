"""The order Flink's in-memory QuickSort leaves records in (``kernel.runtime.streaming.quicksort``)."""

from __future__ import annotations

import random

from kernel.runtime.streaming.quicksort import _quick_sort, quick_sort_order


def test_equal_keys_are_left_in_the_order_flinks_quicksort_leaves_them():
    """The sort keys of a BATCH job's 17 records (key bytes ranked, no timestamps): PyFlink 2.3
    printed them in this order (tests/kernel/datastream/test_pyflink_outputs.py, BATCH keys)."""
    ranks = [3, 5, 0, 7, 9, 4, 6, 11, 3, 7, 5, 10, 0, 12, 2, 1, 8]
    assert quick_sort_order(ranks) == [12, 2, 15, 14, 0, 8, 5, 10, 1, 6, 9, 3, 16, 4, 11, 7, 13]


def test_fewer_than_13_records_keep_their_order_and_distinct_keys_sort_plainly():
    assert quick_sort_order([1, 0, 1, 0, 1]) == [1, 3, 0, 2, 4]  # insertion sort: stable
    keys = random.Random(3).sample(range(1000), 200)
    assert quick_sort_order(keys) == sorted(range(200), key=keys.__getitem__)
    assert quick_sort_order([]) == []


def test_many_ties_and_the_heap_sort_fallback_still_sort():
    rng = random.Random(5)
    keys = [rng.randrange(4) for _ in range(500)]
    order = quick_sort_order(keys)
    assert sorted(order) == list(range(500)) and [keys[i] for i in order] == sorted(keys)
    items = [(rng.randrange(10), i) for i in range(100)]
    _quick_sort(items, 0, 100, 0)  # no depth left: Flink's heap sort
    assert [k for k, _ in items] == sorted(k for k, _ in items)
