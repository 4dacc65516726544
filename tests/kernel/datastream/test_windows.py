"""Windows end to end: exact results of time, session, count and global windows, window
functions, lateness, late data and the side output, at parallelism 1 and 2."""

from __future__ import annotations

import pytest

from kernel.runtime.cluster_events import TaskMetricsSampled
from kernel.common import Duration, Time, Types, WatermarkStrategy
from kernel.common.watermark_strategy import TimestampAssigner
from kernel.datastream import (
    AggregateFunction,
    AllWindowFunction,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.output_tag import OutputTag
from kernel.datastream.state import ValueStateDescriptor
from kernel.datastream.window import (
    CountTrigger,
    DynamicEventTimeSessionWindows,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindows,
    PurgingTrigger,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from tests.runtime import run_job

# PyFlink's test_window.py data: (key, timestamp)
HI = [("hi", 1), ("hi", 2), ("hi", 3), ("hi", 4), ("hi", 5), ("hi", 8), ("hi", 9), ("hi", 15)]


class SecondColumn(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def monotonous():
    return WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(SecondColumn())


class CountWindowProcess(ProcessWindowFunction):
    """PyFlink's test function: (key, window start, window end, number of elements)."""

    def process(self, key, context, elements):
        window = context.window()
        yield key, window.start, window.end, len(list(elements))


def collection_job(data, windowing, parallelism: int = 1, results: list | None = None):
    """``windowing(keyed_stream) -> stream`` over ``data`` with monotonous timestamps; results
    are appended to ``results``."""

    def build(env):
        env.set_parallelism(parallelism)
        stream = env.from_collection(data).assign_timestamps_and_watermarks(monotonous())
        windowing(stream.key_by(lambda v: v[0], Types.STRING())).add_sink(results.append)
        env.execute("windows")

    return build


def run_windows(data, windowing, parallelism: int = 1, *sets: str) -> list:
    results: list = []
    job = run_job(collection_job(data, windowing, parallelism, results), *sets)
    assert job.outcome.status == "FINISHED", job.error
    return results


# -- PyFlink's vectors ---------------------------------------------------------------------------


@pytest.mark.parametrize("parallelism", [1, 2])
def test_tumbling_event_time_windows(parallelism):
    results = run_windows(HI, lambda s: s.window(TumblingEventTimeWindows.of(Time.milliseconds(5)))
                          .process(CountWindowProcess()), parallelism)
    assert sorted(results) == [("hi", 0, 5, 4), ("hi", 5, 10, 3), ("hi", 15, 20, 1)]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_sliding_event_time_windows(parallelism):
    results = run_windows(HI, lambda s: s.window(SlidingEventTimeWindows.of(Time.milliseconds(5), Time.milliseconds(2)))
                          .process(CountWindowProcess()), parallelism)
    assert sorted(results) == sorted([
        ("hi", -2, 3, 2), ("hi", 0, 5, 4), ("hi", 2, 7, 4), ("hi", 4, 9, 3), ("hi", 6, 11, 2), ("hi", 8, 13, 2),
        ("hi", 12, 17, 1), ("hi", 14, 19, 1),
    ])


@pytest.mark.parametrize("parallelism", [1, 2])
def test_event_time_session_windows(parallelism):
    data = [("hi", 1), ("hi", 2), ("hi", 3), ("hi", 4), ("hi", 8), ("hi", 9), ("hi", 15)]
    results = run_windows(data, lambda s: s.window(EventTimeSessionWindows.with_gap(Time.milliseconds(5)))
                          .process(CountWindowProcess()), parallelism)
    assert sorted(results) == [("hi", 1, 14, 6), ("hi", 15, 20, 1)]


def test_a_late_record_bridging_two_sessions_merges_them():
    results = run_windows([("hi", 0), ("hi", 8), ("hi", 4)],
                          lambda s: s.window(EventTimeSessionWindows.with_gap(Time.milliseconds(5)))
                          .process(CountWindowProcess()))
    assert results == [("hi", 0, 13, 3)]


def test_dynamic_session_gap():
    class GapFromValue(SessionWindowTimeGapExtractor):
        def extract(self, element):
            return 10 if element[0] == "a" else 2

    data = [("a", 1), ("b", 1), ("a", 9), ("b", 4), ("a", 30), ("b", 5)]
    # a: [1,11) and [9,19) merge to [1,19); [30,40). b: [1,3); [4,6) and [5,7) merge to [4,7)
    expected = [("a", 1, 19, 2), ("a", 30, 40, 1), ("b", 1, 3, 1), ("b", 4, 7, 2)]
    for assigner in (EventTimeSessionWindows.with_dynamic_gap(GapFromValue()),
                     DynamicEventTimeSessionWindows.with_dynamic_gap(GapFromValue())):
        results = run_windows(data, lambda s: s.window(assigner).process(CountWindowProcess()), 2)
        assert sorted(results) == expected


class SumWindow(WindowFunction):
    def apply(self, key, window, inputs):
        yield key, sum(v for v, _ in inputs)


def test_count_tumbling_windows_as_pyflink():
    data = [(1, "hi"), (2, "hello"), (3, "hi"), (4, "hello"), (5, "hi"), (6, "hello"), (6, "hello")]

    def build(env):
        env.from_collection(data).key_by(lambda v: v[1], Types.STRING()).count_window(3) \
            .apply(SumWindow()).add_sink(results.append)
        env.execute("count tumbling")

    results: list = []
    run_job(build)
    assert sorted(results) == [("hello", 12), ("hi", 9)]


def test_count_sliding_windows_as_pyflink():
    data = [(1, "hi"), (2, "hello"), (3, "hi"), (4, "hello"), (5, "hi"), (6, "hello")]

    def build(env):
        env.from_collection(data).key_by(lambda v: v[1], Types.STRING()).count_window(2, 1) \
            .apply(SumWindow()).add_sink(results.append)
        env.execute("count sliding")

    results: list = []
    run_job(build)
    assert sorted(results) == [("hello", 6), ("hello", 10), ("hi", 4), ("hi", 8)]


def test_count_windows_count_each_subtasks_keys_at_parallelism_2():
    """Each subtask has its own count window assigner (its counter is keyed state of the
    subtask's backend, as each PyFlink subtask deserialises its own): every window holds four
    consecutive records of one key."""
    def build(env):
        env.set_parallelism(2)
        env.from_source(DataGeneratorSource(lambda i: i, count=60, records_per_second=50, type_info=Types.INT()),
                        WatermarkStrategy.no_watermarks(), "Numbers").set_parallelism(1) \
            .key_by(lambda v: v % 3, Types.INT()).count_window(4).reduce(lambda a, b: a + b).add_sink(results.append)
        env.execute("count windows")

    results: list = []
    assert run_job(build).outcome.status == "FINISHED"
    assert sorted(results) == sorted(sum(range(start, start + 12, 3)) for key in range(3)
                                     for start in range(key, 60, 12))


def test_global_windows_with_a_purging_count_trigger():
    class CountAll(ProcessWindowFunction):
        def process(self, key, context, elements):
            yield key, len(list(elements))

    def build(env):
        env.from_collection([("hi", i) for i in range(7)]).key_by(lambda v: v[0], Types.STRING()) \
            .window(GlobalWindows.create()).trigger(PurgingTrigger.of(CountTrigger.of(2))) \
            .process(CountAll()).add_sink(results.append)
        env.execute("global")

    results: list = []
    run_job(build)
    assert results == [("hi", 2)] * 3


# -- window functions ------------------------------------------------------------------------------


class Average(AggregateFunction):
    def create_accumulator(self):
        return 0, 0

    def add(self, value, accumulator):
        return accumulator[0] + value[1], accumulator[1] + 1

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, a, b):
        return a[0] + b[0], a[1] + b[1]


class WithWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        for element in elements:
            yield key, context.window().start, context.window().max_timestamp(), element


class ApplyWithWindow(WindowFunction):
    def apply(self, key, window, inputs):
        for value in inputs:
            yield key, window.start, value


DATA = [("a", 1), ("hi", 2), ("a", 6), ("a", 7), ("hi", 3), ("hi", 11), ("a", 12)]
TUMBLING = TumblingEventTimeWindows.of(Time.milliseconds(5))


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("assigner", ["aligned", "generic"])
def test_reduce_aggregate_apply_and_process(parallelism, assigner):
    def window(s):
        windowed = s.window(TUMBLING)
        if assigner == "generic":  # a trigger subclass takes the generic WindowOperator
            windowed = windowed.trigger(type("MyEventTimeTrigger", (EventTimeTrigger,), {})())
        return windowed

    reduced = run_windows(DATA, lambda s: window(s).reduce(lambda x, y: (x[0], x[1] + y[1])), parallelism)
    assert sorted(reduced) == [("a", 1), ("a", 12), ("a", 13), ("hi", 5), ("hi", 11)]
    reduced_process = run_windows(
        DATA, lambda s: window(s).reduce(lambda x, y: (x[0], x[1] + y[1]), window_function=WithWindow()), parallelism)
    assert sorted(reduced_process) == [("a", 0, 4, ("a", 1)), ("a", 5, 9, ("a", 13)), ("a", 10, 14, ("a", 12)),
                                       ("hi", 0, 4, ("hi", 5)), ("hi", 10, 14, ("hi", 11))]
    averaged = run_windows(DATA, lambda s: window(s).aggregate(Average()), parallelism)
    assert sorted(averaged) == [1.0, 2.5, 6.5, 11.0, 12.0]
    averaged_apply = run_windows(DATA, lambda s: window(s).aggregate(Average(), window_function=ApplyWithWindow()),
                                 parallelism)
    assert sorted(averaged_apply) == [("a", 0, 1.0), ("a", 5, 6.5), ("a", 10, 12.0), ("hi", 0, 2.5), ("hi", 10, 11.0)]
    applied = run_windows(DATA, lambda s: window(s).apply(ApplyWithWindow()), parallelism)
    assert sorted(applied) == [("a", 0, ("a", 1)), ("a", 5, ("a", 6)), ("a", 5, ("a", 7)), ("a", 10, ("a", 12)),
                               ("hi", 0, ("hi", 2)), ("hi", 0, ("hi", 3)), ("hi", 10, ("hi", 11))]


def test_results_carry_the_window_max_timestamp():
    class Stamp(ProcessWindowFunction):
        def process(self, key, context, elements):
            yield key, context.current_watermark()

    def build(env):
        stream = env.from_collection(DATA).assign_timestamps_and_watermarks(monotonous())
        windowed = stream.key_by(lambda v: v[0], Types.STRING()).window(TUMBLING).process(Stamp())

        from kernel.datastream import ProcessFunction

        class WithTimestamp(ProcessFunction):
            def process_element(self, value, ctx):
                yield value[0], ctx.timestamp()

        windowed.process(WithTimestamp()).add_sink(results.append)
        env.execute("timestamps")

    results: list = []
    run_job(build)
    assert sorted(results) == [("a", 4), ("a", 9), ("a", 14), ("hi", 4), ("hi", 14)]


def test_window_state_and_global_state_in_a_process_window_function():
    class Firings(ProcessWindowFunction):
        def process(self, key, context, elements):
            per_window = context.window_state().get_state(ValueStateDescriptor("fired", Types.INT()))
            per_key = context.global_state().get_state(ValueStateDescriptor("fired", Types.INT()))
            per_window.update((per_window.value() or 0) + 1)
            per_key.update((per_key.value() or 0) + 1)
            yield key, context.window().start, per_window.value(), per_key.value()

    results = run_windows(DATA, lambda s: s.window(TUMBLING).process(Firings()))
    assert sorted(results) == [("a", 0, 1, 1), ("a", 5, 1, 2), ("a", 10, 1, 3), ("hi", 0, 1, 1), ("hi", 10, 1, 2)]


def test_window_all():
    class Everything(ProcessAllWindowFunction):
        def process(self, context, elements):
            yield context.window().start, sorted(v[1] for v in elements)

    class Count(AllWindowFunction):
        def apply(self, window, inputs):
            yield window.start, len(list(inputs))

    def build(env):
        stream = env.from_collection(DATA).assign_timestamps_and_watermarks(monotonous())
        stream.window_all(TUMBLING).process(Everything()).add_sink(results.append)
        stream.window_all(TUMBLING).apply(Count()).add_sink(counts.append)
        env.execute("all windows")

    results: list = []
    counts: list = []
    run_job(build)
    assert sorted(results) == [(0, [1, 2, 3]), (5, [6, 7]), (10, [11, 12])]
    assert sorted(counts) == [(0, 3), (5, 2), (10, 2)]


# -- lateness ------------------------------------------------------------------------------------


def scripted_job(records, windowing, results: list, late: list | None = None, rate: int = 10):
    """One record every 1000/rate ms of (simulated) processing time, watermarks (monotonous)
    every 100 ms: a tick at 100·k sees records 0 .. k-1."""

    def build(env):
        source = env.from_source(DataGeneratorSource(records.__getitem__, count=len(records), records_per_second=rate),
                                 monotonous(), "Records")
        windowed = windowing(source.key_by(lambda v: v[0], Types.STRING()))
        windowed.add_sink(results.append)
        if late is not None:
            windowed.get_side_output(LATE).add_sink(late.append)
        env.execute("lateness")

    return build


LATE = OutputTag("late", Types.TUPLE([Types.STRING(), Types.LONG()]))
# arrives at 0, 100, 200, 300, 400 ms; the ticks at 200, 300, 400 see watermarks 11, 11, 24
LATENESS = [("a", 1), ("a", 12), ("a", 5), ("a", 25), ("a", 14)]


def ten_ms_counts(lateness: int = 0, side_output: bool = False, generic: bool = False):
    def windowing(keyed):
        windowed = keyed.window(TumblingEventTimeWindows.of(Time.milliseconds(10)))
        if generic:
            windowed = windowed.trigger(type("MyEventTimeTrigger", (EventTimeTrigger,), {})())
        if lateness:
            windowed = windowed.allowed_lateness(lateness)
        if side_output:
            windowed = windowed.side_output_late_data(LATE)
        return windowed.process(CountWindowProcess())

    return windowing


@pytest.mark.parametrize("generic", [False, True])
def test_late_records_are_dropped_and_counted(generic):
    results: list = []
    job = run_job(scripted_job(LATENESS, ten_ms_counts(generic=generic), results), "pipeline.auto-watermark-interval=100 ms")
    # [0,10) fires at watermark 11 with the 1; 5 then is late (9 <= 11), so is 14 at 24
    assert results == [("a", 0, 10, 1), ("a", 10, 20, 1), ("a", 20, 30, 1)]
    window_task = [e for e in job.events(TaskMetricsSampled) if e.vertex_name.startswith("TumblingEventTimeWindows")]
    assert sum(e.late_records_dropped for e in window_task) == 2


@pytest.mark.parametrize("generic", [False, True])
def test_late_records_go_to_the_side_output(generic):
    results: list = []
    late: list = []
    job = run_job(scripted_job(LATENESS, ten_ms_counts(side_output=True, generic=generic), results, late),
                  "pipeline.auto-watermark-interval=100 ms")
    assert results == [("a", 0, 10, 1), ("a", 10, 20, 1), ("a", 20, 30, 1)]
    assert late == [("a", 5), ("a", 14)]
    window_task = [e for e in job.events(TaskMetricsSampled) if e.vertex_name.startswith("TumblingEventTimeWindows")]
    assert sum(e.late_records_dropped for e in window_task) == 0


@pytest.mark.parametrize("generic", [False, True])
def test_allowed_lateness_re_fires_the_window_with_the_late_record(generic):
    results: list = []
    late: list = []
    job = run_job(scripted_job(LATENESS, ten_ms_counts(lateness=10, side_output=True, generic=generic), results, late),
                  "pipeline.auto-watermark-interval=100 ms")
    # 5 arrives at watermark 11: [0,10) is kept until 9 + 10 = 19, fires again at once with
    # both; 14 arrives at watermark 24 (< 19 + 10) and re-fires [10,20)
    assert results == [("a", 0, 10, 1), ("a", 0, 10, 2), ("a", 10, 20, 1), ("a", 10, 20, 2), ("a", 20, 30, 1)]
    assert late == []
    assert job.outcome.status == "FINISHED"


def test_a_record_later_than_the_allowed_lateness_is_late():
    results: list = []
    late: list = []
    records = [("a", 1), ("a", 40), ("a", 5)]  # 5 arrives at watermark 39 > 9 + 20
    run_job(scripted_job(records, ten_ms_counts(lateness=20, side_output=True), results, late),
            "pipeline.auto-watermark-interval=100 ms")
    assert results == [("a", 0, 10, 1), ("a", 40, 50, 1)]
    assert late == [("a", 5)]


def test_sessions_bridged_by_a_record_within_the_lateness():
    results: list = []
    # 8 arrives at watermark 0 (session [0,5) fired at the tick seeing 1..), then 4 bridges
    records = [("a", 0), ("a", 6), ("a", 20), ("a", 4)]

    def windowing(keyed):
        return keyed.window(EventTimeSessionWindows.with_gap(Time.milliseconds(5))).allowed_lateness(30) \
            .process(CountWindowProcess())

    run_job(scripted_job(records, windowing, results), "pipeline.auto-watermark-interval=100 ms")
    # watermark 5 fires [0,5) (max ts 4 <= 5); 6 opens [6,11); 20 makes the watermark 19 and
    # fires [6,11); 4 ([4,9)) bridges both into [0,11), which fires at once (10 <= 19) with all
    # three; [20,25) fires at the end
    assert results == [("a", 0, 5, 1), ("a", 6, 11, 1), ("a", 0, 11, 3), ("a", 20, 25, 1)]


# -- processing time -----------------------------------------------------------------------------


def processing_time_job(count: int, assigner, results: list):
    def build(env):
        env.from_source(DataGeneratorSource(lambda i: ("k", i), count=count, records_per_second=100),
                        WatermarkStrategy.no_watermarks(), "Records") \
            .key_by(lambda v: v[0], Types.STRING()) \
            .window(assigner) \
            .process(CountWindowProcess()).add_sink(results.append)
        env.execute("processing time")

    return build


def test_tumbling_processing_time_windows_count_what_arrives_per_second():
    results: list = []
    job = run_job(processing_time_job(250, TumblingProcessingTimeWindows.of(Time.seconds(1)), results))
    # the simulated clock starts at 0 and record i is read at 10·i ms; records reach the window
    # task when the 100 ms buffer timeout flushes them, a tick taking what was read up to its
    # instant (records 0-10 at 100 ms, 91-100 at 1000 ms), so [0, 1 s) sees 91 of them. The
    # source ends at 2.49 s: like Flink, pending processing-time timers do not fire at end of
    # input, so [2 s, 3 s) never fires.
    assert results == [("k", 0, 1000, 91), ("k", 1000, 2000, 100)]
    assert job.outcome.status == "FINISHED" and job.outcome.clock_seconds == 2.49


def test_sliding_processing_time_windows():
    results: list = []
    run_job(processing_time_job(300, SlidingProcessingTimeWindows.of(Time.seconds(1), Time.milliseconds(500)), results))
    # arrivals at 100 (eleven records), 200, ... ms (ten each); the end of input at 2.99 s comes
    # before [2 s, 3 s) fires at 2,999 ms
    assert results == [("k", -500, 500, 41), ("k", 0, 1000, 91), ("k", 500, 1500, 100), ("k", 1000, 2000, 100),
                       ("k", 1500, 2500, 100)]


def test_event_time_windows_without_timestamps_fail_clearly():
    def build(env):
        env.from_collection([("a", 1)]).key_by(lambda v: v[0]) \
            .window(TumblingEventTimeWindows.of(Time.milliseconds(5))).reduce(lambda a, b: a).print()
        env.execute("no timestamps")

    job = run_job(build)
    assert job.outcome.status == "FAILED"
    assert "Long.MIN_VALUE timestamp" in str(job.error)


def test_bounded_out_of_orderness_keeps_windows_open_for_the_delay():
    results: list = []
    records = [("a", 1), ("a", 12), ("a", 5), ("a", 25), ("a", 14)]

    def build(env):
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(10)) \
            .with_timestamp_assigner(SecondColumn())
        source = env.from_source(DataGeneratorSource(records.__getitem__, count=len(records), records_per_second=10),
                                 strategy, "Records")
        source.key_by(lambda v: v[0], Types.STRING()).window(TumblingEventTimeWindows.of(Time.milliseconds(10))) \
            .process(CountWindowProcess()).add_sink(results.append)
        env.execute("out of orderness")

    run_job(build, "pipeline.auto-watermark-interval=100 ms")
    # watermarks 1, 1, 14 (= 25 - 10 - 1): nothing is late; [0,10) fires with 1 and 5
    assert results == [("a", 0, 10, 2), ("a", 10, 20, 2), ("a", 20, 30, 1)]
