"""The spark backend: the same jobs on Spark (local[2]) as on the local runtime, in Flink's
BATCH semantics; the run recorded like any other; Spark SQL over recorded runs; clear errors.

One SparkSession serves the whole module (the backend uses the active session)."""

from __future__ import annotations

from pathlib import Path

import asyncio
import json
import math
import os
import subprocess
import threading
import sys
from collections import Counter
from unittest.mock import ANY

import pytest

from kernel.runtime.cluster_events import ExecutionStateChanged, JobStatusChanged, TaskMetricsSampled
from kernel.common import Time, Types, WatermarkStrategy
from kernel.datastream import (
    AsyncDataStream,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
)
from kernel.datastream.functions import AsyncFunction
from kernel.datastream.state import ValueStateDescriptor
from kernel.datastream.window import (
    EventTimeSessionWindows,
    EventTimeTrigger,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from kernel.runtime.streaming.partitioning import KeyGroupChannels
from plugins.spark.events import SparkStageCompleted
from tests.conftest import rill_command
from tests.runtime import run_job
from tests.plugins.local.test_local_runtime import side_outputs_connect_and_union
from tests.kernel.datastream.test_pyflink_outputs import (
    PYFLINK_BATCH_CONNECT_LINES,
    PYFLINK_BATCH_KEYS_LINES,
    PYFLINK_BATCH_LINES,
    PYFLINK_BATCH_TIMER_LINES,
    batch_connect_job,
    batch_job,
    batch_keys_job,
    by_sink,
)
from tests.kernel.runtime.streaming.test_timers_and_state import Alarm, Everything, scripted
from tests.kernel.datastream.test_windows import DATA, HI, Average, ApplyWithWindow, CountWindowProcess, WithWindow, monotonous

ROOT = str(Path(__file__).resolve().parents[3])
EXAMPLES = os.path.join(ROOT, "examples")
SPARK = ("rill.clock=realtime", "plugins.backend=spark")
BATCH = ("execution.runtime-mode=BATCH",)
MIN, MAX = -(1 << 63), (1 << 63) - 1


@pytest.fixture(scope="module", autouse=True)
def spark():
    from plugins.spark.options import SparkOptions
    from plugins.spark.session import spark_session

    session, _ = spark_session(SparkOptions())
    yield session
    session.stop()


def outputs(job, *sets: str) -> list:
    """The records of the stream ``job(env, sink)`` hands to ``sink(stream, job_name)``, run
    with ``sets``: collected to the caller with ``execute_and_collect``, as a user gets them
    (on Spark, user sinks run in the executors, where the caller's objects are copies)."""
    results: list = []

    def sink(stream, job_name):
        results.extend(stream.execute_and_collect(job_name))

    run = run_job(lambda env: job(env, sink), *sets)
    assert run.outcome.status == "FINISHED", run.error
    return results


def on_both(job, *sets: str) -> tuple[list, list]:
    """(local STREAMING results, spark results) of the same job."""
    return outputs(job, *sets), outputs(job, *SPARK, *sets)


def last_per_key(records, key) -> dict:
    last = {}
    for record in records:
        last[key(record)] = record
    return last


# -- parity: windows (PyFlink's vectors and the window functions) ----------------------------------


def windowed(data, windowing, parallelism):
    """The windows of ``tests.kernel.datastream.test_windows.collection_job`` over ``data``, into ``sink``."""
    def job(env, sink):
        env.set_parallelism(parallelism)
        stream = env.from_collection(data).assign_timestamps_and_watermarks(monotonous())
        sink(windowing(stream.key_by(lambda v: v[0], Types.STRING())), "windows")

    return job


WINDOWINGS = {
    "tumbling": lambda s: s.window(TumblingEventTimeWindows.of(Time.milliseconds(5))).process(CountWindowProcess()),
    "sliding": lambda s: s.window(SlidingEventTimeWindows.of(Time.milliseconds(5), Time.milliseconds(2)))
    .process(CountWindowProcess()),
    "session": lambda s: s.window(EventTimeSessionWindows.with_gap(Time.milliseconds(3))).process(CountWindowProcess()),
    "count tumbling": lambda s: s.count_window(3).reduce(lambda a, b: (a[0], a[1] + b[1])),
    "count sliding": lambda s: s.count_window(4, 2).reduce(lambda a, b: (a[0], a[1] + b[1])),
}


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("name", list(WINDOWINGS))
def test_windows_give_the_same_results_on_spark(name, parallelism):
    data = HI + [("hello", t) for t in (1, 4, 6, 11, 12, 20)]
    local, spark = on_both(windowed(data, WINDOWINGS[name], parallelism))
    assert local and sorted(spark) == sorted(local)


@pytest.mark.parametrize("generic", [False, True])
def test_window_functions_give_the_same_results_on_spark(generic):
    def window(s):
        windowed_stream = s.window(TumblingEventTimeWindows.of(Time.milliseconds(5)))
        if generic:  # a trigger subclass takes the generic WindowOperator
            windowed_stream = windowed_stream.trigger(type("MyEventTimeTrigger", (EventTimeTrigger,), {})())
        return windowed_stream

    functions = [
        lambda s: window(s).reduce(lambda x, y: (x[0], x[1] + y[1]), window_function=WithWindow()),
        lambda s: window(s).aggregate(Average(), window_function=ApplyWithWindow()),
        lambda s: window(s).apply(ApplyWithWindow()),
    ]
    for function in functions:
        local, spark = on_both(windowed(DATA, function, 2))
        assert local and sorted(spark) == sorted(local)


# -- parity: keyed state, timers, rolling aggregations ---------------------------------------------


def test_keyed_state_of_every_kind_gives_the_same_sequences_per_key():
    data = [("to", 0), ("be", 1), ("or", 2), ("not", 3), ("reset", 4), ("be", 5)]

    def job(env, sink):
        env.set_parallelism(2)
        sink(env.from_collection(data).key_by(lambda v: len(v[0]) % 2, Types.INT()).process(Everything()), "state")

    local, spark = on_both(job)
    for key in (0, 1):
        assert [r for r in spark if r[0] == key] == [r for r in local if r[0] == key]


def test_timers_fire_at_the_end_of_input_as_in_flinks_batch_mode():
    records = [("a", 0), ("b", 100), ("a", 200), ("delete", 200), ("b", 300)]

    def job(env, sink):
        sink(scripted(env, records).key_by(lambda v: "a" if v[0] == "delete" else v[0], Types.STRING())
             .process(Alarm()), "timers")

    spark = outputs(job, *SPARK)
    [processing] = [r for r in spark if r[0] == "processing"]
    # Flink's BatchExecutionInternalTimeService: no watermark while the input is read; at its
    # end event-time timers fire (a's timer at 205 was deleted), then processing-time timers
    assert sorted(r for r in spark if r[0] != "processing") == sorted([
        ("element", "a", 0, MIN), ("element", "a", 200, MIN), ("element", "b", 100, MIN),
        ("element", "b", 300, MIN),
        ("event", "a", 5, 5, MAX), ("event", "b", 105, 105, MAX), ("event", "b", 305, 305, MAX),
    ])
    assert processing[1] == "a" and processing[2] == processing[3] and processing[4] == MAX
    # the local runtime in BATCH mode gives the same (processing time aside)
    local = outputs(job, *BATCH)
    assert sorted(r for r in local if r[0] != "processing") == sorted(r for r in spark if r[0] != "processing")
    assert [r[:2] for r in local if r[0] == "processing"] == [("processing", "a")]


class Reregistering(KeyedProcessFunction):
    """Registers a timer from every timer: in BATCH the service is quiesced at the end."""

    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value[1] + 1)
        return iter(())

    def on_timer(self, timestamp, ctx):
        ctx.timer_service().register_event_time_timer(timestamp + 1)
        yield ctx.get_current_key(), timestamp


