"""An operator chain: the operators of one JobVertex wired together, independent of any cluster.

Chained edges call the next operator directly; every other edge goes to an Output the backend
provides (a record writer into the local network, a list of a Spark partition, ...). The
backend feeds the head: ``process_batch`` (one input) or ``process_batch1/2`` (two inputs).
"""

from __future__ import annotations

from typing import Any, Callable

from kernel.runtime.checkpointing.snapshots import OperatorSnapshot, RestoredOperatorState
from kernel.jvm.coders import batch_conversion
from kernel.runtime.graph.job import JobVertex
from kernel.runtime.graph.stream import StreamEdge, StreamGraph, StreamNode
from kernel.runtime.streaming.handover import HandOver
from kernel.runtime.streaming.operators.base import StreamOperator
from kernel.runtime.streaming.operators.factory import create_operator
from kernel.runtime.streaming.outputs import (
    ChainingOutput,
    ConvertingOutput,
    CountingOutput,
    DiscardingOutput,
    EndOfChainOutput,
    OperatorOutput,
    Output,
    blame,
    blaming,
    combine,
)
from kernel.runtime.streaming.runtime import KEY_BY_OPERATOR, OperatorRuntime, StreamingRuntimeContext


def _serialized(output: Output, type_info: Any) -> Output:
    """``output``, or where PyFlink serialises the values with ``type_info``'s coder, an output
    converting them as that coder does (``kernel.datastream.python_chaining`` says where)."""
    convert = batch_conversion(type_info)
    return output if convert is None else ConvertingOutput(output, convert)


def _counting(output: Output, counter: Any) -> Output:
    if isinstance(output, ChainingOutput) or isinstance(output, DiscardingOutput):
        return output
    return CountingOutput(output, counter)


