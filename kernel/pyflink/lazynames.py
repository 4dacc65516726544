"""Packages whose public names are imported from their modules when first used (PEP 562): a
job importing one name does not load every module of the package."""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable


def lazy_names(package: str, namespace: dict[str, Any], names: dict[str, tuple[str, ...]]
               ) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` of ``package`` (whose globals are
    ``namespace``), given the module defining each public name."""
    modules = {name: module for module, defined in names.items() for name in defined}

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(import_module(module), name)
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(modules))

    return sorted(modules), __getattr__, __dir__
