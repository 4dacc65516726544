"""Tasks in threads of their own under the realtime clock: a blocked task stalls only itself,
and cancelling interrupts it, waits at most ``task.cancellation.timeout`` and ends the run when
it is stuck. Under the simulated clock tasks stay in the run's one loop.

Realtime tests assert orders (what was recorded before, between, after), never durations."""

from __future__ import annotations

import csv
import io
import json
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from kernel import clock as kclock
from kernel import hookimpl
from kernel.runtime.cluster_events import (
    ExecutionStateChanged,
    HeartbeatReceived,
    HeartbeatTimedOut,
    SinkOutputPrinted,
    TaskFailureHandled,
    WatermarkAdvanced,
)
from kernel.common import Duration, Encoder, Time, Types, WatermarkStrategy
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.connectors.file_system import BucketAssigner, FileSink
from kernel.datastream.window import TumblingEventTimeWindows
from kernel.lifecycle.session import Session
from plugins.checkpointing.events import (
    CheckpointAcknowledged,
    CheckpointBarrierAligned,
    CheckpointCompleted,
    CheckpointStateRestored,
)
from plugins.local.events import (
    TaskCancellationTimedOut,
    TaskCancelRequested,
    TaskInterrupted,
)
from plugins.local.options import ClusterOptions
from tests.checkpoint_jobs import count_per_source, counts_are_exact, two_sources
from tests.runtime import run_job

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])


def printed(job) -> list[str]:
    """What the print sinks wrote, line by line, in the order recorded."""
    return [line for event in job.events(SinkOutputPrinted) for line in event.text.splitlines()]


def between(events: list, first: str, last: str) -> list:
    """The events recorded after a sink printed the line ``first`` and before one printed ``last``
    (the napping pipelines emit a record every 250 ms and nap at the third: the first one is
    printed before the nap even if the second waited for the third)."""
    lines = [getattr(event, "text", "").splitlines() for event in events]
    start = next(i for i, text in enumerate(lines) if first in text)
    end = next(i for i, text in enumerate(lines) if last in text)
    assert start < end
    return events[start + 1:end]


def napping(seconds: float, at: int):
    def nap(value):
        if value == at:
            time.sleep(seconds)
        return value

    return nap


@pytest.mark.parametrize("clock", ["simulated", "realtime"])
def test_each_task_runs_in_a_thread_of_its_own_only_under_the_realtime_clock(clock):
    seen: dict[str, set[str]] = {"first": set(), "second": set()}

    def where(name):
        def record(value):
            seen[name].add(threading.current_thread().name)
            return value

        return record

    def build(env):
        (env.from_collection([1, 2, 3], Types.INT()).map(where("first"), Types.INT()).name("First")
            .rebalance().map(where("second"), Types.INT()).name("Second").print())
        env.execute()

    job = run_job(build, f"rill.clock={clock}")
    assert sorted(job.lines) == ["1", "2", "3"]
    if clock == "simulated":
        assert seen == {"first": {"MainThread"}, "second": {"MainThread"}}
    else:
        assert seen == {"first": {"rill-task Source: Collection Source -> First (1/1)"},
                        "second": {"rill-task Second -> Sink: Print to Std. Out (1/1)"}}


def test_a_sleeping_map_does_not_hold_back_another_pipelines_event_time_windows():
    """While one pipeline's map sleeps 3 s, the other's windows go on firing."""

    def build(env):
        naps = env.from_source(DataGeneratorSource(lambda i: i, count=4, records_per_second=4, type_info=Types.LONG()),
                               WatermarkStrategy.no_watermarks(), "Naps")
        naps.map(napping(3, at=2), Types.LONG()).name("Nap").print("nap")
        ticks = env.from_source(
            DataGeneratorSource(lambda i: ("tick", i * 20), count=250, records_per_second=50, type_info=PAIR),
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda value, ts: value[1]), "Ticks")
        (ticks.key_by(lambda value: value[0], Types.STRING())
              .window(TumblingEventTimeWindows.of(Time.milliseconds(500)))
              .reduce(lambda a, b: (a[0], a[1] + b[1]))
              .map(lambda value: value[0], Types.STRING()).print("window"))
        env.execute()

    job = run_job(build, "rill.clock=realtime")
    assert job.outcome.status == "FINISHED"
    lines = printed(job)
    # 250 ticks, 20 ms of event time apart: 10 windows of 500 ms, each fired once
    assert sorted(line for line in lines if line.startswith("window")) == ["window> tick"] * 10
    assert [line for line in lines if line.startswith("nap")] == [f"nap> {i}" for i in range(4)]
    during = [event for event in between(job.events(SinkOutputPrinted), "nap> 0", "nap> 2")
              if event.text.startswith("window")]
    assert len(during) >= 2  # about 6 fire in the 3 s the other pipeline sleeps


