"""TaskExecutors as OS processes (``plugins.workers=processes``): real processes on 127.0.0.1,
started by the runs and stopped when they end. The same output as embedded TaskExecutors,
credit-based flow control between processes, real SIGKILLs and recovery, idle workers
released, one event log written by the cluster's process, print() of user code on stdout."""

from __future__ import annotations

import atexit
import gc
import json
import os
import re
import runpy
import socket
import sys
import time
from pathlib import Path

import pytest

from kernel.runtime.cluster_events import (
    FaultInjected,
    HeartbeatTimedOut,
    SinkOutputPrinted,
    TaskMetricsSampled,
    WatermarkAdvanced,
    WorkerRegistered,
    WorkerStarted,
    WorkerStopped,
)
from kernel.common import Duration, Encoder, Time, Types, WatermarkStrategy
from kernel.datastream import KeyedProcessFunction
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.connectors.file_system import BucketAssigner, FileSink
from kernel.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows
from kernel.events import MessageDropped
from plugins.local.events import TaskDeployed
from tests.runtime import run_job

ROOT = Path(__file__).resolve().parents[3]
PROCESSES = ("rill.clock=realtime", "plugins.workers=processes")
EMBEDDED = ("rill.clock=realtime",)
MIN, MAX = -(1 << 63), (1 << 63) - 1


def same_output(build, *sets: str):
    """Run ``build`` with embedded and with process TaskExecutors: both outputs, sorted."""
    embedded = run_job(build, *EMBEDDED, *sets)
    processes = run_job(build, *PROCESSES, *sets)
    assert embedded.outcome.status == processes.outcome.status == "FINISHED", processes.outcome.failure
    return sorted(embedded.lines), sorted(processes.lines), processes


def pids_of(job) -> dict[str, int]:
    return {e.resource_id: e.pid for e in job.events(WorkerStarted)}


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


# -- the same output as embedded ------------------------------------------------------------------


@pytest.mark.parametrize("example", ["wordcount.py", "window_wordcount.py"])
def test_every_example_prints_the_same_on_processes(example):
    def build(env):
        runpy.run_path(str(ROOT / "examples" / example))["main"]()

    embedded, processes, job = same_output(build, "taskmanager.numberOfTaskSlots=2")
    assert processes == embedded and len(processes) > 30
    pids = pids_of(job)
    assert len(pids) == 4 and os.getpid() not in pids.values() and len(set(pids.values())) == 4


def keyed_windows(env):
    """Two sources with disorder within the bound, keyed 2 s tumbling and sliding windows."""
    env.set_parallelism(2)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(300)) \
        .with_timestamp_assigner(lambda value, ts: value[1])
    records = Types.TUPLE([Types.STRING(), Types.LONG()])
    first = env.from_source(DataGeneratorSource(lambda i: (f"k{i % 5}", i * 10 - (i % 3) * 100), count=600,
                                                records_per_second=2_000, type_info=records), strategy, "First")
    second = env.from_source(DataGeneratorSource(lambda i: (f"k{i % 7}", i * 20), count=300,
                                                 records_per_second=1_000, type_info=records), strategy, "Second")
    both = first.union(second).key_by(lambda v: v[0], Types.STRING())
    both.window(TumblingEventTimeWindows.of(Time.seconds(2))) \
        .reduce(lambda a, b: (a[0], max(a[1], b[1])), output_type=records).print("tumbling")
    both.window(SlidingEventTimeWindows.of(Time.seconds(2), Time.seconds(1))) \
        .reduce(lambda a, b: (a[0], a[1] + b[1]), output_type=records).print("sliding")
    env.execute("keyed windows")


