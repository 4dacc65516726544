"""Benchmark (c): a KeyedProcessFunction with ValueState and event-time timers.

    python scripts/bench_timers.py [--records 1000000] [--rounds 5]

1M records (word, event time) — 1,000 Zipf words, time advancing 1 ms per record with up to
2 s of disorder — from ``from_collection``, timestamps assigned with 2 s bounded
out-of-orderness, keyed by word. Per record the function counts the word in a ValueState
(emitting every 100th count) and registers an event-time timer at the end of the record's
5 s bucket (the timer service keeps one per key and time); each timer emits (word, time).
The plain loop runs the same function with the least machinery that serves it: a dict as the
state, a set and a heap as the timers, a watermark every 1,000 records.
"""

from __future__ import annotations

import heapq

from benchkit import DISORDER_MS, Workload, main, timed_words

from kernel.datastream import KeyedProcessFunction
from kernel.datastream.state import ValueStateDescriptor

BUCKET = 5_000
MIN_LONG = -(1 << 63)


def event_time(record, previous):
    return record[1]


def word_of(record):
    return record[0]


class CountAndTime(KeyedProcessFunction):
    def open(self, runtime_context):
        from kernel.common import Types

        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        ts = ctx.timestamp()
        ctx.timer_service().register_event_time_timer(ts - ts % BUCKET + BUCKET - 1)
        if count % 100 == 0:
            yield value[0], count

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), timestamp


class LoopValueState:
    """A ValueState of the current key, in a dict."""

    def __init__(self) -> None:
        self.values: dict = {}
        self.key = None

    def value(self):
        return self.values.get(self.key)

    def update(self, value) -> None:
        self.values[self.key] = value

    def clear(self) -> None:
        self.values.pop(self.key, None)


class LoopContext:
    """What the function sees of its context, its timer service and its runtime context."""

    def __init__(self) -> None:
        self.state = LoopValueState()
        self.registered: set = set()
        self.due: list = []
        self.ts = None
        self.key = None

    def get_state(self, descriptor):
        return self.state

    def timestamp(self):
        return self.ts

    def get_current_key(self):
        return self.key

    def timer_service(self):
        return self

    def register_event_time_timer(self, time) -> None:
        timer = (time, self.key)
        if timer not in self.registered:
            self.registered.add(timer)
            heapq.heappush(self.due, timer)


def loop(records, sink):
    function = CountAndTime()
    ctx = LoopContext()
    function.open(ctx)
    state, due, registered = ctx.state, ctx.due, ctx.registered
    max_ts = MIN_LONG + DISORDER_MS + 1

    def fire(watermark: int) -> None:
        while due and due[0][0] <= watermark:
            timer = heapq.heappop(due)
            registered.discard(timer)
            ctx.ts, ctx.key = timer
            state.key = timer[1]
            for out in function.on_timer(timer[0], ctx):
                sink(out)

    for i, record in enumerate(records):
        ts = event_time(record, MIN_LONG)
        if ts > max_ts:
            max_ts = ts
        key = word_of(record)
        ctx.ts, ctx.key, state.key = ts, key, key
        for out in function.process_element(record, ctx):
            sink(out)
        if i % 1000 == 999:
            fire(max_ts - DISORDER_MS - 1)
    fire(1 << 63)


def job(env, records, sink):
    from kernel.common import Duration, Types, WatermarkStrategy

    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(DISORDER_MS)) \
        .with_timestamp_assigner(event_time)
    (env.from_collection(records, Types.TUPLE([Types.STRING(), Types.LONG()]))
        .assign_timestamps_and_watermarks(strategy)
        .key_by(word_of, Types.STRING())
        .process(CountAndTime())
        .add_sink(sink))


WORKLOAD = Workload("timers", __doc__.splitlines()[0].split(": ", 1)[1], timed_words, loop, job)

if __name__ == "__main__":
    main(WORKLOAD)
