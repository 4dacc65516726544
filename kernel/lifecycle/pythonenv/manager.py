"""Preparing the job's Python environment on the client (Flink's PythonEnvironmentManager).

Python files are put on the import path as PyFlink's workers put them — a ``.py`` file through
a directory of its own that holds only it, a directory or a zip file (``.zip``, ``.whl``,
``.egg``) as it is; archives are extracted into the job's working directory, each into its
target directory; ``python.executable`` is found (relative to the working directory when it
lies in an archive, else on ``PATH``); the requirements are installed into their cached
environment (:mod:`.requirements`) by that interpreter when it is found here, else by rill's
own. Everything the job's run gets goes into a temporary directory of the run
(:func:`kernel.lifecycle.execution.prepared`)."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import zipfile

from kernel.lifecycle.pythonenv.dependencies import PythonArchive, PythonDependencyInfo
from kernel.lifecycle.pythonenv.environment import PythonEnvironment
from kernel.lifecycle.pythonenv.requirements import install_requirements


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
