"""Two-input operators of connected streams: Co-Map, Co-Flat Map, Co-Process, Co-Keyed-Process."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.runtime.streaming.operators.base import TwoInputStreamOperator
from kernel.runtime.streaming.operators.basic import NonKeyedTimerService, ProcessContext
from kernel.runtime.streaming.operators.keyed import KeyedContext, KeyedTimerService

if TYPE_CHECKING:
    from kernel.datastream.time_domain import TimeDomain
    from kernel.runtime.streaming.timers import TimerOutput


class _PerRecord(TwoInputStreamOperator):
    """Calls a function per record of either input and routes what it returns."""

    def _call(self, index: int, value: Any, ts: int | None) -> Any:
        raise NotImplementedError

    def _process(self, index: int, values: list, timestamps: list | None) -> None:
        keys_of = self.keys_of_inputs[index]
        backend = self.backend
        keys = keys_of(values) if backend is not None else None
        state_keys = backend.state_keys(keys) if backend is not None else None
        handover = self.handover
        out_values, out_ts, side = handover.new_results(timestamps)
        for i, value in enumerate(values):
            if backend is not None:
                backend.current_key = state_keys[i]
                self._key = keys[i]
            ts = timestamps[i] if timestamps is not None else None
            self.emit_results(self._call(index, value, ts), ts, out_values, out_ts, side)
        handover.end()

    def open(self) -> None:
        super().open()
        self.open_handover()

    def process_batch1(self, values, timestamps):
        self._process(0, values, timestamps)

    def process_batch2(self, values, timestamps):
        self._process(1, values, timestamps)


class CoMapOperator(_PerRecord):
    """``CoMapFunction``: a ``None`` result emits nothing (PyFlink drops it)."""

    def open(self) -> None:
        super().open()
        function = self.spec.function
        self._maps = (function.map1, function.map2)

    def _call(self, index, value, ts):
        result = self._maps[index](value)
        return None if result is None else (result,)


class CoFlatMapOperator(_PerRecord):
    def open(self) -> None:
        super().open()
        function = self.spec.function
        self._flat_maps = (function.flat_map1, function.flat_map2)

    def _call(self, index, value, ts):
        return self._flat_maps[index](value) or None


class CoProcessOperator(_PerRecord):
    def open(self) -> None:
        super().open()
        function = self.spec.function
        self._ctx = ProcessContext(NonKeyedTimerService(self))
        self._processes = (function.process_element1, function.process_element2)

    def _call(self, index, value, ts):
        self._ctx._timestamp = ts
        return self._processes[index](value, self._ctx)


class KeyedCoProcessOperator(_PerRecord):
    def open(self) -> None:
        super().open()
        self._ctx = KeyedContext(KeyedTimerService(self, self.open_timer_service()))
        function = self.spec.function
        self._processes = (function.process_element1, function.process_element2)
        self._on_timer = function.on_timer

    def _call(self, index, value, ts):
        ctx = self._ctx
        ctx._timestamp, ctx._key = ts, self._key
        return self._processes[index](value, ctx)

    def on_timer(self, timestamp: int, key: Any, namespace: Any, domain: TimeDomain, out: TimerOutput) -> None:
        ctx = self._ctx
        ctx._timestamp, ctx._key, ctx._time_domain = timestamp, key, domain
        self.emit_results(self._on_timer(timestamp, ctx), timestamp, out.values, out.timestamps, out.side)
