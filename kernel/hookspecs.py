"""Hook specifications of rill, in the order they fire.

Hooks assemble the system: they are factories, translators, policies and registrations.
None of them is ever called per record, per mail or per watermark.

Every ``create_*`` factory returns the typed contract of its concern, a Protocol in
:mod:`kernel.contracts` (one module per concern). Who calls them:

- the kernel (:mod:`kernel.lifecycle.execution`) owns a run's life cycle: it compiles the program
  (``build_*``), creates the execution backend, the run with its event observers, records the
  compilation, lets the backend execute, finishes the run;
- the local backend (``plugins/local``) builds Flink's cluster from the rest: its MiniCluster
  the workers' ResourceManagerDriver, its JobMaster's DefaultScheduler (``jobmaster/``) the
  ExecutionGraph, the scheduling, restart and failover strategies, the watermark alignment and
  checkpoint coordinators, its JobMaster the back-pressure monitor; each StreamTask
  (``tasks/``) its mailbox processor, barrier handler and, through its operator runtime,
  watermark generators and valves; every component its heartbeat managers (``connections.py``);
- readers of recorded runs (``replay``) open the event store and create the registered views;
  ``rill sql`` hands the chosen engine a :class:`~kernel.contracts.sql.SqlQuery` with both.
Registration is not selection: ``register_config``, ``register_event_types`` and
``register_views`` are called on every installed plugin, selected or not (a plugin that is
not chosen for its concern still declares its keys, event types and views); every other hook
only on the plugins selected for their concern (:mod:`kernel.pluginmanager`).
Always call hooks with keyword arguments; implementations may take fewer arguments than the spec.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import pluggy

from kernel import PROJECT

if TYPE_CHECKING:
    import click

    from kernel.config import Config
    from kernel.contracts.backend import ExecutionBackend
    from kernel.contracts.checkpointing import (CheckpointableTask, CheckpointBarrierHandler, CheckpointCoordinator,
                                                CheckpointCoordinatorContext)
    from kernel.contracts.backpressure import BackPressureMonitor, MonitoredJob
    from kernel.contracts.eventstore import EventStore
    from kernel.contracts.failover import FailoverStrategy, RestartBackoffTimeStrategy
    from kernel.contracts.heartbeats import HeartbeatListener, HeartbeatManager
    from kernel.contracts.mailbox import MailboxProcessor, MailboxTask
    from kernel.contracts.scheduling import SchedulerOperations, SchedulingStrategy
    from kernel.contracts.sql import SqlEngine
    from kernel.contracts.watermarks import WatermarkAlignmentCoordinator, WatermarkGenerator, WatermarkValve
    from kernel.contracts.workers import ResourceManagerDriver, WorkerHost
    from kernel.eventbus import EventObserver
    from kernel.events import Event
    from kernel.runtime.graph.execution import ExecutionGraph
    from kernel.runtime.graph.job import JobGraph
    from kernel.runtime.graph.stream import StreamEdge, StreamGraph, StreamNode
    from kernel.messaging import Component
    from kernel.lifecycle.program import Program
    from kernel.lifecycle.run import Run

hookspec = pluggy.HookspecMarker(PROJECT)


# -------------------------------------------------------------------------------------------
# Set-up: plugins register what they bring before any job is compiled.
# -------------------------------------------------------------------------------------------


@hookspec
def register_config(register: Callable[[type], None]) -> None:
    """Register configuration sections.

    Called: while the configuration is validated, when a session opens.

    :param register: call ``register(SectionStruct)`` with a subclass of
        :class:`kernel.config.Section`. Its fields are full config keys
        (``msgspec.field(name="my-plugin.threshold")``); keys of a plugin's own settings
        start with the plugin's name.
    :returns: nothing.
    """


@hookspec
def register_event_types(register: Callable[[type[Event]], None]) -> None:
    """Register event types a plugin emits.

    Called: when the event registry is built (once per process, before a run starts).

    :param register: call ``register(EventStruct)`` with a subclass of
        :class:`kernel.events.Event`. Its ``tag`` must be unique and is never renamed or reused.
    :returns: nothing.
    """


@hookspec
def register_commands(register: Callable[[click.Command], None]) -> None:
    """Register CLI commands or command groups of the ``rill`` command.

    Called: when the CLI starts, before arguments are parsed.

    :param register: call ``register(command)`` with a :class:`click.Command`.
    :returns: nothing.
    """


# -------------------------------------------------------------------------------------------
# Graph compilation: Transformations -> StreamGraph -> JobGraph -> ExecutionGraph.
# -------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def build_stream_graph(program: Program, config: Config) -> StreamGraph | None:
    """Translate the program's transformations into a StreamGraph.

    Called: by ``env.execute()``, ``rill plan`` and ``rill run`` once per job.
    Stops at first non-None result.

    :param program: the job name, transformations (in creation order) and environment settings.
    :param config: the validated configuration.
    :returns: the :class:`~kernel.runtime.graph.stream.StreamGraph`.
    """


@hookspec
def allow_chaining(
    edge: StreamEdge, upstream: StreamNode, downstream: StreamNode, config: Config
) -> bool | None:
    """Veto chaining of one StreamGraph edge.

    Called: by the JobGraph translator (and the operator hasher) for every edge that Flink's
    chaining conditions allow. Every implementation is called; a single ``False`` keeps the
    edge unchained.

    :param edge: the edge considered for chaining.
    :param upstream: its source node.
    :param downstream: its target node.
    :param config: the validated configuration.
    :returns: ``False`` to veto, ``True`` or ``None`` to allow.
    """


@hookspec(firstresult=True)
def build_job_graph(
    stream_graph: StreamGraph, config: Config, chaining_vetoed: Callable[[StreamEdge, StreamNode, StreamNode], bool]
) -> JobGraph | None:
    """Translate a StreamGraph into a JobGraph: operator chains, IDs, slot sharing groups.

    Called: once per job, right after ``build_stream_graph``. Stops at first non-None result.

    :param stream_graph: the StreamGraph.
    :param config: the validated configuration.
    :param chaining_vetoed: ``chaining_vetoed(edge, upstream, downstream)`` is True when an
        ``allow_chaining`` implementation vetoes the edge; the translator must ask it for
        every edge Flink's conditions would chain (operator IDs depend on it too).
    :returns: the :class:`~kernel.runtime.graph.job.JobGraph`.
    """


@hookspec(firstresult=True)
def build_execution_graph(job_graph: JobGraph, config: Config) -> ExecutionGraph | None:
    """Expand a JobGraph into an ExecutionGraph: one ExecutionVertex per subtask,
    intermediate results and their partitions, consumer wiring.

    Called: by the JobMaster when it starts a job, and by ``rill plan --level execution``.
    Stops at first non-None result.

    :param job_graph: the JobGraph.
    :param config: the validated configuration.
    :returns: the :class:`~kernel.runtime.graph.execution.ExecutionGraph`.
    """


# -------------------------------------------------------------------------------------------
# Execution backend and runs.
# -------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def create_execution_backend(config: Config) -> ExecutionBackend | None:
    """Create the backend that executes compiled jobs (``local``, ``spark``, ...).

    Called: by the kernel once per run, after the JobGraph is built and before the run is
    created (:func:`kernel.lifecycle.execution.execute_job`).
    Stops at first non-None result.

    :param config: the validated configuration.
    :returns: an :class:`~kernel.contracts.backend.ExecutionBackend`: ``prepare(compiled)``
        before the run starts, then ``execute(compiled, run) -> JobResult``.
    """


@hookspec(firstresult=True)
def create_resource_manager_driver(host: WorkerHost, run: Run) -> ResourceManagerDriver | None:
    """Create the driver starting and stopping the cluster's TaskExecutors (``plugins.workers``).

    Called: by the local backend's MiniCluster once per run. Stops at first non-None result.

    :param host: the :class:`~kernel.contracts.workers.WorkerHost` (loop, in-process TaskExecutors).
    :param run: the run (config, clock).
    :returns: a :class:`~kernel.contracts.workers.ResourceManagerDriver`.
    """


@hookspec
def create_event_observers(run: Run) -> EventObserver | None:
    """Create an observer of the run's events.

    Called: once per run before its first event. Every implementation is called; each returned
    observer receives batches off the runtime's thread (``run_started`` before the job's code runs).

    :param run: the run (id, clock, config, plugins).
    :returns: an :class:`~kernel.eventbus.EventObserver`, or ``None`` for no observer.
    """


# -------------------------------------------------------------------------------------------
# Scheduling: slots, scheduling strategy, restarts and failover.
# -------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def create_scheduling_strategy(
    execution_graph: ExecutionGraph, scheduler: SchedulerOperations, config: Config
) -> SchedulingStrategy | None:
    """Create the strategy deciding which execution vertices are scheduled when.

    Called: by the JobMaster's DefaultScheduler once per job. Stops at first non-None result.

    :param execution_graph: the job's ExecutionGraph (the scheduling topology).
    :param scheduler: the :class:`~kernel.contracts.scheduling.SchedulerOperations`
        (``allocate_slots_and_deploy(vertices)``, ``emit(event)``, ``now()``).
    :param config: the validated configuration.
    :returns: a :class:`~kernel.contracts.scheduling.SchedulingStrategy`:
        ``start_scheduling()``, ``restart_tasks(vertex_ids)`` and
        ``on_execution_state_change(vertex, state)``.
    """


@hookspec(firstresult=True)
def create_restart_strategy(run: Run, checkpointing: bool) -> RestartBackoffTimeStrategy | None:
    """Create the restart back-off strategy (``restart-strategy.type``).

    Called: by the JobMaster's DefaultScheduler once per job.
    Stops at first non-None result.

    :param run: the run (config, clock and seeded RNG for jitter).
    :param checkpointing: whether the job takes checkpoints (Flink's default strategy when
        none is configured depends on it: exponential delay with checkpoints, none without).
    :returns: a :class:`~kernel.contracts.failover.RestartBackoffTimeStrategy`:
        ``notify_failure(now_ms) -> bool`` (True: the failure starts a new restart attempt;
        False: merged into a pending one), ``can_restart()`` (before any failure: whether
        restarts are possible at all), ``backoff_time_ms(now_ms)`` and a ``str()`` naming it
        ("Recovery is suppressed by ...").
    """


@hookspec(firstresult=True)
def create_failover_strategy(execution_graph: ExecutionGraph, config: Config) -> FailoverStrategy | None:
    """Create the failover strategy (``jobmanager.execution.failover-strategy``).

    Called: by the JobMaster's DefaultScheduler once per job.
    Stops at first non-None result.

    :param execution_graph: the job's ExecutionGraph.
    :param config: the validated configuration.
    :returns: a :class:`~kernel.contracts.failover.FailoverStrategy`:
        ``tasks_to_restart(failed_vertex) -> set of execution vertex ids``.
    """


# -------------------------------------------------------------------------------------------
# Mailbox and task execution.
# -------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def create_mailbox_processor(task: MailboxTask, run: Run) -> MailboxProcessor | None:
    """Create the MailboxProcessor that drives a StreamTask.

    Called: by a StreamTask once per deployed task attempt, while it initializes.
    Stops at first non-None result.

    :param task: the :class:`~kernel.contracts.mailbox.MailboxTask`: its ``default_action``
        processes input; failures and suspensions are reported to it; its ``loop`` (the run's,
        or under the realtime clock its thread's) steps the processor.
    :param run: the run (clock, config).
    :returns: a :class:`~kernel.contracts.mailbox.MailboxProcessor`: ``schedule()``,
        ``execute(action, description)``, ``suspend_default_action(timer, reason)``, ``stop()``
        and ``slowdown`` (a factor: work takes that many times as long).
    """


# -------------------------------------------------------------------------------------------
# Watermarking.
# -------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def create_watermark_generator(
    strategy: Any, run: Run, activity_clock: Callable[[], int]
) -> WatermarkGenerator | None:
    """Create the watermark generator for a ``WatermarkStrategy``.

    Called: when a source or a timestamps/watermarks operator opens (once per subtask) in
    streaming execution (BATCH execution has no watermarks but the final one).
    Stops at first non-None result.

    :param strategy: the user's WatermarkStrategy (out-of-orderness, idleness, alignment).
    :param run: the run (clock, config).
    :param activity_clock: processing time (ms) of the input's activity, for idleness: it
        stands still while a source is paused (back pressure, watermark alignment).
    :returns: a :class:`~kernel.contracts.watermarks.WatermarkGenerator`:
        ``on_events(values, timestamps, output)`` (per batch), ``on_periodic_emit(output)`` and
        ``max_event_time()``; ``output`` has ``emit_watermark(ts)``, ``mark_idle()`` and
        ``mark_active()``.
    """


@hookspec(firstresult=True)
def create_watermark_valve(num_channels: int, run: Run) -> WatermarkValve | None:
    """Create the StatusWatermarkValve of one input gate.

    Called: when a task's input processor is built (once per input gate).
    Stops at first non-None result.

    :param num_channels: number of input channels of the gate.
    :param run: the run.
    :returns: a :class:`~kernel.contracts.watermarks.WatermarkValve`:
        ``input_watermark(watermark, channel, output)`` and
        ``input_watermark_status(idle, channel, output)``.
    """


@hookspec(firstresult=True)
def create_watermark_alignment(run: Run) -> WatermarkAlignmentCoordinator | None:
    """Create the coordinator aligning watermarks across sources (FLIP-182).

    Called: by the JobMaster's DefaultScheduler once per job (``close()`` when the job ends).
    Stops at first non-None result.

    :param run: the run.
    :returns: a :class:`~kernel.contracts.watermarks.WatermarkAlignmentCoordinator`:
        ``join(strategy, member, deliver)`` for each source subtask with event time
        (``member``: a :class:`kernel.runtime.streaming.alignment.AlignmentMember`;
        ``deliver(max_allowed, group_min)`` hands an announcement to the subtask) returning an
        ``AlignmentMembership`` with ``update_interval_ms``, ``max_drift_ms``,
        ``report(watermark)``, ``waiting(paused, watermark)`` and ``leave()``; and ``close()``.
        ``None`` when sources read unaligned.
    """


# -------------------------------------------------------------------------------------------
# Checkpointing.
# -------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def create_checkpoint_coordinator(context: CheckpointCoordinatorContext, run: Run) -> CheckpointCoordinator | None:
    """Create the CheckpointCoordinator of a job that takes checkpoints.

    Called: by the JobMaster's DefaultScheduler once per job, when checkpointing is on
    (``execution.checkpointing.interval`` set, STREAMING execution).
    Stops at first non-None result.

    :param context: the :class:`~kernel.contracts.checkpointing.CheckpointCoordinatorContext`
        (job id and name, ExecutionGraph, ``now()``, ``schedule(delay_ns, callback)``,
        ``emit(event)``, ``trigger_checkpoint``, ``notify_checkpoint_complete`` /
        ``aborted``, ``fail_job(cause)``, ``fail_job_due_to_task_failure(...)``).
    :param run: the run (config, clock, seeded RNG).
    :returns: a :class:`~kernel.contracts.checkpointing.CheckpointCoordinator`:
        ``job_status_changed(status)``, ``receive_acknowledge``/``receive_decline(message)``,
        ``end_of_data(...)``, ``task_failed(...)``, ``restore(vertices)`` and ``storage``
        (a :class:`~kernel.contracts.checkpointing.CheckpointStorageWorker` for the tasks).
    """


@hookspec(firstresult=True)
def create_checkpoint_barrier_handler(task: CheckpointableTask, channels: list[Any],
                                      run: Run) -> CheckpointBarrierHandler | None:
    """Create the barrier handler of a task's input (aligned or at-least-once as
    ``execution.checkpointing.mode`` says).

    Called: by a StreamTask with input gates of a job that takes checkpoints, once per
    attempt, while it initializes. The built-in implementation is ``trylast``: a plugin
    handling barriers differently (unaligned checkpoints) takes over by returning a handler.
    Stops at first non-None result.

    :param task: the :class:`~kernel.contracts.checkpointing.CheckpointableTask` (``job_id``,
        ``info``; ``trigger_checkpoint_on_barrier(barrier, metrics)``,
        ``abort_checkpoint_on_barrier(checkpoint_id, reason)``).
    :param channels: every input channel of the task, gate by gate (each has ``index``,
        ``gate.index``, ``resume_consumption()`` and, for unaligned checkpoints,
        ``start_persisting``, ``finish_persisting`` and ``convert_to_priority``).
    :param run: the run (config, clock, event bus).
    :returns: a :class:`~kernel.contracts.checkpointing.CheckpointBarrierHandler`:
        ``process_barrier``, ``process_barrier_announcement``, ``process_cancel_marker``,
        ``process_end_of_partition``, ``records_processed``, ``abort`` and ``aligning``.
    """


# -------------------------------------------------------------------------------------------
# Heartbeats.
# -------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def create_heartbeat_manager(
    owner: Component, listener: HeartbeatListener, role: str, run: Run
) -> HeartbeatManager | None:
    """Create a heartbeat manager for a cluster component.

    Called: by the ResourceManager, JobMaster and TaskExecutor when they start, once per
    monitored relation (e.g. JobMaster -> TaskExecutors).
    Stops at first non-None result.

    :param owner: the component owning the manager (its ``address`` is the resource id; its
        ``schedule(delay_ns, callback, daemon=True)`` runs the manager's timers).
    :param listener: the :class:`~kernel.contracts.heartbeats.HeartbeatListener`: receives
        ``notify_heartbeat_timeout(id)``, ``notify_target_unreachable(id)``,
        ``report_payload(id, payload)`` and ``retrieve_payload(id)`` calls.
    :param role: ``"sender"`` (requests heartbeats every interval) or ``"receiver"`` (answers).
    :param run: the run (clock, loop, config, event bus).
    :returns: a :class:`~kernel.contracts.heartbeats.HeartbeatManager`:
        ``monitor_target(id, target)`` (target: ``request_heartbeat(own_id, payload)`` and
        ``receive_heartbeat(own_id, payload)``, returning a Future of the message's delivery),
        ``unmonitor_target(id)``, ``request_heartbeat(requester_id, payload)`` and
        ``receive_heartbeat(sender_id, payload)`` (a request or response arrived) and ``stop()``.
        It records the heartbeat events of :mod:`kernel.runtime.cluster_events`.
    """


# -------------------------------------------------------------------------------------------
# Back-pressure monitoring.
# -------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def create_back_pressure_monitor(job: MonitoredJob, run: Run) -> BackPressureMonitor | None:
    """Create the measure of back pressure the JobMaster drives (``plugins.backpressure``).

    Called: by the JobMaster once per job, when it starts.
    Stops at first non-None result.

    :param job: the :class:`~kernel.contracts.backpressure.MonitoredJob`: ``job_id``,
        ``vertex_ids()``, ``running_executions(vertex_id)`` (None unless every subtask runs),
        ``request_task_back_pressure(execution, num_samples, delay_between_samples_ms)`` (a
        message to the TaskExecutor; a Future of its answer), ``schedule(delay_ns, callback)``,
        ``now()`` and ``emit(event)``.
    :param run: the run (config, clock).
    :returns: a :class:`~kernel.contracts.backpressure.BackPressureMonitor`: ``measure``,
        ``start()``, ``task_running(vertex_id)``, ``stop()`` and ``vertex_ratios()``; ``None``
        when back pressure is judged by the task metrics' back-pressured time alone (the
        mailbox's TimerGauges, which every task keeps).
    """


# -------------------------------------------------------------------------------------------
# Reading recorded runs back: SQL engines, the event store, views over it.
# -------------------------------------------------------------------------------------------


@hookspec
def register_sql_engines(register: Callable[[str, SqlEngine], None]) -> None:
    """Register engines that run ``rill sql`` queries (``rill sql --engine NAME``).

    Called: when ``rill sql`` starts, before the query runs.

    :param register: call ``register(name, engine)`` with a
        :class:`~kernel.contracts.sql.SqlEngine`: ``engine.query(request)`` hands the columns
        and rows of one read-only query (a :class:`~kernel.contracts.sql.SqlQuery`) to
        ``request.result``, within ``request.bounds``, over the event log, or over the Parquet
        files of ``rill export`` in directory ``request.parquet`` when that is not None, with the
        tables ``rill.ev_<kind>``, ``rill.runs``, ``rill.events`` and the registered views.
    :returns: nothing.
    """


@hookspec(firstresult=True)
def open_event_store(config: Config) -> EventStore | None:
    """Open the store that recorded runs are read back from.

    Called: by readers of the event log (``rill runs``, ``rill sql``, replay).
    Stops at first non-None result.

    :param config: the validated configuration.
    :returns: an :class:`~kernel.contracts.eventstore.EventStore`: ``exists()``, ``path`` and
        ``read()``, a context manager giving a read-only DuckDB connection with schema ``rill``
        first on the search path.
    """


@hookspec
def register_views(register: Callable[[str, str], None]) -> None:
    """Register SQL views over recorded runs, usually over the plugin's own events.

    Called: once per session, when recorded runs are first read (``rill sql`` on every engine,
    ``rill metrics``, ``rill replay``, ``rill report``, ``rill export``).

    :param register: call ``register(name, select)``: ``select`` is one SELECT over the event
        tables ``rill.ev_<kind>``, ``rill.runs`` and other views (by name), in SQL that DuckDB
        and Spark SQL both run (:mod:`kernel.views`). Each view is created after the views it
        reads; an event table the log lacks reads as empty if its event type is registered; a
        view reading an event kind neither recorded nor registered is left out.
    :returns: nothing.
    """
