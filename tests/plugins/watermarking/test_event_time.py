"""Event time end to end: generators, periodic emission, idleness, the valve in tasks, two
inputs, watermark events and the per-second event-time counters."""

from __future__ import annotations

from kernel.runtime.cluster_events import TaskMetricsSampled, WatermarkAdvanced, WatermarkStatusChanged
from kernel.common import Duration, Time, WatermarkStrategy
from kernel.common.watermark_strategy import TimestampAssigner
from kernel.datastream import CoProcessFunction, KeyedProcessFunction
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.connectors.file_system import FileSource, StreamFormat
from kernel.datastream.window import TumblingEventTimeWindows
from plugins.watermarking.generators import BoundedOutOfOrdernessWatermarks, WatermarksWithIdleness, create_generator
from tests.runtime import run_job

MIN = -(1 << 63)
MAX = (1 << 63) - 1


class Output:
    def __init__(self) -> None:
        self.out: list = []

    def emit_watermark(self, timestamp: int) -> None:
        self.out.append(timestamp)

    def mark_idle(self) -> None:
        self.out.append("IDLE")

    def mark_active(self) -> None:
        self.out.append("ACTIVE")


# -- generators --------------------------------------------------------------------------------


def test_bounded_out_of_orderness_emits_max_minus_delay_minus_one():
    generator = BoundedOutOfOrdernessWatermarks(2_000)
    out = Output()
    generator.on_periodic_emit(out)
    generator.on_events(["a", "b"], [10_000, 12_500], out)
    generator.on_periodic_emit(out)
    generator.on_events(["c"], [11_000], out)  # out of order: the maximum stays
    generator.on_periodic_emit(out)
    assert out.out == [MIN, 10_499, 10_499]


def test_monotonous_timestamps_are_bounded_with_zero_delay():
    strategy = WatermarkStrategy.for_monotonous_timestamps()
    generator = create_generator(strategy, lambda: 0)
    out = Output()
    generator.on_events([1], [41], out)
    generator.on_periodic_emit(out)
    assert out.out == [40]


def test_idleness_follows_flinks_idleness_timer():
    now = [0]
    generator = WatermarksWithIdleness(BoundedOutOfOrdernessWatermarks(0), 1_000, lambda: now[0])
    out = Output()
    idle_at = None
    for tick in range(1, 12):
        now[0] = tick * 200
        if tick == 1:
            generator.on_events(["x"], [100], out)
        generator.on_periodic_emit(out)
        if out.out[-1] == "IDLE" and idle_at is None:
            idle_at = now[0]
    # events seen at the check at 200; the check at 400 starts the inactivity; idle once a
    # check is more than 1,000 ms after that: at 1,600
    assert idle_at == 1_600
    assert out.out[:7] == [99, 99, 99, 99, 99, 99, 99]
    assert out.out[7:] == ["IDLE"] * 4


def test_the_strategy_api_as_pyflink():
    class Second(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value[1]

    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5)).with_timestamp_assigner(Second())
    idle = strategy.with_idleness(Duration.of_minutes(1))
    assert strategy.out_of_orderness_ms == 5_000 and strategy.idleness_ms is None
    assert idle.idleness_ms == 60_000 and idle.timestamp_assigner is strategy.timestamp_assigner
    assert WatermarkStrategy.no_watermarks().kind == "none"


# -- in a running job --------------------------------------------------------------------------


def watermarks(job, vertex: str, direction: str = "output") -> list[int]:
    return [e.watermark for e in job.events(WatermarkAdvanced) if e.vertex_name == vertex and e.direction == direction]


def test_sources_emit_periodic_watermarks_and_the_max_at_the_end():
    def build(env):
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(50)) \
            .with_timestamp_assigner(lambda value, ts: value * 10)
        env.from_source(DataGeneratorSource(lambda i: i, count=1_000, records_per_second=500), strategy, "Numbers") \
            .add_sink(lambda v: None).name("Sink")
        env.execute("periodic")

    job = run_job(build)
    assert job.outcome.status == "FINISHED"
    emitted = watermarks(job, "Source: Numbers -> Sink: Sink")
    # 500 records/s: by each 200 ms tick 100 more records (record 100 is due at 200 ms, after
    # the tick), timestamps 10 ms apart; the source ends with the final MAX watermark
    assert emitted[:3] == [990 - 50 - 1, 1_990 - 50 - 1, 2_990 - 50 - 1]
    assert emitted[-1] == MAX
    assert emitted == sorted(set(emitted))


