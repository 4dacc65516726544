"""The cluster's end of TaskExecutor processes: its process is the hub of the run's messaging
(:class:`kernel.remoting.transport.TcpTransport`), listening at ``jobmanager.rpc.address``. What the
TaskExecutor processes send besides messages arrives here: their events, which the cluster's
event bus records (the run's one event log), what they print (to this process's stdout, in
order with their messages), the summaries of their ended tasks, the
records their collect sinks took (``execute_and_collect``, for the caller's iterator) and the
``raise`` faults that fired there. A process asks here whether a ``raise`` fault may fire
(the run's counts are kept here), and gets its ``slow`` factor when it connects and whenever
it changes.

It listens on ``jobmanager.bind-host`` (else ``jobmanager.rpc.address``) at
``jobmanager.rpc.port`` (0: any free port) and TaskExecutors reach it at
``jobmanager.rpc.address``; a process connecting proves it knows the run's ``secret`` first
(:mod:`kernel.remoting.security`), and rejected ones are recorded (``connection_rejected``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from kernel.options import SecurityOptions
from kernel.remoting.transport import TcpTransport, encode_frame
from kernel.remoting.security import TransportSecurity, report_rejections
from kernel.runtime.streaming.runtime import print_to_stdout

if TYPE_CHECKING:
    from kernel.lifecycle.run import Run
    from plugins.local import messages as m
    from plugins.local.faults import FaultInjector
    from plugins.local.options import ClusterOptions
    from plugins.local.recovery import RecoveryTracker


class ClusterEndpoint:
    """``task_ended(summary)`` takes the summaries of ended tasks, ``collected(node_id, values)``
    the records of collect sinks."""

    def __init__(self, run: Run, options: ClusterOptions, secret: bytes, faults: FaultInjector,
                 tracker: RecoveryTracker, task_ended: Callable[[m.TaskSummary], None],
                 collected: Callable[[int, list], None]) -> None:
        security = TransportSecurity.of(run.config.section(SecurityOptions), secret, report_rejections(run))
        self.transport = TcpTransport(run.loop, run.messaging, hub=True, security=security)
        run.messaging.use_transport(self.transport)
        decode = run.session.events.decoder().decode
        emit = run.bus.emit

        def events(connection: Any, encoded: list[bytes]) -> None:
            for event in encoded:
                emit(decode(event))

        def claim(connection: Any, request: int, index: int) -> None:
            connection.send(encode_frame("claimed", request, faults.claim(index)))

        self.faults = faults
        self.transport.handlers["events"] = events
        self.transport.handlers["summary"] = lambda connection, summary: task_ended(summary)
        self.transport.handlers["claim"] = claim
        self.transport.handlers["raised"] = lambda connection, index, description, time: tracker.fault(
            index, description, time)
        self.transport.handlers["stdout"] = lambda connection, text: print_to_stdout(text)
        self.transport.handlers["collected"] = lambda connection, node_id, values: collected(node_id, values)
        self.transport.on_hello = lambda connection, addresses, *info: [self.send_faults(a) for a in addresses]
        self.address = self.transport.listen(options.rpc_bind_host or options.rpc_address, options.rpc_port,
                                             advertised=options.rpc_address)

    def send_faults(self, address: str) -> None:
        """Tell the process of TaskExecutor ``address`` its slow factor."""
        connection = self.transport.routes.get(address)
        if connection is not None:
            connection.send(encode_frame("faults", self.faults.slowdown_of(address)))

    def drain(self) -> None:
        """The TaskExecutor processes are gone: handle what they sent last (events, summaries)
        until the last connection has closed."""
        transport, loop = self.transport, self.transport.loop
        if transport.connections:
            transport.on_disconnected = lambda connection, addresses, error: (
                None if transport.connections else loop.stop())
            loop.run()
        transport.close()