def test_periodic_watermarks_of_a_downstream_task_go_on_while_one_of_its_upstreams_sleeps():
    """The task generating watermarks reads two upstream tasks; while one sleeps, the records
    of the other keep advancing its periodic watermark (Flink's behaviour; with every task in
    one thread, nothing would be emitted until the sleep ended)."""

    def build(env):
        naps = env.from_source(
            DataGeneratorSource(lambda i: ("nap", i), count=4, records_per_second=4, type_info=PAIR),
            WatermarkStrategy.no_watermarks(), "Naps")
        napped = naps.map(lambda value: (value[0], napping(3, at=2)(value[1])), PAIR).name("Nap")
        napped.map(lambda value: str(value[1]), Types.STRING()).print("nap")
        ticks = env.from_source(
            DataGeneratorSource(lambda i: ("tick", i * 20), count=250, records_per_second=50, type_info=PAIR),
            WatermarkStrategy.no_watermarks(), "Ticks")
        (napped.union(ticks)
               .assign_timestamps_and_watermarks(
                   WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(100))
                   .with_timestamp_assigner(lambda value, ts: value[1] if value[0] == "tick" else 0))
               .name("Stamps")
               .add_sink(lambda value: None).name("Discard"))
        env.execute()

    job = run_job(build, "rill.clock=realtime")
    assert job.outcome.status == "FINISHED"
    events = [event for event in job.captured.events
              if isinstance(event, SinkOutputPrinted)
              or (isinstance(event, WatermarkAdvanced) and event.direction == "output" and event.vertex_name.startswith("Stamps"))]
    during = [event for event in between(events, "nap> 0", "nap> 2") if isinstance(event, WatermarkAdvanced)]
    assert len(during) >= 2  # periodic: every 200 ms of the 3 s sleep
    assert [e.watermark for e in during] == sorted(e.watermark for e in during)


def test_heartbeats_go_on_while_a_user_function_blocks():
    """A 3 s call does not look like a dead TaskExecutor with a 1 s heartbeat timeout."""

    def build(env):
        (env.from_source(DataGeneratorSource(lambda i: i, count=4, records_per_second=4, type_info=Types.LONG()),
                         WatermarkStrategy.no_watermarks(), "Numbers")
            .map(napping(3, at=2), Types.LONG()).name("Nap").print())
        env.execute()

    job = run_job(build, "rill.clock=realtime", "heartbeat.interval=200 ms", "heartbeat.timeout=1 s")
    assert job.outcome.status == "FINISHED"
    assert job.events(HeartbeatTimedOut) == []
    events = [event for event in job.captured.events if isinstance(event, (SinkOutputPrinted, HeartbeatReceived))]
    during = [event for event in between(events, "0", "2")
              if isinstance(event, HeartbeatReceived) and event.target == "taskexecutor-1"]
    assert {event.owner.split("-")[0] for event in during} == {"resourcemanager", "jobmaster"}


def test_cancelling_interrupts_a_task_sleeping_on_the_runs_clock():
    """``kernel.clock.sleep`` is interrupted as Java's Thread.sleep: the task ends CANCELED at
    once, nothing has to be interrupted again."""

    def nap(value):
        kclock.sleep(60)
        return value

    def build(env):
        env.from_collection([1, 2], Types.INT()).map(nap, Types.INT()).name("Nap").print()
        env.execute()

    job = run_job(build, "rill.clock=realtime", "rill.duration=500 ms", "task.cancellation.interval=30 s")
    assert job.outcome.status == "CANCELED" and job.lines == []
    requested = job.events(TaskCancelRequested)
    assert [(e.vertex_name, e.action, e.reason, e.resource_id) for e in requested] == [
        ("Source: Collection Source -> Nap -> Sink: Print to Std. Out", "cancel", "cancelled by the JobMaster",
         "taskexecutor-1")]
    assert job.events(TaskInterrupted, TaskCancellationTimedOut) == []
    states = [(e.old_state, e.new_state) for e in job.events(ExecutionStateChanged)][-2:]
    assert states == [("RUNNING", "CANCELING"), ("CANCELING", "CANCELED")]


class NeverRunning:
    """A mailbox whose default action suspends for good: every task idles forever."""

    @hookimpl(tryfirst=True)
    def create_mailbox_processor(self, task, run):
        from plugins.mailbox.processor import DefaultMailboxProcessor

        return DefaultMailboxProcessor(lambda mailbox: mailbox.suspend_default_action(None, "idle"), task.loop,
                                       task.fail_from_mailbox, task.suspension_changed)


