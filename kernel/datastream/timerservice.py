"""``TimerService``: time and timers as a function sees them."""

from __future__ import annotations

from abc import ABC, abstractmethod


class TimerService(ABC):
    @abstractmethod
    def current_processing_time(self) -> int:
        """Processing time (kernel clock) in ms."""

    @abstractmethod
    def current_watermark(self) -> int:
        """The operator's current event time (its last watermark)."""

    @abstractmethod
    def register_processing_time_timer(self, timestamp: int) -> None:
        """Fire ``on_timer`` when processing time reaches ``timestamp`` (keyed streams only)."""

    @abstractmethod
    def register_event_time_timer(self, timestamp: int) -> None:
        """Fire ``on_timer`` when the watermark reaches ``timestamp`` (keyed streams only)."""

    @abstractmethod
    def delete_processing_time_timer(self, timestamp: int) -> None: ...

    @abstractmethod
    def delete_event_time_timer(self, timestamp: int) -> None: ...
