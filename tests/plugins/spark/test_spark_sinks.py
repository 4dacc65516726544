"""Sinks on the spark backend (plugins/spark/sinks.py): user sinks and FileSink's writers run
in the Spark tasks, print and collect come back to the driver, and only the FileSink parts of
each subtask's counted computation are committed, once the job succeeded.

One SparkSession (local[2]) serves the module; the retry test runs `rill run` in a process of
its own with Spark's task retries on (local[2,2])."""

from __future__ import annotations

import ast
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from kernel.common import Encoder, Types, WatermarkStrategy
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.connectors.file_system import BucketAssigner, FileSink, OutputFileConfig, RollingPolicy
from kernel.datastream.functions import SinkFunction
from kernel.runtime.streaming.file_sink import FileWriter
from kernel.runtime.streaming.partitioning import KeyGroupChannels
from plugins.spark.sinks import SentToDriver
from tests.runtime import run_job

ROOT = str(Path(__file__).resolve().parents[3])
SPARK = ("rill.clock=realtime", "plugins.backend=spark")
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
WORDS = [f"w{(i * 7919) % 97:02d}" for i in range(400)]


@pytest.fixture(scope="module", autouse=True)
def spark():
    from plugins.spark.options import SparkOptions
    from plugins.spark.session import spark_session

    session, _ = spark_session(SparkOptions())
    yield session
    session.stop()


