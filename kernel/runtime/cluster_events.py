"""The events of Flink's runtime model that more than one room needs: what every execution
backend records (job status, execution states, task and user metrics, print output) and what the
kernel's live status line and replay's views and state read (watermarks, input files,
TaskExecutors, slots, heartbeats, faults, failures and restarts).

The rule for event types: an event lives with whoever emits it — the kernel's in
:mod:`kernel.events`, a plugin's in that plugin's ``events`` module, registered with
``register_event_types``, its SQL views registered by the same plugin (``register_views``) —
except when more than one room must know it: several rooms emit it, or the kernel or replay
reads it (replay's views, its state at an instant and its re-execution read only events of the
kernel, so they read the same whichever plugins ran); only the kernel can offer those, so they
live here.
"""

from __future__ import annotations

import math

from kernel.events import Event


class JobSubmitted(Event, tag="job_submitted"):
    job_id: str = ""
    job_name: str = ""


class JobStatusChanged(Event, tag="job_status_changed"):
    job_id: str = ""
    old_status: str = ""
    new_status: str = ""
    reason: str = ""


class WorkerStarted(Event, tag="worker_started"):
    """The ResourceManager started a TaskExecutor: the workers plugin placed it in process
    ``pid`` on ``host`` (and, on a cluster, in executor ``executor_id``)."""

    environment = ("pid", "host", "executor_id")

    resource_id: str = ""
    slots: int = 0
    pid: int = 0
    host: str = ""
    executor_id: str = ""


class WorkerRegistered(Event, tag="worker_registered"):
    """A TaskExecutor registered at the ResourceManager (``registration`` counts re-registrations)."""

    resource_id: str = ""
    slots: int = 0
    registration: int = 1


class WorkerStopped(Event, tag="worker_stopped"):
    resource_id: str = ""
    reason: str = ""


class SlotAllocated(Event, tag="slot_allocated"):
    """The JobMaster accepted a slot a TaskExecutor offered."""

    job_id: str = ""
    allocation_id: str = ""
    resource_id: str = ""
    slot_index: int = 0


class SlotReleased(Event, tag="slot_released"):
    job_id: str = ""
    allocation_id: str = ""
    resource_id: str = ""
    slot_index: int = 0
    reason: str = ""


class TaskEvent(Event):
    """Base of the events of one execution attempt of one subtask."""

    job_id: str = ""
    vertex_id: str = ""
    vertex_name: str = ""
    subtask: int = 0
    attempt: int = 0


class ExecutionStateChanged(TaskEvent, tag="execution_state_changed"):
    """An execution attempt moved between Flink's execution states (``failure``: the cause,
    with the operator and traceback, when it FAILED)."""

    old_state: str = ""
    new_state: str = ""
    resource_id: str = ""
    failure: str = ""


class TaskMetricsSampled(TaskEvent, tag="task_metrics_sampled"):
    """One task's TimerGauge metrics over one clock second (``interval_ms`` shorter for the
    last, partial sample when the task ends). busy = interval - idle - back pressured; NaN for
    legacy sources, as in Flink. Back pressure is Flink's soft back pressured time (the task
    waits, suspended, for room in its output), so ``soft_back_pressured_ms`` equals
    ``back_pressured_ms``; ``hard_back_pressured_ms`` (time blocked requesting a buffer) is
    always 0: rill's record writer never blocks mid-record. The field stays in the event's
    format."""

    interval_ms: float = 1000.0
    idle_ms: float = 0.0
    busy_ms: float = 0.0
    back_pressured_ms: float = 0.0
    soft_back_pressured_ms: float = 0.0
    hard_back_pressured_ms: float = 0.0
    records_in: int = 0
    records_out: int = 0
    records_in_per_second: float = 0.0
    records_out_per_second: float = 0.0
    final: bool = False
    latency_ms: float = math.nan  # largest latency-marker delay seen by this sink in the interval
    late_records_dropped: int = 0  # late elements a window operator dropped in the interval
    timers_fired: int = 0  # event- and processing-time timers fired in the interval
    windows_fired: int = 0  # window results (trigger FIREs with contents) in the interval


