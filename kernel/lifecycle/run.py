"""A run: one execution of a job, with its clock, loop, RNG, messaging and event bus."""

from __future__ import annotations

import os
import time
import uuid
from typing import TYPE_CHECKING, Any

from kernel import __version__
from kernel.clock import NS_PER_MS, create_clock
from kernel.lifecycle.compiler import build_execution_graph
from kernel.eventbus import EventBus
from kernel.events import ExecutionGraphCompiled, MessageDelayed, MessageDropped, RunFinished, RunStarted
from kernel.loop import EventLoop
from kernel.messaging import Envelope, MessagingService
from kernel.options import EventOptions, RillOptions
from kernel.lifecycle.pythonenv.environment import PythonEnvironment
from kernel.rng import SeededRandom

if TYPE_CHECKING:
    from kernel.runtime.graph.execution import ExecutionGraph
    from kernel.runtime.graph.job import JobGraph
    from kernel.lifecycle.session import Session


def new_run_id() -> str:
    """A short unique id; identity, not runtime randomness, so not from the seeded RNG."""
    return uuid.uuid4().hex[:12]


class Run:
    """Everything one run shares. Runtime code reads time only from ``clock`` and randomness
    only from ``rng``."""

    def __init__(
        self,
        session: Session,
        job_name: str,
        *,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.session = session
        self.config = session.config
        self.plugin_manager = session.plugin_manager
        options = self.config.section(RillOptions)
        events = self.config.section(EventOptions)
        self.id = run_id or new_run_id()
        self.job_name = job_name
        self.seed = options.seed
        self.clock = create_clock(options.clock)
        self.loop = EventLoop(self.clock)
        self.rng = SeededRandom(options.seed)
        self.messaging = MessagingService(self.loop, self.rng.stream("messaging"))
        self.messaging.conditions.listeners.append(self._message_affected)
        self.bus = EventBus(self.id, flush_interval=events.flush_interval / 1000, debug=events.level == "debug")
        self.metadata: dict[str, Any] = dict(metadata or {})
        #: input files a re-execution reads instead of the job's own (path -> recorded copy)
        self.input_overrides: dict[str, str] = dict(session.input_overrides)
        #: the job's Python environment, prepared by the client for the run (``execute_job``)
        self.python_environment = PythonEnvironment()
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.status = "created"

    @property
    def clock_mode(self) -> str:
        return self.clock.mode

    def info(self) -> dict[str, Any]:
        """What the event log stores about the run in its ``runs`` row."""
        return {
            "run_id": self.id,
            "job_name": self.job_name,
            "status": self.status,
            "clock": self.clock.mode,
            "seed": self.seed,
            "config": self.config.to_dict(),
            "plugins": self.session.selected_plugins(),
            "rill_version": __version__,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "pid": os.getpid(),
            "host": os.uname().nodename,
            "metadata": self.metadata,
        }

    def start(self) -> None:
        """Create the observers and record ``run_started``, delivered here: the observers keep
        it durably before the job's code runs (a process that dies at once leaves its run)."""
        observers = self.plugin_manager.hook.create_event_observers(run=self)
        self.bus.observers = [o for o in observers if o is not None]
        self.started_at = time.time()
        self.status = "running"
        self.bus.start()
        self.bus.emit(RunStarted(time=self.clock.now(), job_name=self.job_name, clock=self.clock.mode, seed=self.seed))
        self.bus.flush(deferrable=True)

    def finish(self, status: str, reason: str = "") -> None:
        """Record ``run_finished`` and close the event bus (observers flush)."""
        self.status = status
        self.ended_at = time.time()
        self.bus.emit(RunFinished(time=self.clock.now(), status=status, reason=reason))
        self.bus.close(status)

    def build_execution_graph(self, job_graph: JobGraph) -> ExecutionGraph:
        """The job's ExecutionGraph from the graph plugin, recorded as ``execution_graph_compiled``
        (the JobMaster builds it when it starts the job)."""
        graph = build_execution_graph(self.session, job_graph)
        self.bus.emit(ExecutionGraphCompiled(
            time=self.clock.now(), job_id=graph.job_graph.job_id, job_vertices=len(graph.job_vertices),
            execution_vertices=sum(len(ejv.vertices) for ejv in graph.job_vertices),
            intermediate_results=len(graph.results),
            result_partitions=sum(len(r.partitions) for r in graph.results.values()),
        ))
        return graph

    def _message_affected(self, envelope: Envelope, verdict: str, delay: int) -> None:
        name = type(envelope.message).__name__
        now = self.clock.now()
        if verdict == "dropped":
            self.bus.emit(MessageDropped(time=now, sender=envelope.sender, receiver=envelope.receiver, message=name))
        else:
            self.bus.emit(
                MessageDelayed(
                    time=now, sender=envelope.sender, receiver=envelope.receiver, message=name,
                    delay_ms=delay / NS_PER_MS,
                )
            )
