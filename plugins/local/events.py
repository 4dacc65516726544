"""Events only the local cluster emits (registered by the ``backend.local`` plugin): the
slot protocol's inner steps, deployments, connections between components, the cancellation
of tasks running in threads of their own, and — at ``rill.events.level = debug`` — mailbox
suspensions."""

from __future__ import annotations

from kernel.runtime.cluster_events import TaskEvent
from kernel.events import Event


class JobMasterRegistered(Event, tag="job_master_registered"):
    job_id: str = ""
    address: str = ""


class ResourceRequirementsDeclared(Event, tag="resource_requirements_declared"):
    """The JobMaster's slot pool told the ResourceManager how many slots the job needs."""

    job_id: str = ""
    slots: int = 0


class SlotRequested(Event, tag="slot_requested"):
    """The ResourceManager's slot manager asked a TaskExecutor for one of its slots."""

    job_id: str = ""
    allocation_id: str = ""
    resource_id: str = ""
    slot_index: int = 0


class TaskDeployed(TaskEvent, tag="task_deployed"):
    resource_id: str = ""
    allocation_id: str = ""
    slot_index: int = 0


class TaskExecutorConnected(Event, tag="task_executor_connected"):
    """A TaskExecutor registered at a job's JobMaster (then offers its slots)."""

    job_id: str = ""
    resource_id: str = ""


class ConnectionClosed(Event, tag="connection_closed"):
    """``owner`` closed its connection to ``target`` (heartbeat timeout, unreachable, or told
    to by the other side); what follows is Flink's reaction (reconnect, release slots, fail
    tasks)."""

    owner: str = ""
    target: str = ""
    reason: str = ""


class MailboxSuspended(Event, tag="mailbox_suspended"):
    """The default action stopped: ``reason`` ``idle`` (no input), ``back_pressure`` (no output
    buffer), ``async_capacity`` (an async operator's queue is full) or ``finishing`` (end of
    input). High rate: recorded with ``rill.events.level = debug`` only."""

    level = "debug"

    vertex_id: str = ""
    subtask: int = 0
    attempt: int = 0
    reason: str = ""


class MailboxResumed(Event, tag="mailbox_resumed"):
    level = "debug"

    vertex_id: str = ""
    subtask: int = 0
    attempt: int = 0
    reason: str = ""


class TaskCancelRequested(TaskEvent, tag="task_cancel_requested"):
    """The TaskExecutor asked a task running in a thread of its own (realtime clock) to stop:
    ``action`` ``cancel`` or ``fail`` (with ``reason``); its thread is interrupted (Flink's
    Task.cancelExecution / failExternally). Under the simulated clock a task stops at once and
    this is not recorded."""

    resource_id: str = ""
    action: str = ""
    reason: str = ""


class TaskInterrupted(TaskEvent, tag="task_interrupted"):
    """A task asked to stop had not returned from user code after another
    ``task.cancellation.interval``: it is interrupted again (Flink's TaskInterrupter);
    ``operator`` is the one it is busy in, at ``location`` (file:line in function)."""

    resource_id: str = ""
    operator: str = ""
    location: str = ""
    waited_ms: float = 0.0


class TaskCancellationTimedOut(TaskEvent, tag="task_cancellation_timed_out"):
    """A task asked to stop had not returned after ``task.cancellation.timeout``: it is stuck
    in ``operator`` (at ``location``). Its TaskExecutor gives up (Flink's watchdog: a fatal
    error); embedded, the run ends, canceled, naming the operator — its thread cannot be
    killed."""

    resource_id: str = ""
    operator: str = ""
    location: str = ""
    waited_ms: float = 0.0


LOCAL_EVENT_TYPES: tuple[type[Event], ...] = (
    JobMasterRegistered, ResourceRequirementsDeclared, SlotRequested, TaskDeployed,
    TaskExecutorConnected, ConnectionClosed, MailboxSuspended, MailboxResumed,
    TaskCancelRequested, TaskInterrupted, TaskCancellationTimedOut,
)
