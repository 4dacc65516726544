"""Transformations -> StreamGraph, as Flink's StreamGraphGenerator translates them.

Transformations are translated in the order ``execute()`` recorded them, inputs first. A
physical transformation becomes a node with the transformation's id; partitioning and side
outputs become virtual nodes (fresh ids from the environment's counter) that are unwound
into the partitioner and output tag of the real edge; a union just passes on its inputs.
"""

from __future__ import annotations

from kernel.datastream import transformations as tr
from kernel.errors import JobDefinitionError
from kernel.runtime.graph.partitioner import ForwardPartitioner, RebalancePartitioner, StreamPartitioner
from kernel.runtime.graph.stream import DEFAULT_SLOT_SHARING_GROUP, ExchangeMode, StreamEdge, StreamGraph, StreamNode
from kernel.lifecycle.program import Program


class StreamGraphGenerator:
    def __init__(self, program: Program, chain_different_max_parallelism: bool) -> None:
        self.program = program
        self.graph = StreamGraph(
            job_name=program.job_name,
            chaining_enabled=program.chaining_enabled,
            chain_with_different_max_parallelism=chain_different_max_parallelism,
            runtime_mode=program.runtime_mode,
            max_parallelism=program.max_parallelism,
            buffer_timeout=program.buffer_timeout,
            auto_watermark_interval=program.auto_watermark_interval,
            job_parameters=dict(program.job_parameters),
        )
        self.done: dict[int, list[int]] = {}
        self.virtual_partitions: dict[int, tuple[int, StreamPartitioner, ExchangeMode]] = {}
        self.virtual_side_outputs: dict[int, tuple[int, object]] = {}

    def generate(self) -> StreamGraph:
        for transformation in self.program.transformations:
            self.transform(transformation)
        return self.graph

    # -- translation --------------------------------------------------------------------------

    def transform(self, t: tr.Transformation) -> list[int]:
        if t.id in self.done:
            return self.done[t.id]
        if isinstance(t, tr.UnionTransformation):
            ids = [i for source in t.inputs for i in self.transform(source)]
        elif isinstance(t, tr.PartitionTransformation):
            ids = self._virtual(t, lambda vid, input_id: self.virtual_partitions.__setitem__(
                vid, (input_id, t.partitioner, t.exchange_mode)))
        elif isinstance(t, tr.SideOutputTransformation):
            ids = self._virtual(t, lambda vid, input_id: self.virtual_side_outputs.__setitem__(vid, (input_id, t.tag)))
        elif isinstance(t, (tr.SourceTransformation, tr.LegacySourceTransformation)):
            ids = [self._add_node(t, f"Source: {t.name}", [], source=True)]
        elif isinstance(t, tr.LegacySinkTransformation):
            ids = self._one_or_two_input(t, f"Sink: {t.name}", sink=True)
        elif isinstance(t, tr.SinkTransformation):
            ids = self._one_or_two_input(t, f"{t.name}: Writer", node_id=self.program.env._new_id())
        elif isinstance(t, tr.PhysicalTransformation):
            ids = self._one_or_two_input(t, t.name)
        else:
            raise JobDefinitionError(f"cannot translate transformation {t!r}")
        self.done[t.id] = ids
        return ids

    def _virtual(self, t: tr.Transformation, register) -> list[int]:
        ids = []
        for input_id in self.transform(t.inputs[0]):
            virtual_id = self.program.env._new_id()
            register(virtual_id, input_id)
            ids.append(virtual_id)
        return ids

    def _one_or_two_input(self, t: tr.PhysicalTransformation, name: str, *, sink: bool = False,
                          node_id: int | None = None) -> list[int]:
        inputs = [self.transform(source) for source in t.inputs]
        real_inputs = [self._real(i) for ids in inputs for i in ids]
        nid = self._add_node(t, name, real_inputs, sink=sink, node_id=node_id)
        two_input = len(t.inputs) == 2
        for position, ids in enumerate(inputs):
            for input_id in ids:
                self.add_edge(input_id, nid, position + 1 if two_input else 0)
        return [nid]

    def _real(self, node_id: int) -> int:
        while node_id in self.virtual_partitions or node_id in self.virtual_side_outputs:
            node_id = (self.virtual_partitions.get(node_id) or self.virtual_side_outputs[node_id])[0]
        return node_id

    def _slot_sharing_group(self, specified: str | None, input_ids: list[int]) -> str:
        if specified is not None:
            return specified
        groups = {self.graph.nodes[i].slot_sharing_group for i in input_ids}
        return groups.pop() if len(groups) == 1 else DEFAULT_SLOT_SHARING_GROUP

    def _add_node(self, t: tr.PhysicalTransformation, name: str, input_ids: list[int], *, source: bool = False,
                  sink: bool = False, node_id: int | None = None) -> int:
        program = self.program
        nid = node_id if node_id is not None else t.id
        if nid in self.graph.nodes:
            raise JobDefinitionError(f"Duplicate vertexID {nid}")
        node = StreamNode(
            id=nid,
            name=name,
            operator=t.operator,
            parallelism=t.parallelism if t.parallelism != -1 else program.parallelism,
            max_parallelism=t.max_parallelism if t.max_parallelism > 0 else program.max_parallelism,
            slot_sharing_group=self._slot_sharing_group(t.slot_sharing_group, input_ids),
            chaining_strategy=t.chaining_strategy,
            uid=t.uid,
            uid_hash=t.uid_hash,
            output_type=t.output_type,
            description=t.description,
            parallelism_configured=t.parallelism_configured,
            buffer_timeout=t.buffer_timeout if t.buffer_timeout >= 0 else program.buffer_timeout,
        )
        if node.max_parallelism > 0 and node.parallelism > node.max_parallelism:
            raise JobDefinitionError(
                f"Vertex {node.name!r}'s parallelism ({node.parallelism}) is higher than the max parallelism "
                f"({node.max_parallelism}). Please lower the parallelism or increase the max parallelism."
            )
        self.graph.nodes[nid] = node
        if source:
            self.graph.sources.add(nid)
        if sink:
            self.graph.sinks.add(nid)
        return nid

    # -- edges --------------------------------------------------------------------------------

    def add_edge(self, upstream: int, downstream: int, type_number: int, partitioner: StreamPartitioner | None = None,
                 output_tag: object = None, exchange_mode: ExchangeMode | None = None) -> None:
        if upstream in self.virtual_side_outputs:
            source, tag = self.virtual_side_outputs[upstream]
            self.add_edge(source, downstream, type_number, partitioner, output_tag or tag, exchange_mode)
        elif upstream in self.virtual_partitions:
            source, part, mode = self.virtual_partitions[upstream]
            self.add_edge(source, downstream, type_number, partitioner or part, output_tag, exchange_mode or mode)
        else:
            self._create_edge(upstream, downstream, type_number, partitioner, output_tag,
                              exchange_mode or ExchangeMode.UNDEFINED)

    def _create_edge(self, upstream: int, downstream: int, type_number: int, partitioner: StreamPartitioner | None,
                     output_tag: object, exchange_mode: ExchangeMode) -> None:
        up, down = self.graph.nodes[upstream], self.graph.nodes[downstream]
        if partitioner is None:
            partitioner = ForwardPartitioner() if up.parallelism == down.parallelism else RebalancePartitioner()
        if isinstance(partitioner, ForwardPartitioner) and up.parallelism != down.parallelism:
            raise JobDefinitionError(
                "Forward partitioning does not allow change of parallelism. Upstream operation: "
                f"{up.display} parallelism: {up.parallelism}, downstream operation: {down.display} parallelism: "
                f"{down.parallelism} You must use another partitioning strategy, such as broadcast, rebalance, "
                "shuffle or global."
            )
        edge = StreamEdge(upstream, downstream, type_number, partitioner, output_tag, exchange_mode)
        up.out_edges.append(edge)
        down.in_edges.append(edge)
