"""Recovery from a checkpoint: every kind of keyed state (value, list, map, reducing,
aggregating, with a TTL), rolling reduces, window contents and triggers' state, event- and
processing-time timers, broadcast state and the positions of every source come back, so the
results after a failure equal the results without one (print is at-least-once: lines between
the checkpoint and the failure are printed twice, with the same content); the failed region
restarts (or every task with failover ``full``); in the realtime clock too; and async I/O
finishes its requests in flight before a barrier passes.

Unless a test says otherwise the sources run at parallelism 1, so each key's records reach its
operator in order, and the operators at parallelism 2; a fault makes an operator raise on its
Nth record, after some checkpoints completed.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from checkpoint_jobs import counted, counts_are_exact
from kernel import clock
from kernel.runtime.cluster_events import TaskFailureHandled, TasksRestarted
from kernel.common import Duration, Time, Types
from kernel.common.watermark_strategy import WatermarkStrategy
from kernel.datastream import AsyncDataStream
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.connectors.file_system import FileSource, StreamFormat
from kernel.datastream.connectors.number_seq import NumberSequenceSource
from kernel.datastream.functions import (
    AggregateFunction,
    AsyncFunction,
    KeyedBroadcastProcessFunction,
    KeyedProcessFunction,
    ProcessWindowFunction,
    RuntimeContext,
)
from kernel.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from kernel.datastream.window import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from plugins.checkpointing.events import CheckpointAcknowledged, CheckpointCompleted, CheckpointStateRestored
from tests.runtime import run_job

CHECKPOINTS = ("execution.checkpointing.interval=100ms",)


def restored_equals_plain(build, fault: str, *sets: str):
    """The job run without and with ``fault``: the printed lines agree as sets, and the run with
    the fault restored state from a checkpoint. Returns both runs."""
    plain = run_job(build, *CHECKPOINTS, *sets)
    job = run_job(build, *CHECKPOINTS, *sets, faults=[fault])
    assert plain.outcome.status == job.outcome.status == "FINISHED"
    assert job.events(TaskFailureHandled) and job.events(CheckpointStateRestored)
    assert {e.checkpoint_id for e in job.events(CheckpointStateRestored)} <= {
        e.checkpoint_id for e in job.events(CheckpointCompleted)}
    assert set(strip(job.lines)) == set(strip(plain.lines))
    return plain, job


def strip(lines: list[str]) -> list[str]:
    """Printed lines without the subtask prefix (``2> ``)."""
    return [line.split("> ", 1)[-1] for line in lines]


def numbers(env, count: int = 120, rate: int = 50):
    return env.from_source(DataGeneratorSource(lambda i: i, count=count, records_per_second=rate, type_info=Types.INT()),
                           WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, ts: v * 20),
                           "Numbers").set_parallelism(1)


# -- keyed state ----------------------------------------------------------------------------------


class Sum(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + value

    def get_result(self, accumulator):
        return accumulator

    def merge(self, a, b):
        return a + b


class EveryKind(KeyedProcessFunction):
    def open(self, ctx: RuntimeContext):
        self.value = ctx.get_state(ValueStateDescriptor("value", Types.INT()))
        with_ttl = ValueStateDescriptor("with-ttl", Types.INT())
        with_ttl.enable_time_to_live(StateTtlConfig.new_builder(Duration.of_seconds(100)).build())
        self.with_ttl = ctx.get_state(with_ttl)
        self.list = ctx.get_list_state(ListStateDescriptor("list", Types.INT()))
        self.map = ctx.get_map_state(MapStateDescriptor("map", Types.INT(), Types.INT()))
        self.reducing = ctx.get_reducing_state(ReducingStateDescriptor("reducing", lambda a, b: a + b, Types.INT()))
        self.aggregating = ctx.get_aggregating_state(AggregatingStateDescriptor("aggregating", Sum(), Types.INT()))

    def process_element(self, value, ctx):
        self.value.update((self.value.value() or 0) + 1)
        self.with_ttl.update((self.with_ttl.value() or 0) + value)
        self.list.add(value)
        self.map.put(value % 5, (self.map.get(value % 5) or 0) + 1)
        self.reducing.add(value)
        self.aggregating.add(value * 2)
        yield (ctx.get_current_key(), value, self.value.value(), self.with_ttl.value(), list(self.list.get())[-3:],
               sorted(self.map.items()), self.reducing.get(), self.aggregating.get())


def test_every_kind_of_keyed_state_is_restored():
    def build(env):
        env.set_parallelism(2)
        numbers(env).key_by(lambda v: v % 4, Types.INT()).process(EveryKind()).name("EveryKind").print()
        env.execute("every kind")

    plain, job = restored_equals_plain(build, "raise:operator=EveryKind,record=40")
    # the restored subtask repeats what it did between the checkpoint and the failure
    repeated = [line for line, n in Counter(strip(job.lines)).items() if n == 2]
    assert 0 < len(repeated) == len(job.lines) - len(plain.lines)


def test_a_rolling_reduce_is_restored():
    def build(env):
        env.set_parallelism(2)
        numbers(env).key_by(lambda v: v % 3, Types.INT()).reduce(lambda a, b: a + b).name("Reduce").print()
        env.execute("reduce")

    restored_equals_plain(build, "raise:operator=Reduce,record=30")


def test_state_timers_and_windows_of_keys_python_cannot_hash_are_restored():
    """Keys without a key_type that are lists and dicts (PyFlink keys them by their pickled
    bytes): keyed state of every kind, timers, a rolling reduce and windows come back."""
    def build(env):
        env.set_parallelism(2)
        source = numbers(env, count=60)
        source.key_by(lambda v: [v % 4]).process(EveryKind()).name("EveryKind").print()
        source.key_by(lambda v: {"k": [v % 3]}).process(Timers()).name("Timers").print()
        source.key_by(lambda v: [v % 3]).reduce(lambda a, b: a + b).name("Reduce").print()
        source.key_by(lambda v: {v % 2}).window(TumblingEventTimeWindows.of(Time.milliseconds(200))) \
            .process(Describe()).name("Windows").print()
        env.execute("unhashable keys")

    plain, _ = restored_equals_plain(build, "raise:operator=EveryKind,record=20",
                                     "restart-strategy.type=fixed-delay", "restart-strategy.fixed-delay.delay=100ms")
    lines = set(strip(plain.lines))
    assert "([1], 57, 15, 435, [49, 53, 57], [(0, 3), (1, 3), (2, 3), (3, 3), (4, 3)], 435, 870)" in lines
    assert "('TimeDomain.EVENT_TIME', {'k': [2]}, 540)" in lines
    assert "({1}, 0, 200, [1, 3, 5, 7, 9])" in lines


# -- timers ---------------------------------------------------------------------------------------


class Timers(KeyedProcessFunction):
    """On a key's first record: an event-time timer 500 ms of event time later and a
    processing-time timer at 600 ms (both fire after the failure)."""

    def open(self, ctx: RuntimeContext):
        self.armed = ctx.get_state(ValueStateDescriptor("armed", Types.BOOLEAN()))

    def process_element(self, value, ctx):
        if not self.armed.value():
            self.armed.update(True)
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 500)
            ctx.timer_service().register_processing_time_timer(600)
        yield ("record", value)

    def on_timer(self, timestamp, ctx):
        yield (str(ctx.time_domain()), ctx.get_current_key(), timestamp)


def test_event_and_processing_time_timers_are_restored():
    def build(env):
        env.set_parallelism(2)
        numbers(env, count=60).key_by(lambda v: v % 4, Types.INT()).process(Timers()).name("Timers").print()
        env.execute("timers")

    plain, job = restored_equals_plain(build, "raise:operator=Timers,record=10",
                                       "restart-strategy.type=fixed-delay", "restart-strategy.fixed-delay.delay=100ms")
    fired = sorted(line for line in strip(plain.lines) if "TIME" in line)
    # the timers were registered before the first checkpoint (the keys' first records, 0..60 ms)
    # and fire once each after the restore: no key registers them again (its flag is restored)
    assert fired == sorted([f"('TimeDomain.EVENT_TIME', {k}, {k * 20 + 500})" for k in range(4)]
                           + [f"('TimeDomain.PROCESSING_TIME', {k}, 600)" for k in range(4)])
    assert sorted(line for line in strip(job.lines) if "TIME" in line) == fired


# -- windows --------------------------------------------------------------------------------------


class Describe(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield (key, context.window().start, context.window().end, sorted(elements))


@pytest.mark.parametrize("window", ["tumbling", "sliding", "session", "count"])
def test_window_contents_and_trigger_state_are_restored(window):
    def build(env):
        env.set_parallelism(2)
        keyed = numbers(env).key_by(lambda v: v % 3, Types.INT())
        if window == "tumbling":  # the aligned event-time window operator
            result = keyed.window(TumblingEventTimeWindows.of(Time.milliseconds(300))).reduce(lambda a, b: a + b)
        elif window == "sliding":
            result = keyed.window(SlidingEventTimeWindows.of(Time.milliseconds(300), Time.milliseconds(100))) \
                .process(Describe())
        elif window == "session":  # merging windows; gaps every 25 records. Each key's records in order
            # (the filter chained to the source): a record bridging two sessions would keep one
            # session's sum only, as in PyFlink, and which one would depend on the arrival order
            result = numbers(env).filter(lambda v: v % 25 < 20).set_parallelism(1).key_by(lambda v: v % 3, Types.INT()) \
                .window(EventTimeSessionWindows.with_gap(Time.milliseconds(100))).aggregate(Sum())
        else:  # the trigger counts in its state
            result = keyed.count_window(7).reduce(lambda a, b: a + b)
        result.name("Windows").print()
        env.execute(window)

    restored_equals_plain(build, "raise:operator=Windows,record=50")


# -- broadcast state ------------------------------------------------------------------------------

RULES = MapStateDescriptor("rules", Types.INT(), Types.STRING())


class ApplyRules(KeyedBroadcastProcessFunction):
    def process_element(self, value, ctx):
        yield (value, ctx.get_broadcast_state(RULES).get(value % 3))

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put(*value)


def test_broadcast_state_is_restored():
    """The rules come from a bounded source that finished long before the failure: after the
    restore they exist only in the broadcast state of the checkpoint."""
    def build(env):
        env.set_parallelism(2)
        rules = env.from_collection([(0, "zero"), (1, "one"), (2, "two")],
                                    Types.TUPLE([Types.INT(), Types.STRING()])).broadcast(RULES)
        numbers(env).filter(lambda v: v >= 5).key_by(lambda v: v % 3, Types.INT()).connect(rules) \
            .process(ApplyRules()).name("Rules").print()
        env.execute("broadcast")

    plain, _ = restored_equals_plain(build, "raise:operator=Rules,record=40")
    assert all(not line.endswith("None)") for line in plain.lines)


# -- sources ---------------------------------------------------------------------------------------


class CountByKey(KeyedProcessFunction):
    """Keyed by value % 3, records 0..n-1 in order: exactly once iff count == value // 3 + 1."""

    def open(self, ctx: RuntimeContext):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.INT()))

    def process_element(self, value, ctx):
        clock.sleep(0.005)  # slower than the source: it is back pressured and checkpoints come mid-stream
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{value} count={count}"


