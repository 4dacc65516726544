"""Restart back-off strategies, failover strategies, and exactly-once output of restarted
bounded jobs; injected faults and their events."""

from __future__ import annotations

import random
import re
from datetime import datetime

import pytest

from kernel.runtime.cluster_events import ExecutionStateChanged, FaultInjected, TaskFailureHandled, TasksRestarted
from kernel.common import Types, WatermarkStrategy
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.errors import ConfigError
from kernel.runtime.graph.execution import ExecutionState
from plugins.failover.restart import (
    ExponentialDelayRestartBackoffTimeStrategy as ExponentialDelay,
    FailureRateRestartBackoffTimeStrategy as FailureRate,
    FixedDelayRestartBackoffTimeStrategy as FixedDelay,
    NoRestartBackoffTimeStrategy as NoRestart,
)
from plugins.failover.strategies import (
    RestartAllFailoverStrategy as RestartAll,
    RestartPipelinedRegionFailoverStrategy as RestartPipelinedRegion,
)
from tests.graphs import compile_job, execution_graph
from tests.runtime import run_job

S = 1_000_000_000


# -- the strategies themselves ------------------------------------------------------------------


def test_no_restart():
    strategy = NoRestart()
    assert not strategy.can_restart()
    assert strategy.notify_failure(0) and not strategy.can_restart()
    assert str(strategy) == "NoRestartBackoffTimeStrategy"


def test_fixed_delay_allows_exactly_its_attempts():
    strategy = FixedDelay(attempts=2, delay_ms=3_000)
    verdicts = []
    for now in (0, 10, 20):
        strategy.notify_failure(now)
        verdicts.append((strategy.can_restart(), strategy.backoff_time_ms(now)))
    assert verdicts == [(True, 3_000), (True, 3_000), (False, 3_000)]
    assert str(strategy) == "FixedDelayRestartBackoffTimeStrategy(maxNumberRestartAttempts=2, backoffTimeMS=3000)"


def test_failure_rate_as_flinks_tests():
    # testManyFailuresWithinRate: 1 failure per 1 ms interval, failures 2 ms apart: always restart
    strategy = FailureRate(max_failures=1, interval_ms=1, delay_ms=0)
    for now in (0, 2, 4):
        strategy.notify_failure(now)
        assert strategy.can_restart()
    # testFailuresExceedingRate: 3 per 10 s; the fourth within the interval fails
    strategy = FailureRate(max_failures=3, interval_ms=10_000, delay_ms=0)
    for now in (0, 1, 2):
        strategy.notify_failure(now)
        assert strategy.can_restart()
    strategy.notify_failure(3)
    assert not strategy.can_restart()
    strategy.notify_failure(20_000)  # the oldest of the last four is 1 ms: 19,999 > 10,000
    assert strategy.can_restart()


def test_exponential_delay_grows_caps_merges_and_resets():
    strategy = ExponentialDelay(initial_ms=1_000, max_ms=5_000, multiplier=2.0, reset_threshold_ms=60_000,
                                jitter=0.0, attempts=10, rng=random.Random(0))
    delays = []
    now = 0
    for _ in range(5):
        assert strategy.notify_failure(now)
        delays.append(strategy.backoff_time_ms(now))
        now += delays[-1] + 1
    assert delays == [1_000, 2_000, 4_000, 5_000, 5_000]
    # a failure while the restart is pending is merged into it
    assert strategy.notify_failure(now) and not strategy.notify_failure(now + 10)
    # long after the last restart, the back-off starts over
    later = now + 5_000 + 60_000
    strategy.notify_failure(later)
    assert strategy.backoff_time_ms(later) == 1_000


def test_exponential_delay_jitter_is_seeded_and_bounded():
    def delays(seed):
        strategy = ExponentialDelay(1_000, 60_000, 1.5, 3_600_000, 0.1, 100, random.Random(seed))
        out, now = [], 0
        for _ in range(6):
            strategy.notify_failure(now)
            out.append(strategy.backoff_time_ms(now))
            now += out[-1] + 1
        return out

    assert delays(7) == delays(7) and delays(7) != delays(8)
    for n, delay in enumerate(delays(7)):
        base = int(1_000 * 1.5 ** n)
        assert max(1_000, base - int(base * 0.1)) <= delay <= base + int(base * 0.1)


def test_unknown_restart_strategy_is_a_config_error(session_factory):
    with pytest.raises(ConfigError, match="unknown strategy 'sometimes'"):
        session_factory("restart-strategy.type=sometimes")


