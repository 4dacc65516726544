"""Plugin ``backpressure.sampling`` (seed 000, before Flink 1.13): the JobMaster has TaskExecutors
sample their tasks, the results are events with a view, and the run's summary, ``rill metrics``,
``rill report`` and what-if re-executions judge back pressure by them — and where that judgement
and the mailbox's timing disagree: sampling misses stalls shorter than its delay and stalls
between its requests.

Every run is simulated, so each sample's instant is exact: a request starts when the vertex's
subtasks run (clock 0 here) and takes its samples 50 ms apart, the answers arriving with the
100th sample at 4.95 s."""

from __future__ import annotations

import json

import msgspec
import pytest

from kernel import clock
from kernel.runtime.backpressure import back_pressure_level
from kernel.clock import NS_PER_MS
from kernel.runtime.cluster_events import TaskMetricsSampled
from kernel.common import Types, WatermarkStrategy
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.lifecycle.summary import render
from plugins.backpressure.events import BackPressureSampled
from kernel.lifecycle.session import Session
from replay.report.data import report_data
from replay.state import render_state, state_at
from replay.store import find_run, read_log
from tests.runtime import run_job
from tests.replay.test_replay import FAULT_JOB, job_file

#: one record per network buffer, one credit per input channel and none floating, one buffer per
#: output subpartition: a producer is back pressured as soon as its consumer holds one record
#: unprocessed and another arrives
SMALL_NETWORK = ("rill.network.record-size=32768", "taskmanager.network.memory.buffers-per-channel=1",
                 "taskmanager.network.memory.floating-buffers-per-gate=0",
                 "taskmanager.network.memory.max-buffers-per-channel=1")
SAMPLING = "plugins.backpressure=sampling"

BURSTS_JOB = """
from kernel import clock
from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource


def stall(value):
    if value % 10 == 0:
        clock.sleep(0.04)


env = StreamExecutionEnvironment.get_execution_environment()
env.from_source(DataGeneratorSource(lambda i: i, count=1000, records_per_second=100, type_info=Types.LONG()),
                WatermarkStrategy.no_watermarks(), "Numbers").rebalance().add_sink(stall).name("Stalling Sink")
env.execute("bursts")
"""


def bursts(env):
    """The source emits a record every 10 ms; the sink takes 40 ms for every tenth record.

    Record 10k (at 100k ms) keeps the sink busy until 100k + 40; record 10k+1 (+10 ms) takes the
    channel's only credit; record 10k+2 (+20 ms) finds none, the source's subpartition fills and
    the source is back pressured until the sink takes record 10k+1 at +40: [20, 40) ms of every
    100 ms, 200 ms a second, 2 s over the run's 9.99 s."""
    def stall(value):
        if value % 10 == 0:
            clock.sleep(0.04)

    env.from_source(DataGeneratorSource(lambda i: i, count=1000, records_per_second=100, type_info=Types.LONG()),
                    WatermarkStrategy.no_watermarks(), "Numbers").rebalance().add_sink(stall).name("Stalling Sink")
    env.execute("bursts")


def stall_once(env):
    """The sink stalls 10 s on the record of 15 s; 3,000 records at 100/s. The source is back
    pressured from 15.02 s (two records later) until 25 s: 9.98 s; then it catches up one second
    (its rate limiter stores no more, as Flink's Guava limiter) and goes on at 100/s: 38.95 s in all."""
    def stall(value):
        if value == 1500:
            clock.sleep(10)

    env.from_source(DataGeneratorSource(lambda i: i, count=3000, records_per_second=100, type_info=Types.LONG()),
                    WatermarkStrategy.no_watermarks(), "Numbers").rebalance().add_sink(stall).name("Stalling Sink")
    env.execute("one stall")


def results(job) -> list[tuple]:
    """(vertex, request, started ms, answered ms, samples, back pressured samples, ratio) per event."""
    return [(e.vertex_name, e.request_id, e.started // NS_PER_MS, e.time // NS_PER_MS, e.samples,
             e.back_pressured_samples, e.ratio) for e in job.events(BackPressureSampled)]


