"""Heartbeat managers (default and phi-accrual) between components, and what the cluster does
when a heartbeat is missed — seed 003, with current Flink's RPC-failure detection."""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest

from kernel.clock import SimulatedClock
from kernel.runtime.cluster_events import (
    ExecutionStateChanged,
    HeartbeatReceived,
    HeartbeatRequested,
    HeartbeatTargetMarkedUnreachable,
    HeartbeatTimedOut,
    TaskFailureHandled,
    WorkerRegistered,
    WorkerStarted,
    WorkerStopped,
)
from kernel.common import Types, WatermarkStrategy
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.events import MessageDropped
from kernel.loop import EventLoop
from kernel.messaging import Component, MessagingService
from plugins.heartbeats.manager import create_manager
from plugins.heartbeats.options import HeartbeatOptions
from plugins.heartbeats.options import PhiAccrualOptions
from plugins.heartbeats.phi_accrual import PhiAccrualHeartbeatMonitor
from plugins.local.connections import HeartbeatTarget
from plugins.local import messages as m
from plugins.local.events import ConnectionClosed, JobMasterRegistered, TaskExecutorConnected
from tests.runtime import run_job

S = 1_000_000_000


class FakeRun:
    def __init__(self, **settings: Any) -> None:
        self.clock = SimulatedClock()
        self.loop = EventLoop(self.clock)
        self.messaging = MessagingService(self.loop)
        self.events: list = []
        self.bus = type("Bus", (), {"emit": self.events.append})()
        values = {"heartbeat.interval": 10_000, "heartbeat.timeout": 50_000, "heartbeat.rpc-failure-threshold": 2}
        values.update(settings)
        self.options = msgspec.convert(values, HeartbeatOptions)
        self.config = type("Config", (), {"section": lambda _, section: self.options})()

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]


class Node(Component):
    """A component with one heartbeat manager; records what its listener hears."""

    def __init__(self, address: str, run: FakeRun, role: str, monitor: Any = None) -> None:
        super().__init__(address, run.messaging)
        self.run = run
        self.heard: list = []
        self.lost: list = []
        self.role = role
        self.monitor = monitor

    def on_start(self) -> None:
        kwargs = {} if self.monitor is None else {"monitor_factory": self.monitor}
        self.heartbeats = create_manager(self, self, self.role, self.run, **kwargs)

    def notify_heartbeat_timeout(self, resource_id):
        self.lost.append((self.clock.now() / S, resource_id, "timeout"))

    def notify_target_unreachable(self, resource_id):
        self.lost.append((self.clock.now() / S, resource_id, "unreachable"))

    def report_payload(self, resource_id, payload):
        self.heard.append((self.clock.now() / S, resource_id, payload))

    def retrieve_payload(self, resource_id):
        return f"from {self.address}"

    def handle_HeartbeatRequest(self, message, sender):
        self.heartbeats.request_heartbeat(message.sender_id, message.payload)
        return m.ACK

    def handle_HeartbeatResponse(self, message, sender):
        self.heartbeats.receive_heartbeat(message.sender_id, message.payload)
        return m.ACK


def pair(run: FakeRun, monitor: Any = None) -> tuple[Node, Node]:
    sender, receiver = Node("sender", run, "sender", monitor), Node("receiver", run, "receiver", monitor)
    sender.start()
    receiver.start()
    sender.heartbeats.monitor_target("receiver", HeartbeatTarget(sender, "receiver", "test", 10_000))
    receiver.heartbeats.monitor_target("sender", HeartbeatTarget(receiver, "sender", "test", 10_000))
    return sender, receiver


def run_until(run: FakeRun, seconds: float) -> None:
    run.loop.call_at(int(seconds * S), run.loop.stop)
    run.loop.run(daemons=True)