def test_timers_registered_by_timers_are_ignored_at_the_end_of_a_batch_job():
    def job(env, sink):
        sink(env.from_collection([("a", 1), ("b", 7)])
             .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps()
                                               .with_timestamp_assigner(lambda v, ts: v[1]))
             .key_by(lambda v: v[0], Types.STRING()).process(Reregistering()), "quiesced")

    assert sorted(outputs(job, *SPARK)) == [("a", 2), ("b", 8)]
    assert sorted(outputs(job, *BATCH)) == [("a", 2), ("b", 8)]


@pytest.mark.parametrize("aggregation", ["sum", "min", "max", "reduce"])
def test_rolling_aggregations_emit_the_final_value_per_key(aggregation):
    data = [("b", 3), ("a", 5), ("b", 1), ("c", 2), ("a", 9), ("b", 7), ("a", 4)]

    def job(env, sink):
        env.set_parallelism(2)
        keyed = env.from_collection(data).key_by(lambda v: v[0], Types.STRING())
        if aggregation == "reduce":
            aggregated = keyed.reduce(lambda a, b: (a[0], a[1] * 10 + b[1]))
        else:
            aggregated = getattr(keyed, aggregation)(1)
        sink(aggregated, "rolling")

    local, spark = on_both(job)
    assert len(local) == len(data) and len(spark) == 3
    assert sorted(spark) == sorted(last_per_key(local, lambda r: r[0]).values())
    assert sorted(outputs(job, *BATCH)) == sorted(spark)