def test_periodic_emission_follows_pipeline_auto_watermark_interval():
    def build(env):
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda value, ts: value)
        env.from_source(DataGeneratorSource(lambda i: i, count=400, records_per_second=100), strategy, "Numbers") \
            .key_by(lambda v: v % 2).map(lambda v: v).name("Forward").add_sink(lambda v: None).name("Sink")
        env.execute("interval")

    job = run_job(build, "pipeline.auto-watermark-interval=1 s")
    source = [e for e in job.events(WatermarkAdvanced) if e.vertex_name == "Source: Numbers" and e.direction == "output"]
    assert [e.time // 1_000_000 for e in source[:3]] == [1_000, 2_000, 3_000]
    assert [e.watermark for e in source[:3]] == [98, 198, 298]  # 100 records a second, ts = index: max - 1
    # downstream: what the valve passed on (input) and what the task sent on (output)
    inputs = watermarks(job, "Forward -> Sink: Sink", "input")
    assert inputs[:3] == [98, 198, 298] and inputs[-1] == MAX


def test_no_watermarks_means_no_watermark_but_the_final_one_is_not_sent_either():
    def build(env):
        env.from_source(DataGeneratorSource(lambda i: i, count=10), WatermarkStrategy.no_watermarks(), "Numbers") \
            .rebalance().add_sink(lambda v: None).name("Sink")
        env.execute("no watermarks")

    job = run_job(build)
    assert job.outcome.status == "FINISHED"
    assert watermarks(job, "Source: Numbers") == [MAX]  # end of input


def three_sources_job(idleness: bool, results: list):
    """Two generators producing forever and a file source that stops after its lines:
    1-second tumbling event-time windows count per source."""

    def build(env, directory):
        def strategy():
            base = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(100)) \
                .with_timestamp_assigner(lambda value, ts: value[1])
            return base.with_idleness(Duration.of_seconds(2)) if idleness else base

        fast = env.from_source(DataGeneratorSource(lambda i: ("a", i * 10), records_per_second=100), strategy(), "A")
        slow = env.from_source(DataGeneratorSource(lambda i: ("b", i * 20), records_per_second=50), strategy(), "B")
        lines = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(directory)) \
            .monitor_continuously(Duration.of_seconds(1)).build()
        parsed = env.from_source(lines, WatermarkStrategy.no_watermarks(), "Lines") \
            .map(lambda line: ("c", int(line)))
        stopped = parsed.assign_timestamps_and_watermarks(strategy())
        fast.union(slow, stopped) \
            .key_by(lambda v: v[0]) \
            .window(TumblingEventTimeWindows.of(Time.seconds(1))) \
            .reduce(lambda a, b: (a[0], max(a[1], b[1]))) \
            .add_sink(results.append)
        env.execute("three sources")

    return build


def run_three_sources(tmp_path, idleness: bool):
    directory = tmp_path / "lines"
    directory.mkdir()
    (directory / "part-0").write_text("".join(f"{t}\n" for t in range(0, 1_500, 100)))
    results: list = []
    build = three_sources_job(idleness, results)
    job = run_job(lambda env: build(env, directory), "rill.duration=12 s")
    return job, results