def source_metrics(job) -> list[tuple]:
    return [(e.time // NS_PER_MS, e.back_pressured_ms) for e in job.events(TaskMetricsSampled)
            if e.vertex_name == "Source: Numbers" and not e.final]


def vertices(job) -> dict:
    return {v.name: v for v in job.outcome.vertices}


# -- where sampling and timing disagree -----------------------------------------------------------


def test_bursts_shorter_than_the_delay_are_timed_but_never_sampled():
    job = run_job(bursts, *SMALL_NETWORK, SAMPLING, "web.backpressure.refresh-interval=0")
    assert job.outcome.status == "FINISHED" and job.outcome.clock_seconds == 9.99
    # the mailbox's timer: 200 ms back pressured in every second
    assert source_metrics(job) == [(1000 * second, 200.0) for second in range(1, 10)]
    # requests back to back (refresh-interval 0) from 0 s, samples at multiples of 50 ms: at 0 and
    # 50 ms of each 100 ms cycle, never in [20, 40); the request begun at 9.9 s ends with the job
    assert results(job) == [
        ("Source: Numbers", 0, 0, 4950, 100, 0, 0.0), ("Sink: Stalling Sink", 1, 0, 4950, 100, 0, 0.0),
        ("Source: Numbers", 2, 4950, 9900, 100, 0, 0.0), ("Sink: Stalling Sink", 3, 4950, 9900, 100, 0, 0.0)]
    source = vertices(job)["Source: Numbers"]
    assert source.back_pressured_ratio == 2000 / 9990 and back_pressure_level(source.back_pressured_ratio) == "LOW"
    assert (source.measure, source.measured_ratio, source.level) == ("sampling", 0.0, "OK")
    summary = render(job.outcome).splitlines()
    assert summary[2].endswith("busy  back pressure (by sampling)")
    assert summary[3].endswith("  0%  OK 0% (timed 20%)") and summary[4].endswith(" 40%  OK 0% (timed 0%)")


def test_a_delay_off_the_bursts_rhythm_samples_them_in_proportion():
    # 25 ms apart from 0, 2.475, 4.95, 7.425 s: phases 0, 25, 50, 75 (or 75, 0, 25, 50) of the
    # 100 ms cycle; 25 falls in [20, 40): 25 of every 100 samples
    job = run_job(bursts, *SMALL_NETWORK, SAMPLING, "web.backpressure.refresh-interval=0",
                  "web.backpressure.delay-between-samples=25 ms")
    sources = [r for r in results(job) if r[0] == "Source: Numbers"]
    assert sources == [("Source: Numbers", request, started, started + 2475, 100, 25, 0.25)
                       for request, started in ((0, 0), (2, 2475), (4, 4950), (6, 7425))]
    assert vertices(job)["Source: Numbers"].level == "LOW"


def test_a_stall_between_two_requests_is_missed():
    job = run_job(stall_once, *SMALL_NETWORK, SAMPLING)
    assert job.outcome.clock_seconds == 38.95
    metrics = dict(source_metrics(job))
    assert metrics[16_000] == 980.0 and all(metrics[1000 * s] == 1000.0 for s in range(17, 26))
    assert sum(metrics.values()) == 9980.0
    # one request (0 to 4.95 s); the next is due refresh-interval (60 s) after it, the job is over
    assert results(job) == [("Source: Numbers", 0, 0, 4950, 100, 0, 0.0),
                            ("Sink: Stalling Sink", 1, 0, 4950, 100, 0, 0.0)]
    source = vertices(job)["Source: Numbers"]
    assert source.back_pressured_ratio == 9980 / 38950 and back_pressure_level(source.back_pressured_ratio) == "LOW"
    assert (source.measured_ratio, source.level) == (0.0, "OK")
    # read back: in the stall, the backpressure view (timed) says HIGH; the report and the state
    # at an instant show the level of the latest request by then, as Flink's UI did
    with read_log(Session.open()) as con:
        run = find_run(con, "last")
        timed = dict(con.execute("SELECT second, level FROM backpressure WHERE run_id = $run AND vertex_name = "
                                 "'Source: Numbers'", {"run": run.run_id}).fetchall())
        report = report_data(con, run)
        state = state_at(con, run, 20.5)
    assert [second for second, level in sorted(timed.items()) if level != "OK"] == list(range(15, 25))
    assert all(timed[second] == "HIGH" for second in range(15, 25))
    vertex_id = next(v["vertex_id"] for v in report["vertices"] if v["name"] == "Source: Numbers")
    sampled = {second: row["level"] for second, row in report["instants"][vertex_id].items()}
    assert sampled == {**dict.fromkeys(range(4), None), **dict.fromkeys(range(4, 39), "OK")}
    assert state["back_pressure_measure"] == "sampling"
    assert state["back_pressure"]["Source: Numbers"] == {"back_pressured_ms": 1000.0, "worst_subtask": 0, "level": "OK"}
    lines = render_state(state).splitlines()
    at = lines.index("Back pressure (levels by sampling)")
    assert f"  {'Source: Numbers':<50} OK    1000 ms/s (worst subtask 0)" in lines[at + 1:at + 3]


def test_sampling_leaves_the_run_as_it_is():
    """The samples only read the partitions: every task metric is the one the default run records."""
    def figures(job) -> list[dict]:
        return [{k: v for k, v in msgspec.structs.asdict(e).items() if k != "seq"} for e in job.events(TaskMetricsSampled)]

    default, sampled = run_job(bursts, *SMALL_NETWORK), run_job(bursts, *SMALL_NETWORK, SAMPLING)
    assert figures(default) == figures(sampled) and len(figures(default)) == 20  # 9 per task and its final one
    assert default.events(BackPressureSampled) == []
    source = vertices(default)["Source: Numbers"]
    assert (source.measure, source.measured_ratio, source.level) == ("mailbox-timing", None, "LOW")
    assert render(default.outcome).splitlines()[3].endswith("  0%  LOW 20%")


# -- requests: partial answers, discarded requests -------------------------------------------------


def test_a_task_ending_during_a_request_answers_with_the_samples_it_took():
    def build(env):
        def slow_end(value):
            if value == 99:
                clock.sleep(2)

        env.from_source(DataGeneratorSource(lambda i: i, count=100, records_per_second=100, type_info=Types.LONG()),
                        WatermarkStrategy.no_watermarks(), "Numbers").rebalance().add_sink(slow_end).name("Sink")
        env.execute("ending")

    job = run_job(build, SAMPLING)
    # the source finishes at 0.99 s: samples at 0, 50, ..., 950 ms and one at 1 s, when it no
    # longer runs (not back pressured); the sink's request ends after the job, unrecorded
    assert results(job) == [("Source: Numbers", 0, 0, 1000, 21, 0, 0.0)]
    assert vertices(job)["Sink: Sink"].level == "-" and vertices(job)["Source: Numbers"].level == "OK"
    assert render(job.outcome).splitlines()[4].endswith(" 67%  - (not measured; timed 0%)")


def test_a_request_to_a_lost_task_executor_is_discarded_and_the_restarted_tasks_are_sampled(cli, tmp_path):
    path = job_file(tmp_path, "fault.py", FAULT_JOB)
    code, _, err = cli("run", "--clock", "simulated", "--quiet", "--set", "restart-strategy.type=fixed-delay",
                       "--inject", "kill:target=taskexecutor-2,at=30s", "--set", SAMPLING, path)
    assert code == 0, err
    code, out, err = cli("sql", "--format", "json", "SELECT request_id, vertex_name, subtask, attempt, started_s, t_s, "
                         "samples FROM backpressure_sampling ORDER BY request_id, subtask")
    rows = [tuple(row.values()) for row in json.loads(out)]
    source, count = "Source: Numbers", "Count -> Sink: Print to Std. Out"
    # tasks run from 0.1 s; the requests of 65.05 s reach the killed taskexecutor-2, whose tasks
    # the JobMaster takes for running until it loses it at 70 s: no answer within 10 s + 100 x
    # 50 ms, so at 80.05 s both requests are discarded and the restarted attempts (running since
    # 71.1 s) are sampled at once; then again 60 s after that request ended
    expected = []
    for first, started, attempt in ((0, 0.1, 0), (4, 80.05, 1), (6, 145.0, 1)):
        for request, vertex in ((first, source), (first + 1, count)):
            expected += [(request, vertex, subtask, attempt, started, round(started + 4.95, 2), 100) for subtask in (0, 1)]
    assert [(*row[:5], round(row[5], 2), row[6]) for row in rows] == expected


# -- readers judge by the run's measure ------------------------------------------------------------


def test_metrics_and_the_report_of_a_sampled_run_judge_by_its_samples(cli, tmp_path):
    path = job_file(tmp_path, "bursts.py", BURSTS_JOB)
    sets = [arg for item in (*SMALL_NETWORK, "slotmanager.requirement-check.delay=0") for arg in ("--set", item)]
    assert cli("run", "--clock", "simulated", "--quiet", *sets, path)[0] == 0
    assert cli("run", "--clock", "simulated", "--quiet", *sets, "--set", SAMPLING, path)[0] == 0
    code, out, err = cli("metrics", "last")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1] == "back pressure judged by sampling"
    header = lines[2].split()
    assert header[:header.index("level") + 1] == ["vertex", "p", "busy", "%", "idle", "%", "back", "pressured", "%",
                                                  "sampled", "%", "level"]
    assert lines[3].split()[2:9] == ["1", "0.0", "80.0", "20.0", "0.0", "OK", "0"]
    timed, sampled = (json.loads(cli("metrics", ref, "--json")[1]) for ref in (last_but_one(), "last"))
    assert (timed["back_pressure_measure"], sampled["back_pressure_measure"]) == ("mailbox-timing", "sampling")
    assert [(v["vertex"], v["level"], v.get("sampled_pct")) for v in timed["vertices"]] == [
        ("Source: Numbers", "LOW", None), ("Sink: Stalling Sink", "OK", None)]
    assert [(v["vertex"], v["level"], v["sampled_pct"], v["back_pressured_pct"]) for v in sampled["vertices"]] == [
        ("Source: Numbers", "OK", 0.0, 20.0), ("Sink: Stalling Sink", "OK", 0.0, 0.0)]
    with read_log(Session.open()) as con:
        report = report_data(con, find_run(con, "last"))
    assert report["run"]["back_pressure_measure"] == "sampling"
    source = next(v for v in report["vertices"] if v["name"] == "Source: Numbers")
    assert source["metrics"]["level"] == "OK"
    # each second: the level of the latest request ended by its end (the first ends at 4.95 s)
    levels = {second: row["level"] for second, row in report["instants"][source["vertex_id"]].items()}
    assert levels == {**dict.fromkeys(range(4), None), **dict.fromkeys(range(4, 10), "OK")}


