"""The local runtime end to end: outputs, print prefixes, operators, failures, bounded and
unbounded jobs."""

from __future__ import annotations

import mmh3
import struct
from collections import Counter

import pytest

from kernel.runtime.cluster_events import ExecutionStateChanged, JobStatusChanged
from kernel.common import Row, Types, WatermarkStrategy
from kernel.jvm.javavalues import string_hash
from kernel.datastream import (
    CoFlatMapFunction,
    KeyedProcessFunction,
    MapFunction,
    OutputTag,
    ProcessFunction,
)
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor
from tests.runtime import run_job


def subtask_of(word: str, parallelism: int, max_parallelism: int = 128) -> int:
    """Where PyFlink's key_by(..., Types.STRING()) sends a word: the Java key is a one-field Row,
    Row.hashCode() = 31 * kind(0) + deepHashCode([word]) = 31 * 1 + (31 + String.hashCode)
    (Flink 2.x RowUtils), murmured, into key groups (computed independently of rill)."""
    code = (62 + string_hash(word)) & 0xFFFFFFFF
    h = mmh3.hash(struct.pack("<I", code), 0, signed=True)
    h = -h if h < 0 and h != -(1 << 31) else (0 if h == -(1 << 31) else h)
    return (h % max_parallelism) * parallelism // max_parallelism


def test_running_word_count_prints_each_words_counts_on_its_key_groups_subtask():
    text = ["to be or not to be", "that is the question", "to be"]

    def build(env):
        counts = (env.from_collection(text, Types.STRING())
                  .flat_map(lambda line: [(w, 1) for w in line.split()], Types.TUPLE([Types.STRING(), Types.INT()]))
                  .set_parallelism(2)
                  .key_by(lambda pair: pair[0], Types.STRING())
                  .sum(1).set_parallelism(3))
        counts.print().set_parallelism(3)
        env.execute()

    # real PyFlink 2.3 printed the same lines for this job: 3> for to, be, not, question and 2> for
    # or, that, is, the
    lines = run_job(build).lines
    words = " ".join(text).split()
    expected = Counter()
    seen = Counter()
    for word in words:
        seen[word] += 1
        expected[f"{subtask_of(word, 3) + 1}> ({word},{seen[word]})"] += 1
    assert Counter(lines) == expected
    for word in set(words):  # per key, counts come out in order
        mine = [line for line in lines if line.split("> ", 1)[1].startswith(f"({word},")]
        assert mine == sorted(mine, key=lambda l: int(l.rsplit(",", 1)[1][:-1]))


def test_print_prefixes_follow_flinks_print_sink():
    def build(env):
        source = env.from_collection(["x", "y"], Types.STRING())
        source.print()
        source.print("named")
        source.map(lambda v: v.upper(), Types.STRING()).set_parallelism(2).print("two").set_parallelism(2)
        env.execute()

    lines = run_job(build).lines
    assert sorted(l for l in lines if not l.startswith("two")) == ["named> x", "named> y", "x", "y"]
    parallel = sorted(l.split("> ") for l in lines if l.startswith("two"))
    # rebalance sends the two records to different subtasks, each printing with its 1-based index
    assert sorted(prefix for prefix, _ in parallel) == ["two:1", "two:2"]
    assert sorted(value for _, value in parallel) == ["X", "Y"]


def test_rows_from_collection_have_attribute_access_and_print_like_pyflink():
    class Describe(MapFunction):
        def map(self, person):
            return Row(person.name, person.age + 1)

    def build(env):
        people = env.from_collection([("Ann", 31), ("Bob", 17)],
                                     Types.ROW_NAMED(["name", "age"], [Types.STRING(), Types.INT()]))
        people.map(Describe(), Types.ROW([Types.STRING(), Types.INT()])).print()
        people.map(lambda p: (p.name, p.age)).print()  # untyped: Python's str()
        env.execute()

    assert sorted(run_job(build).lines) == ["('Ann', 31)", "('Bob', 17)", "+I[Ann,32]", "+I[Bob,18]"]


SMALL = OutputTag("small", Types.INT())


class Split(ProcessFunction):
    def process_element(self, value, ctx):
        if value < 3:
            yield SMALL, value
        else:
            yield value * 10


class Label(CoFlatMapFunction):
    def flat_map1(self, value):
        yield f"big {value}"

    def flat_map2(self, value):
        yield f"small {value}"
        yield f"small again {value}"


def side_outputs_connect_and_union(env, numbers: list[int]) -> None:
    split = env.from_collection(numbers, Types.INT()).process(Split(), Types.INT())
    labelled = split.connect(split.get_side_output(SMALL)).flat_map(Label(), Types.STRING())
    labelled.union(env.from_collection(["extra"], Types.STRING())).print()
    env.execute("sides")