def test_the_sender_requests_every_interval_and_payloads_flow_both_ways():
    run = FakeRun()
    sender, receiver = pair(run)
    run_until(run, 35)
    # requests when the sender starts (its targets were added before the loop ran) and every 10 s
    assert [e.time / S for e in run.of(HeartbeatRequested)] == [0.0, 10.0, 20.0, 30.0]
    assert receiver.heard == [(t, "sender", "from sender") for t in (0.0, 10.0, 20.0, 30.0)]
    assert sender.heard == [(t, "receiver", "from receiver") for t in (0.0, 10.0, 20.0, 30.0)]
    received = run.of(HeartbeatReceived)
    assert [(e.owner, e.message) for e in received[:2]] == [("receiver", "request"), ("sender", "response")]
    assert received[1].round_trip_ms == 0.0 and math.isnan(received[0].round_trip_ms)
    assert not sender.lost and not receiver.lost


def test_a_crashed_target_times_out_heartbeat_timeout_after_the_last_heartbeat():
    run = FakeRun()
    sender, receiver = pair(run)
    run.loop.call_at(25 * S, run.messaging.crash, "receiver")
    run_until(run, 120)
    # last response heard at 20 s: the monitor, re-armed then, expires at 70 s; messages to a
    # crashed process vanish, so no RPC failure is counted
    assert sender.lost == [(70.0, "receiver", "timeout")]
    assert [(e.owner, e.target, e.silent_ms) for e in run.of(HeartbeatTimedOut)] == [("sender", "receiver", 50_000.0)]
    assert not run.of(HeartbeatTargetMarkedUnreachable)
    requests = [e.time / S for e in run.of(HeartbeatRequested)]
    assert requests == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]  # at 70 s it is lost first


def test_a_monitor_is_armed_at_once_even_before_any_heartbeat():
    run = FakeRun()
    lonely = Node("lonely", run, "receiver")
    lonely.start()
    lonely.heartbeats.monitor_target("nobody", HeartbeatTarget(lonely, "nobody", "test", 10_000))
    run_until(run, 60)
    assert lonely.lost == [(50.0, "nobody", "timeout")]


def test_consecutive_failed_heartbeat_messages_make_a_target_unreachable():
    run = FakeRun()
    sender, receiver = pair(run)
    run.loop.call_at(25 * S, receiver.stop)  # the endpoint is gone, its host answers: requests fail at once
    run_until(run, 120)
    # the requests at 30 and 40 s fail: heartbeat.rpc-failure-threshold = 2
    assert sender.lost == [(40.0, "receiver", "unreachable")]
    assert [(e.owner, e.failures) for e in run.of(HeartbeatTargetMarkedUnreachable)] == [("sender", 2)]


def test_rpc_failure_detection_can_be_disabled():
    run = FakeRun(**{"heartbeat.rpc-failure-threshold": -1})
    sender, receiver = pair(run)
    run.loop.call_at(25 * S, receiver.stop)
    run_until(run, 120)
    assert sender.lost == [(70.0, "receiver", "timeout")]


def test_heartbeat_options_are_validated():
    from kernel.errors import ConfigError
    from kernel.lifecycle.session import Session

    with pytest.raises(ConfigError, match="heartbeat.timeout"):
        Session.open(sets=["heartbeat.interval=10 s", "heartbeat.timeout=5 s"])


# -- phi accrual -------------------------------------------------------------------------------


def phi_run(**phi: Any) -> tuple[FakeRun, Any]:
    run = FakeRun()
    options = msgspec.convert(phi, PhiAccrualOptions)
    return run, lambda manager, rid, target: PhiAccrualHeartbeatMonitor(manager, rid, target, options, 10_000)


def test_phi_accrual_suspects_when_the_silence_becomes_improbable():
    run, monitor = phi_run()
    sender, receiver = pair(run, monitor)
    run.loop.call_at(65 * S, run.messaging.crash, "receiver")
    run_until(run, 200)
    watch = sender.heartbeats.monitors.get("receiver")
    assert watch is None  # lost
    # heartbeats at 0, 10, ..., 60 s; intervals: the first-heartbeat estimate as two samples
    # (7.5 s, 12.5 s) and six of 10 s: mean 10 s, σ = 1.25 s; suspicion at mean + pause (10 s) + σ·Φ⁻¹(1 - 1e-8) after the last heartbeat (60 s)
    from statistics import NormalDist, pstdev

    samples = [7500.0, 12500.0] + [10_000.0] * 6
    expected = 60 + (10_000 + 10_000 + pstdev(samples) * NormalDist().inv_cdf(1 - 1e-8)) / 1000
    assert sender.lost[0][1:] == ("receiver", "timeout")
    assert sender.lost[0][0] == pytest.approx(expected, abs=1e-6)
    assert sender.lost[0][0] < 60 + 50  # earlier than the default plugin's fixed 50 s timeout


