"""The ``local`` execution backend: executes a compiled job on an in-process MiniCluster.

Cancellations and savepoint requests of the program (``JobClient``) go to the cluster's loop;
when the job has ended, a savepoint request still unanswered fails — unless it stopped the job,
whose end carries the savepoint's path.
"""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING, Any

from kernel.runtime.backpressure import MAILBOX_TIMING
from kernel.runtime.checkpointing.failures import CheckpointException
from kernel.contracts.backend import JobResult
from kernel.errors import JobNotRunning
from kernel.lifecycle.summary import VertexSummary
from plugins.local.minicluster import JobOutcome, MiniCluster
from plugins.local.options import ClusterOptions

if TYPE_CHECKING:
    from kernel.lifecycle.compiler import CompiledJob
    from kernel.lifecycle.program import SavepointRequest
    from kernel.lifecycle.run import Run


class LocalBackend:
    name = "local"

    def prepare(self, compiled: CompiledJob) -> None:
        """The embedded cluster runs every job; it starts with the run."""

    def execute(self, compiled: CompiledJob, run: Run) -> JobResult:
        options = run.config.section(ClusterOptions)
        cluster = MiniCluster(run, options)
        job_id = compiled.job_graph.job_id
        compiled.program.cancellation.listen(lambda reason: run.loop.call_soon_threadsafe(cluster.cancel, job_id, reason))
        requests: list[SavepointRequest] = []

        def request_savepoint(request: SavepointRequest) -> None:
            requests.append(request)
            run.loop.call_soon_threadsafe(cluster.trigger_savepoint, job_id, request.directory, request.terminate,
                                          request.drain, partial(_answer, request))

        compiled.program.savepoints.listen(request_savepoint)
        outcome = cluster.execute(compiled.job_graph)
        ended = f"job {job_id} has ended ({outcome.status}) without taking the savepoint"
        compiled.program.savepoints.close(ended)
        for request in requests:
            if request.terminate and outcome.savepoint:
                request.result.complete(outcome.savepoint)
            else:
                request.result.complete_exceptionally(JobNotRunning(ended))
        details: dict[str, Any] = {"tasks": outcome.tasks, "workers_started": outcome.workers_started}
        if outcome.savepoint:
            details["savepoint"] = outcome.savepoint
        if outcome.savepoint_failure:
            details["savepoint_failure"] = outcome.savepoint_failure
        return JobResult(
            status=outcome.status,
            failure=outcome.failure,
            vertices=vertex_summaries(compiled, outcome),
            notes=[f"{outcome.workers_started} TaskExecutor(s) started, {options.task_slots} slot(s) each",
                   *outcome.recovery],
            details=details,
        )


def _answer(request: SavepointRequest, path: str | None, failure: str | None) -> None:
    if path is not None:
        request.result.complete(path)
    else:
        request.result.complete_exceptionally(CheckpointException(failure))


def vertex_summaries(compiled: CompiledJob, outcome: JobOutcome) -> list[VertexSummary]:
    latest: dict[tuple[str, int], Any] = {}
    for task in outcome.tasks:
        key = (task.vertex_id, task.subtask)
        if key not in latest or task.attempt >= latest[key].attempt:
            latest[key] = task
    judgement = outcome.back_pressure
    measured = dict(judgement.ratios) if judgement is not None else {}
    summaries = []
    for vertex in compiled.job_graph.topological_order():
        tasks = [t for (vid, _), t in latest.items() if vid == vertex.id]
        busy = [t.totals["busy_ms"] / t.totals["life_ms"] for t in tasks if t.totals["life_ms"] > 0]
        back = [t.totals["back_pressured_ms"] / t.totals["life_ms"] for t in tasks if t.totals["life_ms"] > 0]
        summaries.append(VertexSummary(
            name=vertex.name,
            parallelism=vertex.parallelism,
            records_in=sum(t.records_in for t in tasks),
            records_out=sum(t.records_out for t in tasks),
            busy_ratio=max(busy) if busy and not any(math.isnan(b) for b in busy) else (math.nan if busy else 0.0),
            back_pressured_ratio=max(back) if back else 0.0,
            measure=judgement.measure if judgement is not None else MAILBOX_TIMING,
            measured_ratio=measured.get(vertex.id),
        ))
    return summaries
