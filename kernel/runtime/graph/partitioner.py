"""Partitioners as the graph records them: how an edge distributes records over channels.

Channel selection itself runs in :mod:`kernel.runtime.streaming.partitioning`; these descriptors are
what the compilers look at (pointwise or all-to-all, the ship strategy's name).
"""

from __future__ import annotations

from typing import Any, Callable


class StreamPartitioner:
    #: Flink's ``toString()`` of the partitioner, the plan's ``ship_strategy``
    name: str = ""
    #: pointwise partitioners connect producers and consumers POINTWISE, the rest ALL_TO_ALL
    pointwise: bool = False

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash(self.name)


class ForwardPartitioner(StreamPartitioner):
    name = "FORWARD"
    pointwise = True


class RescalePartitioner(StreamPartitioner):
    name = "RESCALE"
    pointwise = True


class RebalancePartitioner(StreamPartitioner):
    name = "REBALANCE"


class ShufflePartitioner(StreamPartitioner):
    name = "SHUFFLE"


class BroadcastPartitioner(StreamPartitioner):
    name = "BROADCAST"


class GlobalPartitioner(StreamPartitioner):
    name = "GLOBAL"


class KeyGroupStreamPartitioner(StreamPartitioner):
    """keyBy: routes by key group (murmur of the key's Java hash modulo max parallelism)."""

    name = "HASH"

    def __init__(self, key_selector: Callable[[Any], Any], key_type: Any = None,
                 keys_of: Callable[[list], list] | None = None, key_function: Any = None) -> None:
        """``keys_of``: the keys of a batch of records, as ``key_selector`` gives them one by one;
        ``key_function``: the user's ``KeySelector`` they call, if any (each producing task runs a
        copy of its own: ``OperatorRuntime.key_selector``)."""
        self.key_selector = key_selector
        self.key_type = key_type
        self.keys_of = keys_of or (lambda values: list(map(key_selector, values)))
        self.key_function = key_function

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeyGroupStreamPartitioner) and other.key_selector is self.key_selector


class CustomPartitionerWrapper(StreamPartitioner):
    """``partition_custom(partitioner, key_selector)``."""

    name = "CUSTOM"

    def __init__(self, partitioner: Any, key_selector: Callable[[Any], Any]) -> None:
        self.partitioner = partitioner
        self.key_selector = key_selector
