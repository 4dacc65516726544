"""Transformations: what every DataStream API call records, with ids in creation order.

Physical transformations become StreamNodes; partitioning, unions and side outputs are
virtual and only shape the edges. The operator a physical transformation runs is described
by an :class:`OperatorSpec` — a kind plus the user function and parameters — which the
runtime turns into an operator; the API itself executes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from kernel.common.typeinfo import TypeInformation
from kernel.runtime.graph.partitioner import StreamPartitioner
from kernel.runtime.graph.stream import ChainingStrategy, ExchangeMode

if TYPE_CHECKING:
    from kernel.datastream.output_tag import OutputTag

UPPER_BOUND_MAX_PARALLELISM = 1 << 15
_UID_HASH = re.compile(r"^[0-9A-Fa-f]{32}$")


@dataclass
class KeySpec:
    """How a keyed operator finds the key of a record (and which Java type the key has):
    ``selector`` gives one record's key, ``keys_of`` the keys of a batch of records (as
    ``selector`` would, record by record; by default it maps ``selector`` over them).
    ``function``: the ``KeySelector`` whose ``get_key`` they call, when ``key_by`` was given one
    with an ``open`` or ``close`` of its own (each task that computes keys opens a copy of its
    own)."""

    selector: Callable[[Any], Any]
    key_type: TypeInformation | None = None
    keys_of: Callable[[list], list] | None = None
    function: Any = None

    def __post_init__(self) -> None:
        if self.keys_of is None:
            selector = self.selector
            self.keys_of = lambda values: list(map(selector, values))

    @classmethod
    def of(cls, selector: Any, key_type: TypeInformation | None) -> KeySpec:
        """The key of ``key_by(selector, key_type)``: the key as PyFlink's keyed operators see
        it, written by the key type's coder and read back (``key_type=Types.INT()`` makes 1.7 the
        key 1; a key the coder cannot write fails), a batch's keys converted at once."""
        from kernel.jvm.coders import batch_results, converted_results
        from kernel.datastream.functions import KeySelector

        opened = isinstance(selector, KeySelector) and (
            type(selector).open is not KeySelector.open or type(selector).close is not KeySelector.close)
        function = selector if opened else None
        get_key = selector.get_key if isinstance(selector, KeySelector) else selector
        return cls(converted_results(get_key, key_type), key_type, batch_results(get_key, key_type), function)


@dataclass
class OperatorSpec:
    """The operator of a physical transformation: ``kind`` names it for the runtime."""

    kind: str
    function: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    #: key of each keyed input (one entry for one-input operators, two for two-input ones)
    keys: tuple[KeySpec | None, ...] = ()
    #: per input, the key of a KeyedStream the operator reads as PyFlink's Java stream of it:
    #: ``Row(f0=key, f1=value)`` records (a sink, timestamps or a non-keyed operator on a KeyedStream)
    key_rows: tuple[KeySpec | None, ...] = ()
    #: side outputs downstream asked for (``get_side_output``), by tag id
    side_outputs: dict[str, OutputTag] = field(default_factory=dict)
    #: the operator yields to the mailbox while it waits (Flink's YieldingOperatorFactory: async
    #: I/O), so it is not chained after a legacy source
    yielding: bool = False

    @property
    def keyed(self) -> bool:
        return any(key is not None for key in self.keys)


class Transformation:
    """Base of all transformations."""

    def __init__(self, env: Any, name: str, output_type: TypeInformation, parallelism: int, inputs: list[Transformation]):
        self.id: int = env._new_id()
        self.env = env
        self.name = name
        self.description: str | None = None
        self.output_type = output_type
        self.parallelism = parallelism
        self.parallelism_configured = False
        self.max_parallelism = -1
        self.uid: str | None = None
        self.uid_hash: str | None = None
        self.slot_sharing_group: str | None = None
        self.chaining_strategy = ChainingStrategy.ALWAYS
        self.buffer_timeout = -1
        self.inputs = inputs

    @property
    def is_virtual(self) -> bool:
        return False

    def set_parallelism(self, parallelism: int) -> None:
        if parallelism != -1 and parallelism < 1:
            raise ValueError(
                "The parallelism of an operator must be at least 1, or ExecutionConfig.PARALLELISM_DEFAULT "
                "(use system default)."
            )
        self.parallelism = parallelism
        self.parallelism_configured = True

    def set_max_parallelism(self, max_parallelism: int) -> None:
        if max_parallelism <= 0:
            raise ValueError("The maximum parallelism must be greater than 0.")
        if max_parallelism > UPPER_BOUND_MAX_PARALLELISM:
            raise ValueError(f"Maximum parallelism must be between 1 and {UPPER_BOUND_MAX_PARALLELISM}. Found: {max_parallelism}")
        self.max_parallelism = max_parallelism

    def set_uid_hash(self, uid_hash: str) -> None:
        if not _UID_HASH.match(uid_hash or ""):
            raise ValueError(f"Node hash must be a 32 character String that describes a hex code. Found: {uid_hash}")
        self.uid_hash = uid_hash.lower()

    def __repr__(self) -> str:
        return f"{type(self).__name__}{{id={self.id}, name={self.name!r}, parallelism={self.parallelism}}}"


