"""The mailbox contract: the single thread of control of a task (Flink's MailboxProcessor).

The processor repeatedly runs the task's mails (timers, control actions) and, unless it is
suspended, the task's default action (process input), stepped by the task's event loop
(``MailboxTask.loop``): the run's shared loop under the simulated clock, the loop of the
task's own thread under the realtime clock. Mails and resumes may come from any thread; the
task only sees this contract.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol


class SuspensionTimer(Protocol):
    """Measures a suspension (a TimerGauge: idle or back-pressured time)."""

    def mark_start(self, now: int) -> None:
        """The suspension (re)starts at clock time ``now`` (ns)."""

    def mark_end(self, now: int) -> None:
        """The suspension stops, or pauses while mails run, at ``now``."""


class Suspension(Protocol):
    """A suspended default action; ``resume()`` once the awaited input or output is there
    (also from a callback of another component, or from another thread)."""

    def resume(self) -> None:
        """Let the default action run again."""


class MailboxTask(Protocol):
    """What a MailboxProcessor drives: a StreamTask."""

    #: the event loop of the task's thread of control (a ``kernel.loop.EventLoop``)
    loop: Any

    def default_action(self, mailbox: MailboxProcessor) -> None:
        """Process one input element or source batch; suspends the default action (through
        ``mailbox``) when there is no input or no room for output."""

    def fail_from_mailbox(self, exc: BaseException) -> None:
        """A mail or the default action raised: the task fails."""

    def suspension_changed(self, reason: str, suspended: bool) -> None:
        """The default action was suspended (``idle``, ``back_pressure``, ``async_capacity``,
        ``finishing``) or resumed."""

    def hand_over_emitted(self) -> None:
        """A user function is about to sleep (``kernel.clock.sleep``): what the task's
        operators emitted so far goes on now (``kernel.runtime.streaming.handover``)."""


class MailboxProcessor(Protocol):
    """Runs one task's mails and default action, never two at once."""

    #: work takes this many times as long (an injected slow TaskExecutor)
    slowdown: float
    #: clock time (ns) the running step began, None between steps (read by the output
    #: flusher from its own thread: a long step is a task busy in user code)
    step_started: int | None

    def charged_ns(self) -> int:
        """Simulated clock: the work user functions charged in the running step so far (ns);
        what the step emits now is emitted that long after the step began. Before each
        charge the processor calls ``MailboxTask.hand_over_emitted``."""

    def schedule(self) -> None:
        """Make sure the processor runs (starts the task's loop; idempotent)."""

    def execute(self, action: Callable[[], Any], description: str = "") -> None:
        """Run ``action`` as a mail, between default actions (called from any thread)."""

    def suspend_default_action(self, timer: SuspensionTimer | None, reason: str) -> Suspension:
        """Stop calling the default action until the returned suspension is resumed;
        ``timer`` measures the suspension (paused while mails run)."""

    def stop(self) -> None:
        """End the loop (input finished, task cancelled or failed)."""
