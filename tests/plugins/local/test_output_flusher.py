"""The output flusher (plugins/local/tasks/output_flusher.py, kernel/runtime/streaming/handover.py):
a record a chain emitted leaves its task within the buffer timeout, whatever the task thread
does next — a user function blocking later in the same batch holds back nothing emitted before.

The paced jobs are issue 27's: 11 (word, event time) records through a function that blocks
3 s before some of them, chained to the source, then rebalance -> map -> periodic
bounded-out-of-orderness watermarks (500 ms, every 50 ms) -> key_by -> 2 s tumbling event-time
windows with 1 s allowed lateness and a late side output. What they print was recorded with
PyFlink 2.3 in ``python.execution-mode: thread`` (Python functions called per record by the
Java operators, so Flink's OutputFlusher shows), the same job with ``pyflink`` imports and
``time.sleep``; PyFlink's default ``process`` mode holds a Python operator's results until its
bundle ends and prints what rill printed before the flusher (no late records). Realtime runs
block in ``time.sleep`` (relay threads) or ``kernel.clock.sleep`` (the task thread relays
first); simulated runs charge ``kernel.clock.sleep``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

from kernel import clock
from kernel.runtime.cluster_events import TaskMetricsSampled
from kernel.common import Duration, Time, Types, WatermarkStrategy
from kernel.common.watermark_strategy import TimestampAssigner
from kernel.datastream import KeyedProcessFunction, OutputTag, ProcessFunction
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.functions import ProcessWindowFunction, SinkFunction
from kernel.datastream.window import TumblingEventTimeWindows
from tests.runtime import run_job

DATA = [("a", 1000), ("b", 2000), ("c", 3000), ("d", 4000), ("e", 1500), ("f", 6000), ("g", 7000), ("h", 8000),
        ("i", 2500), ("j", 9000), ("k", 3500)]

#: PyFlink 2.3, thread mode, buffer timeout 100 ms (default) or 0: map, keyed process and generator
PACED = ["all [0,2000) n=1", "late ('e', 1500)", "all [2000,4000) n=2", "all [4000,6000) n=1", "late ('i', 2500)",
         "late ('k', 3500)", "all [6000,8000) n=2", "all [8000,10000) n=2"]
#: ... the flat_map yielding a second value 3 s after d and h (default and 0)
PACED_FLAT_MAP = ["all [0,2000) n=1", "late ('dd', 1500)", "late ('e', 1500)", "all [2000,4000) n=2",
                  "all [4000,6000) n=1", "late ('hh', 5500)", "late ('i', 2500)", "late ('k', 3500)",
                  "all [6000,8000) n=2", "all [8000,10000) n=2"]
#: ... the process function yielding e0 and i0 before it blocks
PACED_PROCESS = ["all [0,2000) n=2", "late ('e', 1500)", "all [2000,4000) n=3", "all [4000,6000) n=1",
                 "late ('i', 2500)", "late ('k', 3500)", "all [6000,8000) n=2", "all [8000,10000) n=2"]
#: ... buffer timeout -1 (env.set_buffer_timeout(-1)): nothing leaves before the end, nothing is late
PACED_FULL_BUFFERS = ["all [0,2000) n=2", "all [2000,4000) n=4", "all [4000,6000) n=1", "all [6000,8000) n=2",
                      "all [8000,10000) n=2"]
PACED_FLAT_MAP_FULL_BUFFERS = ["all [0,2000) n=3", "all [2000,4000) n=4", "all [4000,6000) n=2",
                               "all [6000,8000) n=2", "all [8000,10000) n=2"]


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Count(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield f"{key} [{context.window().start},{context.window().end}) n={len(list(elements))}"


def row():
    return Types.TUPLE([Types.STRING(), Types.LONG()])


def paced(shape: str = "map", timeout: int | None = None, sleep=clock.sleep, pause: float = 3.0):
    """Issue 27's job with the blocking function of ``shape`` (``map``, ``flat_map``,
    ``process``, ``keyed`` — a KeyedProcessFunction after a key_by —, ``generator`` — the
    generator function of a DataGeneratorSource)."""

    def pace(v):
        if v[0] in ("e", "i"):
            sleep(pause)
        return v

    def split(v):
        yield v
        if v[0] in ("d", "h"):
            sleep(pause)
            yield v[0] * 2, v[1] - 2500

    class Pacing(ProcessFunction):
        def process_element(self, value, ctx):
            if value[0] in ("e", "i"):
                yield value[0] + "0", value[1] + 300
                sleep(pause)
            yield value

    class KeyedPacing(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield pace(value)

    def generate(index):
        if index in (4, 8):
            sleep(pause)
        return DATA[index]

    def build(env):
        env.set_parallelism(1)
        env.get_config().set_auto_watermark_interval(50)
        if timeout is not None:
            env.set_buffer_timeout(timeout)
        if shape == "generator":
            stream = env.from_source(DataGeneratorSource(generate, count=len(DATA), type_info=row()),
                                     WatermarkStrategy.no_watermarks(), "Generated")
        else:
            stream = env.from_collection(DATA, row())
        if shape == "map":
            stream = stream.map(pace, row())
        elif shape == "flat_map":
            stream = stream.flat_map(split, row())
        elif shape == "process":
            stream = stream.process(Pacing(), row())
        elif shape == "keyed":
            stream = stream.key_by(lambda v: "k", Types.STRING()).process(KeyedPacing(), row())
        late = OutputTag("late", row())
        windows = stream.rebalance().map(lambda v: v, row()).assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500)).with_timestamp_assigner(EventTime())) \
            .key_by(lambda v: "all", Types.STRING()).window(TumblingEventTimeWindows.of(Time.seconds(2))) \
            .allowed_lateness(1000).side_output_late_data(late).process(Count(), Types.STRING())
        windows.print()
        windows.get_side_output(late).map(lambda v: f"late {v}", Types.STRING()).print()
        env.execute("paced")

    return build


RECORDED = {
    ("map", None): PACED, ("map", 0): PACED, ("map", -1): PACED_FULL_BUFFERS,
    ("flat_map", None): PACED_FLAT_MAP, ("flat_map", 0): PACED_FLAT_MAP, ("flat_map", -1): PACED_FLAT_MAP_FULL_BUFFERS,
    ("process", None): PACED_PROCESS, ("keyed", None): PACED, ("generator", None): PACED,
}


@pytest.mark.parametrize(("shape", "timeout"), list(RECORDED), ids=[f"{s}-{t}" for s, t in RECORDED])
def test_simulated_paced_jobs_print_what_pyflink_prints(shape, timeout):
    job = run_job(paced(shape, timeout))
    assert job.outcome.status == "FINISHED", job.outcome.failure
    assert job.lines == RECORDED[shape, timeout]


@pytest.mark.parametrize(("shape", "timeout", "sleep"), [
    ("flat_map", None, time.sleep), ("process", None, time.sleep), ("generator", None, time.sleep),
    ("keyed", None, time.sleep), ("map", -1, time.sleep), ("map", None, clock.sleep), ("flat_map", 0, clock.sleep)],
    ids=["flat_map", "process", "generator", "keyed", "map-full-buffers", "map-clock-sleep", "flat_map-0-clock-sleep"])
def test_realtime_paced_jobs_print_what_pyflink_prints(shape, timeout, sleep):
    """With 1.5 s pauses (what is printed depends on the order of records and watermarks only,
    as long as a pause outlasts the flush and watermark intervals)."""
    job = run_job(paced(shape, timeout, sleep, pause=1.5), "rill.clock=realtime")
    assert job.outcome.status == "FINISHED", job.outcome.failure
    assert job.lines == RECORDED[shape, timeout]


def source_records_out(job) -> list[tuple[float, int]]:
    return [(e.time / 1e9, e.records_out) for e in job.events(TaskMetricsSampled) if e.vertex_name.startswith("Source")]


def test_simulated_records_leave_at_their_virtual_emission_time():
    """The map's output before each charged 3 s pause leaves then: 4 records at 0 s, 4 at 3 s
    (their emission time: the step's start plus the pause), 3 at 6 s; counted then."""
    job = run_job(paced())
    assert source_records_out(job) == [(1.0, 4), (2.0, 0), (3.0, 4), (4.0, 0), (5.0, 0), (6.0, 3)]


def arrivals(build_stream, *sets: str) -> list[tuple]:
    """(record, processing time it reached the sink at), the stream going there over the network."""
    seen: list = []

    class Arrivals(SinkFunction):  # each subtask has its own copy; they share ``seen``
        def invoke(self, value, context):
            seen.append((value, context.current_processing_time()))

    def build(env):
        build_stream(env).rebalance().add_sink(Arrivals())
        env.execute("arrivals")

    job = run_job(build, *sets)
    assert job.outcome.status == "FINISHED", job.outcome.failure
    return seen


def test_records_emitted_after_a_charged_sleep_are_not_visible_before_their_emission_time():
    """A map charging 250 ms before each record: record i is emitted at (i + 1) * 250 ms and
    sent by the first tick at or after it (every 100 ms), the last one with the end of the
    input — not all at the batch's start."""
    def slow(v):
        clock.sleep(0.25)
        return v

    seen = arrivals(lambda env: env.from_collection(list(range(5)), Types.INT()).map(slow, Types.INT()))
    assert seen == [(0, 300), (1, 500), (2, 800), (3, 1000), (4, 1250)]


def test_a_chained_operators_own_buffer_timeout_applies_to_its_network_output():
    """``ds.set_buffer_timeout(0)`` on a map chained to its source: its records leave as they
    are emitted (every 20 ms), not at the source's 100 ms ticks."""
    seen = arrivals(lambda env: env.from_source(
        DataGeneratorSource(lambda i: i, count=10, records_per_second=50, type_info=Types.LONG()),
        WatermarkStrategy.no_watermarks(), "Numbers").map(lambda v: v, Types.LONG()).set_buffer_timeout(0))
    assert seen == [(v, 20 * v) for v in range(10)]


def test_buffer_timeouts_as_pyflink_sets_and_reads_them():
    """``env.get_buffer_timeout()`` is -1 when the timeout is disabled in the configuration;
    negative timeouts other than -1 are refused, as Flink refuses them."""
    from kernel.datastream import StreamExecutionEnvironment
    from kernel.lifecycle.executors import SessionExecutor, use_executor
    from kernel.lifecycle.session import Session

    for sets, expected in ((["execution.buffer-timeout.enabled=false"], -1),
                           (["execution.buffer-timeout.interval=20 ms"], 20)):
        with use_executor(SessionExecutor(Session.open(sets=sets), quiet=True)):
            env = StreamExecutionEnvironment.get_execution_environment()
            assert env.get_buffer_timeout() == expected
            assert env.set_buffer_timeout(-1).get_buffer_timeout() == -1
            with pytest.raises(ValueError, match="Timeout of buffer must be non-negative or -1"):
                env.set_buffer_timeout(-2)
            with pytest.raises(ValueError, match="timeout must be >= -1"):
                env.from_collection([1]).map(lambda v: v).set_buffer_timeout(-2)


class Watermarks(ProcessFunction):
    def process_element(self, value, ctx):
        service = ctx.timer_service()
        yield value, service.current_watermark(), service.current_processing_time()


def watermarks(results: list, timeout: int | None = None):
    def build(env):
        if timeout is not None:
            env.set_buffer_timeout(timeout)
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, ts: v * 100)
        env.from_source(DataGeneratorSource(lambda i: i, count=10, records_per_second=10, type_info=Types.LONG()),
                        strategy, "Numbers").rebalance().process(Watermarks()).add_sink(results.append)
        env.execute("watermarks")
    return build