def committed(base: Path) -> dict[str, list[str]]:
    """The visible part files under ``base``: bucket (relative directory) -> their contents, sorted."""
    buckets: dict[str, list[str]] = {}
    for path in sorted(base.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            buckets.setdefault(str(path.parent.relative_to(base)), []).append(path.read_text())
    return {bucket: sorted(contents) for bucket, contents in buckets.items()}


def hidden(base: Path) -> list[str]:
    return sorted(path.name for path in base.rglob(".*") if path.is_file())


# -- user sinks run in the executors, print comes to the driver ----------------------------------


class RecordingSink(SinkFunction):
    """Writes, when closed, what its subtask received and where it ran into a file of its own
    (``x``: a subtask closes once)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def open(self, ctx):
        self.subtask, self.attempt = ctx.get_index_of_this_subtask(), ctx.get_attempt_number()
        self.records: list = []

    def invoke(self, value, context):
        self.records.append(value)

    def close(self):
        with open(os.path.join(self.directory, f"subtask-{self.subtask}.json"), "x") as file:
            json.dump({"pid": os.getpid(), "attempt": self.attempt, "records": self.records}, file)


def recorded(directory: Path) -> dict[int, dict]:
    return {int(path.stem.split("-")[1]): json.loads(path.read_text()) for path in directory.glob("subtask-*.json")}


def test_user_sinks_run_in_the_executors_and_print_comes_to_the_driver(tmp_path):
    def job(directory):
        def build(env):
            env.set_parallelism(2)
            counted = env.from_collection(WORDS, Types.STRING()).key_by(lambda w: w, Types.STRING()) \
                .map(lambda w: (w, len(w)), Types.TUPLE([Types.STRING(), Types.INT()]))
            counted.add_sink(RecordingSink(str(directory)))
            counted.filter(lambda pair: pair[0] < "w20").print()
            env.execute("recording")

        return build

    (tmp_path / "local").mkdir()
    (tmp_path / "spark").mkdir()
    local, spark = run_job(job(tmp_path / "local")), run_job(job(tmp_path / "spark"), *SPARK)
    assert spark.outcome.status == "FINISHED", spark.error
    on_local, on_spark = recorded(tmp_path / "local"), recorded(tmp_path / "spark")
    assert set(on_local) == set(on_spark) == {0, 1}
    # the local runtime calls the sink in this process; Spark in its Python workers
    assert {sink["pid"] for sink in on_local.values()} == {os.getpid()}
    assert os.getpid() not in {sink["pid"] for sink in on_spark.values()}
    # each sink subtask got the records key_by routes to it: its index is its Spark partition's
    channels = KeyGroupChannels(2, 128, lambda w: w, Types.STRING())
    for subtask in (0, 1):
        expected = sorted((w, 3) for w in WORDS if channels.channel_of(w) == subtask)
        assert expected and sorted(map(tuple, on_spark[subtask]["records"])) == expected
        assert sorted(map(tuple, on_local[subtask]["records"])) == expected
        assert on_spark[subtask]["attempt"] == 0
    # print came back to the driver's stdout with Flink's subtask prefixes, as on the local runtime
    printed = Counter(f"{channels.channel_of(w) + 1}> ({w},3)" for w in WORDS if w < "w20")
    assert {line.split(">")[0] for line in printed} == {"1", "2"}
    assert Counter(spark.lines) == Counter(local.lines) == printed


def test_execute_and_collect_brings_the_records_to_the_caller_in_its_spark_session(spark):
    results: list = []
    application = spark.sparkContext.applicationId

    def build(env):
        env.set_parallelism(2)
        numbers = env.from_collection(list(range(50)), Types.INT()).rebalance().map(lambda v: v * v, Types.INT())
        results.extend(numbers.execute_and_collect("collected"))

    run = run_job(build, *SPARK)
    assert run.outcome.status == "FINISHED" and sorted(results) == [v * v for v in range(50)]
    # the job (run in a thread of its own) used the session of the caller's thread and left it running
    assert spark.sparkContext.applicationId == application and spark.sparkContext.parallelize(range(3)).count() == 3


# -- FileSink: written in the executors, committed by the driver -----------------------------------


def file_sink(base: Path, assigner: BucketAssigner, policy: RollingPolicy, check_interval: int | None = None):
    builder = FileSink.for_row_format(str(base), Encoder.simple_string_encoder()) \
        .with_output_file_config(OutputFileConfig.builder().with_part_prefix("words").with_part_suffix(".txt").build()) \
        .with_rolling_policy(policy).with_bucket_assigner(assigner)
    if check_interval is not None:
        builder = builder.with_bucket_check_interval(check_interval)
    return builder.build()


ASSIGNERS = {
    "base path": BucketAssigner.base_path_bucket_assigner,
    "date-time": lambda: BucketAssigner.date_time_bucket_assigner("'day-'yyyy-MM-dd", "UTC"),
}


@pytest.mark.parametrize("assigner", list(ASSIGNERS))
def test_a_file_sink_commits_on_spark_what_it_commits_on_the_local_runtime(tmp_path, assigner):
    def job(base):
        def build(env):
            env.set_parallelism(2)
            env.from_collection(WORDS, Types.STRING()).key_by(lambda w: w, Types.STRING()) \
                .map(str.upper, Types.STRING()) \
                .sink_to(file_sink(base, ASSIGNERS[assigner](), RollingPolicy.default_rolling_policy(part_size=100)))
            env.execute("files")

        return build

    # the realtime clock on both: date-time buckets are of processing time (the wall clock on Spark);
    # BATCH on both: the keyed map reads its input sorted by key
    local = run_job(job(tmp_path / "local"), "rill.clock=realtime", "execution.runtime-mode=BATCH")
    spark = run_job(job(tmp_path / "spark"), *SPARK)
    assert local.outcome.status == spark.outcome.status == "FINISHED", spark.error
    on_local, on_spark = committed(tmp_path / "local"), committed(tmp_path / "spark")
    # the same parts: rolled at the same records, in the same buckets
    assert on_spark == on_local
    [bucket] = on_spark
    assert bucket == "." if assigner == "base path" else re.fullmatch(r"day-\d{4}-\d{2}-\d{2}", bucket)
    lines = [line for part in on_spark[bucket] for line in part.splitlines()]
    assert sorted(lines) == sorted(w.upper() for w in WORDS) and len(on_spark[bucket]) > 10  # rolled
    names = [path.name for path in (tmp_path / "spark").rglob("*") if path.is_file()]
    assert all(re.fullmatch(rf"words-{UUID}-\d+\.txt", name) for name in names)  # nothing pending is left
    assert len({name.split("-", 1)[1].rsplit("-", 1)[0] for name in names}) == 2  # a uuid per writer


def test_time_based_rolling_works_in_the_spark_tasks(tmp_path):
    """A rate-limited source (20 records a second) read without waiting: processing time runs
    ahead of the wall clock by the pauses skipped, and the bucket checks (every 100 ms) roll
    each part after 500 ms, as the local runtime's do on its clock."""
    def job(base):
        def build(env):
            source = DataGeneratorSource(lambda i: f"r{i:03d}", count=60, records_per_second=20, type_info=Types.STRING())
            env.from_source(source, WatermarkStrategy.no_watermarks(), "Rated") \
                .sink_to(file_sink(base, BucketAssigner.base_path_bucket_assigner(),
                                   RollingPolicy.default_rolling_policy(rollover_interval=500, inactivity_interval=500),
                                   check_interval=100))
            env.execute("rolling")

        return build

    local, spark = run_job(job(tmp_path / "local")), run_job(job(tmp_path / "spark"), *SPARK)
    assert local.outcome.status == spark.outcome.status == "FINISHED", spark.error
    for base in (tmp_path / "local", tmp_path / "spark"):
        parts = sorted((path for path in base.iterdir() if not path.name.startswith(".")),
                       key=lambda path: int(path.stem.rsplit("-", 1)[1]))
        assert "".join(path.read_text() for path in parts) == "".join(f"r{i:03d}\n" for i in range(60))
        sizes = [len(path.read_text().splitlines()) for path in parts]
        # on Spark processing time is the wall clock: when the task stalls (a loaded machine), the
        # rate limiter lets the records it owes out at once, and a part holds more than 12
        most = 12 if base.name == "local" else 20
        assert 5 <= len(parts) <= 7 and all(8 <= size <= most for size in sizes[:-1]), (base.name, sizes)


def picky_job(base: Path):
    class Picky(SinkFunction):
        def invoke(self, value, context):
            if value == 7:
                raise ValueError(f"no sevens: {value}")

    def build(env):
        env.set_parallelism(2)
        numbers = env.from_collection(list(range(10)), Types.INT()).map(lambda v: v, Types.INT())
        numbers.add_sink(Picky()).name("Picky")
        numbers.sink_to(file_sink(base, BucketAssigner.base_path_bucket_assigner(),
                                  RollingPolicy.default_rolling_policy()))
        env.execute("picky")

    return build


def test_a_sink_failing_in_an_executor_fails_the_job_as_on_the_local_runtime(tmp_path):
    local, spark = run_job(picky_job(tmp_path / "local")), run_job(picky_job(tmp_path / "spark"), *SPARK)
    assert local.outcome.status == spark.outcome.status == "FAILED"
    one_line = "Map -> (Sink: Picky, Sink: Writer) (1/2) failed in operator 'Sink: Picky': ValueError: no sevens: 7"
    for run in (local, spark):
        assert str(run.error) == f"job 'picky' failed (run {run.outcome.run_id}): {one_line}"
        # the user's frame, in this file
        assert f'File "{__file__}", line' in run.outcome.failure and "in invoke" in run.outcome.failure
    assert committed(tmp_path / "spark") == {}  # a failed job commits nothing


RETRIED_JOB = '''
import os, sys
from kernel.common import Encoder, Types
from kernel.datastream import MapFunction, StreamExecutionEnvironment
from kernel.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from kernel.datastream.functions import SinkFunction

out, marker, mode = sys.argv[1], sys.argv[2], sys.argv[3]


def started(ctx):
    """Note the attempt; the first attempt of subtask 0 fails (once: the marker stays)."""
    subtask, attempt = ctx.get_index_of_this_subtask(), ctx.get_attempt_number()
    open(f"{marker}-{subtask}-{attempt}", "x").close()
    return subtask == 0 and not os.path.exists(marker)


def fail(reason):
    with open(marker, "w") as file:
        file.write(repr((os.getpid(), sorted(os.listdir(out)))))
    raise RuntimeError(reason)


class FailWhileWriting(MapFunction):
    """At its 9,000th record: its sink has written a block of 8,192 into parts by then."""

    def open(self, ctx):
        self.failing, self.seen = started(ctx), 0

    def map(self, value):
        self.seen += 1
        if self.failing and self.seen == 9000:
            fail("the first attempt fails while writing")
        return value


class FailWhenClosing(SinkFunction):
    """As its task closes: the FileSink in its chain has handed its parts over by then."""

    def open(self, ctx):
        self.failing = started(ctx)

    def invoke(self, value, context):
        pass

    def close(self):
        if self.failing:
            fail("the first attempt fails as it closes")


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
numbers = env.from_collection(list(range(20000)), Types.INT()).rebalance() \\
    .map(FailWhileWriting() if mode == "writing" else (lambda v: v), Types.INT())
numbers.sink_to(FileSink.for_row_format(out, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
                .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=10000)).build())
if mode == "closing":
    numbers.add_sink(FailWhenClosing())
env.execute("retried")
'''


@pytest.mark.parametrize("mode", ["writing", "closing"])
def test_a_retried_spark_task_leaves_exactly_one_copy_committed(tmp_path, mode):
    job, out, marker = tmp_path / "retried.py", tmp_path / "out", tmp_path / "failed-once"
    job.write_text(RETRIED_JOB)
    out.mkdir()
    env = {**os.environ, "RILL_HOME": str(tmp_path / ".rill")}
    # local[2,2]: two threads, a task may fail once (spark.task.maxFailures = 2) and is retried
    result = subprocess.run([sys.executable, "-m", "kernel.cli.main", "run", "--backend", "spark",
                             "--set", "spark.master=local[2,2]", str(job), str(out), str(marker), mode],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr
    pid, seen = ast.literal_eval(marker.read_text())
    assert pid != os.getpid()
    # Spark ran subtask 0 again, as attempt 1 (RuntimeContext.get_attempt_number)
    assert sorted(path.name for path in tmp_path.glob("failed-once-*")) == [
        "failed-once-0-0", "failed-once-0-1", "failed-once-1-0"]
    # when the first attempt failed it had written parts, hidden (in progress, or pending and
    # handed over): nothing is visible before the driver commits
    assert any(re.fullmatch(rf"\.part-{UUID}-\d+\.inprogress\.{UUID}", name) for name in seen)
    assert all(name.startswith(".") for name in seen)
    # visible: each record once; the failed attempt's parts were discarded, nothing else is pending
    lines = [line for contents in committed(out).values() for part in contents for line in part.splitlines()]
    assert sorted(map(int, lines)) == list(range(20000))
    assert hidden(out) == []


# -- the driver's choice of committables -----------------------------------------------------------------


def pending_parts(base: Path, name: str, lines: list[str]) -> list[tuple[str, str]]:
    """A FileSink writer's pending parts holding ``lines`` (its rng seeded with ``name``)."""
    sink = file_sink(base, BucketAssigner.base_path_bucket_assigner(), RollingPolicy.default_rolling_policy())
    writer = FileWriter(sink, lambda values: "".join(f"{v}\n" for v in values).encode(),
                        lambda value: f"{value}\n".encode(), random.Random(name))
    writer.write(lines, 0)
    return writer.prepare_commit(flush=True)


def sent_by_two_computations(base: Path) -> list[tuple]:
    """Subtask 0 of vertex v computed twice (the first to finish counts), subtask 1 once, and an
    attempt of subtask 1 whose metrics never came (it did not finish)."""
    metrics = {"started": 1, "ended": 2, "records_in": 2, "records_out": 0}
    return [
        ("c", "v", 0, "first", 7, pending_parts(base, "first", ["a", "b"])),
        ("m", "v", 0, "first", metrics),
        ("c", "v", 1, "unfinished", 7, pending_parts(base, "unfinished", ["c", "d"])),
        ("c", "v", 0, "copy", 7, pending_parts(base, "copy", ["a", "b"])),
        ("m", "v", 0, "copy", {**metrics, "records_in": 99}),
        ("c", "v", 1, "only", 7, pending_parts(base, "only", ["c", "d"])),
        ("m", "v", 1, "only", metrics),
    ]


def test_the_driver_commits_only_the_parts_of_each_subtasks_counted_computation(tmp_path):
    sent = SentToDriver(sent_by_two_computations(tmp_path))
    assert len(hidden(tmp_path)) == 4 and committed(tmp_path) == {}
    assert sent.metrics[("v", 0)]["records_in"] == 2  # the first computation's
    sent.commit()
    assert committed(tmp_path) == {".": ["a\nb\n", "c\nd\n"]}
    assert hidden(tmp_path) == []  # the copies' parts are gone


def test_a_failed_job_discards_every_part(tmp_path):
    sent = SentToDriver(sent_by_two_computations(tmp_path))
    sent.discard()
    assert committed(tmp_path) == {} and hidden(tmp_path) == []
