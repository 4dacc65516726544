"""The back-pressure monitoring contract (concern ``backpressure``): a measure of back pressure
that the JobMaster drives, besides the one every task keeps.

Every task measures its back-pressured time with the mailbox's TimerGauges
(``TaskMetricsSampled.back_pressured_ms``, Flink's ``backPressuredTimeMsPerSecond``) whichever
plugin is chosen: busy and idle time need the same timers. Judging back pressure by it is Flink's
way since 1.13 (plugin ``mailbox-timing``: no monitor). Another measure is a
:class:`BackPressureMonitor` the JobMaster creates once per job (hook
``create_back_pressure_monitor``) and hands the :class:`MonitoredJob`: the job's vertices, the
executions of a vertex whose subtasks all run, and requests to the TaskExecutors running them
(Flink 1.11-1.12's ``TaskExecutorGateway.requestTaskBackPressure``), answered by the
TaskExecutor's sample service with a :class:`TaskBackPressureResponse`. The monitor records
its results as events and publishes its judgement in a view (:mod:`kernel.runtime.backpressure`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from kernel.events import Event
    from kernel.loop import TimerHandle
    from kernel.messaging import Future


@dataclass(frozen=True)
class TaskExecution:
    """One running execution attempt of a subtask, and the TaskExecutor it runs on."""

    vertex_id: str
    vertex_name: str
    subtask: int
    attempt: int
    resource_id: str


class TaskBackPressureResponse(Protocol):
    """A TaskExecutor's answer to a back-pressure request: of the ``samples`` it took (fewer
    than asked if the task stopped running meanwhile), how many found the task back pressured
    (Flink's ``Task.isBackPressured()``: an output partition has no buffer available)."""

    samples: int
    back_pressured_samples: int


class MonitoredJob(Protocol):
    """What the JobMaster offers its back-pressure monitor."""

    #: the job's id
    job_id: str

    def vertex_ids(self) -> list[str]:
        """The job's vertices, from the sources (topological order)."""

    def running_executions(self, vertex_id: str) -> list[TaskExecution] | None:
        """The current execution of every subtask of the vertex, by subtask, if all of them are
        RUNNING; otherwise None (Flink's coordinator refuses to sample a vertex then)."""

    def request_task_back_pressure(self, execution: TaskExecution, num_samples: int,
                                   delay_between_samples_ms: int) -> Future:
        """Ask the execution's TaskExecutor (a message) to sample whether the task is back
        pressured ``num_samples`` times, ``delay_between_samples_ms`` apart, the first at once.
        The Future gives a :class:`TaskBackPressureResponse`, or fails (the task is not known
        there, no answer within the RPC timeout plus the sampling time)."""

    def schedule(self, delay_ns: int, callback: Callable[[], Any]) -> TimerHandle:
        """Run ``callback`` on the JobMaster after ``delay_ns`` of clock time (background work:
        it does not keep a run going); never once the JobMaster stopped."""

    def now(self) -> int:
        """The clock time (ns)."""

    def emit(self, event: Event) -> None:
        """Record an event of the run."""


class BackPressureMonitor(Protocol):
    """A job's back-pressure measure driven by the JobMaster."""

    #: the measure's name: the plugin's (``sampling``), naming its view
    measure: str

    def start(self) -> None:
        """The job started: begin as soon as vertices run."""

    def task_running(self, vertex_id: str) -> None:
        """A subtask of the vertex reported RUNNING (all of them may run now)."""

    def stop(self) -> None:
        """The job ended: nothing more is requested or recorded."""

    def vertex_ratios(self) -> dict[str, float]:
        """The judgement so far, for the run's summary: per job vertex measured, the largest
        back-pressured ratio (0..1) of its subtasks over the whole run."""