def graph_of(build, *sets: str):
    from kernel.lifecycle.session import Session

    session = Session.open(sets=sets, environ={})
    return execution_graph(compile_job(build, session=session), session)


def test_region_failover_in_a_batch_job_restarts_consumers_and_missing_producers():
    def build(env):
        env.from_collection([1, 2, 3]).map(lambda x: x).name("A").rebalance() \
            .map(lambda x: x).name("B").rebalance().map(lambda x: x).name("C").print()
        env.execute()

    graph = graph_of(build, "execution.runtime-mode=BATCH", "parallelism.default=2")
    names = {ev.id: f"{ev.job_vertex.name}/{ev.subtask}" for ev in graph.vertices()}
    strategy = RestartPipelinedRegion(graph)
    b0 = next(ev for ev in graph.vertices() if ev.job_vertex.name == "B")
    # BATCH: blocking edges, every subtask its own region. B/0's region and the regions
    # consuming its result (every C); its producers will still deliver (not started yet)
    assert sorted(names[v] for v in strategy.tasks_to_restart(b0)) == [
        "B/0", "C -> Sink: Print to Std. Out/0", "C -> Sink: Print to Std. Out/1"]
    # a producer whose attempt failed has no output any more: it restarts too, and so does
    # everything consuming it (B/1) and, in turn, their consumers
    a0 = next(ev for ev in graph.vertices() if ev.job_vertex.name == "A" and ev.subtask == 0)
    a0.current.state = ExecutionState.FAILED
    assert sorted(names[v] for v in strategy.tasks_to_restart(b0)) == [
        "A/0", "B/0", "B/1", "C -> Sink: Print to Std. Out/0", "C -> Sink: Print to Std. Out/1"]
    assert len(RestartAll(graph).tasks_to_restart(b0)) == len(graph.vertices())


# -- in a running job ---------------------------------------------------------------------------


def numbers_job(results: list, records: int = 100, rate: int = 20, parallelism: int = 1):
    def build(env):
        env.set_parallelism(parallelism)
        env.from_source(DataGeneratorSource(lambda i: i, count=records, records_per_second=rate, type_info=Types.LONG()),
                        WatermarkStrategy.no_watermarks(), "Numbers") \
            .map(lambda x: x * 10, Types.LONG()).name("Times Ten").add_sink(results.append).name("Results")
        env.execute("numbers")

    return build


def handled(job) -> list[tuple[float, bool, float, int]]:
    return [(e.time / S, e.restart, e.delay_ms, e.restart_number) for e in job.events(TaskFailureHandled)]


def test_without_a_restart_strategy_a_failure_fails_the_job():
    results: list = []
    job = run_job(numbers_job(results), faults=["raise:operator=Times Ten,record=5"])
    assert job.outcome.status == "FAILED"
    failure = job.outcome.failure
    assert failure.startswith("Source: Numbers -> Times Ten -> Sink: Results (1/1) failed in operator 'Times Ten': "
                              "InjectedFault: injected fault #1: Times Ten raised on record 5")
    assert failure.splitlines()[-1] == "JobException: Recovery is suppressed by NoRestartBackoffTimeStrategy"
    [event] = job.events(TaskFailureHandled)
    assert not event.restart and event.reason == "JobException: Recovery is suppressed by NoRestartBackoffTimeStrategy"
    assert results == [0, 10, 20, 30]  # no restarts possible: the sink writes as it goes, as in Flink


def test_fixed_delay_restarts_exactly_its_attempts_after_its_delay():
    results: list = []
    job = run_job(numbers_job(results), "restart-strategy.type=fixed-delay", "restart-strategy.fixed-delay.attempts=2",
                  "restart-strategy.fixed-delay.delay=3 s", faults=["raise:operator=Times Ten,record=5,times=3"])
    assert job.outcome.status == "FAILED"
    # record 5 is read at 200 ms of each attempt (20 records/s), and every attempt starts 3 s
    # after the previous failure
    assert handled(job) == [(0.2, True, 3000.0, 1), (3.4, True, 3000.0, 2), (6.6, False, 0.0, 0)]
    assert [e.time / S for e in job.events(TasksRestarted)] == [3.2, 6.4]
    assert job.outcome.failure.splitlines()[-1] == (
        "JobException: Recovery is suppressed by FixedDelayRestartBackoffTimeStrategy(maxNumberRestartAttempts=2, "
        "backoffTimeMS=3000)")
    attempts = sorted({e.attempt for e in job.events(ExecutionStateChanged)})
    assert attempts == [0, 1, 2]


