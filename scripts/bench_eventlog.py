"""Benchmark of the event path: emit on the runtime thread, ingest into DuckDB, kill -9 loss.

    python scripts/bench_eventlog.py [--events 1000000]

Prints µs/event and events/s for (1) emitting on the runtime's thread — Struct creation plus
``bus.emit`` — next to a plain ``list.append`` of tuples as the baseline, (2) keeping the same
events in a run's segment and storing them in the DuckDB log (columnar conversion, segment
frame and fsync, insert; off the runtime's thread), and (3) the events lost when a run is
killed with SIGKILL (the loss window), writing its log as it goes (``eventlog.defer=0``) and
deferring it (its events only in its segment).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from kernel.eventbus import EventBatch
from kernel.events import Event
from kernel.lifecycle.session import Session


class TaskSampled(Event, tag="bench_task_sampled"):
    vertex: str = ""
    subtask: int = 0
    busy_ms: float = 0.0
    idle_ms: float = 0.0
    records_in: int = 0


class StateChanged(Event, tag="bench_state_changed"):
    vertex: str = ""
    subtask: int = 0
    attempt: int = 0
    state: str = ""


class WatermarkMoved(Event, tag="bench_watermark_moved"):
    vertex: str = ""
    subtask: int = 0
    watermark: int = 0


def session_in(directory: str) -> Session:
    session = Session.open(
        sets=[f"eventlog.path={directory}/bench.duckdb", "rill.clock=simulated"], environ={}, cwd=directory
    )
    for kind in (TaskSampled, StateChanged, WatermarkMoved):
        session.events.register(kind)
    return session


def emit_events(emit, n: int, now) -> float:
    start = time.perf_counter()
    for i in range(n):
        k = i % 3
        if k == 0:
            emit(TaskSampled(time=now(), vertex="Map", subtask=i & 3, busy_ms=12.5, idle_ms=987.5, records_in=i))
        elif k == 1:
            emit(StateChanged(time=now(), vertex="Map", subtask=i & 3, attempt=0, state="RUNNING"))
        else:
            emit(WatermarkMoved(time=now(), vertex="Map", subtask=i & 3, watermark=i))
    return time.perf_counter() - start


def baseline(n: int) -> float:
    out = []
    append = out.append
    start = time.perf_counter()
    for i in range(n):
        append((i, "Map", i & 3, "RUNNING"))
    return time.perf_counter() - start


def bench_emit_and_ingest(n: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        session = session_in(directory)
        run = session.new_run("bench-eventlog")
        run.start()
        clock_now = run.clock.now
        emitted = emit_events(run.bus.emit, n, clock_now)
        close_start = time.perf_counter()
        run.finish("finished")
        run.bus.join()  # the flusher stored the rest (off the runtime thread) and closed the writer
        close_time = time.perf_counter() - close_start
        base = baseline(n)
        print(f"emit    {emitted / n * 1e6:6.3f} µs/event  {n / emitted:12,.0f} events/s  "
              f"(Struct + bus.emit on the runtime thread, event log attached)")
        print(f"append  {base / n * 1e6:6.3f} µs/event  {n / base:12,.0f} events/s  "
              f"(baseline: list.append of a tuple)  ratio {emitted / base:.2f}x")
        print(f"close   {close_time:6.3f} s to store what was still pending at the end (on the flusher thread)")

        # Ingest on its own: the observer's conversion, segment and insert for batches of one flush,
        # each stored at once (as an explicit flush asks), for a run of its own.
        ingesting = session.new_run("bench-ingest")
        ingesting.start()  # its first batch (run_started) is seq 0
        writer = ingesting.bus.observers[0]
        events = []
        emit_events(events.append, n, clock_now)
        batch_size = 200_000
        start = time.perf_counter()
        for first in range(0, n, batch_size):
            writer.events_emitted(EventBatch(ingesting.id, 1 + first, events[first:first + batch_size]))
        ingest = time.perf_counter() - start
        if writer.problem or writer.events != n + 1:
            raise SystemExit(f"the ingest went wrong: {writer.problem}")
        print(f"ingest  {ingest / n * 1e6:6.3f} µs/event  {n / ingest:12,.0f} events/s  "
              f"(columnar conversion, segment frame + fsync, DuckDB insert; batches of {batch_size:,})")


CHILD = textwrap.dedent(
    """
    import sys, time
    from kernel.lifecycle.session import Session
    from kernel.events import MessageDelayed
    session = Session.open(sets=[f"eventlog.path={sys.argv[1]}", *sys.argv[2:]], environ={})
    run = session.new_run("kill-9")
    run.start()
    emit, now = run.bus.emit, run.clock.now
    print("started", flush=True)
    while True:
        for _ in range(100):
            emit(MessageDelayed(time=now(), sender="a", receiver="b", message="x"))
        time.sleep(0.001)
    """
)


def bench_kill(seconds: float, defer: bool) -> None:
    """Kill -9 a run emitting steadily; ``defer``: its events only in its segment (the log
    deferred), else in its segment and its log from the first flush on (``eventlog.defer=0``)."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "kill.duckdb"
        sets = [] if defer else ["eventlog.defer=0"]
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), *sets], stdout=subprocess.PIPE, text=True)
        child.stdout.readline()
        time.sleep(seconds)
        killed_at = time.time_ns()
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        session = Session.open(sets=[f"eventlog.path={path}"], environ={})
        store = session.plugin_manager.hook.open_event_store(config=session.config)
        with store.read() as con:  # ingests what the segment holds and the log not first
            stored = con.execute("SELECT status, events FROM runs").fetchall()
            if stored:
                last = con.execute("SELECT max(time) FROM ev_message_delayed").fetchone()[0]
        what = f"kill -9 after {seconds:.1f} s{' (deferring the log)' if defer else ' (writing the log)'}"
        if stored:
            ((status, events),) = stored
            print(f"{what}: status {status}, {events:,} events stored, last stored event "
                  f"{(killed_at - last) / 1e9:.3f} s before the kill (flush interval 1.000 s)")
        else:
            print(f"{what}: nothing stored (killed during the run's first flush)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--kill-after", type=float, default=3.5)
    args = parser.parse_args()
    bench_emit_and_ingest(args.events)
    bench_kill(args.kill_after, defer=False)
    bench_kill(args.kill_after, defer=True)


if __name__ == "__main__":
    main()
