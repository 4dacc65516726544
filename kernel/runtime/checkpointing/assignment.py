"""Which state a restored subtask gets (Flink's StateAssignmentOperation).

State is matched to operators by operator ID: a user-defined ID (``set_uid_hash``) when the
checkpoint has state under it, else the generated one (``uid()`` already shapes that). A
subtask gets the keyed state of the key groups in its range from every old subtask that held
any of them, the operator list states of all old subtasks, of which it restores its share
(:func:`kernel.runtime.checkpointing.snapshots.repartition_lists`), and — same parallelism only — the
in-flight data of an unaligned checkpoint its own index persisted; a subtask marked finished
in the checkpoint (it had ended its input) is restored finished. An operator without state in
the checkpoint starts empty.
"""

from __future__ import annotations

import msgspec

from kernel.runtime.checkpointing.format import CheckpointMetadata, OperatorState, StateHandle
from kernel.runtime.graph.job import JobVertex
from kernel.runtime.streaming.keygroups import key_group_range


class OperatorRestore(msgspec.Struct, frozen=True, kw_only=True):
    """One operator's state for one subtask: handles of the old subtasks it reads from."""

    node_id: int
    operator_id: str
    old_parallelism: int
    handles: list[tuple[int, StateHandle]] = []


class TaskRestore(msgspec.Struct, frozen=True, kw_only=True):
    """What a deployed subtask restores: ``directory`` holds the handles' files."""

    checkpoint_id: int
    directory: str | None = None
    finished: bool = False
    operators: list[OperatorRestore] = []

    @property
    def state_size(self) -> int:
        return sum(handle.size for op in self.operators for _, handle in op.handles)


def state_of(metadata: CheckpointMetadata, vertex: JobVertex, node_id: int) -> OperatorState | None:
    by_id = {op.operator_id: op for op in metadata.operators}
    user_id = vertex.user_operator_ids.get(node_id)
    if user_id is not None and user_id in by_id:
        return by_id[user_id]
    return by_id.get(vertex.operator_ids[node_id])


def assign(metadata: CheckpointMetadata, directory: str | None, vertex: JobVertex, max_parallelism: int,
           subtask: int) -> TaskRestore:
    """The state subtask ``subtask`` of ``vertex`` (of ``max_parallelism`` key groups) restores
    from a checkpoint."""
    first, last = key_group_range(max_parallelism, vertex.parallelism, subtask)
    operators = []
    finished = False
    for node_id in vertex.chained_node_ids:
        state = state_of(metadata, vertex, node_id)
        if state is None:
            continue
        rescaled = state.parallelism != vertex.parallelism
        if (state.subtasks and all(old.finished for old in state.subtasks)) or any(
                old.finished and old.subtask == subtask for old in state.subtasks if not rescaled):
            finished = True
        handles = []
        for old in state.subtasks:
            handle = old.state
            if handle is None:
                continue
            if handle.channel_state is not None and rescaled:
                raise ValueError(f"operator {state.name or state.operator_id} has in-flight data of an unaligned "
                                 f"checkpoint at parallelism {state.parallelism}: it restores only at that parallelism")
            wanted_keyed = any(first <= group <= last for group, _, _ in handle.key_groups)
            wanted_channels = handle.channel_state is not None and old.subtask == subtask
            if wanted_keyed or handle.operator_state is not None or wanted_channels:  # union states reach every subtask
                handles.append((old.subtask, handle))
        operators.append(OperatorRestore(node_id=node_id, operator_id=state.operator_id,
                                         old_parallelism=state.parallelism, handles=handles))
    return TaskRestore(checkpoint_id=metadata.checkpoint_id, directory=directory, finished=finished,
                       operators=operators)
