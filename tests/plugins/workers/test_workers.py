"""The ResourceManager's workers (concern ``workers``, reference §22): requested on demand from
the driver, released when idle, released and replaced when they do not register, paused after
too many start failures — with the ``embedded`` driver on the simulated clock."""

from __future__ import annotations

import os
import socket

from kernel.runtime.cluster_events import WorkerRegistered, WorkerStarted, WorkerStopped
from kernel.common import Types, WatermarkStrategy
from kernel.datastream.connectors.datagen import DataGeneratorSource
from plugins.local.events import ConnectionClosed
from tests.runtime import run_job

S = 1_000_000_000


def short_and_endless(env):
    """A bounded pipeline and an endless one in another slot sharing group: the bounded one's
    TaskExecutor has nothing to do once it finished."""
    env.from_collection([1, 2, 3], Types.INT()).print()
    env.from_source(DataGeneratorSource(lambda i: i, records_per_second=10), WatermarkStrategy.no_watermarks(),
                    "Endless").slot_sharing_group("other").add_sink(lambda v: None)
    env.execute("idle")


def test_embedded_workers_start_in_this_process_on_demand():
    job = run_job(short_and_endless, "rill.duration=10 s")
    started = job.events(WorkerStarted)
    assert [(e.resource_id, e.slots, e.pid, e.host, e.executor_id) for e in started] == [
        ("taskexecutor-1", 1, os.getpid(), socket.gethostname(), ""),
        ("taskexecutor-2", 1, os.getpid(), socket.gethostname(), "")]
    assert [e.time for e in started] == [0, 0]
    assert job.outcome.notes[0] == "2 TaskExecutor(s) started, 1 slot(s) each"


def test_a_worker_without_allocated_slots_is_released_after_the_taskmanager_timeout():
    job = run_job(short_and_endless, "rill.duration=100 s")
    assert job.lines == ["1", "2", "3"]
    stopped = [(e.time / S, e.resource_id, e.reason) for e in job.events(WorkerStopped)]
    # the bounded pipeline's slot goes back at once (time 0); its TaskExecutor is released 30 s later
    assert stopped == [(30.0, "taskexecutor-1", "idle for resourcemanager.taskmanager-timeout (30000 ms)"),
                       (100.0, "taskexecutor-2", "cluster shut down")]
    closed = [(e.time / S, e.owner, e.target) for e in job.events(ConnectionClosed) if e.owner == "resourcemanager"]
    assert closed == [(30.0, "resourcemanager", "taskexecutor-1")]


def test_the_taskmanager_timeout_is_configurable():
    job = run_job(short_and_endless, "rill.duration=20 s", "resourcemanager.taskmanager-timeout=5 s")
    assert [(e.time / S, e.resource_id) for e in job.events(WorkerStopped)][0] == (5.0, "taskexecutor-1")


def unregistered(*sets: str):
    def build(env):
        env.from_collection([1, 2, 3], Types.INT()).print()
        env.execute("unregistered")

    return run_job(build, "resourcemanager.taskmanager-registration.timeout=1 s", "slot.request.timeout=20 s", *sets,
                   faults=["partition:from=resourcemanager,to=taskexecutor-*"])


def test_a_worker_that_does_not_register_in_time_is_released_and_replaced_and_failures_pause_requests():
    job = unregistered()
    started = [(e.time / S, e.resource_id) for e in job.events(WorkerStarted)]
    stopped = [(e.time / S, e.resource_id, e.reason) for e in job.events(WorkerStopped)]
    assert not job.events(WorkerRegistered)
    # one worker a second; the 11th start failure within a minute exceeds
    # resourcemanager.start-worker.max-failure-rate (10): requests pause for the retry interval (3 s)
    assert started == [(float(i), f"taskexecutor-{i + 1}") for i in range(11)] + [
        (14.0, "taskexecutor-12"), (18.0, "taskexecutor-13")]
    reason = "not registered within resourcemanager.taskmanager-registration.timeout (1000 ms)"
    assert stopped[:11] == [(float(i + 1), f"taskexecutor-{i + 1}", reason) for i in range(11)]
    assert job.outcome.status == "FAILED" and "NoResourceAvailableException" in job.outcome.failure


def test_the_start_failure_rate_and_retry_interval_are_configurable():
    job = unregistered("resourcemanager.start-worker.max-failure-rate=2", "resourcemanager.start-worker.retry-interval=5 s")
    started = [e.time / S for e in job.events(WorkerStarted)]
    # the 3rd failure (at 3 s) pauses requests until 8 s, then each failure pauses them 5 s more
    assert started == [0.0, 1.0, 2.0, 8.0, 14.0]


def test_the_stop_timeout_is_a_key_whichever_workers_plugin_is_chosen(cli, tmp_path):
    """``rill.workers.stop-timeout`` is the ResourceManager driver's, not one plugin's: a config
    made for process workers runs with embedded ones too; a bad value is named in one line."""
    job = tmp_path / "job.py"
    job.write_text("from kernel.datastream import StreamExecutionEnvironment\n"
                   "env = StreamExecutionEnvironment.get_execution_environment()\n"
                   "env.from_collection([1, 2]).print()\nenv.execute('j')\n")
    code, out, err = cli("run", "--quiet", "--set", "rill.workers.stop-timeout=2 s", str(job))
    assert (code, out.splitlines(), err) == (0, ["1", "2"], "")
    code, out, err = cli("run", "--quiet", "--set", "rill.workers.stop-timeout=soon", str(job))
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("rill: error: ")
    assert err == ("rill: error: config key 'rill.workers.stop-timeout' (--set): expected a duration like '10 s', "
                   "got 'soon'\n")
