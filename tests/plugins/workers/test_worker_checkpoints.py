"""Checkpoints with TaskExecutors as OS processes (``plugins.workers=processes``, realtime): the
coordinator in the cluster's process triggers tasks in the worker processes, barriers travel
in band over TCP between them, acknowledgements bring the state handles back; a SIGKILLed
worker's tasks restore the latest completed checkpoint in a new process, and FileSink's parts
— written and committed in the worker processes — hold every record exactly once; savepoints
are taken in and resumed into worker processes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from kernel.runtime.checkpointing.pointers import resolve
from kernel.runtime.cluster_events import WorkerStarted, WorkerStopped
from kernel.common import Encoder, Types, WatermarkStrategy
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    OutputFileConfig,
    RollingPolicy,
)
from kernel.datastream.functions import KeyedProcessFunction
from kernel.datastream.state import ValueStateDescriptor
from plugins.checkpointing.events import CheckpointAcknowledged, CheckpointStateRestored
from plugins.local.events import TaskDeployed
from tests.runtime import run_job
from tests.savepoint_jobs import COUNT_JOB, counts, savepoint_path, write

PROCESSES = ("rill.clock=realtime", "plugins.workers=processes")


class Count(KeyedProcessFunction):
    """Numbers each record of its key: ``k2 17`` is the 17th record of key k2."""

    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.INT()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{value[0]} {count}"


def counted_to_files(out: Path, count: int = 7_000):
    """A source of 1,000 records/s (two subtasks), keyed counts into a FileSink rolling at every
    checkpoint (every 200 ms); the counting sinks in a slot sharing group of their own: with two
    slots per TaskExecutor the sources run in one process, the sinks in another, and the records
    cross TCP. The kill comes 5 s after the cluster started, while the job runs (~7 s) and after
    checkpoints completed, even when the worker processes were slow to start."""

    def build(env):
        env.set_parallelism(2)
        env.enable_checkpointing(200)
        sink = FileSink.for_row_format(str(out), Encoder.simple_string_encoder()) \
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()) \
            .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy()) \
            .with_output_file_config(OutputFileConfig.builder().with_part_prefix("counts").build()).build()
        env.from_source(DataGeneratorSource(lambda i: (f"k{i % 5}", i), count=count, records_per_second=1_000,
                                            type_info=Types.TUPLE([Types.STRING(), Types.LONG()])),
                        WatermarkStrategy.no_watermarks(), "Numbers") \
            .key_by(lambda r: r[0], Types.STRING()).process(Count(), Types.STRING()).name("Count") \
            .slot_sharing_group("counting").sink_to(sink).name("Files")
        env.execute("counts to files")

    return build


def committed(directory: Path) -> list[str]:
    """Every line of the visible part files, sorted."""
    return sorted(line for part in directory.iterdir() if not part.name.startswith(".")
                  for line in part.read_text().splitlines())


def expected_counts(count: int, keys: int = 5) -> list[str]:
    return sorted(f"k{key} {n}" for key in range(keys) for n in range(1, count // keys + 1))


def test_a_sigkilled_worker_restores_in_a_new_process_and_the_file_sink_commits_exactly_once(tmp_path):
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    fault_free = run_job(counted_to_files(clean), f"execution.checkpointing.dir={tmp_path / 'c1'}")
    assert fault_free.outcome.status == "FINISHED", fault_free.outcome.failure
    assert committed(clean) == expected_counts(7_000)
    job = run_job(counted_to_files(killed), *PROCESSES, "taskmanager.numberOfTaskSlots=2",
                  f"execution.checkpointing.dir={tmp_path / 'c2'}", "restart-strategy.type=fixed-delay",
                  "restart-strategy.fixed-delay.delay=100 ms", faults=["kill:target=taskexecutor-1,at=4000ms"])
    assert job.outcome.status == "FINISHED", job.outcome.failure
    stopped = {e.resource_id: e.reason for e in job.events(WorkerStopped)}
    assert stopped["taskexecutor-1"] == "terminated: killed by SIGKILL"
    pids = {e.resource_id: e.pid for e in job.events(WorkerStarted)}
    assert len(set(pids.values())) == len(pids) >= 3 and os.getpid() not in pids.values()
    deployed = {(e.vertex_name, e.subtask, e.attempt): e.resource_id for e in job.events(TaskDeployed)}
    # the killed process ran tasks; every task runs again, restored, in the new processes
    assert "taskexecutor-1" in {r for (_, _, attempt), r in deployed.items() if attempt == 0}
    again = {(name, subtask): r for (name, subtask, attempt), r in deployed.items() if attempt == 1}
    assert len(again) == 4 and "taskexecutor-1" not in again.values()
    restored = {(e.vertex_name, e.subtask): e.checkpoint_id for e in job.events(CheckpointStateRestored)}
    assert set(restored) == set(again) and len(set(restored.values())) == 1 and min(restored.values()) > 0, (
        job.outcome.notes)
    # the parts committed at checkpoint completions in the worker processes: each count exactly once
    assert committed(killed) == committed(clean)


def test_a_savepoint_round_trip_on_processes(cli, tmp_path):
    """``rill run --duration --stop-with-savepoint`` stops a job running in worker processes: the
    savepoint's location travels with its barriers, so the worker processes write the tasks'
    state files into the savepoint's directory (no state inline here); the stopped source's end
    of data (stopped, not drained) reaches the counting task in the other process over TCP;
    ``-s`` resumes the job in new worker processes from there."""
    counting_apart = COUNT_JOB.replace('.name("Count")', '.name("Count").slot_sharing_group("counting")')
    assert counting_apart != COUNT_JOB
    job = write(tmp_path, "counts.py", counting_apart)
    sets = ("--set", "plugins.workers=processes", "--set", "execution.checkpointing.data-inline-threshold=0")
    code, out, err = cli("run", "--quiet", "--duration", "4s", "--stop-with-savepoint", str(tmp_path / "sp"), *sets,
                         job, "rate=10")
    assert code == 0, err
    first = out.splitlines()
    path = savepoint_path(err)
    assert os.path.dirname(path) == str(tmp_path / "sp") and 0 < len(first) < 60
    metadata = resolve(path).metadata
    files = [subtask.state.file for operator in metadata.operators for subtask in operator.subtasks
             if subtask.state is not None]
    assert files and all(files) and sorted(os.listdir(path)) == sorted(["_metadata", *files])
    # stopped without draining: no operator finished (the counting task heard "stop" over TCP)
    assert not any(subtask.finished for operator in metadata.operators for subtask in operator.subtasks)
    code, out, err = cli("sql", "--format", "json", "SELECT vertex_name, resource_id FROM rill.ev_task_deployed")
    deployed = {row["vertex_name"]: row["resource_id"] for row in json.loads(out)}
    assert code == 0 and len(deployed) == 2 and len(set(deployed.values())) == 2, err
    code, out, err = cli("run", "--quiet", "-s", path, *sets, job, "rate=10")
    assert code == 0, err
    assert first + out.splitlines() == counts(0, 60)


def slow(value):
    time.sleep(0.004)
    return value


def counted_behind_a_slow_map(count: int):
    """A fast source, a slow map in another process (its input channel over TCP full of
    buffers), keyed counts printed (``k2 17``: the 17th record of k2): the counts are exact iff
    keyed state saw every record exactly once."""

    def build(env):
        env.enable_checkpointing(300)
        env.from_source(DataGeneratorSource(lambda i: (f"k{i % 4}", i), count=count, records_per_second=2_000,
                                            type_info=Types.TUPLE([Types.STRING(), Types.LONG()])),
                        WatermarkStrategy.no_watermarks(), "Numbers") \
            .map(slow, Types.TUPLE([Types.STRING(), Types.LONG()])).name("Slow").slot_sharing_group("slow") \
            .key_by(lambda r: r[0], Types.STRING()).process(Count(), Types.STRING()).name("Count").print()
        env.execute("unaligned")

    return build


def test_unaligned_checkpoints_persist_what_is_in_flight_between_processes_and_restore_it():
    """Unaligned barriers overtake the buffers queued for the slow map across TCP; the map's
    task persists what its remote channel holds, and after a failure the restored in-flight
    data is queued again before anything else: every key counted exactly once (printing is at
    least once, so the highest count per key is what tells)."""
    job = run_job(counted_behind_a_slow_map(1_200), *PROCESSES, "execution.checkpointing.unaligned.enabled=true",
                  "rill.network.record-size=1024", "restart-strategy.type=fixed-delay",
                  "restart-strategy.fixed-delay.delay=100 ms", faults=["raise:operator=Count,record=900"])
    assert job.outcome.status == "FINISHED", job.outcome.failure
    deployed = {e.vertex_name: e.resource_id for e in job.events(TaskDeployed) if e.attempt == 0}
    assert deployed["Source: Numbers"] != deployed["Slow"]
    acknowledged = [e for e in job.events(CheckpointAcknowledged) if e.vertex_name == "Slow"]
    assert acknowledged and all(e.unaligned for e in acknowledged)
    [restored] = {e.checkpoint_id for e in job.events(CheckpointStateRestored)}
    in_flight = {e.checkpoint_id: e.persisted_bytes for e in acknowledged}
    assert in_flight[restored] > 0
    highest: dict[str, int] = {}
    for line in job.lines:
        key, number = line.split()
        highest[key] = max(highest.get(key, 0), int(number))
    assert highest == {"k0": 300, "k1": 300, "k2": 300, "k3": 300}
