"""Benchmark of event-time windows: the WindowWordCount workload.

    python scripts/bench_windows.py [--records 1000000]

1M records of (word, timestamp): 1,000 distinct Zipf-distributed words, event time advancing
1 ms per record with up to 2 s of disorder. rill (parallelism 1, realtime clock, periodic
watermarks) assigns timestamps with 2 s bounded out-of-orderness, keys by word and counts per
word in 5 s tumbling event-time windows. The same computation runs as a plain Python loop
(bounded out-of-orderness watermark every 1,000 records, windows fired as it passes them) in
the same process. Both results are compared; prints both rates and the ratio.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from kernel.common import Duration, Time, Types, WatermarkStrategy
from kernel.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.window import TumblingEventTimeWindows
from kernel.eventbus import drain_buses
from kernel.execution import SessionExecutor
from kernel.program import use_executor
from kernel.session import Session

WINDOW = 5_000
OUT_OF_ORDERNESS = 2_000


def workload(n: int, distinct: int = 1000, seed: int = 11) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    vocabulary = [f"w{i:04d}" for i in range(distinct)]
    weights = [1.0 / (rank + 1) for rank in range(distinct)]
    words = rng.choices(vocabulary, weights, k=n)
    return [(word, max(0, i - rng.randrange(OUT_OF_ORDERNESS))) for i, word in enumerate(words)]


def plain_loop(records: list[tuple[str, int]]) -> tuple[float, set]:
    start = time.perf_counter()
    counts: dict[tuple[str, int], int] = {}
    by_end: dict[int, list[tuple[str, int]]] = {}
    results = set()
    max_ts = -(1 << 63) + OUT_OF_ORDERNESS + 1
    watermark = -(1 << 63)
    for i, (word, ts) in enumerate(records):
        if ts > max_ts:
            max_ts = ts
        begin = ts - ts % WINDOW
        if begin + WINDOW - 1 <= watermark:
            continue  # late
        key = (word, begin)
        count = counts.get(key)
        if count is None:
            counts[key] = 1
            by_end.setdefault(begin + WINDOW - 1, []).append(key)
        else:
            counts[key] = count + 1
        if i % 1000 == 999:
            watermark = max_ts - OUT_OF_ORDERNESS - 1
            for end in sorted(e for e in by_end if e <= watermark):
                for key in by_end.pop(end):
                    results.add((key[0], key[1], counts.pop(key)))
    for end in sorted(by_end):
        for key in by_end.pop(end):
            results.add((key[0], key[1], counts.pop(key)))
    return time.perf_counter() - start, results


class WithStart(ProcessWindowFunction):
    def process(self, key, context, elements):
        for word, count in elements:
            yield word, context.window().start, count


def window_word_count(sets: list[str], record: Any, count: int, parallelism: int = 1,
                      plugins: tuple = ()) -> tuple[float, set]:
    """Run the workload in rill with ``sets`` (and ``plugins`` registered); record ``i`` is
    ``record(i)``: (seconds, results)."""
    session = Session.open(sets=sets, plugins=plugins)
    results: list = []
    with use_executor(SessionExecutor(session, quiet=True)):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(parallelism)
        started = time.perf_counter()
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(OUT_OF_ORDERNESS)) \
            .with_timestamp_assigner(lambda record, previous: record[1])
        source = env.from_source(DataGeneratorSource(record, count=count), strategy, "Words")
        (source.map(lambda record: (record[0], 1), Types.TUPLE([Types.STRING(), Types.INT()]))
               .key_by(lambda pair: pair[0], Types.STRING())
               .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW)))
               .reduce(lambda a, b: (a[0], a[1] + b[1]), window_function=WithStart())
               .add_sink(results.append))
        env.execute("window word count")
        elapsed = time.perf_counter() - started
    drain_buses()
    return elapsed, set(results)


def rill(records: list[tuple[str, int]], clock: str) -> tuple[float, set]:
    return window_word_count([f"rill.clock={clock}"], records.__getitem__, len(records))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--clock", choices=["realtime", "simulated"], default="realtime")
    args = parser.parse_args()
    records = workload(args.records)
    rill(records[:20_000], args.clock)  # warm up imports
    base, expected = plain_loop(records)
    took, found = rill(records, args.clock)
    assert found == expected, f"rill counted differently: {len(found ^ expected)} differing (word, window, count)"
    n = args.records
    print(f"plain loop   {n / base:12,.0f} records/s  {base:7.3f} s  ({len(expected):,} window results)")
    print(f"rill         {n / took:12,.0f} records/s  {took:7.3f} s  {took / base:5.2f}x the loop's time ({args.clock} clock)")


if __name__ == "__main__":
    main()
