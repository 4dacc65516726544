"""Replay and SQL analysis of recorded runs: views, ``rill metrics``, ``rill replay --at /
--events / --rerun``, what-if comparisons, export, and bad input."""

from __future__ import annotations

from pathlib import Path

import json
import os
import textwrap

import duckdb
import pytest

from kernel.lifecycle.session import Session
from plugins.local.minicluster import MiniCluster
from plugins.local.tasks.streamtask import StreamTask
from replay.state import state_at
from replay.store import find_run, read_log

MIN = -(1 << 63)

FAULT_JOB = """
from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.from_source(DataGeneratorSource(lambda i: (i % 7, 1), count=1000, records_per_second=10),
                WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, ts: 0),
                "Numbers") \\
    .key_by(lambda pair: pair[0], Types.INT()).reduce(lambda a, b: (a[0], a[1] + b[1])).name("Count").print()
env.execute("counting")
"""

SKEW_JOB = """
from kernel.common import Duration, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource

def strategy():
    return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(100)) \\
        .with_timestamp_assigner(lambda value, ts: value[1])

env = StreamExecutionEnvironment.get_execution_environment()
fast = env.from_source(DataGeneratorSource(lambda i: ("fast", i * 10), count=3000, records_per_second=100), strategy(), "Fast")
slow = env.from_source(DataGeneratorSource(lambda i: ("slow", i * 2), count=3000, records_per_second=100), strategy(), "Slow")
fast.union(slow).map(lambda v: v[0]).print()
env.execute("two speeds")
"""