# -- parity: two inputs, side outputs, partitioning --------------------------------------------------


class SumBoth(KeyedCoProcessFunction):
    """Per key: the sums of both inputs, emitted by an event-time timer at 1000."""

    def open(self, ctx):
        self.sums = ctx.get_state(ValueStateDescriptor("sums", Types.PICKLED_BYTE_ARRAY()))

    def process_element1(self, value, ctx):
        self._add(0, value[1], ctx)
        return iter(())

    def process_element2(self, value, ctx):
        self._add(1, value[1], ctx)
        return iter(())

    def _add(self, side, amount, ctx):
        sums = list(self.sums.value() or (0, 0))
        sums[side] += amount
        self.sums.update(tuple(sums))
        ctx.timer_service().register_event_time_timer(1000)

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), *self.sums.value())


class Enrich(KeyedCoProcessFunction):
    """The latest control value of the key, on each record of the data input."""

    def open(self, ctx):
        self.control = ctx.get_state(ValueStateDescriptor("control", Types.STRING()))

    def process_element1(self, value, ctx):
        yield value[0], value[1], self.control.value()

    def process_element2(self, value, ctx):
        self.control.update(value[2])
        return iter(())


def timestamps_from(index):
    return WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, ts: v[index])


def test_keyed_operators_read_their_input_key_after_key_in_pyflinks_order():
    """A keyed operator's inputs sorted as on the local runtime (the orders real PyFlink printed
    for these jobs): each print sink's lines in the same order."""
    sinks = by_sink(run_job(batch_job, *SPARK).lines)
    assert sinks.pop("timers") == [line for key in "abc" for line in PYFLINK_BATCH_TIMER_LINES[key]]
    assert sinks == PYFLINK_BATCH_LINES
    connect = by_sink(run_job(batch_connect_job, *SPARK).lines)
    assert connect == by_sink(run_job(batch_connect_job).lines)
    connect.pop("co")
    assert connect == PYFLINK_BATCH_CONNECT_LINES


def test_keys_python_cannot_hash_are_shuffled_and_reduced_as_pyflink_does():
    """Lists, dicts and Python-equal keys (1, True, 1.0, 0, False) without a key_type: the
    shuffle by key group and the final value per Java key, as PyFlink printed them."""
    assert by_sink(run_job(batch_keys_job, *SPARK).lines) == PYFLINK_BATCH_KEYS_LINES


def test_keyed_connect_gives_the_same_results_and_merges_inputs_by_timestamp():
    data = [("a", 1, 10), ("b", 2, 11), ("a", 3, 30), ("b", 4, 31), ("c", 5, 12)]
    control = [("a", 0, "A1", 5), ("b", 0, "B1", 20), ("a", 0, "A2", 25)]

    def job(env, sink, function):
        env.set_parallelism(2)
        left = env.from_collection(data).assign_timestamps_and_watermarks(timestamps_from(2))
        right = env.from_collection(control).assign_timestamps_and_watermarks(timestamps_from(3))
        sink(left.connect(right).key_by(lambda v: v[0], lambda v: v[0]).process(function), "connect")

    local, spark = on_both(lambda env, sink: job(env, sink, SumBoth()))
    assert sorted(spark) == sorted(local) == [("a", 4, 0), ("b", 6, 0), ("c", 5, 0)]
    # Flink's sorted inputs in BATCH: per key, both inputs' records in timestamp order
    assert sorted(outputs(lambda env, sink: job(env, sink, Enrich()), *SPARK)) == [
        ("a", 1, "A1"), ("a", 3, "A2"), ("b", 2, None), ("b", 4, "B1"), ("c", 5, None)]


