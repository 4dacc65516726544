"""The process of a worker: ``python -m kernel.lifecycle.worker_process`` reads a
:class:`~kernel.contracts.workers.TaskExecutorProcessSpec` (MessagePack) on stdin and runs its
``entry`` with the worker's part of the run — the way a cluster manager launches Flink's
TaskManagerRunner. A driver that hosts workers elsewhere (a task on a cluster's executor)
calls :func:`run_worker` there."""

from __future__ import annotations

import importlib
import os
import pickle
import sys

import msgspec

from kernel.contracts.workers import TaskExecutorProcessSpec
from kernel.lifecycle.process_exit import skip_last_collection
from kernel.lifecycle.pythonenv.environment import activate
from kernel.lifecycle.session import Session


def run_worker(spec: TaskExecutorProcessSpec) -> None:
    """Import with the cluster's path, from its directory, and with the job's Python
    environment (:mod:`kernel.lifecycle.pythonenv.environment`); build the worker's session and its part
    of the run (same id, configuration and plugins) and call ``entry(spec, run)``."""
    for path in reversed(spec.sys_path):
        if path not in sys.path:
            sys.path.insert(0, path)
    if spec.cwd:
        os.chdir(spec.cwd)
    activate(spec.python)
    raw, input_overrides = pickle.loads(spec.config)
    session = Session.from_raw(raw)
    session.input_overrides = dict(input_overrides)
    run = session.new_run(spec.job_name, run_id=spec.run_id)
    module, _, function = spec.entry.partition(":")
    getattr(importlib.import_module(module), function)(spec, run)


def main() -> None:
    """The worker's process; it ends without the interpreter's last full collection
    (:mod:`kernel.lifecycle.process_exit`): a stopped worker's end is what its run waits for last."""
    spec = msgspec.msgpack.decode(sys.stdin.buffer.read(), type=TaskExecutorProcessSpec)
    try:
        run_worker(spec)
    finally:
        skip_last_collection()


if __name__ == "__main__":
    main()