def test_without_a_buffer_timeout_watermarks_wait_in_the_buffers_like_records():
    """Flink serialises a watermark into the buffer behind the records before it: with
    ``execution.buffer-timeout.enabled`` false — or ``env.set_buffer_timeout(-1)`` — nothing
    leaves before the end of the input (at 900 ms; the buffers never fill), where every record
    comes with the watermarks between them (every 200 ms); with the default 100 ms they leave
    together at each tick."""
    held: list = []
    run_job(watermarks(held), "execution.buffer-timeout.enabled=false")
    MIN = -(1 << 63)
    assert held == [(0, MIN, 900), (1, MIN, 900), (2, 99, 900), (3, 99, 900), (4, 299, 900), (5, 299, 900),
                    (6, 499, 900), (7, 499, 900), (8, 699, 900), (9, 699, 900)]
    disabled: list = []
    run_job(watermarks(disabled, -1))
    assert disabled == held
    flushed: list = []
    run_job(watermarks(flushed))
    assert flushed == [(0, MIN, 100), (1, MIN, 100), (2, 99, 200), (3, 99, 300), (4, 299, 400), (5, 299, 500),
                       (6, 499, 600), (7, 499, 700), (8, 699, 800), (9, 699, 900)]


def test_watermarks_waiting_for_the_flush_hold_no_buffers_of_the_pool():
    """Without a buffer timeout, a watermark every 10 ms splits the records into batches of one
    that wait for the end of the input; they take buffers only once queued, so the source is
    never back pressured for want of buffers it is itself holding (it would stall for good)."""
    def build(env):
        env.set_buffer_timeout(-1)
        env.get_config().set_auto_watermark_interval(10)
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, ts: v * 10)
        env.from_source(DataGeneratorSource(lambda i: i, count=200, records_per_second=100, type_info=Types.LONG()),
                        strategy, "Numbers").rebalance().map(lambda v: v, Types.LONG()).print()
        env.execute("frequent watermarks")

    job = run_job(build, "rill.duration=30 s")
    assert job.outcome.status == "FINISHED" and job.lines == [str(i) for i in range(200)]


