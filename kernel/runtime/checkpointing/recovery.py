"""Starting a job from a savepoint or retained checkpoint (Flink's ``StateRecoveryOptions`` and
``Checkpoints.loadAndValidateCheckpoint``).

``execution.state-recovery.path`` (``rill run -s PATH``) names the snapshot. Before the job
runs, its state is matched to the new job's operators by operator ID (an operator's
user-defined ID, ``uid()`` or ``set_uid_hash()``, or its generated one): state of an operator
ID the job does not have is an error naming it, unless
``execution.state-recovery.ignore-unclaimed-state`` (``--allow-non-restored-state``) says to
drop it. An operator whose max parallelism is configured must have the snapshot's; one whose
max parallelism is derived takes the snapshot's (so key groups keep their meaning); either
way its parallelism must not exceed it. Operators without state in the snapshot start empty.

The snapshot stays the user's (Flink's NO_CLAIM mode): rill never deletes it, and several jobs
may start from it. Restoring unpickles the state's values: restore only snapshots you trust.
"""

from __future__ import annotations

import os
from typing import Annotated

import msgspec

from kernel.runtime.checkpointing.format import CheckpointFormatError, OperatorState
from kernel.runtime.checkpointing.pointers import CompletedCheckpointPointer, resolve
from kernel.config import Section
from kernel.errors import UsageError
from kernel.runtime.graph.job import JobGraph, JobVertex


class StateRecoveryOptions(Section):
    deprecated_keys = {
        "execution.savepoint.path": "execution.state-recovery.path",
        "execution.savepoint.ignore-unclaimed-state": "execution.state-recovery.ignore-unclaimed-state",
    }

    path: Annotated[
        str | None, msgspec.Meta(description="start the job from this savepoint or retained checkpoint "
                                             "(its directory or _metadata)"),
    ] = msgspec.field(name="execution.state-recovery.path", default=None)
    ignore_unclaimed_state: Annotated[
        bool, msgspec.Meta(description="drop state of operators the job does not have (else restoring fails)"),
    ] = msgspec.field(name="execution.state-recovery.ignore-unclaimed-state", default=False)

    def resolved(self) -> dict[str, tuple[object, str]]:
        if self.path and not os.path.isabs(self.path):
            return {"execution.state-recovery.path": (os.path.abspath(self.path), "relative to the working directory")}
        return {}


class RestoreError(UsageError):
    """A job cannot start from the snapshot it names."""


def open_snapshot(path: str) -> CompletedCheckpointPointer:
    """The snapshot ``execution.state-recovery.path`` names."""
    try:
        return resolve(path)
    except CheckpointFormatError as exc:
        raise RestoreError(f"cannot restore from {path}: {exc}") from None


def _operator_ids(vertex: JobVertex) -> set[str]:
    return {*vertex.operator_ids.values(), *vertex.user_operator_ids.values()}


def check_state_mapping(snapshot: CompletedCheckpointPointer, job_graph: JobGraph, ignore_unclaimed: bool) -> None:
    """Refuse a snapshot whose state the job cannot take (as the module says)."""
    pointer = snapshot.directory
    vertex_of = {operator_id: vertex for vertex in job_graph.vertices for operator_id in _operator_ids(vertex)}
    for operator in snapshot.metadata.operators:
        vertex = vertex_of.get(operator.operator_id)
        if vertex is None:
            if not ignore_unclaimed and any(subtask.state is not None for subtask in operator.subtasks):
                raise RestoreError(
                    f"Failed to rollback to checkpoint/savepoint {pointer}. Cannot map checkpoint/savepoint state "
                    f"for operator {operator.operator_id} to the new program, because the operator is not available "
                    "in the new program. If you want to allow to skip this, you can set the "
                    "--allow-non-restored-state option on the CLI "
                    "(execution.state-recovery.ignore-unclaimed-state).")
            continue
        restored_max_parallelism(operator, vertex, pointer)


def restored_max_parallelism(operator: OperatorState, vertex: JobVertex, pointer: str) -> int:
    """The max parallelism ``vertex`` runs with when it restores ``operator``'s state."""
    configured = vertex.max_parallelism > 0
    if configured and vertex.max_parallelism != operator.max_parallelism:
        raise RestoreError(
            f"Failed to rollback to checkpoint/savepoint {pointer}. Max parallelism mismatch between "
            f"checkpoint/savepoint state and new program. Cannot map operator {operator.operator_id} with max "
            f"parallelism {operator.max_parallelism} to new program with max parallelism {vertex.max_parallelism}. "
            "This indicates that the program has been changed in a non-compatible way after the checkpoint/savepoint.")
    if vertex.parallelism > operator.max_parallelism:
        raise RestoreError(
            f"The state for task {vertex.name!r} can not be restored. The maximum parallelism "
            f"({operator.max_parallelism}) of the restored state is lower than the configured parallelism "
            f"({vertex.parallelism}). Please reduce the parallelism of the task to be lower or equal to the "
            "maximum parallelism.")
    return operator.max_parallelism


def check_restore(options: StateRecoveryOptions, job_graph: JobGraph) -> None:
    """Before a job runs: the snapshot it starts from can be read and fits it."""
    if options.path is None:
        return
    if job_graph.runtime_mode == "BATCH":
        raise RestoreError("execution.state-recovery.path: a job in BATCH execution mode restores no state "
                           "(run it in STREAMING mode)")
    check_state_mapping(open_snapshot(options.path), job_graph, options.ignore_unclaimed_state)