@pytest.mark.parametrize("source", ["collection", "number sequence", "data generator", "files"])
def test_every_source_resumes_from_its_position(source, tmp_path):
    total = 300
    if source == "files":
        for part in range(3):
            (tmp_path / f"part-{part}.txt").write_text("".join(f"{v}\n" for v in range(part * 100, part * 100 + 100)))

    def build(env):
        env.set_parallelism(2)
        no_watermarks = WatermarkStrategy.no_watermarks()
        if source == "collection":
            stream = env.from_collection(list(range(total)), Types.INT())
        elif source == "number sequence":
            stream = env.from_source(NumberSequenceSource(0, total - 1), no_watermarks, "Numbers").set_parallelism(1)
        elif source == "data generator":
            stream = env.from_source(DataGeneratorSource(lambda i: i, count=total, type_info=Types.INT()),
                                     no_watermarks, "Generated").set_parallelism(1)
        else:
            files = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path)).build()
            stream = env.from_source(files, no_watermarks, "Files").set_parallelism(1).map(int, Types.INT()) \
                .set_parallelism(1)
        stream.key_by(lambda v: v % 3, Types.INT()).process(CountByKey()).name("Count").print()
        env.execute(source)

    sets = ("execution.buffer-timeout.interval=0ms", "taskmanager.memory.segment-size=32b")
    plain, job = restored_equals_plain(build, "raise:operator=Count,record=120", *sets)
    lines = strip(job.lines)
    assert all(line.split()[1] == f"count={int(line.split()[0]) // 3 + 1}" for line in lines)
    assert sorted({int(line.split()[0]) for line in lines}) == list(range(total))
    restored = [e for e in job.events(CheckpointStateRestored) if not e.vertex_name.startswith("Count")]
    assert restored and all(e.state_size > 0 for e in restored)  # the source's position


