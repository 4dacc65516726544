"""The ResourceManager: JobMasters and TaskExecutors register with it, and its
:class:`~plugins.local.slotmanager.SlotManager` gives the jobs' declared slots; what free slots
cannot cover it requests as new workers from the workers plugin's driver (an active resource
manager, Flink's ActiveResourceManager), up to ``slotmanager.number-of-slots.max``.

Workers (reference §22): a requested worker must register within
``resourcemanager.taskmanager-registration.timeout``, else it is released and replaced; one
that ends before registering, or cannot be started, is a start failure — above
``resourcemanager.start-worker.max-failure-rate`` failures a minute, requests pause for
``resourcemanager.start-worker.retry-interval``. A registered worker without allocated slots
for ``resourcemanager.taskmanager-timeout`` is released. A worker the driver reports
terminated is gone at once: its connection is closed as on a heartbeat timeout.

Heartbeats (seed 003): the ResourceManager requests heartbeats from JobMasters and
TaskExecutors; TaskExecutors answer with their slot report, which keeps the slot manager's
slot table in sync. Losing a JobMaster closes its connection (its requirements are cleared; it
is told and reconnects). Losing a TaskExecutor closes its connection: its slots are gone, JobMasters are
told which allocations failed (they fail the tasks that ran there), requirements are checked
again (new TaskExecutors start on demand) and the TaskExecutor, if alive, re-registers.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from kernel.clock import NS_PER_MS, NS_PER_S
from kernel.runtime.cluster_events import WorkerRegistered, WorkerStarted
from kernel.messaging import Component, MessagingService
from plugins.local import messages as m
from plugins.local.connections import HeartbeatTarget, Listener, heartbeat_manager
from plugins.local.events import ConnectionClosed, JobMasterRegistered
from plugins.local.slotmanager import SlotManager

if TYPE_CHECKING:
    from kernel.contracts.workers import ResourceManagerDriver, TaskExecutorProcessSpec, WorkerNode
    from kernel.messaging import Future
    from kernel.lifecycle.run import Run


class ResourceManager(Component):
    def __init__(self, messaging: MessagingService, run: Run, options: Any, driver: ResourceManagerDriver,
                 spec: Callable[[str], TaskExecutorProcessSpec], tracker: Any,
                 on_worker_stopped: Callable[[str, str], None]) -> None:
        super().__init__(m.RESOURCE_MANAGER, messaging)
        self.run = run
        self.tracker = tracker
        self.options = options
        self.slots_per_worker = options.task_slots
        self.max_slots = options.max_slots
        self.driver = driver
        self.spec = spec
        self.on_worker_stopped = on_worker_stopped
        self.registrations: dict[str, int] = {}
        self.pending_workers: dict[str, Any] = {}  # resource id -> registration timeout timer
        self.nodes: dict[str, WorkerNode] = {}  # where the requested workers run
        self.workers_requested = 0
        self.workers_started = 0
        self._start_failures: deque[int] = deque()  # times (ns) of the last minute's start failures
        self._requests_paused_until = 0
        self.job_masters: dict[str, str] = {}  # job id -> address
        self.slot_manager = SlotManager(self, self, options, self.job_masters, self._emit)

    def on_start(self) -> None:
        self.job_heartbeats = heartbeat_manager(self, Listener(self, "job_master"), "sender")
        self.worker_heartbeats = heartbeat_manager(self, Listener(self, "worker"), "sender")
        self.driver.initialize(self)

    def on_stop(self) -> None:
        self.job_heartbeats.stop()
        self.worker_heartbeats.stop()

    def _emit(self, event: Any) -> None:
        self.run.bus.emit(event)

    # -- JobMasters ---------------------------------------------------------------------------

    def handle_RegisterJobMaster(self, message: m.RegisterJobMaster, sender: str) -> str:
        self.job_masters[message.job_id] = message.address
        self.job_heartbeats.monitor_target(message.address, HeartbeatTarget(self, message.address, "rm-jm",
                                                                             self.options.rpc_timeout))
        self._emit(JobMasterRegistered(time=self.clock.now(), job_id=message.job_id, address=message.address))
        return m.ACK

    def job_master_lost(self, address: str, reason: str) -> None:
        self.tracker.detected(self.clock.now(), self.address, address, reason)
        self._close_job_master(address, f"Heartbeat of JobManager {address} timed out" if reason == "heartbeat timeout"
                               else f"JobManager {address} is unreachable")

    def _close_job_master(self, address: str, reason: str) -> None:
        self.job_heartbeats.unmonitor_target(address)
        for job_id in [j for j, a in self.job_masters.items() if a == address]:
            del self.job_masters[job_id]
            self.slot_manager.clear_resource_requirements(job_id)
        self._emit(ConnectionClosed(time=self.clock.now(), owner=self.address, target=address, reason=reason))
        self.tell(address, m.DisconnectResourceManager(reason))

    def job_master_payload(self, address: str, payload: Any) -> None:
        """JobMasters send nothing with their heartbeats."""

    def job_master_heartbeat_payload(self, address: str) -> Any:
        return None

    # -- workers (the driver's side) ----------------------------------------------------------

    def _request_new_worker(self) -> None:
        """Ask the driver for a worker; it must register in time."""
        self.workers_requested += 1
        resource_id = f"taskexecutor-{self.workers_requested}"
        timeout = self.options.worker_registration_timeout * NS_PER_MS
        self.pending_workers[resource_id] = self.schedule(timeout, self._worker_never_registered, resource_id)
        placed = self.driver.request_resource(self.spec(resource_id))
        if placed.done():
            self._worker_placed(resource_id, placed)
        else:
            placed.add_done_callback(lambda done: self._worker_placed(resource_id, done))

    def _worker_placed(self, resource_id: str, placed: Future) -> None:
        error = placed.exception()
        if error is not None:
            self._start_failed(resource_id, f"could not be started: {error}")
            return
        node: WorkerNode = placed.result()
        self.nodes[resource_id] = node
        self.workers_started += 1
        self._emit(WorkerStarted(time=self.clock.now(), resource_id=resource_id, slots=self.slots_per_worker,
                                 pid=node.pid, host=node.host, executor_id=node.executor_id))

    def _worker_never_registered(self, resource_id: str) -> None:
        if self.pending_workers.pop(resource_id, None) is not None:
            timeout = self.options.worker_registration_timeout
            self._release(resource_id, f"not registered within resourcemanager.taskmanager-registration.timeout "
                                       f"({timeout} ms)")
            self._start_failed(resource_id, "")

    def _start_failed(self, resource_id: str, reason: str) -> None:
        """A requested worker never registered: count it; replace it unless too many failed."""
        timer = self.pending_workers.pop(resource_id, None)
        if timer is not None:
            timer.cancel()
        if reason:
            self.on_worker_stopped(resource_id, reason)
        now = self.clock.now()
        failures = self._start_failures
        failures.append(now)
        while failures and failures[0] <= now - 60 * NS_PER_S:
            failures.popleft()
        if len(failures) > self.options.start_worker_max_failure_rate:
            self._requests_paused_until = now + self.options.start_worker_retry_interval * NS_PER_MS
        self.slot_manager.check_requirements_soon()

    def _release(self, resource_id: str, reason: str) -> None:
        self.nodes.pop(resource_id, None)
        self.on_worker_stopped(resource_id, reason)
        self.driver.release_resource(resource_id)

    def on_worker_terminated(self, resource_id: str, diagnostics: str) -> None:
        """The driver reports a worker gone (its process ended)."""
        if self.nodes.pop(resource_id, None) is None:
            return  # released already
        if resource_id in self.pending_workers:
            self._start_failed(resource_id, f"terminated before registering: {diagnostics}")
            return
        self.on_worker_stopped(resource_id, f"terminated: {diagnostics}")
        if self.slot_manager.is_registered(resource_id):
            self.tracker.detected(self.clock.now(), self.address, resource_id, "worker terminated")
            self._close_worker(resource_id, f"TaskManager with id {resource_id} terminated: {diagnostics}",
                               tell=False)

    def on_error(self, error: BaseException) -> None:
        """The driver cannot go on: fatal."""
        raise error

    def release_idle_worker(self, resource_id: str, reason: str) -> None:
        """The slot manager found the TaskExecutor idle for ``resourcemanager.taskmanager-timeout``."""
        self._close_worker(resource_id, f"TaskManager {resource_id} is released: {reason}", tell=False)
        self._release(resource_id, reason)

    # -- TaskExecutors ------------------------------------------------------------------------

    def handle_RegisterTaskExecutor(self, message: m.RegisterTaskExecutor, sender: str) -> str:
        resource_id = message.resource_id
        if self.slot_manager.is_registered(resource_id):  # a re-registration replaces (and releases) the old one
            self._close_worker(resource_id, f"TaskExecutor {resource_id} registered again", tell=False)
        timer = self.pending_workers.pop(resource_id, None)
        if timer is not None:
            timer.cancel()
        count = self.registrations[resource_id] = self.registrations.get(resource_id, 0) + 1
        self.worker_heartbeats.monitor_target(resource_id, HeartbeatTarget(self, resource_id, "rm-te",
                                                                           self.options.rpc_timeout))
        self._emit(WorkerRegistered(time=self.clock.now(), resource_id=resource_id, slots=message.slots,
                                    registration=count))
        self.slot_manager.register_task_manager(resource_id, message.slots, message.slot_report)
        return m.ACK

    def worker_lost(self, resource_id: str, reason: str) -> None:
        self.tracker.detected(self.clock.now(), self.address, resource_id, reason)
        why = (f"Heartbeat of TaskManager with id {resource_id} timed out." if reason == "heartbeat timeout"
               else f"TaskManager with id {resource_id} is no longer reachable.")
        self._close_worker(resource_id, why, tell=True)

    def _close_worker(self, resource_id: str, reason: str, tell: bool) -> None:
        failed = self.slot_manager.unregister_task_manager(resource_id)
        self.worker_heartbeats.unmonitor_target(resource_id)
        if failed is None:
            return
        self._emit(ConnectionClosed(time=self.clock.now(), owner=self.address, target=resource_id, reason=reason))
        for job_id, allocations in failed.items():
            address = self.job_masters.get(job_id)
            if address is not None:
                self.tell(address, m.AllocationsFailed(resource_id, tuple(allocations), reason))
        if tell:
            self.tell(resource_id, m.DisconnectResourceManager(reason))
        self.slot_manager.check_requirements_soon()

    def worker_payload(self, resource_id: str, slot_report: Any) -> None:
        self.slot_manager.report_slot_status(resource_id, slot_report)

    def worker_heartbeat_payload(self, resource_id: str) -> Any:
        return None

    # -- heartbeat messages -------------------------------------------------------------------

    def handle_HeartbeatRequest(self, message: m.HeartbeatRequest, sender: str) -> str:
        return m.ACK  # the ResourceManager only sends requests

    def handle_HeartbeatResponse(self, message: m.HeartbeatResponse, sender: str) -> str:
        manager = self.job_heartbeats if message.channel == "rm-jm" else self.worker_heartbeats
        manager.receive_heartbeat(message.sender_id, message.payload)
        return m.ACK

    # -- slots --------------------------------------------------------------------------------

    def handle_DeclareResourceRequirements(self, message: m.DeclareResourceRequirements, sender: str) -> str:
        if self.job_masters.get(message.job_id) != message.job_master:
            raise RuntimeError(f"JobMaster {message.job_master} is not registered")
        self.slot_manager.process_resource_requirements(message.job_id, message.slots)
        return m.ACK

    def handle_SlotFreed(self, message: m.SlotFreed, sender: str) -> None:
        self.slot_manager.free_slot(message.resource_id, message.slot_index, message.allocation_id)

    def declare_missing_slots(self, missing: int, registered: int) -> int:
        """Request workers for the slots no registered TaskExecutor can give (once start
        failures pause requests, check again when the pause ends): how many of them no worker
        will give, ``slotmanager.number-of-slots.max`` reached."""
        coming = len(self.pending_workers) * self.slots_per_worker
        total = (registered + len(self.pending_workers)) * self.slots_per_worker
        if missing > coming and self.clock.now() < self._requests_paused_until:
            self.schedule(self._requests_paused_until - self.clock.now(), self.slot_manager.check_requirements_soon)
            return 0
        while missing > coming and total + self.slots_per_worker <= self.max_slots:
            self._request_new_worker()
            coming += self.slots_per_worker
            total += self.slots_per_worker
        return max(0, missing - coming)

    def not_enough_resources(self, job_id: str, reason: str) -> None:
        address = self.job_masters.get(job_id)
        if address is not None:
            self.tell(address, m.NotEnoughResourcesAvailable(job_id, reason))
