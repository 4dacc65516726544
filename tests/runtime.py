"""Helpers for runtime tests: run a job in-process and look at what it printed and recorded."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import Any, Callable

from kernel.errors import JobFailed
from kernel.lifecycle.executors import SessionExecutor, use_executor
from kernel.lifecycle.session import Session
from kernel.lifecycle.summary import RunOutcome
from kernel.testing import CapturedEvents, EventCapture


@dataclass
class JobRun:
    lines: list[str]
    outcome: RunOutcome
    captured: CapturedEvents
    error: JobFailed | None = None

    def events(self, *kinds: type) -> list[Any]:
        return self.captured.of(*kinds)


def run_job(build: Callable[[Any], None], *sets: str, plugins: tuple = (), faults: tuple | list = ()) -> JobRun:
    """Run ``build(env)`` (which calls env.execute()) with a simulated clock unless ``sets``
    choose otherwise, with injected ``faults`` (``KIND:key=value,...``); the event log goes to
    the test's RILL_HOME. Slot requirements are checked at once
    (``slotmanager.requirement-check.delay=0``), so tasks start at clock 0 and tests can
    reason about exact times."""
    from kernel.config import load_raw
    from kernel.datastream import StreamExecutionEnvironment
    from kernel.faults import parse_inject

    capture = EventCapture()
    defaults = ("rill.clock=simulated", "slotmanager.requirement-check.delay=0")
    raw = load_raw(sets=(*defaults, *sets))
    if faults:
        raw = raw.with_faults([parse_inject(spec) for spec in faults])
    session = Session.from_raw(raw, plugins=(capture, *plugins))
    executor = SessionExecutor(session, quiet=True)
    out = io.StringIO()
    error = None
    with use_executor(executor), contextlib.redirect_stdout(out):
        env = StreamExecutionEnvironment.get_execution_environment()
        try:
            build(env)
        except JobFailed as exc:
            error = exc
        for execution in executor.executions:  # jobs of execute_async: their end is recorded first
            execution.join()
    return JobRun(out.getvalue().splitlines(), executor.outcomes[-1], capture.last, error)