@pytest.mark.parametrize("clock", ["simulated", "realtime"])
def test_a_job_whose_tasks_wait_for_nothing_fails_as_stalled_under_both_clocks(clock):
    def build(env):
        env.from_collection([1, 2], Types.INT()).print()  # one task: no output flusher keeps it going
        env.execute()

    job = run_job(build, f"rill.clock={clock}", plugins=(NeverRunning(),))
    assert job.outcome.status == "FAILED"
    assert job.outcome.failure == "the job stalled: nothing left to run and it did not end"


def test_the_cancellation_keys_are_flinks_with_its_deprecated_interval_key():
    options = Session.open(sets=["task.cancellation-interval=5 s", "task.cancellation.timeout=0"],
                           environ={}).config.section(ClusterOptions)
    assert (options.cancellation_interval, options.cancellation_timeout) == (5_000, 0)
    defaults = Session.open(environ={}).config.section(ClusterOptions)
    assert (defaults.cancellation_interval, defaults.cancellation_timeout) == (30_000, 180_000)


# -- checkpoints with tasks in threads -------------------------------------------------------------


def committed(directory) -> list[str]:
    """The lines of the FileSink's committed (visible) part files, sorted."""
    return sorted(line for part in directory.iterdir() if part.is_file() and not part.name.startswith(".")
                  for line in part.read_text().splitlines())


PASS = "Pass -> Sink: Writer"
NAPS = "Source: Naps -> Nap -> Sink: Print to Std. Out"


def napping_and_counting(out):
    """Two pipelines, two regions: Naps (4 records a second) naps 2 s in its map at its 4th
    record; A and B (20 records a second each) go into one task, Pass with the FileSink, which
    so has two input channels and aligns their barriers."""

    def build(env):
        env.enable_checkpointing(200)
        naps = env.from_source(DataGeneratorSource(lambda i: i, count=6, records_per_second=4, type_info=Types.LONG()),
                               WatermarkStrategy.no_watermarks(), "Naps")
        naps.map(napping(2, at=4), Types.LONG()).name("Nap").print("nap")
        a, b = (env.from_source(DataGeneratorSource(lambda i, s=source: f"{s}{i}", count=80, records_per_second=20,
                                                    type_info=Types.STRING()), WatermarkStrategy.no_watermarks(), source)
                for source in "AB")
        (a.union(b).map(lambda value: value, Types.STRING()).name("Pass")
            .sink_to(FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
                     .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build()))
        env.execute("naps and counts")

    return build


def test_a_sleeping_map_holds_back_no_other_tasks_checkpoints_and_recovery_is_exactly_once(tmp_path):
    """Aligned checkpoints with every task in a thread of its own: while the Nap task sleeps in
    user code, the other pipeline's tasks take their part in the checkpoints (A and B send
    barriers, Pass aligns its two channels and acknowledges), as in Flink; a checkpoint
    completes once Nap took its part too. A raise in Pass (during the nap, or near it: timing
    decides) restarts its region from the latest completed checkpoint, and the FileSink
    commits what the fault-free run commits, exactly once."""
    sets = ("rill.clock=realtime", "restart-strategy.type=fixed-delay", "restart-strategy.fixed-delay.delay=50 ms")
    plain = run_job(napping_and_counting(tmp_path / "plain"), *sets)
    assert plain.outcome.status == "FINISHED" and plain.events(TaskFailureHandled) == []
    expected = sorted(f"{source}{i}" for source in "AB" for i in range(80))
    assert committed(tmp_path / "plain") == expected

    job = run_job(napping_and_counting(tmp_path / "faulty"), *sets, faults=["raise:operator=Pass,record=100"])
    assert job.outcome.status == "FINISHED"
    assert committed(tmp_path / "faulty") == committed(tmp_path / "plain")
    [failure] = job.events(TaskFailureHandled)
    assert failure.vertex_name.startswith("Pass") and failure.restart
    assert [line for line in printed(job) if line.startswith("nap")] == [f"nap> {i}" for i in range(6)]
    restored = job.events(CheckpointStateRestored)
    if restored:  # a checkpoint completed before the failure (timing decides)
        assert {e.vertex_name for e in restored} == {"Source: A", "Source: B", PASS}
        assert all(e.checkpoint_id > 0 for e in restored)
    completed = job.events(CheckpointCompleted)
    assert len(completed) >= 2

    for run in (plain, job):  # while Nap sleeps: the other pipeline aligns and acknowledges barriers
        events, aligned, acknowledged = checkpoints_during_the_nap(run)
        assert aligned and {event.vertex_name for event in aligned} == {PASS}
        assert all(event.channels == 2 for event in aligned)
        assert {event.vertex_name for event in acknowledged} >= {"Source: A", "Source: B"}
    # without a failure, the other pipeline took its part in the last checkpoint aligned during the
    # nap before Nap woke; Nap took its part after it woke, and then the checkpoint completed
    events, aligned, _ = checkpoints_during_the_nap(plain)
    last = aligned[-1].checkpoint_id
    woke = next(i for i, event in enumerate(events) if isinstance(event, SinkOutputPrinted) and "nap> 4" in event.text)
    answers = {event.vertex_name: i for i, event in enumerate(events)
               if isinstance(event, CheckpointAcknowledged) and event.checkpoint_id == last}
    [completion] = [i for i, event in enumerate(events) if isinstance(event, CheckpointCompleted)
                    and event.checkpoint_id == last]
    assert max(answers["Source: A"], answers["Source: B"], answers[PASS]) < woke < answers[NAPS] < completion