class UserMetricSampled(TaskEvent, tag="user_metric_sampled"):
    """One user metric of one task (PyFlink's ``MetricGroup`` API), sampled with the task's
    metrics (``TaskMetricsSampled`` of the same time and ``interval_ms``). ``operator`` and
    ``operator_id`` name the operator whose runtime context registered it, ``scope`` the user
    groups below the operator's group (joined by ``.``), ``metric_type`` counter, gauge, meter
    or distribution. ``value``: a counter's count, a gauge's value, a meter's rate (events per
    second over its time span), a distribution's last value; ``count``: a counter's count, the
    events a meter marked, the values a distribution took; ``sum``/``min``/``max``: a
    distribution's; NULL what a kind has not. ``error``: why a gauge has no value (its callable raised, or returned no
    number)."""

    operator: str = ""
    operator_id: str = ""
    scope: str = ""
    name: str = ""
    metric_type: str = ""
    value: float | None = None
    count: int | None = None
    sum: float | None = None
    min: float | None = None
    max: float | None = None
    interval_ms: float = 0.0
    final: bool = False
    error: str = ""


class WatermarkAdvanced(TaskEvent, tag="watermark_advanced"):
    """A task's watermark advanced. ``direction`` "input": the StatusWatermarkValve of input gate
    ``input`` passed it to the head operator; "output": it left the chain, into the network or
    at a sink at the chain's end (``input`` -1). Strictly increasing per task, direction and input."""

    direction: str = ""
    input: int = -1
    watermark: int = 0
    #: output of a task assigning timestamps (a source): the largest event time it has seen
    event_time: int | None = None


class WatermarkStatusChanged(TaskEvent, tag="watermark_status_changed"):
    """A task's WatermarkStatus changed to ``status`` IDLE or ACTIVE, at an input gate (from its
    valve) or at its output."""

    direction: str = ""
    input: int = -1
    status: str = ""


class SinkOutputPrinted(TaskEvent, tag="sink_output_printed"):
    """A print sink wrote ``lines`` lines of ``text`` to stdout (what a run printed, for
    replays and what-if comparisons)."""

    sink: str = ""
    lines: int = 0
    text: str = ""


class SourceFileOpened(TaskEvent, tag="source_file_opened"):
    """A file source opened ``path`` (``sha256`` of its ``size`` bytes); ``content`` holds the
    bytes when at most 64 MiB, so a re-execution can read the same input."""

    path: str = ""
    size: int = 0
    sha256: str = ""
    content: bytes = b""


class HeartbeatRequested(Event, tag="heartbeat_requested"):
    """``sender`` requested a heartbeat from ``target`` (every heartbeat interval)."""

    sender: str = ""
    target: str = ""


class HeartbeatReceived(Event, tag="heartbeat_received"):
    """``owner`` heard from ``target``: a ``request`` (receiver side) or a ``response`` (sender
    side, ``round_trip_ms`` since its last request), as ``message``."""

    owner: str = ""
    target: str = ""
    message: str = ""
    round_trip_ms: float = math.nan


class HeartbeatTimedOut(Event, tag="heartbeat_timed_out"):
    """``owner``'s monitor of ``target`` expired: nothing heard for ``silent_ms``."""

    owner: str = ""
    target: str = ""
    silent_ms: float = 0.0


class HeartbeatTargetMarkedUnreachable(Event, tag="heartbeat_target_marked_unreachable"):
    """``failures`` consecutive heartbeat messages from ``owner`` to ``target`` failed."""

    owner: str = ""
    target: str = ""
    failures: int = 0


class FaultInjected(Event, tag="fault_injected"):
    """Injected fault number ``index`` took effect (``phase`` start) or ended (``phase`` end)."""

    index: int = 0
    fault_kind: str = ""
    target: str = ""
    phase: str = "start"
    description: str = ""


class TaskFailureHandled(TaskEvent, tag="task_failure_handled"):
    """The scheduler handled a task failure: restart (``vertices_to_restart`` of them after
    ``delay_ms``, the ``restart``-th restart) or not (the job fails: ``reason``)."""

    cause: str = ""
    restart: bool = False
    vertices_to_restart: int = 0
    delay_ms: float = 0.0
    restart_number: int = 0
    reason: str = ""


class TasksRestarted(Event, tag="tasks_restarted"):
    """The back-off elapsed: ``vertices`` execution vertices got new attempts and were handed
    back to the scheduling strategy."""

    job_id: str = ""
    vertices: int = 0
    restart_number: int = 0


CLUSTER_EVENT_TYPES: tuple[type[Event], ...] = (
    JobSubmitted, JobStatusChanged, WorkerStarted, WorkerRegistered, WorkerStopped, SlotAllocated,
    SlotReleased, ExecutionStateChanged, TaskMetricsSampled, UserMetricSampled, WatermarkAdvanced,
    WatermarkStatusChanged, SinkOutputPrinted, SourceFileOpened, HeartbeatRequested, HeartbeatReceived,
    HeartbeatTimedOut, HeartbeatTargetMarkedUnreachable, FaultInjected, TaskFailureHandled, TasksRestarted,
)
