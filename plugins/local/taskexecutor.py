"""The TaskExecutor: a worker with slots that runs the tasks deployed into them.

It registers at the ResourceManager (retrying; if it cannot register within
``taskmanager.registration.timeout`` it shuts down), allocates a slot when the slot manager
requests one, connects to the job's JobMaster and offers the slot, runs the tasks the
JobMaster submits and reports their state changes (final states until acknowledged).

Checkpoint triggers and notifications go to the task they name; a trigger for a task that is
not here is declined.

Under the realtime clock each task runs in a thread of its own (:mod:`.tasks.task_thread`);
the TaskExecutor talks to it through the task's loop, stops it by interrupting it, and learns
when one is stuck (it did not return within ``task.cancellation.timeout`` of being stopped):
a fatal error, which ends an embedded run.

Heartbeats (seed 003): it answers the ResourceManager's requests with its slot report and
the JobMaster's with the executions it runs; the JobMaster's requests carry the allocations
it holds here, and active slots it no longer knows are freed. Losing the ResourceManager
makes it re-register. Losing a JobMaster fails the job's tasks here, keeps the job's slots
inactive for ``taskmanager.slot.timeout`` (then frees them) and reconnects; slots still held
when it is back are offered again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.runtime.checkpointing.failures import CheckpointFailureReason
from kernel.runtime.checkpointing.messages import DeclineCheckpoint
from kernel.clock import NS_PER_MS
from kernel.runtime.cluster_events import TaskMetricsSampled, UserMetricSampled, WorkerStopped
from kernel.messaging import AskTimeout, Component, MessagingService, RecipientUnreachable
from plugins.local import messages as m
from plugins.local.backpressure import BackPressureSampleService
from plugins.local.connections import HeartbeatTarget, Listener, RetryingRegistration, heartbeat_manager
from plugins.local.events import ConnectionClosed
from plugins.local.tasks.io_metrics import COUNTERS
from plugins.local.tasks.streamtask import StreamTask
from plugins.local.tasks.task_thread import TaskThread

if TYPE_CHECKING:
    from kernel.lifecycle.run import Run
    from plugins.local.services import TaskManagerServices

TERMINAL = ("FINISHED", "FAILED", "CANCELED")


class _Slot:
    __slots__ = ("index", "allocation_id", "job_id", "job_master", "active", "timeout")

    def __init__(self, index: int, allocation_id: str, job_id: str, job_master: str) -> None:
        self.index = index
        self.allocation_id = allocation_id
        self.job_id = job_id
        self.job_master = job_master
        self.active = False  # accepted by the JobMaster
        self.timeout: Any = None  # taskmanager.slot.timeout while the JobMaster is lost


class _JobConnection:
    def __init__(self, job_id: str, address: str) -> None:
        self.job_id = job_id
        self.address = address
        self.registered = False
        self.registration: RetryingRegistration | None = None


class TaskExecutor(Component):
    def __init__(self, address: str, messaging: MessagingService, run: Run, services: TaskManagerServices,
                 options: Any) -> None:
        super().__init__(address, messaging)
        self.run = run
        self.services = services
        self.options = options
        self.slots: list[_Slot | None] = [None] * options.task_slots
        self.jobs: dict[str, _JobConnection] = {}
        self.tasks: dict[tuple[str, int, int], StreamTask] = {}
        #: realtime: every task in a thread of its own (by attempt, until it ended)
        self.task_threads: dict[tuple[str, int, int], TaskThread] | None = (
            {} if run.clock.mode == "realtime" else None)
        self.unacknowledged: dict[tuple[str, int, int], tuple[str, m.UpdateTaskExecutionState]] = {}
        self.registered = False
        self.stop_reason = ""  # why it stopped (killed, could not register)
        self.slowdown = 1.0
        self.back_pressure_sampler = BackPressureSampleService(self)
        self._registration: RetryingRegistration | None = None
        self._registration_deadline: Any = None

    @property
    def resource_id(self) -> str:
        return self.address

    def on_start(self) -> None:
        self.rm_heartbeats = heartbeat_manager(self, Listener(self, "resource_manager"), "receiver")
        self.jm_heartbeats = heartbeat_manager(self, Listener(self, "job_master"), "receiver")
        self._connect_to_resource_manager()

    def _emit(self, event: Any) -> None:
        self.run.bus.emit(event)

    # -- the ResourceManager ------------------------------------------------------------------

    def slot_report(self) -> tuple[tuple[int, str, str], ...]:
        return tuple((s.index, s.allocation_id, s.job_id) for s in self.slots if s is not None)

    def _connect_to_resource_manager(self) -> None:
        if self._registration_deadline is None:
            self._registration_deadline = self.schedule(self.options.registration_timeout * NS_PER_MS,
                                                        self._registration_timed_out)
        message = m.RegisterTaskExecutor(self.resource_id, len(self.slots), self.slot_report())
        self._registration = RetryingRegistration(self, m.RESOURCE_MANAGER, message, self.options,
                                                  self._registered_at_resource_manager).start()

    def _registered_at_resource_manager(self, answer: Any) -> None:
        self.registered = True
        if self._registration_deadline is not None:
            self._registration_deadline.cancel()
            self._registration_deadline = None
        self.rm_heartbeats.monitor_target(m.RESOURCE_MANAGER, HeartbeatTarget(self, m.RESOURCE_MANAGER, "rm-te",
                                                                            self.options.rpc_timeout))

    def _registration_timed_out(self) -> None:
        self._registration_deadline = None
        if not self.registered:
            reason = (f"could not register at the ResourceManager within taskmanager.registration.timeout "
                      f"({self.options.registration_timeout} ms)")
            self.stop_reason = reason
            self._emit(WorkerStopped(time=self.clock.now(), resource_id=self.resource_id, reason=reason))
            self.stop()

    def resource_manager_lost(self, address: str, reason: str) -> None:
        self.services.tracker.detected(self.clock.now(), self.address, address, reason)
        self._close_resource_manager(f"the ResourceManager's {reason}")

    def handle_DisconnectResourceManager(self, message: m.DisconnectResourceManager, sender: str) -> None:
        self._close_resource_manager(f"the ResourceManager closed the connection: {message.reason}")

    def _close_resource_manager(self, reason: str) -> None:
        if not self.registered:
            return
        self.registered = False
        self.rm_heartbeats.unmonitor_target(m.RESOURCE_MANAGER)
        self._emit(ConnectionClosed(time=self.clock.now(), owner=self.address, target=m.RESOURCE_MANAGER, reason=reason))
        self._connect_to_resource_manager()

    def resource_manager_payload(self, address: str, payload: Any) -> None:
        """The ResourceManager's requests carry nothing."""

    def resource_manager_heartbeat_payload(self, address: str) -> Any:
        return self.slot_report()

    # -- heartbeat messages -------------------------------------------------------------------

    def handle_HeartbeatRequest(self, message: m.HeartbeatRequest, sender: str) -> str:
        manager = self.rm_heartbeats if message.channel == "rm-te" else self.jm_heartbeats
        manager.request_heartbeat(message.sender_id, message.payload)
        return m.ACK

    def handle_HeartbeatResponse(self, message: m.HeartbeatResponse, sender: str) -> str:
        return m.ACK  # a TaskExecutor only answers

    # -- slots --------------------------------------------------------------------------------

    def handle_RequestSlot(self, message: m.RequestSlot, sender: str) -> str:
        slot = self.slots[message.slot_index]
        if slot is not None:
            if slot.allocation_id == message.allocation_id:
                return m.ACK
            raise m.SlotOccupied(slot.allocation_id, slot.job_id)
        self.slots[message.slot_index] = _Slot(message.slot_index, message.allocation_id, message.job_id,
                                               message.job_master)
        connection = self.jobs.get(message.job_id)
        if connection is None or connection.address != message.job_master:
            self._connect_to_job_master(message.job_id, message.job_master)
        elif connection.registered:
            self._offer_slots(message.job_id)
        return m.ACK

    def _free(self, allocation_id: str, reason: str) -> None:
        slot = next((s for s in self.slots if s is not None and s.allocation_id == allocation_id), None)
        if slot is None:
            return
        for task in list(self.tasks.values()):
            if task.deployment.allocation_id == allocation_id:
                self._stop_task(task, f"slot freed: {reason}")
        if slot.timeout is not None:
            slot.timeout.cancel()
        self.slots[slot.index] = None
        self.tell(m.RESOURCE_MANAGER, m.SlotFreed(self.resource_id, slot.index, allocation_id))
        if not any(s is not None and s.job_id == slot.job_id for s in self.slots):
            self._release_job(slot.job_id, "no more slots of the job on this TaskExecutor")

    def handle_FreeSlot(self, message: m.FreeSlot, sender: str) -> None:
        self._free(message.allocation_id, message.reason)

    # -- JobMasters ---------------------------------------------------------------------------

    def _connect_to_job_master(self, job_id: str, address: str) -> None:
        connection = self.jobs.get(job_id)
        if connection is None or connection.address != address:
            if connection is not None and connection.registration is not None:
                connection.registration.cancel()
            connection = self.jobs[job_id] = _JobConnection(job_id, address)
        connection.registration = RetryingRegistration(
            self, address, m.RegisterTaskManager(job_id, self.resource_id, self.services.shuffle.data_address), self.options,
            lambda answer: self._connected_to_job_master(connection)).start()

    def _connected_to_job_master(self, connection: _JobConnection) -> None:
        if self.jobs.get(connection.job_id) is not connection:
            return
        connection.registered = True
        connection.registration = None
        self.jm_heartbeats.monitor_target(connection.address, HeartbeatTarget(self, connection.address, "jm-te",
                                                                              self.options.rpc_timeout))
        self._offer_slots(connection.job_id)
        for key, (job_id, message) in list(self.unacknowledged.items()):
            if job_id == connection.job_id:
                self._send_final_state(key)

    def _offer_slots(self, job_id: str) -> None:
        connection = self.jobs.get(job_id)
        offers = tuple((s.allocation_id, s.index) for s in self.slots if s is not None and s.job_id == job_id and not s.active)
        if connection is None or not connection.registered or not offers:
            return
        answer = self.ask(connection.address, m.OfferSlots(self.resource_id, offers), self.options.rpc_timeout * NS_PER_MS)
        answer.add_done_callback(lambda done: self._slots_offered(connection, done))

    def _slots_offered(self, connection: _JobConnection, done: Any) -> None:
        if self.jobs.get(connection.job_id) is not connection or not connection.registered:
            return
        error = done.exception()
        if isinstance(error, AskTimeout):
            self._offer_slots(connection.job_id)
            return
        if error is not None:
            return  # the connection is about to be closed: the slots time out
        reply: m.SlotOfferReply = done.result()
        for slot in self.slots:
            if slot is not None and slot.allocation_id in reply.accepted:
                slot.active = True
                if slot.timeout is not None:
                    slot.timeout.cancel()
                    slot.timeout = None
        for allocation_id in reply.rejected:
            self._free(allocation_id, "rejected by the JobMaster")

    def job_master_lost(self, address: str, reason: str) -> None:
        self.services.tracker.detected(self.clock.now(), self.address, address, reason)
        for connection in [c for c in self.jobs.values() if c.address == address and c.registered]:
            self._close_job_master(connection, f"JobManager {address}: {reason}", reconnect=True)

    def handle_DisconnectJobManager(self, message: m.DisconnectJobManager, sender: str) -> None:
        connection = self.jobs.get(message.job_id)
        if connection is not None and connection.address == sender:
            self._close_job_master(connection, f"the JobManager closed the connection: {message.reason}",
                                   reconnect=self._job_has_slots(message.job_id))

    def _job_has_slots(self, job_id: str) -> bool:
        return any(s is not None and s.job_id == job_id for s in self.slots)

    def _close_job_master(self, connection: _JobConnection, reason: str, reconnect: bool) -> None:
        """Fail the job's tasks here, keep its slots inactive for a while, reconnect."""
        job_id = connection.job_id
        connection.registered = False
        self.jm_heartbeats.unmonitor_target(connection.address)
        self._emit(ConnectionClosed(time=self.clock.now(), owner=self.address, target=connection.address, reason=reason))
        for key in [k for k, (j, _) in self.unacknowledged.items() if j == job_id]:
            del self.unacknowledged[key]
        for task in list(self.tasks.values()):
            if task.deployment.job_id == job_id:
                cause = f"TaskExecutor {self.resource_id} lost the connection to the JobManager: {reason}"
                self._stop_task(task, cause, RuntimeError(cause))
        for slot in self.slots:
            if slot is not None and slot.job_id == job_id:
                slot.active = False
                if slot.timeout is None:
                    slot.timeout = self.schedule(self.options.slot_timeout * NS_PER_MS, self._slot_timed_out, slot)
        if reconnect:
            self._connect_to_job_master(job_id, connection.address)
        else:
            self.jobs.pop(job_id, None)

    def _slot_timed_out(self, slot: _Slot) -> None:
        slot.timeout = None
        if not slot.active and self.slots[slot.index] is slot:
            self._free(slot.allocation_id, "taskmanager.slot.timeout passed without the JobManager")

    def _release_job(self, job_id: str, reason: str) -> None:
        connection = self.jobs.pop(job_id, None)
        if connection is None:
            return
        if connection.registration is not None:
            connection.registration.cancel()
        if connection.registered:
            self.jm_heartbeats.unmonitor_target(connection.address)
            self.tell(connection.address, m.DisconnectTaskManager(self.resource_id, reason))

    def job_master_payload(self, address: str, held: Any) -> None:
        """The JobMaster's AllocatedSlotReport: free active slots it no longer holds."""
        if held is None:
            return
        for slot in list(self.slots):
            if slot is not None and slot.job_master == address and slot.active and slot.allocation_id not in held:
                self._free(slot.allocation_id, "not held by the JobManager any more")

    def job_master_heartbeat_payload(self, address: str) -> Any:
        """The executions here of the JobMaster's jobs (running, or ended but not yet acknowledged)."""
        jobs = {j for j, c in self.jobs.items() if c.address == address}
        running = [key for key, task in self.tasks.items() if task.deployment.job_id in jobs]
        ended = [key for key, (job_id, _) in self.unacknowledged.items() if job_id in jobs]
        return tuple(running + ended)

    # -- tasks --------------------------------------------------------------------------------

    def handle_SubmitTask(self, message: m.SubmitTask, sender: str) -> str:
        deployment = self.services.localize(message.deployment)
        slot = next((s for s in self.slots if s is not None and s.allocation_id == deployment.allocation_id), None)
        if slot is None:
            raise RuntimeError(f"TaskSubmissionException: no slot allocated for {deployment.allocation_id} on "
                               f"{self.resource_id}")
        task = StreamTask(deployment, self.run, self.services.shuffle, self.services.network_settings, self._report)
        task.job_master = sender  # type: ignore[attr-defined]
        task.tell_job_master = lambda message: self.loop.call_in_thread(self._tell_job_master, sender, message)
        task.slowdown = self.slowdown
        task.instrument = self.services.faults.instrument
        self.tasks[task.attempt_key] = task
        if self.task_threads is None:
            self.loop.call_soon(task.start)
        else:
            thread = self.task_threads[task.attempt_key] = TaskThread(
                task, self.loop, self.resource_id, self.options.cancellation_interval, self.options.cancellation_timeout,
                self._task_stuck)
            self.loop.io_started()  # the run goes on while the thread runs
            thread.start()
        return m.ACK

    def _stop_task(self, task: StreamTask, reason: str, failure: BaseException | None = None) -> None:
        """Cancel a task (or fail it with ``failure``); a task in a thread of its own is
        interrupted and ends in its thread."""
        thread = self.task_threads.get(task.attempt_key) if self.task_threads is not None else None
        if thread is not None:
            thread.stop(reason, failure)
        elif failure is not None:
            task.fail(failure)
        else:
            task.cancel()

    def _task_stuck(self, thread: TaskThread, operator: str, location: str) -> None:
        """A stopped task did not return in time: a fatal error of this TaskExecutor."""
        task = thread.task
        where = f" at {location}" if location else ""
        self.services.fatal_error(
            self.address, f"Task {task.name} did not exit within task.cancellation.timeout ({thread.timeout_ms} ms) of being "
                  f"stopped: stuck in operator {operator!r}{where}")

    def handle_FinishStagedOutput(self, message: m.FinishStagedOutput, sender: str) -> str:
        """The job ended: commit what its final attempts' sinks staged here (and discard the rest)."""
        self.services.staged_output.commit([tuple(attempt) for attempt in message.attempts], message.discard_rest)
        return m.ACK

    def handle_RequestTaskBackPressure(self, message: m.RequestTaskBackPressure, sender: str) -> Any:
        task = self.tasks.get((message.vertex_id, message.subtask, message.attempt))
        if task is None:
            raise RuntimeError(f"Cannot request back pressure of task {message.vertex_id}_{message.subtask} "
                               f"(attempt {message.attempt}): it is not known to TaskExecutor {self.resource_id}")
        return self.back_pressure_sampler.sample(task, message)

    def handle_CancelTask(self, message: m.CancelTask, sender: str) -> str:
        task = self.tasks.get((message.vertex_id, message.subtask, message.attempt))
        if task is None:
            return "unknown"  # ended already (its final state is reported) or never arrived
        self._stop_task(task, "cancelled by the JobMaster")
        return m.ACK

    def _tell_job_master(self, job_master: str, message: Any) -> None:
        if not self.stopped:
            self.tell(job_master, message)

    # -- checkpoints --------------------------------------------------------------------------

    def handle_TriggerCheckpoint(self, message: m.TriggerCheckpoint, sender: str) -> None:
        task = self.tasks.get((message.vertex_id, message.subtask, message.attempt))
        if task is None or task.checkpoints is None:  # Flink's Task declines a trigger before it runs
            job_id = next((c.job_id for c in self.jobs.values() if c.address == sender), "")
            self.tell(sender, DeclineCheckpoint(
                job_id=job_id, vertex_id=message.vertex_id, subtask=message.subtask, attempt=message.attempt,
                checkpoint_id=message.checkpoint_id, reason=CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_NOT_READY.name,
                message=f"TaskExecutor {self.resource_id} runs no such task" if task is None else
                f"task {task.name} is not running yet"))
        else:
            task.checkpoints.trigger(message.checkpoint_id, message.timestamp, message.aligned, message.unaligned,
                                     message.alignment_timeout, message.stop, message.drain, message.location)

    def handle_NotifyCheckpointComplete(self, message: m.NotifyCheckpointComplete, sender: str) -> None:
        task = self.tasks.get((message.vertex_id, message.subtask, message.attempt))
        if task is not None and task.checkpoints is not None and task.state == "RUNNING":
            task.checkpoints.notify_complete(message.checkpoint_id)

    def handle_NotifyCheckpointAborted(self, message: m.NotifyCheckpointAborted, sender: str) -> None:
        task = self.tasks.get((message.vertex_id, message.subtask, message.attempt))
        if task is not None and task.checkpoints is not None and task.state == "RUNNING":
            task.checkpoints.notify_aborted(message.checkpoint_id)

    def _report(self, task: StreamTask, state: str, failure: str) -> None:
        d = task.deployment
        if state in TERMINAL:
            self.tasks.pop(task.attempt_key, None)
            if self.task_threads is not None and self.task_threads.pop(task.attempt_key, None) is not None:
                self.loop.io_finished()
            self.services.task_ended(task)
            self.sample(task, final=True)
        if self.stopped:
            return
        message = m.UpdateTaskExecutionState(d.vertex.id, d.subtask, d.attempt, state, failure)
        if state in TERMINAL:
            self.unacknowledged[task.attempt_key] = (d.job_id, message)
            self._send_final_state(task.attempt_key)
        else:
            self.tell(task.job_master, message)  # type: ignore[attr-defined]

    def _send_final_state(self, key: tuple[str, int, int]) -> None:
        entry = self.unacknowledged.get(key)
        connection = self.jobs.get(entry[0]) if entry is not None else None
        if entry is None or connection is None or not connection.registered:
            return
        answer = self.ask(connection.address, entry[1], self.options.rpc_timeout * NS_PER_MS)

        def answered(done: Any) -> None:
            error = done.exception()
            if error is None:
                self.unacknowledged.pop(key, None)
            elif isinstance(error, (AskTimeout, RecipientUnreachable)):
                self._send_final_state(key)

        answer.add_done_callback(answered)

    def set_slowdown(self, factor: float) -> None:
        """A slow TaskExecutor (injected fault): its tasks' work takes ``factor`` times as long."""
        self.slowdown = factor
        for task in self.tasks.values():
            if task.mailbox is not None:
                task.mailbox.slowdown = factor

    # -- metrics ------------------------------------------------------------------------------

    def sample(self, task: StreamTask, final: bool = False) -> None:
        """The task's metrics since the last sample, then its user metrics at the same instant."""
        d = task.deployment
        now = self.clock.now()
        values: dict[str, Any] = task.metrics.sample(now)
        user = task.metrics.user
        previous = user.previous if user is not None else []
        rows = user.sample(final) if user is not None else []
        # nothing happened since the last sample (a task that ran no clock time still counts)
        idle = final and values["interval_ms"] <= 0 and not any(
            values[name] for name in ("records_in", "records_out", *COUNTERS))
        if not idle:
            task.last_sample = values
            self._emit(TaskMetricsSampled(
                time=now, job_id=d.job_id, vertex_id=d.vertex.id, vertex_name=d.vertex.name,
                subtask=d.subtask, attempt=d.attempt, final=final, **values,
            ))
        if rows and (not idle or rows != previous):
            for row in rows:
                self._emit(UserMetricSampled(
                    time=now, job_id=d.job_id, vertex_id=d.vertex.id, vertex_name=d.vertex.name, subtask=d.subtask,
                    attempt=d.attempt, interval_ms=values["interval_ms"], final=final, **row))

    def sample_running(self) -> None:
        for task in list(self.tasks.values()):
            if task.state == "RUNNING":
                self.sample(task)

    def on_stop(self) -> None:
        if self._registration is not None:
            self._registration.cancel()
        for connection in self.jobs.values():
            if connection.registration is not None:
                connection.registration.cancel()
        self.rm_heartbeats.stop()
        self.jm_heartbeats.stop()
        for task in list(self.tasks.values()):
            self._stop_task(task, f"TaskExecutor {self.resource_id} stopped")