def test_side_outputs_connect_and_union_give_the_same_lines():
    def build(env):
        env.set_parallelism(2)
        side_outputs_connect_and_union(env, [1, 2, 3, 4, 5])

    local, spark = run_job(build), run_job(build, *SPARK)
    assert sorted(spark.lines) == sorted(local.lines)
    assert sorted(line.split("> ", 1)[1] for line in spark.lines) == [
        "big 30", "big 40", "big 50", "extra", "small 1", "small 2", "small again 1", "small again 2"]


@pytest.mark.parametrize("partitioning", ["rebalance", "rescale", "shuffle", "broadcast", "global", "forward"])
def test_every_partitioning_gives_the_same_records_per_subtask(partitioning):
    def job(env, sink):
        env.set_parallelism(2)
        numbers = env.from_collection(list(range(20)), Types.INT()).map(lambda v: v * 2).set_parallelism(2)
        if partitioning != "forward":
            numbers = getattr(numbers, partitioning)()
        parallelism = 3 if partitioning in ("rescale", "shuffle", "broadcast", "rebalance") else 2
        numbers.filter(lambda v: v % 3 != 0).set_parallelism(parallelism) \
            .flat_map(lambda v: [v, v + 1]).set_parallelism(parallelism).print().set_parallelism(parallelism)
        env.execute(partitioning)

    local, spark = run_job(lambda env: job(env, None)), run_job(lambda env: job(env, None), *SPARK)
    assert local.lines and Counter(spark.lines) == Counter(local.lines)


# -- parity: broadcast state -----------------------------------------------------------------------


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("job", ["rules", "prices", "limits"])
def test_broadcast_state_jobs_print_the_same_on_spark(job, parallelism):
    from tests.kernel.datastream import test_broadcast_state as jobs

    build = getattr(jobs, f"{job}_job")(parallelism)
    local, spark = run_job(build), run_job(build, *SPARK)
    assert local.lines and Counter(spark.lines) == Counter(local.lines)


def test_spark_reads_the_broadcast_side_first_and_prints_what_pyflink_prints():
    from tests.kernel.datastream.test_broadcast_state import PYFLINK_ORDERS, PYFLINK_REJECTED, broadcast_lines, by_sink, prices_job

    assert by_sink(run_job(prices_job(1), *SPARK).lines) == {
        "out": broadcast_lines(0) + PYFLINK_ORDERS, "rejected": PYFLINK_REJECTED}


# -- async I/O --------------------------------------------------------------------------------------


class Tracked(AsyncFunction):
    """Each input's results, with the most requests its subtask had in flight so far."""

    def open(self, ctx):
        self.in_flight = self.most = 0

    async def async_invoke(self, value):
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0.002 * (value % 5))
        self.in_flight -= 1
        return [(value * 2, self.most), (-value, self.most)]


def test_async_io_runs_each_partitions_requests_concurrently_on_spark():
    def job(env, sink):
        env.set_parallelism(2)
        numbers = env.from_collection(list(range(100)), Types.INT()).rebalance()
        sink(AsyncDataStream.ordered_wait(numbers, Tracked(), Time.seconds(30), 8), "async")

    local, spark = on_both(job)
    expected = sorted(v for n in range(100) for v in (n * 2, -n))
    assert sorted(v for v, _ in local) == sorted(v for v, _ in spark) == expected
    # each partition's asyncio loop had up to the capacity of requests in flight (50 inputs each)
    assert max(most for _, most in spark) == 8
    for results in (local, spark):  # rebalance alternates: one subtask doubles the even inputs
        doubled = [v for v, _ in results if v >= 0]
        for remainder in (0, 2):
            of_one_subtask = [v for v in doubled if v % 4 == remainder]
            assert of_one_subtask == sorted(of_one_subtask)  # ordered: in input order


# -- the example jobs through the CLI ----------------------------------------------------------------


