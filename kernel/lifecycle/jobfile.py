"""Loading job scripts: run them as ``__main__`` with an executor in place, turning every
problem into an error that names the file and line."""

from __future__ import annotations

import builtins
import linecache
import os
import runpy
import sys
import types
from contextlib import contextmanager
from typing import Iterator, Sequence

from kernel.errors import JobDefinitionError, RillError
from kernel.lifecycle.program import Program
from kernel.lifecycle.executors import CapturingExecutor, PipelineExecutor, ProgramCaptured, use_executor
from kernel.lifecycle.session import Session
from kernel.lifecycle.tracebacks import describe


def _where(exc: BaseException, path: str) -> str:
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) == path]
    if not frames:
        return ""
    return f" ({os.path.basename(path)}, line {frames[-1].lineno})"


@contextmanager
def _script(path: str, arguments: Sequence[str], recorded: bool = False) -> Iterator[str]:
    if not recorded and not os.path.isfile(path):
        what = "is not a regular file" if os.path.exists(path) else "does not exist"
        raise JobDefinitionError(f"job file {path!r} {what}")
    if not path.endswith(".py"):
        raise JobDefinitionError(f"job file {path!r} is not a Python file")
    absolute = os.path.abspath(path)
    saved_argv, saved_path = sys.argv, sys.path
    sys.argv = [absolute, *arguments]
    # new lists, never changed in place: other threads (the event log's flusher) may be
    # importing, iterating over the old one
    sys.path = [os.path.dirname(absolute), *saved_path]
    try:
        yield absolute
    finally:
        sys.argv, sys.path = saved_argv, saved_path


def _run_source(source: str, absolute: str) -> None:
    """Run ``source`` as the ``__main__`` module of a script at ``absolute`` (its code, its
    tracebacks and its ``__file__`` name that path), as ``runpy.run_path`` runs a file."""
    lines = source.splitlines(keepends=True)
    linecache.cache[absolute] = (len(source), None, lines, absolute)
    module = types.ModuleType("__main__")
    module.__file__ = absolute
    module.__builtins__ = builtins
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(compile(source, absolute, "exec"), module.__dict__)
    finally:
        if saved is None:
            sys.modules.pop("__main__", None)
        else:
            sys.modules["__main__"] = saved


def run_script(path: str, executor: PipelineExecutor, arguments: Sequence[str] = (), source: str | None = None) -> None:
    """Run a job script with ``executor`` handling its ``execute()`` calls (the programs it
    executes know their script and arguments); ``sys.argv`` is the script's path followed by
    ``arguments``, as ``python JOB ARGS...`` (and ``flink run``) give them. When the script
    ends, wait for the jobs it submitted asynchronously. ``source``: the script's recorded text,
    run as the script at ``path`` (which may no longer exist)."""
    with _script(path, arguments, recorded=source is not None) as absolute, use_executor(executor):
        executor.source_file = absolute
        executor.arguments = list(arguments)
        try:
            if source is None:
                runpy.run_path(absolute, run_name="__main__")
            else:
                _run_source(source, absolute)
        except JobDefinitionError as exc:
            exc.args = (f"{exc}{_where(exc, absolute)}",)  # where in the job the definition went wrong
            raise
        except (ProgramCaptured, RillError, KeyboardInterrupt):
            raise
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise JobDefinitionError(f"job file {path} exited with status {exc.code}") from None
        except SyntaxError as exc:
            raise JobDefinitionError(f"job file {path} is not valid Python: {exc.msg} (line {exc.lineno})") from None
        except Exception as exc:
            raise JobDefinitionError(
                f"job file {path} raised {describe(exc)}{_where(exc, absolute)}"
            ) from exc
        executor.wait_for_jobs()


def load_program(path: str, session: Session, arguments: Sequence[str] = ()) -> Program:
    """The program a job script builds, captured at its first ``execute()``."""
    try:
        run_script(path, CapturingExecutor(session), arguments)
    except ProgramCaptured as captured:
        captured.program.source_file = os.path.abspath(path)
        captured.program.arguments = list(arguments)
        return captured.program
    raise JobDefinitionError(f"job file {path} defines no job: it never calls env.execute() or env.execute_async()")