class Buckets(KeyedProcessFunction):
    """Per key and second of event time: the sum of the values, emitted by an event-time timer
    at the end of the second."""

    def open(self, runtime_context):
        from kernel.datastream.state import MapStateDescriptor

        self.sums = runtime_context.get_map_state(MapStateDescriptor("sums", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx):
        end = (ctx.timestamp() // 1_000 + 1) * 1_000
        if not self.sums.contains(end):
            ctx.timer_service().register_event_time_timer(end)
        self.sums.put(end, (self.sums.get(end) or 0) + value[1])

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), timestamp, self.sums.get(timestamp)
        self.sums.remove(timestamp)


def event_time_timers(env):
    env.set_parallelism(2)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda value, ts: value[1] * 7)
    env.from_source(DataGeneratorSource(lambda i: (f"k{i % 4}", i), count=800, records_per_second=4_000,
                                        type_info=Types.TUPLE([Types.STRING(), Types.LONG()])), strategy, "Values") \
        .key_by(lambda v: v[0], Types.STRING()).process(Buckets()).print()
    env.execute("timers")


@pytest.mark.parametrize("build", [keyed_windows, event_time_timers])
def test_event_time_jobs_print_the_same_on_processes(build):
    embedded, processes, job = same_output(build)
    assert processes == embedded and len(processes) > 20
    # watermarks crossed between the processes in band: every task reading the network saw
    # its input watermark advance to the end of input
    inputs: dict[tuple[str, int], int] = {}
    for e in job.events(WatermarkAdvanced):
        if e.direction == "input":
            inputs[(e.vertex_name, e.subtask)] = max(inputs.get((e.vertex_name, e.subtask), MIN), e.watermark)
    assert len(inputs) >= 2 and set(inputs.values()) == {MAX}


# -- one event log, print on stdout ----------------------------------------------------------------


def print_reaches_stdout_and_worker_started_has_its_process(cli, tmp_path: Path, workers: str, executor_id: str) -> int:
    """Run a job whose map prints in the worker on ``plugins.workers=workers``: what it prints
    reaches ``rill run``'s stdout, ``worker_started`` records the worker's pid, host and
    ``executor_id``, ``rill metrics`` counts the records. Returns the worker's pid."""
    job_file = tmp_path / "hello.py"
    job_file.write_text(
        "import os\n"
        "from kernel.common import Types\n"
        "from kernel.datastream import StreamExecutionEnvironment\n"
        "def shout(value):\n"
        "    print(f'user print {value} in', os.getpid())\n"
        "    return value * 2\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.from_collection([1, 2, 3], Types.INT()).map(shout, Types.INT()).rebalance().print()\n"
        "env.execute('hello')\n")
    code, out, err = cli("run", "--set", f"plugins.workers={workers}", str(job_file))
    assert code == 0, err
    lines = out.splitlines()
    printed = [line for line in lines if line.startswith("user print")]
    assert [line.split(" in ")[0] for line in printed] == ["user print 1", "user print 2", "user print 3"]
    worker_pid = int(printed[0].split(" in ")[1])
    assert worker_pid != os.getpid() and [line for line in lines if not line.startswith("user")] == ["2", "4", "6"]
    code, out, err = cli("sql", "--format", "json", "SELECT resource_id, pid, host, executor_id FROM rill.ev_worker_started")
    assert code == 0, err
    assert json.loads(out) == [{"resource_id": "taskexecutor-1", "pid": worker_pid, "host": socket.gethostname(),
                                "executor_id": executor_id}]
    code, out, err = cli("metrics", "last", "--json")
    assert code == 0, err
    assert [(v["records_in"], v["records_out"]) for v in json.loads(out)["vertices"]] == [(0, 3), (3, 0)]
    return worker_pid


def test_workers_events_reach_the_log_with_their_process_and_print_reaches_stdout(cli, tmp_path):
    worker_pid = print_reaches_stdout_and_worker_started_has_its_process(cli, tmp_path, "processes", "")
    code, out, err = cli("sql", "--format", "json", "SELECT kind, count(*) AS n FROM rill.events "
                                                    "WHERE kind IN ('sink_output_printed', 'task_metrics_sampled') "
                                                    "GROUP BY kind ORDER BY kind")
    rows = json.loads(out)
    assert [r["kind"] for r in rows] == ["sink_output_printed", "task_metrics_sampled"] and rows[0]["n"] >= 1
    code, out, err = cli("replay", "last", "--events", "--kind", "worker_started")
    assert code == 0 and "taskexecutor-1" in out and str(worker_pid) in out, err
    code, out, err = cli("report", "last", "-o", str(tmp_path / "report.html"))
    assert code == 0 and "taskexecutor-1" in (tmp_path / "report.html").read_text(), err