def test_process_side_outputs_connect_and_union():
    def build(env):
        side_outputs_connect_and_union(env, [1, 2, 3, 4])

    assert sorted(run_job(build).lines) == sorted([
        "big 30", "big 40", "small 1", "small again 1", "small 2", "small again 2", "extra",
    ])


def test_unrequested_tagged_outputs_go_to_the_main_output_as_in_pyflink():
    tag = OutputTag("nobody", Types.INT())

    class Tagging(ProcessFunction):
        def process_element(self, value, ctx):
            yield tag, value

    def build(env):
        env.from_collection([5]).process(Tagging()).map(lambda pair: pair[1]).print()
        env.execute()

    assert run_job(build).lines == ["5"]


def test_keyed_state_of_every_kind_is_scoped_per_key():
    class Remember(KeyedProcessFunction):
        def open(self, ctx):
            self.count = ctx.get_state(ValueStateDescriptor("count", Types.INT()))
            self.seen = ctx.get_list_state(ListStateDescriptor("seen", Types.INT()))
            self.last = ctx.get_map_state(MapStateDescriptor("last", Types.STRING(), Types.INT()))

        def process_element(self, value, ctx):
            self.count.update((self.count.value() or 0) + 1)
            self.seen.add(value)
            self.last.put("value", value)
            yield f"{ctx.get_current_key()}: n={self.count.value()} seen={list(self.seen.get())} last={self.last.get('value')}"

    def build(env):
        env.from_collection([1, 2, 3, 4, 5], Types.INT()).key_by(lambda v: v % 2, Types.INT()) \
            .process(Remember(), Types.STRING()).print()
        env.execute()

    assert run_job(build).lines == [
        "1: n=1 seen=[1] last=1", "0: n=1 seen=[2] last=2", "1: n=2 seen=[1, 3] last=3",
        "0: n=2 seen=[2, 4] last=4", "1: n=3 seen=[1, 3, 5] last=5",
    ]


def test_rolling_reduce_and_aggregations():
    data = [(1, "a"), (2, "a"), (3, "a"), (4, "b")]

    def build(env):
        source = env.from_collection(data, Types.TUPLE([Types.INT(), Types.STRING()]))
        source.key_by(lambda t: t[1], Types.STRING()).reduce(lambda a, b: (a[0] + b[0], a[1])).print("reduce")
        source.key_by(lambda t: t[1], Types.STRING()).max(0).print("max")
        source.key_by(lambda t: t[1], Types.STRING()).min_by(0).print("min_by")
        env.execute()

    lines = run_job(build).lines
    assert [l for l in lines if l.startswith("reduce")] == ["reduce> (1,a)", "reduce> (3,a)", "reduce> (6,a)", "reduce> (4,b)"]
    assert [l for l in lines if l.startswith("max")] == ["max> (1,a)", "max> (2,a)", "max> (3,a)", "max> (4,b)"]
    assert [l for l in lines if l.startswith("min_by")] == ["min_by> (1,a)", "min_by> (1,a)", "min_by> (1,a)", "min_by> (4,b)"]


def test_batch_runtime_mode_emits_only_the_final_value_per_key():
    def build(env):
        env.from_collection([(1, "a"), (2, "a"), (3, "a"), (4, "b")], Types.TUPLE([Types.INT(), Types.STRING()])) \
            .key_by(lambda t: t[1], Types.STRING()).reduce(lambda a, b: (a[0] + b[0], a[1])).print()
        env.execute()

    assert sorted(run_job(build, "execution.runtime-mode=BATCH").lines) == ["(4,b)", "(6,a)"]


def test_user_function_failure_fails_the_job_with_operator_and_traceback():
    def parse(value):
        return 10 // (value - 2)

    def build(env):
        env.from_collection([1, 2, 3], Types.INT()).map(parse, Types.INT()).name("Parse").print()
        env.execute("failing")

    job = run_job(build)
    assert job.outcome.status == "FAILED"
    assert "failed (run " in str(job.error) and "in operator 'Parse': ZeroDivisionError" in str(job.error)
    failed = [e for e in job.events(ExecutionStateChanged) if e.new_state == "FAILED"]
    assert len(failed) == 1
    assert "Traceback (most recent call last)" in failed[0].failure and "in parse" in failed[0].failure
    statuses = [(e.old_status, e.new_status) for e in job.events(JobStatusChanged)]
    assert statuses == [("CREATED", "RUNNING"), ("RUNNING", "FAILING"), ("FAILING", "FAILED")]