# -- failover -------------------------------------------------------------------------------------


def two_pipelines(env):
    env.set_parallelism(1)
    for name in ("Left", "Right"):
        env.from_source(DataGeneratorSource(lambda i: i, count=60, records_per_second=50, type_info=Types.INT()),
                        WatermarkStrategy.no_watermarks(), name) \
            .key_by(lambda v: v % 3, Types.INT()).process(CountByKey()).name(f"{name} Count").print()
    env.execute("two pipelines")


@pytest.mark.parametrize("strategy, restarted", [("region", {"Source: Left", "Left Count -> Sink: Print to Std. Out"}),
                                                 ("full", {"Source: Left", "Left Count -> Sink: Print to Std. Out",
                                                           "Source: Right", "Right Count -> Sink: Print to Std. Out"})])
def test_the_failed_region_or_the_whole_job_restores(strategy, restarted):
    sets = (f"jobmanager.execution.failover-strategy={strategy}",)
    plain, job = restored_equals_plain(two_pipelines, "raise:operator=Left Count,record=30", *sets)
    (restart,) = job.events(TasksRestarted)
    assert restart.vertices == len(restarted)
    assert {e.vertex_name for e in job.events(CheckpointStateRestored)} == restarted
    assert all(line.split()[1] == f"count={int(line.split()[0]) // 3 + 1}" for line in strip(job.lines))


