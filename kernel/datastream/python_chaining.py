"""Where PyFlink serialises the values between operators: its Python operator chaining rule.

PyFlink runs the Python functions of consecutive operators in one Python worker when Flink's
``PythonOperatorChainingOptimizer`` chains them, and there the values pass from function to
function as the Python objects they are. Everywhere else the output of a Python operator leaves
for the JVM written by the coder of its declared output type (``kernel.jvm.coders``), and the
next operator gets what the coder reads back: a key_by, a rebalance or any other partitioning, a
second consumer, a change of parallelism, a sink, a union, a two-input or keyed successor.
Side outputs always leave for the JVM, written by their tag's type.

The rule, as the optimizer applies it: an operator is chained to its predecessor when both are
Python operators, the successor is a non-keyed one-input process (``map``, ``flat_map``,
``filter``, ``process``, async I/O, the extraction of timestamps by a Python timestamp
assigner, and the map PyFlink's ``print()`` adds to format rows and pickled values), the
predecessor has no other consumer (a requested side output counts as one), nothing but
``forward()`` lies between them, both have the same parallelism, max parallelism and slot
sharing group, the successor's chaining strategy is ALWAYS and the predecessor's is not NEVER.
The maps PyFlink adds take the environment's parallelism at the time they were added and no
other settings, so print and timestamp operators record that parallelism (``python_parallelism``).
"""

from __future__ import annotations

from typing import Iterable

from kernel.common.typeinfo import (
    BasicType,
    BasicTypeInfo,
    PickledBytesTypeInfo,
    RowTypeInfo,
    SqlTimeTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)
from kernel.datastream.transformations import (
    PartitionTransformation,
    PhysicalTransformation,
    Transformation,
)
from kernel.runtime.graph.partitioner import ForwardPartitioner
from kernel.runtime.graph.stream import ChainingStrategy

#: kinds PyFlink runs as Python operators (on a keyed or non-keyed input, one or two inputs)
PYTHON_KINDS = frozenset({
    "map", "flat_map", "filter", "process", "keyed_process", "reduce", "window", "async_wait",
    "co_map", "co_flat_map", "co_process", "keyed_co_process", "co_broadcast_process", "keyed_co_broadcast_process",
})
#: the kinds a non-keyed one-input process operator of PyFlink's has
_PROCESS_KINDS = frozenset({"map", "flat_map", "filter", "process", "async_wait"})

__all__ = ["PYTHON_KINDS", "serialized_output_types"]


def serialized_output_types(transformations: Iterable[Transformation]) -> dict[int, TypeInformation]:
    """Transformation id -> the type whose coder writes that Python operator's main output,
    for every Python operator whose output leaves its chain of Python functions (pickled
    outputs, which come back unchanged, are left out; so are the outputs of operators that
    hand on the very values a coder of the same type read, when those cannot have changed:
    writing and reading them again gives them back as they are)."""
    consumers = _consumers(transformations)
    serialized: dict[int, TypeInformation] = {}
    read_as: dict[int, TypeInformation | None] = {}  # id -> the type whose coder read its output values
    for t in _reachable(transformations):
        read_as[t.id] = _read_as(t, read_as)
        if not _is_python(t) or isinstance(t.output_type, PickledBytesTypeInfo):
            continue
        if _chained_to_successor(t, consumers):
            continue
        if read_as[t.id] == t.output_type and _stable(t.output_type):
            continue  # written and read back by the coder that read them: the same values
        serialized[t.id] = read_as[t.id] = t.output_type
    return serialized


def _reachable(transformations: Iterable[Transformation]) -> list[Transformation]:
    seen: dict[int, Transformation] = {}
    pending = list(transformations)
    while pending:
        t = pending.pop()
        if t.id not in seen:
            seen[t.id] = t
            pending.extend(t.inputs)
    return [seen[i] for i in sorted(seen)]


