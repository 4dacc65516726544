"""User metrics (PyFlink's ``MetricGroup`` API, :mod:`kernel.metrics`): the metric objects
and groups as Flink defines them, and every function kind counting through its runtime
context on the simulated clock — the ``user_metric_sampled`` events each task's samples
give, exactly. The command-line flows (SQL on every path, ``rill metrics``, ``replay
--at``, the report, every worker kind and the spark backend) are in ``test_user_metrics_cli.py``."""

from __future__ import annotations

import asyncio

import pytest

from kernel.runtime.cluster_events import TaskMetricsSampled, UserMetricSampled
from kernel.common import Configuration, Duration, Time, Types, WatermarkStrategy
from kernel.common.watermark_strategy import TimestampAssigner
from kernel.datastream import AsyncDataStream, StreamExecutionEnvironment
from kernel.datastream import functions as fn
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.state import MapStateDescriptor
from kernel.datastream.window import CountTrigger, TumblingEventTimeWindows
from kernel.metrics import Counter, Distribution, Gauge, Meter, Metric, MetricGroup
from kernel.metrics.groups import TaskMetricGroup
from kernel.metrics.metrics import MeterView
from tests.runtime import run_job

# -- the metric objects and groups ------------------------------------------------------------------


def test_kernel_metrics_has_pyflinks_names():
    import kernel.metrics

    assert {"MetricGroup", "Metric", "Counter", "Meter", "Distribution"} <= set(kernel.metrics.__all__)
    for name, methods in {"MetricGroup": ("add_group", "counter", "gauge", "meter", "distribution"),
                          "Counter": ("inc", "dec", "get_count"), "Meter": ("mark_event", "get_count"),
                          "Distribution": ("update",)}.items():
        assert all(callable(getattr(getattr(kernel.metrics, name), method)) for method in methods)
    assert all(issubclass(c, Metric) for c in (Counter, Meter, Distribution, Gauge))


@pytest.mark.parametrize("asked, span", [(60, 60), (12, 10), (7, 5), (5, 5), (3, 5), (0, 5), (-4, 5)])
def test_a_meters_span_is_cut_to_a_multiple_of_5_seconds_at_least_5(asked, span):
    assert MeterView(asked).time_span_in_seconds == span


def test_a_meters_rate_is_the_count_over_its_span_updated_every_5_seconds():
    meter = MeterView(10)  # a ring of three counts: now, 5 s and 10 s ago
    rates = []
    for marked in (10, 20, 5, 0, 40):
        meter.mark_event(marked)
        meter.update()
        rates.append(meter.get_rate())
    # counts 10, 30, 35, 35, 75: the difference to the count 10 s before (0 before the first)
    assert rates == [1.0, 3.0, 2.5, 0.5, 4.0] and meter.get_count() == 75


def test_groups_nest_and_give_the_metric_registered_first():
    """As PyFlink 2.3 (recorded): ``add_group("x").counter("n")`` twice is one counter (``inc()``
    on one and ``inc(10)`` on the other: both ``get_count()`` 11)."""
    metrics = TaskMetricGroup()
    operator = metrics.operator_group("Map", "ab12")
    value = operator.add_group("shop").add_group("region", "eu")
    assert value is operator.add_group("shop").add_group("region", "eu") and value.scope == "shop.region.eu"
    assert operator.add_group("region").scope == "region" and operator.add_group("region") is not \
        operator.add_group("region", "eu")
    counter = value.counter("orders")
    counter.inc()
    counter.inc(4)
    counter.dec(2)
    assert value.counter("orders") is counter and counter.get_count() == 3
    value.gauge("g", lambda: 1)
    value.gauge("g", lambda: 2)  # the newer callable, as PyFlink's dict of gauges
    meter = value.meter("m", 5)
    meter.mark_event()
    meter.mark_event(2)
    distribution = value.distribution("d")
    for v in (4, -1, 9):
        distribution.update(v)
    assert [(r["scope"], r["name"], r["metric_type"], r["value"], r.get("count"), r.get("sum"), r.get("min"),
             r.get("max")) for r in metrics.sample()] == [
        ("shop.region.eu", "orders", "counter", 3.0, 3, None, None, None),
        ("shop.region.eu", "g", "gauge", 2.0, None, None, None, None),
        ("shop.region.eu", "m", "meter", 0.0, 3, None, None, None),
        ("shop.region.eu", "d", "distribution", 9.0, 3, 12.0, -1.0, 9.0),
    ]
    assert {r["operator"] for r in metrics.sample()} == {"Map"} and {r["operator_id"] for r in metrics.sample()} == {"ab12"}


