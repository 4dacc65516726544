"""The program a job script builds: what ``env.execute()`` hands to the current executor
(:mod:`kernel.lifecycle.executors`), and the requests (cancel, savepoints) made of it while it
runs."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from kernel.common.completable_future import CompletableFuture
from kernel.errors import JobDefinitionError, JobNotRunning
from kernel.lifecycle.pythonenv.options import HONOURED_KEYS as HONOURED_BRIDGE_KEYS
from kernel.lifecycle.pythonenv.options import KEYS as PYTHON_DEPENDENCY_KEYS

if TYPE_CHECKING:
    from kernel.datastream.transformations import Transformation

DEFAULT_STREAMING_JOB_NAME = "Flink Streaming Job"
DEFAULT_BATCH_JOB_NAME = "Flink Batch Job"
#: keys a job's Configuration may set that only matter to PyFlink's Python/Java bridge
BRIDGE_KEY_PREFIXES = ("python.", "pipeline.jars", "pipeline.classpaths")


class JobCancellation:
    """A request to cancel a running program, made from another thread (``JobClient.cancel``).
    The backend running the program listens for it; a request made before it listens is
    delivered when it does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reason: str | None = None
        self._listener: Callable[[str], None] | None = None

    @property
    def requested(self) -> bool:
        return self._reason is not None

    def request(self, reason: str) -> None:
        with self._lock:
            if self._reason is not None:
                return
            self._reason = reason
            listener = self._listener
        if listener is not None:
            listener(reason)

    def listen(self, listener: Callable[[str], None]) -> None:
        """``listener(reason)`` is called (from the requesting thread) when cancelling is requested."""
        with self._lock:
            self._listener = listener
            reason = self._reason
        if reason is not None:
            listener(reason)


@dataclass(frozen=True)
class SavepointRequest:
    """A savepoint of a running program (``JobClient.trigger_savepoint``), or its stop with one
    (``stop_with_savepoint``: ``terminate``; ``drain`` advances to the end of event time first).
    ``result`` completes with the savepoint's path, or fails with why there is none."""

    directory: str | None
    terminate: bool
    drain: bool
    result: CompletableFuture


class SavepointRequests:
    """Savepoint requests for a running program, made from other threads. The backend running
    the program listens for them; requests made before it listens are delivered when it does;
    once it stops listening (the job ended), every request not yet answered fails."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[SavepointRequest] = []
        self._listener: Callable[[SavepointRequest], None] | None = None
        self._closed: str | None = None

    def request(self, request: SavepointRequest) -> None:
        with self._lock:  # the listener runs under it: once closed, no request is on its way
            closed = self._closed
            if closed is None:
                if self._listener is None:
                    self._waiting.append(request)
                else:
                    self._listener(request)
        if closed is not None:
            request.result.complete_exceptionally(JobNotRunning(closed))

    def listen(self, listener: Callable[[SavepointRequest], None]) -> None:
        """``listener(request)`` is called (from the requesting thread, quickly: it holds a lock)
        for every request."""
        with self._lock:
            self._listener = listener
            waiting, self._waiting = self._waiting, []
            for request in waiting:
                listener(request)

    def close(self, reason: str) -> None:
        """The program ended: later requests fail with ``reason``."""
        with self._lock:
            self._closed = reason
            self._listener = None
            waiting, self._waiting = self._waiting, []
        for request in waiting:
            request.result.complete_exceptionally(JobNotRunning(reason))


@dataclass
class Program:
    """Everything ``execute()`` hands over: the transformations and the environment's settings."""

    job_name: str
    transformations: list[Transformation]
    parallelism: int
    max_parallelism: int
    chaining_enabled: bool
    runtime_mode: str
    #: ``env.set_buffer_timeout`` (ms; -1: only full buffers), None: ``execution.buffer-timeout.*``
    buffer_timeout: int | None
    auto_watermark_interval: int | None
    env: Any
    #: ``ExecutionConfig.set_global_job_parameters`` (``RuntimeContext.get_job_parameter``)
    job_parameters: dict[str, str] = field(default_factory=dict)
    #: config keys the job set through its Configuration (validated when executed)
    config_overrides: dict[str, str] = field(default_factory=dict)
    #: the job script, when the program came from one, and the arguments it was given
    source_file: str | None = None
    arguments: list[str] = field(default_factory=list)
    #: cancel requests while the program runs (``execute_async``)
    cancellation: JobCancellation = field(default_factory=JobCancellation)
    #: savepoint requests while the program runs (``execute_async``)
    savepoints: SavepointRequests = field(default_factory=SavepointRequests)

    def sets(self) -> list[str]:
        """The job's config keys as ``key=value`` overrides: rill's keys and the PyFlink bridge keys
        rill honours (the job's Python dependencies, user metrics on or off; PyFlink's other
        bridge keys change nothing)."""
        return [f"{k}={json.dumps(v) if k in PYTHON_DEPENDENCY_KEYS else v}" for k, v in self.config_overrides.items()
                if k in HONOURED_BRIDGE_KEYS or not k.startswith(BRIDGE_KEY_PREFIXES)]


def check_program(program: Program) -> None:
    if not program.transformations:
        raise JobDefinitionError("No operators defined in streaming topology. Cannot execute.")
