"""What the JobMaster offers its back-pressure monitor (the ``MonitoredJob`` of
:mod:`kernel.contracts.backpressure`), and the monitor's creation.

A back-pressure request is a message to the TaskExecutor running the execution, answered by
its sample service (:mod:`plugins.local.backpressure`); it times out after ``pekko.ask.timeout``
plus the time the samples take (Flink's request timeout).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from kernel.clock import NS_PER_MS
from kernel.contracts.backpressure import TaskExecution
from kernel.runtime.graph.execution import ExecutionState
from plugins.local import messages as m

if TYPE_CHECKING:
    from kernel.contracts.backpressure import BackPressureMonitor
    from kernel.events import Event
    from kernel.loop import TimerHandle
    from kernel.messaging import Future
    from plugins.local.jobmaster.jobmaster import JobMaster


class MonitoredJobGateway:
    def __init__(self, job_master: JobMaster) -> None:
        self.job_master = job_master
        self.job_id = job_master.job_id

    def vertex_ids(self) -> list[str]:
        return [vertex.id for vertex in self.job_master.job_graph.topological_order()]

    def running_executions(self, vertex_id: str) -> list[TaskExecution] | None:
        vertices = self.job_master.scheduler.graph.job_vertex(vertex_id).vertices
        if any(ev.current.state is not ExecutionState.RUNNING for ev in vertices):
            return None
        return [TaskExecution(vertex_id, ev.job_vertex.name, ev.subtask, ev.current.attempt, ev.current.slot.resource_id)
                for ev in vertices]

    def request_task_back_pressure(self, execution: TaskExecution, num_samples: int,
                                   delay_between_samples_ms: int) -> Future:
        request = m.RequestTaskBackPressure(execution.vertex_id, execution.subtask, execution.attempt, num_samples,
                                            delay_between_samples_ms)
        timeout_ms = self.job_master.options.rpc_timeout + num_samples * delay_between_samples_ms
        return self.job_master.ask(execution.resource_id, request, timeout_ms * NS_PER_MS)

    def schedule(self, delay_ns: int, callback: Callable[[], Any]) -> TimerHandle:
        return self.job_master.schedule(delay_ns, callback, daemon=True)

    def now(self) -> int:
        return self.job_master.clock.now()

    def emit(self, event: Event) -> None:
        self.job_master.emit(event)


def create_back_pressure_monitor(job_master: JobMaster) -> BackPressureMonitor | None:
    """The monitor of the ``backpressure`` plugin (None: the task metrics judge alone)."""
    run = job_master.run
    return run.plugin_manager.hook.create_back_pressure_monitor(job=MonitoredJobGateway(job_master), run=run)


def final_judgement(monitor: BackPressureMonitor | None) -> m.BackPressureJudgement | None:
    """The job ended: stop the monitor and take what it found."""
    if monitor is None:
        return None
    monitor.stop()
    return m.BackPressureJudgement(monitor.measure, tuple(monitor.vertex_ratios().items()))