def test_a_name_registered_as_another_kind_or_not_a_str_is_refused():
    group = TaskMetricGroup().operator_group("Map").add_group("a")
    group.counter("n")
    with pytest.raises(ValueError, match="metric 'a.n' is registered as a counter: it cannot also be a meter"):
        group.meter("n")
    with pytest.raises(TypeError, match="a metric name must be a str, not int"):
        group.counter(3)
    with pytest.raises(TypeError, match="a metric group name must be a str, not NoneType"):
        group.add_group(None)
    with pytest.raises(TypeError, match="gauge 'g': obj must be a callable"):
        group.gauge("g", 5)
    with pytest.raises(TypeError, match="meter 'm': time_span_in_seconds must be an int, not str"):
        group.meter("m", "60")


def test_a_gauge_without_a_number_records_why():
    metrics = TaskMetricGroup()
    group = metrics.operator_group("Map")
    group.gauge("broken", lambda: 1 / 0)
    group.gauge("text", lambda: "many")
    group.gauge("flag", lambda: True)
    rows = metrics.sample()
    assert [(r["name"], r["value"], r["error"]) for r in rows] == [
        ("broken", None, "ZeroDivisionError: division by zero"),
        ("text", None, "returned 'many' (str), not a number"),
        ("flag", 1.0, ""),
    ]


def test_meters_update_every_fifth_periodic_sample_and_not_at_the_final_one():
    metrics = TaskMetricGroup()
    meter = metrics.operator_group("Map").meter("m", 5)
    rates = []
    for second in range(1, 12):
        meter.mark_event(second)
        rates.append(metrics.sample()[0]["value"])
    meter.mark_event(100)
    final = metrics.sample(final=True)[0]
    assert rates == [0.0] * 4 + [3.0] * 5 + [8.0] * 2 and (final["value"], final["count"]) == (8.0, 166)


# -- every function kind, on the simulated clock -------------------------------------------------------


def counted(group: MetricGroup, name: str) -> Counter:
    return group.add_group("calls").counter(name)


class Map(fn.MapFunction):
    def open(self, runtime_context):
        self.calls = counted(runtime_context.get_metrics_group(), "map")

    def map(self, value):
        self.calls.inc()
        return value


class FlatMap(fn.FlatMapFunction):
    def open(self, runtime_context):
        self.calls = counted(runtime_context.get_metrics_group(), "flat_map")

    def flat_map(self, value):
        self.calls.inc()
        yield value


class Filter(fn.FilterFunction):
    def open(self, runtime_context):
        self.calls = counted(runtime_context.get_metrics_group(), "filter")

    def filter(self, value):
        self.calls.inc()
        return value[1] % 5 != 4


class ByKey(fn.KeySelector):
    def open(self, runtime_context):
        self.calls = counted(runtime_context.get_metrics_group(), "key")

    def get_key(self, value):
        self.calls.inc()
        return value[0]


class Sum(fn.ReduceFunction):
    def open(self, runtime_context):
        self.calls = counted(runtime_context.get_metrics_group(), "reduce")

    def reduce(self, a, b):
        self.calls.inc()
        return a[0], a[1] + b[1]


class Timed(fn.KeyedProcessFunction):
    def open(self, runtime_context):
        self.elements = counted(runtime_context.get_metrics_group(), "keyed_process")
        self.timers = counted(runtime_context.get_metrics_group(), "on_timer")

    def process_element(self, value, ctx):
        self.elements.inc()
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1)
        yield value

    def on_timer(self, timestamp, ctx):
        self.timers.inc()


