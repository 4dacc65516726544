"""A TaskExecutor in a process of its own (Flink's TaskManagerRunner), started by a workers
plugin with a :class:`~kernel.contracts.workers.TaskExecutorProcessSpec`.

It builds its session from the run's configuration, connects to the cluster's process (the
hub of the run's messaging), and runs one TaskExecutor on its own event loop: it registers at
the ResourceManager, offers slots to JobMasters and runs the tasks deployed into them as an
embedded one does. Its events go to the cluster's process every flush interval
(``rill.events.flush-interval``), which records them: a killed worker loses at most the last
interval's. The summaries of its ended tasks go there too. It samples its tasks' metrics every
second. Injected faults reach it from the cluster's process (:mod:`.endpoint`). SIGTERM stops
it (its tasks are cancelled, its last events sent); so does its TaskExecutor giving up
(``taskmanager.registration.timeout``); losing the connection to the cluster ends it at once.
Every connection it makes or accepts proves both ways that the peer knows the run's secret
(from its spec, :mod:`kernel.remoting.security`); what it rejects it records (``connection_rejected``).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from typing import TYPE_CHECKING, Any

from kernel.clock import NS_PER_S
from kernel.lifecycle.signal_handlers import SignalCallback
from kernel.options import SecurityOptions
from kernel.remoting.transport import ENCODER, TcpTransport, encode_frame
from kernel.remoting.security import TransportSecurity, report_rejections
from kernel.runtime.streaming.committer import SinkCommitter
from kernel.remoting.tcp import LineWriter
from plugins.local import messages as m
from plugins.local.deployment import STAGED_IN_TASK_EXECUTOR
from plugins.local.faults import FaultInjector
from plugins.local.network.remote import PartitionRequestClient, PartitionRequestServer
from plugins.local.network.shuffle import NetworkSettings, ShuffleEnvironment
from plugins.local.options import ClusterOptions
from plugins.local.recovery import RecoveryTracker
from plugins.local.taskexecutor import TaskExecutor

#: how long a task waits for the cluster's answer whether a raise fault may fire
GRANT_TIMEOUT_S = 30.0

if TYPE_CHECKING:
    from kernel.contracts.workers import TaskExecutorProcessSpec
    from kernel.eventbus import EventBatch
    from kernel.lifecycle.run import Run
    from kernel.remoting.tcp import Connection
    from plugins.local.deployment import TaskDeploymentDescriptor
    from plugins.local.tasks.streamtask import StreamTask


class RaiseGrants:
    """A task's question to the cluster's fault injector whether a ``raise`` fault may fire
    once more in the run (:meth:`plugins.local.faults.FaultInjector.claim`): the task's thread
    waits for the answer, which arrives on the process's loop; no answer in time is a no."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._lock = threading.Lock()
        self._requests = 0
        self._waiting: dict[int, tuple[threading.Event, list[bool]]] = {}

    def ask(self, index: int) -> bool:
        answered: tuple[threading.Event, list[bool]] = (threading.Event(), [])
        with self._lock:
            self._requests += 1
            request = self._requests
            self._waiting[request] = answered
        if self.connection.send(encode_frame("claim", request, index)) and answered[0].wait(GRANT_TIMEOUT_S):
            return answered[1][0]
        with self._lock:
            self._waiting.pop(request, None)
        return False

    def answered(self, connection: Connection, request: int, granted: bool) -> None:
        if type(granted) is not bool:
            raise ValueError(f"a claim answered with {granted!r:.20}")
        with self._lock:
            answered = self._waiting.pop(request, None)
        if answered is not None:
            answered[1].append(granted)
            answered[0].set()


class EventForwarder:
    """The worker's event observer: every batch goes to the cluster's process."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def events_emitted(self, batch: EventBatch) -> None:
        self.connection.send(encode_frame("events", [ENCODER.encode(event) for event in batch.events]))

    def close(self, status: str) -> None:
        """The cluster's process closes the run."""


class ForwardedRecords:
    """A collect sink's records, sent to the cluster's process (where the caller iterates)."""

    def __init__(self, connection: Connection, node_id: int) -> None:
        self.connection = connection
        self.node_id = node_id

    def extend(self, values: list) -> None:
        self.connection.send(encode_frame("collected", self.node_id, list(values)))


