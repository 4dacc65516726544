"""Checkpointing as configured and coordinated: PyFlink's API and Flink's keys, the default
restart strategy with checkpointing, the CheckpointCoordinator's periodic triggering, min
pause, max concurrent checkpoints, timeouts, declines and tolerable failures (checkpoint ids and
statuses as the ``checkpoints`` view shows them), the checkpoint directory's layout and format,
retention, the events and both views through ``rill sql``, and determinism.

Most jobs are :mod:`checkpoint_jobs`' two sources into one task, one of them through the slow
SlowB: an aligned checkpoint waits there behind SlowB's backlog, so it takes a while.
"""

from __future__ import annotations

from pathlib import Path

import json
import os
import textwrap
import threading

import msgspec
import pytest

from checkpoint_jobs import CountPerSource, counted, probe, two_sources
from kernel.runtime.checkpointing.format import (
    FORMAT_VERSION,
    MAGIC,
    CheckpointFormatError,
    CheckpointMetadata,
    decode_metadata,
    encode_metadata,
)
from kernel.runtime.cluster_events import JobStatusChanged, TaskFailureHandled
from kernel.common import Duration, Types
from kernel.common.watermark_strategy import WatermarkStrategy
from kernel.datastream import CheckpointingMode, ExternalizedCheckpointRetention
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.functions import KeyedProcessFunction, MapFunction, RuntimeContext
from kernel.datastream.state import ValueStateDescriptor
from kernel.errors import ConfigError, PluginError
from plugins.checkpointing.events import (
    CheckpointAcknowledged,
    CheckpointCompleted,
    CheckpointDeclined,
    CheckpointFailed,
    CheckpointTriggered,
)
from tests.runtime import run_job

FAST_NETWORK = ("execution.buffer-timeout.interval=0ms", "taskmanager.memory.segment-size=32b")
EXCEEDED = ("Exceeded checkpoint tolerable failure threshold. The latest checkpoint failed due to Checkpoint expired "
            "before completing., see the checkpoints view to find out why continuous checkpoints failed.")


def ms(event) -> float:
    return event.time / 1e6


def history(job) -> list[tuple[int, str, str]]:
    """(checkpoint id, COMPLETED or FAILED, failure reason) in id order, as the checkpoints view
    derives them from the events."""
    failed = {e.checkpoint_id: e.reason for e in job.events(CheckpointFailed)}
    completed = {e.checkpoint_id for e in job.events(CheckpointCompleted)}
    return [(e.checkpoint_id, "COMPLETED" if e.checkpoint_id in completed else "FAILED",
             failed.get(e.checkpoint_id, "")) for e in job.events(CheckpointTriggered)]


# -- API and configuration ------------------------------------------------------------------------


def test_the_checkpoint_config_reads_and_writes_flinks_keys():
    seen = {}

    def build(env):
        config = env.get_checkpoint_config()
        seen["defaults"] = (
            config.is_checkpointing_enabled(), config.get_checkpoint_interval(), config.get_checkpointing_mode(),
            config.get_checkpoint_timeout(), config.get_min_pause_between_checkpoints(),
            config.get_max_concurrent_checkpoints(), config.get_tolerable_checkpoint_failure_number(),
            config.get_externalized_checkpoint_retention(), config.is_unaligned_checkpoints_enabled(),
            config.get_aligned_checkpoint_timeout().to_milliseconds())
        assert env.enable_checkpointing(300, CheckpointingMode.AT_LEAST_ONCE) is env
        config.set_checkpoint_timeout(20_000).set_min_pause_between_checkpoints(50).set_max_concurrent_checkpoints(2)
        config.set_tolerable_checkpoint_failure_number(3)
        config.set_externalized_checkpoint_retention(ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION)
        config.enable_unaligned_checkpoints()
        config.set_aligned_checkpoint_timeout(Duration.of_millis(40))
        seen["set"] = (
            env.get_checkpoint_interval(), env.get_checkpointing_mode(), config.get_checkpoint_timeout(),
            config.get_min_pause_between_checkpoints(), config.get_max_concurrent_checkpoints(),
            config.get_tolerable_checkpoint_failure_number(), config.is_externalized_checkpoints_enabled(),
            env.is_unaligned_checkpoints_enabled(), config.get_alignment_timeout().to_milliseconds())
        with pytest.raises(ValueError, match="Checkpoint interval must be larger than or equal to 10 ms"):
            config.set_checkpoint_interval(5)
        with pytest.raises(ValueError, match="The maximum number of concurrent attempts must be at least one."):
            config.set_max_concurrent_checkpoints(0)
        env.from_collection([1, 2, 3], Types.INT()).add_sink(lambda value: None)
        env.execute("configured")

    job = run_job(build)
    # Flink's defaults: off, EXACTLY_ONCE, 10 min timeout, no pause, one at a time, no failure tolerated
    assert seen["defaults"] == (False, -1, CheckpointingMode.EXACTLY_ONCE, 600_000, 0, 1, 0,
                                ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS, False, 0)
    assert seen["set"] == (300, CheckpointingMode.AT_LEAST_ONCE, 20_000, 50, 2, 3, True, True, 40)
    assert job.events(CheckpointCompleted)  # the job's own keys switched checkpointing on


