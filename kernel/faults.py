"""Injected faults: what ``[[faults]]`` config tables and ``rill run --inject`` describe.

Times are clock time since the run started, durations in Flink's format ("30 s", "500 ms").
Components are named by their addresses (``resourcemanager``, ``dispatcher``,
``jobmaster-<job id>``, ``taskexecutor-<n>``); ``from``/``to`` take glob patterns.

=========  ====================================================================================
kind       fields
=========  ====================================================================================
kill       ``target`` (a TaskExecutor), ``at``; ``refuse`` (default false): the process dies
           and messages to it vanish (a crashed host); with ``refuse`` its endpoint is gone
           but the host answers, so requests to it fail at once (RecipientUnreachable)
partition  ``from``, ``to``, ``start``, ``end``: messages between them, both ways, are dropped
drop       ``from``, ``to``, ``start``, ``end``: messages from ``from`` to ``to`` are dropped
delay      ``from``, ``to``, ``delay``, ``jitter`` (uniform ±, seeded), ``start``, ``end``,
           ``both-ways`` (default false)
slow       ``target`` (a TaskExecutor), ``factor``, ``start``, ``end``: its tasks' work takes
           ``factor`` times as long
raise      ``operator`` (an operator's name), ``record`` (N, 1-based), ``subtask`` (default: any),
           ``times`` (default 1): its user function raises on the Nth record it gets
=========  ====================================================================================

On the command line a fault is ``KIND:key=value,key=value``, e.g.
``--inject kill:target=taskexecutor-1,at=30s``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec

from kernel.configtypes import parse_duration_ms
from kernel.errors import ConfigError

FOREVER = (1 << 62) // 1_000_000  # ms: a window that never ends


class InjectedFault(Exception):
    """What a ``raise`` fault makes a user function raise."""


def _ms(value: Any, field: str) -> int:
    try:
        return parse_duration_ms(value)
    except ValueError as exc:
        raise ValueError(f"{field}: {exc}") from None


class Fault(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", forbid_unknown_fields=True):
    """Base of the fault kinds; ``index`` is the fault's position in the list (for events)."""

    index: int = 0

    def describe(self) -> str:
        raise NotImplementedError


class Kill(Fault, tag="kill", kw_only=True):
    target: str
    at: int = 0
    refuse: bool = False

    def describe(self) -> str:
        how = "endpoint stopped, requests refused" if self.refuse else "process crashed"
        return f"kill {self.target} at {self.at} ms ({how})"


class _Window(Fault, frozen=True, kw_only=True):
    start: int = 0
    end: int = FOREVER

    def window(self) -> str:
        return f"from {self.start} ms" + ("" if self.end >= FOREVER else f" to {self.end} ms")


class Partition(_Window, tag="partition", kw_only=True):
    from_: str = msgspec.field(name="from")
    to: str

    def describe(self) -> str:
        return f"partition {self.from_} <-> {self.to} {self.window()}"


class Drop(_Window, tag="drop", kw_only=True):
    from_: str = msgspec.field(name="from")
    to: str

    def describe(self) -> str:
        return f"drop {self.from_} -> {self.to} {self.window()}"


class Delay(_Window, tag="delay", kw_only=True):
    from_: str = msgspec.field(name="from")
    to: str
    delay: int = 0
    jitter: int = 0
    both_ways: bool = msgspec.field(name="both-ways", default=False)

    def describe(self) -> str:
        arrow = "<->" if self.both_ways else "->"
        jitter = f" ± {self.jitter} ms" if self.jitter else ""
        return f"delay {self.from_} {arrow} {self.to} by {self.delay} ms{jitter} {self.window()}"


class Slow(_Window, tag="slow", kw_only=True):
    target: str
    factor: Annotated[float, msgspec.Meta(ge=1.0)] = 2.0

    def describe(self) -> str:
        return f"slow {self.target} x{self.factor:g} {self.window()}"


class Raise(Fault, tag="raise", kw_only=True):
    operator: str
    record: Annotated[int, msgspec.Meta(ge=1)] = 1
    subtask: Annotated[int, msgspec.Meta(ge=0)] | None = None
    times: Annotated[int, msgspec.Meta(ge=1)] = 1

    def describe(self) -> str:
        where = "" if self.subtask is None else f" subtask {self.subtask}"
        return f"raise in {self.operator!r}{where} at record {self.record}" + (
            f" ({self.times} times)" if self.times > 1 else "")


KINDS: dict[str, type[Fault]] = {
    cls.__struct_config__.tag: cls for cls in (Kill, Partition, Drop, Delay, Slow, Raise)  # type: ignore[misc]
}
_DURATIONS = ("at", "start", "end", "delay", "jitter")


def parse_inject(spec: str) -> dict[str, Any]:
    """``KIND:key=value,key=value`` (from ``--inject``) as a fault table."""
    kind, _, rest = spec.partition(":")
    table: dict[str, Any] = {"kind": kind.strip()}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"fault {spec!r}: expected KIND:key=value,key=value, got {part!r}")
        table[key.strip()] = value.strip()
    return table


def check_operators(faults: list[Fault], operators: list[str]) -> None:
    """Every ``raise`` fault names an operator of the job about to run."""
    for fault in faults:
        if isinstance(fault, Raise) and fault.operator not in operators:
            valid = ", ".join(repr(name) for name in sorted(set(operators)))
            raise ConfigError(f"fault #{fault.index + 1} (raise): the job has no operator {fault.operator!r}. "
                              f"Valid operators: {valid}")


def build_faults(tables: list[Any]) -> list[Fault]:
    """Validate fault tables into faults; a clear error names the bad one."""
    faults = []
    for index, table in enumerate(tables):
        if not isinstance(table, dict):
            raise ConfigError(f"fault #{index + 1}: expected a table of kind and fields, got {table!r}")
        kind = table.get("kind")
        if kind not in KINDS:
            raise ConfigError(f"fault #{index + 1}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
        values = {}
        try:
            for key, value in table.items():
                values[key] = _ms(value, key) if key in _DURATIONS else value
            fault = msgspec.convert({**values, "index": index}, KINDS[kind], strict=False)
        except (ValueError, msgspec.ValidationError) as exc:
            detail = str(exc).replace(" - at `$`", "").replace("Object missing required", "missing required")
            detail = detail.replace("Object contains unknown field", "unknown field")
            detail = re.sub(r"^(.*) - at `\$\.(\w+)`$", r"\2: \1", detail)
            raise ConfigError(f"fault #{index + 1} ({kind}): {detail}") from None
        negative = [key for key in _DURATIONS if isinstance(values.get(key), int) and values[key] < 0]
        if negative:
            raise ConfigError(f"fault #{index + 1} ({kind}): {negative[0]} must not be negative (times are clock "
                              "time since the run started)")
        if isinstance(fault, _Window) and fault.end <= fault.start:
            raise ConfigError(f"fault #{index + 1} ({kind}): end ({fault.end} ms) must be after start ({fault.start} ms)")
        faults.append(fault)
    return faults