def test_a_restarted_bounded_job_outputs_exactly_what_a_fault_free_run_does():
    expected: list = []
    run_job(numbers_job(expected, parallelism=2))
    results: list = []
    job = run_job(numbers_job(results, parallelism=2), "restart-strategy.type=fixed-delay",
                  faults=["raise:operator=Times Ten,record=30,subtask=1"])
    assert job.outcome.status == "FINISHED"
    assert len(job.events(TasksRestarted)) == 1
    assert sorted(results) == sorted(expected) == [x * 10 for x in range(100)]


def test_failure_rate_tolerates_spread_failures_but_not_a_burst():
    results: list = []
    spread = run_job(numbers_job(results), "restart-strategy.type=failure-rate",
                     "restart-strategy.failure-rate.max-failures-per-interval=1",
                     "restart-strategy.failure-rate.failure-rate-interval=2 s", "restart-strategy.failure-rate.delay=3 s",
                     faults=["raise:operator=Times Ten,record=5,times=3"])
    # failures 3.2 s apart with a 2 s interval: each restarts
    assert [h[1] for h in handled(spread)] == [True, True, True] and spread.outcome.status == "FINISHED"
    burst = run_job(numbers_job([]), "restart-strategy.type=failure-rate",
                    "restart-strategy.failure-rate.max-failures-per-interval=2",
                    "restart-strategy.failure-rate.failure-rate-interval=1 min", "restart-strategy.failure-rate.delay=1 s",
                    faults=["raise:operator=Times Ten,record=5,times=3"])
    assert [h[1] for h in handled(burst)] == [True, True, False] and burst.outcome.status == "FAILED"


def test_exponential_delay_backs_off():
    job = run_job(numbers_job([]), "restart-strategy.type=exponential-delay",
                  "restart-strategy.exponential-delay.initial-backoff=1 s",
                  "restart-strategy.exponential-delay.backoff-multiplier=2",
                  "restart-strategy.exponential-delay.max-backoff=3 s",
                  "restart-strategy.exponential-delay.jitter-factor=0",
                  faults=["raise:operator=Times Ten,record=5,times=4"])
    assert job.outcome.status == "FINISHED"
    assert [h[2] for h in handled(job)] == [1000.0, 2000.0, 3000.0, 3000.0]


def two_pipelines(env):
    env.set_parallelism(2)
    for name in ("Left", "Right"):
        env.from_source(DataGeneratorSource(lambda i: i, count=40, records_per_second=20, type_info=Types.LONG()),
                        WatermarkStrategy.no_watermarks(), name) \
            .rebalance().map(lambda x: x, Types.LONG()).name(f"{name} Map").add_sink(lambda v: None)
    env.execute("two pipelines")


@pytest.mark.parametrize("strategy, restarted", [("region", 4), ("full", 8)])
def test_region_failover_restarts_only_the_failed_region(strategy, restarted):
    job = run_job(two_pipelines, "restart-strategy.type=fixed-delay",
                  f"jobmanager.execution.failover-strategy={strategy}", faults=["raise:operator=Left Map,record=3"])
    assert job.outcome.status == "FINISHED"
    [event] = job.events(TaskFailureHandled)
    assert event.vertices_to_restart == restarted
    right_attempts = {e.attempt for e in job.events(ExecutionStateChanged) if e.vertex_name.startswith("Right")}
    assert right_attempts == ({0} if strategy == "region" else {0, 1})


def test_print_and_file_sinks_commit_only_the_final_attempt(cli, tmp_path):
    job = tmp_path / "job.py"
    out = tmp_path / "out"
    job.write_text(f'''
from kernel.common import Types, WatermarkStrategy, Encoder
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.connectors.file_system import FileSink

env = StreamExecutionEnvironment.get_execution_environment()
numbers = env.from_source(DataGeneratorSource(lambda i: i, count=50, records_per_second=20, type_info=Types.LONG()),
                          WatermarkStrategy.no_watermarks(), "Numbers").map(lambda x: x + 1, Types.LONG()).name("Plus")
numbers.print()
numbers.sink_to(FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder()).build())
env.execute("sinks")
''')
    code, stdout, stderr = cli("run", "--clock", "simulated", "--set", "restart-strategy.type=fixed-delay",
                               "--inject", "raise:operator=Plus,record=20", str(job))
    assert code == 0, stderr
    assert stdout.splitlines() == [str(x) for x in range(1, 51)]  # no duplicates of the failed attempt
    assert "failures: 1, restarts: 1" in stderr and "fault #1 at 1.050 s: raise in 'Plus' at record 20" in stderr
    # the failed attempt's in-progress file is gone; the part is in the hourly bucket of the
    # simulated clock's start (Flink's default DateTimeBucketAssigner, the system's time zone)
    [part] = [p.relative_to(out) for p in out.rglob("*") if p.is_file()]
    assert part.parent.name == datetime.fromtimestamp(0).strftime("%Y-%m-%d--%H")
    assert re.fullmatch(r"part-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-0", part.name)
    assert (out / part).read_text().splitlines() == [str(x) for x in range(1, 51)]