def test_phi_accrual_tolerates_jitter_that_would_not_trip_its_threshold():
    from kernel.messaging import DeliveryRule

    run, monitor = phi_run()
    run.messaging.conditions.rng = __import__("random").Random(3)
    # every message delayed by 0-4 s: heartbeats arrive irregularly, widening σ
    run.messaging.conditions.add(DeliveryRule("*", "*", delay=2 * S, jitter=2 * S))
    sender, receiver = pair(run, monitor)
    run_until(run, 600)
    assert sender.lost == [] and receiver.lost == []
    watch = sender.heartbeats.monitors["receiver"]
    mean, deviation = watch.statistics()
    assert deviation > 1_000  # the jitter was learned
    assert watch.phi(10_000) < 8 and watch.phi(watch.suspicion_after_ms()) == pytest.approx(8, abs=0.01)


# -- in the cluster ----------------------------------------------------------------------------


def counting_job(results: list, records: int = 600, rate: int = 10):  # 600 records: 60 s
    """Two sources, a keyed running count (independent of how the sources interleave)."""

    def build(env):
        env.set_parallelism(2)
        env.from_source(DataGeneratorSource(lambda i: (i % 7, 1), count=records, records_per_second=rate),
                        WatermarkStrategy.no_watermarks(), "Numbers") \
            .key_by(lambda pair: pair[0], Types.INT()).reduce(lambda a, b: (a[0], a[1] + b[1])).name("Count") \
            .add_sink(results.append).name("Results")
        env.execute("counting")

    return build


def fault_free_output(records: int = 600) -> list:
    results: list = []
    job = run_job(counting_job(results, records))
    assert job.outcome.status == "FINISHED"
    return sorted(results)


RESTARTS = "restart-strategy.type=fixed-delay"


def test_a_killed_task_executor_is_detected_within_the_heartbeat_bounds_and_the_job_recovers():
    expected = fault_free_output()
    results: list = []
    job = run_job(counting_job(results), RESTARTS, "heartbeat.interval=10 s", "heartbeat.timeout=50 s",
                  faults=["kill:target=taskexecutor-2,at=30s"])
    assert job.outcome.status == "FINISHED"
    kill = 30.0
    timeouts = [(e.owner.split("-")[0], e.time / S) for e in job.events(HeartbeatTimedOut) if e.target == "taskexecutor-2"]
    # The dead TaskExecutor was last heard at the heartbeat before the kill, at most one
    # interval earlier (here 20 s): the monitors expire heartbeat.timeout after that, so within
    # [kill + timeout - interval, kill + timeout] = [70 s, 80 s] — inside [t + 40 s, t + 60 s].
    assert sorted(timeouts) == [("jobmaster", 70.0), ("resourcemanager", 70.0)]
    assert all(kill + 50 - 10 <= t <= kill + 50 + 10 for _, t in timeouts)
    failures = job.events(TaskFailureHandled)
    assert failures[0].cause == "TimeoutException: Heartbeat of TaskManager with id taskexecutor-2 timed out."
    assert failures[0].restart and failures[0].time / S == 70.0
    started = [e.resource_id for e in job.events(WorkerStarted)]
    assert started == ["taskexecutor-1", "taskexecutor-2", "taskexecutor-3"]  # the new slots' TaskExecutor
    redeployed = [e for e in job.events(ExecutionStateChanged) if e.attempt == 1 and e.new_state == "RUNNING"]
    assert len(redeployed) == 4 and {e.resource_id for e in redeployed} == {"taskexecutor-1", "taskexecutor-3"}
    assert sorted(results) == expected
    assert any("detected after 40.000 s" in note for note in job.outcome.notes)


