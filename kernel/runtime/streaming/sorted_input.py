"""The sorted inputs of a keyed operator in BATCH execution (Flink's ``SortingDataInput`` and
``MultiInputSortingDataInput``).

A keyed operator in BATCH reads its keyed inputs sorted: their records are held until the
operator's data ended, then handed over key by key — keys in the order of their serialized
bytes (``kernel.jvm.keybytes``), each key's records in timestamp order (no timestamp counts as
the smallest; records equal in both are left in the order Flink's QuickSort leaves them:
``kernel.runtime.streaming.quicksort``) — and after each key the operator's ``end_key``
fires what that key has pending (Flink's batch timer service fires a key's timers when the next
key comes). Watermarks are held too: the largest goes in after the last key. So the results of a
BATCH job come key after key, in the order Flink gives them. Keys of a type whose serialized
form rill does not know (``keybytes`` refuses it) come in the order they first arrived.

The two keyed inputs of a connected stream are merged as Flink merges them: a priority queue
holds the next record of each input, ordered by (key, timestamp); the input whose data ended
first put its head in first, and a record equal to the head in the queue goes after it (Java's
``PriorityQueue``), so equal records alternate between the inputs. An input ends first when it
has fewer records (Flink's task reads its inputs one record at a time, in turn, input 0 first).
A broadcast input is not sorted: it goes to the operator as it comes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

from kernel.clock import MIN_LONG
from kernel.jvm.javavalues import pickled_bytes
from kernel.jvm.keybytes import key_sort_bytes
from kernel.runtime.streaming.quicksort import quick_sort_order

if TYPE_CHECKING:
    from kernel.runtime.streaming.operators.base import StreamOperator

#: one input's records of one key: (sort key, input index, values, timestamps)
Run = tuple[Any, int, list, list]


class SortingDataInput:
    """Holds a keyed head's keyed inputs' records and its watermarks until its data ended."""

    def __init__(self, head: StreamOperator) -> None:
        self.head = head
        keys = head.spec.keys or (None,)
        #: per input: the keys of a batch of its records, None for an input not sorted
        self._keys_of = [k.keys_of if k is not None else None for k in keys]
        key_type = next(k for k in keys if k is not None).key_type
        self._sort_bytes: Callable[[Any], Any]
        try:
            self._sort_bytes = key_sort_bytes(key_type)
        except TypeError:
            self._sort_bytes = _arrival_order()
        self._values: list[list] = [[] for _ in keys]
        self._timestamps: list[list] = [[] for _ in keys]
        self._watermarks: list[int | None] = [None for _ in keys]

    def sorts(self, index: int) -> bool:
        return self._keys_of[index] is not None

    def add(self, values: list, timestamps: list | None, index: int = 0) -> None:
        self._values[index].extend(values)
        self._timestamps[index].extend(timestamps if timestamps is not None else [None] * len(values))

    def hold_watermark(self, timestamp: int, index: int = 0) -> None:
        held = self._watermarks[index]
        if held is None or timestamp > held:
            self._watermarks[index] = timestamp

    def end_of_data(self) -> None:
        """Hand the records to the head, key by key, then each input's largest watermark."""
        head = self.head
        processes = (head.process_batch,) if len(self._keys_of) == 1 else (head.process_batch1, head.process_batch2)
        for index, values, timestamps, key_ends in self.runs():
            processes[index](values, timestamps)
            if key_ends:
                head.end_key()
        watermarks, self._watermarks = self._watermarks, [None for _ in self._watermarks]
        for index, watermark in enumerate(watermarks):
            if watermark is not None:
                if len(watermarks) == 1:
                    head.process_watermark(watermark)
                else:
                    head.process_watermark_input(index, watermark)

    def runs(self) -> Iterator[tuple[int, list, list | None, bool]]:
        """The records held, in sorted order, as runs of one input's records of one key:
        ``(input index, values, timestamps, whether the key's records end with them)``."""
        if len(self._keys_of) == 1:
            for _, _, values, timestamps in self._runs(0):
                yield 0, values, _timestamps_or_none(timestamps), True
            return
        previous = None
        for run in self._merged_runs():
            if previous is not None:
                yield previous[1], previous[2], previous[3], previous[0] != run[0]
            previous = run
        if previous is not None:
            yield previous[1], previous[2], previous[3], True

    def _runs(self, index: int) -> list[Run]:
        """Input ``index``'s records held, one run per key, in sorted order."""
        values, timestamps = self._values[index], self._timestamps[index]
        self._values[index], self._timestamps[index] = [], []
        if not values:
            return []
        sort_bytes = self._sort_bytes
        known: dict[Any, Any] = {}  # str and int keys: their sort bytes, computed once
        groups = []
        for key in self._keys_of[index](values):
            kind = type(key)
            if kind is str or kind is int:
                group = known.get(key)
                if group is None:
                    group = known[key] = sort_bytes(key)
            else:
                group = sort_bytes(key)
            groups.append(group)
        order = quick_sort_order([(group, MIN_LONG if ts is None else ts) for group, ts in zip(groups, timestamps)])
        runs: list[Run] = []
        start = 0
        for end in range(1, len(order) + 1):
            if end == len(order) or groups[order[end]] != groups[order[start]]:
                run = order[start:end]
                runs.append((groups[run[0]], index, [values[i] for i in run], [timestamps[i] for i in run]))
                start = end
        return runs

    def _merged_runs(self) -> Iterator[tuple[Any, int, list, list | None]]:
        """Both inputs' records merged as Flink's queue of heads merges them, as runs of one
        input's consecutive records: ``(sort key, input index, values, timestamps)``."""
        inputs = [index for index in range(len(self._keys_of)) if self.sorts(index)]
        records = {index: list(_records(self._runs(index))) for index in inputs}
        ended_first = sorted(inputs, key=lambda index: len(records[index]))  # stable: input 0 on a tie
        position = dict.fromkeys(inputs, 0)
        queue: list[tuple[tuple[Any, int], int]] = []  # (order, input): Java's PriorityQueue of <= 2

        def push(index: int) -> None:
            at = position[index]
            if at < len(records[index]):
                position[index] = at + 1
                entry = (records[index][at][0], index)
                if queue and entry[0] < queue[0][0]:
                    queue.insert(0, entry)
                else:
                    queue.append(entry)

        for index in ended_first:
            push(index)
        run: list = []
        while queue:
            (order, index) = queue.pop(0)
            _, value, timestamp = records[index][position[index] - 1]
            if run and (run[0] != order[0] or run[1] != index):
                yield run[0], run[1], run[2], _timestamps_or_none(run[3])
                run = []
            if not run:
                run = [order[0], index, [], []]
            run[2].append(value)
            run[3].append(timestamp)
            push(index)
        if run:
            yield run[0], run[1], run[2], _timestamps_or_none(run[3])


def _records(runs: list[Run]) -> Iterator[tuple[tuple[Any, int], Any, Any]]:
    """The records of sorted runs one by one: ((sort key, timestamp), value, timestamp)."""
    for group, _, values, timestamps in runs:
        for value, timestamp in zip(values, timestamps):
            yield (group, MIN_LONG if timestamp is None else timestamp), value, timestamp


def _timestamps_or_none(timestamps: list) -> list | None:
    return timestamps if any(ts is not None for ts in timestamps) else None


def _arrival_order() -> Callable[[Any], int]:
    """For keys rill cannot serialize as Flink does: each key sorts where it first came."""
    first: dict[bytes, int] = {}

    def order(key: Any) -> int:
        return first.setdefault(pickled_bytes(key), len(first))

    return order
