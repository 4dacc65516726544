"""Benchmark of TaskExecutor processes (``plugins.workers=processes``) against embedded ones.

    python scripts/bench_workers.py [--records 1000000]

1. The WindowWordCount shape fed by a parallel source: ``NumberSequenceSource`` numbers mapped
   to (word, timestamp) — 1,000 words, event time 1 ms per number with up to 2 s of disorder —
   timestamps with 2 s bounded out-of-orderness, key by word, count per word in 5 s tumbling
   event-time windows. Parallelism 2 on ``processes`` (two TaskExecutor processes, the keyed
   exchange crossing between them) against parallelism 1 embedded, realtime clock; records
   per second over the whole run (workers' start included); both results compared.
2. A channel's throughput: a source and a sink in different slot sharing groups, so with
   ``processes`` the records cross a TCP channel between two processes, embedded an
   in-process one.
3. The time to start a worker: from its ``worker_started`` (the process spawned) to its
   ``worker_registered`` at the ResourceManager.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import io
import pathlib
import statistics
import time

from kernel.cluster_events import WorkerRegistered, WorkerStarted
from kernel.common import Duration, Time, Types, WatermarkStrategy
from kernel.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from kernel.datastream.connectors.number_seq import NumberSequenceSource
from kernel.datastream.window import TumblingEventTimeWindows
from kernel.eventbus import drain_buses
from kernel.execution import SessionExecutor
from kernel.program import use_executor
from kernel.session import Session
from kernel.testing import EventCapture

ROOT = pathlib.Path(__file__).resolve().parents[1]
WINDOW = 5_000
OUT_OF_ORDERNESS = 2_000
WORDS = 1_000


def word_and_time(i: int) -> tuple[str, int]:
    """Number ``i`` as (word, event time): ``i`` ms with up to 2 s of disorder. (Two source
    subtasks read the two halves of the sequence: the second half's windows fire once the
    first half's watermark reaches them.)"""
    return f"w{(i * 7919) % WORDS:03d}", max(0, i - (i * 104_729) % OUT_OF_ORDERNESS)


class WithStart(ProcessWindowFunction):
    def process(self, key, context, elements):
        for word, count in elements:
            yield f"{word} {context.window().start} {count}"


def run(sets: list[str], build) -> tuple[float, list[str], list]:
    """Run ``build(env)`` with ``sets`` (realtime): (seconds, printed lines, events)."""
    capture = EventCapture()
    session = Session.open(sets=["rill.clock=realtime", *sets], plugins=(capture,))
    out = io.StringIO()
    with use_executor(SessionExecutor(session, quiet=True)), contextlib.redirect_stdout(out):
        env = StreamExecutionEnvironment.get_execution_environment()
        started = time.perf_counter()
        build(env)
        elapsed = time.perf_counter() - started
    drain_buses()
    return elapsed, out.getvalue().splitlines(), capture.last.events


def window_word_count(count: int, parallelism: int):
    def build(env):
        env.set_parallelism(parallelism)
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(OUT_OF_ORDERNESS)) \
            .with_timestamp_assigner(lambda record, previous: record[1])
        (env.from_source(NumberSequenceSource(0, count - 1), WatermarkStrategy.no_watermarks(), "Numbers")
            .map(word_and_time, Types.TUPLE([Types.STRING(), Types.LONG()]))
            .assign_timestamps_and_watermarks(strategy)
            .map(lambda record: (record[0], 1), Types.TUPLE([Types.STRING(), Types.INT()]))
            .key_by(lambda pair: pair[0], Types.STRING())
            .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW)))
            .reduce(lambda a, b: (a[0], a[1] + b[1]), window_function=WithStart(), output_type=Types.STRING())
            .print())
        env.execute("window word count")

    return build


def channel(count: int):
    def build(env):
        (env.from_source(NumberSequenceSource(0, count - 1), WatermarkStrategy.no_watermarks(), "Numbers")
            .rebalance().map(lambda i: i, Types.LONG()).slot_sharing_group("sink").add_sink(lambda i: None))
        env.execute("channel")

    return build


def start_times(events: list) -> list[float]:
    started = {e.resource_id: e.time for e in events if isinstance(e, WorkerStarted)}
    return [(e.time - started[e.resource_id]) / 1e9 for e in events
            if isinstance(e, WorkerRegistered) and e.resource_id in started]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    for package in ("kernel", "plugins"):  # bytecode as an installed rill has it: workers do not compile rill first
        compileall.compile_dir(ROOT / package, quiet=1)
    n = args.records
    processes = ["plugins.workers=processes"]
    run([], window_word_count(10_000, 1))  # warm up imports
    embedded_s, expected, _ = run([], window_word_count(n, 1))
    processes_s, found, events = run(processes, window_word_count(n, 2))
    found = [line.split("> ", 1)[-1] for line in found]  # p=2 prints the subtask first
    assert sorted(found) == sorted(expected), "processes counted differently"
    print(f"WindowWordCount, {n:,} records, {len(expected):,} window results")
    print(f"  embedded  p=1  {n / embedded_s:10,.0f} records/s  {embedded_s:7.3f} s")
    print(f"  processes p=2  {n / processes_s:10,.0f} records/s  {processes_s:7.3f} s  "
          f"{embedded_s / processes_s:4.2f}x embedded p=1")
    local_s, _, _ = run([], channel(n))
    remote_s, _, channel_events = run(processes, channel(n))
    print(f"one channel, {n:,} records")
    print(f"  in-process     {n / local_s:10,.0f} records/s  {local_s:7.3f} s")
    print(f"  TCP            {n / remote_s:10,.0f} records/s  {remote_s:7.3f} s  "
          f"{local_s / remote_s:4.2f}x in-process")
    starts = start_times(events) + start_times(channel_events)
    print(f"starting a worker (spawned to registered): median {statistics.median(starts):.3f} s, "
          f"max {max(starts):.3f} s over {len(starts)}")


if __name__ == "__main__":
    main()