class Process(fn.ProcessFunction):
    def open(self, runtime_context):
        self.calls = counted(runtime_context.get_metrics_group(), "process")

    def process_element(self, value, ctx):
        self.calls.inc()
        yield value


class CoMap(fn.CoMapFunction):
    def open(self, runtime_context):
        self.calls = counted(runtime_context.get_metrics_group(), "co_map")

    def map1(self, value):
        self.calls.inc()
        return value

    def map2(self, value):
        self.calls.inc(10)
        return value


class KeyedCo(fn.KeyedCoProcessFunction):
    def open(self, runtime_context):
        self.calls = counted(runtime_context.get_metrics_group(), "keyed_co_process")

    def process_element1(self, value, ctx):
        self.calls.inc()
        yield value

    def process_element2(self, value, ctx):
        self.calls.inc(10)
        yield value


RULES = MapStateDescriptor("rules", Types.STRING(), Types.INT())


class Broadcast(fn.BroadcastProcessFunction):
    def open(self, runtime_context):
        self.calls = counted(runtime_context.get_metrics_group(), "broadcast")

    def process_element(self, value, ctx):
        self.calls.inc()
        yield value

    def process_broadcast_element(self, value, ctx):
        self.calls.inc(10)
        ctx.get_broadcast_state(RULES).put(value[0], value[1])


class KeyedBroadcast(fn.KeyedBroadcastProcessFunction):
    def open(self, runtime_context):
        self.calls = counted(runtime_context.get_metrics_group(), "keyed_broadcast")

    def process_element(self, value, ctx):
        self.calls.inc()
        yield value

    def process_broadcast_element(self, value, ctx):
        self.calls.inc(10)


class Add(fn.AggregateFunction):
    def open(self, runtime_context):
        self.calls = counted(runtime_context.get_metrics_group(), "aggregate")

    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        self.calls.inc()
        return accumulator + value[1]

    def get_result(self, accumulator):
        return accumulator

    def merge(self, a, b):
        return a + b


class Windowed(fn.ProcessWindowFunction):
    def open(self, runtime_context):
        self.calls = counted(runtime_context.get_metrics_group(), "process_window")

    def process(self, key, context, elements):
        self.calls.inc()
        yield key, sum(elements)


class EveryTwo(CountTrigger):
    """A count trigger counting its elements in the window operator's group."""

    def on_element(self, element, timestamp, window, ctx):
        ctx.get_metric_group().add_group("calls").counter("trigger").inc()
        return super().on_element(element, timestamp, window, ctx)


class Sink(fn.SinkFunction):
    def open(self, runtime_context):
        self.calls = counted(runtime_context.get_metrics_group(), "sink")

    def invoke(self, value, context):
        self.calls.inc()


class Lookup(fn.AsyncFunction):
    def open(self, runtime_context):
        self.calls = counted(runtime_context.get_metrics_group(), "async")

    async def async_invoke(self, value):
        await asyncio.sleep(0.01)
        self.calls.inc()
        return [value]


class Stamps(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def every_function_kind(env):
    """20 records ("a".."d", 0..19), through one function of each kind."""
    env.set_parallelism(1)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Stamps())
    records = env.from_collection([("abcd"[i % 4], i) for i in range(20)],
                                  Types.TUPLE([Types.STRING(), Types.INT()])).assign_timestamps_and_watermarks(strategy)
    mapped = records.map(Map(), records.get_type()).flat_map(FlatMap(), records.get_type()).filter(Filter())  # 16 left
    keyed = mapped.key_by(ByKey(), Types.STRING())
    keyed.reduce(Sum()).add_sink(Sink())
    keyed.process(Timed(), records.get_type()).process(Process(), records.get_type()).add_sink(lambda v: None)
    rules = env.from_collection([("x", 1), ("y", 2)], Types.TUPLE([Types.STRING(), Types.INT()]))
    mapped.connect(rules).map(CoMap(), records.get_type()).add_sink(lambda v: None)
    keyed.connect(rules.key_by(lambda r: r[0], Types.STRING())).process(KeyedCo(), records.get_type()) \
        .add_sink(lambda v: None)
    mapped.connect(rules.broadcast(RULES)).process(Broadcast(), records.get_type()).add_sink(lambda v: None)
    keyed.connect(rules.broadcast(RULES)).process(KeyedBroadcast(), records.get_type()).add_sink(lambda v: None)
    keyed.window(TumblingEventTimeWindows.of(Time.milliseconds(10))).aggregate(Add(), Windowed()) \
        .add_sink(lambda v: None)
    keyed.count_window(100).trigger(EveryTwo(2)).reduce(lambda a, b: (a[0], a[1] + b[1])).add_sink(lambda v: None)
    AsyncDataStream.unordered_wait(mapped, Lookup(), Duration.of_seconds(5), 4, records.get_type()) \
        .add_sink(lambda v: None)
    env.execute("every function kind")