def relay(sleep, seconds: float, on: int):
    def function(v):
        if v == on:
            sleep(seconds)
        return v
    return function


def test_a_function_blocking_inside_a_relay_is_relayed_one_level_down():
    """A blocks 1.5 s before record 3; its records 0-2 are relayed to B in a relay thread, where
    B blocks 1.5 s before record 1: record 0, which B emitted before, is relayed again and
    leaves long before either sleep ends."""
    seen = arrivals(lambda env: env.from_collection(list(range(5)), Types.INT())
                    .map(relay(time.sleep, 1.5, 3), Types.INT()).name("A")
                    .map(relay(time.sleep, 1.5, 1), Types.INT()).name("B"), "rill.clock=realtime")
    times = dict(seen)
    assert sorted(times) == [0, 1, 2, 3, 4]
    assert times[1] - times[0] > 1000 and times[3] - times[0] > 1000, seen


def failing_after(sleep, calls: list):
    def build(env):
        def slow(v):
            calls.append(f"Slow {v}")
            if v == 2:
                sleep(1.0)
            return v

        def check(v):
            calls.append(f"Check {v}")
            if v == 1:
                raise ValueError("no 1 here")
            return v

        env.from_collection([0, 1, 2, 3], Types.INT()).map(slow, Types.INT()).name("Slow") \
            .map(check, Types.INT()).name("Check").rebalance().print()
        env.execute("failing")
    return build


