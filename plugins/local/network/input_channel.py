"""The consumer side's channels: one :class:`InputChannel` per consumed subpartition.

Credit-based flow control: the channel gives credit for a buffer from its exclusive buffers
(``buffers-per-channel``), else from its gate's floating buffers (``floating-buffers-per-gate``);
without credit the producer keeps the buffer queued and the channel waits in its gate's queue
for a floating buffer. Processing a buffer (``recycle``) gives its credit back. An aligned
checkpoint barrier blocks the subpartition that sent it until the consumer, aligned, resumes
consumption (``resume_consumption``).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugins.local.network.input_gate import InputGate
    from plugins.local.network.partition import Subpartition


class InputChannel:
    __slots__ = ("gate", "index", "exclusive_free", "queue", "credits", "subpartition", "finished", "data_ended",
                 "waiting")

    def __init__(self, gate: InputGate, index: int) -> None:
        self.gate = gate
        self.index = index
        self.exclusive_free = gate.settings.buffers_per_channel
        self.queue: deque[Any] = deque()
        self.credits: deque[bool] = deque()  # per received buffer: came from the exclusive buffers?
        self.subpartition: Subpartition | None = None
        self.finished = False
        self.data_ended = False  # the producer ended its data (FLIP-147); barriers may still come
        self.waiting = False  # queued for a floating buffer

    def reserve(self) -> bool:
        """Credit for one more buffer: an exclusive one, else a floating one of the gate."""
        if self.exclusive_free > 0:
            self.exclusive_free -= 1
            self.credits.append(True)
            return True
        gate = self.gate
        if gate.floating_free > 0:
            gate.floating_free -= 1
            self.credits.append(False)
            return True
        if not self.waiting:
            self.waiting = True
            gate.waiting_for_credit.append(self)
        return False

    def buffer_available(self) -> None:
        """A floating buffer of the gate is free again: the producer may send."""
        if self.subpartition is not None:
            self.subpartition.try_send()

    def deliver(self, item: Any) -> None:
        self.queue.append(item)
        self.gate.data_arrived(self)

    def recycle(self) -> None:
        """The consumer processed a buffer: its credit goes back."""
        if self.credits.popleft():
            self.exclusive_free += 1
            if self.subpartition is not None:
                self.subpartition.try_send()
        else:
            gate = self.gate
            gate.floating_free += 1
            gate.retry_waiting()

    def resume_consumption(self) -> None:
        """The consumer is aligned: the subpartition a barrier blocked sends again."""
        if self.subpartition is not None:
            self.subpartition.resume()
