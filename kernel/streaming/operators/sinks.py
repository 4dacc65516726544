"""Sinks: print, ``add_sink`` functions, and the file sink writer."""

from __future__ import annotations

import os
import time as _time
from collections import deque
from typing import Any

from kernel.datastream import functions as fn
from kernel.streaming.operators.base import StreamOperator


def print_prefix(identifier: str | None, subtask: int, parallelism: int) -> str:
    """Flink's PrintSinkOutputWriter: ``id:N> `` / ``N> `` (N 1-based) when parallel, else ``id> ``."""
    prefix = identifier or ""
    if parallelism > 1:
        prefix += (":" if prefix else "") + str(subtask + 1)
    return prefix + "> " if prefix else ""


class SinkOperator(StreamOperator):
    """Base of sinks: latency markers end here and are measured. With a sink committer
    (:mod:`kernel.streaming.committer`) a sink stages what it writes and hands it over when
    its input ends; it becomes final when the job finishes."""

    def open(self) -> None:
        super().open()
        self.staging = self.runtime.sink_committer is not None

    def process_latency_marker(self, marker: Any) -> None:
        self.runtime.record_latency(marker)

    def stage(self, commit: Any, discard: Any = None) -> None:
        self.runtime.sink_committer.stage(self.runtime.info.attempt_key, commit, discard)


class PrintSinkOperator(SinkOperator):
    def open(self) -> None:
        super().open()
        info = self.runtime.info
        self._prefix = print_prefix(self.spec.params.get("identifier"), info.subtask, info.parallelism)
        self._format = self.spec.params["type"].format_print
        write, name = self.runtime.write_stdout, self.name
        self._write = lambda text, lines: write(text, name, lines)
        self._staged: list[tuple[str, int]] = []

    def user_functions(self) -> list[Any]:
        return []

    def process_batch(self, values, timestamps):
        prefix, fmt = self._prefix, self._format
        text = "".join(f"{prefix}{fmt(v)}\n" for v in values)
        if self.staging:
            self._staged.append((text, len(values)))
        else:
            self._write(text, len(values))

    def end_input(self) -> None:
        if self.staging:
            text, lines, write = "".join(t for t, _ in self._staged), sum(n for _, n in self._staged), self._write
            self.stage(lambda: write(text, lines))


class CollectSinkOperator(SinkOperator):
    """``execute_and_collect``: appends every record to the caller's list (in-process)."""

    def user_functions(self) -> list[Any]:
        return []

    def open(self) -> None:
        super().open()
        self._staged: list[Any] = []

    def process_batch(self, values, timestamps):
        (self._staged if self.staging else self.spec.params["target"]).extend(values)

    def end_input(self) -> None:
        if self.staging:
            staged, target = self._staged, self.spec.params["target"]
            self.stage(lambda: target.extend(staged))


class SinkContext:
    """What ``SinkFunction.invoke`` gets as its context."""

    __slots__ = ("_operator", "_timestamp")

    def __init__(self, operator: StreamOperator) -> None:
        self._operator = operator
        self._timestamp: int | None = None

    def timestamp(self) -> int | None:
        return self._timestamp

    def current_watermark(self) -> int:
        return self._operator.current_watermark

    def current_processing_time(self) -> int:
        return self._operator.runtime.now_ms()


class SinkFunctionOperator(SinkOperator):
    """``add_sink``: a SinkFunction (``invoke(value, context)``) or a callable per record."""

    def open(self) -> None:
        super().open()
        function = self.spec.function
        self._context = SinkContext(self)
        #: a SinkFunction reads the record's timestamp from its context; a callable gets the record only
        self._with_context = isinstance(function, fn.SinkFunction)
        if self._with_context:
            invoke, context = function.invoke, self._context
            self._invoke = lambda value: invoke(value, context)
        else:
            self._invoke = function
        self._staged: list[tuple[list, list | None]] = []

    def process_batch(self, values, timestamps):
        if self.staging:
            self._staged.append((values, timestamps))
        else:
            self._deliver(values, timestamps)

    def _deliver(self, values, timestamps):
        invoke, context = self._invoke, self._context
        if timestamps is None or not self._with_context:
            deque(map(invoke, values), 0)  # a call per record, the loop in C
        else:
            for value, ts in zip(values, timestamps):
                context._timestamp = ts
                invoke(value)

    def end_input(self) -> None:
        if self.staging:
            staged = self._staged

            def commit() -> None:
                for values, timestamps in staged:
                    self._deliver(values, timestamps)

            self.stage(commit)