@pytest.mark.parametrize("sets", [(), ("rill.clock=realtime",)], ids=["simulated", "realtime"])
def test_an_error_in_a_relay_fails_the_task_at_its_next_emit_naming_the_operator(sets):
    """Slow blocks before record 2 (charged, or in time.sleep): records 0 and 1 are relayed to
    Check meanwhile, which raises on 1; the task fails with Check's error once Slow is done
    with its batch and hands on the rest (record 3 never reaches Check)."""
    calls: list = []
    job = run_job(failing_after(clock.sleep if not sets else time.sleep, calls), *sets)
    assert job.outcome.status == "FAILED"
    assert "failed in operator 'Check': ValueError: no 1 here" in job.outcome.failure
    assert calls == ["Slow 0", "Slow 1", "Slow 2", "Check 0", "Check 1", "Slow 3"]


PACED_JOB = """
    import sys
    import time

    from kernel.common import Duration, Time, Types, WatermarkStrategy
    from kernel.common.watermark_strategy import TimestampAssigner
    from kernel.datastream import OutputTag, StreamExecutionEnvironment
    from kernel.datastream.functions import ProcessWindowFunction
    from kernel.datastream.window import TumblingEventTimeWindows

    if sys.argv[1:] == ["clock"]:
        from kernel import clock as time


    class TS(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value[1]


    def pace(v):
        if v[0] in ('e', 'i'):
            time.sleep(3)
        return v


    class W(ProcessWindowFunction):
        def process(self, key, context, elements):
            yield f"{key} [{context.window().start},{context.window().end}) n={len(list(elements))}"


    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.get_config().set_auto_watermark_interval(50)
    data = [("a",1000),("b",2000),("c",3000),("d",4000),("e",1500),("f",6000),("g",7000),("h",8000),("i",2500),
            ("j",9000),("k",3500)]
    late = OutputTag("late", Types.TUPLE([Types.STRING(), Types.LONG()]))
    s = env.from_collection(data, Types.TUPLE([Types.STRING(), Types.LONG()])).map(pace, Types.TUPLE([Types.STRING(), Types.LONG()]))
    w = s.rebalance().map(lambda v: v, Types.TUPLE([Types.STRING(), Types.LONG()])).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500)).with_timestamp_assigner(TS())) \\
        .key_by(lambda v: "all", Types.STRING()).window(TumblingEventTimeWindows.of(Time.seconds(2))) \\
        .allowed_lateness(1000).side_output_late_data(late).process(W(), Types.STRING())
    w.print()
    w.get_side_output(late).map(lambda v: f"late {v}", Types.STRING()).print()
    env.execute("paced")
"""


