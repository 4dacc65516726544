"""Back pressure is real and the TimerGauge metrics add up, as seed 000 describes them."""

from __future__ import annotations

import math

from kernel import clock
from kernel.runtime.cluster_events import TaskMetricsSampled
from kernel.common import Types, WatermarkStrategy
from kernel.datastream.connectors.datagen import DataGeneratorSource
from tests.runtime import run_job


def slow_sink_job(records: int, seconds_per_record: float):
    def slow(value):
        clock.sleep(seconds_per_record)

    def build(env):
        env.from_source(DataGeneratorSource(lambda i: i, count=records), WatermarkStrategy.no_watermarks(), "Numbers") \
            .map(lambda x: x * 2, Types.LONG()).name("Double").rebalance().add_sink(slow).name("Slow Sink")
        env.execute("slow sink")

    return build


def samples(job, vertex: str) -> list[TaskMetricsSampled]:
    return [e for e in job.events(TaskMetricsSampled) if e.vertex_name == vertex and not e.final]


def test_slow_sink_back_pressures_the_source_under_the_simulated_clock():
    job = run_job(slow_sink_job(100_000, 0.001))
    assert job.outcome.status == "FINISHED"
    assert job.outcome.clock_seconds == 100.0  # 100,000 records x 1 ms of sink work
    sink = samples(job, "Sink: Slow Sink")
    source = samples(job, "Source: Numbers -> Double")
    assert len(sink) == 100
    assert all(s.busy_ms == 1000.0 and s.idle_ms == 0.0 and s.back_pressured_ms == 0.0 for s in sink)
    # records are counted per buffer (1024 at a time); at 1 ms a record no second sees more
    # than one buffer, and all of them together are every record
    everything = [e for e in job.events(TaskMetricsSampled) if e.vertex_name == "Sink: Slow Sink"]
    assert sum(e.records_in for e in everything) == 100_000
    assert max(s.records_in for s in sink) == 1024  # never more than one buffer a second
    # the source fills the network (20 buffers of 1024 records) and then waits for credit
    assert len(source) >= 78
    assert all(s.back_pressured_ms == 1000.0 and s.busy_ms == 0.0 for s in source[1:-1])
    vertices = {v.name: v for v in job.outcome.vertices}
    assert vertices["Source: Numbers -> Double"].level == "HIGH"
    assert vertices["Sink: Slow Sink"].level == "OK" and vertices["Sink: Slow Sink"].busy_ratio == 1.0


def test_idle_busy_and_back_pressured_time_add_up_to_one_second():
    job = run_job(slow_sink_job(30_000, 0.0005))
    for event in job.events(TaskMetricsSampled):
        if event.final or math.isnan(event.busy_ms):
            continue
        assert abs(event.idle_ms + event.busy_ms + event.back_pressured_ms - 1000.0) <= 5
        assert event.soft_back_pressured_ms + event.hard_back_pressured_ms == event.back_pressured_ms


def test_an_idle_consumer_is_idle():
    def build(env):
        env.from_source(DataGeneratorSource(lambda i: i, records_per_second=2, type_info=Types.LONG()),
                        WatermarkStrategy.no_watermarks(), "Trickle").rebalance().add_sink(lambda v: None).name("Sink")
        env.execute()

    job = run_job(build, "rill.duration=5 s")
    sink = samples(job, "Sink: Sink")
    assert len(sink) == 5 and all(s.idle_ms == 1000.0 for s in sink)
    assert [s.records_in for s in sink] == [2, 2, 2, 2, 2]


def test_legacy_sources_have_no_busy_time():
    def build(env):
        env.from_collection(list(range(50_000)), Types.INT()).rebalance().add_sink(lambda v: clock.sleep(0.0001))
        env.execute()

    job = run_job(build)
    collection = [e for e in job.events(TaskMetricsSampled) if e.vertex_name == "Source: Collection Source"]
    assert collection and all(math.isnan(e.busy_ms) for e in collection)


def test_cpu_heavy_map_back_pressures_its_source_in_realtime():
    def heavy(value):
        total = 0
        for i in range(2000):
            total += i * value
        return total

    def build(env):
        env.from_source(DataGeneratorSource(lambda i: i, count=10_000_000), WatermarkStrategy.no_watermarks(), "Numbers") \
            .rebalance().map(heavy, Types.LONG()).name("Heavy").add_sink(lambda v: None).name("Discard")
        env.execute()

    job = run_job(build, "rill.clock=realtime", "rill.duration=3 s")
    vertices = {v.name: v for v in job.outcome.vertices}
    assert vertices["Source: Numbers"].level == "HIGH"
    heavy_samples = samples(job, "Heavy -> Sink: Discard")
    assert heavy_samples and all(s.busy_ms > 900 for s in heavy_samples)
    for event in job.events(TaskMetricsSampled):
        if not event.final:
            assert abs(event.idle_ms + event.busy_ms + event.back_pressured_ms - 1000.0) <= 5
