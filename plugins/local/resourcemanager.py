"""The ResourceManager and its slot manager (declarative, like Flink's FineGrainedSlotManager).

JobMasters register and declare how many slots their job needs; TaskExecutors register with
their slot report. The slot manager matches declarations against free slots of registered
TaskExecutors (in registration order) and asks those TaskExecutors for the slots, which they
offer to the job's JobMaster; what free slots cannot cover makes it request new workers from
the workers plugin's driver (an active resource manager, Flink's ActiveResourceManager), up to
``slotmanager.number-of-slots.max``.

Workers (reference §22): a requested worker must register within
``resourcemanager.taskmanager-registration.timeout``, else it is released and replaced; one
that ends before registering, or cannot be started, is a start failure — above
``resourcemanager.start-worker.max-failure-rate`` failures a minute, requests pause for
``resourcemanager.start-worker.retry-interval``. A registered worker without allocated slots
for ``resourcemanager.taskmanager-timeout`` is released. A worker the driver reports
terminated is gone at once: its connection is closed as on a heartbeat timeout.

Heartbeats (seed 003): the ResourceManager requests heartbeats from JobMasters and
TaskExecutors; TaskExecutors answer with their slot report, which keeps the slot table in
sync. Losing a JobMaster closes its connection (its requirements are cleared; it is told and
reconnects). Losing a TaskExecutor closes its connection: its slots are gone, JobMasters are
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
from plugins.local.events import ConnectionClosed, JobMasterRegistered, SlotRequested

if TYPE_CHECKING:
    from kernel.contracts.workers import ResourceManagerDriver, TaskExecutorProcessSpec, WorkerNode
    from kernel.messaging import Future
    from kernel.lifecycle.run import Run


class _Slot:
    __slots__ = ("job_id", "allocation_id", "pending")

    def __init__(self, job_id: str, allocation_id: str, pending: bool) -> None:
        self.job_id = job_id
        self.allocation_id = allocation_id
        self.pending = pending  # requested, not yet confirmed by the TaskExecutor


class _Worker:
    def __init__(self, resource_id: str, slots: int) -> None:
        self.resource_id = resource_id
        self.slots: list[_Slot | None] = [None] * slots
        self.registrations = 0
        self.idle_check: Any = None  # resourcemanager.taskmanager-timeout while no slot is allocated

    def idle(self) -> bool:
        return all(slot is None for slot in self.slots)


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
        self.workers: dict[str, _Worker] = {}
        self.registrations: dict[str, int] = {}
        self.pending_workers: dict[str, Any] = {}  # resource id -> registration timeout timer
        self.nodes: dict[str, WorkerNode] = {}  # where the requested workers run
        self.workers_requested = 0
        self.workers_started = 0
        self._start_failures: deque[int] = deque()  # times (ns) of the last minute's start failures
        self._requests_paused_until = 0
        self.job_masters: dict[str, str] = {}  # job id -> address
        self.requirements: dict[str, int] = {}
        self._allocations = 0
        self._check_scheduled = False

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
            self.requirements.pop(job_id, None)
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
        self._check_requirements_soon()

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
        if resource_id in self.workers:
            self.tracker.detected(self.clock.now(), self.address, resource_id, "worker terminated")
            self._close_worker(resource_id, f"TaskManager with id {resource_id} terminated: {diagnostics}",
                               tell=False)

    def on_error(self, error: BaseException) -> None:
        """The driver cannot go on: fatal."""
        raise error

    def _idle_timed_out(self, worker: _Worker) -> None:
        worker.idle_check = None
        if self.workers.get(worker.resource_id) is worker and worker.idle():
            reason = f"idle for resourcemanager.taskmanager-timeout ({self.options.taskmanager_timeout} ms)"
            self._close_worker(worker.resource_id, f"TaskManager {worker.resource_id} is released: {reason}",
                               tell=False)
            self._release(worker.resource_id, reason)

    def _watch_idle(self, worker: _Worker) -> None:
        if worker.idle():
            if worker.idle_check is None:
                worker.idle_check = self.schedule(self.options.taskmanager_timeout * NS_PER_MS, self._idle_timed_out,
                                                  worker)
        elif worker.idle_check is not None:
            worker.idle_check.cancel()
            worker.idle_check = None

    # -- TaskExecutors ------------------------------------------------------------------------

    def handle_RegisterTaskExecutor(self, message: m.RegisterTaskExecutor, sender: str) -> str:
        resource_id = message.resource_id
        if resource_id in self.workers:  # a re-registration replaces (and releases) the old connection
            self._close_worker(resource_id, f"TaskExecutor {resource_id} registered again", tell=False)
        timer = self.pending_workers.pop(resource_id, None)
        if timer is not None:
            timer.cancel()
        worker = self.workers[resource_id] = _Worker(resource_id, message.slots)
        for index, allocation_id, job_id in message.slot_report:
            worker.slots[index] = _Slot(job_id, allocation_id, pending=False)
        count = self.registrations[resource_id] = self.registrations.get(resource_id, 0) + 1
        worker.registrations = count
        self.worker_heartbeats.monitor_target(resource_id, HeartbeatTarget(self, resource_id, "rm-te",
                                                                           self.options.rpc_timeout))
        self._emit(WorkerRegistered(time=self.clock.now(), resource_id=resource_id, slots=message.slots,
                                    registration=count))
        self._watch_idle(worker)
        self._check_requirements_soon()
        return m.ACK

    def worker_lost(self, resource_id: str, reason: str) -> None:
        self.tracker.detected(self.clock.now(), self.address, resource_id, reason)
        why = (f"Heartbeat of TaskManager with id {resource_id} timed out." if reason == "heartbeat timeout"
               else f"TaskManager with id {resource_id} is no longer reachable.")
        self._close_worker(resource_id, why, tell=True)

    def _close_worker(self, resource_id: str, reason: str, tell: bool) -> None:
        worker = self.workers.pop(resource_id, None)
        self.worker_heartbeats.unmonitor_target(resource_id)
        if worker is None:
            return
        if worker.idle_check is not None:
            worker.idle_check.cancel()
        self._emit(ConnectionClosed(time=self.clock.now(), owner=self.address, target=resource_id, reason=reason))
        failed: dict[str, list[str]] = {}
        for slot in worker.slots:
            if slot is not None:
                failed.setdefault(slot.job_id, []).append(slot.allocation_id)
        for job_id, allocations in failed.items():
            address = self.job_masters.get(job_id)
            if address is not None:
                self.tell(address, m.AllocationsFailed(resource_id, tuple(allocations), reason))
        if tell:
            self.tell(resource_id, m.DisconnectResourceManager(reason))
        self._check_requirements_soon()

    def worker_payload(self, resource_id: str, slot_report: Any) -> None:
        """Sync the slot table with the TaskExecutor's slot report (pending requests stay)."""
        worker = self.workers.get(resource_id)
        if worker is None or slot_report is None:
            return
        reported = {index: (allocation_id, job_id) for index, allocation_id, job_id in slot_report}
        changed = False
        for index, slot in enumerate(worker.slots):
            held = reported.get(index)
            if held is None and slot is not None and not slot.pending:
                worker.slots[index] = None
                changed = True
            elif held is not None and (slot is None or (not slot.pending and slot.allocation_id != held[0])):
                worker.slots[index] = _Slot(held[1], held[0], pending=False)
        if changed:
            self._watch_idle(worker)
            self._check_requirements_soon()

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
        self.requirements[message.job_id] = message.slots
        self._check_requirements_soon()
        return m.ACK

    def handle_SlotFreed(self, message: m.SlotFreed, sender: str) -> None:
        worker = self.workers.get(message.resource_id)
        if worker is not None and message.slot_index < len(worker.slots):
            slot = worker.slots[message.slot_index]
            if slot is not None and slot.allocation_id == message.allocation_id:
                worker.slots[message.slot_index] = None
                self._watch_idle(worker)
        self._check_requirements_soon()

    def _allocated(self, job_id: str) -> int:
        return sum(1 for w in self.workers.values() for s in w.slots if s is not None and s.job_id == job_id)

    def _check_requirements_soon(self) -> None:
        if not self._check_scheduled:
            self._check_scheduled = True
            self.schedule(self.options.requirement_check_delay * NS_PER_MS, self._check_requirements)

    def _check_requirements(self) -> None:
        self._check_scheduled = False
        missing_total = 0
        for job_id, required in list(self.requirements.items()):
            missing = required - self._allocated(job_id)
            for worker in self.workers.values():
                for index, slot in enumerate(worker.slots):
                    if missing <= 0:
                        break
                    if slot is None:
                        self._request_slot(worker, index, job_id)
                        missing -= 1
            missing_total += max(missing, 0)
        coming = len(self.pending_workers) * self.slots_per_worker
        total = (len(self.workers) + len(self.pending_workers)) * self.slots_per_worker
        if missing_total > coming and self.clock.now() < self._requests_paused_until:
            self.schedule(self._requests_paused_until - self.clock.now(), self._check_requirements_soon)
            return
        while missing_total > coming and total + self.slots_per_worker <= self.max_slots:
            self._request_new_worker()
            coming += self.slots_per_worker
            total += self.slots_per_worker

    def _request_slot(self, worker: _Worker, index: int, job_id: str) -> None:
        self._allocations += 1
        allocation_id = f"alloc-{self._allocations}"
        worker.slots[index] = _Slot(job_id, allocation_id, pending=True)
        self._watch_idle(worker)
        self._emit(SlotRequested(time=self.clock.now(), job_id=job_id, allocation_id=allocation_id,
                                 resource_id=worker.resource_id, slot_index=index))
        request = m.RequestSlot(allocation_id, job_id, index, self.job_masters[job_id])
        answer = self.ask(worker.resource_id, request, self.options.rpc_timeout * NS_PER_MS)
        answer.add_done_callback(lambda done: self._slot_requested(worker, index, allocation_id, done.exception()))

    def _slot_requested(self, worker: _Worker, index: int, allocation_id: str, error: BaseException | None) -> None:
        slot = worker.slots[index] if self.workers.get(worker.resource_id) is worker else None
        if slot is None or slot.allocation_id != allocation_id:
            return
        if error is None:
            slot.pending = False
        elif isinstance(error, m.SlotOccupied):  # the TaskExecutor holds another allocation there
            held_allocation, held_job = error.args
            worker.slots[index] = _Slot(held_job, held_allocation, pending=False)
            self._check_requirements_soon()
        else:  # unreachable or no answer: not allocated; the next slot report tells the truth
            worker.slots[index] = None
            self._watch_idle(worker)
            self._check_requirements_soon()