def rill(*args: str) -> subprocess.CompletedProcess:
    """The ``rill`` command in a process of its own."""
    return subprocess.run([sys.executable, "-m", "kernel.cli.main", *args], capture_output=True, text=True, timeout=300)


def sql(query: str) -> list[dict]:
    done = rill("sql", "--format", "json", query)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


LAST_RUN = "run_id = (SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1)"


def test_rill_run_of_the_paced_job_sends_during_the_pauses(tmp_path):
    """Issue 27's job as a user runs it (realtime, ``time.sleep``): PyFlink's windows and late
    records; the source task's records leave 4, then 4 after the first pause, then 3 — per
    second 4, 0, 0, 4, 0, 0, 3 (before: none left for 6 s, all 11 at the end); each second's
    idle + busy + back pressured time is the second."""
    job = tmp_path / "paced.py"
    job.write_text(textwrap.dedent(PACED_JOB))
    done = rill("run", "--quiet", str(job))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == PACED
    rows = sql(f"SELECT vertex_name, records_out, idle_ms + busy_ms + back_pressured_ms AS total FROM task_metrics "
               f"WHERE {LAST_RUN} ORDER BY t_s")
    counts = [r["records_out"] for r in rows if r["vertex_name"].startswith("Source")]
    while counts[0] == 0:  # a sample before the task ran (a loaded machine)
        counts.pop(0)
    # 4 right away, 4 three seconds later, 3 at the end six seconds later (a sample's second
    # may be late by one on a loaded machine)
    assert [n for n in counts if n] == [4, 4, 3] and counts.index(4, 1) in (2, 3, 4) and len(counts) in (6, 7, 8)
    assert all(abs(r["total"] - 1000) < 1e-6 for r in rows if not r["vertex_name"].startswith("Source"))


