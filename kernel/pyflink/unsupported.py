"""PyFlink names rill does not support: importable, refused when used.

A job ported from PyFlink imports cleanly whatever it names; what rill lacks is refused with
one clear error the moment the job uses it (instantiates a class, reads its attributes, calls
a function or method), while the job is being defined::

    not supported by rill: pyflink.datastream.connectors.kafka.KafkaSource (connectors: ...)

The names and why they are missing are in :mod:`kernel.pyflink.unsupported_names`, grouped by feature.
A kernel module mirroring a PyFlink module serves its unsupported names through
``__getattr__ = module_getattr(__name__)``; a kernel class gets its unsupported members from
:func:`members`.
"""

from __future__ import annotations

from abc import ABCMeta
from typing import Any, Callable

from kernel.errors import JobDefinitionError
from kernel.pyflink.unsupported_names import GROUPS, UnsupportedGroup

#: attribute marking an object that stands for an unsupported PyFlink name
MARK = "_rill_unsupported"


class NotSupportedByRill(JobDefinitionError):
    """A job used a PyFlink name rill does not support."""

    def __init__(self, name: str) -> None:
        group = group_of(name)
        super().__init__(f"not supported by rill: {dotted(name)} ({group.title}: {group.reason})")
        self.name = name


def dotted(name: str) -> str:
    """``pyflink.x:A.b`` as users write it: ``pyflink.x.A.b``."""
    return name.replace(":", ".")


def _index() -> dict[str, UnsupportedGroup]:
    index: dict[str, UnsupportedGroup] = {}
    for group in GROUPS:
        for module, names in group.names.items():
            for name in names:
                index[f"{module}:{name}"] = group
    return index


UNSUPPORTED: dict[str, UnsupportedGroup] = _index()
_objects: dict[str, Any] = {}


def group_of(name: str) -> UnsupportedGroup:
    return UNSUPPORTED[name]


def refuse(name: str) -> None:
    """Raise the error for using ``name`` (``module:qualname``, PyFlink's)."""
    raise NotSupportedByRill(name)


class UnsupportedClass(ABCMeta):
    """Metaclass of the stand-in for an unsupported PyFlink class: it can be imported,
    subscripted (``AsyncFunction[IN, OUT]``) and subclassed; instantiating it, or any
    subclass, and reading its public attributes raise :class:`NotSupportedByRill`."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        refuse(getattr(cls, MARK))

    def __getattr__(cls, attribute: str) -> Any:
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        refuse(getattr(cls, MARK))

    def __getitem__(cls, parameters: Any) -> Any:
        return cls


def stand_in(name: str) -> Any:
    """The object standing for the unsupported ``name``: a class for class names (PyFlink
    names classes in CamelCase), else a function; the same object on every access."""
    if name not in UNSUPPORTED:
        raise KeyError(f"{name} is not in rill's list of unsupported PyFlink names")
    known = _objects.get(name)
    if known is not None:
        return known
    short = name.rpartition(":")[2].rpartition(".")[2]
    if short[0].isupper():
        obj: Any = UnsupportedClass(short, (), {MARK: name, "__module__": _kernel_module(name)})
    else:
        obj = _refusing_function(name, short)
    _objects[name] = obj
    return obj


def _refusing_function(name: str, short: str) -> Callable[..., Any]:
    def unsupported(*args: Any, **kwargs: Any) -> Any:
        refuse(name)

    unsupported.__name__ = short
    unsupported.__qualname__ = name.rpartition(":")[2]
    unsupported.__module__ = _kernel_module(name)
    setattr(unsupported, MARK, name)
    return unsupported


def _kernel_module(name: str) -> str:
    return "kernel" + name.partition(":")[0][len("pyflink"):]


def module_getattr(kernel_module: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving the module's unsupported PyFlink names."""
    prefix = "pyflink" + kernel_module[len("kernel"):] + ":"

    def __getattr__(attribute: str) -> Any:
        name = prefix + attribute
        if name in UNSUPPORTED:
            return stand_in(name)
        raise AttributeError(f"module {kernel_module!r} has no attribute {attribute!r}")

    return __getattr__


def members(pyflink_class: str) -> Callable[[type], type]:
    """Class decorator: give the class stand-ins for its unsupported members (and those of
    its nested classes), ``pyflink_class`` being PyFlink's ``module:qualname``."""

    def install(cls: type) -> type:
        _install(cls, pyflink_class)
        return cls

    return install


def _install(cls: type, pyflink_class: str) -> None:
    prefix = pyflink_class + "."
    for name in UNSUPPORTED:
        if not name.startswith(prefix):
            continue
        member = name[len(prefix):]
        if "." in member:
            continue
        if vars(cls).get(member) is stand_in(name):
            continue
        if member in vars(cls):
            raise TypeError(f"{name} is listed as unsupported but {cls.__qualname__} defines it")
        setattr(cls, member, stand_in(name))
    for attribute, value in list(vars(cls).items()):
        if isinstance(value, type) and not isinstance(value, UnsupportedClass) and not attribute.startswith("_"):
            _install(value, prefix + attribute)


def is_stand_in(obj: Any) -> bool:
    """Whether ``obj`` stands for an unsupported PyFlink name."""
    return isinstance(obj, UnsupportedClass) or (callable(obj) and MARK in getattr(obj, "__dict__", {}))
