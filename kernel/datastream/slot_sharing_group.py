"""``SlotSharingGroup`` and ``MemorySize`` (``pyflink.datastream.slot_sharing_group``).

A slot sharing group is a name operators join (``slot_sharing_group(...)``) plus the
resources of a slot of that group. rill schedules by group name; the resources are kept and
read back as declared (the local runtime's slots have no resource profiles).
"""

from __future__ import annotations

from typing import Any

from kernel.pyflink import unsupported

__all__ = ["MemorySize", "SlotSharingGroup"]

#: Flink's MemoryUnit order with the name ``toString`` uses
_UNITS = ((1, "bytes"), (1 << 10, "kb"), (1 << 20, "mb"), (1 << 30, "gb"), (1 << 40, "tb"))


@unsupported.members("pyflink.datastream.slot_sharing_group:MemorySize")
class MemorySize:
    """A number of bytes, viewable in different units."""

    def __init__(self, j_memory_size: Any = None, bytes_size: int | None = None) -> None:
        size = bytes_size if bytes_size is not None else j_memory_size
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError("bytes must be >= 0")
        self._bytes = size

    @staticmethod
    def of_mebi_bytes(mebi_bytes: int) -> MemorySize:
        return MemorySize(bytes_size=mebi_bytes << 20)

    def get_bytes(self) -> int:
        return self._bytes

    def get_kibi_bytes(self) -> int:
        return self._bytes >> 10

    def get_mebi_bytes(self) -> int:
        return self._bytes >> 20

    def get_gibi_bytes(self) -> int:
        return self._bytes >> 30

    def get_tebi_bytes(self) -> int:
        return self._bytes >> 40

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, MemorySize) and other._bytes == self._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __lt__(self, other: MemorySize) -> bool:
        if not isinstance(other, MemorySize):
            raise Exception(f"Does not support comparison with non-MemorySize {other}")
        return self._bytes < other._bytes

    def __le__(self, other: MemorySize) -> bool:
        return self.__eq__(other) or self.__lt__(other)

    def __str__(self) -> str:
        """Java's MemorySize.toString: in the largest unit that divides the size exactly."""
        unit = _UNITS[0]
        for index, candidate in enumerate(_UNITS):
            if self._bytes % candidate[0] != 0:
                unit = _UNITS[max(index - 1, 0)]
                break
        return f"{self._bytes // unit[0]} {unit[1]}"


@unsupported.members("pyflink.datastream.slot_sharing_group:SlotSharingGroup")
class SlotSharingGroup:
    """A named slot sharing group with the resources of its slots: ``SlotSharingGroup("g")`` or
    ``SlotSharingGroup.builder("g").set_cpu_cores(1.0).set_task_heap_memory_mb(100).build()``."""

    def __init__(self, name: str, cpu_cores: float | None = None, task_heap_memory: MemorySize | None = None,
                 task_off_heap_memory: MemorySize | None = None, managed_memory: MemorySize | None = None,
                 external_resources: dict[str, float] | None = None) -> None:
        if not name:
            raise ValueError("The name of slot sharing group should not be null or empty.")
        self._name = name
        self._cpu_cores = cpu_cores
        self._task_heap_memory = task_heap_memory
        self._task_off_heap_memory = task_off_heap_memory
        self._managed_memory = managed_memory
        self._external_resources = dict(external_resources or {})

    def get_name(self) -> str:
        return self._name

    def get_managed_memory(self) -> MemorySize | None:
        return self._managed_memory

    def get_task_heap_memory(self) -> MemorySize | None:
        return self._task_heap_memory

    def get_task_off_heap_memory(self) -> MemorySize | None:
        return self._task_off_heap_memory

    def get_cpu_cores(self) -> float | None:
        return self._cpu_cores

    def get_external_resources(self) -> dict[str, float]:
        return dict(self._external_resources)

    @staticmethod
    def builder(name: str) -> SlotSharingGroup.Builder:
        return SlotSharingGroup.Builder(name)

    def _key(self) -> tuple:
        return (self._name, self._cpu_cores, self._task_heap_memory, self._task_off_heap_memory,
                self._managed_memory, tuple(sorted(self._external_resources.items())))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SlotSharingGroup) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    class Builder:
        def __init__(self, name: str) -> None:
            self._name = name
            self._cpu_cores: float | None = None
            self._memory: dict[str, MemorySize] = {}
            self._external_resources: dict[str, float] = {}

        def set_cpu_cores(self, cpu_cores: float) -> SlotSharingGroup.Builder:
            if cpu_cores <= 0:
                raise ValueError("The cpu cores should be positive.")
            self._cpu_cores = cpu_cores
            return self

        def _set_memory(self, kind: str, size: MemorySize) -> SlotSharingGroup.Builder:
            self._memory[kind] = size
            return self

        def set_task_heap_memory(self, task_heap_memory: MemorySize) -> SlotSharingGroup.Builder:
            return self._set_memory("task_heap", task_heap_memory)

        def set_task_heap_memory_mb(self, task_heap_memory_mb: int) -> SlotSharingGroup.Builder:
            return self._set_memory("task_heap", MemorySize.of_mebi_bytes(task_heap_memory_mb))

        def set_task_off_heap_memory(self, task_off_heap_memory: MemorySize) -> SlotSharingGroup.Builder:
            return self._set_memory("task_off_heap", task_off_heap_memory)

        def set_task_off_heap_memory_mb(self, task_off_heap_memory_mb: int) -> SlotSharingGroup.Builder:
            return self._set_memory("task_off_heap", MemorySize.of_mebi_bytes(task_off_heap_memory_mb))

        def set_managed_memory(self, managed_memory: MemorySize) -> SlotSharingGroup.Builder:
            return self._set_memory("managed", managed_memory)

        def set_managed_memory_mb(self, managed_memory_mb: int) -> SlotSharingGroup.Builder:
            return self._set_memory("managed", MemorySize.of_mebi_bytes(managed_memory_mb))

        def set_external_resource(self, name: str, value: float) -> SlotSharingGroup.Builder:
            self._external_resources[name] = value
            return self

        def build(self) -> SlotSharingGroup:
            """As Flink's builder: cpu cores and task heap memory together, or no resources at all
            (off-heap and managed memory default to 0 when resources are given)."""
            memory = self._memory
            if self._cpu_cores is not None and "task_heap" in memory:
                zero = MemorySize(bytes_size=0)
                return SlotSharingGroup(self._name, self._cpu_cores, memory["task_heap"],
                                        memory.get("task_off_heap", zero), memory.get("managed", zero),
                                        self._external_resources)
            if self._cpu_cores is not None or memory or self._external_resources:
                raise ValueError("The cpu cores and task heap memory are required when specifying the resource of "
                                 "a slot sharing group. You need to explicitly configure them with positive value.")
            return SlotSharingGroup(self._name)