def test_every_injected_fault_is_an_event():
    job = run_job(numbers_job([], records=200, parallelism=2), "restart-strategy.type=fixed-delay",
                  faults=["partition:from=resourcemanager,to=jobmaster*,start=1s,end=2s",
                          "delay:from=jobmaster*,to=taskexecutor-1,delay=200ms,start=3s,end=4s",
                          "slow:target=taskexecutor-2,factor=2,start=1s,end=3s",
                          "kill:target=taskexecutor-9,at=1s", "raise:operator=Times Ten,record=10"])
    seen = sorted(((e.index, e.fault_kind, e.phase, e.time / S) for e in job.events(FaultInjected)),
                  key=lambda e: (e[0], e[3]))
    assert seen == [(0, "partition", "start", 1.0), (0, "partition", "end", 2.0), (1, "delay", "start", 3.0),
                    (1, "delay", "end", 4.0), (2, "slow", "start", 1.0), (2, "slow", "end", 3.0),
                    (3, "kill", "start", 1.0), (4, "raise", "start", 0.9)]
    kill = next(e for e in job.events(FaultInjected) if e.fault_kind == "kill")
    assert kill.description.endswith("(no such TaskExecutor running: nothing happens)")


def test_bad_fault_specifications_are_clear_errors(cli, tmp_path):
    job = tmp_path / "job.py"
    job.write_text("raise SystemExit('never runs')\n")
    code, _, err = cli("run", "--inject", "explode:target=x", str(job))
    assert code == 2 and "fault #1: unknown kind 'explode' (one of kill, partition, drop, delay, slow, raise)" in err
    code, _, err = cli("run", "--inject", "kill:at=10s", str(job))
    assert code == 2 and "fault #1 (kill): missing required field `target`" in err
    code, _, err = cli("run", "--inject", "partition:from=a,to=b,start=soon", str(job))
    assert code == 2 and "fault #1 (partition): start: expected a duration like '10 s'" in err


def test_a_raise_fault_naming_no_operator_of_the_job_is_refused(cli, tmp_path):
    job = tmp_path / "job.py"
    job.write_text(
        "from kernel.common import Types\n"
        "from kernel.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.from_collection([1, 2], Types.INT()).map(lambda v: v).name('Times Ten').print()\n"
        "env.execute('named')\n")
    code, out, err = cli("run", "--inject", "raise:operator=Times Tne", str(job))
    assert (code, out) == (2, "")
    assert err == ("rill: error: fault #1 (raise): the job has no operator 'Times Tne'. Valid operators: "
                   "'Sink: Print to Std. Out', 'Source: Collection Source', 'Times Ten'\n")
    assert cli("runs")[1].startswith("no runs recorded yet")


def test_faults_from_a_config_file(cli, tmp_path):
    job = tmp_path / "job.py"
    job.write_text('''
from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource
env = StreamExecutionEnvironment.get_execution_environment()
env.from_source(DataGeneratorSource(lambda i: i, count=30, records_per_second=10, type_info=Types.LONG()),
                WatermarkStrategy.no_watermarks(), "Numbers").map(lambda x: x, Types.LONG()).name("Same").print()
env.execute("config faults")
''')
    config = tmp_path / "rill.toml"
    config.write_text('''
[rill]
clock = "simulated"

[restart-strategy]
type = "fixed-delay"

[[faults]]
kind = "raise"
operator = "Same"
record = 7
''')
    code, stdout, stderr = cli("run", "--config", str(config), str(job))
    assert code == 0, stderr
    assert stdout.splitlines() == [str(x) for x in range(30)]
    assert "restarts: 1" in stderr