def test_with_idleness_windows_keep_firing_when_one_source_stops(tmp_path):
    job, results = run_three_sources(tmp_path, idleness=True)
    assert job.outcome.status == "CANCELED"  # rill.duration
    fired_a = sorted(r[1] // 1000 for r in results if r[0] == "a")
    # the file's source goes idle 2 s after its last line; from then on the other two drive
    # event time: A's windows fire all through the 12 s run, [0, 1 s) ... [10 s, 11 s)
    assert fired_a == list(range(11))
    assert sorted(r for r in results if r[0] == "c") == [("c", 900), ("c", 1400)]
    statuses = [(e.vertex_name, e.direction, e.status) for e in job.events(WatermarkStatusChanged)]
    assert ("Source: Lines -> Map -> Timestamps/Watermarks", "output", "IDLE") in statuses


def test_without_idleness_windows_stall_when_one_source_stops(tmp_path):
    job, results = run_three_sources(tmp_path, idleness=False)
    assert job.outcome.status == "CANCELED"
    fired_a = sorted(r[1] // 1000 for r in results if r[0] == "a")
    # the file source's watermark stays at 1,400 - 100 - 1: only the window [0, 1 s) completes
    assert fired_a == [0]
    assert not job.events(WatermarkStatusChanged)


def test_a_two_input_operator_follows_the_minimum_of_its_inputs():
    seen: list = []

    class Watch(CoProcessFunction):
        def process_element1(self, value, ctx):
            seen.append(("1", value, ctx.timer_service().current_watermark()))

        def process_element2(self, value, ctx):
            seen.append(("2", value, ctx.timer_service().current_watermark()))

    def build(env):
        def strategy():
            return WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, ts: v)

        ahead = env.from_source(DataGeneratorSource(lambda i: 10_000 + i * 100, count=50, records_per_second=10),
                                strategy(), "Ahead")
        behind = env.from_source(DataGeneratorSource(lambda i: i * 100, count=50, records_per_second=10),
                                 strategy(), "Behind")
        ahead.connect(behind).process(Watch()).name("Watch").add_sink(lambda v: None)
        env.execute("two inputs")

    job = run_job(build)
    assert job.outcome.status == "FINISHED"
    inputs = [e for e in job.events(WatermarkAdvanced) if e.vertex_name.startswith("Watch") and e.direction == "input"]
    assert {e.input for e in inputs} == {0, 1}
    # the operator's event time is the smaller one: never ahead of "Behind"
    behind_max = max(v for i, v, w in seen if i == "2")
    assert all(w < behind_max for i, v, w in seen if w != MAX and w != MIN)
    assert max(w for _, _, w in seen if w != MAX) < 10_000


def test_per_second_counters_of_timers_windows_and_late_records():
    results: list = []

    class Late(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1)
            yield value

        def on_timer(self, timestamp, ctx):
            return iter(())

    def build(env):
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, ts: v[1])
        # every 10th record is 1.5 s late; 100 records a second, ts = 10 ms per record
        source = env.from_source(
            DataGeneratorSource(lambda i: ("k", i * 10 - (1_500 if i % 10 == 9 else 0)), count=500,
                                records_per_second=100), strategy, "Records")
        source.key_by(lambda v: v[0]).process(Late()).name("Timers") \
            .key_by(lambda v: v[0]) \
            .window(TumblingEventTimeWindows.of(Time.milliseconds(500))) \
            .reduce(lambda a, b: (a[0], a[1])) \
            .add_sink(results.append)
        env.execute("counters")

    job = run_job(build)
    assert job.outcome.status == "FINISHED"
    samples = job.events(TaskMetricsSampled)
    window_task = [e for e in samples if e.vertex_name.startswith("TumblingEventTimeWindows")]
    timers_task = [e for e in samples if e.vertex_name == "Timers"]
    # the two late records before the first watermark (200 ms) open the window [-1500, -1000);
    # the 48 after it are dropped; [0, 500) ... [4500, 5000) fire as the watermark passes
    assert sum(e.windows_fired for e in window_task) == len(results) == 11
    assert sum(e.late_records_dropped for e in window_task) == 48
    # one timer per distinct (key, timestamp + 1); timers in the past fire at the next watermark
    distinct = {i * 10 - (1_500 if i % 10 == 9 else 0) for i in range(500)}
    assert sum(e.timers_fired for e in timers_task) == len(distinct)
    assert max(e.windows_fired for e in window_task) < 10  # spread over seconds, per interval