def test_a_partition_that_heals_before_the_timeout_causes_no_failover():
    expected = fault_free_output()
    results: list = []
    job = run_job(counting_job(results), RESTARTS, faults=["partition:from=jobmaster*,to=taskexecutor-2,start=25s,end=60s"])
    assert job.outcome.status == "FINISHED"
    assert not job.events(TaskFailureHandled) and not job.events(HeartbeatTimedOut)
    assert job.events(MessageDropped)  # heartbeats were lost during the partition
    assert sorted(results) == expected


def test_a_partition_longer_than_the_timeout_fails_over():
    expected = fault_free_output()
    results: list = []
    job = run_job(counting_job(results), RESTARTS, faults=["partition:from=jobmaster*,to=taskexecutor-2,start=25s,end=100s"])
    assert job.outcome.status == "FINISHED"
    timeouts = {(e.owner.split("-")[0], e.target.split("-")[0]) for e in job.events(HeartbeatTimedOut)}
    assert timeouts == {("jobmaster", "taskexecutor"), ("taskexecutor", "jobmaster")}
    assert len(job.events(TaskFailureHandled)) == 1
    assert sorted(results) == expected


def test_losing_the_resource_manager_reconnects_without_failing_the_job():
    expected = fault_free_output(1500)
    results: list = []
    job = run_job(counting_job(results, 1500), RESTARTS, faults=["partition:from=jobmaster*,to=resourcemanager,start=25s,end=100s"])
    assert job.outcome.status == "FINISHED"
    timeouts = sorted((e.owner.split("-")[0], e.time / S) for e in job.events(HeartbeatTimedOut))
    assert timeouts == [("jobmaster", 70.0), ("resourcemanager", 70.0)]
    closed = {(e.owner.split("-")[0], e.target.split("-")[0]) for e in job.events(ConnectionClosed)}
    assert closed == {("jobmaster", "resourcemanager"), ("resourcemanager", "jobmaster")}
    assert [e.time / S >= 100 for e in job.events(JobMasterRegistered)] == [False, True]  # reconnected
    assert not job.events(TaskFailureHandled)
    assert sorted(results) == expected


def test_a_task_executor_that_cannot_reach_the_resource_manager_re_registers_then_exits():
    expected = fault_free_output(2000)
    results: list = []
    job = run_job(counting_job(results, 2000), RESTARTS, "taskmanager.registration.timeout=90 s", faults=["partition:from=resourcemanager,to=taskexecutor-1,start=25s"])
    assert job.outcome.status == "FINISHED"
    # RM and TaskExecutor lose each other at 70 s; the RM drops its slots (the JobMaster fails
    # the tasks there) and the TaskExecutor keeps trying to register, then exits at 70 + 90 s
    stopped = [(e.resource_id, e.time / S, e.reason) for e in job.events(WorkerStopped) if "registration" in e.reason]
    assert stopped == [("taskexecutor-1", 160.0, "could not register at the ResourceManager within "
                                                 "taskmanager.registration.timeout (90000 ms)")]
    assert job.events(TaskFailureHandled)[0].cause == "Heartbeat of TaskManager with id taskexecutor-1 timed out."
    assert sorted(results) == expected


def test_registrations_and_connections_are_events():
    results: list = []
    job = run_job(counting_job(results, records=20))
    assert [e.resource_id for e in job.events(WorkerRegistered)] == ["taskexecutor-1", "taskexecutor-2"]
    assert len(job.events(JobMasterRegistered)) == 1
    assert sorted(e.resource_id for e in job.events(TaskExecutorConnected)) == ["taskexecutor-1", "taskexecutor-2"]


def test_the_phi_accrual_plugin_runs_a_job_and_detects_a_dead_task_executor():
    expected = fault_free_output()
    results: list = []
    job = run_job(counting_job(results), RESTARTS,
                          "plugins.heartbeats=phi-accrual", faults=["kill:target=taskexecutor-2,at=30s"])
    assert job.outcome.status == "FINISHED"
    timeouts = [e.time / S for e in job.events(HeartbeatTimedOut) if e.target == "taskexecutor-2"]
    assert timeouts and all(40 < t < 70 for t in timeouts)  # earlier than the fixed 50 s timeout
    assert sorted(results) == expected
