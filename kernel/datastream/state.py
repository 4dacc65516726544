"""State: descriptors and state interfaces (``pyflink.datastream.state``).

Keyed state is scoped to the current key (and, for window state, to the current window);
broadcast state (``BroadcastState``, from an :class:`OperatorStateStore`) is operator state,
one map per name on every parallel instance.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Generic, Iterable, Iterator, TypeVar

from kernel.pyflink import unsupported
from kernel.common.typeinfo import ListTypeInfo, MapTypeInfo, TypeInformation
from kernel.datastream.functions import AggregateFunction, ReduceFunction
from kernel.datastream.state_ttl import StateTtlConfig

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
IN = TypeVar("IN")
OUT = TypeVar("OUT")


class OperatorStateStore(ABC):
    """Where an operator's operator state lives (only broadcast state, as in PyFlink)."""

    @abstractmethod
    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> BroadcastState:
        """The read-write broadcast state of ``state_descriptor``."""


class StateDescriptor:
    def __init__(self, name: str, type_info: TypeInformation | None) -> None:
        if not name:
            raise ValueError("state name must not be empty")
        self.name = name
        self.type_info = type_info
        self._ttl_config: StateTtlConfig | None = None

    def get_name(self) -> str:
        return self.name

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        """Let the state's values expire as ``ttl_config`` says (list elements and map entries
        each on their own)."""
        if not isinstance(ttl_config, StateTtlConfig):
            raise TypeError("enable_time_to_live needs a StateTtlConfig (StateTtlConfig.new_builder(ttl).build())")
        self._ttl_config = ttl_config

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class ValueStateDescriptor(StateDescriptor):
    def __init__(self, name: str, value_type_info: TypeInformation | None = None) -> None:
        super().__init__(name, value_type_info)


class ListStateDescriptor(StateDescriptor):
    def __init__(self, name: str, elem_type_info: TypeInformation | None = None) -> None:
        super().__init__(name, ListTypeInfo(elem_type_info) if elem_type_info is not None else None)
        self.elem_type_info = elem_type_info


class MapStateDescriptor(StateDescriptor):
    def __init__(
        self, name: str, key_type_info: TypeInformation | None = None, value_type_info: TypeInformation | None = None
    ) -> None:
        both = key_type_info is not None and value_type_info is not None
        super().__init__(name, MapTypeInfo(key_type_info, value_type_info) if both else None)


class ReducingStateDescriptor(StateDescriptor):
    def __init__(self, name: str, reduce_function: ReduceFunction | Callable, type_info: TypeInformation | None = None) -> None:
        super().__init__(name, type_info)
        if isinstance(reduce_function, ReduceFunction):
            self._reduce = reduce_function.reduce
        elif callable(reduce_function):
            self._reduce = reduce_function
        else:
            raise TypeError("The input must be a ReduceFunction or a callable function!")
        self.reduce_function = reduce_function

    def get_reduce_function(self) -> Callable[[Any, Any], Any]:
        return self._reduce


class AggregatingStateDescriptor(StateDescriptor):
    def __init__(self, name: str, agg_function: AggregateFunction, state_type_info: TypeInformation | None = None) -> None:
        if not isinstance(agg_function, AggregateFunction):
            raise TypeError("The input must be a pyflink.datastream.functions.AggregateFunction!")
        super().__init__(name, state_type_info)
        self.agg_function = agg_function

    def get_agg_function(self) -> AggregateFunction:
        return self.agg_function


class State(ABC):
    @abstractmethod
    def clear(self) -> None:
        """Remove the value for the current key."""


class ValueState(State, Generic[T]):
    @abstractmethod
    def value(self) -> Any:
        """The value for the current key, or None."""

    @abstractmethod
    def update(self, value: Any) -> None: ...


class AppendingState(State, Generic[IN, OUT]):
    @abstractmethod
    def get(self) -> Any: ...

    @abstractmethod
    def add(self, value: Any) -> None: ...


class MergingState(AppendingState[IN, OUT]):
    pass


class ReducingState(MergingState[T, T]):
    pass


class AggregatingState(MergingState[IN, OUT]):
    pass


class ListState(MergingState[T, Iterable[T]]):
    @abstractmethod
    def update(self, values: list[Any]) -> None: ...

    @abstractmethod
    def add_all(self, values: list[Any]) -> None: ...

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())


class MapState(State, Generic[K, V]):
    @abstractmethod
    def get(self, key: Any) -> Any: ...

    @abstractmethod
    def put(self, key: Any, value: Any) -> None: ...

    @abstractmethod
    def put_all(self, dict_value: dict) -> None: ...

    @abstractmethod
    def remove(self, key: Any) -> None: ...

    @abstractmethod
    def contains(self, key: Any) -> bool: ...

    @abstractmethod
    def items(self) -> Iterable[tuple[Any, Any]]: ...

    @abstractmethod
    def keys(self) -> Iterable[Any]: ...

    @abstractmethod
    def values(self) -> Iterable[Any]: ...

    @abstractmethod
    def is_empty(self) -> bool: ...

    def __getitem__(self, key: Any) -> Any:
        return self.get(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.remove(key)

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())


class ReadOnlyBroadcastState(State, Generic[K, V]):
    """A read-only view of a :class:`BroadcastState` (the non-broadcast side's). Values are
    not copied: do not modify what ``get`` or ``items`` return."""

    @abstractmethod
    def get(self, key: Any) -> Any: ...

    @abstractmethod
    def contains(self, key: Any) -> bool: ...

    @abstractmethod
    def items(self) -> Iterable[tuple[Any, Any]]: ...

    @abstractmethod
    def keys(self) -> Iterable[Any]: ...

    @abstractmethod
    def values(self) -> Iterable[Any]: ...

    @abstractmethod
    def is_empty(self) -> bool: ...

    def __getitem__(self, key: Any) -> Any:
        return self.get(key)

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())


class BroadcastState(ReadOnlyBroadcastState[K, V]):
    """The state of a broadcast stream: every parallel instance keeps its own map and must
    store the same entries (all instances see all broadcast elements); on restore or rescaling
    each instance gets one of the old copies."""

    @abstractmethod
    def put(self, key: Any, value: Any) -> None: ...

    @abstractmethod
    def put_all(self, dict_value: dict) -> None: ...

    @abstractmethod
    def remove(self, key: Any) -> None: ...

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.remove(key)


__getattr__ = unsupported.module_getattr(__name__)
