"""Plugin ``workers.embedded``: TaskExecutors in the cluster's own process (Flink's
MiniCluster), started on demand and stopped when released. The only driver a simulated run can
use: its TaskExecutors share the run's single-threaded loop."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kernel import hookimpl
from kernel.contracts.workers import TaskExecutorProcessSpec, WorkerNode
from kernel.messaging import Future

if TYPE_CHECKING:
    from kernel.contracts.workers import ResourceEventHandler, WorkerHost


class EmbeddedDriver:
    in_process = True

    def __init__(self, host: WorkerHost) -> None:
        self.host = host
        self.handler: ResourceEventHandler | None = None

    def initialize(self, handler: ResourceEventHandler) -> None:
        self.handler = handler

    def request_resource(self, spec: TaskExecutorProcessSpec) -> Future:
        """Starts the TaskExecutor at once: the Future is complete when it returns."""
        placed = Future(self.host.loop)
        self.host.start_task_executor(spec)
        placed.set_result(WorkerNode(resource_id=spec.resource_id, pid=os.getpid(), host=os.uname().nodename))
        return placed

    def release_resource(self, resource_id: str) -> None:
        self.host.stop_task_executor(resource_id)

    def kill_worker(self, resource_id: str) -> bool:
        return False

    def terminate(self) -> None:
        """The cluster stops its in-process TaskExecutors itself."""


@hookimpl
def create_resource_manager_driver(host, run):
    return EmbeddedDriver(host)
