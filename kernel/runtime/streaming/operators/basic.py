"""map, flat_map, filter and process — on plain and on keyed streams.

On a keyed stream the current key is set per record, so functions can use keyed state.
"""

from __future__ import annotations

from itertools import chain, repeat

from kernel.datastream import functions as fn
from kernel.datastream.timerservice import TimerService
from kernel.runtime.streaming.operators.base import StreamOperator, method_or_callable


class MapOperator(StreamOperator):
    def open(self) -> None:
        super().open()
        self._map = method_or_callable(self.spec.function, fn.MapFunction, "map")
        self.open_handover()

    def process_batch(self, values, timestamps):
        f = self._map
        out: list = []
        handover = self.handover
        handover.mapped(out, timestamps)
        if self.keyed:
            backend = self.backend
            append = out.append
            for key, value in zip(backend.state_keys(self.keys_of(values)), values):
                backend.current_key = key
                append(f(value))
        else:
            out.extend(map(f, values))
        handover.end()


class FlatMapOperator(StreamOperator):
    def open(self) -> None:
        super().open()
        self._flat_map = method_or_callable(self.spec.function, fn.FlatMapFunction, "flat_map")
        self.open_handover()

    def process_batch(self, values, timestamps):
        f = self._flat_map
        backend = self.backend
        if self.requested_side_outputs:
            self._process_with_side_outputs(values, timestamps)
            return
        out: list = []
        extend = out.extend
        handover = self.handover
        keys = backend.state_keys(self.keys_of(values)) if backend is not None else repeat(None)
        if timestamps is None:
            handover.grown(out, None)
            if backend is None:
                extend(chain.from_iterable(map(f, values)))  # the loops in C; ``out`` grows value by value
            else:
                for key, value in zip(keys, values):
                    backend.current_key = key
                    extend(f(value))
            handover.end()
            return
        out_ts: list = []
        positions = iter(timestamps)
        handover.grown(out, out_ts, timestamps, positions)
        for key, value, ts in zip(keys, values, positions):
            if backend is not None:
                backend.current_key = key
            before = len(out)
            extend(f(value))
            if len(out) != before:
                out_ts.extend(repeat(ts, len(out) - before))
        handover.end()

    def _process_with_side_outputs(self, values, timestamps):
        f = self._flat_map
        backend = self.backend
        keys = backend.state_keys(self.keys_of(values)) if backend is not None else None
        handover = self.handover
        out_values, out_ts, side = handover.new_results(timestamps)
        for i, value in enumerate(values):
            if backend is not None:
                backend.current_key = keys[i]
            ts = timestamps[i] if timestamps is not None else None
            self.emit_results(iter(f(value)), ts, out_values, out_ts, side)
        handover.end()


class FilterOperator(StreamOperator):
    def open(self) -> None:
        super().open()
        self._filter = method_or_callable(self.spec.function, fn.FilterFunction, "filter")
        self.open_handover()

    def process_batch(self, values, timestamps):
        f = self._filter
        keep: list = []
        handover = self.handover
        handover.selected(keep, values, timestamps)
        if self.keyed:
            backend = self.backend
            append = keep.append
            for key, value in zip(backend.state_keys(self.keys_of(values)), values):
                backend.current_key = key
                append(bool(f(value)))
        else:
            keep.extend(map(bool, map(f, values)))
        handover.end()


class NonKeyedTimerService(TimerService):
    """Time for a ProcessFunction on a non-keyed stream: no timers."""

    def __init__(self, operator: StreamOperator) -> None:
        self._operator = operator

    def current_processing_time(self) -> int:
        return self._operator.runtime.now_ms()

    def current_watermark(self) -> int:
        return self._operator.current_watermark

    def register_processing_time_timer(self, timestamp: int) -> None:
        raise Exception("Register timers is only supported on a keyed stream.")

    def register_event_time_timer(self, timestamp: int) -> None:
        raise Exception("Register timers is only supported on a keyed stream.")

    def delete_processing_time_timer(self, timestamp: int) -> None:
        raise Exception("Deleting timers is only supported on a keyed streams.")

    def delete_event_time_timer(self, timestamp: int) -> None:
        raise Exception("Deleting timers is only supported on a keyed streams.")


class ProcessContext(fn.ProcessFunction.Context):
    __slots__ = ("_timestamp", "_timer_service")

    def __init__(self, timer_service: TimerService) -> None:
        self._timestamp: int | None = None
        self._timer_service = timer_service

    def timestamp(self) -> int | None:
        return self._timestamp

    def timer_service(self) -> TimerService:
        return self._timer_service


class ProcessOperator(StreamOperator):
    """``DataStream.process(ProcessFunction)``."""

    def open(self) -> None:
        super().open()
        self._ctx = ProcessContext(NonKeyedTimerService(self))
        self._process = self.spec.function.process_element
        self.open_handover()

    def process_batch(self, values, timestamps):
        ctx, process = self._ctx, self._process
        handover = self.handover
        out_values, out_ts, side = handover.new_results(timestamps)
        for i, value in enumerate(values):
            ts = timestamps[i] if timestamps is not None else None
            ctx._timestamp = ts
            self.emit_results(process(value, ctx), ts, out_values, out_ts, side)
        handover.end()