def test_recovery_in_the_realtime_clock():
    job = run_job(counted, "rill.clock=realtime", "execution.checkpointing.interval=45ms",
                  "restart-strategy.type=fixed-delay", "restart-strategy.fixed-delay.delay=50ms",
                  faults=["raise:operator=Count,record=12"])
    assert job.outcome.status == "FINISHED" and job.events(TaskFailureHandled)
    assert counts_are_exact(job.lines)
    assert {line.split()[0] for line in job.lines} == {f"{s}{i}" for s in "ab" for i in range(10)}
    if job.events(CheckpointStateRestored):  # a checkpoint completed before the failure (timing decides)
        assert {e.vertex_name for e in job.events(CheckpointStateRestored)} == {
            "Source: A", "Source: B", "SlowB", "Count -> Sink: Print to Std. Out"}


# -- async I/O --------------------------------------------------------------------------------------


class Later(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep(0.25)
        return [value]


def test_async_requests_in_flight_finish_before_the_barrier_passes():
    def build(env):
        env.set_parallelism(1)
        stream = env.from_source(DataGeneratorSource(lambda i: i, count=30, records_per_second=20, type_info=Types.INT()),
                                 WatermarkStrategy.no_watermarks(), "Numbers")
        AsyncDataStream.ordered_wait(stream, Later(), Time.seconds(10), 10, Types.INT()) \
            .key_by(lambda v: v % 3, Types.INT()).process(CountByKey()).name("Count").print()
        env.execute("async")

    plain, job = restored_equals_plain(build, "raise:operator=Count,record=20")
    # the source's task (the async operator is chained to it) took each snapshot only once its
    # requests (250 ms each) were done: a checkpoint triggered at t completes at 250 ms after the
    # last record read before t
    acks = [e for e in plain.events(CheckpointAcknowledged) if e.vertex_name.startswith("Source")]
    triggered = {e.checkpoint_id: e.time for e in plain.captured.events if type(e).__name__ == "CheckpointTriggered"}
    assert acks and all(e.time > triggered[e.checkpoint_id] for e in acks[:-1])
    assert all(line.split()[1] == f"count={int(line.split()[0]) // 3 + 1}" for line in strip(job.lines))


def test_values_pickled_before_rills_modules_moved_are_read_where_they_are_now():
    """A snapshot's pickles name rill's classes by module: a TTL value and a Java key pickled
    when their modules were kernel.streaming.ttl and kernel.common.keyidentity restore (and
    read in the state table) as the classes of kernel.runtime.streaming.ttl and kernel.jvm."""
    import pickle

    from kernel.jvm.keyidentity import JavaKey
    from kernel.runtime.checkpointing.snapshots import loads
    from kernel.runtime.streaming.ttl import TtlValue
    from replay.safe_pickle import readable, safe_loads, unwrap

    entries = [(JavaKey((1, "a"), [1, "a"]), None, TtlValue(41, 7_000))]
    old = (pickle.dumps(entries, protocol=2).replace(b"kernel.runtime.streaming.ttl", b"kernel.streaming.ttl")
           .replace(b"kernel.jvm.keyidentity", b"kernel.common.keyidentity"))
    assert b"kernel.streaming.ttl" in old and b"kernel.runtime" not in old and b"kernel.jvm" not in old
    restored = loads(old)
    assert restored == entries and type(restored[0][2]) is TtlValue and type(restored[0][0]) is JavaKey
    assert unwrap(safe_loads(old)[0][2]) == 41
    assert readable(safe_loads(old)[0][2]) == readable(safe_loads(pickle.dumps(entries, protocol=2))[0][2])
