"""The job's Python environment (Flink's PythonEnvironmentManager): prepared once by the client
for the job's run, taken up by every worker that runs the job's functions.

Preparing it, on the client: Python files are put on the import path as PyFlink's workers put
them — a ``.py`` file through a directory of its own that holds only it, a directory or a zip
file (``.zip``, ``.whl``, ``.egg``) as it is; archives are extracted into the job's working
directory, each into its target directory; the requirements are installed into their cached
environment (:mod:`.requirements`) by the workers' interpreter; ``python.executable`` is found
(relative to the working directory when it lies in an archive, else on ``PATH``; the
requirements are installed by it when it is found here, else by rill's own). Everything
the job's run gets goes into a temporary directory removed when the run ends.

Taking it up: a worker puts :attr:`PythonEnvironment.import_paths` first on ``sys.path``; a
TaskExecutor process of a job with archives works in the job's working directory, as PyFlink's
Python worker does (``_PYTHON_WORKING_DIR``). A driver that starts workers on other machines
ships the same things its own way (:attr:`PythonEnvironment.info`).
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
import zipfile
from contextlib import contextmanager
from typing import Iterator

import msgspec

from kernel.pythonenv.dependencies import PythonArchive, PythonDependencyInfo
from kernel.pythonenv.requirements import install_requirements

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


@contextmanager
def prepared(info: PythonDependencyInfo) -> Iterator[PythonEnvironment]:
    """The environment of one run of the job; its temporary directory goes when the run ends."""
    if info.empty:
        yield PythonEnvironment()
        return
    directory = tempfile.mkdtemp(prefix="rill-python-")
    try:
        yield prepare(info, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def prepare(info: PythonDependencyInfo, directory: str) -> PythonEnvironment:
    working_dir = os.path.join(directory, "working-dir") if info.archives else ""
    for archive in info.archives:
        extract(archive, working_dir)
    executable = resolve_executable(info.executable, info.archives, working_dir)
    installer = executable if os.path.isabs(executable) else sys.executable  # found here, else rill's own
    requirements = install_requirements(info.requirements_file, info.requirements_cache_dir,
                                        installer) if info.requirements_file else []
    files = [staged(path, os.path.join(directory, "python-files", str(index)))
             for index, path in enumerate(info.files)]
    return PythonEnvironment(info=info, import_paths=[*files, *requirements], requirements=requirements,
                             working_dir=working_dir, executable=executable)


def staged(path: str, directory: str) -> str:
    """Where a Python file is imported from: a ``.py`` file through a directory of its own
    (so only it is importable, as in PyFlink), anything else as it is."""
    if os.path.isfile(path) and path.endswith(".py"):
        os.makedirs(directory)
        shutil.copyfile(path, os.path.join(directory, os.path.basename(path)))
        return directory
    return path


def extract(archive: PythonArchive, working_dir: str) -> str:
    """Extract a zip archive into ``working_dir/target``, keeping its files' permissions (an
    interpreter in an archived environment stays executable)."""
    target = os.path.join(working_dir, archive.target)
    with zipfile.ZipFile(archive.path) as handle:
        for member in handle.infolist():
            extracted = handle.extract(member, target)
            mode = member.external_attr >> 16
            if mode and not member.is_dir():
                os.chmod(extracted, stat.S_IMODE(mode))
    return target


def resolve_executable(executable: str, archives: list[PythonArchive], working_dir: str) -> str:
    """``python.executable`` on this machine: inside an extracted archive when its first part
    names one, else a path, else a command on ``PATH``; as given when none is found here (it
    may be an interpreter of a cluster's machines: whoever starts it says when it cannot)."""
    if not executable:
        return ""
    first = executable.split("/", 1)[0]
    if not os.path.isabs(executable) and any(archive.target == first for archive in archives):
        found = os.path.join(working_dir, executable)
    elif "/" in executable:
        found = os.path.abspath(executable)
    else:
        found = shutil.which(executable) or ""
    return found if found and os.path.isfile(found) and os.access(found, os.X_OK) else executable


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