def test_a_simulated_run_refuses_process_workers_in_one_line(cli, tmp_path):
    job_file = tmp_path / "job.py"
    job_file.write_text("from kernel.datastream import StreamExecutionEnvironment\n"
                        "env = StreamExecutionEnvironment.get_execution_environment()\n"
                        "env.from_collection([1]).print()\nenv.execute()\n")
    code, out, err = cli("run", "--clock", "simulated", "--set", "plugins.workers=processes", str(job_file))
    assert code == 2 and out == ""
    assert err.strip().splitlines()[-1] == (
        "rill: error: plugins.workers=processes needs rill.clock=realtime: TaskExecutor processes run on the wall "
        "clock (a simulated run has one thread; use plugins.workers=embedded)")


# -- flow control between processes ----------------------------------------------------------------


def test_a_slow_receiver_in_another_process_back_pressures_the_sender():
    def slow(value):
        time.sleep(0.002)
        return value

    def build(env):
        env.from_source(DataGeneratorSource(lambda i: i, count=3_000, type_info=Types.LONG()),
                        WatermarkStrategy.no_watermarks(), "Fast") \
            .rebalance().map(slow, Types.LONG()).name("Slow").slot_sharing_group("receiver") \
            .add_sink(lambda v: None).name("Sink")
        env.execute("flow control")

    job = run_job(build, *PROCESSES, "taskmanager.network.memory.max-buffers-per-channel=2",
                  "rill.network.record-size=1024")
    assert job.outcome.status == "FINISHED"
    deployed = {e.vertex_name: e.resource_id for e in job.events(TaskDeployed)}
    assert deployed["Source: Fast"] != deployed["Slow -> Sink: Sink"]
    source = [e for e in job.events(TaskMetricsSampled) if e.vertex_name == "Source: Fast"]
    slow_task = [e for e in job.events(TaskMetricsSampled) if e.vertex_name.startswith("Slow")]
    # 32 records a buffer (32 kb / 1 kb), 2 exclusive + 8 floating credits and 2 buffers queued:
    # the source writes all 3,000 records in far less than the ~6 s the receiver needs, so it
    # waits for credit most of the time
    assert sum(e.back_pressured_ms for e in source) > 0.5 * sum(e.interval_ms for e in source)
    assert sum(e.records_in for e in slow_task) == 3_000


# -- real faults ------------------------------------------------------------------------------------


def counting(count: int):
    def build(env):
        env.set_parallelism(2)
        env.enable_checkpointing(200)
        env.from_source(DataGeneratorSource(lambda i: (f"k{i % 4}", 1), count=count, records_per_second=1_000,
                                            type_info=Types.TUPLE([Types.STRING(), Types.INT()])),
                        WatermarkStrategy.no_watermarks(), "Numbers") \
            .key_by(lambda r: r[0], Types.STRING()).reduce(lambda a, b: (a[0], a[1] + b[1])).print()
        env.execute("counts")

    return build