def test_the_examples_print_the_same_on_spark(cli):
    code, local, _ = cli("run", "--quiet", os.path.join(EXAMPLES, "window_wordcount.py"))
    assert code == 0
    code, spark, err = cli("run", "--backend", "spark", "--quiet", os.path.join(EXAMPLES, "window_wordcount.py"))
    assert code == 0, err
    assert local.splitlines() and Counter(spark.splitlines()) == Counter(local.splitlines())

    # a rolling sum: BATCH prints each word's final count, the local run's last line per word
    code, local, _ = cli("run", "--quiet", os.path.join(EXAMPLES, "wordcount.py"))
    assert code == 0
    code, spark, err = cli("run", "--backend", "spark", "--quiet", os.path.join(EXAMPLES, "wordcount.py"))
    assert code == 0, err
    word = lambda line: line.split("> (", 1)[1].rsplit(",", 1)[0]  # noqa: E731  "2> (be,2)" -> "be"
    assert sorted(spark.splitlines()) == sorted(last_per_key(local.splitlines(), word).values())


# -- recorded like any run ---------------------------------------------------------------------------


def test_a_spark_run_is_recorded_with_subtasks_stages_and_metrics(cli):
    def job(env):
        env.set_parallelism(2)
        env.from_collection(DATA).assign_timestamps_and_watermarks(timestamps_from(1)) \
            .key_by(lambda v: v[0], Types.STRING()).window(TumblingEventTimeWindows.of(Time.milliseconds(5))) \
            .reduce(lambda a, b: (a[0], a[1] + b[1])).print()
        env.execute("recorded")

    run = run_job(job, *SPARK)
    assert run.outcome.status == "FINISHED" and len(run.lines) == 5
    job_graph_vertices = {(v.name, v.parallelism) for v in run.outcome.vertices}
    statuses = [(e.old_status, e.new_status) for e in run.events(JobStatusChanged)]
    assert statuses == [("CREATED", "RUNNING"), ("RUNNING", "FINISHED")]
    states: dict = {}
    for event in run.events(ExecutionStateChanged):
        states.setdefault((event.vertex_name, event.subtask), []).append(event.new_state)
    assert set(states) == {(name, s) for name, p in job_graph_vertices for s in range(p)}
    assert all(seq == ["SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING", "FINISHED"] for seq in states.values())
    # records in and out per subtask (records out: leaving the chain; the sink is chained)
    per_subtask = {(e.vertex_name, e.subtask): (e.records_in, e.records_out)
                   for e in run.events(TaskMetricsSampled) if e.final}
    source, window = "Source: Collection Source -> Timestamps/Watermarks", "TumblingEventTimeWindows -> Sink: Print to Std. Out"
    channels = KeyGroupChannels(2, 128, lambda v: v[0], Types.STRING())  # the local runtime's key_by routing
    window_in = Counter(channels.channel_of(key) for key, _ in DATA)
    assert per_subtask == {(source, 0): (0, len(DATA)), (window, 0): (window_in[0], 0), (window, 1): (window_in[1], 0)}
    for sample in run.events(TaskMetricsSampled):
        assert sample.idle_ms + sample.busy_ms + sample.back_pressured_ms == pytest.approx(1000)
    stages = run.events(SparkStageCompleted)
    assert sorted(e.vertex_name for e in stages) == sorted(name for name, _ in job_graph_vertices)
    assert all(e.stage_ids and e.tasks >= 1 for e in stages)

    # rill runs / metrics / sql read it back
    run_id = run.outcome.run_id
    code, out, _ = cli("runs")
    assert code == 0 and run_id in out
    code, out, err = cli("metrics", run_id, "--json")
    assert code == 0, err
    code, out, err = cli("sql", "--format", "json",
                         f"SELECT vertex_name, sum(records_in) AS records_in, sum(records_out) AS records_out "
                         f"FROM task_metrics WHERE run_id = '{run_id}' AND final GROUP BY vertex_name")
    assert code == 0, err
    totals = {row["vertex_name"]: (row["records_in"], row["records_out"]) for row in json.loads(out)}
    assert totals == {v.name: (v.records_in, v.records_out) for v in run.outcome.vertices} == {
        source: (0, len(DATA)), window: (len(DATA), 0)}


# -- Spark SQL over recorded runs --------------------------------------------------------------------


VIEW_NAMES = ["task_metrics", "backpressure", "watermarks", "heartbeats", "task_timeline", "slots", "failures",
              "backpressure_sampling"]


def _normalised(rows: list[dict]) -> list[str]:
    def value(v):
        if isinstance(v, float):
            return None if math.isnan(v) else round(v, 6)
        return v

    return sorted(json.dumps({k: value(v) for k, v in row.items()}, sort_keys=True, default=str) for row in rows)


