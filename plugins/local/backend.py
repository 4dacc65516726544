"""The ``local`` execution backend: runs a compiled job on an in-process MiniCluster."""

from __future__ import annotations

import math
import time
from typing import Any

from kernel.compiler import CompiledJob
from kernel.execution import program_metadata, record_compilation
from kernel.options import RuntimeOptions
from kernel.session import Session
from kernel.summary import RunOutcome, VertexSummary
from plugins.local.minicluster import JobOutcome, MiniCluster

RUN_STATUS = {"FINISHED": "finished", "FAILED": "failed", "CANCELED": "canceled"}


class LocalBackend:
    name = "local"

    def execute(self, compiled: CompiledJob, session: Session) -> RunOutcome:
        options = session.config.section(RuntimeOptions)
        run = session.new_run(compiled.program.job_name, metadata=program_metadata(compiled.program))
        run.start()
        wall_start, clock_start = time.perf_counter(), run.clock.now()
        record_compilation(run, compiled)
        cluster = MiniCluster(run, options)
        job_id = compiled.job_graph.job_id
        compiled.program.cancellation.listen(lambda reason: run.loop.call_soon_threadsafe(cluster.cancel, job_id, reason))
        try:
            outcome = cluster.execute(compiled.job_graph)
        except BaseException as exc:
            run.finish("failed", f"{type(exc).__name__}: {exc}")
            raise
        reason = outcome.failure.splitlines()[0] if outcome.failure else ""
        run.finish(RUN_STATUS.get(outcome.status, outcome.status.lower()), reason)
        return RunOutcome(
            run_id=run.id,
            job_id=compiled.job_graph.job_id,
            job_name=compiled.job_graph.job_name,
            status=outcome.status,
            failure=outcome.failure,
            wall_seconds=time.perf_counter() - wall_start,
            clock_seconds=(run.clock.now() - clock_start) / 1e9,
            clock_mode=run.clock.mode,
            vertices=vertex_summaries(compiled, outcome),
            notes=[f"{outcome.workers_started} TaskExecutor(s) started, {options.task_slots} slot(s) each",
                   *outcome.recovery],
            details={"tasks": outcome.tasks, "workers_started": outcome.workers_started},
        )


def vertex_summaries(compiled: CompiledJob, outcome: JobOutcome) -> list[VertexSummary]:
    latest: dict[tuple[str, int], Any] = {}
    for task in outcome.tasks:
        key = (task.vertex_id, task.subtask)
        if key not in latest or task.attempt >= latest[key].attempt:
            latest[key] = task
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
        ))
    return summaries