def last_but_one() -> str:
    with read_log(Session.open()) as con:
        return con.execute("SELECT run_id FROM rill.runs ORDER BY started_at DESC LIMIT 1 OFFSET 1").fetchone()[0]


def test_a_what_if_shows_both_judgements_of_the_same_run(cli, tmp_path):
    path = job_file(tmp_path, "bursts.py", BURSTS_JOB)
    sets = [arg for item in (*SMALL_NETWORK, "slotmanager.requirement-check.delay=0") for arg in ("--set", item)]
    assert cli("run", "--clock", "simulated", "--quiet", *sets, path)[0] == 0
    code, out, err = cli("replay", "last", "--rerun", "--set", SAMPLING, "--json")
    assert code == 0, err
    recorded = json.loads(out)["recorded"]
    figures = {name: (a, b) for name, a, b in json.loads(out)["comparison"]["figures"]}
    assert figures["back_pressure_measure"] == ("mailbox-timing", "sampling")
    assert figures["Source: Numbers: back pressured %"] == (20.0, 20.0)  # the same run
    assert figures["Source: Numbers: sampled %"] == (None, 0.0)
    assert figures["Source: Numbers: back-pressure level"] == ("LOW", "OK")
    assert figures["Sink: Stalling Sink: back-pressure level"] == ("OK", "OK")
    code, out, err = cli("replay", recorded, "--rerun", "--set", SAMPLING)
    rows = {line.rsplit(None, 2)[0].strip(): line.split()[-2:] for line in out.splitlines()[2:-1]}
    assert rows["Source: Numbers: back-pressure level"] == ["LOW", "OK"]
    assert rows["back_pressure_measure"] == ["mailbox-timing", "sampling"]