def test_checkpoint_keys_are_checked_like_every_key():
    def build(env):
        env.from_collection([1], Types.INT()).add_sink(lambda value: None)
        env.execute("keys")

    with pytest.raises(ConfigError, match="execution.checkpointing.interval must be at least 10 ms"):
        run_job(build, "execution.checkpointing.interval=5ms")
    with pytest.raises(ConfigError, match="execution.checkpointing.mode"):
        run_job(build, "execution.checkpointing.mode=SOMETIMES")
    with pytest.raises(ConfigError, match="'filesystem' needs execution.checkpointing.dir"):
        run_job(build, "execution.checkpointing.interval=1s", "execution.checkpointing.storage=filesystem")
    # a deprecated 1.x name still counts for the current key
    job = run_job(build, "execution.checkpointing.interval=1s", "state.checkpoints.dir=old-name")
    assert job.outcome.status == "FINISHED" and os.path.isdir("old-name")


def test_unaligned_checkpoints_are_a_plugins_which_the_key_selects():
    job = run_job(counted, "execution.checkpointing.interval=45ms", "execution.checkpointing.unaligned.enabled=true")
    assert job.events(CheckpointCompleted) and all(e.unaligned for e in job.events(CheckpointAcknowledged))
    with pytest.raises(PluginError, match="execution.checkpointing.unaligned.enabled: no loaded plugin handles "
                                          "unaligned barriers"):
        run_job(counted, "execution.checkpointing.interval=45ms", "execution.checkpointing.unaligned.enabled=true",
                "plugins.disabled=barrier-handling.unaligned")
    # unaligned checkpoints are EXACTLY_ONCE ones: at least once, barriers are tracked as before
    job = run_job(counted, "execution.checkpointing.interval=45ms", "execution.checkpointing.unaligned.enabled=true",
                  "execution.checkpointing.mode=AT_LEAST_ONCE")
    assert job.events(CheckpointCompleted) and not any(e.unaligned for e in job.events(CheckpointAcknowledged))


# -- restart strategy ---------------------------------------------------------------------------------


def test_with_checkpointing_and_no_restart_strategy_the_job_restarts_with_exponential_delay():
    job = run_job(counted, *FAST_NETWORK, "execution.checkpointing.interval=45ms",
                  faults=["raise:operator=Count,record=12"])
    (handled,) = job.events(TaskFailureHandled)
    # Flink's default with checkpointing (reference 11): exponential delay from 1 s, jitter 10 %
    assert handled.restart and 900 <= handled.delay_ms <= 1100
    assert job.outcome.status == "FINISHED"
    without = run_job(counted, *FAST_NETWORK, faults=["raise:operator=Count,record=12"])
    (handled,) = without.events(TaskFailureHandled)
    assert not handled.restart and "NoRestartBackoffTimeStrategy" in handled.reason
    assert without.outcome.status == "FAILED"


# -- the coordinator ----------------------------------------------------------------------------------


