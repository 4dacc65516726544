"""Benchmarks (d) and (e): WindowWordCount, with a ReduceFunction or a ProcessWindowFunction.

    python scripts/bench_windows.py [--records 1000000] [--rounds 5] [--function reduce|process]
    python scripts/bench_windows.py --whole [--rounds 5]
    python scripts/bench_windows.py --process loop|rill

1M records (word, event time): 1,000 Zipf words, time advancing 1 ms per record with up to
2 s of disorder, from ``from_collection`` (typed as a tuple of string and long); timestamps
assigned with 2 s bounded out-of-orderness, mapped to (word, 1), keyed by word, 5 s tumbling
event-time windows. (d) ``--function reduce`` counts per word and window with a
ReduceFunction (rows (word, count)); (e) ``--function process`` hands each window's elements
to a ProcessWindowFunction that counts them (rows (word, window start, count)). The plain loop
calls the same functions, with a bounded out-of-orderness watermark every 1,000 records
firing the windows it passes.

``--whole`` times whole processes instead, alternating: ``--process loop`` (make the records,
run the loop) against ``--process rill`` (make the records, run the job with the event log
on, as ``python job.py`` runs a job), for (d); bytecode is cached, as an installed rill has it.
"""

from __future__ import annotations

import json
import sys

from benchkit import (
    DISORDER_MS,
    Workload,
    alternate_processes,
    arguments,
    load,
    main,
    median_of,
    process_lines,
    rows_sink,
    timed_words,
)

WINDOW = 5_000
MIN_LONG = -(1 << 63)


def event_time(record, previous):
    return record[1]


def to_pair(record):
    return record[0], 1


def first(pair):
    return pair[0]


def add(a, b):
    return a[0], a[1] + b[1]


def count_window():
    """(e)'s ProcessWindowFunction (imported only where it is used: the loop of (d) imports no rill)."""
    from kernel.datastream import ProcessWindowFunction

    class CountWindow(ProcessWindowFunction):
        def process(self, key, context, elements):
            yield key, context.window().start, sum(1 for _ in elements)

    return CountWindow()


def loop_reduce(records, sink):
    windows: dict = {}
    due: dict = {}  # window end -> its (key, start) slots
    get = windows.get
    max_ts = MIN_LONG + DISORDER_MS + 1

    def fire(watermark: int) -> None:
        for end in sorted(end for end in due if end <= watermark):
            for slot in due.pop(end):
                sink(windows.pop(slot))

    for i, record in enumerate(records):
        ts = event_time(record, MIN_LONG)
        if ts > max_ts:
            max_ts = ts
        pair = to_pair(record)
        slot = (first(pair), ts - ts % WINDOW)
        contents = get(slot)
        if contents is None:
            windows[slot] = pair
            due.setdefault(slot[1] + WINDOW - 1, []).append(slot)
        else:
            windows[slot] = add(contents, pair)
        if i % 1000 == 999:
            fire(max_ts - DISORDER_MS - 1)
    fire(1 << 63)


class LoopWindowContext:
    def __init__(self) -> None:
        self.current = None

    def window(self):
        return self.current


def loop_process(records, sink):
    from kernel.datastream.window import TimeWindow

    function = count_window()
    context = LoopWindowContext()
    windows: dict = {}
    due: dict = {}
    get = windows.get
    max_ts = MIN_LONG + DISORDER_MS + 1

    def fire(watermark: int) -> None:
        for end in sorted(end for end in due if end <= watermark):
            for slot in due.pop(end):
                key, start = slot
                context.current = TimeWindow(start, start + WINDOW)
                for out in function.process(key, context, windows.pop(slot)):
                    sink(out)

    for i, record in enumerate(records):
        ts = event_time(record, MIN_LONG)
        if ts > max_ts:
            max_ts = ts
        pair = to_pair(record)
        slot = (first(pair), ts - ts % WINDOW)
        contents = get(slot)
        if contents is None:
            windows[slot] = [pair]
            due.setdefault(slot[1] + WINDOW - 1, []).append(slot)
        else:
            contents.append(pair)
        if i % 1000 == 999:
            fire(max_ts - DISORDER_MS - 1)
    fire(1 << 63)


def windowed(env, records):
    from kernel.common import Duration, Time, Types, WatermarkStrategy
    from kernel.datastream.window import TumblingEventTimeWindows

    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(DISORDER_MS)) \
        .with_timestamp_assigner(event_time)
    return (env.from_collection(records, Types.TUPLE([Types.STRING(), Types.LONG()]))
            .assign_timestamps_and_watermarks(strategy)
            .map(to_pair, Types.TUPLE([Types.STRING(), Types.INT()]))
            .key_by(first, Types.STRING())
            .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW))))


def job_reduce(env, records, sink):
    windowed(env, records).reduce(add).add_sink(sink)


def job_process(env, records, sink):
    windowed(env, records).process(count_window()).add_sink(sink)


REDUCE = Workload("windows", "(d) WindowWordCount, counting with a ReduceFunction", timed_words, loop_reduce,
                  job_reduce, rows_sink)
PROCESS = Workload("process-windows", "(e) WindowWordCount, counting in a ProcessWindowFunction", timed_words,
                   loop_process, job_process, rows_sink)


def one_process(side: str, n: int) -> None:
    """One side, end to end, in this process (what ``--whole`` times)."""
    records = timed_words(n)
    sink, _ = rows_sink()
    if side == "loop":
        loop_reduce(records, sink)
        return
    from kernel.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    job_reduce(env, records, sink)
    env.execute("windows")


def whole(n: int, rounds: int, as_json: bool = False) -> dict:
    script = __file__
    commands = {side: [sys.executable, script, "--process", side, "--records", str(n)] for side in ("loop", "rill")}
    results = alternate_processes(commands, rounds)
    print(f"(d) whole process, {n:,} records, rill vs the plain loop as separate processes, median of {rounds} "
          f"alternating runs (load {load()})")
    for line in process_lines(results):
        print("  " + line)
    loop, rill = results["loop"], results["rill"]
    print(f"  ratio        {median_of(rill, 0) / median_of(loop, 0):5.2f}x wall  "
          f"{median_of(rill, 1) / median_of(loop, 1):5.2f}x cpu  "
          f"memory {median_of(rill, 2) / median_of(loop, 2):4.2f}x")
    if as_json:
        print(json.dumps({"whole": n, "rounds": rounds, **results}))
    return results


if __name__ == "__main__":
    parser = arguments(__doc__.splitlines()[0])
    parser.add_argument("--function", choices=["reduce", "process"], default="reduce")
    parser.add_argument("--whole", action="store_true")
    parser.add_argument("--process", choices=["loop", "rill"])
    args = parser.parse_args()
    if args.process:
        one_process(args.process, args.records)
    elif args.whole:
        whole(args.records, args.rounds, args.json)
    else:
        main(REDUCE if args.function == "reduce" else PROCESS, args)
