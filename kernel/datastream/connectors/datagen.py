"""``DataGeneratorSource``: records from a generator function, bounded or unbounded, at a
rate in clock time, with the kernel's seeded randomness (Flink's DataGeneratorSource)."""

from __future__ import annotations

from typing import Any, Callable

from kernel.common.typeinfo import TypeInformation, resolve_type


class GeneratorFunction:
    """Turns a record index into a record. ``open(context)`` gives ``context.random`` — a
    ``random.Random`` seeded from the run's seed and the subtask, so runs are reproducible."""

    def open(self, context: Any) -> None:
        pass

    def map(self, index: int) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        pass


class DataGeneratorSource:
    def __init__(
        self,
        generator_function: GeneratorFunction | Callable[[int], Any],
        count: int | None = None,
        records_per_second: float | None = None,
        type_info: TypeInformation | None = None,
    ) -> None:
        if count is not None and count < 0:
            raise ValueError("count must not be negative")
        if records_per_second is not None and records_per_second <= 0:
            raise ValueError("records_per_second must be positive")
        if not (isinstance(generator_function, GeneratorFunction) or callable(generator_function)):
            raise TypeError("generator_function must be a GeneratorFunction or a callable (index -> record)")
        self.generator_function = generator_function
        self.count = count
        self.records_per_second = records_per_second
        self.type_info = resolve_type(type_info)

    def produced_type(self) -> TypeInformation:
        return self.type_info

    def is_bounded(self) -> bool:
        return self.count is not None

    def __repr__(self) -> str:
        return f"DataGeneratorSource(count={self.count}, records_per_second={self.records_per_second})"
