"""Benchmark of TaskExecutor processes (``plugins.workers=processes``) against embedded ones.

    python scripts/bench_workers.py [--records 1000000] [--rounds 5] [--wire]

1. The WindowWordCount shape fed by a parallel source: ``NumberSequenceSource`` numbers mapped
   to (word, timestamp) — 1,000 words, event time 1 ms per number with up to 2 s of disorder —
   timestamps with 2 s bounded out-of-orderness, key by word, count per word in 5 s tumbling
   event-time windows. Parallelism 2 on ``processes`` (two TaskExecutor processes, the keyed
   exchange crossing between them) against parallelism 1 embedded, realtime clock; records
   per second over the whole run (workers' start included), and the CPU seconds all processes
   spent; both results compared. ``--rounds`` runs per side, alternating; the median counts.
2. A channel's throughput: a source and a sink in different slot sharing groups, so with
   ``processes`` the records cross a TCP channel between two processes, embedded an
   in-process one; over the whole run and while the tasks run (from the first task running to
   the last one finished: the workers' start left out).
3. The time to start a worker: from its ``worker_started`` (the process spawned) to its
   ``worker_registered`` at the ResourceManager.
4. Records on the wire (``--wire`` alone: only this): buffers of 1,024 rows (word, count)
   typed ``TUPLE([STRING(), INT()])`` serialised and deserialised as a TCP channel carries them
   — the edge's ``RecordCodec`` inside the transport's buffer frame, with the records'
   timestamps — in CPU time of this one thread: rows per second per core (target >= 3 M).
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import io
import pathlib
import resource
import statistics
import time

from kernel.runtime.cluster_events import ExecutionStateChanged, WorkerRegistered, WorkerStarted
from kernel.common import Duration, Time, Types, WatermarkStrategy
from kernel.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from kernel.datastream.connectors.number_seq import NumberSequenceSource
from kernel.datastream.window import TumblingEventTimeWindows
from kernel.eventbus import drain_buses
from kernel.lifecycle.executors import SessionExecutor, use_executor
from kernel.lifecycle.session import Session
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


def cpu_seconds() -> float:
    """CPU time of this process and of its ended children (the worker processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Run:
    """One run of a job: wall seconds, CPU seconds (all processes), printed lines, events."""

    def __init__(self, sets: list[str], build) -> None:
        capture = EventCapture()
        session = Session.open(sets=["rill.clock=realtime", *sets], plugins=(capture,))
        out = io.StringIO()
        cpu = cpu_seconds()
        with use_executor(SessionExecutor(session, quiet=True)), contextlib.redirect_stdout(out):
            env = StreamExecutionEnvironment.get_execution_environment()
            started = time.perf_counter()
            build(env)
            self.seconds = time.perf_counter() - started
        drain_buses()
        self.cpu = cpu_seconds() - cpu
        self.lines = out.getvalue().splitlines()
        self.events = capture.last.events

    def rate(self, records: int) -> str:
        return f"{records / self.seconds:10,.0f} records/s  {self.seconds:7.3f} s  (cpu {self.cpu:6.2f} s)"

    def running_seconds(self) -> float:
        """From the first task running to the last one finished (the workers' start left out)."""
        changes = [e for e in self.events if isinstance(e, ExecutionStateChanged)]
        first = min(e.time for e in changes if e.new_state == "RUNNING")
        return (max(e.time for e in changes if e.new_state == "FINISHED") - first) / 1e9


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


def median_run(runs: list[Run]) -> Run:
    """The run of median wall time (of an even number, the faster of the middle two)."""
    return sorted(runs, key=lambda run: run.seconds)[(len(runs) - 1) // 2]


def walls(runs: list[Run]) -> str:
    return ", ".join(f"{run.seconds:.3f}" for run in runs)


def start_times(events: list) -> list[float]:
    started = {e.resource_id: e.time for e in events if isinstance(e, WorkerStarted)}
    return [(e.time - started[e.resource_id]) / 1e9 for e in events
            if isinstance(e, WorkerRegistered) and e.resource_id in started]


def wire_rows_per_second(rounds: int, buffers: int = 2_000) -> list[float]:
    """Rows (str, int) serialised and deserialised per CPU second, as ``plugins.local.network.remote``
    frames a buffer: ``["buf", receiver, backlog, codec.encode(values), timestamps]`` in MessagePack,
    decoded as a list, its values by the codec. One figure per round."""
    import msgspec

    from plugins.local.network.wire import RecordCodec

    codec = RecordCodec(Types.TUPLE([Types.STRING(), Types.INT()]))
    encode, decode = msgspec.msgpack.Encoder().encode, msgspec.msgpack.Decoder(list).decode
    rows = [(f"w{i % WORDS:03d}", i) for i in range(1_024)]
    timestamps = list(range(1_700_000_000_000, 1_700_000_001_024))
    rates = []
    for _ in range(rounds):
        started = time.thread_time()
        for _ in range(buffers):
            frame = decode(encode(["buf", 7, 2, codec.encode(rows), timestamps]))
            received = codec.decode(frame[3])
        rates.append(buffers * len(rows) / (time.thread_time() - started))
        assert received == rows and frame[4] == timestamps
    return rates


def print_wire(rounds: int) -> None:
    rates = wire_rows_per_second(rounds)
    print(f"records on the wire, rows (str, int) with timestamps, buffers of 1,024, serialised + deserialised: "
          f"median {statistics.median(rates) / 1e6:.2f} M rows/s per core (of {rounds}: "
          f"{', '.join(f'{r / 1e6:.2f}' for r in rates)}); target >= 3 M")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5, help="alternating runs per side (the median counts)")
    parser.add_argument("--wire", action="store_true", help="only the records on the wire (4.)")
    args = parser.parse_args()
    if args.wire:
        print_wire(args.rounds)
        return
    for package in ("kernel", "plugins"):  # bytecode as an installed rill has it: workers do not compile rill first
        compileall.compile_dir(ROOT / package, quiet=1)
    n = args.records
    with_processes = ["plugins.workers=processes"]
    Run([], window_word_count(10_000, 1))  # warm up imports
    embedded_runs, processes_runs = [], []
    for round_ in range(args.rounds):  # alternating: embedded first in odd rounds, processes first in even ones
        sides = [(embedded_runs, [], 1), (processes_runs, with_processes, 2)]
        for runs, sets, parallelism in sides if round_ % 2 == 0 else reversed(sides):
            runs.append(Run(sets, window_word_count(n, parallelism)))
    embedded, processes = median_run(embedded_runs), median_run(processes_runs)
    found = [line.split("> ", 1)[-1] for line in processes.lines]  # p=2 prints the subtask first
    assert sorted(found) == sorted(embedded.lines), "processes counted differently"
    print(f"WindowWordCount, {n:,} records, {len(found):,} window results, median of {args.rounds} alternating runs")
    print(f"  embedded  p=1  {embedded.rate(n)}  (wall: {walls(embedded_runs)})")
    print(f"  processes p=2  {processes.rate(n)}  {embedded.seconds / processes.seconds:4.2f}x embedded p=1  "
          f"(wall: {walls(processes_runs)})")
    local = Run([], channel(n))
    remote = Run(with_processes, channel(n))
    print(f"one channel, {n:,} records: whole run; tasks running")
    local_s, remote_s = local.running_seconds(), remote.running_seconds()
    print(f"  in-process     {local.rate(n)}; {n / local_s:10,.0f} records/s")
    print(f"  TCP            {remote.rate(n)}; {n / remote_s:10,.0f} records/s  {local_s / remote_s:4.2f}x in-process")
    starts = start_times(processes.events) + start_times(remote.events)
    print(f"starting a worker (spawned to registered): median {statistics.median(starts):.3f} s, "
          f"max {max(starts):.3f} s over {len(starts)}")
    print_wire(args.rounds)


if __name__ == "__main__":
    main()