def job_file(tmp_path, name: str, source: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return str(path)


def last_run(session: Session | None = None):
    with read_log(session or Session.open()) as con:
        return find_run(con, "last")


# -- a fault run, its views and the state at instants --------------------------------------------


def live_state(cluster: MiniCluster, tasks: list[StreamTask], seconds: float) -> dict:
    """What the runtime itself holds at this instant, in the shape ``rill replay --at`` prints."""
    [master] = cluster.dispatcher.job_masters.values()
    now = cluster.run.clock.now()
    slots: dict[str, list] = {}
    for slot in sorted(master.scheduler.slot_pool.slots.values(), key=lambda s: (s.resource_id, s.slot_index)):
        slots.setdefault(slot.resource_id, []).append({"slot_index": slot.slot_index, "allocation_id": slot.allocation_id})
    registrations = cluster.resource_manager.registrations
    workers = {}
    for worker in cluster.task_executors:
        status = "stopped" if worker.stopped else "registered" if registrations.get(worker.address) else "started"
        workers[worker.address] = {"status": status, "registrations": registrations.get(worker.address, 0),
                                   "slots": slots.get(worker.address, [])}
        if worker.stopped:
            workers[worker.address]["reason"] = worker.stop_reason
    subtasks, current = {}, {}
    for ev in master.scheduler.graph.vertices():
        name = f"{ev.job_vertex.name}/{ev.subtask}"
        slot = ev.current.slot
        subtasks[name] = {"state": ev.current.state.value, "attempt": ev.current.attempt,
                          "resource_id": slot.resource_id if slot is not None else ""}
        current[name] = next((t for t in tasks if t.attempt_key == (ev.job_vertex.id, ev.subtask, ev.current.attempt)),
                             None)
    watermarks, back_pressure = {}, {}
    for name, task in current.items():
        if task is None:
            continue
        reporter, marks = task.watermark_reporter, {}
        if reporter.last_output != MIN:
            marks["output"] = reporter.last_output
        marks.update({f"input {index}": value for index, value in reporter.inputs.items()})
        marks.update({f"{where} status": status for where, status in reporter.statuses.items()})
        if marks:
            watermarks[name] = marks
        if task.last_sample is not None:
            vertex, subtask = name.rsplit("/", 1)
            entry = back_pressure.setdefault(vertex, {"back_pressured_ms": -1.0, "worst_subtask": None})
            if task.last_sample["back_pressured_ms"] > entry["back_pressured_ms"]:
                entry.update(back_pressured_ms=task.last_sample["back_pressured_ms"], worst_subtask=int(subtask))
    for entry in back_pressure.values():
        ratio = entry["back_pressured_ms"] / 1000
        entry["level"] = "HIGH" if ratio > 0.5 else "LOW" if ratio > 0.1 else "OK"
    heartbeats = {}
    components = [cluster.resource_manager, master, *cluster.task_executors]
    for component in components:
        if component.stopped:
            continue
        for manager in (getattr(component, n, None) for n in ("job_heartbeats", "worker_heartbeats", "rm_heartbeats",
                                                                 "tm_heartbeats", "jm_heartbeats")):
            for target, monitor in (manager.monitors.items() if manager is not None else ()):
                if monitor.last_heard is not None:
                    heartbeats[f"{component.address} <- {target}"] = {
                        "last_heard_s": round((monitor.last_heard - cluster.tracker.start) / 1e9, 6), "lost_s": None}
    return {"at_s": seconds, "now_s": (now - cluster.tracker.start) / 1e9, "task_executors": workers,
            "subtasks": subtasks, "watermarks": watermarks, "back_pressure": back_pressure, "heartbeats": heartbeats}


INSTANTS = (12.345, 35.555, 50.321, 70.123, 75.555, 95.001)


def test_the_replayed_state_equals_the_live_state_at_instants_of_a_fault_run(cli, tmp_path, monkeypatch):
    path = job_file(tmp_path, "fault.py", FAULT_JOB)
    captured: dict[float, dict] = {}
    tasks: list[StreamTask] = []
    original_init, original_execute = StreamTask.__init__, MiniCluster.execute

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        tasks.append(self)

    def execute(self, job_graph):
        for seconds in INSTANTS:
            self.run.loop.call_at(self.tracker.start + int(seconds * 1e9),
                                  lambda s=seconds: captured.__setitem__(s, live_state(self, tasks, s)))
        return original_execute(self, job_graph)

    monkeypatch.setattr(StreamTask, "__init__", init)
    monkeypatch.setattr(MiniCluster, "execute", execute)
    code, _, err = cli("run", "--clock", "simulated", "--set", "restart-strategy.type=fixed-delay",
                       "--inject", "kill:target=taskexecutor-2,at=30s", path)
    assert code == 0, err
    assert set(captured) == set(INSTANTS)
    session = Session.open()
    with read_log(session) as con:
        run = find_run(con, "last")
        for seconds in INSTANTS:
            live = captured[seconds]
            replayed = state_at(con, run, seconds)
            assert live["now_s"] == seconds
            for part in ("task_executors", "subtasks", "watermarks", "back_pressure"):
                assert replayed[part] == live[part], (seconds, part)
            replayed_ok = {pair: h for pair, h in replayed["heartbeats"].items() if h["lost_s"] is None}
            assert replayed_ok == live["heartbeats"], seconds
    # the instants show the fault's story
    at = {s: captured[s] for s in INSTANTS}
    assert at[35.555]["task_executors"]["taskexecutor-2"]["status"] == "stopped"
    assert at[35.555]["subtasks"]["Source: Numbers/1"] == {"state": "RUNNING", "attempt": 0, "resource_id": "taskexecutor-2"}
    assert at[75.555]["subtasks"]["Source: Numbers/1"] == {"state": "RUNNING", "attempt": 1, "resource_id": "taskexecutor-3"}
    assert at[35.555]["back_pressure"]["Source: Numbers"]["level"] == "OK"
    assert at[50.321]["back_pressure"]["Source: Numbers"]["level"] == "HIGH"  # its dead consumer gives no credit
    # and the CLI prints it
    code, out, _ = cli("replay", "last", "--at", "75.555")
    assert code == 0 and "Source: Numbers/1" in out and "attempt 1 on taskexecutor-3" in out
    code, out, _ = cli("replay", "last", "--at", "35.555", "--json")
    assert json.loads(out)["task_executors"]["taskexecutor-2"]["reason"] == "killed by fault #1"


@pytest.fixture
def fault_run(cli, tmp_path):
    path = job_file(tmp_path, "fault.py", FAULT_JOB)
    code, _, err = cli("run", "--clock", "simulated", "--set", "restart-strategy.type=fixed-delay",
                       "--inject", "kill:target=taskexecutor-2,at=30s", path)
    assert code == 0, err
    return path


def query(sql: str) -> list[dict]:
    with read_log(Session.open()) as con:
        result = con.execute(sql)
        columns = [d[0] for d in result.description]
        return [dict(zip(columns, row)) for row in result.fetchall()]


def test_the_views_over_a_fault_run(fault_run):
    [failure] = query("SELECT * FROM failures")
    assert (failure["fault_kind"], failure["fault_s"], failure["detected_s"], failure["failed_s"]) == ("kill", 30.0, 70.0, 70.0)
    assert failure["cause"] == "TimeoutException: Heartbeat of TaskManager with id taskexecutor-2 timed out."
    assert failure["restart"] and failure["restarted_s"] == 71.0 and failure["recovered_s"] == pytest.approx(71.1)
    slots = {row["allocation_id"]: row for row in query("SELECT * FROM slots")}
    assert slots["alloc-2"]["resource_id"] == "taskexecutor-2" and slots["alloc-2"]["released_s"] == 70.0
    assert slots["alloc-3"]["resource_id"] == "taskexecutor-3"
    timeline = query("SELECT * FROM task_timeline WHERE vertex_name = 'Source: Numbers' AND subtask = 1 ORDER BY start_s")
    assert [(r["attempt"], r["state"]) for r in timeline] == [
        (0, "SCHEDULED"), (0, "DEPLOYING"), (0, "INITIALIZING"), (0, "RUNNING"), (0, "FAILED"),
        (1, "SCHEDULED"), (1, "DEPLOYING"), (1, "INITIALIZING"), (1, "RUNNING"), (1, "FINISHED")]
    assert timeline[3]["start_s"] == 0.1 and timeline[3]["end_s"] == 70.0  # deployed after two 50 ms requirement checks
    beats = {(r["sender"], r["target"]): r for r in query("SELECT * FROM heartbeats")}
    lost = beats[(next(s for s, t in beats if s.startswith("jobmaster")), "taskexecutor-2")]
    # requests every 10 s from 10 s (it connected at 0.1 s) until it was lost at 70 s; answered
    # until the kill at 30 s
    assert (lost["requests"], lost["responses"], lost["sender_timeouts"], lost["last_response_s"]) == (6, 2, 1, 20.0)
    assert lost["max_gap_ms"] == 10_000.0
    metrics = query("SELECT * FROM task_metrics WHERE NOT final")
    assert metrics and all(abs(m["idle_ms"] + m["busy_ms"] + m["back_pressured_ms"] - 1000) < 1e-6 for m in metrics)
    levels = {(r["vertex_name"], r["second"]): r["level"] for r in query("SELECT * FROM backpressure")}
    assert levels[("Source: Numbers", 50)] == "HIGH" and levels[("Source: Numbers", 10)] == "OK"
    marks = query("SELECT * FROM watermarks WHERE direction = 'output' AND vertex_name = 'Source: Numbers' "
                  "AND watermark < 1000000 ORDER BY t_s LIMIT 1")
    assert marks[0]["watermark"] == -1 and marks[0]["lag_event_time_ms"] == 1  # event time 0, watermark 0 - 1


def test_metrics_per_vertex(cli, fault_run):
    code, out, _ = cli("metrics", "last")
    assert code == 0
    assert "failures 1, restarts 1" in out.splitlines()[0]
    code, out, _ = cli("metrics", "last", "--json")
    report = json.loads(out)
    vertices = {v["vertex"]: v for v in report["vertices"]}
    assert vertices["Source: Numbers"]["failures"] == 1 and vertices["Source: Numbers"]["level"] == "LOW"
    # every record came out of the sources again after the restart; the counts are the tasks' own
    expected = query("SELECT sum(records_out) AS n FROM task_metrics WHERE vertex_name = 'Source: Numbers'")[0]["n"]
    assert vertices["Source: Numbers"]["records_out"] == expected > 1000


def test_events_play_back_in_order_with_filters(cli, fault_run):
    code, out, _ = cli("replay", "last", "--events", "--kind", "fault_injected", "--kind", "heartbeat_timed_out")
    lines = out.splitlines()
    assert [line.split()[2] for line in lines] == ["fault_injected", "heartbeat_timed_out", "heartbeat_timed_out"]
    assert lines[0].split()[0] == "30.000000" and lines[1].split()[0] == "70.000000"
    code, out, _ = cli("replay", "last", "--events", "--task", "taskexecutor-3", "--from", "70", "--to", "72s")
    lines = out.splitlines()
    assert lines and all(70 <= float(line.split()[0]) <= 72 and "taskexecutor-3" in line for line in lines)
    seqs = [int(line.split()[1]) for line in lines]
    assert seqs == sorted(seqs)
    code, _, err = cli("replay", "last", "--events", "--kind", "no_such_kind")
    assert code == 2 and "unknown event kind(s) no_such_kind" in err


def test_an_empty_task_filter_is_refused_not_read_as_every_task(shell):
    """``--task ''`` (an unset shell variable) names nothing: rill says so, it does not play the
    whole run back as if no filter were given, and the log stays as it was."""
    path = str(Path(__file__).resolve().parents[2] / "examples" / "wordcount.py")
    run_in_a_process(shell, path)
    code, everything, err = shell("replay", "last", "--events")
    assert code == 0 and everything, err
    for name in ("", "  "):
        code, out, err = shell("replay", "last", "--events", "--task", name)
        assert (code, out) == (2, "")
        assert err.strip().splitlines() == ["rill: error: --task names nothing: give a vertex, a TaskExecutor or "
                                                 "another name the events mention"]
    code, again, err = shell("replay", "last", "--events")
    assert code == 0 and again == everything, err


def test_export_writes_parquet(cli, fault_run, tmp_path):
    code, out, _ = cli("export", "last", "--parquet", str(tmp_path / "out"))
    assert code == 0
    run_id = out.split(":")[0]
    base = tmp_path / "out" / run_id
    count = duckdb.sql(f"SELECT count(*) FROM '{base}/events/fault_injected.parquet'").fetchall()[0][0]
    assert count == 1
    failures = duckdb.sql(f"SELECT fault_s, detected_s FROM '{base}/views/failures.parquet'").fetchall()
    assert failures == [(30.0, 70.0)]
    assert (base / "run.parquet").exists()


# -- re-execution -------------------------------------------------------------------------------


ENVIRONMENT = ("compared without the fields that describe the environment: checkpoint_completed.external_path, "
               "checkpoint_state_restored.external_path, connection_rejected.address, connection_rejected.peer, "
               "worker_started.pid, worker_started.host, worker_started.executor_id")

FAILING_JOB = """
import tempfile
from kernel.common import Configuration, Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource

config = Configuration()
config.set_string("execution.checkpointing.dir", "file://" + tempfile.mkdtemp(prefix="rill-test-"))
env = StreamExecutionEnvironment.get_execution_environment(config)
env.set_parallelism(2)
env.enable_checkpointing(1000)

def check(value):
    if value == (3, 1) and not done:
        done.append(1)
        raise ValueError(f"refused {value} at {object()}"[:20])
    return value

done = []
env.from_source(DataGeneratorSource(lambda i: (i % 7, 1), count=400, records_per_second=20),
                WatermarkStrategy.no_watermarks(), "Numbers") \\
    .map(check).key_by(lambda pair: pair[0], Types.INT()).reduce(lambda a, b: (a[0], a[1] + b[1])).print()
env.execute("failing once")
"""


def run_in_a_process(shell, path: str, *options: str) -> None:
    code, _, err = shell("run", "--quiet", "--clock", "simulated", *options, path, hash_seed=1)
    assert code == 0, err


def rerun_in_another_process(shell, *options: str) -> tuple[int, str, str]:
    """``rill replay last --rerun`` as a user runs it: a process of its own, whose hash seed (so
    its set and dict orders of strings, its object addresses, its pid) differs from the run's."""
    return shell("replay", "last", "--rerun", *options, hash_seed=2)


@pytest.mark.parametrize("example", ["window_wordcount.py", "wordcount.py"])
def test_rerun_of_every_example_reproduces_the_event_sequence(shell, example):
    path = str(Path(__file__).resolve().parents[2] / "examples" / example)
    run_in_a_process(shell, path, "--seed", "11")
    code, out, err = rerun_in_another_process(shell)
    assert code == 0, out + err
    assert "identical sequence" in out and out.splitlines()[-1] == ENVIRONMENT


def test_rerun_of_a_fault_run_reproduces_it(shell, tmp_path):
    path = job_file(tmp_path, "fault.py", FAULT_JOB)
    run_in_a_process(shell, path, "--set", "restart-strategy.type=fixed-delay", "--inject", "kill:target=taskexecutor-2,at=30s")
    code, out, err = rerun_in_another_process(shell, "--json")
    assert code == 0, out + err
    report = json.loads(out)
    assert report["identical"] and report["status"] == "finished"
    assert report["left_out"] == ["checkpoint_completed.external_path", "checkpoint_state_restored.external_path",
                                  "connection_rejected.address", "connection_rejected.peer",
                                  "worker_started.pid", "worker_started.host", "worker_started.executor_id"]


def test_a_run_restored_from_checkpoints_in_a_temporary_directory_reruns_identically(shell, tmp_path):
    """The job writes its checkpoints into a directory of its own each time it runs, and a user
    function fails once: the restore, the failure's traceback and the state's sizes repeat; only
    where the state went does not."""
    path = job_file(tmp_path, "failing.py", FAILING_JOB)
    run_in_a_process(shell, path, "--seed", "3", "--set", "restart-strategy.type=fixed-delay")
    code, out, err = shell("sql", "--format", "json", "SELECT count(*) AS n FROM rill.ev_checkpoint_state_restored")
    assert code == 0 and json.loads(out)[0]["n"] > 0, out + err
    code, out, err = rerun_in_another_process(shell)
    assert code == 0, out + err
    assert "identical sequence" in out
    os.remove(path)
    code, out, err = rerun_in_another_process(shell)
    assert code == 0, out + err
    assert "no longer exists: re-executing the copy recorded with the run" in out and "identical sequence" in out


def test_a_nondeterministic_job_is_caught_at_its_first_divergence(cli, tmp_path):
    path = job_file(tmp_path, "random_job.py", """
        import random
        from kernel.common import Types
        from kernel.datastream import StreamExecutionEnvironment
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1, 2, 3], Types.INT()).map(lambda x: x + random.random()).print()
        env.execute("random")
    """)
    assert cli("run", "--clock", "simulated", path)[0] == 0
    recorded = last_run().run_id
    code, out, _ = cli("replay", recorded, "--rerun")
    assert code == 1
    assert f"diverged from run {recorded} at event" in out
    expected = [line for line in out.splitlines() if "expected:" in line][0]
    found = [line for line in out.splitlines() if "found:" in line][0]
    assert "sink_output_printed" in expected and "sink_output_printed" in found and expected[12:] != found[12:]


def test_what_if_aligned_watermarks_show_a_smaller_skew(cli, tmp_path):
    path = job_file(tmp_path, "skew.py", SKEW_JOB)
    assert cli("run", "--clock", "simulated", path)[0] == 0
    code, out, err = cli("replay", "last", "--rerun", "--set", "plugins.watermarking=aligned", "--set",
                         "watermarking.aligned.max-drift=1 s", "--json")
    assert code == 0, err
    figures = {name: (a, b) for name, a, b in json.loads(out)["comparison"]["figures"]}
    recorded, aligned = figures["max_source_watermark_skew_ms"]
    assert recorded > 10_000 and aligned <= 1_000
    assert json.loads(out)["comparison"]["output"]["only_recorded"] == 0  # the same lines, later


def test_what_if_a_shorter_heartbeat_timeout_detects_earlier(cli, fault_run):
    code, out, err = cli("replay", "last", "--rerun", "--set", "heartbeat.timeout=20 s", "--json")
    assert code == 0, err
    figures = {name: (a, b) for name, a, b in json.loads(out)["comparison"]["figures"]}
    assert figures["detection_latency_s"] == ([40.0], [10.0])
    code, out, _ = cli("replay", "last", "--rerun", "--set", "heartbeat.timeout=20 s")
    assert "detection_latency_s" in out and "output: 1000 lines recorded, 1000 re-executed; identical" in out


def test_a_realtime_run_is_re_executed_under_the_simulated_clock(cli, tmp_path):
    path = job_file(tmp_path, "windows.py", """
        from kernel.common import Duration, Time, Types, WatermarkStrategy
        from kernel.datastream import StreamExecutionEnvironment
        from kernel.datastream.window import TumblingEventTimeWindows
        env = StreamExecutionEnvironment.get_execution_environment()
        data = [("a", t) for t in range(0, 200, 7)] + [("b", t) for t in range(0, 200, 11)]
        env.from_collection(data).assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, ts: v[1])) \\
            .key_by(lambda v: v[0], Types.STRING()).window(TumblingEventTimeWindows.of(Time.milliseconds(50))) \\
            .reduce(lambda x, y: (x[0], max(x[1], y[1]))).print()
        env.execute("windows")
    """)
    assert cli("run", path)[0] == 0
    code, out, err = cli("replay", "last", "--rerun")
    assert code == 0, err
    assert "ran under the realtime clock: the re-execution uses the simulated clock" in out
    assert "timing is not reproduced" in out and "identical" in out.splitlines()[-1]


def test_inputs_that_changed_are_read_from_the_recording(cli, tmp_path):
    data = tmp_path / "lines.txt"
    data.write_text("to be\nor not\n")
    path = job_file(tmp_path, "files.py", f"""
        from kernel.datastream import StreamExecutionEnvironment
        from kernel.datastream.connectors.file_system import FileSource, StreamFormat
        from kernel.common import WatermarkStrategy
        env = StreamExecutionEnvironment.get_execution_environment()
        source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), {str(data)!r}).build()
        env.from_source(source, WatermarkStrategy.no_watermarks(), "Lines").map(lambda s: s.upper()).print()
        env.execute("files")
    """)
    assert cli("run", "--clock", "simulated", path)[0] == 0
    data.write_text("something else entirely\n")
    code, out, err = cli("replay", "last", "--rerun")
    assert code == 0, err
    assert f"input {data} changed since the recording: reading the recorded copy" in out
    assert "identical sequence" in out


# -- bad input ----------------------------------------------------------------------------------


def test_unknown_runs_and_conflicting_options_are_clear_errors(cli, fault_run):
    code, _, err = cli("replay", "nope", "--at", "1")
    assert code == 2 and "no recorded run 'nope' (recent runs: " in err
    code, _, err = cli("replay", "last")
    assert code == 2 and "give exactly one of --at T, --events, --rerun" in err
    code, _, err = cli("metrics", "zzz")
    assert code == 2 and "no recorded run 'zzz'" in err
    for option, value in (("--at", "-3s"), ("--at", "-0.5"), ("--from", "-1"), ("--to", "-1 min")):
        extra = () if option == "--at" else ("--events",)
        code, out, err = cli("replay", "last", *extra, f"{option}={value}")
        assert (code, out, err) == (2, "", f"rill: error: {option} {value!r}: must not be negative "
                                           "(a time after the run's start)\n")


def test_a_changed_job_file_is_refused_unless_allowed(cli, fault_run):
    with open(fault_run, "a") as handle:
        handle.write("# edited\n")
    code, _, err = cli("replay", "last", "--rerun")
    assert code == 2 and "changed since run" in err and "--allow-changed" in err
    code, out, err = cli("replay", "last", "--rerun", "--allow-changed")
    assert code == 0, err
    assert "re-executing the current version" in out


def test_a_deleted_job_file_reruns_from_its_recorded_copy(shell, tmp_path):
    path = job_file(tmp_path, "fault.py", FAULT_JOB)
    run_in_a_process(shell, path, "--set", "restart-strategy.type=fixed-delay", "--inject", "kill:target=taskexecutor-2,at=30s")
    os.remove(path)
    code, out, err = rerun_in_another_process(shell)
    assert code == 0, out + err
    assert "no longer exists: re-executing the copy recorded with the run" in out and "identical sequence" in out


def test_a_corrupt_log_is_a_clear_error(cli, tmp_path):
    log = tmp_path / ".rill" / "rill.duckdb"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"this is not a database" * 100)
    code, _, err = cli("metrics", "last")
    assert (code, err) == (1, f"rill: error: event log {log} is damaged (not a DuckDB file); rill leaves it as it is: "
                              "`rill log check` lists the intact runs, `rill log salvage OUT.duckdb` copies them "
                              "into a new file\n")