class WorkerProcessServices:
    """The :class:`~plugins.local.services.TaskManagerServices` of a worker process's
    TaskExecutor (an embedded one has the MiniCluster's): its own shuffle environment, serving
    its partitions to other processes; the summaries of ended tasks and the records of collect
    sinks go to the cluster's process; its tasks' sinks stage their output here until the
    JobMaster finishes it."""

    def __init__(self, run: Any, options: ClusterOptions, connection: Connection, security: TransportSecurity) -> None:
        self.run = run
        self.connection = connection
        self.network_settings = NetworkSettings.of(options)
        self.shuffle = ShuffleEnvironment(self.network_settings, client=PartitionRequestClient(run.loop, security))
        self.server = PartitionRequestServer(self.shuffle, run.loop,
                                             options.taskmanager_bind_host or options.taskmanager_host, security,
                                             advertised=options.taskmanager_host)
        self.shuffle.data_address = self.server.address
        self.tracker = RecoveryTracker(start=run.clock.now())
        self.faults = FaultInjector(run, self.tracker, run.config.faults)
        self.staged_output = SinkCommitter()
        self.fatal = ""

    def localize(self, deployment: TaskDeploymentDescriptor) -> TaskDeploymentDescriptor:
        """A deployment from the JobMaster's process as it runs here: sinks stage their output
        in this process; collect sinks send their records to the cluster's process."""
        if deployment.committer == STAGED_IN_TASK_EXECUTOR:
            deployment.committer = self.staged_output
        for node in deployment.job_graph.stream_graph.nodes.values():
            if node.operator.kind == "collect":
                node.operator.params["target"] = ForwardedRecords(self.connection, node.id)
        return deployment

    def fatal_error(self, address: str, message: str) -> None:
        """A task stuck after being stopped (its thread cannot be killed): this process ends,
        as Flink's TaskManager terminates its JVM; the cluster's process sees the worker go."""
        self.fatal = f"fatal error of {address}: {message}"
        self.run.loop.stop()

    def task_ended(self, task: StreamTask) -> None:
        d = task.deployment
        summary = m.TaskSummary(d.vertex.id, d.vertex.name, d.subtask, d.attempt, task.state, task.metrics.records_in,
                              task.metrics.records_out, task.metrics.totals(self.run.clock.now()))
        self.connection.send(encode_frame("summary", summary))


def run_task_manager(spec: TaskExecutorProcessSpec, run: Run) -> None:
    """The worker process's main: run one TaskExecutor until stopped or cut off."""
    loop = run.loop
    security = TransportSecurity.of(run.config.section(SecurityOptions), spec.secret, report_rejections(run))
    transport = TcpTransport(loop, run.messaging, hub=False, security=security)
    run.messaging.use_transport(transport)
    transport.on_disconnected = lambda connection, addresses, error: loop.stop()
    connection = transport.connect(spec.rpc_address, [spec.resource_id], os.getpid(), socket.gethostname())
    run.bus.observers = [EventForwarder(connection)]
    # print() goes to the cluster's process as whole lines, on the connection that carries the
    # worker's messages: output a sink committed before the worker answers the JobMaster is
    # printed before whatever the JobMaster has the next worker commit
    sys.stdout = stdout = LineWriter(lambda text: connection.send(encode_frame("stdout", text)))
    run.bus.start()
    options = run.config.section(ClusterOptions)
    services = WorkerProcessServices(run, options, connection, security)
    task_executor = TaskExecutor(spec.resource_id, run.messaging, run, services, options)

    grants = RaiseGrants(connection)
    transport.handlers["faults"] = lambda connection, slowdown: task_executor.set_slowdown(slowdown)
    transport.handlers["claimed"] = grants.answered
    services.faults.grant = grants.ask
    services.faults.raise_counted = lambda *fired: connection.send(encode_frame("raised", *fired))

    def sample() -> None:
        if task_executor.stopped:  # it gave up (not registered in time): the process ends
            loop.stop()
            return
        task_executor.sample_running()
        loop.call_later(NS_PER_S, sample, daemon=True)

    loop.call_soon(task_executor.start)
    loop.call_later(NS_PER_S, sample, daemon=True)
    with SignalCallback(signal.SIGTERM, lambda: loop.call_soon_threadsafe(loop.stop)):
        loop.run(daemons=True)
        if services.fatal:  # a stuck task's thread would outlive any orderly stop
            print(f"rill: {services.fatal}", file=sys.stderr, flush=True)
            run.bus.close("failed", wait=True)
            transport.close()
            os._exit(1)
        task_executor.stop()
        stdout.close()
        run.bus.close("finished", wait=True)
        services.server.close()
        services.shuffle.client.close()
        transport.close()
