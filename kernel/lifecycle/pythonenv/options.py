"""PyFlink's PythonOptions that rill honours: the job's Python dependencies, with PyFlink's names
and formats (``,`` between entries, ``#`` before an archive's target directory or the
requirements' cache directory), and whether user metrics are on. A job sets them through its
Configuration (``add_python_file``, ``add_python_archive``, ``set_python_requirements``,
``set_python_executable``, ``python.metric.enabled``); they win over the configured ones."""

from __future__ import annotations

import os
from typing import Annotated, Any

import msgspec

from kernel.config import Section

#: the dependency keys a job's Configuration passes on to rill's configuration
KEYS = ("python.files", "python.archives", "python.requirements", "python.executable")
#: every key of PyFlink's bridge a job's Configuration passes on
HONOURED_KEYS = frozenset({*KEYS, "python.metric.enabled"})


class PythonOptions(Section):
    files: Annotated[str, msgspec.Meta(
        description="Python files, zip files or directories put on the job's import path on every worker "
                    "(comma-separated)")] = msgspec.field(name="python.files", default="")
    archives: Annotated[str, msgspec.Meta(
        description="zip archives extracted into the job's working directory on every worker, each "
                    "'archive.zip' or 'archive.zip#target_dir' (comma-separated)")] = msgspec.field(
        name="python.archives", default="")
    requirements: Annotated[str, msgspec.Meta(
        description="requirements file installed into a cached per-job environment, optionally "
                    "'requirements.txt#cache_dir' to install offline from cache_dir")] = msgspec.field(
        name="python.requirements", default="")
    executable: Annotated[str, msgspec.Meta(
        description="interpreter of the TaskExecutor processes (default: rill's own; with spark workers, "
                    "the executors' Python)")] = msgspec.field(name="python.executable", default="")
    metric_enabled: Annotated[
        bool, msgspec.Meta(description="user metrics: false makes RuntimeContext.get_metrics_group() return None, "
                                       "as PyFlink's")
    ] = msgspec.field(name="python.metric.enabled", default=True)

    def resolved(self) -> dict[str, tuple[Any, str]]:
        worked_out: dict[str, tuple[Any, str]] = {}
        for key, value in (("python.files", self.files), ("python.requirements", self.requirements)):
            if value:
                absolute = ",".join("#".join(os.path.abspath(p) for p in entry.split("#"))
                                    for entry in _entries(value))
                if absolute != value:
                    worked_out[key] = (absolute, "relative to the working directory")
        if self.archives:
            absolute = ",".join(_absolute_archive(entry) for entry in _entries(self.archives))
            if absolute != self.archives:
                worked_out["python.archives"] = (absolute, "relative to the working directory")
        return worked_out


def _entries(value: str) -> list[str]:
    return [entry.strip() for entry in value.split(",") if entry.strip()]


def _absolute_archive(entry: str) -> str:
    path, hash_, target = entry.partition("#")
    return os.path.abspath(path) + hash_ + target