class OperatorChain:
    def __init__(self, vertex: JobVertex, graph: StreamGraph, runtime: OperatorRuntime,
                 network_output: Callable[[StreamEdge], Output], counter: Any = None,
                 watermark_listener: Any = None,
                 create: Callable[[StreamNode, OperatorRuntime], StreamOperator] = create_operator) -> None:
        """``counter.records_out`` counts records leaving the chain, once per record per
        operator (however many network edges carry it), as Flink's numRecordsOut.
        ``watermark_listener`` hears the watermarks and statuses reaching the end of the chain
        at operators with no output (sinks). ``create`` makes each node's operator (a backend
        may substitute some, e.g. sinks that run elsewhere)."""
        self.vertex = vertex
        self.runtime = runtime
        runtime.info.job_parameters = dict(graph.job_parameters)
        runtime.info.operator_ids = dict(vertex.operator_ids)
        nodes = [graph.nodes[nid] for nid in vertex.chained_node_ids]
        self.operators: list[StreamOperator] = [create(node, runtime) for node in nodes]
        self.node_ids = [node.id for node in nodes]
        by_node = {node.id: op for node, op in zip(nodes, self.operators)}
        chained = {id(edge) for edge in vertex.chained_edges}
        for node, operator in zip(nodes, self.operators):
            main: list[Output] = []
            side: dict[str, list[Output]] = {}
            tags = {}
            for edge in node.out_edges:
                target = ChainingOutput(by_node[edge.target_id]) if id(edge) in chained else network_output(edge)
                if edge.output_tag is not None:
                    tags[edge.output_tag.tag_id] = edge.output_tag
                    side.setdefault(edge.output_tag.tag_id, []).append(target)
                else:
                    main.append(target)
            wrap = (lambda o: o) if counter is None else (lambda o: _counting(o, counter))
            if not node.out_edges and watermark_listener is not None:
                main_output: Output = EndOfChainOutput(watermark_listener)
            else:
                main_output = _serialized(wrap(combine(main)), node.serialized_output_type)
            operator.output = OperatorOutput(main_output, {
                tag: _serialized(wrap(combine(outs)), tags[tag].type_info) for tag, outs in side.items()})
        self.head = by_node[vertex.head_node_id]
        #: the operators' hand-overs, head first (:mod:`kernel.runtime.streaming.handover`)
        self.handovers: list[HandOver] = []

    def open(self) -> None:
        """Open operators from the tail towards the head (downstream ready first); the key
        selectors of keyed outputs (PyFlink's operators after the chain's) first."""
        runtime = self.runtime
        if runtime.key_selectors:
            context = StreamingRuntimeContext(runtime.info, None,
                                              lambda: runtime.operator_metric_group(KEY_BY_OPERATOR))
            for function in runtime.key_selectors:
                with blaming(KEY_BY_OPERATOR):
                    function.open(context)
        for operator in reversed(self.operators):
            with blaming(operator.name):
                operator.open()
        self.handovers = [operator.handover for operator in self.operators if operator.handover is not None]

    def relay(self) -> None:
        """A user function is about to sleep: every open hand-over, head first, hands on what
        it has ready, in the calling thread (depth first: what it hands on may open the
        hand-overs after it)."""
        for handover in self.handovers:
            handover.relay()

    def finish(self, resume: Callable[[int], None] | None = None, start: int = 0) -> bool:
        """End of input: each operator from ``start``, head to tail, gets ``end_input`` and
        ``finish``, then finishes its work in flight (``drain``) before the next one finishes.
        True once every operator finished. An operator still waiting for requests in flight
        (async I/O) stops the walk: False, and ``resume(index)`` is called once it has drained,
        to finish the operators from ``index`` on. Without ``resume`` the operators must not wait
        (a backend running their coroutines to completion in place)."""
        operators = self.operators
        for index in range(start, len(operators)):
            operator = operators[index]
            with blaming(operator.name):
                operator.end_input()
                operator.finish()
                drained = operator.drain(lambda after=index + 1: resume(after))
            if not drained:
                if resume is None:
                    raise RuntimeError(f"operator {operator.name!r} still has requests in flight at the end of input")
                return False
        return True

    def drain(self, on_drained: Callable[[], None], start: int = 0) -> bool:
        """Finish the work in flight of every operator, head to tail (what a draining operator
        emits may start work downstream): the entry point for a checkpoint barrier, which
        PyFlink lets pass only after its bundle finished. True if nothing is left in flight (a
        backend running the coroutines in place finishes them first); else False, and
        ``on_drained()`` runs in the task once everything has finished; the caller keeps the
        task's input suspended meanwhile."""
        operators = self.operators
        for index in range(start, len(operators)):
            def resume(after: int = index + 1) -> None:
                if self.drain(on_drained, after):
                    on_drained()

            operator = operators[index]
            with blaming(operator.name):
                drained = operator.drain(resume)
            if not drained:
                return False
        return True

    def close(self) -> None:
        errors = []
        for operator in self.operators:
            try:
                operator.close()
            except BaseException as exc:  # close every operator; report the first failure
                blame(exc, operator.name)
                errors.append(exc)
        for function in self.runtime.key_selectors:
            try:
                function.close()
            except BaseException as exc:
                blame(exc, KEY_BY_OPERATOR)
                errors.append(exc)
        if errors:
            raise errors[0]

    # -- checkpoints ------------------------------------------------------------------------------

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        for operator in self.operators:
            with blaming(operator.name):
                operator.prepare_snapshot_pre_barrier(checkpoint_id)

    def snapshot_state(self) -> dict[int, OperatorSnapshot]:
        """Each operator's snapshot, by stream node id."""
        snapshots = {}
        for node_id, operator in zip(self.node_ids, self.operators):
            snapshot = OperatorSnapshot(operator.key_group_function())
            with blaming(operator.name):
                operator.snapshot_state(snapshot)
            snapshots[node_id] = snapshot
        return snapshots

    def initialize_state(self, restored: dict[int, RestoredOperatorState]) -> None:
        """Restore the operators that have state in ``restored`` (by stream node id)."""
        for node_id, operator in zip(self.node_ids, self.operators):
            if node_id in restored:
                with blaming(operator.name):
                    operator.initialize_state(restored[node_id])

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for operator in reversed(self.operators):
            with blaming(operator.name):
                operator.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        for operator in reversed(self.operators):
            operator.notify_checkpoint_aborted(checkpoint_id)
