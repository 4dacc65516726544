"""Benchmark of the spark backend: the WindowWordCount workload on Spark.

    python scripts/bench_spark.py [--records 1000000] [--master local[2]]

1M records (word, timestamp), made from their index by the same function in both jobs:
1,000 Zipf-distributed words, event time advancing 1 ms per record with up to 2 s of
disorder. rill (spark backend, BATCH, parallelism 2) assigns timestamps, maps to (word, 1),
keys by word and sums per word in 5 s tumbling event-time windows, and collects the results to
the caller (``execute_and_collect``). The hand-written PySpark RDD job does the same
computation — (word, window start) -> count with ``reduceByKey``, then ``collect`` — in the
same SparkSession. Each job runs ``--repeat`` times, alternating; the best times count.
Both results are compared; prints both times and the ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kernel.common import Duration, Time, Types, WatermarkStrategy  # noqa: E402
from kernel.datastream import ProcessWindowFunction, StreamExecutionEnvironment  # noqa: E402
from kernel.datastream.connectors.datagen import DataGeneratorSource  # noqa: E402
from kernel.datastream.window import TumblingEventTimeWindows  # noqa: E402
from kernel.eventbus import drain_buses  # noqa: E402
from kernel.lifecycle.executors import SessionExecutor, use_executor  # noqa: E402
from kernel.lifecycle.session import Session  # noqa: E402

DISTINCT = 1_000
WINDOW = 5_000
OUT_OF_ORDERNESS = 2_000


class Records:
    """Record ``i`` of the workload: (word, event time), a pure function of ``i``."""

    def __init__(self) -> None:
        weights = [1.0 / (rank + 1) for rank in range(DISTINCT)]
        total = sum(weights)
        table: list[int] = []  # 10,000 slots, word ranks in proportion to their Zipf weight
        for rank, weight in enumerate(weights):
            table.extend([rank] * max(1, round(10_000 * weight / total)))
        self.words = [f"w{table[slot]:04d}" for slot in range(len(table))]

    def __call__(self, i: int) -> tuple[str, int]:
        h = (i * 2654435761) & 0xFFFFFFFF
        return self.words[h % len(self.words)], max(0, i - (h >> 12) % OUT_OF_ORDERNESS)


class WithStart(ProcessWindowFunction):
    def process(self, key, context, elements):
        for word, count in elements:
            yield word, context.window().start, count


def window_word_count(sets: list[str], record: Any, count: int, parallelism: int = 1) -> tuple[float, set]:
    """Run the workload in rill with ``sets``; record ``i`` is ``record(i)``: (seconds, results)."""
    session = Session.open(sets=sets)
    with use_executor(SessionExecutor(session, quiet=True)):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(parallelism)
        started = time.perf_counter()
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(OUT_OF_ORDERNESS)) \
            .with_timestamp_assigner(lambda record, previous: record[1])
        source = env.from_source(DataGeneratorSource(record, count=count), strategy, "Words")
        counts = (source.map(lambda record: (record[0], 1), Types.TUPLE([Types.STRING(), Types.INT()]))
                  .key_by(lambda pair: pair[0], Types.STRING())
                  .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW)))
                  .reduce(lambda a, b: (a[0], a[1] + b[1]), window_function=WithStart()))
        results = set(counts.execute_and_collect("window word count"))
        elapsed = time.perf_counter() - started
    drain_buses()
    return elapsed, results


def rill_on_spark(n: int, master: str) -> tuple[float, set]:
    return window_word_count(["plugins.backend=spark", "rill.clock=realtime", f"spark.master={master}"],
                             Records(), n, parallelism=2)


def hand_written(spark, n: int) -> tuple[float, set]:
    """The same computation as a PySpark RDD job."""
    record = Records()
    started = time.perf_counter()
    counts = (spark.sparkContext.parallelize(range(n), 2)
              .map(record)
              .map(lambda r: ((r[0], r[1] - r[1] % WINDOW), 1))
              .reduceByKey(lambda a, b: a + b, 2)
              .collect())
    elapsed = time.perf_counter() - started
    return elapsed, {(word, start, count) for (word, start), count in counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each job, alternating; the best counts")
    args = parser.parse_args()
    from plugins.spark.options import SparkOptions
    from plugins.spark.session import spark_session

    spark, _ = spark_session(SparkOptions(master=args.master))
    try:
        rill_on_spark(200_000, args.master)  # warm up: Python workers, imports, the JIT
        hand_written(spark, 200_000)
        base = took = float("inf")
        for attempt in range(1, args.repeat + 1):
            rdd_seconds, expected = hand_written(spark, args.records)
            rill_seconds, found = rill_on_spark(args.records, args.master)
            print(f"run {attempt}: hand-written {rdd_seconds:.3f} s, rill {rill_seconds:.3f} s")
            base, took = min(base, rdd_seconds), min(took, rill_seconds)
    finally:
        spark.stop()
    assert found == expected, f"rill counted differently: {len(found ^ expected)} differing (word, window, count)"
    n = args.records
    print(f"hand-written PySpark RDD job  {n / base:12,.0f} records/s  {base:7.3f} s  ({len(expected):,} window results)")
    print(f"rill on spark                 {n / took:12,.0f} records/s  {took:7.3f} s  {took / base:5.2f}x the RDD job's time")


if __name__ == "__main__":
    main()
