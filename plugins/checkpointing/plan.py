"""Which tasks a checkpoint involves (Flink's ``DefaultCheckpointPlanCalculator``) and a
checkpoint in progress (``PendingCheckpoint``).

With every task running, the sources are triggered and every task acknowledges. After some
tasks finished (FLIP-147, ``checkpoints-after-tasks-finish``), the tasks triggered are the
running ones none of whose predecessors still run; finished tasks are recorded as finished.
Without that option a checkpoint is refused once any task finished. Either way a task to
trigger must have been deployed (INITIALIZING or RUNNING; an INITIALIZING one declines), and
no task may be failed or cancelled: else the checkpoint fails before it starts
(NOT_ALL_REQUIRED_TASKS_RUNNING).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernel.runtime.checkpointing.failures import CheckpointFailureReason
from kernel.runtime.checkpointing.format import OperatorState, OperatorSubtaskState
from kernel.runtime.checkpointing.messages import AcknowledgeCheckpoint
from kernel.runtime.graph.execution import ExecutionGraph, ExecutionState, ExecutionVertex

S = ExecutionState
TaskKey = tuple[str, int, int]  # (job vertex id, subtask, attempt)


class CheckpointPlanError(Exception):
    def __init__(self, reason: CheckpointFailureReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class CheckpointPlan:
    to_trigger: list[ExecutionVertex]
    to_wait_for: list[ExecutionVertex]
    finished: list[ExecutionVertex]


def task_key(ev: ExecutionVertex) -> TaskKey:
    return ev.job_vertex.id, ev.subtask, ev.current.attempt


def calculate_plan(graph: ExecutionGraph, after_tasks_finish: bool) -> CheckpointPlan:
    job_id = graph.job_graph.job_id
    vertices = graph.vertices()
    finished = [ev for ev in vertices if ev.current.state is S.FINISHED]
    if finished and not after_tasks_finish:
        raise CheckpointPlanError(CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING,
                                  f"some tasks of job {job_id} has been finished, abort the checkpoint")
    running = {ev.id for ev in vertices if ev.current.state is not S.FINISHED}
    to_trigger, to_wait_for = [], []
    for ejv in graph.job_vertices:
        for ev in ejv.vertices:
            if ev.id not in running:
                continue
            state = ev.current.state
            if state.is_terminal or state is S.CANCELING:
                raise CheckpointPlanError(CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING,
                                          f"task {ev.name} of job {job_id} is not being executed at the moment. "
                                          "Aborting checkpoint.")
            to_wait_for.append(ev)
            if not _has_running_predecessor(ev, running):
                if state in (S.CREATED, S.SCHEDULED, S.DEPLOYING):
                    raise CheckpointPlanError(CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING,
                                              f"Checkpoint triggering task {ev.name} of job {job_id} has not being "
                                              "executed at the moment. Aborting checkpoint.")
                to_trigger.append(ev)
    return CheckpointPlan(to_trigger, to_wait_for, finished)


def _has_running_predecessor(ev: ExecutionVertex, running: set[str]) -> bool:
    """Whether a task ``ev`` reads from still runs (ALL_TO_ALL: any producer; POINTWISE: its own)."""
    return any(partition.producer.id in running for group in ev.inputs for partition in group.partitions)


@dataclass
class PendingCheckpoint:
    checkpoint_id: int
    timestamp: int  # clock ms when triggered
    triggered_ns: int
    plan: CheckpointPlan
    periodic: bool
    #: the attempts it involves (they acknowledge it and are notified)
    tasks: dict[TaskKey, ExecutionVertex] = field(default_factory=dict)
    not_yet_acknowledged: dict[TaskKey, ExecutionVertex] = field(default_factory=dict)
    acknowledged: dict[tuple[str, int], AcknowledgeCheckpoint] = field(default_factory=dict)
    canceller: Any = None
    disposed: bool = False
    #: checkpoint or savepoint; a savepoint may stop the job (``stop``, after ``drain``ing it)
    kind: str = "checkpoint"
    stop: bool = False
    drain: bool = False
    #: a savepoint's requester: called with (its path, None) or (None, why it failed)
    on_done: Any = None

    def __post_init__(self) -> None:
        self.tasks = {task_key(ev): ev for ev in self.plan.to_wait_for}
        self.not_yet_acknowledged = dict(self.tasks)

    def current_tasks(self) -> list[ExecutionVertex]:
        """Its tasks whose attempt is still the current one and still runs."""
        return [ev for key, ev in self.tasks.items() if task_key(ev) == key and not ev.current.state.is_terminal]

    def acknowledge(self, message: AcknowledgeCheckpoint) -> bool:
        """Record an acknowledgement; False when it is not one this checkpoint waits for."""
        if self.not_yet_acknowledged.pop((message.vertex_id, message.subtask, message.attempt), None) is None:
            return False
        self.acknowledged[(message.vertex_id, message.subtask)] = message
        return True

    @property
    def fully_acknowledged(self) -> bool:
        return not self.not_yet_acknowledged

    def operator_states(self, graph: ExecutionGraph) -> list[OperatorState]:
        """Per operator of every job vertex: the state each subtask acknowledged, finished
        subtasks marked finished."""
        finished = {(ev.job_vertex.id, ev.subtask) for ev in self.plan.finished}
        states = []
        for ejv in graph.job_vertices:
            vertex = ejv.job_vertex
            stream = graph.job_graph.stream_graph
            for node_id in vertex.chained_node_ids:
                operator_id = vertex.operator_ids[node_id]
                subtasks = []
                for subtask in range(vertex.parallelism):
                    ack = self.acknowledged.get((vertex.id, subtask))
                    if ack is None:
                        subtasks.append(OperatorSubtaskState(subtask=subtask,
                                                             finished=(vertex.id, subtask) in finished))
                        continue
                    handle = next((op.state for op in ack.state.operators if op.operator_id == operator_id), None)
                    subtasks.append(OperatorSubtaskState(subtask=subtask, state=handle, finished=ack.state.finished))
                states.append(OperatorState(operator_id=operator_id, name=stream.nodes[node_id].name,
                                            vertex_id=vertex.id, parallelism=vertex.parallelism,
                                            max_parallelism=ejv.max_parallelism, subtasks=subtasks))
        return states