def finals(job) -> dict[tuple[str, str], int]:
    """(operator, metric name) -> the count at the final sample, over subtasks."""
    found: dict[tuple[str, str], int] = {}
    for e in job.events(UserMetricSampled):
        if e.final:
            found[(e.operator, e.name)] = found.get((e.operator, e.name), 0) + e.count
    return found


def test_every_function_kind_counts_through_its_runtime_context():
    job = run_job(every_function_kind)
    assert job.outcome.status == "FINISHED", job.outcome.failure
    # 20 records; 4 filtered out (i % 5 == 4); keys a-d: 16 records, 4 per key; 2 rules
    assert finals(job) == {
        ("Map", "map"): 20, ("Flat Map", "flat_map"): 20, ("Filter", "filter"): 20,
        ("_stream_key_by_map_operator", "key"): 16,  # once per record, in the producing task
        ("Keyed Reduce", "reduce"): 12, ("Sink: Unnamed", "sink"): 16,  # 16 records of 4 keys
        ("KeyedProcess", "keyed_process"): 16, ("KeyedProcess", "on_timer"): 16, ("Process", "process"): 16,
        # 16 records, +1 each, and 2 rules, +10 each
        ("Co-Map", "co_map"): 36, ("Co-Keyed-Process", "keyed_co_process"): 36,
        ("Co-Process-Broadcast", "broadcast"): 36, ("Keyed-Co-Process-Broadcast", "keyed_broadcast"): 36,
        ("TumblingEventTimeWindows", "aggregate"): 16,
        ("TumblingEventTimeWindows", "process_window"): 8,  # 4 keys in [0, 10) and in [10, 20)
        ("CountTumblingWindowAssigner", "trigger"): 16, ("async wait operator", "async"): 16,
    }
    assert {e.scope for e in job.events(UserMetricSampled)} == {"calls"}
    assert {e.metric_type for e in job.events(UserMetricSampled)} == {"counter"}


def test_user_metrics_are_sampled_with_the_task_metrics_and_the_gauge_read_then():
    class Track(fn.MapFunction):
        def open(self, runtime_context):
            group = runtime_context.get_metrics_group().add_group("track")
            self.seen = group.counter("seen")
            self.latest = 0
            group.gauge("latest", lambda: self.latest)

        def map(self, value):
            self.seen.inc()
            self.latest = value
            return value

    def build(env):
        env.from_source(DataGeneratorSource(lambda i: i * 10, count=25, records_per_second=10),
                        WatermarkStrategy.no_watermarks(), "Numbers").map(Track(), Types.LONG()) \
            .add_sink(lambda v: None)
        env.execute("track")

    job = run_job(build)
    samples = [(e.time, e.interval_ms, e.final) for e in job.events(TaskMetricsSampled)]
    seen = [e for e in job.events(UserMetricSampled) if e.name == "seen"]
    latest = [e for e in job.events(UserMetricSampled) if e.name == "latest"]
    assert [(e.time, e.interval_ms, e.final) for e in seen] == samples == [(e.time, e.interval_ms, e.final) for e in latest]
    # 10 records a second from 0 s (the one due at a sample's instant comes after it), the last at
    # 2.4 s, when the task ends; the gauge reads the last one each sample saw
    assert [(e.time / 1e9, e.count) for e in seen] == [(1.0, 10), (2.0, 20), (2.4, 25)]
    assert [e.value for e in latest] == [90.0, 190.0, 240.0]
    assert {(e.operator, e.scope, e.vertex_name, e.subtask, e.attempt) for e in seen + latest} == {
        ("Map", "track", "Source: Numbers -> Map -> Sink: Unnamed", 0, 0)}
    assert run_job(build).events(UserMetricSampled) == job.events(UserMetricSampled)  # deterministic


