"""The consumer side of one input: an :class:`InputGate` with its channels, its floating
buffers and the channels that have data (polled round robin). Channels with priority events
are polled apart, and the gate's ``priority_listener`` hears of each at once.

Producers deliver into the gate's channels from their own threads (realtime), under the
network's lock; the consumer polls under it too, and the callback waiting for data and the
priority listener run in the consumer's thread (``loop``: its task's event loop)."""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from plugins.local.network.input_channel import InputChannel
from plugins.local.network.partition import call_now

if TYPE_CHECKING:
    from kernel.loop import EventLoop
    from plugins.local.network.shuffle import NetworkSettings


class InputGate:
    """The consumer side of one input: channels, floating buffers, channels with data."""

    def __init__(self, num_channels: int, settings: NetworkSettings, index: int = 0, lock: Any = None,
                 loop: EventLoop | None = None) -> None:
        #: the network's lock (the shuffle environment's)
        self.lock = lock if lock is not None else threading.Lock()
        self._notify = loop.call_in_thread if loop is not None else call_now
        self.settings = settings
        self.index = index  # the task's input (0, or 1 for the second input of a two-input task)
        self.channels = [InputChannel(self, i) for i in range(num_channels)]
        self.floating_free = settings.floating_buffers_per_gate
        self.with_data: deque[InputChannel] = deque()
        self.waiting_for_credit: deque[InputChannel] = deque()
        self.finished_channels = 0
        self._waiter: Callable[[], None] | None = None
        self.with_priority: deque[InputChannel] = deque()
        #: called when a priority event arrived (the task handles it as a mail)
        self.priority_listener: Callable[[], None] | None = None

    @property
    def finished(self) -> bool:
        return self.finished_channels == len(self.channels)

    def data_arrived(self, channel: InputChannel) -> None:
        if len(channel.queue) == 1:
            self.with_data.append(channel)
        if self._waiter is not None:
            waiter, self._waiter = self._waiter, None
            self._notify(waiter)

    def when_available(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once data is there (at once if it arrived meanwhile)."""
        with self.lock:
            if self.with_data:
                callback()
            else:
                self._waiter = callback

    def has_data(self) -> bool:
        return bool(self.with_data)

    def poll(self) -> tuple[InputChannel, Any] | None:
        """The next element of the next channel with data (round robin over channels)."""
        with self.lock:
            with_data = self.with_data
            if not with_data:
                return None
            channel = with_data.popleft()
            item = channel.queue.popleft()
            if channel.queue:
                with_data.append(channel)
            return channel, item

    def priority_arrived(self, channel: InputChannel) -> None:
        """A priority event arrived in ``channel`` (the lock is held)."""
        if len(channel.priority) == 1:
            self.with_priority.append(channel)
        if self.priority_listener is not None:
            self._notify(self.priority_listener)

    def poll_priority(self) -> tuple[InputChannel, Any] | None:
        """The next priority event, of the channels in the order they got one."""
        with self.lock:
            with_priority = self.with_priority
            if not with_priority:
                return None
            channel = with_priority.popleft()
            item = channel.priority.popleft()
            if channel.priority:
                with_priority.append(channel)
            return channel, item

    def retry_waiting(self) -> None:
        waiting = self.waiting_for_credit
        for _ in range(len(waiting)):
            if self.floating_free <= 0:
                return
            channel = waiting.popleft()
            channel.waiting = False
            if channel.subpartition is not None:
                channel.subpartition.try_send()