def steady_job(env):
    """One source at 100 records/s keyed into a count: checkpoints complete at once."""
    env.set_parallelism(1)
    env.from_source(DataGeneratorSource(lambda i: ("k", i), count=100, records_per_second=100),
                    WatermarkStrategy.no_watermarks(), "Steady").key_by(lambda v: v[0], Types.STRING()) \
        .process(CountPerSource()).add_sink(lambda value: None)
    env.execute("steady")


def test_checkpoints_are_triggered_at_the_sources_every_interval():
    job = run_job(steady_job, "execution.checkpointing.interval=100ms")
    triggers = [ms(e) for e in job.events(CheckpointTriggered)]
    first = triggers[0]
    # the first after a random (seeded) delay in [min-pause, interval], then every interval
    assert 0 <= first <= 100
    assert triggers[:-1] == [first + 100 * n for n in range(len(triggers) - 1)] and triggers[-2] == 982.0
    # the final checkpoint, at once when every task ended its input (the last record at 990 ms; FLIP-147)
    assert triggers[-1] == 990.0 and [e.periodic for e in job.events(CheckpointTriggered)][-2:] == [True, False]
    assert all(status == "COMPLETED" for _, status, _ in history(job))
    assert first == ms(run_job(steady_job, "execution.checkpointing.interval=100ms").events(CheckpointTriggered)[0])


def test_one_checkpoint_at_a_time_and_the_next_one_queued():
    job = run_job(two_sources(probe, 30), *FAST_NETWORK, "execution.checkpointing.interval=20ms")
    triggered = {e.checkpoint_id: ms(e) for e in job.events(CheckpointTriggered)}
    completed = {e.checkpoint_id: ms(e) for e in job.events(CheckpointCompleted)}
    assert sorted(triggered.items()) == [(1, 20.0), (2, 90.0), (3, 300.0), (4, 900.0), (5, 900.0), (6, 900.0),
                                         (7, 900.0)]
    # a checkpoint takes longer than the interval: the requests meanwhile queue, one starts on completion
    assert [triggered[n + 1] for n in (1, 2, 3)] == [completed[n] for n in (1, 2, 3)] == [90.0, 300.0, 900.0]
    # 4 reached Source A as it finished; 5, triggered once every consumer had processed all the
    # data (FLIP-147), is the final checkpoint of the others; 6 reached a finished task; 7 was
    # pending when the job ended
    assert history(job) == [(1, "COMPLETED", ""), (2, "COMPLETED", ""), (3, "COMPLETED", ""),
                            (4, "FAILED", "CHECKPOINT_DECLINED_TASK_NOT_READY"), (5, "COMPLETED", ""),
                            (6, "FAILED", "CHECKPOINT_DECLINED_TASK_NOT_READY"),
                            (7, "FAILED", "CHECKPOINT_COORDINATOR_SHUTDOWN")]


def test_the_minimum_pause_holds_the_next_checkpoint_back():
    job = run_job(two_sources(probe, 30), *FAST_NETWORK, "execution.checkpointing.interval=20ms",
                  "execution.checkpointing.min-pause=100ms")
    triggered = [(e.checkpoint_id, ms(e)) for e in job.events(CheckpointTriggered)]
    completed = {e.checkpoint_id: ms(e) for e in job.events(CheckpointCompleted)}
    # the interval is at least the pause (first trigger at 100 ms); after 1 completed at 330 ms the
    # requests due earlier are dropped and the trigger moves to 330 + 100 ms
    assert triggered[:2] == [(1, 100.0), (2, 430.0)] and completed[1] == 330.0


def test_several_checkpoints_may_be_in_progress():
    job = run_job(two_sources(probe, 30), *FAST_NETWORK, "execution.checkpointing.interval=20ms",
                  "execution.checkpointing.max-concurrent-checkpoints=3")
    events = sorted(job.events(CheckpointTriggered, CheckpointCompleted, CheckpointFailed), key=lambda e: e.seq)
    in_progress, most = set(), 0
    for event in events:
        if isinstance(event, CheckpointTriggered):
            in_progress.add(event.checkpoint_id)
        else:
            in_progress.discard(event.checkpoint_id)
        most = max(most, len(in_progress))
    assert most == 3
    triggered = {e.checkpoint_id: ms(e) for e in job.events(CheckpointTriggered)}
    assert [triggered[n] for n in (1, 2, 3, 4)] == [20.0, 40.0, 60.0, 90.0]  # 4 when 1 completed