def test_python_metric_enabled_false_gives_no_group_as_pyflink():
    """PyFlink 2.3 (recorded, with the key in the job's Configuration): ``get_metrics_group()``
    is None."""
    groups = []

    class Ask(fn.MapFunction):
        def open(self, runtime_context):
            groups.append(runtime_context.get_metrics_group())

        def map(self, value):
            return value

    def build(env, configured=False):
        if configured:
            config = Configuration()
            config.set_string("python.metric.enabled", "false")
            env.configure(config)
        env.from_collection([1, 2], Types.INT()).map(Ask(), Types.INT()).add_sink(lambda v: None)
        env.execute("off")

    for job in (run_job(build, "python.metric.enabled=false"), run_job(lambda env: build(env, True))):
        assert job.outcome.status == "FINISHED" and job.events(UserMetricSampled) == []
    assert groups == [None, None]
    run_job(build)
    assert isinstance(groups[-1], MetricGroup)


def test_a_restarted_attempt_counts_from_zero():
    class FailOnce(fn.MapFunction):
        failed = False

        def open(self, runtime_context):
            self.seen = runtime_context.get_metrics_group().counter("seen")

        def map(self, value):
            self.seen.inc()
            if value == 5 and not FailOnce.failed:
                FailOnce.failed = True
                raise RuntimeError("once")
            return value

    def build(env):
        env.from_collection(list(range(10)), Types.INT()).map(FailOnce(), Types.INT()).add_sink(lambda v: None)
        env.execute("restart")

    job = run_job(build, "restart-strategy.type=fixed-delay")
    assert job.outcome.status == "FINISHED"
    ends = {e.attempt: e.count for e in job.events(UserMetricSampled) if e.final}
    assert ends == {0: 6, 1: 10}


def test_a_key_selector_counts_once_per_record_in_the_producing_task_as_pyflink():
    """Recorded with PyFlink 2.3 (the counts read with ``get_count()``): the KeySelector opened
    once, in ``Source: Collection Source -> _stream_key_by_map_operator``, counting 20 for 20
    records although two operators consume the keyed stream; the reduce's subtasks 11 and 6
    reductions (meter: 3 events each)."""

    class Sel(fn.KeySelector):
        def open(self, runtime_context):
            self.keys = runtime_context.get_metrics_group().counter("keys")

        def get_key(self, value):
            self.keys.inc()
            return value % 3

    class Add(fn.ReduceFunction):
        def open(self, runtime_context):
            self.reduced = runtime_context.get_metrics_group().add_group("r").counter("reduced")
            self.events = runtime_context.get_metrics_group().meter("m", 7)

        def reduce(self, a, b):
            self.reduced.inc()
            self.events.mark_event(3)
            return a + b

    def build(env):
        env.set_parallelism(2)
        keyed = env.from_collection(list(range(1, 21)), Types.INT()).key_by(Sel(), Types.INT())
        keyed.reduce(Add()).print()
        keyed.map(lambda x: x * 10, Types.INT()).print()
        env.execute("ks")

    job = run_job(build)
    ends = {(e.vertex_name, e.subtask, e.operator, e.name): e.count for e in job.events(UserMetricSampled) if e.final}
    assert ends == {
        ("Source: Collection Source", 0, "_stream_key_by_map_operator", "keys"): 20,
        ("Keyed Reduce -> Sink: Print to Std. Out", 0, "Keyed Reduce", "reduced"): 11,
        ("Keyed Reduce -> Sink: Print to Std. Out", 1, "Keyed Reduce", "reduced"): 6,
        ("Keyed Reduce -> Sink: Print to Std. Out", 0, "Keyed Reduce", "m"): 33,
        ("Keyed Reduce -> Sink: Print to Std. Out", 1, "Keyed Reduce", "m"): 18,
    }