def test_sql_on_spark_gives_what_duckdb_gives_for_every_view(cli, tmp_path):
    from tests.replay.test_replay import FAULT_JOB

    path = tmp_path / "fault.py"
    path.write_text(FAULT_JOB)
    code, _, err = cli("run", "--clock", "simulated", "--set", "restart-strategy.type=fixed-delay",
                       "--inject", "kill:target=taskexecutor-2,at=30s", "--quiet", "--set", "plugins.backpressure=sampling",
                       str(path))
    assert code == 0, err
    on_log = {}
    for view in VIEW_NAMES:
        results = []
        for engine in ("duckdb", "spark"):
            code, out, err = cli("sql", "--engine", engine, "--format", "json", f"SELECT * FROM {view}")
            assert code == 0, err
            results.append(_normalised(json.loads(out)))
        assert results[0] and results[0] == results[1], view
        on_log[view] = results[0]

    # over an export: the same answer from both engines
    code, _, err = cli("export", "last", "--parquet", str(tmp_path / "out"))
    assert code == 0, err
    query = ("SELECT vertex_name, subtask, attempt, count(*) AS samples, sum(records_in) AS records_in "
             "FROM task_metrics GROUP BY vertex_name, subtask, attempt ORDER BY 1, 2, 3")
    answers = []
    for engine in ("duckdb", "spark"):
        code, out, err = cli("sql", "--engine", engine, "--parquet", str(tmp_path / "out"), "--format", "csv", query)
        assert code == 0, err
        answers.append(out)
    assert answers[0] == answers[1] and len(answers[0].splitlines()) > 4
    for engine in ("duckdb", "spark"):  # a plugin's view (the sampling's) too
        code, out, err = cli("sql", "--engine", engine, "--parquet", str(tmp_path / "out"), "--format", "json",
                             "SELECT * FROM backpressure_sampling")
        assert code == 0, err
        assert _normalised(json.loads(out)) == on_log["backpressure_sampling"]


def test_an_unknown_sql_engine_names_the_known_ones(cli):
    code, _, err = cli("sql", "--engine", "presto", "SELECT 1")
    assert code == 2 and "unknown SQL engine 'presto' (available: duckdb, spark)" in err


# -- clear limits --------------------------------------------------------------------------------------


def test_an_unbounded_source_is_a_clear_error(cli, tmp_path):
    path = tmp_path / "unbounded.py"
    path.write_text(
        "from kernel.common import WatermarkStrategy\n"
        "from kernel.datastream import StreamExecutionEnvironment\n"
        "from kernel.datastream.connectors.datagen import DataGeneratorSource\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.from_source(DataGeneratorSource(lambda i: i), WatermarkStrategy.no_watermarks(), 'Forever').print()\n"
        "env.execute('forever')\n")
    code, _, err = cli("run", "--backend", "spark", str(path))
    assert code == 2 and "source 'Source: Forever' is unbounded: the spark backend runs bounded jobs only" in err


def failing_job(kind: str):
    def risky(value):
        if value == 3:
            if kind == "raise":
                raise ValueError("no threes")
            if kind == "system-exit":
                raise SystemExit("leaving")
            if kind == "unpicklable":
                return threading.Lock()
            if kind == "crash":
                os._exit(7)
        return value

    def job(env):
        env.set_parallelism(2)
        env.from_collection(list(range(10)), Types.INT()).map(risky).name("Risky") \
            .key_by(lambda v: len(str(v)) % 2).map(lambda v: v).name("After").add_sink(lambda v: None)
        env.execute("failing")

    return job


