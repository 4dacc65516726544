"""Outputs of operators: chained operators call each other directly, batch at a time.

An operator emits ``collect(values, timestamps)`` (main output), ``collect_side(tag_id, ...)``
(side outputs), and forwards watermarks, watermark statuses and latency markers.
"""

from __future__ import annotations

from typing import Any


class Output:
    def collect(self, values: list, timestamps: list | None) -> None:
        raise NotImplementedError

    def collect_side(self, tag_id: str, values: list, timestamps: list | None) -> None:
        """Records for a side output nobody consumes are dropped, as in Flink."""

    def emit_watermark(self, timestamp: int) -> None:
        raise NotImplementedError

    def emit_watermark_status(self, idle: bool) -> None:
        raise NotImplementedError

    def emit_latency_marker(self, marker: Any) -> None:
        raise NotImplementedError


class DiscardingOutput(Output):
    """The output of a sink: nothing goes further."""

    def collect(self, values, timestamps):
        pass

    def emit_watermark(self, timestamp):
        pass

    def emit_watermark_status(self, idle):
        pass

    def emit_latency_marker(self, marker):
        pass


class EndOfChainOutput(DiscardingOutput):
    """The output of an operator nothing follows (a sink): records end here; watermarks and
    statuses are reported to ``listener`` (``output_watermark``, ``output_status``)."""

    def __init__(self, listener: Any) -> None:
        self.listener = listener

    def emit_watermark(self, timestamp):
        self.listener.output_watermark(timestamp)

    def emit_watermark_status(self, idle):
        self.listener.output_status(idle)


def blame(exc: BaseException, operator_name: str) -> None:
    """Remember the innermost operator an exception came from (for the failure report).

    Every ``BaseException`` counts: a user function raising ``SystemExit`` or
    ``KeyboardInterrupt`` fails its task like any other error, naming its operator."""
    if not hasattr(exc, "rill_operator"):
        try:
            exc.rill_operator = operator_name  # type: ignore[attr-defined]
        except AttributeError:
            pass


class blaming:
    """``with blaming(operator_name): ...``: an exception raised inside names that operator as
    the innermost one it came from (:func:`blame`) and goes on. An object running one
    operator's code on every batch keeps one (it holds only the name)."""

    __slots__ = ("operator_name",)

    def __init__(self, operator_name: str) -> None:
        self.operator_name = operator_name

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, exc: BaseException | None, traceback: Any) -> bool:
        if exc is not None:
            blame(exc, self.operator_name)
        return False


class ChainingOutput(Output):
    """Into the next operator of the chain."""

    __slots__ = ("target", "blaming")

    def __init__(self, target: Any) -> None:
        self.target = target
        self.blaming = blaming(target.name)

    def collect(self, values, timestamps):
        if values:
            with self.blaming:
                self.target.process_batch(values, timestamps)

    def emit_watermark(self, timestamp):
        self.target.process_watermark(timestamp)

    def emit_watermark_status(self, idle):
        self.target.process_watermark_status(idle)

    def emit_latency_marker(self, marker):
        self.target.process_latency_marker(marker)


class BroadcastingOutput(Output):
    """Fan-out: the same elements to several outputs (which never modify them)."""

    def __init__(self, outputs: list[Output]) -> None:
        self.outputs = outputs

    def collect(self, values, timestamps):
        for output in self.outputs:
            output.collect(values, timestamps)

    def emit_watermark(self, timestamp):
        for output in self.outputs:
            output.emit_watermark(timestamp)

    def emit_watermark_status(self, idle):
        for output in self.outputs:
            output.emit_watermark_status(idle)

    def emit_latency_marker(self, marker):
        # Flink forwards a latency marker to one random output; the first is deterministic.
        if self.outputs:
            self.outputs[0].emit_latency_marker(marker)


class ForwardingOutput(Output):
    """In front of another output: records go on as :meth:`collect` makes them; watermarks,
    statuses and latency markers pass through."""

    __slots__ = ("output",)

    def __init__(self, output: Output) -> None:
        self.output = output

    def emit_watermark(self, timestamp):
        self.output.emit_watermark(timestamp)

    def emit_watermark_status(self, idle):
        self.output.emit_watermark_status(idle)

    def emit_latency_marker(self, marker):
        self.output.emit_latency_marker(marker)


class CountingOutput(ForwardingOutput):
    """Counts the records an operator sends on (``counter.records_out``)."""

    __slots__ = ("counter",)

    def __init__(self, output: Output, counter: Any) -> None:
        super().__init__(output)
        self.counter = counter

    def collect(self, values, timestamps):
        self.counter.records_out += len(values)
        self.output.collect(values, timestamps)


class ConvertingOutput(ForwardingOutput):
    """Values as PyFlink's coder hands them on where an operator's output is serialised:
    ``convert`` (``kernel.jvm.coders.batch_conversion``) applied to each batch; a value it
    cannot write fails the operator that emitted it."""

    __slots__ = ("convert",)

    def __init__(self, output: Output, convert: Any) -> None:
        super().__init__(output)
        self.convert = convert

    def collect(self, values, timestamps):
        self.output.collect(self.convert(values), timestamps)


class OperatorOutput(Output):
    """What an operator writes to: its main outputs plus side outputs by tag."""

    def __init__(self, main: Output, side: dict[str, Output]) -> None:
        self.main = main
        self.side = side
        self.collect = main.collect  # type: ignore[method-assign]

    def collect_side(self, tag_id, values, timestamps):
        output = self.side.get(tag_id)
        if output is not None and values:
            output.collect(values, timestamps)

    def emit_watermark(self, timestamp):
        self.main.emit_watermark(timestamp)
        for output in self.side.values():
            output.emit_watermark(timestamp)

    def emit_watermark_status(self, idle):
        self.main.emit_watermark_status(idle)
        for output in self.side.values():
            output.emit_watermark_status(idle)

    def emit_latency_marker(self, marker):
        self.main.emit_latency_marker(marker)


def combine(outputs: list[Output]) -> Output:
    if not outputs:
        return DiscardingOutput()
    if len(outputs) == 1:
        return outputs[0]
    return BroadcastingOutput(outputs)
