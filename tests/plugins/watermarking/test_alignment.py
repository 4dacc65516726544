"""Watermark alignment (plugin ``watermarking.aligned``): sources of different speed stay
within the configured drift; with the default plugin they drift apart."""

from __future__ import annotations

from kernel.runtime.cluster_events import WatermarkAdvanced
from kernel.common import Duration, WatermarkStrategy
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.runtime.streaming.alignment import ActivityClock, AlignmentMember, SourceAlignment
from plugins.watermarking.events import SourceAlignmentChanged, WatermarkAlignmentAnnounced
from tests.runtime import run_job

MAX = (1 << 63) - 1
MIN = -(1 << 63)


class Membership:
    max_drift_ms = 100
    update_interval_ms = 1_000

    def __init__(self) -> None:
        self.changes: list = []

    def waiting(self, paused, watermark):
        self.changes.append((paused, watermark))


def test_a_source_emits_only_what_keeps_its_watermark_within_the_bound():
    alignment = SourceAlignment(Membership(), out_of_orderness_ms=10)
    # before any announcement: up to the drift past the first record's watermark, 0 - 11 + 100
    assert alignment.admit([0, 50, 100, 110]) == 3  # 110 - 11 = 99 > 89
    alignment.announce(max_allowed=200, group_min=100)
    assert alignment.admit([111, 150, 211, 212]) == 3  # the watermark 212 - 11 = 201 would pass 200
    assert alignment.admit([212]) == 0
    # a source whose records imply no more than the group minimum always makes progress
    alignment.announce(max_allowed=150, group_min=200)
    assert alignment.admit([500, 501]) == 1
    assert alignment.admit([501]) == 0


def test_waiting_for_alignment_resumes_at_the_next_announcement():
    membership = Membership()
    alignment = SourceAlignment(membership, out_of_orderness_ms=0)
    resumed: list = []
    alignment.set_waiting(True, 42)
    alignment.set_waiting(True, 42)
    alignment.when_announced(lambda: resumed.append("go"))
    alignment.announce(1_000, 900)
    assert resumed == ["go"] and membership.changes == [(True, 42)]


def test_the_activity_clock_stands_still_while_paused():
    now = [1_000]
    clock = ActivityClock(lambda: now[0])
    clock.pause("alignment")
    now[0] = 1_500
    clock.pause("back_pressure")
    clock.resume("alignment")
    now[0] = 1_700
    assert clock.now_ms() == 1_000
    clock.resume("back_pressure")
    now[0] = 2_000
    assert clock.now_ms() == 1_300


def fast_and_slow_sources(env, count: int, strategy) -> None:
    """Two sources at 1,000 records/s; event time runs 10 s a second in "Fast", 2 s in "Slow"."""
    fast = env.from_source(DataGeneratorSource(lambda i: ("fast", i * 10), count=count, records_per_second=1_000),
                           strategy(), "Fast")
    slow = env.from_source(DataGeneratorSource(lambda i: ("slow", i * 2), count=count, records_per_second=1_000),
                           strategy(), "Slow")
    fast.union(slow).add_sink(lambda v: None).name("Sink")
    env.execute("aligned sources")


def out_of_orderness():
    return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(100)) \
        .with_timestamp_assigner(lambda value, ts: value[1])


def fast_and_slow(env):
    fast_and_slow_sources(env, 20_000, out_of_orderness)


def max_skew(job) -> int:
    """The largest difference of the two sources' output watermarks while both run."""
    latest: dict[str, int] = {}
    worst = 0
    for event in job.events(WatermarkAdvanced):
        if event.direction != "output" or not event.vertex_name.startswith("Source"):
            continue
        if event.watermark == MAX:
            break
        latest[event.vertex_name] = event.watermark
        if len(latest) == 2:
            worst = max(worst, abs(latest["Source: Fast"] - latest["Source: Slow"]))
    return worst


def test_without_alignment_the_fast_source_runs_ahead():
    job = run_job(fast_and_slow)
    assert job.outcome.status == "FINISHED"
    assert max_skew(job) > 100_000  # 20 s: 200 s of event time against 40 s
    assert not job.events(WatermarkAlignmentAnnounced)


def test_with_the_aligned_plugin_the_skew_stays_within_the_drift():
    for drift, interval in [("2 s", "200 ms"), ("1 s", "1 s"), ("500 ms", "100 ms")]:
        job = run_job(fast_and_slow, "plugins.watermarking=aligned", f"watermarking.aligned.max-drift={drift}",
                      f"watermarking.aligned.update-interval={interval}")
        assert job.outcome.status == "FINISHED"
        drift_ms = Duration.of_millis(int(drift.split()[0]) * (1000 if drift.endswith(" s") else 1)).to_milliseconds()
        skew = max_skew(job)
        assert 0.8 * drift_ms < skew <= drift_ms, (drift, interval, skew)
        # the fast source waits; the slow one only when its own stale report bounds it (a drift
        # smaller than the event time it covers in one update interval, as in Flink)
        waiting = {e.vertex_name for e in job.events(SourceAlignmentChanged) if e.waiting}
        assert waiting == ({"Source: Fast"} if drift == "2 s" else {"Source: Fast", "Source: Slow"})
        announced = job.events(WatermarkAlignmentAnnounced)
        assert announced and all(a.max_allowed_watermark == a.min_watermark + drift_ms for a in announced)


def test_a_strategys_own_alignment_group_and_drift_take_precedence():
    def build(env):
        fast_and_slow_sources(
            env, 5_000, lambda: out_of_orderness().with_watermark_alignment("pair", Duration.of_millis(300),
                                                                           Duration.of_millis(100)))

    job = run_job(build, "plugins.watermarking=aligned")
    announced = job.events(WatermarkAlignmentAnnounced)
    assert {a.group for a in announced} == {"pair"}
    assert max_skew(job) <= 300
    assert AlignmentMember("v", "n", 0) == AlignmentMember("v", "n", 0)


def test_alignment_is_deterministic_under_the_simulated_clock():
    sets = ("plugins.watermarking=aligned", "watermarking.aligned.max-drift=1 s")
    first = [(e.time, e.vertex_name, e.watermark) for e in run_job(fast_and_slow, *sets).events(WatermarkAdvanced)]
    second = [(e.time, e.vertex_name, e.watermark) for e in run_job(fast_and_slow, *sets).events(WatermarkAdvanced)]
    assert first == second and len(first) > 100
