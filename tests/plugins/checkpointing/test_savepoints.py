"""Savepoints: stop-with-savepoint and resuming from it (``rill run --stop-with-savepoint``,
``-s``), ``JobClient.stop_with_savepoint`` / ``trigger_savepoint``, state matched to operators
by their IDs (``uid()``), state the new job lacks refused or dropped, max parallelism, and
resuming from a retained checkpoint. Simulated clock throughout: every run is exact."""

from __future__ import annotations

import csv
import io
import math
import os
import re
import threading

import pytest

from kernel.runtime.checkpointing.failures import CheckpointException
from kernel.runtime.checkpointing.pointers import resolve
from kernel.common import Types, WatermarkStrategy
from kernel.common.time import Time
from kernel.common.watermark_strategy import TimestampAssigner
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.window import TumblingEventTimeWindows
from kernel.errors import JobNotRunning
from plugins.graph.hashing import user_hash
from tests.savepoint_jobs import COUNT_JOB, counts, savepoint_path, write
from tests.runtime import run_job

SIM = ("--clock", "simulated", "--quiet")


def sql(cli, query: str) -> list[dict[str, str]]:
    code, out, err = cli("sql", "--format", "csv", query)
    assert code == 0, err
    return list(csv.DictReader(io.StringIO(out)))


def run(cli, job: str, *args: str, job_args: tuple[str, ...] = ()) -> tuple[int, list[str], str]:
    code, out, err = cli("run", *SIM, *args, job, *job_args)
    return code, out.splitlines(), err


# -- stop with a savepoint, resume from it ------------------------------------------------------