class PhysicalTransformation(Transformation):
    """A transformation that becomes a StreamNode running ``operator``."""

    def __init__(self, env, name, output_type, parallelism, inputs, operator: OperatorSpec):
        super().__init__(env, name, output_type, parallelism, inputs)
        self.operator = operator


class SourceTransformation(PhysicalTransformation):
    """``from_source``: a (FLIP-27 style) source with its watermark strategy."""

    def __init__(self, env, name, output_type, parallelism, operator, watermark_strategy: Any, bounded: bool):
        super().__init__(env, name, output_type, parallelism, [], operator)
        self.watermark_strategy = watermark_strategy
        self.bounded = bounded


class LegacySourceTransformation(PhysicalTransformation):
    """``from_collection`` and ``add_source``: a non-parallel source function."""

    def __init__(self, env, name, output_type, parallelism, operator, bounded: bool):
        super().__init__(env, name, output_type, parallelism, [], operator)
        self.chaining_strategy = ChainingStrategy.HEAD
        self.bounded = bounded


class OneInputTransformation(PhysicalTransformation):
    def __init__(self, env, input: Transformation, name, operator, output_type, parallelism):
        super().__init__(env, name, output_type, parallelism, [input], operator)


class TwoInputTransformation(PhysicalTransformation):
    def __init__(self, env, input1: Transformation, input2: Transformation, name, operator, output_type, parallelism):
        super().__init__(env, name, output_type, parallelism, [input1, input2], operator)


class ReduceTransformation(OneInputTransformation):
    """``KeyedStream.reduce`` and the aggregations built on it (rolling in STREAMING,
    final value per key in BATCH)."""


class TimestampsAndWatermarksTransformation(OneInputTransformation):
    def __init__(self, env, input, name, operator, output_type, parallelism, watermark_strategy: Any):
        super().__init__(env, input, name, operator, output_type, parallelism)
        self.watermark_strategy = watermark_strategy


class LegacySinkTransformation(PhysicalTransformation):
    """``print`` and ``add_sink``."""

    def __init__(self, env, input: Transformation, name, operator, parallelism):
        super().__init__(env, name, input.output_type, parallelism, [input], operator)


class SinkTransformation(PhysicalTransformation):
    """``sink_to``: expands into a ``<name>: Writer`` operator."""

    def __init__(self, env, input: Transformation, name, operator, parallelism):
        super().__init__(env, name, input.output_type, parallelism, [input], operator)


class PartitionTransformation(Transformation):
    def __init__(self, env, input: Transformation, partitioner: StreamPartitioner,
                 exchange_mode: ExchangeMode = ExchangeMode.UNDEFINED):
        super().__init__(env, "Partition", input.output_type, input.parallelism, [input])
        self.partitioner = partitioner
        self.exchange_mode = exchange_mode

    @property
    def is_virtual(self) -> bool:
        return True


class UnionTransformation(Transformation):
    def __init__(self, env, inputs: list[Transformation]):
        super().__init__(env, "Union", inputs[0].output_type, inputs[0].parallelism, inputs)

    @property
    def is_virtual(self) -> bool:
        return True


class SideOutputTransformation(Transformation):
    def __init__(self, env, input: Transformation, tag: OutputTag):
        super().__init__(env, "SideOutput", tag.type_info, input.parallelism, [input])
        self.tag = tag

    @property
    def is_virtual(self) -> bool:
        return True