def checkpoints_during_the_nap(run) -> tuple[list, list, list]:
    """The printed lines and checkpoint events of ``run``; of them, the barrier alignments and
    acknowledgements recorded while Nap slept."""
    events = [event for event in run.captured.events if isinstance(
        event, (SinkOutputPrinted, CheckpointBarrierAligned, CheckpointAcknowledged, CheckpointCompleted))]
    during = between(events, "nap> 2", "nap> 4")
    return (events, [event for event in during if isinstance(event, CheckpointBarrierAligned)],
            [event for event in during if isinstance(event, CheckpointAcknowledged)])


def test_unaligned_barriers_overtake_in_flight_data_across_task_threads_and_restore_it_exactly_once():
    """Unaligned checkpoints with every task in a thread of its own: priority barriers cross the
    network between threads ahead of queued buffers, the data they overtake is persisted (SlowB
    takes 30 ms a record while B sends one every 10 ms: its input always holds some), and a
    raise in Count restores it: every count is exact."""
    job = run_job(two_sources(count_per_source, count=60), "rill.clock=realtime", "execution.checkpointing.interval=30ms",
                  "execution.checkpointing.unaligned.enabled=true", "restart-strategy.type=fixed-delay",
                  "restart-strategy.fixed-delay.delay=20 ms", "taskmanager.memory.segment-size=64b",
                  faults=["raise:operator=Count,record=40"])
    assert job.outcome.status == "FINISHED" and len(job.events(TaskFailureHandled)) == 1
    assert counts_are_exact(job.lines)
    assert {line.split()[0] for line in job.lines} == {f"{source}{i}" for source in "ab" for i in range(60)}
    slow = [event for event in job.events(CheckpointBarrierAligned) if event.vertex_name == "SlowB"]
    assert slow and all(event.unaligned for event in slow) and any(event.persisted_bytes for event in slow)


# -- stuck tasks: in a process of their own (a stuck thread cannot be stopped) -----------------

STUCK_JOB = """
    from kernel.common import Types, WatermarkStrategy
    from kernel.datastream import StreamExecutionEnvironment
    from kernel.datastream.connectors.datagen import DataGeneratorSource

    def spin(value):
        if value == 3:
            print("spinning", flush=True)
            while True: pass  # noqa: E701 (one line: the stuck frame is always at line 9)
        return value

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_source(DataGeneratorSource(lambda i: i, records_per_second=20), WatermarkStrategy.no_watermarks(),
                    "Numbers").map(spin, Types.LONG()).name("Spin").print()
    env.execute("stuck")
"""


