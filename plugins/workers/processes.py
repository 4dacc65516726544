"""The driver of plugin ``workers.processes`` (:mod:`.processes_plugin`): each TaskExecutor an OS
process on this machine, as YARN or Kubernetes would run it in a container.

A requested worker is a new Python process (``python -m kernel.lifecycle.worker_process``) given its
TaskExecutorProcessSpec on stdin; it is placed (the Future completes with its pid) as soon as
it is spawned, and registers on its own. What it prints reaches this process's stdout line by
line; its stderr is this process's. Releasing a worker sends it SIGTERM (it stops its tasks,
sends its last events and exits), followed by SIGKILL if it is not gone within
``rill.workers.stop-timeout``; the ``kill`` fault sends SIGKILL at once. A worker's end, for
whatever reason, is reported to the ResourceManager with its exit status.

The interpreter of the TaskExecutor processes is rill's own, or the job's ``python.executable``
(PyFlink's interpreter of its Python workers): that one imports its own packages first and
rill from this process's import path after them; one that cannot run rill's TaskExecutor
(another Python version, a missing interpreter) fails the run at once, in one line.

TaskExecutor processes need the realtime clock: a simulated run is refused.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from typing import TYPE_CHECKING

import msgspec

from kernel.contracts.workers import WorkerNode
from kernel.errors import RillError
from kernel.messaging import Future
from kernel.options import WorkerOptions

if TYPE_CHECKING:
    from kernel.contracts.workers import ResourceEventHandler, TaskExecutorProcessSpec, WorkerHost

_output_lock = threading.Lock()


def _write(data: bytes) -> None:
    with _output_lock:
        out = sys.stdout
        try:
            out.write(data.decode("utf-8", errors="replace"))
            out.flush()
        except (BrokenPipeError, ValueError):
            pass


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exited with code {code}"


class _Worker:
    def __init__(self, resource_id: str, process: subprocess.Popen) -> None:
        self.resource_id = resource_id
        self.process = process
        self.threads: list[threading.Thread] = []
        self.released = False


#: how another interpreter takes rill's import path after its own (as site directories: an
#: editable install of rill is found through a ``.pth`` file)
_PATH = "import json, site, sys; [site.addsitedir(p) for p in json.loads(sys.argv[1]) if p not in sys.path]; "
#: how it starts a TaskExecutor, and what it must import to run one
_BOOT = _PATH + "from kernel.lifecycle.worker_process import main; main()"
_CHECK = _PATH + "import kernel.lifecycle.worker_process, plugins.local.runner"


def launch_command(executable: str) -> list[str]:
    """How a TaskExecutor process is started: ``python -m kernel.lifecycle.worker_process`` with rill's
    interpreter, or the job's interpreter given rill's import path; the latter is checked first."""
    if not executable or os.path.abspath(executable) == os.path.abspath(sys.executable):  # a venv's own path
        return [sys.executable, "-m", "kernel.lifecycle.worker_process"]
    roots = json.dumps([path for path in sys.path if path])
    try:
        answer = subprocess.run([executable, "-c", _CHECK, roots], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RillError(f"python.executable {executable} cannot run rill's TaskExecutor: {exc}") from None
    if answer.returncode != 0:
        lines = [line for line in answer.stderr.splitlines() if line.strip()]
        raise RillError(f"python.executable {executable} cannot run rill's TaskExecutor: "
                        f"{lines[-1] if lines else f'exit code {answer.returncode}'}")
    return [executable, "-c", _BOOT, roots]


class ProcessDriver:
    in_process = False

    def __init__(self, host: WorkerHost, options: WorkerOptions, executable: str = "") -> None:
        self.host = host
        self.command = launch_command(executable)
        self.own_interpreter = self.command[1:] == ["-m", "kernel.lifecycle.worker_process"]
        self.stop_timeout = options.stop_timeout / 1000
        self.handler: ResourceEventHandler | None = None
        self.workers: dict[str, _Worker] = {}
        self.terminated = False

    def initialize(self, handler: ResourceEventHandler) -> None:
        self.handler = handler

    def request_resource(self, spec: TaskExecutorProcessSpec) -> Future:
        placed = Future(self.host.loop)
        environment = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if not self.own_interpreter:  # its own packages first: rill's import path comes after them
            spec = msgspec.structs.replace(spec, sys_path=[])
        try:
            process = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, cwd=spec.cwd or None, env=environment,
                                       start_new_session=True)  # Ctrl-C is the cluster's to handle
        except OSError as exc:
            placed.set_exception(exc)
            return placed
        worker = self.workers[spec.resource_id] = _Worker(spec.resource_id, process)
        self.host.loop.io_started()  # the cluster's loop waits for the process's end
        for target in (self._pump_output, self._wait):
            thread = threading.Thread(target=target, args=(worker,), name=f"rill-{spec.resource_id}", daemon=True)
            worker.threads.append(thread)
            thread.start()
        try:
            process.stdin.write(msgspec.msgpack.encode(spec))
            process.stdin.close()
        except OSError:
            pass  # it died at once: its end is reported
        placed.set_result(WorkerNode(resource_id=spec.resource_id, pid=process.pid, host=socket.gethostname()))
        return placed

    def _pump_output(self, worker: _Worker) -> None:
        """What the worker prints to this process's stdout, whole lines at a time (so lines of
        two workers never mix)."""
        fd = worker.process.stdout.fileno()
        pending = b""
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            pending += chunk
            end = pending.rfind(b"\n") + 1
            if end:
                _write(pending[:end])
                pending = pending[end:]
        if pending:
            _write(pending)

    def _wait(self, worker: _Worker) -> None:
        code = worker.process.wait()
        worker.threads[0].join()  # everything it printed is out
        self.host.loop.call_soon_threadsafe(self._terminated, worker, code)

    def _terminated(self, worker: _Worker, code: int) -> None:
        self.host.loop.io_finished()
        if self.workers.get(worker.resource_id) is worker:
            del self.workers[worker.resource_id]
        if self.handler is not None and not self.terminated:
            self.handler.on_worker_terminated(worker.resource_id, describe_exit(code))

    def release_resource(self, resource_id: str) -> None:
        worker = self.workers.get(resource_id)
        if worker is not None and not worker.released:
            worker.released = True
            self._signal(worker, signal.SIGTERM)
            threading.Timer(self.stop_timeout, self._signal, (worker, signal.SIGKILL)).start()

    def kill_worker(self, resource_id: str) -> bool:
        worker = self.workers.get(resource_id)
        if worker is None:
            return False
        self._signal(worker, signal.SIGKILL)
        return True

    @staticmethod
    def _signal(worker: _Worker, signum: int) -> None:
        if worker.process.poll() is None:
            try:
                worker.process.send_signal(signum)
            except OSError:
                pass

    def terminate(self) -> None:
        """Stop every worker: SIGTERM, SIGKILL after the stop timeout; wait for their ends."""
        self.terminated = True
        workers = list(self.workers.values())
        for worker in workers:
            if not worker.released:
                worker.released = True
                self._signal(worker, signal.SIGTERM)
        for worker in workers:
            try:
                worker.process.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                self._signal(worker, signal.SIGKILL)
                worker.process.wait()
            for thread in worker.threads:
                thread.join()
