"""What the JobMaster sends a TaskExecutor to deploy one execution attempt (Flink's
TaskDeploymentDescriptor): the job vertex and subtask, its slot, the partitions it produces
and the subpartitions each of its inputs consumes, and — when the job takes checkpoints —
where to write its state and what to restore (Flink's JobManagerTaskRestore)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernel.runtime.checkpointing.assignment import TaskRestore
from kernel.runtime.graph.job import JobGraph, JobVertex
from kernel.runtime.graph.stream import StreamEdge


STAGED_IN_TASK_EXECUTOR = "staged in the TaskExecutor"


@dataclass
class ProducedPartition:
    partition_id: str
    num_subpartitions: int
    blocking: bool
    edge: StreamEdge
    consumer_max_parallelism: int


@dataclass
class ConsumedInput:
    type_number: int  # 0: the one input; 1/2: inputs of a two-input operator
    channels: list[tuple[str, int]]  # (partition id, subpartition index) per channel
    #: per channel: where its producer's TaskExecutor serves partitions ("": in this process)
    locations: list[str] = field(default_factory=list)
    edges: list[StreamEdge] = field(default_factory=list)  # per channel: the edge it carries


@dataclass
class TaskDeploymentDescriptor:
    job_id: str
    job_graph: JobGraph
    vertex: JobVertex
    subtask: int
    attempt: int
    max_parallelism: int
    allocation_id: str
    produced: list[ProducedPartition]
    inputs: list[ConsumedInput]
    alignment: Any = None  # the job's watermark alignment coordinator, if sources align
    #: the job's SinkCommitter, when sinks stage their output (STAGED_IN_TASK_EXECUTOR: a
    #: TaskExecutor in another process stages it itself until the JobMaster finishes it)
    committer: Any = None
    checkpoint_storage: Any = None  # the job's CheckpointStorageWorker, when it takes checkpoints
    restore: TaskRestore | None = None  # the state of the latest completed checkpoint
