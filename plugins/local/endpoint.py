"""The cluster's end of TaskExecutor processes: its process is the hub of the run's messaging
(:class:`kernel.remoting.TcpTransport`), listening at ``jobmanager.rpc.address``. What the
TaskExecutor processes send besides messages arrives here: their events, which the cluster's
event bus records (the run's one event log), and the summaries of their ended tasks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.remoting import TcpTransport

if TYPE_CHECKING:
    from plugins.local.minicluster import MiniCluster


class ClusterEndpoint:
    def __init__(self, cluster: MiniCluster, host: str) -> None:
        run = cluster.run
        self.transport = TcpTransport(run.loop, run.messaging, hub=True)
        run.messaging.use_transport(self.transport)
        decode = run.session.events.decoder().decode
        emit = run.bus.emit

        def events(connection: Any, encoded: list[bytes]) -> None:
            for event in encoded:
                emit(decode(event))

        self.transport.handlers["events"] = events
        self.transport.handlers["summary"] = lambda connection, summary: cluster.summaries.append(summary)
        self.address = self.transport.listen(host)

    def drain(self) -> None:
        """The TaskExecutor processes are gone: handle what they sent last (events, summaries)
        until the last connection has closed."""
        transport, loop = self.transport, self.transport.loop
        if transport.connections:
            transport.on_disconnected = lambda connection, addresses, error: (
                None if transport.connections else loop.stop())
            loop.run()
        transport.close()