def test_expired_checkpoints_beyond_the_tolerable_number_fail_the_job_over():
    job = run_job(two_sources(probe, 30), *FAST_NETWORK, "execution.checkpointing.interval=100ms",
                  "execution.checkpointing.timeout=50ms", "execution.checkpointing.tolerable-failed-checkpoints=2",
                  "restart-strategy.type=fixed-delay")
    # every alignment takes longer than 50 ms: each checkpoint expires; the third in a row is one
    # too many, a global failure restarts the job (fixed delay, one attempt), the next three fail it
    assert history(job) == [(n, "FAILED", "CHECKPOINT_EXPIRED") for n in range(1, 7)]
    expired = {e.checkpoint_id: (ms(e), e.consecutive, e.counted) for e in job.events(CheckpointFailed)
               if e.checkpoint_id > 0}
    triggered = {e.checkpoint_id: ms(e) for e in job.events(CheckpointTriggered)}
    assert all(expired[n][0] == triggered[n] + 50 for n in expired)
    assert [expired[n][1:] for n in range(1, 7)] == [(1, True), (2, True), (3, True)] * 2
    first, second = job.events(TaskFailureHandled)
    assert (first.cause, first.subtask, first.vertices_to_restart, ms(first)) == (EXCEEDED, -1, 4, expired[3][0])
    assert second.cause == EXCEEDED and not second.restart and ms(second) == expired[6][0]
    assert job.outcome.status == "FAILED"


