"""What the Spark task of a ``spark`` worker runs: one TaskExecutor, in the Python worker
process that hosts the task on a Spark executor.

The task gets its worker's :class:`~kernel.contracts.workers.TaskExecutorProcessSpec`, the
address of the driver's *task channel* and the run's security keys. It connects there, proves
it knows the run's secret (:mod:`kernel.remoting.security`), and says hello (the resource id,
its process id and host, its Spark stage and task attempt, from which the driver learns the
executor), sends what is printed while it runs (``sys.stdout``, whole lines) over the channel,
and runs the TaskExecutor with :func:`kernel.lifecycle.worker_process.run_worker` — which connects to the
cluster's process over the run's TCP messaging and registers at the ResourceManager like any
other. The channel carries the driver's commands: ``stop`` (SIGTERM: the TaskExecutor stops its
tasks, sends its last events and returns, and the Spark task ends), ``kill`` (SIGKILL: the
process dies at once, as in a crash, and Spark sees its task fail).

A retried attempt of the task (Spark's ``spark.task.maxFailures`` > 1, speculation) starts no
TaskExecutor: the ResourceManager replaces a lost worker itself, so a second TaskExecutor with
the same resource id must never start. The task ends at once, saying so.

Everything the task changes in its (reused) Python worker — stdout, the working directory,
the SIGTERM handler (:func:`plugins.local.runner.run_task_manager` puts that back) — is put
back when it ends. Unless the run sets ``taskmanager.host``, the
TaskExecutor serves its partitions at the address its executor reaches the driver from.

The task's function reaches the executor wrapped by :mod:`.bootstrap`: rill and the job's
Python files and requirements are on the import path then (:mod:`.shipping`); a job with
archives works in Spark's files directory, where Spark unpacked them.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import sys
from typing import Any, Iterator

import msgspec

from kernel.remoting.tcp import Connection, LineWriter, connect, malformed

#: what a task yields: its TaskExecutor returned (it was stopped, or it gave up)
FINISHED = "finished"
#: where a TaskExecutor serves its partitions to the others
TASK_MANAGER_HOST = "taskmanager.host"
#: what a retried attempt of a task yields: it started no TaskExecutor
RETRIED = "retried"


def encode(*frame: Any) -> bytes:
    return msgspec.msgpack.encode(list(frame))


def decode(payload: bytes) -> list:
    return msgspec.msgpack.decode(payload, type=list)


def _commands(connection: Connection, frames: list[bytes]) -> None:
    for frame in frames:
        try:
            command = decode(frame)[0]
            if command not in ("stop", "kill"):
                raise ValueError(f"unknown command {command!r:.40}")
        except Exception as exc:  # noqa: BLE001 -- a frame the driver does not send
            connection.reject(malformed(exc))
            return
        os.kill(os.getpid(), signal.SIGTERM if command == "stop" else signal.SIGKILL)


def _rejected(role: str, address: str, peer: str, reason: str) -> None:
    """Before its run exists, the task can only say so (in its executor's log)."""
    print(f"rill: warning: rejected a connection from {peer} to {address} ({role}): {reason}", file=sys.stderr,
          flush=True)


def serving_at(spec: Any, host: str) -> Any:
    """The spec with ``taskmanager.host`` = ``host`` (the address this executor reaches the
    driver from, so other executors reach it there too) unless the run sets it."""
    from kernel.config import env_name

    raw, input_overrides = pickle.loads(spec.config)
    if TASK_MANAGER_HOST in raw.values or env_name(TASK_MANAGER_HOST) in raw.env:
        return spec
    configured = raw.with_sets([f"{TASK_MANAGER_HOST}={host}"])
    return msgspec.structs.replace(spec, config=pickle.dumps((configured, input_overrides)))


def on_executors(spec: Any) -> Any:
    """The spec as the driver sends it to the executors: nothing of this machine's import path
    or Python environment (what the job needs was shipped, :mod:`.shipping`), only what the job
    asked for."""
    from kernel.lifecycle.pythonenv.environment import PythonEnvironment

    return msgspec.structs.replace(spec, sys_path=[], python=PythonEnvironment(info=spec.python.info))


def in_spark_working_directory(spec: Any) -> Any:
    """A job with archives works where Spark unpacked them (PyFlink's working directory)."""
    from pyspark import SparkFiles

    root = SparkFiles.getRootDirectory()
    return msgspec.structs.replace(spec, cwd=root, python=msgspec.structs.replace(spec.python, working_dir=root))


def run_in_spark_task(items: Iterator[tuple[bytes, str, bytes]]) -> Iterator[str]:
    """The Spark task (``mapPartitions``): for its one element (the encoded spec, the task
    channel's address, the encoded security keys), run the TaskExecutor; yield how it ended."""
    from kernel.contracts.workers import TaskExecutorProcessSpec
    from kernel.options import SecurityOptions
    from kernel.remoting.security import TransportSecurity

    for encoded, channel, security in items:
        spec = msgspec.msgpack.decode(encoded, type=TaskExecutorProcessSpec)
        options = msgspec.msgpack.decode(security, type=SecurityOptions)
        yield run_task_executor(spec, channel, TransportSecurity.of(options, spec.secret, _rejected))


def run_task_executor(spec: Any, channel: str, security: Any) -> str:
    from pyspark import TaskContext

    from kernel.lifecycle.worker_process import run_worker

    context = TaskContext.get()
    if context.attemptNumber() > 0:
        return RETRIED
    connection = connect(channel, _commands, lambda connection, error: None, "task-channel", security)
    connection.send(encode("hello", spec.resource_id, os.getpid(), socket.gethostname(), context.stageId(),
                           context.taskAttemptId()))
    if spec.python.info.archives:
        spec = in_spark_working_directory(spec)
    elif spec.cwd and not os.path.isdir(spec.cwd):  # an executor on another host: stay where Spark runs the task
        spec = msgspec.structs.replace(spec, cwd="")
    spec = serving_at(spec, connection.sock.getsockname()[0])
    stdout, cwd = sys.stdout, os.getcwd()
    output = sys.stdout = LineWriter(lambda text: connection.send(encode("out", text)))  # whole lines to the driver
    try:
        run_worker(spec)
    finally:
        sys.stdout = stdout
        output.close()
        os.chdir(cwd)
        connection.close()
    return FINISHED