def last_counts(lines: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in lines:
        key, value = line.split("> ", 1)[-1].strip("()").split(",")
        counts[key] = max(counts.get(key, 0), int(value))
    return counts


def test_a_sigkilled_worker_is_replaced_and_checkpoints_keep_keyed_state_exactly_once(tmp_path):
    job = run_job(counting(4_000), *PROCESSES, f"execution.checkpointing.dir={tmp_path / 'checkpoints'}",
                  faults=["kill:target=taskexecutor-1,at=2500ms"])
    assert job.outcome.status == "FINISHED", job.outcome.failure
    pids = pids_of(job)
    assert list(pids) == ["taskexecutor-1", "taskexecutor-2", "taskexecutor-3"]
    assert gone(pids["taskexecutor-1"])
    stopped = {e.resource_id: e.reason for e in job.events(WorkerStopped)}
    assert stopped["taskexecutor-1"] == "terminated: killed by SIGKILL"
    fault = job.events(FaultInjected)[0]
    assert fault.fault_kind == "kill" and fault.target == "taskexecutor-1"
    # restored from the latest checkpoint: every key counted exactly once
    assert last_counts(job.lines) == {"k0": 1_000, "k1": 1_000, "k2": 1_000, "k3": 1_000}
    # the first failure is the process's end, seen by the ResourceManager or, as often on a busy
    # machine, by a consumer whose TCP connection to the dead process broke (Flink's words for both)
    first = next(note for note in job.outcome.notes if note.startswith("failures: ")).split("; first: ", 1)[1]
    assert first == "TaskManager with id taskexecutor-1 terminated: killed by SIGKILL" or re.fullmatch(
        r"Keyed Reduce -> Sink: Print to Std\. Out \([12]/2\) failed in operator 'Keyed Reduce': RemoteTransportException: "
        r"(Lost connection to|Connection unexpectedly closed by) remote task manager '127\.0\.0\.1:\d+'\. "
        r"This might indicate that the remote task manager was lost\.", first), first


def test_a_sigkill_without_checkpoints_restarts_and_sinks_print_only_the_final_attempts():
    def build(env):
        env.set_parallelism(2)
        env.from_source(DataGeneratorSource(lambda i: (f"k{i % 4}", 1), count=2_000, records_per_second=1_000,
                                            type_info=Types.TUPLE([Types.STRING(), Types.INT()])),
                        WatermarkStrategy.no_watermarks(), "Numbers") \
            .key_by(lambda r: r[0], Types.STRING()).reduce(lambda a, b: (a[0], a[1] + b[1])).print()
        env.execute("staged")

    embedded = run_job(build, *EMBEDDED, "restart-strategy.type=fixed-delay")
    killed = run_job(build, *PROCESSES, "restart-strategy.type=fixed-delay", faults=["kill:target=taskexecutor-2,at=1200ms"])
    assert killed.outcome.status == "FINISHED"
    assert [e.reason for e in killed.events(WorkerStopped) if e.resource_id == "taskexecutor-2"] == [
        "terminated: killed by SIGKILL"]
    assert sorted(killed.lines) == sorted(embedded.lines) and len(killed.lines) == 2_000


def test_staged_output_is_committed_in_subtask_order_across_worker_processes():
    """A job that may restart without checkpoints stages its sinks' output until it finishes;
    each subtask runs in a TaskExecutor process of its own, and the JobMaster has them commit in
    job-vertex and subtask order, as the embedded TaskExecutors' output is committed."""
    def build(env):
        env.set_parallelism(3)
        env.from_collection(list(range(12)), Types.INT()).rebalance().map(lambda v: v * 10, Types.INT()).print()
        env.execute("staged in order")

    embedded = run_job(build, *EMBEDDED, "restart-strategy.type=fixed-delay")
    processes = run_job(build, *PROCESSES, "restart-strategy.type=fixed-delay")
    assert processes.outcome.status == "FINISHED" and len(pids_of(processes)) == 3
    assert processes.lines == embedded.lines and [line[:3] for line in embedded.lines] == sorted(
        line[:3] for line in embedded.lines)


def test_a_file_sink_staged_in_worker_processes_commits_only_the_final_attempts(tmp_path):
    """Without checkpoints, a bounded job that may restart stages FileSink's parts in the worker
    processes; a failure restarts the job, the failed attempts' parts are discarded there, and
    the final attempts' parts are committed when the job finishes: every record once."""
    out = tmp_path / "out"

    def build(env):
        env.set_parallelism(2)
        sink = FileSink.for_row_format(str(out), Encoder.simple_string_encoder()) \
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build()
        env.from_collection(list(range(400)), Types.INT()).rebalance().map(lambda v: v, Types.INT()).name("Pass") \
            .sink_to(sink)
        env.execute("staged files")

    job = run_job(build, *PROCESSES, "restart-strategy.type=fixed-delay", "rill.network.record-size=4096",
                  faults=["raise:operator=Pass,record=150,subtask=1"])
    assert job.outcome.status == "FINISHED", job.outcome.failure
    assert {e.attempt for e in job.events(TaskDeployed)} == {0, 1}
    visible = [p for p in out.iterdir() if not p.name.startswith(".")]
    assert len(visible) == 2 and not [p for p in out.iterdir() if p.name.startswith(".")]
    assert sorted(int(line) for p in visible for line in p.read_text().split()) == list(range(400))


def test_a_raise_fault_fires_times_in_the_run_when_processes_reach_its_record_at_once(tmp_path):
    """Both subtasks, each in a TaskExecutor process of its own, reach the fault's record at the
    same moment (they meet on their first record); the fault fires once in the run, as its
    ``times`` says (each process counting for itself raised it in both), and one restart
    recovers the job."""
    meeting = tmp_path / "meeting"
    meeting.mkdir()

    def meet(value):
        (meeting / str(value % 2)).touch()
        deadline = time.monotonic() + 20
        while len(list(meeting.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        return value

    def build(env):
        env.set_parallelism(2)
        env.from_collection(list(range(40)), Types.INT()).rebalance().map(meet, Types.INT()).name("Meet").print()
        env.execute("met")

    job = run_job(build, *PROCESSES, "restart-strategy.type=fixed-delay", "restart-strategy.fixed-delay.attempts=1",
                  "rill.network.record-size=4096", faults=["raise:operator=Meet,record=2"])
    assert job.outcome.status == "FINISHED", job.outcome.failure
    assert [e.phase for e in job.events(FaultInjected)] == ["start"]
    assert {e.attempt for e in job.events(TaskDeployed)} == {0, 1}
    assert sorted(int(line.split("> ")[-1]) for line in job.lines) == list(range(40))


def test_a_claim_that_names_no_raise_fault_is_refused_and_counts_nothing():
    """What a TaskExecutor process asks the cluster's injector (``claim``, on the run's transport,
    whose handlers drop a peer whose frame raises): an index of no raise fault, a negative
    one, or no int at all is refused; a raise fault fires its ``times``, then no more."""
    from kernel.faults import build_faults, parse_inject
    from plugins.local.faults import FaultInjector

    faults = build_faults([parse_inject("kill:target=taskexecutor-1,at=1s"),
                           parse_inject("raise:operator=Meet,record=2,times=2")])
    injector = FaultInjector(None, None, faults)
    for index in (0, -1, 2, 1 << 70, "1", 1.0, None, [1]):
        with pytest.raises(ValueError, match=r"^no raise fault #"):
            injector.claim(index)
    assert [injector.claim(1) for _ in range(4)] == [True, True, False, False]
    assert injector.raised == {1: 2}


def test_a_partition_between_processes_is_noticed_by_heartbeats():
    job = run_job(counting(6_000), *PROCESSES, "heartbeat.interval=200 ms", "heartbeat.timeout=1 s",
                  "restart-strategy.type=fixed-delay", "restart-strategy.fixed-delay.attempts=5",
                  faults=["partition:from=jobmaster*,to=taskexecutor-1,start=2500ms,end=5s"])
    assert job.outcome.status == "FINISHED", job.outcome.failure
    timed_out = [e for e in job.events(HeartbeatTimedOut) if e.target == "taskexecutor-1"]
    assert timed_out and timed_out[0].owner.startswith("jobmaster")
    dropped = job.events(MessageDropped)
    assert dropped and {e.receiver for e in dropped if e.sender.startswith("jobmaster")} == {"taskexecutor-1"}


def test_an_idle_worker_process_is_released_and_ends():
    def build(env):
        env.from_collection([1, 2, 3], Types.INT()).print()
        env.from_source(DataGeneratorSource(lambda i: i, records_per_second=10), WatermarkStrategy.no_watermarks(),
                        "Endless").slot_sharing_group("other").add_sink(lambda v: None)
        env.execute("idle")

    job = run_job(build, *PROCESSES, "resourcemanager.taskmanager-timeout=1 s", "rill.duration=5 s")
    assert job.outcome.status == "CANCELED" and job.lines == ["1", "2", "3"]
    pids = pids_of(job)
    stopped = [(e.resource_id, e.reason) for e in job.events(WorkerStopped)]
    released = [r for r, reason in stopped if reason == "idle for resourcemanager.taskmanager-timeout (1000 ms)"]
    assert len(released) == 1 and gone(pids[released[0]])
    assert all(gone(pid) for pid in pids.values())
    registered = {e.resource_id for e in job.events(WorkerRegistered)}
    assert registered == set(pids)


def test_the_workers_stop_with_sigterm_and_send_their_last_events():
    job = run_job(counting(300), *PROCESSES)
    assert job.outcome.status == "FINISHED"
    pids = pids_of(job)
    assert all(gone(pid) for pid in pids.values())
    # each worker's final metrics (sent as it stopped) are in the log
    final = {(e.vertex_name, e.subtask) for e in job.events(TaskMetricsSampled) if e.final}
    assert len(final) == 4
    assert sum(len(e.text.splitlines()) for e in job.events(SinkOutputPrinted)) == len(job.lines) == 300
    assert {e.reason for e in job.events(WorkerStopped)} == {"cluster shut down"}


CLUSTER_SIDE = ("plugins.local.minicluster", "plugins.local.dispatcher", "plugins.local.jobmaster.jobmaster",
                "plugins.local.resourcemanager")


def report_at_exit(value):
    """A map function that has its worker process say, at exit, whether the collector's
    generations are frozen and which modules of the cluster's side it loaded (once per process)."""
    if not hasattr(sys, "rill_test_exit_report"):
        sys.rill_test_exit_report = True

        def report() -> None:
            loaded = [name for name in CLUSTER_SIDE if name in sys.modules]
            # one write per line: the two workers' lines do not interleave
            os.write(2, f"worker {os.getpid()} frozen: {gc.get_freeze_count() > 0}, loaded: {loaded}\n".encode())

        atexit.register(report)
    return value


def test_a_worker_process_ends_without_a_last_collection_having_loaded_no_cluster_side(capfd):
    """A stopped worker's process freezes the collector before the interpreter's exit (its
    last full collection is what the run waited for last); a task's end loads none of the
    MiniCluster, Dispatcher, JobMaster or ResourceManager. Its output and events are complete."""
    def build(env):
        env.set_parallelism(2)
        env.from_collection(list(range(10)), Types.INT()).rebalance().map(report_at_exit, Types.INT()) \
            .key_by(lambda v: v % 2, Types.INT()).reduce(lambda a, b: a + b).print()
        env.execute("frozen")

    job = run_job(build, *PROCESSES)
    assert job.outcome.status == "FINISHED"
    assert sorted(int(line.split("> ")[1]) for line in job.lines) == sorted([0, 2, 6, 12, 20, 1, 4, 9, 16, 25])
    # the tasks' summaries (sent as each ended) reached the outcome
    assert [(v.records_in, v.records_out) for v in job.outcome.vertices] == [(0, 10), (10, 10), (10, 0)]
    pids = pids_of(job)
    assert all(gone(pid) for pid in pids.values())
    reported = sorted(line for line in capfd.readouterr().err.splitlines() if " frozen: " in line)
    assert reported == sorted(f"worker {pid} frozen: True, loaded: []" for pid in pids.values())


def test_execute_and_collect_gets_the_records_of_collect_sinks_in_worker_processes():
    def build(env):
        env.set_parallelism(2)
        with env.from_collection(list(range(20)), Types.INT()).map(lambda v: v * 3, Types.INT()) \
                .execute_and_collect() as records:
            collected.extend(records)

    collected: list = []
    job = run_job(build, *PROCESSES)
    assert job.outcome.status == "FINISHED" and sorted(collected) == [3 * v for v in range(20)]
    assert all(pid != os.getpid() for pid in pids_of(job).values())
