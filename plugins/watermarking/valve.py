"""The StatusWatermarkValve of one input: current Flink (after FLINK-40475).

State per channel: watermark (initially MIN), status ACTIVE/IDLE, aligned (initially true).
Valve state: the last output watermark (MIN) and status (ACTIVE).

- A watermark is ignored unless the valve and its channel are ACTIVE, and unless it exceeds
  the channel's previous one. An unaligned channel that reaches the last output watermark is
  aligned again. Then the minimum over aligned channels is emitted if it is larger than the
  last output watermark (output watermarks only increase).
- A channel going IDLE becomes unaligned. If no channel is active any more, the maximum
  watermark over all channels is flushed (if larger than the last output) — unconditionally —
  and IDLE is emitted. Otherwise, if the channel held the minimum, the minimum is re-derived.
- A channel going ACTIVE is aligned iff its watermark is at least the last output watermark;
  the valve emits ACTIVE if it was IDLE, then re-derives the minimum.
- A status that does not change the channel's status is ignored.
"""

from __future__ import annotations

from typing import Any

from kernel.clock import MIN_LONG


class StatusWatermarkValve:
    def __init__(self, num_channels: int) -> None:
        if num_channels <= 0:
            raise ValueError("a valve needs at least one channel")
        self.watermarks = [MIN_LONG] * num_channels
        self.active = [True] * num_channels
        self.aligned = [True] * num_channels
        self.last_output_watermark = MIN_LONG
        self.idle = False  # the last output status

    def input_watermark(self, watermark: int, channel: int, output: Any) -> None:
        if self.idle or not self.active[channel]:
            return
        if watermark > self.watermarks[channel]:
            self.watermarks[channel] = watermark
            if not self.aligned[channel] and watermark >= self.last_output_watermark:
                self.aligned[channel] = True
            self._emit_min_aligned(output)

    def input_watermark_status(self, idle: bool, channel: int, output: Any) -> None:
        if idle and self.active[channel]:
            self.active[channel] = False
            self.aligned[channel] = False
            if not any(self.active):
                maximum = max(self.watermarks)
                if maximum > self.last_output_watermark:
                    self.last_output_watermark = maximum
                    output.emit_watermark(maximum)
                self.idle = True
                output.emit_watermark_status(True)
            elif self.watermarks[channel] == self.last_output_watermark:
                self._emit_min_aligned(output)
        elif not idle and not self.active[channel]:
            self.active[channel] = True
            self.aligned[channel] = self.watermarks[channel] >= self.last_output_watermark
            if self.idle:
                self.idle = False
                output.emit_watermark_status(False)
            self._emit_min_aligned(output)

    def _emit_min_aligned(self, output: Any) -> None:
        minimum = None
        for watermark, aligned in zip(self.watermarks, self.aligned):
            if aligned and (minimum is None or watermark < minimum):
                minimum = watermark
        if minimum is not None and minimum > self.last_output_watermark:
            self.last_output_watermark = minimum
            output.emit_watermark(minimum)
