"""The BackPressureStatsTracker of a job: Flink 1.11-1.12's back-pressure statistics
(``BackPressureStatsTrackerImpl`` with its ``BackPressureRequestCoordinator``), on the JobMaster's
clock.

When a vertex is sampled: Flink samples it when its web UI asks for the vertex's back pressure
and the stats are missing or older than ``web.backpressure.refresh-interval`` (counted from the
end of the last request). No UI asks rill, so the tracker acts as if one kept every vertex's
back-pressure tab open: a vertex is sampled as soon as all its subtasks run, and again
``refresh-interval`` after each request ended (or, if they do not all run then, as soon as they
do again).

A request (the coordinator): with every execution of the vertex RUNNING, each one's
TaskExecutor is asked to sample it ``num-samples`` times, ``delay-between-samples`` apart; when
every answer is in, one ``back_pressure_sampled`` event per subtask records its result. If an
answer fails (the task is not known there any more, no answer in time), the whole request is
discarded, as Flink does; the vertex is sampled again at once if other executions run it by
then (it was restarted meanwhile), else as soon as all its subtasks run again, or at the latest
``refresh-interval`` later.

The judgement (:meth:`vertex_ratios`): a subtask's back-pressured samples over its samples in
all requests of the run; a vertex's ratio is its worst subtask's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kernel.clock import NS_PER_MS
from plugins.backpressure.events import BackPressureSampled

if TYPE_CHECKING:
    from kernel.contracts.backpressure import MonitoredJob, TaskBackPressureResponse, TaskExecution
    from kernel.messaging import Future
    from plugins.backpressure.options import SamplingOptions


@dataclass
class _Request:
    request_id: int
    started: int
    executions: list[TaskExecution]
    answers: dict[int, TaskBackPressureResponse] = field(default_factory=dict)  # by subtask


class BackPressureStatsTracker:
    measure = "sampling"

    def __init__(self, job: MonitoredJob, options: SamplingOptions) -> None:
        self.job = job
        self.num_samples = options.num_samples
        self.delay_ms = options.delay_between_samples
        self.refresh_ns = options.refresh_interval * NS_PER_MS
        self.due: dict[str, int] = {}  # vertex id -> when it may be sampled next
        self.pending: dict[str, _Request] = {}  # vertex id -> its request in flight
        self.totals: dict[tuple[str, int], list[int]] = {}  # (vertex id, subtask) -> [samples, back pressured]
        self.requests = 0
        self.stopped = False

    def start(self) -> None:
        for vertex_id in self.job.vertex_ids():
            self.due[vertex_id] = self.job.now()
            self._request(vertex_id)

    def task_running(self, vertex_id: str) -> None:
        self._request(vertex_id)

    def stop(self) -> None:
        self.stopped = True

    def vertex_ratios(self) -> dict[str, float]:
        ratios: dict[str, float] = {}
        for (vertex_id, _), (samples, back_pressured) in self.totals.items():
            ratios[vertex_id] = max(ratios.get(vertex_id, 0.0), back_pressured / samples)
        return ratios

    # -- requests -----------------------------------------------------------------------------

    def _request(self, vertex_id: str) -> None:
        job = self.job
        if self.stopped or vertex_id in self.pending or job.now() < self.due[vertex_id]:
            return
        executions = job.running_executions(vertex_id)
        if executions is None:
            return
        request = self.pending[vertex_id] = _Request(self.requests, job.now(), executions)
        self.requests += 1
        for execution in executions:
            answer = job.request_task_back_pressure(execution, self.num_samples, self.delay_ms)
            answer.add_done_callback(lambda done, e=execution: self._answered(vertex_id, request, e, done))

    def _answered(self, vertex_id: str, request: _Request, execution: TaskExecution, done: Future) -> None:
        if self.stopped or self.pending.get(vertex_id) is not request:
            return
        if done.exception() is not None:
            del self.pending[vertex_id]
            self._sample_again(vertex_id, self.job.now())
            running = self.job.running_executions(vertex_id)
            if running is not None and running != request.executions:
                self._request(vertex_id)
            return
        request.answers[execution.subtask] = done.result()
        if len(request.answers) == len(request.executions):
            del self.pending[vertex_id]
            self._record(request)
            self._sample_again(vertex_id, self.job.now() + self.refresh_ns)

    def _sample_again(self, vertex_id: str, due: int) -> None:
        """Sample the vertex once ``due`` has come and its subtasks run; check at the latest
        ``refresh-interval`` from now."""
        self.due[vertex_id] = due
        self.job.schedule(self.refresh_ns, lambda: self._request(vertex_id))

    def _record(self, request: _Request) -> None:
        now = self.job.now()
        for execution in request.executions:
            answer: Any = request.answers[execution.subtask]
            totals = self.totals.setdefault((execution.vertex_id, execution.subtask), [0, 0])
            totals[0] += answer.samples
            totals[1] += answer.back_pressured_samples
            self.job.emit(BackPressureSampled(
                time=now, job_id=self.job.job_id, vertex_id=execution.vertex_id, vertex_name=execution.vertex_name,
                subtask=execution.subtask, attempt=execution.attempt, request_id=request.request_id,
                started=request.started, samples=answer.samples, back_pressured_samples=answer.back_pressured_samples,
                ratio=answer.back_pressured_samples / answer.samples,
            ))
