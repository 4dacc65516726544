"""The JobMaster: the RPC endpoint of one job.

It starts the job's :class:`DefaultScheduler` (which builds the ExecutionGraph and owns the
SlotPool and the ExecutionDeployer), connects to the ResourceManager (retrying; requirements
are declared again after a reconnection, slots are kept) and lets TaskExecutors connect
before they offer slots. Messages from the cluster go to the scheduler's parts: slot offers
to the slot pool, execution state updates and cancellation to the scheduler, checkpoint
acknowledgements, declines and ends of data to the checkpoint coordinator, savepoint requests
to the scheduler.

Heartbeats (seed 003): the JobMaster requests heartbeats from its TaskExecutors, sending the
allocations it holds there, and reconciles the executions they report; it answers the
ResourceManager's requests and reconnects when it loses it. Executions on a TaskExecutor the
JobMaster loses (heartbeat timeout, unreachable, its slots reported gone by the
ResourceManager) fail with that cause.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.runtime.checkpointing.messages import AcknowledgeCheckpoint, DeclineCheckpoint
from kernel.clock import NS_PER_MS
from kernel.runtime.graph.execution import JobStatus
from kernel.runtime.graph.job import JobGraph
from kernel.messaging import Component, MessagingService
from plugins.local import messages as m
from plugins.local.connections import HeartbeatTarget, Listener, RetryingRegistration, heartbeat_manager
from plugins.local.events import ConnectionClosed, TaskExecutorConnected
from plugins.local.jobmaster.backpressure import create_back_pressure_monitor, final_judgement
from plugins.local.jobmaster.scheduler import DefaultScheduler

if TYPE_CHECKING:
    from kernel.contracts.backpressure import BackPressureMonitor
    from kernel.events import Event
    from kernel.lifecycle.run import Run
    from plugins.local.options import ClusterOptions
    from plugins.local.recovery import RecoveryTracker


class JobMaster(Component):
    def __init__(self, address: str, messaging: MessagingService, run: Run, job_graph: JobGraph,
                 dispatcher: str, options: ClusterOptions, tracker: RecoveryTracker) -> None:
        super().__init__(address, messaging)
        self.run = run
        self.job_graph = job_graph
        self.job_id = job_graph.job_id
        self.dispatcher = dispatcher
        self.options = options
        self.tracker = tracker
        self.scheduler: DefaultScheduler | None = None
        self.back_pressure: BackPressureMonitor | None = None
        self.task_managers: set[str] = set()
        #: where each TaskExecutor serves its partitions to others ("": in this process)
        self.task_manager_locations: dict[str, str] = {}
        self.rm_connected = False
        self.started_scheduling = False
        self._registration: RetryingRegistration | None = None

    def emit(self, event: Event) -> None:
        self.run.bus.emit(event)

    @property
    def status(self) -> JobStatus:
        return self.scheduler.status if self.scheduler is not None else JobStatus.CREATED

    # -- start and end ------------------------------------------------------------------------

    def on_start(self) -> None:
        self.scheduler = DefaultScheduler(self)
        self.rm_heartbeats = heartbeat_manager(self, Listener(self, "resource_manager"), "receiver")
        self.tm_heartbeats = heartbeat_manager(self, Listener(self, "task_manager"), "sender")
        self.back_pressure = create_back_pressure_monitor(self)
        self.scheduler.start()
        if self.back_pressure is not None:
            self.back_pressure.start()
        self._connect_to_resource_manager()

    def on_stop(self) -> None:
        if self._registration is not None:
            self._registration.cancel()
        self.rm_heartbeats.stop()
        self.tm_heartbeats.stop()

    def job_ended(self, status: JobStatus, failure: str, staged: tuple | None = None) -> None:
        """The scheduler ended the job: TaskExecutors in other processes commit what the sinks
        of the final attempts staged there (``staged``: (TaskExecutor, attempt) in job-vertex
        and subtask order, committed in that order across TaskExecutors) and discard the rest
        (``()``: all of it); then disconnect the TaskExecutors, tell the Dispatcher (with the
        back-pressure monitor's judgement)."""
        finishes = self._staged_output_finishes(staged) if staged is not None else []
        self._finish_staged_output(finishes, lambda: self._job_terminated(status, failure))

    def _staged_output_finishes(self, staged: tuple) -> list[tuple[str, m.FinishStagedOutput]]:
        """One ask per run of consecutive final attempts in the same TaskExecutor process (its
        last one discards what is left there), then one to each such TaskExecutor without any."""
        remote = {resource_id for resource_id, address in self.task_manager_locations.items() if address}
        runs: list[tuple[str, list]] = []
        for resource_id, attempt in staged:
            if resource_id in remote:
                if runs and runs[-1][0] == resource_id:
                    runs[-1][1].append(attempt)
                else:
                    runs.append((resource_id, [attempt]))
        last = {resource_id: index for index, (resource_id, _) in enumerate(runs)}
        finishes = [(resource_id, m.FinishStagedOutput(self.job_id, tuple(attempts), last[resource_id] == index))
                    for index, (resource_id, attempts) in enumerate(runs)]
        return finishes + [(resource_id, m.FinishStagedOutput(self.job_id)) for resource_id in sorted(remote - set(last))]

    def _finish_staged_output(self, finishes: list[tuple[str, m.FinishStagedOutput]], then: Any) -> None:
        if not finishes:
            then()
            return
        (resource_id, message), rest = finishes[0], finishes[1:]
        answer = self.ask(resource_id, message, self.options.rpc_timeout * NS_PER_MS)
        answer.add_done_callback(lambda done: self._finish_staged_output(rest, then))

    def _job_terminated(self, status: JobStatus, failure: str) -> None:
        for resource_id in sorted(self.task_managers):
            self.tell(resource_id, m.DisconnectJobManager(self.job_id, f"job {status.value.lower()}"))
        judgement = final_judgement(self.back_pressure)
        scheduler = self.scheduler
        savepoint = scheduler.stopped_with_savepoint if status is JobStatus.FINISHED else ""
        self.tell(self.dispatcher, m.JobTerminated(self.job_id, status.value, failure, judgement, savepoint,
                                                   "" if savepoint else scheduler.stop_failure))

    # -- the ResourceManager ------------------------------------------------------------------

    def _connect_to_resource_manager(self) -> None:
        self._registration = RetryingRegistration(self, m.RESOURCE_MANAGER, m.RegisterJobMaster(self.job_id, self.address),
                                                  self.options, self._connected_to_resource_manager).start()

    def _connected_to_resource_manager(self, answer: Any) -> None:
        self.rm_connected = True
        self.rm_heartbeats.monitor_target(m.RESOURCE_MANAGER, HeartbeatTarget(self, m.RESOURCE_MANAGER, "rm-jm",
                                                                            self.options.rpc_timeout))
        if not self.started_scheduling:
            self.started_scheduling = True
            self.scheduler.strategy.start_scheduling()
        else:
            self.scheduler.slot_pool.declare(force=True)

    def resource_manager_lost(self, address: str, reason: str) -> None:
        self.tracker.detected(self.clock.now(), self.address, address, reason)
        self._close_resource_manager(f"the ResourceManager's {reason}")

    def handle_DisconnectResourceManager(self, message: m.DisconnectResourceManager, sender: str) -> None:
        self._close_resource_manager(f"the ResourceManager closed the connection: {message.reason}")

    def _close_resource_manager(self, reason: str) -> None:
        if not self.rm_connected or self.status.is_globally_terminal:
            return
        self.rm_connected = False
        self.rm_heartbeats.unmonitor_target(m.RESOURCE_MANAGER)
        self.emit(ConnectionClosed(time=self.clock.now(), owner=self.address, target=m.RESOURCE_MANAGER, reason=reason))
        self._connect_to_resource_manager()  # slots are kept; requirements are declared again

    def resource_manager_payload(self, address: str, payload: Any) -> None:
        """The ResourceManager's requests carry nothing."""

    def resource_manager_heartbeat_payload(self, address: str) -> Any:
        return None

    # -- TaskExecutors ------------------------------------------------------------------------

    def handle_RegisterTaskManager(self, message: m.RegisterTaskManager, sender: str) -> str:
        if message.job_id != self.job_id or self.status.is_globally_terminal:
            raise RuntimeError(f"JobMaster {self.address} does not run job {message.job_id}")
        self.task_manager_locations[message.resource_id] = message.data_address
        if message.resource_id not in self.task_managers:
            self.task_managers.add(message.resource_id)
            self.tm_heartbeats.monitor_target(message.resource_id, HeartbeatTarget(self, message.resource_id, "jm-te",
                                                                                   self.options.rpc_timeout))
            self.emit(TaskExecutorConnected(time=self.clock.now(), job_id=self.job_id, resource_id=message.resource_id))
        return m.ACK

    def task_manager_lost(self, resource_id: str, reason: str) -> None:
        self.tracker.detected(self.clock.now(), self.address, resource_id, reason)
        cause = (f"TimeoutException: Heartbeat of TaskManager with id {resource_id} timed out."
                 if reason == "heartbeat timeout" else
                 f"RecipientUnreachableException: TaskManager with id {resource_id} is no longer reachable.")
        self._disconnect_task_manager(resource_id, cause, tell=True)

    def handle_DisconnectTaskManager(self, message: m.DisconnectTaskManager, sender: str) -> None:
        self._disconnect_task_manager(message.resource_id, f"TaskManager {message.resource_id} disconnected: "
                                                           f"{message.reason}", tell=False)

    def _disconnect_task_manager(self, resource_id: str, cause: str, tell: bool) -> None:
        """Release the TaskExecutor's slots (their executions fail) and close the connection."""
        if resource_id in self.task_managers:
            self.task_managers.discard(resource_id)
            self.tm_heartbeats.unmonitor_target(resource_id)
            self.emit(ConnectionClosed(time=self.clock.now(), owner=self.address, target=resource_id, reason=cause))
            if tell:
                self.tell(resource_id, m.DisconnectJobManager(self.job_id, cause))
        self.scheduler.slots_lost(resource_id, cause)

    def handle_AllocationsFailed(self, message: m.AllocationsFailed, sender: str) -> None:
        self.scheduler.slots_lost(message.resource_id, message.reason, set(message.allocation_ids))

    def handle_NotEnoughResourcesAvailable(self, message: m.NotEnoughResourcesAvailable, sender: str) -> None:
        """A streaming job's waiting slot requests fail at once (Flink's DeclarativeSlotPoolBridge;
        a BATCH job's wait, as it needs not all its slots at the same time)."""
        if self.job_graph.runtime_mode != "BATCH" and not self.status.is_globally_terminal:
            self.scheduler.slot_pool.fail_pending_requests(message.reason)

    def task_manager_payload(self, resource_id: str, deployed: Any) -> None:
        """Reconcile the executions the TaskExecutor runs with what this JobMaster expects."""
        if deployed is None or self.status.is_globally_terminal:
            return
        self.scheduler.deployer.reconcile(resource_id, set(map(tuple, deployed)))  # lists, from another process

    def task_manager_heartbeat_payload(self, resource_id: str) -> Any:
        return self.scheduler.slot_pool.allocations_on(resource_id)

    def handle_HeartbeatRequest(self, message: m.HeartbeatRequest, sender: str) -> str:
        self.rm_heartbeats.request_heartbeat(message.sender_id, message.payload)
        return m.ACK

    def handle_HeartbeatResponse(self, message: m.HeartbeatResponse, sender: str) -> str:
        self.tm_heartbeats.receive_heartbeat(message.sender_id, message.payload)
        return m.ACK

    # -- slots, executions, the job -----------------------------------------------------------

    def handle_OfferSlots(self, message: m.OfferSlots, sender: str) -> m.SlotOfferReply:
        scheduler = self.scheduler
        accepting = message.resource_id in self.task_managers and scheduler.status is JobStatus.RUNNING
        reply = scheduler.slot_pool.offer(message.resource_id, message.offers, accepting)
        self.loop.call_soon(scheduler.deployer.deploy_ready)
        return reply

    def handle_UpdateTaskExecutionState(self, message: m.UpdateTaskExecutionState, sender: str) -> str:
        self.scheduler.update_task_execution_state(message)
        if message.state == "RUNNING" and self.back_pressure is not None:
            self.back_pressure.task_running(message.vertex_id)
        return m.ACK

    def handle_CancelJob(self, message: m.CancelJob, sender: str) -> None:
        self.scheduler.cancel(message.reason)

    # -- checkpoints --------------------------------------------------------------------------

    def handle_AcknowledgeCheckpoint(self, message: AcknowledgeCheckpoint, sender: str) -> None:
        if self.scheduler.checkpoints is not None:
            self.scheduler.checkpoints.receive_acknowledge(message)

    def handle_DeclineCheckpoint(self, message: DeclineCheckpoint, sender: str) -> None:
        if self.scheduler.checkpoints is not None:
            self.scheduler.checkpoints.receive_decline(message)

    def handle_TriggerSavepoint(self, message: m.TriggerSavepoint, sender: str) -> Any:
        return self.scheduler.trigger_savepoint(message.directory, message.terminate, message.drain)

    def handle_NotifyEndOfData(self, message: m.NotifyEndOfData, sender: str) -> None:
        if self.scheduler.checkpoints is not None:
            self.scheduler.checkpoints.end_of_data(message.vertex_id, message.subtask, message.attempt)