def _consumers(transformations: Iterable[Transformation]) -> dict[int, list[Transformation]]:
    """The optimizer's output map: transformation id -> the distinct transformations reading it."""
    consumers: dict[int, dict[int, Transformation]] = {}
    for t in _reachable(transformations):
        for source in t.inputs:
            consumers.setdefault(source.id, {})[t.id] = t
    return {tid: list(by_id.values()) for tid, by_id in consumers.items()}


def _is_python(t: Transformation) -> bool:
    if not isinstance(t, PhysicalTransformation):
        return False
    kind = t.operator.kind
    if kind == "timestamps_watermarks":
        return _has_python_assigner(t)
    return kind in PYTHON_KINDS and "projection" not in t.operator.params


def _has_python_assigner(t: PhysicalTransformation) -> bool:
    return t.operator.params["strategy"].timestamp_assigner is not None


def _chained_to_successor(t: PhysicalTransformation, consumers: dict[int, list[Transformation]]) -> bool:
    if t.operator.kind == "timestamps_watermarks" or t.chaining_strategy is ChainingStrategy.NEVER:
        return False  # the timestamps go on to Java's watermark operator
    outputs = consumers.get(t.id, [])
    while len(outputs) == 1 and isinstance(outputs[0], PartitionTransformation) \
            and isinstance(outputs[0].partitioner, ForwardPartitioner):
        outputs = consumers.get(outputs[0].id, [])
    if len(outputs) != 1:
        return False
    successor = _process_settings(outputs[0])
    return successor is not None and successor == (
        ChainingStrategy.ALWAYS, t.parallelism, t.max_parallelism, t.slot_sharing_group)


def _process_settings(t: Transformation) -> tuple | None:
    """(chaining strategy, parallelism, max parallelism, slot sharing group) of the non-keyed
    one-input Python process ``t`` is or starts with in PyFlink; None if it is none."""
    if not isinstance(t, PhysicalTransformation) or len(t.inputs) != 1:
        return None
    operator = t.operator
    if operator.kind in _PROCESS_KINDS and not operator.keyed and "projection" not in operator.params:
        return t.chaining_strategy, t.parallelism, t.max_parallelism, t.slot_sharing_group
    added = (operator.kind == "print" and isinstance(operator.params["type"], (RowTypeInfo, PickledBytesTypeInfo))) \
        or (operator.kind == "timestamps_watermarks" and _has_python_assigner(t))
    if added:
        return ChainingStrategy.ALWAYS, operator.params["python_parallelism"], -1, None
    return None


#: operators whose output values are (some of) their input values, as they are
_PASS_THROUGH = frozenset({"filter", "timestamps_watermarks"})


def _read_as(t: Transformation, read_as: dict[int, TypeInformation | None]) -> TypeInformation | None:
    """The type whose coder (or, for ``from_collection``, whose conversion by the JVM and
    reading by the coder) gave the values ``t`` hands on; None when they may be any values."""
    if isinstance(t, PhysicalTransformation):
        kind = t.operator.kind
        if kind == "collection" and not isinstance(t.output_type, PickledBytesTypeInfo):
            return t.output_type  # kernel.jvm.bridge.collection_elements read them
        if kind in _PASS_THROUGH and len(t.inputs) == 1 and read_as[t.inputs[0].id] == t.output_type:
            return t.output_type
        return None
    if isinstance(t, PartitionTransformation):
        return read_as[t.inputs[0].id]
    return None


def _stable(type_info: TypeInformation) -> bool:
    """Whether the values a coder of ``type_info`` reads cannot be changed in place (numbers,
    strings, dates, times of day, tuples of them) and come back as they are when written and
    read again (not so a SQL_TIMESTAMP before the epoch: the coder truncates its seconds
    towards zero each time)."""
    if isinstance(type_info, TupleTypeInfo):
        return all(_stable(t) for t in type_info.get_field_types())
    if isinstance(type_info, BasicTypeInfo):
        return type_info._basic_type is not BasicType.INSTANT
    return isinstance(type_info, SqlTimeTypeInfo) and repr(type_info) in ("DateTypeInfo", "TimeTypeInfo")