class FileSinkWriterOperator(SinkOperator):
    """Writes records as lines into part files ``<prefix>-<subtask>-<counter><suffix>``.

    In-progress files are hidden (``.<name>.inprogress.<attempt>``) and renamed to their final
    name when the rolling policy rolls them or the input ends — when staging, only when the
    job commits (the hidden files of attempts that do not commit are removed). Buckets: the
    base path, or a ``yyyy-MM-dd--HH`` directory of processing time.
    """

    def user_functions(self) -> list[Any]:
        return []

    def open(self) -> None:
        super().open()
        sink = self.spec.function
        self._sink = sink
        self._rolled: list[tuple[str, str]] = []  # (hidden, final) parts waiting for the commit
        self._staged_parts = False
        self._format = self.spec.params["type"].java_string
        self._encoding = sink.encoder.charset_name
        self._subtask = self.runtime.info.subtask
        self._counters: dict[str, int] = {}
        self._open: dict[str, dict[str, Any]] = {}

    def _bucket(self) -> str:
        assigner = self._sink.bucket_assigner
        if assigner.kind == "base_path":
            return self._sink.base_path
        pattern = (assigner.format_str.replace("yyyy", "%Y").replace("MM", "%m").replace("dd", "%d")
                   .replace("HH", "%H").replace("mm", "%M"))
        stamp = _time.strftime(pattern, _time.gmtime(self.runtime.now_ms() / 1000))
        return os.path.join(self._sink.base_path, stamp)

    def _part(self, bucket: str) -> dict[str, Any]:
        part = self._open.get(bucket)
        if part is None:
            os.makedirs(bucket, exist_ok=True)
            counter = self._counters.get(bucket, 0)
            self._counters[bucket] = counter + 1
            config = self._sink.output_file_config
            name = f"{config.part_prefix}-{self._subtask}-{counter}{config.part_suffix}"
            hidden = os.path.join(bucket, f".{name}.inprogress.{self.runtime.info.attempt}")
            part = {"name": os.path.join(bucket, name), "hidden": hidden, "file": open(hidden, "wb"),
                    "size": 0, "opened": self.runtime.now_ms()}
            self._open[bucket] = part
        return part

    def _roll(self, bucket: str) -> None:
        part = self._open.pop(bucket)
        part["file"].close()
        if self.staging:
            self._rolled.append((part["hidden"], part["name"]))
        else:
            os.replace(part["hidden"], part["name"])

    def process_batch(self, values, timestamps):
        bucket = self._bucket()
        part = self._part(bucket)
        data = "".join(self._format(v) + "\n" for v in values).encode(self._encoding)
        part["file"].write(data)
        part["size"] += len(data)
        policy = self._sink.rolling_policy
        now = self.runtime.now_ms()
        if (policy.part_size is not None and part["size"] >= policy.part_size) or (
            policy.rollover_interval is not None and now - part["opened"] >= policy.rollover_interval
        ):
            self._roll(bucket)

    def end_input(self) -> None:
        for bucket in list(self._open):
            self._roll(bucket)
        if self.staging:
            parts = list(self._rolled)

            def commit() -> None:
                for hidden, name in parts:
                    os.replace(hidden, name)

            def discard() -> None:
                for hidden, _ in parts:
                    if os.path.exists(hidden):
                        os.remove(hidden)

            self.stage(commit, discard)
            self._staged_parts = True

    def close(self) -> None:
        for part in self._open.values():
            part["file"].close()
            self._rolled.append((part["hidden"], part["name"]))
        self._open.clear()
        if self.staging and not self._staged_parts:  # an attempt that did not finish: abort its parts
            for hidden, _ in self._rolled:
                if os.path.exists(hidden):
                    os.remove(hidden)
