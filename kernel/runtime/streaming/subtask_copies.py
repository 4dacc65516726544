"""A subtask's own copies of the user's function objects.

Flink deserialises the functions once per subtask, so what ``open()`` stores on ``self`` (state
handles, counters) is the subtask's own; rill copies them when a subtask creates its operator."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from kernel.datastream.functions import Function
from kernel.datastream.transformations import KeySpec, OperatorSpec


def subtask_copy(spec: OperatorSpec) -> OperatorSpec:
    """The spec with the subtask's own copies of the user's function objects (key selectors
    too). Plain callables are shared (they hold no state of the subtask). (A window operator
    copies its assigner and trigger itself, the same way.)"""
    function = own_copy(spec.function)
    params = {name: own_copy(value) for name, value in spec.params.items()}
    keys = tuple(key if key is None or key.function is None else KeySpec.of(own_copy(key.function), key.key_type)
                 for key in spec.keys)
    if function is spec.function and all(params[name] is value for name, value in spec.params.items()) \
            and all(a is b for a, b in zip(keys, spec.keys)):
        return spec
    return dataclasses.replace(spec, function=function, params=params, keys=keys)


def own_copy(value: Any) -> Any:
    """A subtask's own copy of a Function object (anything else as it is)."""
    return subtask_own(value) if isinstance(value, Function) else value


def subtask_own(value: Any) -> Any:
    """A subtask's own copy of ``value``; one that cannot be deep-copied (it holds a lock, a
    connection) is copied shallowly."""
    try:
        return copy.deepcopy(value)
    except Exception:
        return copy.copy(value)