class StoresALock(KeyedProcessFunction):
    """Keeps a lock in its state from the 4th record on: that state cannot be serialized."""

    def open(self, ctx: RuntimeContext):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.INT()))
        self.lock = ctx.get_state(ValueStateDescriptor("lock", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        if count == 4:
            self.lock.update(threading.Lock())
        yield count


def test_a_declined_checkpoint_counts_as_a_failure():
    def build(env):
        env.set_parallelism(1)
        env.from_source(DataGeneratorSource(lambda i: i, count=60, records_per_second=100),
                        WatermarkStrategy.no_watermarks(), "Numbers") \
            .key_by(lambda v: 0, Types.INT()).process(StoresALock()).name("Locker").add_sink(lambda value: None)
        env.execute("declines")

    job = run_job(build, "execution.checkpointing.interval=20ms", "execution.checkpointing.min-pause=20ms",
                  "execution.checkpointing.tolerable-failed-checkpoints=1", "restart-strategy.type=none")
    # checkpoint 1 (20 ms) completes; from the 4th record (30 ms) on Locker's state holds the
    # lock: its checkpoints (40, 60 ms) are declined (CHECKPOINT_ASYNC_EXCEPTION counts) and the
    # second in a row fails the job, which may not restart
    assert history(job) == [(1, "COMPLETED", ""), (2, "FAILED", "CHECKPOINT_ASYNC_EXCEPTION"),
                            (3, "FAILED", "CHECKPOINT_ASYNC_EXCEPTION")]
    declined = [e for e in job.events(CheckpointFailed) if e.checkpoint_id == 2][0]
    assert "state of Locker cannot be serialized" in declined.message and "lock" in declined.message
    assert job.outcome.status == "FAILED" and "Exceeded checkpoint tolerable failure threshold" in job.error.args[0]


# -- storage ------------------------------------------------------------------------------------------


def job_directory(root: str) -> str:
    (job_id,) = os.listdir(root)
    return os.path.join(root, job_id)


def test_the_checkpoint_directory_holds_metadata_and_state_files_in_flinks_layout(tmp_path):
    job = run_job(counted, *FAST_NETWORK, "execution.checkpointing.interval=45ms",
                  "execution.checkpointing.dir=ckpts", "execution.checkpointing.num-retained=2",
                  "execution.checkpointing.externalized-checkpoint-retention=RETAIN_ON_CANCELLATION",
                  "execution.checkpointing.data-inline-threshold=0", "rill.duration=200ms")
    assert job.outcome.status == "CANCELED"
    completed = [e.checkpoint_id for e in job.events(CheckpointCompleted)]
    directory = job_directory("ckpts")
    assert os.path.basename(directory) == job.captured.of(JobStatusChanged)[0].job_id
    # the two latest completed checkpoints outlive the cancelled job, with Flink's shared/ and taskowned/
    assert sorted(os.listdir(directory)) == sorted(["shared", "taskowned", *(f"chk-{n}" for n in completed[-2:])])
    latest = os.path.join(directory, f"chk-{completed[-1]}")
    with open(os.path.join(latest, "_metadata"), "rb") as stream:
        data = stream.read()
    assert data.startswith(MAGIC)
    metadata = decode_metadata(data, "_metadata")
    assert (metadata.format_version, metadata.checkpoint_id, metadata.job_name) == (FORMAT_VERSION, completed[-1],
                                                                                    "alignment")
    assert (job.events(CheckpointCompleted)[-1].external_path, metadata.state_size) == (
        os.path.abspath(latest), job.events(CheckpointCompleted)[-1].state_size)
    files = {handle.state.file for op in metadata.operators for handle in op.subtasks if handle.state is not None}
    assert sorted(os.listdir(latest)) == sorted(["_metadata", *files])
    assert {op.name for op in metadata.operators if any(s.state for s in op.subtasks)} == {
        "Source: A", "Source: B", "Count"}


def test_checkpoints_are_deleted_when_the_job_finishes_without_retention(tmp_path):
    job = run_job(counted, *FAST_NETWORK, "execution.checkpointing.interval=45ms", "execution.checkpointing.dir=ckpts")
    assert job.outcome.status == "FINISHED" and job.events(CheckpointCompleted)
    assert os.listdir("ckpts") == []


def test_the_format_is_versioned():
    metadata = CheckpointMetadata(job_id="j", checkpoint_id=7)
    assert decode_metadata(encode_metadata(metadata), "m") == metadata
    # an older writer's metadata lacks the fields added since: they take their defaults
    older = MAGIC + msgspec.msgpack.encode({"format_version": 1, "job_id": "j", "checkpoint_id": 7})
    assert decode_metadata(older, "m") == metadata
    newer = MAGIC + msgspec.msgpack.encode({"format_version": FORMAT_VERSION + 1, "job_id": "j", "checkpoint_id": 7})
    with pytest.raises(CheckpointFormatError, match=f"written in checkpoint format {FORMAT_VERSION + 1}; this rill "
                                                    f"reads formats up to {FORMAT_VERSION}"):
        decode_metadata(newer, "m")
    with pytest.raises(CheckpointFormatError, match="is not a rill checkpoint's metadata"):
        decode_metadata(b"PK\x03\x04", "m")


# -- events, views, determinism -----------------------------------------------------------------------

JOB = """
    from checkpoint_jobs import counted
    from kernel.datastream import StreamExecutionEnvironment

    counted(StreamExecutionEnvironment.get_execution_environment())
"""


@pytest.fixture
def recorded(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    path = tmp_path / "checkpointed.py"
    path.write_text(textwrap.dedent(JOB))
    code, _, err = cli("run", "--clock", "simulated", "--set", "execution.checkpointing.interval=45ms",
                       "--set", "execution.checkpointing.min-pause=45ms", "--set", "execution.buffer-timeout.interval=0ms",
                       "--set", "taskmanager.memory.segment-size=32b", "--set", "slotmanager.requirement-check.delay=0",
                       "--inject", "raise:operator=Count,record=16",
                       str(path))
    assert code == 0, err
    return path


def sql(cli, query: str) -> list[dict]:
    code, out, err = cli("sql", "--format", "json", query)
    assert code == 0, err
    return json.loads(out)


def test_the_checkpoints_view(cli, recorded):
    rows = sql(cli, "SELECT checkpoint_id, status, kind, trigger_s, end_to_end_ms, state_size > 0 AS has_state, "
                    "max_alignment_ms, acknowledged_subtasks, total_subtasks, failure_reason FROM checkpoints "
                    "ORDER BY checkpoint_id")
    # 1, triggered at 45 ms, aligns at Count until 150 ms; Count fails on its 16th record (b5, at
    # 180 ms: SlowB emits each record when it is done with it) before 2 is due (195 ms: 45 ms after 1 completed); the periodic triggers every 45 ms
    # fail before they have an id until the job runs again from checkpoint 1 (1 s later, at
    # 1.18 s); 2 at 1.185 s and 3 complete; 4 reaches Source A as it has finished; 5, triggered
    # once every consumer processed all the data (FLIP-147), is the final checkpoint of the others
    columns = ("checkpoint_id", "status", "kind", "trigger_s", "end_to_end_ms", "has_state", "max_alignment_ms",
               "acknowledged_subtasks", "total_subtasks", "failure_reason")
    assert rows == [dict(zip(columns, row)) for row in [
        (1, "COMPLETED", "checkpoint", 0.045, 105.0, True, 105.0, 4, 4, None),
        (2, "COMPLETED", "checkpoint", 1.185, 25.0, True, 25.0, 4, 4, None),
        (3, "COMPLETED", "checkpoint", 1.255, 75.0, True, 75.0, 4, 4, None),
        (4, "FAILED", "checkpoint", 1.33, 0.0, False, 0.0, 0, 4, "CHECKPOINT_DECLINED_TASK_NOT_READY"),
        (5, "COMPLETED", "checkpoint", 1.375, 0.0, True, 0.0, 3, 3, None)]]


def test_the_checkpoint_subtasks_view(cli, recorded):
    rows = sql(cli, "SELECT vertex_name, subtask, status, state_size, alignment_ms, processed_records, "
                    "persisted_bytes, unaligned FROM checkpoint_subtasks WHERE checkpoint_id = 1 ORDER BY t_s, vertex_name")
    assert [(r["vertex_name"], r["status"], r["alignment_ms"], r["processed_records"], r["unaligned"]) for r in rows] == [
        ("Source: A", "ACKNOWLEDGED", 0.0, 0, False), ("Source: B", "ACKNOWLEDGED", 0.0, 0, False),
        ("Count -> Sink: Print to Std. Out", "ACKNOWLEDGED", 105.0, 4, False), ("SlowB", "ACKNOWLEDGED", 0.0, 0, False)]
    assert all(r["state_size"] > 0 for r in rows if r["vertex_name"] != "SlowB")
    restored = sql(cli, "SELECT vertex_name, checkpoint_id, attempt FROM rill.ev_checkpoint_state_restored "
                        "ORDER BY vertex_name")
    assert [(r["vertex_name"], r["checkpoint_id"], r["attempt"]) for r in restored] == [
        ("Count -> Sink: Print to Std. Out", 1, 1), ("SlowB", 1, 1), ("Source: A", 1, 1), ("Source: B", 1, 1)]


def test_a_simulated_run_with_checkpoints_and_a_fault_re_executes_identically(cli, recorded):
    code, out, err = cli("replay", "last", "--rerun", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["identical"] and report["status"] == "finished"


class SlowOpen(MapFunction):
    """Takes a second to open: its task is INITIALIZING meanwhile."""

    def open(self, runtime_context):
        import time

        time.sleep(1.0)

    def map(self, value):
        return value


def test_a_checkpoint_triggered_while_a_task_initializes_is_declined_not_lost():
    """Flink's Task declines a trigger before it runs (CHECKPOINT_DECLINED_TASK_NOT_READY); a
    trigger the TaskExecutor dropped instead left the checkpoint pending until its timeout, and
    the bounded job waiting for its final checkpoint with it."""
    from kernel.datastream.connectors.number_seq import NumberSequenceSource

    def build(env):
        env.enable_checkpointing(100)
        env.from_source(NumberSequenceSource(1, 10), WatermarkStrategy.no_watermarks(), "Numbers").map(SlowOpen()) \
            .add_sink(lambda v: None)
        env.execute()

    job = run_job(build, "rill.clock=realtime", "rill.duration=20s")
    assert job.outcome.status == "FINISHED"
    declined = [e for e in job.events(CheckpointDeclined) if e.reason == "CHECKPOINT_DECLINED_TASK_NOT_READY"]
    assert declined and all(e.message.endswith("is not running yet") for e in declined)
    assert job.events(CheckpointCompleted)
