"""The cluster of one run: Dispatcher, ResourceManager, TaskExecutors on demand.

The Dispatcher, ResourceManager and JobMasters live in this process, share the run's event
loop and talk through the run's messaging. TaskExecutors are where the workers plugin's driver
puts them: here (``embedded``: the cluster is their :class:`~kernel.contracts.workers.WorkerHost`
and the shuffle environment connects their tasks' partitions and gates) or in processes of
their own that connect back. A TaskExecutor's tasks run in its loop under the simulated clock,
each in a thread of its own under the realtime clock (Flink's MiniCluster). ``execute`` submits
one job, applies the injected faults, and runs the loop until the job ends, ``rill.duration``
of clock time passes (the job is cancelled then, or stopped with a savepoint under
``rill.stop-with-savepoint``), or it is interrupted (the first Ctrl-C cancels the job, a second
one ends the run at once). When nothing is left to do but background work (heartbeats, metric
sampling) while no fault is in force, the job stalled and fails. A TaskExecutor's fatal error
(a task stuck after being cancelled: its thread cannot be killed) ends the run, canceled,
naming the stuck operator. Savepoints are asked of the Dispatcher as a client would.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from kernel.clock import NS_PER_MS, NS_PER_S
from kernel.lifecycle.signal_handlers import SignalCallback
from kernel.runtime.cluster_events import WorkerStopped
from kernel.contracts.workers import TaskExecutorProcessSpec
from kernel.runtime.graph.job import JobGraph
from kernel.runtime.streaming.committer import SinkCommitter
from kernel.options import RillOptions
from plugins.local import messages as m
from plugins.local.dispatcher import Dispatcher
from plugins.local.faults import FaultInjector
from plugins.local.network.shuffle import NetworkSettings, ShuffleEnvironment
from plugins.local.options import ClusterOptions
from plugins.local.recovery import RecoveryTracker
from plugins.local.resourcemanager import ResourceManager
from plugins.local.taskexecutor import TaskExecutor

if TYPE_CHECKING:
    from kernel.lifecycle.run import Run
    from plugins.local.endpoint import ClusterEndpoint
    from plugins.local.tasks.streamtask import StreamTask


STALLED = "the job stalled: nothing left to run and it did not end"


@dataclass
class JobOutcome:
    status: str
    failure: str
    tasks: list[m.TaskSummary] = field(default_factory=list)
    workers_started: int = 0
    recovery: list[str] = field(default_factory=list)
    back_pressure: m.BackPressureJudgement | None = None  # a back-pressure monitor's judgement
    savepoint: str = ""  # the savepoint the job stopped with
    savepoint_failure: str = ""  # why the stop-with-savepoint rill.duration asked for failed


class MiniCluster:
    """The cluster, and the TaskManagerServices of its embedded TaskExecutors
    (:mod:`plugins.local.services`)."""

    def __init__(self, run: Run, options: ClusterOptions) -> None:
        self.run = run
        self.options = options
        rill_options = run.config.section(RillOptions)
        self.duration = rill_options.duration
        self.stop_with_savepoint = rill_options.stop_with_savepoint
        self.savepoint_failure = ""
        self.stop_requested = False  # rill.duration asked for a stop-with-savepoint
        self.network_settings = NetworkSettings.of(options)
        self.shuffle = ShuffleEnvironment(self.network_settings)
        self.task_executors: list[TaskExecutor] = []
        self.tracker = RecoveryTracker(start=run.clock.now())
        self.summaries: list[m.TaskSummary] = []
        #: embedded tasks' sinks stage their output with the JobMaster's committer: none here
        self.staged_output = SinkCommitter()
        self.faults = FaultInjector(run, self.tracker, run.config.faults, targets=self)
        run.plugin_manager.require("create_resource_manager_driver", "workers")
        self.driver = run.plugin_manager.hook.create_resource_manager_driver(host=self, run=run)
        self.endpoint: ClusterEndpoint | None = None
        self.secret = b""
        if not self.driver.in_process:  # TaskExecutors connect to this process (TCP: loaded only then)
            from kernel.remoting.security import new_secret
            from plugins.local.endpoint import ClusterEndpoint

            self.secret = new_secret()  # what the processes of the run prove they know (kernel.remoting.security)
            try:
                self.endpoint = ClusterEndpoint(run, options, self.secret, self.faults, self.tracker,
                                                self.summaries.append, self._collected)
            except BaseException:  # its TLS files cannot be loaded: nothing of the driver's outlives the run
                self.driver.terminate()
                raise
        self.rpc_address = self.endpoint.address if self.endpoint is not None else ""
        self.resource_manager = ResourceManager(run.messaging, run, options, self.driver, self._worker_spec,
                                                self.tracker, self._worker_stopped)
        self.dispatcher = Dispatcher(run.messaging, run, options, self._job_terminated, self.tracker)
        self.outcome: JobOutcome | None = None
        self.job_graph: JobGraph | None = None
        self._sampler: Any = None
        self._quiet: list[int] | None = None  # how far the tasks' loops got when last seen quiescent

    # -- workers (the WorkerHost of the driver) -------------------------------------------------

    @property
    def loop(self) -> Any:
        return self.run.loop

    def _worker_spec(self, resource_id: str) -> TaskExecutorProcessSpec:
        """What a requested worker runs: a TaskManagerRunner connecting back to this cluster."""
        return TaskExecutorProcessSpec(
            resource_id=resource_id, slots=self.options.task_slots, entry="plugins.local.runner:run_task_manager",
            rpc_address=self.rpc_address, secret=self.secret, run_id=self.run.id, job_name=self.run.job_name,
            config=pickle.dumps((self.run.config.raw, self.run.input_overrides)), sys_path=list(sys.path),
            cwd=os.getcwd(), python=self.run.python_environment,
        )

    def _collected(self, node_id: int, values: list) -> None:
        """Records a collect sink took in a TaskExecutor process, for the caller's iterator."""
        self.job_graph.stream_graph.nodes[node_id].operator.params["target"].extend(values)

    def localize(self, deployment: Any) -> Any:
        """A deployment as a TaskExecutor here runs it: as the JobMaster made it."""
        return deployment

    def start_task_executor(self, spec: TaskExecutorProcessSpec) -> None:
        worker = TaskExecutor(spec.resource_id, self.run.messaging, self.run, self, self.options)
        worker.slowdown = self.faults.slowdown_of(spec.resource_id)
        self.task_executors.append(worker)
        worker.start()

    def stop_task_executor(self, resource_id: str) -> None:
        worker = self.worker(resource_id)
        if worker is not None and not worker.stopped:
            worker.stop()

    def _worker_stopped(self, resource_id: str, reason: str) -> None:
        self.run.bus.emit(WorkerStopped(time=self.run.clock.now(), resource_id=resource_id, reason=reason))

    def set_slowdown(self, address: str, factor: float) -> bool:
        """A slow fault starts or ends at a TaskExecutor; whether it runs now."""
        worker = self.worker(address)
        if worker is not None:
            if not worker.stopped:
                worker.set_slowdown(factor)
            return True
        if self.endpoint is not None and address in self.resource_manager.nodes:
            self.endpoint.send_faults(address)
            return True
        return False

    def worker(self, address: str) -> TaskExecutor | None:
        """The TaskExecutor of that address in this process."""
        return next((w for w in self.task_executors if w.address == address), None)

    def worker_running(self, address: str) -> bool:
        worker = self.worker(address)
        return not worker.stopped if worker is not None else address in self.resource_manager.nodes

    def kill_worker(self, address: str, refuse: bool, reason: str) -> None:
        """The worker's process dies: a real one by SIGKILL (its end is reported by the driver);
        one in this process is simulated (``refuse``: only its endpoint dies, so requests to it
        fail at once; else what is sent to it vanishes)."""
        worker = self.worker(address)
        if worker is None:
            self.driver.kill_worker(address)
            return
        worker.stop_reason = reason
        if refuse:
            worker.stop()
        else:
            self.run.messaging.crash(worker.address)
        self._worker_stopped(worker.address, reason)

    def task_ended(self, task: StreamTask) -> None:
        d = task.deployment
        self.summaries.append(m.TaskSummary(
            d.vertex.id, d.vertex.name, d.subtask, d.attempt, task.state, task.metrics.records_in,
            task.metrics.records_out, task.metrics.totals(self.run.clock.now()),
        ))

    # -- metrics ------------------------------------------------------------------------------

    def _sample(self) -> None:
        for worker in self.task_executors:
            if not worker.stopped:
                worker.sample_running()
        if self._stalled():
            self.outcome = JobOutcome("FAILED", STALLED)
            self.run.loop.stop()
            return
        self._sampler = self.run.loop.call_later(NS_PER_S, self._sample, daemon=True)

    def _stalled(self) -> bool:
        """Realtime: the tasks' threads and the cluster have had nothing to do but wait since
        the previous sample, so nothing will wake them."""
        threads = [thread for worker in self.task_executors for thread in (worker.task_threads or {}).values()]
        if (not threads or self.run.loop.has_pending(daemon=False, io=len(threads)) or self._faults_in_force()
                or not all(thread.loop.quiescent(io=1) for thread in threads)):
            self._quiet = None
            return False
        rounds = [thread.loop.rounds for thread in threads]
        stalled, self._quiet = rounds == self._quiet, rounds
        return stalled

    # -- running a job ------------------------------------------------------------------------

    def _job_terminated(self, message: m.JobTerminated) -> None:
        failure = ""
        if self.stop_requested and not message.savepoint:
            why = self.savepoint_failure or message.savepoint_failure
            failure = why if message.status != "FINISHED" else (
                f"the job finished before its savepoint completed ({why or 'all its input was read'})")
        self.outcome = JobOutcome(message.status, message.failure, back_pressure=message.back_pressure,
                                  savepoint=message.savepoint, savepoint_failure=failure)
        self.run.loop.stop()

    def fatal_error(self, address: str, message: str) -> None:
        """A TaskExecutor cannot go on (a task stuck after being stopped): the run ends."""
        if self.outcome is None:
            self.outcome = JobOutcome("CANCELED", f"fatal error of {address}: {message}")
            self.run.loop.stop()

    def cancel(self, job_id: str, reason: str) -> None:
        if self.outcome is None:
            self.run.messaging.send("client", self.dispatcher.address, m.CancelJob(job_id, reason))

    def trigger_savepoint(self, job_id: str, directory: str | None, terminate: bool, drain: bool,
                          on_done: Callable[[str | None, str | None], None]) -> None:
        """Ask for a savepoint (``terminate``: stop the job with it): ``on_done(path, None)`` or
        ``on_done(None, why)`` once answered."""
        if self.outcome is not None:
            on_done(None, f"job {job_id} has ended ({self.outcome.status})")
            return
        answer = self.run.messaging.ask("client", self.dispatcher.address,
                                        m.TriggerSavepoint(job_id, directory, terminate, drain), None)

        def answered(done: Any) -> None:
            failure = done.exception()
            on_done(None, str(failure)) if failure is not None else on_done(done.result(), None)

        answer.add_done_callback(answered)

    def _duration_reached(self, job_id: str) -> None:
        reason = f"rill.duration ({self.duration} ms) reached"
        if self.stop_with_savepoint is None:
            self.cancel(job_id, reason)
            return

        def done(path: str | None, failure: str | None) -> None:
            if failure is not None:
                self.savepoint_failure = failure
                self.cancel(job_id, f"{reason}; stop-with-savepoint failed: {failure}")

        self.stop_requested = True
        self.trigger_savepoint(job_id, self.stop_with_savepoint, True, False, done)

    def execute(self, job_graph: JobGraph) -> JobOutcome:
        self.job_graph = job_graph
        loop = self.run.loop
        self.resource_manager.start()
        self.dispatcher.start()
        self.run.messaging.send("client", self.dispatcher.address, m.SubmitJob(job_graph))
        self._sampler = loop.call_later(NS_PER_S, self._sample, daemon=True)
        self.faults.start(self.tracker.start)
        if self.duration > 0:
            loop.call_later(self.duration * NS_PER_MS, self._duration_reached, job_graph.job_id)
        # the first Ctrl-C cancels the job (a clean shutdown), a second one interrupts for real
        with SignalCallback(signal.SIGINT, lambda: loop.call_soon_threadsafe(self.cancel, job_graph.job_id, "interrupted"),
                            again=_interrupt):
            while self.outcome is None:
                loop.run(daemons=self._faults_in_force())
                if self.outcome is None and not loop.has_pending(daemon=False) and not self._faults_in_force():
                    self.outcome = JobOutcome("FAILED", STALLED)
        self._sampler.cancel()
        self._shutdown()
        self.outcome.tasks = self.summaries
        self.outcome.workers_started = self.resource_manager.workers_started
        self.outcome.recovery = self.tracker.notes()
        return self.outcome

    def _faults_in_force(self) -> bool:
        """A crashed process or a partition: heartbeats will notice, so waiting on them is not a stall."""
        messaging = self.run.messaging
        return bool(messaging.crashed) or messaging.conditions.active(self.run.clock.now())

    def _shutdown(self) -> None:
        for worker in self.task_executors:
            if not worker.stopped:
                worker.stop()
                self._worker_stopped(worker.address, "cluster shut down")
        for address in self.resource_manager.nodes:
            if self.worker(address) is None:
                self._worker_stopped(address, "cluster shut down")
        self.dispatcher.stop()
        self.resource_manager.stop()
        self.driver.terminate()
        if self.endpoint is not None:
            self.endpoint.drain()


def _interrupt() -> None:
    raise KeyboardInterrupt