@pytest.mark.parametrize("clock", ["simulated", "realtime"])
@pytest.mark.parametrize("error", [SystemExit(3), KeyboardInterrupt()], ids=["SystemExit", "KeyboardInterrupt"])
def test_system_exit_and_keyboard_interrupt_of_a_user_function_fail_its_operator(error, clock):
    """Not the run: the job fails naming the chained operator whose function raised."""
    def quit_on_two(value):
        if value == 2:
            raise error
        return value

    def build(env):
        env.from_collection([1, 2, 3], Types.INT()).map(quit_on_two, Types.INT()).name("Quitter").print()
        env.execute("quitting")

    job = run_job(build, f"rill.clock={clock}")
    assert job.outcome.status == "FAILED"
    described = "SystemExit: 3" if isinstance(error, SystemExit) else "KeyboardInterrupt"
    assert job.outcome.failure.splitlines()[0] == (
        f"Source: Collection Source -> Quitter -> Sink: Print to Std. Out (1/1) failed in operator 'Quitter': {described}")
    assert [e.new_status for e in job.events(JobStatusChanged)] == ["RUNNING", "FAILING", "FAILED"]


def test_a_chained_operator_failing_in_open_or_in_a_timer_output_is_the_one_named():
    class Opening(MapFunction):
        def open(self, runtime_context):
            raise SystemExit("no open")

        def map(self, value):
            return value

    def build_open(env):
        env.from_collection([1], Types.INT()).map(lambda v: v, Types.INT()).name("First") \
            .map(Opening(), Types.INT()).name("Opening").print()
        env.execute()

    failure = run_job(build_open).outcome.failure.splitlines()[0]
    assert failure.endswith("failed in operator 'Opening': SystemExit: no open")

    class Later(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 50)

        def on_timer(self, timestamp, ctx):
            yield ctx.get_current_key()

    def stop(value):
        raise KeyboardInterrupt

    def build_timer(env):
        env.from_source(DataGeneratorSource(lambda i: i, records_per_second=10, type_info=Types.LONG()),
                        WatermarkStrategy.no_watermarks(), "Numbers") \
            .key_by(lambda v: v % 2, Types.LONG()).process(Later(), Types.LONG()).name("Later") \
            .map(stop, Types.LONG()).name("Stop").print()
        env.execute()

    job = run_job(build_timer, "rill.duration=5 s")
    assert job.outcome.failure.splitlines()[0] == (
        "Later -> Stop -> Sink: Print to Std. Out (1/1) failed in operator 'Stop': KeyboardInterrupt")


def test_unbounded_generator_runs_until_the_duration_then_cancels_cleanly():
    def build(env):
        env.from_source(DataGeneratorSource(lambda i: i, records_per_second=10, type_info=Types.LONG()),
                        WatermarkStrategy.no_watermarks(), "Numbers").print()
        env.execute()

    job = run_job(build, "rill.duration=3 s")
    assert job.outcome.status == "CANCELED"
    assert job.lines == [str(i) for i in range(31)]  # records at t = 0, 100 ms, ..., 3000 ms
    assert job.outcome.clock_seconds == 3.0
    finals = [e.new_state for e in job.events(ExecutionStateChanged)][-2:]
    assert finals == ["CANCELING", "CANCELED"]


def test_a_long_unbounded_run_holds_only_the_timers_still_pending():
    """The issue-13 leak: a rate-limited source task kept a timer handle (and a suspension)
    for every wait it ever made. Over 60 s of simulated time a task holds a few timers."""
    from kernel import hookimpl
    from kernel.datastream.window import TumblingProcessingTimeWindows
    from kernel.common import Time

    class Tasks:
        def __init__(self):
            self.tasks = []
            self.held = []

        @hookimpl(tryfirst=True)
        def create_mailbox_processor(self, task, run):
            self.tasks.append(task)  # the default plugin creates the processor

    tasks = Tasks()

    def sample(value):
        tasks.held.append(max(len(task._timers) for task in tasks.tasks))

    def build(env):
        env.set_parallelism(2)
        env.from_source(DataGeneratorSource(lambda i: (i % 500, 1), records_per_second=2000),
                        WatermarkStrategy.no_watermarks(), "Keys") \
            .key_by(lambda t: t[0]).window(TumblingProcessingTimeWindows.of(Time.seconds(1))) \
            .reduce(lambda a, b: (a[0], a[1] + b[1])).add_sink(sample)
        env.execute()

    job = run_job(build, "rill.duration=60 s", plugins=(tasks,))
    assert job.outcome.status == "CANCELED" and len(tasks.held) == 60 * 500  # a window per second and key
    assert max(tasks.held) <= 64


def test_generator_randomness_is_seeded():
    from kernel.datastream.connectors.datagen import GeneratorFunction

    class Dice(GeneratorFunction):
        def open(self, context):
            self.random = context.random

        def map(self, index):
            return self.random.randint(1, 6)

    def build(env):
        env.from_source(DataGeneratorSource(Dice(), count=20, type_info=Types.INT()),
                        WatermarkStrategy.no_watermarks(), "Dice").print()
        env.execute()

    first, again, other = (run_job(build, f"rill.seed={seed}").lines for seed in (1, 1, 2))
    assert first == again and first != other and len(first) == 20


