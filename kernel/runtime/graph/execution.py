"""ExecutionGraph: the parallel form of a JobGraph, and the execution state machine.

An ExecutionJobVertex per JobVertex holds one ExecutionVertex per subtask; each has a current
Execution (attempt 0, then 1, 2, ... after restarts). Each produced IntermediateResult has one
IntermediateResultPartition per producer subtask; consumers are wired per input as groups of
partitions (ALL_TO_ALL: all of them; POINTWISE: as Flink's EdgeManagerBuildUtil connects them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from kernel.runtime.graph.job import DistributionPattern, JobEdge, JobGraph, JobVertex, ResultPartitionType


class ExecutionState(Enum):
    CREATED = "CREATED"
    SCHEDULED = "SCHEDULED"
    DEPLOYING = "DEPLOYING"
    INITIALIZING = "INITIALIZING"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELING = "CANCELING"
    CANCELED = "CANCELED"
    FAILED = "FAILED"
    RECONCILING = "RECONCILING"

    @property
    def is_terminal(self) -> bool:
        return self in (ExecutionState.FINISHED, ExecutionState.CANCELED, ExecutionState.FAILED)


_S = ExecutionState
#: Flink's legal transitions; every non-terminal state may also go to FAILED.
LEGAL_TRANSITIONS: dict[ExecutionState, frozenset[ExecutionState]] = {
    _S.CREATED: frozenset({_S.SCHEDULED, _S.CANCELED, _S.FAILED, _S.RECONCILING}),
    _S.SCHEDULED: frozenset({_S.DEPLOYING, _S.CANCELED, _S.FAILED}),
    _S.DEPLOYING: frozenset({_S.INITIALIZING, _S.FINISHED, _S.CANCELING, _S.FAILED}),
    _S.INITIALIZING: frozenset({_S.RUNNING, _S.FINISHED, _S.CANCELING, _S.FAILED}),
    _S.RUNNING: frozenset({_S.FINISHED, _S.CANCELING, _S.FAILED}),
    _S.CANCELING: frozenset({_S.CANCELED, _S.FAILED}),
    _S.RECONCILING: frozenset({_S.INITIALIZING, _S.RUNNING, _S.FINISHED, _S.CANCELED, _S.FAILED}),
    _S.FINISHED: frozenset(),
    _S.CANCELED: frozenset(),
    _S.FAILED: frozenset(),
}


class IllegalStateTransition(Exception):
    pass


class JobStatus(Enum):
    INITIALIZING = "INITIALIZING"
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    FAILING = "FAILING"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELED = "CANCELED"
    FINISHED = "FINISHED"
    RESTARTING = "RESTARTING"
    SUSPENDED = "SUSPENDED"
    RECONCILING = "RECONCILING"

    @property
    def is_globally_terminal(self) -> bool:
        return self in (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELED)


@dataclass(eq=False)
class Execution:
    """One attempt to run an ExecutionVertex."""

    vertex: ExecutionVertex
    attempt: int
    state: ExecutionState = ExecutionState.CREATED
    failure: str | None = None
    slot: object | None = None

    @property
    def attempt_id(self) -> str:
        return f"{self.vertex.id}#{self.attempt}"

    def transition(self, expected: ExecutionState | None, target: ExecutionState) -> bool:
        """Compare-and-set: move to ``target`` if in ``expected`` (any state when None).

        Returns False when the execution is no longer in ``expected``; raises for a move
        Flink does not allow (e.g. leaving a terminal state).
        """
        if expected is not None and self.state is not expected:
            return False
        if target not in LEGAL_TRANSITIONS[self.state]:
            raise IllegalStateTransition(f"{self.attempt_id}: {self.state.value} -> {target.value} is not allowed")
        self.state = target
        return True


@dataclass(eq=False)
class IntermediateResultPartition:
    result: IntermediateResult
    index: int  # = producer subtask index
    producer: ExecutionVertex
    #: consumer subtasks per consuming JobEdge, in the order of ``result.consumers``
    consumer_vertices: list[list[ExecutionVertex]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.result.id}#{self.index}"

    def num_subpartitions(self, consumer: int = 0) -> int:
        """Subpartitions for one consuming edge: its consumers (pointwise) or its parallelism."""
        edge = self.result.consumers[consumer]
        if edge.distribution_pattern is DistributionPattern.ALL_TO_ALL:
            return edge.target.parallelism
        return len(self.consumer_vertices[consumer])


@dataclass(eq=False)
class IntermediateResult:
    id: str
    producer: ExecutionJobVertex
    result_type: ResultPartitionType
    consumers: list[JobEdge]
    partitions: list[IntermediateResultPartition] = field(default_factory=list)


@dataclass(eq=False)
class ConsumedPartitionGroup:
    """The partitions one consumer subtask reads through one input (JobEdge)."""

    edge: JobEdge
    result: IntermediateResult
    partitions: list[IntermediateResultPartition]


@dataclass(eq=False)
class ExecutionVertex:
    job_vertex: ExecutionJobVertex
    subtask: int
    current: Execution = None  # type: ignore[assignment]
    produced: list[IntermediateResultPartition] = field(default_factory=list)
    inputs: list[ConsumedPartitionGroup] = field(default_factory=list)
    prior_attempts: list[Execution] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.current is None:
            self.current = Execution(self, 0)

    @property
    def id(self) -> str:
        """ExecutionVertexID: job vertex id and subtask index."""
        return f"{self.job_vertex.id}_{self.subtask}"

    @property
    def name(self) -> str:
        """Flink's task name with subtask: ``"Map (2/4)"`` (1-based)."""
        return f"{self.job_vertex.name} ({self.subtask + 1}/{self.job_vertex.parallelism})"

    def reset_for_new_execution(self) -> Execution:
        """A new attempt in CREATED (restarts never revive an Execution)."""
        self.prior_attempts.append(self.current)
        self.current = Execution(self, self.current.attempt + 1)
        return self.current

    def __repr__(self) -> str:
        return f"ExecutionVertex({self.name})"


@dataclass(eq=False)
class ExecutionJobVertex:
    job_vertex: JobVertex
    max_parallelism: int
    vertices: list[ExecutionVertex] = field(default_factory=list)
    produced: list[IntermediateResult] = field(default_factory=list)
    inputs: list[IntermediateResult] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.job_vertex.id

    @property
    def name(self) -> str:
        return self.job_vertex.name

    @property
    def parallelism(self) -> int:
        return self.job_vertex.parallelism


@dataclass(eq=False)
class ExecutionGraph:
    job_graph: JobGraph
    job_vertices: list[ExecutionJobVertex]  # topologically sorted
    results: dict[str, IntermediateResult]
    status: JobStatus = JobStatus.CREATED

    def vertices(self) -> list[ExecutionVertex]:
        return [ev for ejv in self.job_vertices for ev in ejv.vertices]

    def job_vertex(self, vertex_id: str) -> ExecutionJobVertex:
        for ejv in self.job_vertices:
            if ejv.id == vertex_id:
                return ejv
        raise KeyError(vertex_id)

    def vertex(self, vertex_id: str) -> ExecutionVertex:
        job_vertex_id, _, subtask = vertex_id.rpartition("_")
        return self.job_vertex(job_vertex_id).vertices[int(subtask)]
