"""The workers contract (concern ``workers``): how the ResourceManager gets TaskExecutors and
gives them back — Flink's ResourceManagerDriver and ResourceEventHandler, which YARN and
Kubernetes implement for an active ResourceManager.

The ResourceManager decides *when*: it requests a worker for slots its declarations cannot
cover, releases one that stayed idle for ``resourcemanager.taskmanager-timeout``, and
releases and replaces one that did not register in time. The driver decides *where*: a
TaskExecutor in the cluster's own process (``embedded``), an OS process on this machine
(``processes``), a long-running task on a cluster's executors. A TaskExecutor outside the
cluster's process runs :attr:`TaskExecutorProcessSpec.entry` — the way YARN launches Flink's
``TaskManagerRunner`` main class — which connects back to ``rpc_address`` and registers at the
ResourceManager like any other; what hosts it is the driver's business.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import msgspec

from kernel.lifecycle.pythonenv.environment import PythonEnvironment

if TYPE_CHECKING:
    from kernel.loop import EventLoop
    from kernel.messaging import Future


class TaskExecutorProcessSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What one requested worker runs (Flink's TaskExecutorProcessSpec with its launch
    context): a TaskExecutor ``resource_id`` with ``slots`` slots, started by
    :func:`kernel.lifecycle.worker_process.run_worker` in a process that imports with ``sys_path`` from
    ``cwd``: it builds the worker's part of run ``run_id`` from ``config`` (the run's
    ``RawConfig`` and input overrides, pickled) and calls ``entry`` (``"module:function"``)
    with the spec and that run. The TaskExecutor connects to the cluster at ``rpc_address``
    (``host:port``), proving it knows the run's ``secret`` (:mod:`kernel.remoting.security`): a driver
    hands the spec to the worker where only the worker reads it (a pipe, the task's own data),
    never on a command line or in the environment."""

    resource_id: str
    slots: int
    entry: str
    rpc_address: str
    secret: bytes = b""
    run_id: str
    job_name: str = ""
    config: bytes = b""
    sys_path: list[str] = []
    cwd: str = ""
    #: the job's Python environment as the client prepared it (taken up before ``entry`` runs)
    python: PythonEnvironment = PythonEnvironment()

    def __repr__(self) -> str:
        """Every field but the run's secret, which no log or traceback shows."""
        fields = ", ".join(f"{name}={'<secret>' if name == 'secret' else repr(getattr(self, name))}"
                           for name in self.__struct_fields__)
        return f"TaskExecutorProcessSpec({fields})"


class WorkerNode(msgspec.Struct, frozen=True, kw_only=True):
    """Where a requested worker runs (Flink's WorkerType): its process id and host, and the id
    of the cluster executor hosting it (empty when there is none)."""

    resource_id: str
    pid: int
    host: str
    executor_id: str = ""


class ResourceEventHandler(Protocol):
    """The ResourceManager's side: what a driver reports (Flink's ResourceEventHandler)."""

    def on_worker_terminated(self, resource_id: str, diagnostics: str) -> None:
        """A requested worker ended (its process exited, its container completed): whether
        released or not, it is gone. Called on the cluster's event loop."""

    def on_error(self, error: BaseException) -> None:
        """The driver cannot go on: a fatal error of the ResourceManager."""


class WorkerHost(Protocol):
    """What the cluster offers its driver."""

    #: the cluster's event loop (a driver's threads report through ``call_soon_threadsafe``)
    loop: EventLoop

    def start_task_executor(self, spec: TaskExecutorProcessSpec) -> None:
        """Start a TaskExecutor in the cluster's own process (an in-process driver's way)."""

    def stop_task_executor(self, resource_id: str) -> None:
        """Stop an in-process TaskExecutor."""


class ResourceManagerDriver(Protocol):
    """Starts and stops workers for the ResourceManager (Flink's ResourceManagerDriver)."""

    #: whether its TaskExecutors run in the cluster's process: the only kind a simulated
    #: (single-threaded, deterministic) run can have
    in_process: bool

    def initialize(self, handler: ResourceEventHandler) -> None:
        """The ResourceManager starts: report worker events to ``handler`` from now on."""

    def request_resource(self, spec: TaskExecutorProcessSpec) -> Future:
        """Start a worker running ``spec``; the Future completes with its :class:`WorkerNode`
        once it is placed (before it registers), or fails when it cannot be started."""

    def release_resource(self, resource_id: str) -> None:
        """Stop a worker the ResourceManager no longer wants (idle, or not registered in time)."""

    def kill_worker(self, resource_id: str) -> bool:
        """The ``kill`` fault: end the worker's process at once (SIGKILL), as a crash would;
        False when the driver cannot (an in-process worker's death is simulated)."""

    def terminate(self) -> None:
        """The cluster shuts down: stop every worker and wait until they are gone."""
