"""The job's Python environment (Flink's PythonEnvironment): what the client prepared for
the job's run (:func:`kernel.lifecycle.execution.prepared`, :mod:`.manager`) and how a worker takes it up — its import paths first on
``sys.path``; in a TaskExecutor process of a job with archives, the job's working directory, as
PyFlink's Python worker works in it (``_PYTHON_WORKING_DIR``). A driver that starts workers on
other machines ships the same things its own way (:attr:`PythonEnvironment.info`)."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator

import msgspec

from kernel.lifecycle.pythonenv.dependencies import PythonDependencyInfo

#: where the job's archives are, in the environment of its functions (PyFlink's name)
WORKING_DIR_VARIABLE = "_PYTHON_WORKING_DIR"


class PythonEnvironment(msgspec.Struct, frozen=True, kw_only=True):
    """The job's Python environment as prepared on the client's machine."""

    #: what the job asked for (absolute paths on the client)
    info: PythonDependencyInfo = PythonDependencyInfo()
    #: first on the job's import path: its files as staged, then its requirements' site directories
    import_paths: list[str] = []
    #: the requirements' site directories
    requirements: list[str] = []
    #: where the archives are extracted ("" when the job has none: workers keep their own)
    working_dir: str = ""
    #: the interpreter of TaskExecutor processes ("" for rill's own)
    executable: str = ""


def activate(environment: PythonEnvironment) -> None:
    """Take the environment up in a worker process: its import paths first; the job's working
    directory when it has archives (also in ``_PYTHON_WORKING_DIR``, as PyFlink's workers have it)."""
    if environment.import_paths:
        sys.path = [*environment.import_paths, *(p for p in sys.path if p not in environment.import_paths)]
    if environment.working_dir:
        os.chdir(environment.working_dir)
        os.environ[WORKING_DIR_VARIABLE] = environment.working_dir


@contextmanager
def importable(environment: PythonEnvironment) -> Iterator[None]:
    """The environment in this process while the block runs (the job's functions run here:
    embedded TaskExecutors, sinks run by a driver): its import paths first on ``sys.path``; the
    working directory stays the process's own, the archives' is in ``_PYTHON_WORKING_DIR``."""
    added = [path for path in environment.import_paths if path not in sys.path]
    if added:
        sys.path = [*added, *sys.path]  # a new list: other threads may be iterating the old one
    saved = os.environ.get(WORKING_DIR_VARIABLE)
    if environment.working_dir:
        os.environ[WORKING_DIR_VARIABLE] = environment.working_dir
    try:
        yield
    finally:
        if added:
            sys.path = [path for path in sys.path if path not in added]
        if environment.working_dir:
            if saved is None:
                os.environ.pop(WORKING_DIR_VARIABLE, None)
            else:
                os.environ[WORKING_DIR_VARIABLE] = saved