def test_a_job_stopped_with_a_savepoint_resumes_where_it_stopped(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    code, first, err = run(cli, job, "--duration", "3s", "--stop-with-savepoint", str(tmp_path / "sp"))
    assert code == 0, err
    path = savepoint_path(err)
    # at 3 s of 10 records/s the source had read 30 records; they are in the savepoint
    assert first == counts(0, 30)
    metadata = resolve(path).metadata
    assert (metadata.kind, metadata.checkpoint_id, metadata.job_name) == ("savepoint", 1, "counts")
    assert re.fullmatch(rf"{tmp_path}/sp/savepoint-{metadata.job_id[:6]}-[0-9a-f]{{12}}", path)
    assert sorted(os.listdir(path)) == ["_metadata"]  # small state lives inline in _metadata
    assert sql(cli, "SELECT checkpoint_id, status, kind, periodic FROM checkpoints") == [
        {"checkpoint_id": "1", "status": "COMPLETED", "kind": "savepoint", "periodic": "False"}]
    assert sql(cli, "SELECT status FROM rill.runs") == [{"status": "finished"}]

    code, second, err = run(cli, job, "-s", path)
    assert code == 0, err
    assert first + second == counts(0, 60)
    restored = sql(cli, "SELECT vertex_name, checkpoint_id, checkpoint_kind, external_path, finished "
                        "FROM rill.ev_checkpoint_state_restored r JOIN rill.runs USING (run_id) "
                        "WHERE started_at = (SELECT max(started_at) FROM rill.runs) ORDER BY vertex_name")
    assert restored == [
        {"vertex_name": "Count -> Sink: Print to Std. Out", "checkpoint_id": "1", "checkpoint_kind": "savepoint",
         "external_path": path, "finished": "False"},
        {"vertex_name": "Source: Numbers", "checkpoint_id": "1", "checkpoint_kind": "savepoint",
         "external_path": path, "finished": "False"}]
    assert os.path.isfile(os.path.join(path, "_metadata"))  # the savepoint is the user's: never deleted


def test_a_restored_run_re_executes_identically(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    code, _, err = run(cli, job, "--duration", "2s", "--stop-with-savepoint", str(tmp_path / "sp"),
                       job_args=("checkpoints",))
    assert code == 0, err
    code, _, err = run(cli, job, "-s", savepoint_path(err), job_args=("checkpoints",))
    assert code == 0, err
    code, out, err = cli("replay", "last", "--rerun")
    assert code == 0 and out.startswith("re-execution ") and "identical sequence" in out, out + err


def test_a_realtime_round_trip(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    code, out, err = cli("run", "--quiet", "--duration", "300ms", "--stop-with-savepoint", str(tmp_path / "sp"), job,
                         "rate=50")
    assert code == 0, err
    first = out.splitlines()
    code, out, err = cli("run", "--quiet", "-s", savepoint_path(err), job, "rate=50")
    assert code == 0, err
    assert first + out.splitlines() == counts(0, 60)


def test_the_metadata_file_names_a_savepoint_too(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    code, first, err = run(cli, job, "--duration", "1500ms", "--stop-with-savepoint", str(tmp_path / "sp"))
    assert code == 0, err
    code, second, err = run(cli, job, "--from-savepoint", os.path.join(savepoint_path(err), "_metadata"))
    assert code == 0, err
    assert first + second == counts(0, 60) and len(first) == 15


def test_stop_with_savepoint_in_a_job_taking_checkpoints(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    checkpoints = str(tmp_path / "checkpoints")
    code, first, err = run(cli, job, "--duration", "3500ms", "--stop-with-savepoint", str(tmp_path / "sp"),
                           "--set", f"execution.checkpointing.dir={checkpoints}", job_args=("checkpoints",))
    assert code == 0, err
    path = savepoint_path(err)
    rows = sql(cli, "SELECT checkpoint_id, status, kind FROM checkpoints ORDER BY checkpoint_id")
    # periodic checkpoints 1-3, then the savepoint: nothing pending is left over, no final checkpoint follows it
    assert rows == [{"checkpoint_id": str(n), "status": "COMPLETED", "kind": "checkpoint"} for n in (1, 2, 3)] + [
        {"checkpoint_id": "4", "status": "COMPLETED", "kind": "savepoint"}]
    assert resolve(path).metadata.checkpoint_id == 4
    job_dir = os.path.join(checkpoints, resolve(path).metadata.job_id)
    assert not os.path.exists(job_dir)  # a FINISHED job keeps no checkpoints (NO_EXTERNALIZED_CHECKPOINTS)
    code, second, err = run(cli, job, "-s", path, job_args=("checkpoints",))
    assert code == 0, err
    assert first + second == counts(0, 60)
    # checkpoint ids go on after the savepoint's
    assert sql(cli, "SELECT min(checkpoint_id) AS first FROM checkpoints c JOIN rill.runs USING (run_id) "
                    "WHERE started_at = (SELECT max(started_at) FROM rill.runs)") == [{"first": "5"}]


WINDOW_JOB = """
import sys
from kernel.common import Duration, WatermarkStrategy
from kernel.common.time import Time
from kernel.common.watermark_strategy import TimestampAssigner
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.window import TumblingEventTimeWindows
from kernel.datastream.window import TumblingEventTimeWindows


class Seconds(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1] * 100


env = StreamExecutionEnvironment.get_execution_environment()
source = DataGeneratorSource(lambda i: ("k%d" % (i % 3), i), 100, records_per_second=20)
strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(200)).with_timestamp_assigner(Seconds())
env.from_source(source, strategy, "Numbers").uid("numbers").key_by(lambda v: v[0]) \\
    .window(TumblingEventTimeWindows.of(Time.seconds(1))).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("sums").print()
env.execute("window sums")
"""


def window_sums(end: int) -> list[list[str]]:
    """The windows ``WINDOW_JOB`` fires, a second at a time, for records 0 to end - 1 (event time
    i * 100 ms): each second's keys (in the order of the timer heap, so sorted here)."""
    seconds = []
    for start in range(0, end, 10):
        members = {key: [i for i in range(start, min(start + 10, end)) if i % 3 == key] for key in range(3)}
        seconds.append(sorted(f"('k{key}', {sum(found)})" for key, found in members.items() if found))
    return seconds


def by_second(lines: list[str], seconds: list[list[str]]) -> list[list[str]]:
    """``lines`` cut into the seconds' sizes, each sorted."""
    cut, at = [], 0
    for second in seconds:
        cut.append(sorted(lines[at:at + len(second)]))
        at += len(second)
    return cut if at == len(lines) else cut + [lines[at:]]


def test_window_contents_and_timers_carry_over_a_savepoint(cli, tmp_path):
    job = write(tmp_path, "windows.py", WINDOW_JOB)
    code, first, err = run(cli, job, "--duration", "2300ms", "--stop-with-savepoint", str(tmp_path / "sp"))
    assert code == 0, err
    # windows [0, 1 s) to [3 s, 4 s) fired; records up to 45 (event time 4.5 s) were read, the
    # window [4 s, 5 s) and its timers are in the savepoint (no drain: no final watermark)
    assert by_second(first, window_sums(100)[:4]) == window_sums(100)[:4]
    code, second, err = run(cli, job, "-s", savepoint_path(err))
    assert code == 0, err
    assert by_second(first + second, window_sums(100)) == window_sums(100)


class EventSeconds(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1] * 100


def test_a_draining_stop_fires_every_window_and_finishes_the_operators(tmp_path):
    seen = {}
    arrived = threading.Event()

    def build(env):
        source = DataGeneratorSource(lambda i: ("k%d" % (i % 3), i), None, records_per_second=20)
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventSeconds())
        sums = env.from_source(source, strategy, "Numbers").key_by(lambda v: v[0]) \
            .window(TumblingEventTimeWindows.of(Time.seconds(1))).reduce(lambda a, b: (a[0], a[1] + b[1]))
        sums.add_sink(lambda value: arrived.set())
        sums.print()
        client = env.execute_async("drained")
        assert arrived.wait(60)  # a guard against hanging, not a timing assertion
        seen["path"] = client.stop_with_savepoint(True, str(tmp_path / "sp")).result()

    job = run_job(build)
    assert job.outcome.status == "FINISHED"
    # drained: the final watermark fired every window (the last one holding the last records
    # read), the operators finished, so every subtask is finished in the savepoint (a job resumed
    # from it reads nothing more) and no window contents or timers are left in it
    total = sum(int(line.rstrip(")").rpartition(", ")[2]) for line in job.lines)
    read = round((1 + math.sqrt(1 + 8 * total)) / 2)  # records 0 to read - 1 sum up to total
    assert read > 10 and by_second(job.lines, window_sums(read)) == window_sums(read)
    metadata = resolve(seen["path"]).metadata
    assert all(subtask.finished for operator in metadata.operators for subtask in operator.subtasks)
    assert not [handle for operator in metadata.operators for subtask in operator.subtasks
                if (handle := subtask.state) is not None and handle.key_groups]


def test_trigger_savepoint_keeps_the_job_running(cli, tmp_path):
    seen = {}
    arrived = threading.Event()

    def build(env):
        source = DataGeneratorSource(lambda i: i, None, records_per_second=100, type_info=Types.LONG())
        numbers = env.from_source(source, WatermarkStrategy.no_watermarks(), "Numbers")
        numbers.add_sink(lambda value: arrived.set() if value == 50 else None)
        client = env.execute_async("running")
        assert arrived.wait(60)
        seen["path"] = client.trigger_savepoint(str(tmp_path / "sp")).result()
        seen["status"] = client.get_job_status().result()
        client.cancel().result()

    job = run_job(build)
    assert str(seen["status"]) == "JobStatus.RUNNING" and job.outcome.status == "CANCELED"
    path = seen["path"]
    assert re.fullmatch(rf"{tmp_path}/sp/savepoint-[0-9a-f]{{6}}-[0-9a-f]{{12}}", path)
    metadata = resolve(path).metadata
    assert metadata.kind == "savepoint" and not any(s.finished for o in metadata.operators for s in o.subtasks)
    rows = sql(cli, "SELECT checkpoint_id, status, kind FROM checkpoints")
    assert rows == [{"checkpoint_id": "1", "status": "COMPLETED", "kind": "savepoint"}]
    assert os.path.isfile(os.path.join(path, "_metadata"))  # a cancelled job leaves its savepoints


def test_savepoints_that_cannot_be_taken_fail_with_the_reason(tmp_path):
    seen = {}
    arrived = threading.Event()

    def build(env):
        source = DataGeneratorSource(lambda i: i, None, records_per_second=100, type_info=Types.LONG())
        env.from_source(source, WatermarkStrategy.no_watermarks(), "Numbers") \
            .add_sink(lambda value: arrived.set())
        client = env.execute_async("running")
        assert arrived.wait(60)
        with pytest.raises(CheckpointException) as refused:
            client.trigger_savepoint().result()
        seen["refused"] = str(refused.value)
        client.cancel().result()
        with pytest.raises(JobNotRunning) as ended:
            client.stop_with_savepoint(False, str(tmp_path / "sp")).result()
        seen["ended"] = str(ended.value)

    run_job(build)
    assert seen["refused"] == ("No savepoint directory configured: give one, or set "
                               "execution.checkpointing.savepoint-dir")
    assert re.fullmatch(r"Job [0-9a-f]{32} is not running: it is CANCELED", seen["ended"])


def test_the_default_savepoint_directory(tmp_path):
    seen = {}
    arrived = threading.Event()

    def build(env):
        source = DataGeneratorSource(lambda i: i, None, records_per_second=100, type_info=Types.LONG())
        env.from_source(source, WatermarkStrategy.no_watermarks(), "Numbers").add_sink(lambda value: arrived.set())
        client = env.execute_async("running")
        assert arrived.wait(60)
        seen["path"] = client.stop_with_savepoint(False).result()

    job = run_job(build, f"execution.checkpointing.savepoint-dir={tmp_path / 'default'}")
    assert job.outcome.status == "FINISHED"
    assert os.path.dirname(seen["path"]) == str(tmp_path / "default")


# -- matching state to operators ----------------------------------------------------------------


def test_state_of_an_operator_the_job_lacks_is_refused_unless_allowed(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    code, first, err = run(cli, job, "--duration", "3s", "--stop-with-savepoint", str(tmp_path / "sp"),
                           job_args=("uid",))
    assert code == 0, err
    path = savepoint_path(err)
    count_id = user_hash("count").hex()  # uid("count"): the operator ID is the hash of the uid, as Flink's
    assert count_id in {operator.operator_id for operator in resolve(path).metadata.operators}
    code, out, err = cli("run", *SIM, "-s", path, job, "other-uid")
    assert (code, out) == (2, "")
    assert err == (f"rill: error: Failed to rollback to checkpoint/savepoint {path}. Cannot map checkpoint/savepoint "
                   f"state for operator {count_id} to the new program, because the operator is not available in the "
                   "new program. If you want to allow to skip this, you can set the --allow-non-restored-state option "
                   "on the CLI (execution.state-recovery.ignore-unclaimed-state).\n")
    code, second, err = run(cli, job, "-s", path, "--allow-non-restored-state", job_args=("other-uid",))
    assert code == 0, err
    # the source's position is restored, the counts start over
    assert second == counts(30, 60, fresh=True)
    code, second, err = run(cli, job, "-s", path, "--set", "execution.savepoint.ignore-unclaimed-state=true",
                            job_args=("other-uid",))
    assert code == 0 and second == counts(30, 60, fresh=True), err


def test_uid_keeps_state_when_the_topology_changes_and_generated_ids_do_not(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    code, first, err = run(cli, job, "--duration", "3s", "--stop-with-savepoint", str(tmp_path / "with-uid"),
                           job_args=("uid",))
    assert code == 0, err
    code, second, err = run(cli, job, "-s", savepoint_path(err), job_args=("uid", "extra-map"))
    assert code == 0, err
    assert first + second == counts(0, 60)

    code, first, err = run(cli, job, "--duration", "3s", "--stop-with-savepoint", str(tmp_path / "generated"))
    assert code == 0, err
    path = savepoint_path(err)
    generated = {operator.name: operator.operator_id for operator in resolve(path).metadata.operators}
    code, out, err = cli("run", *SIM, "-s", path, job, "extra-map")
    assert code == 2 and f"Cannot map checkpoint/savepoint state for operator {generated['Count']} " in err, err


def test_a_configured_max_parallelism_must_match_and_a_derived_one_is_taken(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    code, first, err = run(cli, job, "--duration", "3s", "--stop-with-savepoint", str(tmp_path / "sp"),
                           job_args=("max-parallelism=256",))
    assert code == 0, err
    path = savepoint_path(err)
    operator = resolve(path).metadata.operators[0]  # checked in the metadata's order, as Flink does
    code, out, err = cli("run", *SIM, "-s", path, job, "max-parallelism=64")
    assert (code, out) == (2, "")
    assert err == (f"rill: error: Failed to rollback to checkpoint/savepoint {path}. Max parallelism mismatch between "
                   f"checkpoint/savepoint state and new program. Cannot map operator {operator.operator_id} with max "
                   "parallelism 256 to new program with max parallelism 64. This indicates that the program has been "
                   "changed in a non-compatible way after the checkpoint/savepoint.\n")
    # not configured: the default would be 128; the job takes the savepoint's 256 so key groups keep their meaning
    code, second, err = run(cli, job, "-s", path, "--duration", "1s", "--stop-with-savepoint", str(tmp_path / "next"))
    assert code == 0, err
    assert first + second == counts(0, 40)
    assert {o.max_parallelism for o in resolve(savepoint_path(err)).metadata.operators} == {256}


# -- a retained checkpoint ----------------------------------------------------------------------


def test_a_retained_checkpoint_restores_like_a_savepoint(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    checkpoints = tmp_path / "checkpoints"
    retain = ("--set", f"execution.checkpointing.dir={checkpoints}",
              "--set", "execution.checkpointing.externalized-checkpoint-retention=RETAIN_ON_CANCELLATION")
    code, first, err = run(cli, job, "--duration", "3500ms", *retain, job_args=("checkpoints",))
    assert code == 0, err
    (job_id,) = os.listdir(checkpoints)
    retained = checkpoints / job_id / "chk-3"
    assert sorted(os.listdir(checkpoints / job_id)) == ["chk-3", "shared", "taskowned"]
    assert first == counts(0, 34)  # cancelled at 3.5 s, before record 34 was printed
    code, second, err = run(cli, job, "-s", str(retained / "_metadata"), *retain, job_args=("checkpoints",))
    assert code == 0, err
    # checkpoint 3 was triggered at 2.925 s; the source started at 0.1 s and has a record due every
    # 100 ms: records 0-28 were before the barrier, the resumed job goes on from record 29
    assert second == counts(29, 60)
    # the restored checkpoint is the user's (NO_CLAIM): run 2 numbered its own after it and never deleted it
    assert sorted(os.listdir(checkpoints / job_id)) == ["chk-3"]


def test_a_failover_before_the_first_checkpoint_goes_back_to_the_savepoint(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    code, first, err = run(cli, job, "--duration", "3s", "--stop-with-savepoint", str(tmp_path / "sp"))
    assert code == 0, err
    path = savepoint_path(err)
    code, second, err = run(cli, job, "-s", path, "--inject", "raise:operator=Count,record=5",
                            "--set", "restart-strategy.type=fixed-delay", job_args=("checkpoints",))
    assert code == 0, err
    # records 30-33 were printed, the 5th failed; the restart restored the savepoint again
    assert second == counts(30, 34) + counts(30, 60)
    restores = sql(cli, "SELECT attempt, checkpoint_id, checkpoint_kind FROM rill.ev_checkpoint_state_restored "
                        "WHERE vertex_name = 'Source: Numbers' ORDER BY seq")
    assert restores == [{"attempt": "0", "checkpoint_id": "1", "checkpoint_kind": "savepoint"},
                        {"attempt": "1", "checkpoint_id": "1", "checkpoint_kind": "savepoint"}]
    assert os.path.isfile(os.path.join(path, "_metadata"))


# -- bad input ----------------------------------------------------------------------------------


def test_restoring_from_what_is_not_a_snapshot_is_one_clear_error(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    missing = tmp_path / "nowhere"
    assert cli("run", *SIM, "-s", str(missing), job) == (
        2, "", f"rill: error: cannot restore from {missing}: {missing} does not exist\n")
    assert cli("run", *SIM, "-s", "123", job) == (2, "", "rill: error: cannot restore from 123: 123 does not exist\n")
    assert cli("run", *SIM, "-s", job, job) == (
        2, "", f"rill: error: cannot restore from {job}: {job} is neither a checkpoint or savepoint directory nor its "
               "_metadata file\n")
    assert cli("run", *SIM, "-s", str(tmp_path), job) == (
        2, "", f"rill: error: cannot restore from {tmp_path}: {tmp_path} has no _metadata: it is not a completed "
               "checkpoint or savepoint\n")
    assert cli("run", *SIM, "--stop-with-savepoint", str(tmp_path / "sp"), job) == (
        2, "", "rill: error: --stop-with-savepoint DIR stops the job when --duration has passed: give --duration\n")


def test_a_batch_job_restores_no_state(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    code, _, err = run(cli, job, "--duration", "2s", "--stop-with-savepoint", str(tmp_path / "sp"))
    assert code == 0, err
    assert cli("run", *SIM, "-s", savepoint_path(err), "--set", "execution.runtime-mode=BATCH", job) == (
        2, "", "rill: error: execution.state-recovery.path: a job in BATCH execution mode restores no state (run it "
               "in STREAMING mode)\n")
