"""What a Spark executor's Python worker runs before rill can be imported there.

Spark ships rill the way it ships Python code: rill's packages with their dependencies, the
job's Python files and its requirements go to every executor through Spark's own file
distribution (:mod:`.shipping`), where Spark unpacks them. This module is pickled *by value*
(it is registered with PySpark's cloudpickle), so an executor whose Python has no rill can
unpickle it: :class:`Shipped` puts the unpacked directories first on the import path, then
unpickles the function it carries — one of rill's, pickled by reference — and calls it;
:func:`probe` tells the driver whether rill can run there. Only the standard library and
PySpark (which Spark gives every Python worker) are imported here.
"""

from __future__ import annotations

import os
import pickle
import sys
from typing import Any


def take_up(roots: list[str]) -> None:
    """Put what was shipped under the names ``roots`` (unpacked by Spark in its files' root
    directory) first on the import path, in that order."""
    from pyspark import SparkFiles

    paths = [SparkFiles.get(name) for name in roots]
    missing = [name for name, path in zip(roots, paths) if not os.path.exists(path)]
    if missing:
        raise ImportError(f"what rill shipped has not reached this executor: {', '.join(missing)}")
    sys.path = [*paths, *(path for path in sys.path if path not in paths)]


def target_subtask(target: int) -> int:
    """Spark's partition of a record the spark backend shuffles: the consumer subtask it is
    keyed by (one function for every edge, so a consumer's inputs share a partitioner; here,
    so that it needs nothing shipped)."""
    return target


class Shipped:
    """A function for Spark's Python workers that needs what rill shipped: it takes it up
    once per worker process and calls the function (unpickled then) with its arguments."""

    def __init__(self, payload: bytes, roots: list[str]) -> None:
        self.payload = payload
        self.roots = roots
        self.function: Any = None

    def __getstate__(self) -> dict:
        return {"payload": self.payload, "roots": self.roots}

    def __setstate__(self, state: dict) -> None:
        self.payload, self.roots, self.function = state["payload"], state["roots"], None

    def __call__(self, *args: Any) -> Any:
        function = self.function
        if function is None:
            take_up(self.roots)
            function = self.function = pickle.loads(self.payload)
        return function(*args)


class Probe:
    """Whether rill can run on an executor: ``(error, interpreter, cache tag, platform)``, the
    error empty when what was shipped is taken up and ``modules`` import."""

    def __init__(self, roots: list[str], modules: list[str]) -> None:
        self.roots = roots
        self.modules = modules

    def __call__(self, _: Any) -> tuple[str, str, str, str]:
        import importlib
        import sysconfig

        described = (f"Python {sys.version.split()[0]} ({sys.executable})", sys.implementation.cache_tag,
                     sysconfig.get_platform())
        try:
            take_up(self.roots)
            for module in self.modules:
                importlib.import_module(module)
        except Exception as exc:  # what the executors lack
            return (f"{type(exc).__name__}: {exc}", *described)
        return ("", *described)