@pytest.mark.parametrize("kind, message", [
    ("raise", "Risky (1/2) failed in operator 'Risky': ValueError: no threes"),
    ("system-exit", "Risky (1/2) failed in operator 'Risky': SystemExit: leaving"),
    ("unpicklable", "Risky (1/2) failed in operator 'Risky': the spark backend cannot serialise a record of "
                    "'Risky': TypeError: cannot pickle '_thread.lock' object"),
    ("crash", "Risky (1/2) failed in Spark: SparkException: Python worker exited unexpectedly (crashed)"),
])
def test_failures_name_the_operator(kind, message):
    run = run_job(failing_job(kind), *SPARK)
    assert run.outcome.status == "FAILED"
    assert str(run.error).startswith(f"job 'failing' failed (run {run.outcome.run_id}): {message}")
    final = {(e.vertex_name, e.subtask): (e.new_state, e.failure.split("\n")[0]) for e in run.events(ExecutionStateChanged)}
    # the other Risky subtask finished or not before Spark gave up the job
    assert final.pop(("Risky", 1)) in {("FINISHED", ""), ("CANCELED", "")}
    assert final == {("Source: Collection Source", 0): ("FINISHED", ""), ("Risky", 0): ("FAILED", ANY),
                     ("After -> Sink: Unnamed", 0): ("CANCELED", ""), ("After -> Sink: Unnamed", 1): ("CANCELED", "")}
    assert final[("Risky", 0)][1].startswith(message)


def test_spark_settings_are_validated(cli):
    code, _, err = cli("config", "--set", "spark.mastr=local[1]")
    assert code == 2 and "spark.mastr" in err and "spark.master" in err
    code, out, err = cli("config", "--set", "spark.master=local[1]")
    assert code == 0 and "local[1]" in out


MASTER_FORMS = "local, local[N], local[*], local[N,F], local-cluster[N,C,M], spark://HOST:PORT[,HOST:PORT...], yarn or k8s://URL"


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[*, 3]", "local-cluster[2, 1, 1024]",
                                    "spark://a:7077", "spark://a:7077,b:7078", "spark://[::1]:7077", "yarn",
                                    "k8s://https://10.0.0.1:6443"])
def test_master_urls_spark_starts_with_are_taken(cli, master):
    code, out, err = cli("config", "--set", f"spark.master={master}")
    assert code == 0 and f"spark.master  " in out and master in out, err


@pytest.mark.parametrize("master", ["bogus://nowhere:7077", "local[0]", "local[two]", "spark://a", "spark://a:7077,",
                                    "spark://", "mesos://zk:2181", "Local"])
def test_a_master_url_spark_would_refuse_is_refused_in_a_line_before_spark_starts(tmp_path, master):
    """As a user runs it: the job never starts a JVM; one line names the key, the value and the
    forms Spark takes (a bad URL used to fail inside Spark, with the JVM's stack trace and a
    hint about Java)."""
    job = tmp_path / "job.py"
    job.write_text("raise SystemExit('the job ran')\n")
    done = subprocess.run([*rill_command(), "run", "--set", "plugins.workers=spark", "--set", f"spark.master={master}",
                           str(job)], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "RILL_HOME": str(tmp_path / ".rill")})
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [f"rill: error: invalid configuration [spark.master (--set)]: spark.master "
                                        f"{master!r} is not a master URL Spark knows: {MASTER_FORMS}"]


def test_a_failed_start_says_what_to_check(monkeypatch, tmp_path):
    """Java when none is found; for a standalone master, which of its addresses answered; else
    where Spark's own account of the failure is."""
    import socket

    from plugins.spark.session import _what_to_check

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert _what_to_check("local[1]") == ("the spark backend needs Java 17 or later on PATH or in JAVA_HOME: none "
                                          "is found")
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert _what_to_check("local[1]") == "Spark's own messages say why: run rill with --debug"
    with socket.socket() as listening, socket.socket() as closed:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        closed.bind(("127.0.0.1", 0))  # bound, not listening: a connection is refused
        up, down = (f"127.0.0.1:{s.getsockname()[1]}" for s in (listening, closed))
        assert _what_to_check(f"spark://{down}") == f"no Spark master answers at {down}: Connection refused"
        assert _what_to_check(f"spark://{down},{up}") == "Spark's own messages say why: run rill with --debug"


def test_spark_starts_quietly_and_stops(tmp_path):
    env = {**os.environ, "RILL_HOME": str(tmp_path / ".rill")}
    result = subprocess.run([sys.executable, "-m", "kernel.cli.main", "run", "--backend", "spark",
                             "--set", "spark.master=local[1]", os.path.join(EXAMPLES, "wordcount.py")],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() and all("> (" in line for line in result.stdout.splitlines())
    spark_lines = [line for line in result.stderr.splitlines() if line.startswith("spark:")]
    assert spark_lines == [] and "INFO" not in result.stderr and "log4j" not in result.stderr
    import pyspark

    assert f"spark {pyspark.__version__} (local[1])" in result.stderr
