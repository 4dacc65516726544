"""The floors of (b) and (d): the per-batch passes rill makes, with no runtime at all.

    python scripts/bench_floors.py [--records 1000000] [--rounds 5]

For the rolling keyed reduce (b) of ``bench_runtime.py`` and the WindowWordCount (d) of
``bench_windows.py``, three sides over the same records, alternating, in this thread:

* ``loop``: the plain loop the benchmarks compare rill with (one pass, every step per record);
* ``passes``: the passes rill makes over each batch of 1,024 records (the map over the batch, the
  PyFlink coder's round trip at the typed boundary, the keys and their check, the reduce or the
  window step, the coder's round trip of the results, the sink), written as plain loops in one
  function: no task, thread, network buffer, mailbox, watermark valve, metric or slot wait;
* ``unchecked``: the same passes without the coders' round trips.

``passes`` is what rill's design costs before its runtime costs anything: the ratio rill's
wall time cannot go under while it keeps PyFlink's type conversions and its batches. The three
sides' outputs are compared before anything is printed.
"""

from __future__ import annotations

import statistics
import time
from itertools import repeat
from typing import Any, Callable

import bench_runtime as reduce_bench
import bench_windows as window_bench
from benchkit import DISORDER_MS, arguments, load, timed_words, zipf_words

BATCH = 1_024


def mapped_and_keyed(to_pair: Callable[[Any], Any], first: Callable[[Any], Any], checked: bool
                     ) -> tuple[Callable[[list], tuple[list, list]], Callable[[list], list]]:
    """(a batch -> its (word, 1) pairs and their keys, the round trip of results), with the
    round trip of a (STRING, INT) tuple and the test of STRING keys as rill builds them
    (``checked``), or without."""
    from kernel.common import Types
    from kernel.jvm.coders import _kept, batch_conversion
    from kernel.jvm.unchanged import batch_test

    convert = batch_conversion(Types.TUPLE([Types.STRING(), Types.INT()]))
    keys_unchanged = batch_test(Types.STRING(), _kept)

    def pairs_and_keys(batch: list) -> tuple[list, list]:
        pairs = list(map(to_pair, batch))
        if checked:
            pairs = convert(pairs)
        keys = list(map(first, pairs))
        if checked and not keys_unchanged(keys):
            raise AssertionError("a key is not a str")
        return pairs, keys

    return pairs_and_keys, (convert if checked else _as_they_are)


def _as_they_are(values: list) -> list:
    return values


def reduce_passes(records: list, sink: Callable[[Any], None], checked: bool) -> None:
    add = reduce_bench.add
    pairs_and_keys, convert = mapped_and_keyed(reduce_bench.to_pair, reduce_bench.first, checked)
    state: dict = {}
    get = state.get
    for i in range(0, len(records), BATCH):
        pairs, keys = pairs_and_keys(records[i:i + BATCH])
        out: list = []
        append = out.append
        for key, value in zip(keys, pairs):
            current = get(key)
            if current is not None:
                value = add(current, value)
            state[key] = value
            append(value)
        for value in convert(out):
            sink(value)


def window_passes(records: list, sink: Callable[[Any], None], checked: bool) -> None:
    event_time, add = window_bench.event_time, window_bench.add
    size, min_long = window_bench.WINDOW, window_bench.MIN_LONG
    pairs_and_keys, convert = mapped_and_keyed(window_bench.to_pair, window_bench.first, checked)
    windows: dict = {}
    get = windows.get
    due: dict = {}  # window end -> its (key, start) slots
    watermark = highest = min_long

    def fire(until: int) -> None:
        for end in sorted(end for end in due if end <= until):
            for value in convert([windows.pop(slot) for slot in due.pop(end)]):
                sink(value)

    for i in range(0, len(records), BATCH):
        batch = records[i:i + BATCH]
        timestamps = list(map(event_time, batch, repeat(min_long)))
        highest = max(highest, max(timestamps))
        pairs, keys = pairs_and_keys(batch)
        created: list = []
        new = created.append
        for slot, value in zip(zip(keys, [ts - ts % size for ts in timestamps]), pairs):
            contents = get(slot)
            if contents is None:
                windows[slot] = value
                new(slot)
            else:
                windows[slot] = add(contents, value)
        for slot in created:
            end = slot[1] + size - 1
            bucket = due.get(end)
            if bucket is None:
                due[end] = [slot]
            else:
                bucket.append(slot)
        if highest - DISORDER_MS - 1 > watermark:
            watermark = highest - DISORDER_MS - 1
            fire(watermark)
    fire(1 << 63)


def latest() -> tuple[Callable[[Any], None], Callable[[], Any]]:
    return reduce_bench.latest_sink()


def rows() -> tuple[Callable[[Any], None], Callable[[], Any]]:
    found: list = []
    return found.append, lambda: sorted(found)


FLOORS = {
    "(b) rolling keyed reduce": (zipf_words, reduce_bench.loop, reduce_passes, latest),
    "(d) window word count": (timed_words, window_bench.loop_reduce, window_passes, rows),
}


def timed(side: Callable[[], None]) -> tuple[float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    side()
    return time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    args = arguments(__doc__.splitlines()[0]).parse_args()
    print(f"{__doc__.splitlines()[0]}\n  {args.records:,} records, median of {args.rounds} alternating runs "
          f"(load {load()})")
    for name, (make, loop, passes, sink_of) in FLOORS.items():
        records = make(args.records)
        sides: dict[str, Callable[[Callable[[Any], None]], None]] = {
            "loop": lambda sink: loop(records, sink),
            "passes": lambda sink: passes(records, sink, True),
            "unchecked": lambda sink: passes(records, sink, False),
        }
        outputs = {}
        for side, run in sides.items():
            sink, result = sink_of()
            run(sink)
            outputs[side] = result()
        if not outputs["loop"] == outputs["passes"] == outputs["unchecked"]:
            raise SystemExit(f"{name}: the sides' outputs differ")
        times: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
        order = list(sides)
        for round_ in range(args.rounds):
            for side in (order if round_ % 2 == 0 else order[::-1]):
                sink, _ = sink_of()
                times[side].append(timed(lambda: sides[side](sink)))
        loop_wall = statistics.median(t[0] for t in times["loop"])
        loop_cpu = statistics.median(t[1] for t in times["loop"])
        print(name)
        for side, runs in times.items():
            wall, cpu = statistics.median(t[0] for t in runs), statistics.median(t[1] for t in runs)
            print(f"  {side:<10} {wall:6.3f} s wall ({cpu:6.3f} s cpu)   {wall / loop_wall:5.2f}x the loop's time "
                  f"(cpu {cpu / loop_cpu:4.2f}x)")


if __name__ == "__main__":
    main()
