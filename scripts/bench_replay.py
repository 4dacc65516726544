"""Benchmark of replay and SQL analysis over a large recorded run.

    python scripts/bench_replay.py [--events 10000000]

Records a synthetic run of a job with 4 vertices × 25 subtasks into a fresh event log: every
clock second each subtask samples its metrics, emits five input and five output watermarks
and the cluster exchanges heartbeats, until the run holds ``--events`` events. Then times,
against the log alone: playing every event back (``rill replay --events``, to /dev/null),
the state at an instant (``--at``), ``rill metrics``, and the per-second views
(``task_metrics``, ``backpressure``). The plain-Python baseline is a loop that formats the
same number of lines without reading anything.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from kernel.runtime.cluster_events import (
    ExecutionStateChanged,
    HeartbeatReceived,
    HeartbeatRequested,
    TaskMetricsSampled,
    WatermarkAdvanced,
)
from kernel.events import JobVertexDefined
from kernel.lifecycle.session import Session

VERTICES = ["Source: Events", "Parse", "Window", "Sink: Results"]
PARALLELISM = 25
NS = 1_000_000_000


def record(total: int) -> str:
    session = Session.open(sets=["rill.clock=simulated", "rill.events.flush-interval=60 s"])
    run = session.new_run("replay benchmark")
    run.start()
    emit, job = run.bus.emit, "0" * 32
    for index, name in enumerate(VERTICES):
        emit(JobVertexDefined(time=0, job_id=job, vertex_id=f"v{index}", name=name, parallelism=PARALLELISM))
        for subtask in range(PARALLELISM):
            emit(ExecutionStateChanged(time=0, job_id=job, vertex_id=f"v{index}", vertex_name=name, subtask=subtask,
                                       old_state="DEPLOYING", new_state="RUNNING", resource_id=f"te-{subtask}"))
    emitted, second = 5 + len(VERTICES) * (PARALLELISM + 1), 0
    while emitted < total:
        second += 1
        now = second * NS
        for index, name in enumerate(VERTICES):
            vertex = f"v{index}"
            for subtask in range(PARALLELISM):
                emit(TaskMetricsSampled(time=now, job_id=job, vertex_id=vertex, vertex_name=name, subtask=subtask,
                                        idle_ms=600.0, busy_ms=300.0, back_pressured_ms=100.0 * (index == 0),
                                        records_in=1000, records_out=1000, records_in_per_second=1000.0,
                                        records_out_per_second=1000.0))
                for tick in range(5):
                    mark = now + tick * NS // 5
                    emit(WatermarkAdvanced(time=mark, job_id=job, vertex_id=vertex, vertex_name=name, subtask=subtask,
                                           direction="input", input=0, watermark=mark // 1_000_000 - 2000))
                    emit(WatermarkAdvanced(time=mark, job_id=job, vertex_id=vertex, vertex_name=name, subtask=subtask,
                                           direction="output", watermark=mark // 1_000_000 - 2000,
                                           event_time=mark // 1_000_000 if index == 0 else None))
                emitted += 11
        for subtask in range(PARALLELISM):
            emit(HeartbeatRequested(time=now, sender="jobmaster", target=f"te-{subtask}"))
            emit(HeartbeatReceived(time=now, owner="jobmaster", target=f"te-{subtask}", message="response",
                                   round_trip_ms=0.0))
            emitted += 2
        if second % 200 == 0:
            run.bus.flush()
    run.finish("finished")
    return run.id


def timed(what: str, action) -> float:
    started = time.perf_counter()
    result = action()
    took = time.perf_counter() - started
    print(f"{what:<48} {took:8.3f} s" + (f"  {result}" if result else ""))
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    args = parser.parse_args()
    os.environ["RILL_HOME"] = tempfile.mkdtemp(prefix="rill-bench-replay-")
    started = time.perf_counter()
    run_id = record(args.events)
    print(f"recorded run {run_id}: {args.events:,} events in {time.perf_counter() - started:.1f} s")

    from replay.metrics import vertex_metrics
    from replay.playback import play
    from replay.state import state_at
    from replay.store import find_run, read_log

    session = Session.open()
    with read_log(session) as con, open(os.devnull, "wb") as devnull:
        run = find_run(con, run_id)
        count = [0]

        def playback():
            count[0] = play(con, run, devnull)
            return f"{count[0]:,} events"

        took = timed("replay --events (every event, to /dev/null)", playback)
        print(f"{'  timeline replay rate':<48} {count[0] / took:12,.0f} events/s")
        timed("replay --at (state at the middle of the run)", lambda: len(state_at(con, run, run.duration_s / 2)["subtasks"]))
        timed("rill metrics (per-vertex figures)", lambda: f"{len(vertex_metrics(con, run_id))} vertices")
        timed("view task_metrics (per subtask and second)",
              lambda: con.execute("SELECT count(*), avg(busy_ms) FROM task_metrics WHERE run_id = ?", [run_id]).fetchone())
        timed("view backpressure (per vertex and second)",
              lambda: con.execute("SELECT count(*), max(level) FROM backpressure WHERE run_id = ?", [run_id]).fetchone())
        timed("view watermarks (lags, every watermark)",
              lambda: con.execute("SELECT count(*), max(lag_event_time_ms) FROM watermarks WHERE run_id = ?",
                                  [run_id]).fetchone())

    def baseline():
        with open(os.devnull, "w") as devnull:
            lines = [f"{i / 1e3:12.6f} {i:8d}  {'task_metrics_sampled':<32} {{}}" for i in range(count[0])]
            devnull.write("\n".join(lines))

    took = timed("plain loop formatting as many lines", baseline)
    print(f"{'  plain loop rate':<48} {count[0] / took:12,.0f} lines/s")


if __name__ == "__main__":
    main()
