"""Helpers for runtime tests: run a job in-process and look at what it printed and recorded."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import Any, Callable

from kernel.errors import JobFailed
from kernel.execution import SessionExecutor
from kernel.program import use_executor
from kernel.session import Session
from kernel.summary import RunOutcome
from kernel.testing import CapturedEvents, EventCapture


@dataclass
class JobRun:
    lines: list[str]
    outcome: RunOutcome
    captured: CapturedEvents
    error: JobFailed | None = None

    def events(self, *kinds: type) -> list[Any]:
        return self.captured.of(*kinds)


def run_job(build: Callable[[Any], None], *sets: str, plugins: tuple = ()) -> JobRun:
    """Run ``build(env)`` (which calls env.execute()) with a simulated clock unless ``sets``
    choose otherwise; the event log goes to the test's RILL_HOME."""
    from kernel.datastream import StreamExecutionEnvironment

    capture = EventCapture()
    session = Session.open(sets=("rill.clock=simulated", *sets), plugins=(capture, *plugins))
    executor = SessionExecutor(session, quiet=True)
    out = io.StringIO()
    error = None
    with use_executor(executor), contextlib.redirect_stdout(out):
        env = StreamExecutionEnvironment.get_execution_environment()
        try:
            build(env)
        except JobFailed as exc:
            error = exc
    session.close()
    return JobRun(out.getvalue().splitlines(), executor.outcomes[-1], capture.last, error)