def rill(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kernel.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def last_run_events(cli, *tags: str, written: bool = True) -> list[tuple]:
    """(kind, payload) of the latest run's events of these kinds; ``written=False``: the log
    may not exist yet (nothing flushed), which counts as no events."""
    code, out, err = cli("sql", "--format", "csv",
                         "SELECT kind, payload FROM events WHERE run_id = (SELECT run_id FROM runs ORDER BY started_at "
                         "DESC LIMIT 1) AND kind IN (" + ", ".join(f"'{tag}'" for tag in tags) + ") ORDER BY seq")
    if not written and code != 0 and "no event log" in err:
        return []
    assert code == 0, err
    return [(row["kind"], json.loads(row["payload"])) for row in csv.DictReader(io.StringIO(out))]


def last_run_status(cli) -> str:
    code, out, err = cli("sql", "--format", "csv", "SELECT status FROM runs ORDER BY started_at DESC LIMIT 1")
    return out.splitlines()[1]


@pytest.mark.parametrize("configured", ["set", "execution config"])
def test_the_duration_ends_a_busy_loop_within_the_cancellation_timeout_naming_the_stuck_operator(
        configured, tmp_path, cli):
    job = tmp_path / "stuck.py"
    source = textwrap.dedent(STUCK_JOB)
    if configured == "set":
        sets = ["--set", "task.cancellation.timeout=1500 ms", "--set", "task.cancellation.interval=600 ms"]
    else:  # as a PyFlink job says it: Flink's ExecutionConfig is backed by the job's configuration
        sets = []
        source = source.replace('env.execute("stuck")', 'env.get_config().set_task_cancellation_timeout(1500)'
                                '.set_task_cancellation_interval(600)\nenv.execute("stuck")')
    job.write_text(source)
    process = rill("run", "--duration", "2s", *sets, str(job))
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err  # a canceled run
    printed = out.splitlines()  # the records before the 3rd, unless they came in its batch
    assert printed[-1] == "spinning" and printed[:-1] == ["0", "1", "2"][:len(printed) - 1]
    assert "CANCELED" in err
    stuck = ("Task Source: Numbers -> Spin -> Sink: Print to Std. Out (1/1) did not exit within "
             "task.cancellation.timeout (1500 ms) of being stopped: stuck in operator 'Spin' at "
             f"{job}:9 in spin")
    assert f"fatal error of taskexecutor-1: {stuck}" in err
    events = last_run_events(cli, "task_cancel_requested", "task_interrupted", "task_cancellation_timed_out",
                             "run_finished")
    assert [kind for kind, _ in events] == ["task_cancel_requested", "task_interrupted", "task_interrupted",
                                            "task_cancellation_timed_out", "run_finished"]
    for kind, payload in events[1:4]:
        assert (payload["operator"], payload["location"]) == ("Spin", f"{job}:9 in spin")
    waited = [payload["waited_ms"] for _, payload in events[1:4]]
    assert waited == sorted(waited) and waited[-1] >= 1500
    assert events[-1][1]["status"] == "canceled" and events[-1][1]["reason"] == f"fatal error of taskexecutor-1: {stuck}"
    assert last_run_status(cli) == "canceled"


def read_until(process: subprocess.Popen, last: str) -> list[str]:
    """The lines the job prints up to ``last`` (or up to the end of its output)."""
    lines: list[str] = []
    while not lines or lines[-1] != last:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
    return lines


def test_the_first_ctrl_c_cancels_the_job(tmp_path, cli):
    job = tmp_path / "sleepy.py"
    job.write_text(textwrap.dedent("""
        import time
        from kernel.common import Types, WatermarkStrategy
        from kernel.datastream import StreamExecutionEnvironment
        from kernel.datastream.connectors.datagen import DataGeneratorSource

        def nap(value):
            time.sleep(0.2)
            return value

        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_source(DataGeneratorSource(lambda i: i, records_per_second=20), WatermarkStrategy.no_watermarks(),
                        "Numbers").map(nap, Types.LONG()).name("Nap").print()
        env.execute("sleepy")
    """))
    process = rill("run", str(job))
    assert read_until(process, "2") == ["0", "1", "2"]
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "CANCELED" in err and "Traceback" not in err
    assert last_run_status(cli) == "canceled"
    kinds = [kind for kind, _ in last_run_events(cli, "task_cancel_requested", "run_finished")]
    assert kinds == ["task_cancel_requested", "run_finished"]


def test_a_second_ctrl_c_ends_the_run_at_once_even_with_a_stuck_task(tmp_path, cli):
    job = tmp_path / "stuck.py"
    job.write_text(textwrap.dedent(STUCK_JOB))
    # the live run's events reach the log from its first flush (not deferred): the test waits for one
    process = rill("run", "--set", "task.cancellation.timeout=10 min", "--set", "eventlog.defer=0", str(job))
    assert read_until(process, "spinning")[-1] == "spinning"
    process.send_signal(signal.SIGINT)  # cancels the job: the spinning task does not react
    waited = 0.0
    while not last_run_events(cli, "task_cancel_requested", written=False) and waited < 60:
        time.sleep(0.1)  # polling the event log for the cancellation, not timing anything
        waited += 0.1
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)  # well before the 10 min cancellation timeout
    assert process.returncode == 130
    assert err.rstrip().splitlines()[-1] == "rill: aborted"
    assert last_run_status(cli) == "failed"
    kinds = [kind for kind, _ in last_run_events(cli, "task_cancel_requested", "task_cancellation_timed_out",
                                                 "run_finished")]
    assert kinds == ["task_cancel_requested", "run_finished"]