def test_a_simulated_paced_run_re_executes_identically(tmp_path):
    job = tmp_path / "paced.py"
    job.write_text(textwrap.dedent(PACED_JOB))
    done = rill("run", "--quiet", "--clock", "simulated", str(job), "clock")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == PACED
    rerun = rill("replay", "last", "--rerun", "--json")
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["identical"] and report["status"] == "finished"


RELAY_CANCELED_JOB = """
    import time

    from kernel import clock
    from kernel.common import Types
    from kernel.datastream import StreamExecutionEnvironment

    STARTED = time.monotonic()


    def blocked(v):
        if v == 1:
            time.sleep(6)
        return v


    def waiting(v):
        print(f"waiting after {time.monotonic() - STARTED:.0f} s", flush=True)
        clock.sleep(600)
        return v


    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([0, 1], Types.INT()).map(blocked, Types.INT()).name("Blocked") \\
        .map(waiting, Types.INT()).name("Waiting").rebalance().print()
    env.execute("relay canceled")
"""


def test_a_relay_sleeping_through_kernel_clock_sleep_is_interrupted_when_the_task_is_canceled(tmp_path):
    """Blocked sleeps 6 s before record 1; record 0 is relayed at once to Waiting, which sleeps
    600 s in the relay thread: the duration cancels the task, the relay's sleep ends at once
    (interrupted, as in the task's own thread), and the task ends CANCELED when Blocked returns
    — not 10 minutes later, and without its cancellation timing out."""
    job = tmp_path / "relay.py"
    job.write_text(textwrap.dedent(RELAY_CANCELED_JOB))
    started = time.monotonic()
    done = rill("run", "--duration", "2s", str(job))
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 60
    (line,) = done.stdout.splitlines()
    assert line.startswith("waiting after ") and int(line.split()[2]) < 4  # not after Blocked's 6 s
    assert "CANCELED" in done.stderr
    rows = sql(f"SELECT kind FROM events WHERE {LAST_RUN} AND kind = 'task_cancellation_timed_out'")
    assert rows == []


def test_processes_workers_send_during_the_pauses():
    """The same with TaskExecutors in worker processes (1.5 s pauses): the source task's
    records leave in three different seconds."""
    job = run_job(paced(sleep=time.sleep, pause=1.5), "rill.clock=realtime", "plugins.workers=processes")
    assert job.outcome.status == "FINISHED", job.outcome.failure
    assert job.lines == PACED
    assert [n for _, n in source_records_out(job) if n] == [4, 4, 3]


def timers_fired_at_once(sleep):
    """Keys 0-4 each with an event-time timer at its own value, which the end of the input (or
    a periodic watermark) fires in one drain of the timer service; on_timer blocks 1.5 s before
    it emits for timer 3."""
    class Fire(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(value)

        def on_timer(self, timestamp, ctx):
            if timestamp == 3:
                sleep(1.5)
            yield timestamp

    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, ts: v)
    return lambda env: env.from_collection(list(range(5)), Types.INT()).assign_timestamps_and_watermarks(strategy) \
        .key_by(lambda v: v, Types.INT()).process(Fire(), Types.INT())


@pytest.mark.parametrize("sets", [(), ("rill.clock=realtime",)], ids=["simulated", "realtime"])
def test_what_timers_fired_before_a_blocking_on_timer_leaves_within_the_buffer_timeout(sets):
    """The timer service's output is a hand-over too: what the timers before the blocking one
    emitted leaves at the next flush (simulated: the sleep is charged, they leave at the 100 ms
    tick, timers 3 and 4's output 1.5 s of virtual time later; realtime, ``time.sleep``: relayed
    while on_timer blocks), not with the rest of the drain after the pause."""
    seen = arrivals(timers_fired_at_once(clock.sleep if not sets else time.sleep), *sets)
    times = dict(seen)
    assert sorted(times) == [0, 1, 2, 3, 4]
    if not sets:
        assert seen == [(0, 100), (1, 100), (2, 100), (3, 1500), (4, 1500)]
    else:
        assert times[3] - times[2] > 1000, seen
