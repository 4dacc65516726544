"""The order Flink's in-memory sorter leaves records in (``runtime.operators.sort.QuickSort``).

Flink sorts a sort buffer with its QuickSort, which is not stable: records that compare equal
(a BATCH keyed input's records of one key and one timestamp) end up in the order its swaps leave
them, not in arrival order. The algorithm, as Flink runs it over a range ``[p, r)``: ranges
shorter than 13 by insertion sort; else the median of the first, middle and last record moved to
the front as pivot, a partition that gathers the records equal to the pivot at both ends and
then swaps them into the middle, recursion into the smaller side first; and a heap sort once
the recursion is deeper than ``4 * ceil(log2(n))``.

:func:`quick_sort_order` gives that order for a list of comparable sort keys.
"""

from __future__ import annotations

from typing import Any

__all__ = ["quick_sort_order"]


def quick_sort_order(keys: list[Any]) -> list[int]:
    """The indices of ``keys`` in the order Flink's QuickSort sorts them into. When no two keys
    are equal every sort gives that order, and Python's sort is used; else the keys' ranks are
    sorted the way Flink's QuickSort sorts."""
    n = len(keys)
    by_key = sorted(range(n), key=keys.__getitem__)
    distinct = sorted(set(keys)) if n else []
    if len(distinct) == n:
        return by_key
    rank = {key: i for i, key in enumerate(distinct)}
    items = [(rank[key], position) for position, key in enumerate(keys)]
    _quick_sort(items, 0, n, (n - 1).bit_length() << 2)
    return [position for _, position in items]


def _quick_sort(items: list[tuple[int, int]], p: int, r: int, depth: int) -> None:
    """Sort ``items[p:r]`` by their first field as Flink's QuickSort does (the second field, the
    record's position, only travels with it)."""
    while True:
        if r - p < 13:
            for i in range(p, r):
                j = i
                while j > p and items[j - 1][0] > items[j][0]:
                    items[j], items[j - 1] = items[j - 1], items[j]
                    j -= 1
            return
        depth -= 1
        if depth < 0:
            _heap_sort(items, p, r)
            return
        middle = (p + r) >> 1
        for a, b in ((middle, p), (middle, r - 1), (p, r - 1)):  # the pivot to the front
            if items[a][0] > items[b][0]:
                items[a], items[b] = items[b], items[a]
        pivot = items[p][0]
        i, j, ll, rr = p, r, p, r  # [p+1, ll] and [rr, r) collect the records equal to the pivot
        while True:
            i += 1
            while i < j:
                value = items[i][0]
                if value > pivot:
                    break
                if value == pivot:
                    ll += 1
                    if ll != i:
                        items[ll], items[i] = items[i], items[ll]
                i += 1
            j -= 1
            while j > i:
                value = items[j][0]
                if pivot > value:
                    break
                if value == pivot:
                    rr -= 1
                    if rr != j:
                        items[rr], items[j] = items[j], items[rr]
                j -= 1
            if i < j:
                items[i], items[j] = items[j], items[i]
            else:
                break
        j = i
        while ll >= p:  # the equal records from the front into the middle
            i -= 1
            items[ll], items[i] = items[i], items[ll]
            ll -= 1
        while rr < r:  # and from the back
            items[rr], items[j] = items[j], items[rr]
            rr += 1
            j += 1
        if i - p < r - j:
            _quick_sort(items, p, i, depth)
            p = j
        else:
            _quick_sort(items, j, r, depth)
            r = i


def _heap_sort(items: list[tuple[int, int]], p: int, r: int) -> None:
    """Flink's HeapSort of ``items[p:r]`` (a max-heap at 1-based offsets from ``p - 1``)."""
    n = r - p
    base = p - 1

    def down_heap(i: int, limit: int) -> None:
        child = i << 1
        while child < limit:
            if child + 1 < limit and items[base + child][0] < items[base + child + 1][0]:
                if items[base + i][0] < items[base + child + 1][0]:
                    items[base + i], items[base + child + 1] = items[base + child + 1], items[base + i]
                else:
                    return
                i = child + 1
            elif items[base + i][0] < items[base + child][0]:
                items[base + i], items[base + child] = items[base + child], items[base + i]
                i = child
            else:
                return
            child = i << 1

    top = 1 << (n.bit_length() - 1) if n else 0  # Integer.highestOneBit
    i = top
    while i > 1:
        for j in range(i >> 1, i):
            down_heap(j, n + 1)
        i >>= 1
    for i in range(r - 1, p, -1):
        items[p], items[i] = items[i], items[p]
        down_heap(1, i - p + 1)