def test_a_run_whose_measure_is_not_installed_is_judged_by_timing(cli, tmp_path):
    path = job_file(tmp_path, "bursts.py", BURSTS_JOB)
    sets = [arg for item in (*SMALL_NETWORK, "slotmanager.requirement-check.delay=0") for arg in ("--set", item)]
    assert cli("run", "--clock", "simulated", "--quiet", *sets, "--set", SAMPLING, path)[0] == 0
    code, out, err = cli("metrics", "last", "--set", "plugins.disabled=backpressure.sampling")
    assert code == 0, err
    assert out.splitlines()[1] == ("note: the run measured back pressure by sampling, whose view backpressure_sampling "
                                   "is not there (its plugin is not installed): judged by mailbox timing")
    assert "sampled %" not in out and out.splitlines()[3].split()[6] == "LOW"


# -- configuration ------------------------------------------------------------------------------------


def test_the_sampling_keys_are_valid_whichever_measure_runs(session_factory):
    session = session_factory("web.backpressure.num-samples=5", "web.backpressure.delay-between-samples=1 s",
                              "web.backpressure.refresh-interval=2 min")
    from plugins.backpressure.options import SamplingOptions

    options = session.config.section(SamplingOptions)
    assert (options.num_samples, options.delay_between_samples, options.refresh_interval) == (5, 1000, 120_000)
    assert session.selected_plugins()["backpressure"] == "mailbox-timing"


@pytest.mark.parametrize("key, value", [("web.backpressure.num-samples", "0"),
                                        ("web.backpressure.delay-between-samples", "-1")])
def test_a_bad_sampling_key_is_one_clear_line(cli, tmp_path, key, value):
    path = job_file(tmp_path, "bursts.py", BURSTS_JOB)
    code, out, err = cli("run", "--set", SAMPLING, "--set", f"{key}={value}", path)
    assert (code, out) == (2, "") and err.startswith(f"rill: error: config key '{key}' (--set): ") and \
        len(err.splitlines()) == 1, err