def test_execute_and_collect():
    from kernel.datastream import StreamExecutionEnvironment
    from kernel.lifecycle.executors import SessionExecutor, use_executor
    from kernel.lifecycle.session import Session

    with use_executor(SessionExecutor(Session.open(sets=["rill.clock=simulated"]), quiet=True)):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        numbers = env.from_collection([1, 2, 3], Types.INT()).map(lambda x: x * 10, Types.INT())
        assert sorted(numbers.execute_and_collect(limit=10)) == [10, 20, 30]
        with env.from_collection(["a", "b"]).execute_and_collect() as results:
            assert list(results) == ["a", "b"]


def test_partial_buffers_are_flushed_on_the_buffer_timeout():
    from kernel.datastream import SinkFunction

    def job(timeout: str) -> list:
        seen: list = []

        class Arrivals(SinkFunction):  # each subtask has its own copy; they share ``seen``
            def invoke(self, value, context):
                seen.append((value, context.current_processing_time()))

        def build(env):
            env.from_source(DataGeneratorSource(lambda i: i, records_per_second=50, type_info=Types.LONG()),
                            WatermarkStrategy.no_watermarks(), "Numbers").rebalance().add_sink(Arrivals())
            env.execute()

        run_job(build, "rill.duration=1 s", f"execution.buffer-timeout.interval={timeout}")
        return seen

    timed, immediate = job("100 ms"), job("0")
    # records are produced every 20 ms; with a 100 ms timeout they arrive at 100, 200, ... ms,
    # a tick taking what was emitted up to its instant (record 10 is produced at 200 ms)
    assert {t for _, t in timed} <= set(range(100, 1001, 100))
    assert [v for v, t in timed if t == 200] == [6, 7, 8, 9, 10]
    assert immediate == [(v, 20 * v) for v in range(51)]  # 0: flushed after every batch


def test_latency_markers_flow_from_sources_to_sinks():
    from kernel.runtime.cluster_events import TaskMetricsSampled

    def build(env):
        env.from_source(DataGeneratorSource(lambda i: i, records_per_second=100, type_info=Types.LONG()),
                        WatermarkStrategy.no_watermarks(), "Numbers").rebalance().add_sink(lambda v: None).name("Out")
        env.execute()

    job = run_job(build, "rill.duration=3 s", "metrics.latency.interval=500 ms")
    sink = [e for e in job.events(TaskMetricsSampled) if e.vertex_name == "Sink: Out" and not e.final]
    assert len(sink) == 3 and all(e.latency_ms == 0.0 for e in sink)  # no time passes in transit
    job = run_job(build, "rill.duration=2 s")
    sink = [e for e in job.events(TaskMetricsSampled) if e.vertex_name == "Sink: Out" and not e.final]
    assert all(e.latency_ms != e.latency_ms for e in sink)  # NaN: markers are off by default


def test_a_rate_limited_source_catches_up_at_most_one_second_after_a_stall():
    """Flink's GuavaRateLimiter (Guava's SmoothBursty, 20 permits a second here): the permit of
    each record is asked for after the previous record went through the chain, and granted at
    the limiter's next free moment. A chained map sleeps 3 s on record 4: asked for at 3.2 s,
    the permits not taken since 0.25 s are stored, at most one second's worth (20). Records 5-24
    take the stored ones at once, record 25 the next free moment (also 3.2 s; the interval is
    charged to the one after), then one per 50 ms from there. What it owed beyond a second is
    not made up (the catch-up that was: every record due since 0 s at once, 5-64)."""
    from kernel import clock

    class Stamp(ProcessFunction):
        def process_element(self, value, ctx):
            yield value, ctx.timer_service().current_processing_time()

    def stall(value):
        if value == 4:
            clock.sleep(3)
        return value

    def build(env):
        env.from_source(DataGeneratorSource(lambda i: i, count=40, records_per_second=20, type_info=Types.LONG()),
                        WatermarkStrategy.no_watermarks(), "Numbers") \
            .map(stall, Types.LONG()).process(Stamp()).print()
        env.execute()

    job = run_job(build)
    stamps = [tuple(map(int, line.strip("()").split(","))) for line in job.lines]
    start = stamps[0][1]
    times = [(value, time - start) for value, time in stamps]
    assert times[:5] == [(i, 50 * i) for i in range(5)]
    assert times[5:26] == [(i, 3200) for i in range(5, 26)]
    assert times[26:] == [(i, 3200 + 50 * (i - 25)) for i in range(26, 40)]
