"""The live status line of ``rill run`` on a terminal.

While a run goes, one line on stderr is rewritten in place with the clock time elapsed, the
rate the sources emit, the low watermark of the job's last vertices, the worst back-pressure
level and the failures so far. It reads the run's events like any observer (batches arrive every
``rill.events.flush-interval``) and is cleared before the summary is printed.
"""

from __future__ import annotations

import threading
from typing import Any, TextIO

from kernel import hookimpl
from kernel.runtime.backpressure import back_pressure_level_of_ms
from kernel.clock import MAX_LONG
from kernel.runtime.cluster_events import ExecutionStateChanged, TaskMetricsSampled, WatermarkAdvanced
from kernel.eventbus import EventBatch
from kernel.events import JobEdgeDefined, JobVertexDefined, RunStarted

TERMINAL = {"FINISHED", "CANCELED", "FAILED"}


class RunProgress:
    """What the status line shows for one run, updated from its events."""

    def __init__(self, stream: TextIO, lock: threading.Lock) -> None:
        self.stream = stream
        self.lock = lock
        self.started: int | None = None
        self.now: int | None = None
        self.sources: set[str] = set()
        self.targets: set[str] = set()
        self.vertices: set[str] = set()
        self.samples: dict[tuple[str, int, int], TaskMetricsSampled] = {}
        self.inputs: dict[tuple[str, int, int, int], int] = {}
        self.failures = 0
        self.shown = False
        self.stopped = False

    # -- observer -----------------------------------------------------------------------------

    def events_emitted(self, batch: EventBatch) -> None:
        for event in batch.events:
            self._apply(event)
        self._render()

    def close(self, status: str) -> None:
        self.stop()

    def stop(self) -> None:
        """Clear the line; nothing more is shown for this run."""
        with self.lock:
            if self.shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self.shown = False
            self.stopped = True

    # -- state --------------------------------------------------------------------------------

    def _apply(self, event: Any) -> None:
        self.now = event.time
        if isinstance(event, RunStarted):
            self.started = event.time
        elif isinstance(event, JobVertexDefined):
            self.vertices.add(event.vertex_id)
        elif isinstance(event, JobEdgeDefined):
            self.sources.add(event.source_vertex_id)
            self.targets.add(event.target_vertex_id)
        elif isinstance(event, TaskMetricsSampled):
            self.samples[(event.vertex_id, event.subtask, event.attempt)] = event
        elif isinstance(event, WatermarkAdvanced) and event.direction == "input":
            self.inputs[(event.vertex_id, event.subtask, event.attempt, event.input)] = event.watermark
        elif isinstance(event, ExecutionStateChanged):
            if event.new_state == "FAILED":
                self.failures += 1
            if event.new_state in TERMINAL:
                self.samples.pop((event.vertex_id, event.subtask, event.attempt), None)
            if event.new_state in ("FAILED", "CANCELED"):  # a later attempt brings its own watermarks
                attempt = (event.vertex_id, event.subtask, event.attempt)
                self.inputs = {key: w for key, w in self.inputs.items() if key[:3] != attempt}

    def line(self) -> str:
        elapsed = (self.now - self.started) / 1e9 if self.started is not None and self.now is not None else 0.0
        first = self.vertices - self.targets  # no input edge: the sources
        rate = sum(s.records_out_per_second for s in self.samples.values() if s.vertex_id in first)
        worst = max((s.back_pressured_ms for s in self.samples.values()), default=None)
        level = "-" if worst is None else back_pressure_level_of_ms(worst)
        last = self.vertices - self.sources  # feeding no edge: the sinks
        watermarks = [w for (vertex, _, _, _), w in self.inputs.items() if vertex in last]
        low = min(watermarks, default=None)
        shown = "-" if low is None else "end" if low == MAX_LONG else f"{low:,}"
        return (f"rill: {elapsed:,.1f} s | {rate:,.0f} records/s | low watermark {shown} | back pressure {level} | "
                f"failures {self.failures}")

    def _render(self) -> None:
        with self.lock:
            if self.stopped:
                return
            self.stream.write("\r\x1b[K" + self.line())
            self.stream.flush()
            self.shown = True


class LiveProgress:
    """A plugin object for a session: a status line for each of its runs."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.current: RunProgress | None = None

    @hookimpl
    def create_event_observers(self, run: Any) -> RunProgress:
        self.current = RunProgress(self.stream, self.lock)
        return self.current

    def stop(self) -> None:
        """The run ended: clear its line before its summary is printed."""
        if self.current is not None:
            self.current.stop()
