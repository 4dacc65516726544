"""The DefaultMailboxProcessor (Flink's MailboxProcessor): one task's single thread of
control, stepped by the task's event loop — the run's shared loop under the simulated clock,
the loop of the task's own thread under the realtime clock.

Loop step: run the mails queued now (timers, control), then — unless the default action is
suspended — the default action (process one input element or source batch). The default
action suspends itself when input or output is unavailable, with a timer gauge measuring the
suspension (idle or back-pressured time); the timer pauses while mails run (mail work is
busy time) and stops when the suspension is resumed.

Invariants: mails and the default action never run concurrently; mails run in FIFO order
among mails whose priority allows them; a resume is a control mail put first, so a
suspended task reacts to availability before older mails. Mails and resumes may come from
any thread: from another thread than the loop's they are handed over to it (thread-safe), so
the mailbox itself is only ever touched in the task's thread. Work a user function charges
through ``kernel.clock.sleep`` under a simulated clock keeps the task busy (not stepped)
until the clock has advanced by that much: the step ends with the mail or default action
that charged it (the mails after it wait for the next step), and before each charge the task
hands on what it emitted so far (``before_sleep``), which becomes visible at its virtual
emission time (``charged_ns``: the step's start plus the work charged before it). With
``slowdown`` F > 1 every step's work (its wall time under the realtime clock, its charged
time under the simulated one) keeps the task busy F times as long. ``step_started`` tells
other threads (the output flusher) how long the running step has been busy.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

from kernel import clock as kclock
from kernel.loop import EventLoop

#: a task keeps running default actions while it can, like Flink's task thread, but yields the
#: loop after this much wall time (realtime) or this many steps (always, for determinism)
TIME_SLICE_NS = 10_000_000
MAX_STEPS_PER_SLICE = 64
MIN_PRIORITY = -1
DEFAULT_PRIORITY = 0
MAX_PRIORITY = (1 << 31) - 1


class Mail:
    __slots__ = ("action", "priority", "description")

    def __init__(self, action: Callable[[], Any], priority: int, description: str) -> None:
        self.action = action
        self.priority = priority
        self.description = description


class TaskMailbox:
    """FIFO of mails; ``take(priority)`` returns the first mail with at least that priority."""

    def __init__(self) -> None:
        self._mails: deque[Mail] = deque()

    def put(self, mail: Mail) -> None:
        self._mails.append(mail)

    def put_first(self, mail: Mail) -> None:
        self._mails.appendleft(mail)

    def take(self, priority: int = MIN_PRIORITY) -> Mail | None:
        mails = self._mails
        if mails and mails[0].priority >= priority:
            return mails.popleft()
        for index, mail in enumerate(mails):
            if mail.priority >= priority:
                del mails[index]
                return mail
        return None

    def __len__(self) -> int:
        return len(self._mails)


class Suspension:
    """Returned by ``suspend_default_action``; ``resume()`` is called when the awaited input
    or output becomes available."""

    __slots__ = ("processor", "timer", "reason", "active")

    def __init__(self, processor: DefaultMailboxProcessor, timer: Any, reason: str) -> None:
        self.processor = processor
        self.timer = timer
        self.reason = reason
        self.active = True

    def resume(self) -> None:
        if self.active:
            self.active = False
            self.processor._resume(self)


class DefaultMailboxProcessor:
    def __init__(self, default_action: Callable[[DefaultMailboxProcessor], None], loop: EventLoop,
                 on_error: Callable[[BaseException], None],
                 on_suspension: Callable[[str, bool], None] | None = None,
                 before_sleep: Callable[[], None] | None = None) -> None:
        self.default_action = default_action
        self.loop = loop
        self.clock = loop.clock
        self.mailbox = TaskMailbox()
        self.suspension: Suspension | None = None
        self.running = True
        self.on_error = on_error
        self.on_suspension = on_suspension
        self._scheduled = False
        self._busy_until = 0
        self._charge = 0
        self._simulated = self.clock.mode == "simulated"
        #: work takes this many times as long (a slow TaskExecutor, an injected fault)
        self.slowdown = 1.0
        #: clock time the running step began (None between steps; read from other threads)
        self.step_started: int | None = None
        #: called before a user function's charged sleep (the task hands on what it emitted)
        self.before_sleep = before_sleep

    # -- mails --------------------------------------------------------------------------------

    def execute(self, action: Callable[[], Any], description: str = "", priority: int = DEFAULT_PRIORITY) -> None:
        """Run ``action`` in the task's thread of control, between default actions (called
        from any thread)."""
        if not self.loop.in_thread():
            self.loop.call_soon_threadsafe(self.execute, action, description, priority)
            return
        self.mailbox.put(Mail(action, priority, description))
        self.schedule()

    def schedule(self) -> None:
        if not self._scheduled and self.running:
            self._scheduled = True
            self.loop.call_soon(self.run_step)

    # -- suspension ---------------------------------------------------------------------------

    def suspend_default_action(self, timer: Any, reason: str) -> Suspension:
        """Stop calling the default action; ``timer`` measures the suspension until resumed."""
        if self.suspension is not None:
            raise RuntimeError("Default action has already been suspended")
        suspension = self.suspension = Suspension(self, timer, reason)
        if timer is not None:
            timer.mark_start(self.clock.now())
        if self.on_suspension is not None:
            self.on_suspension(reason, True)
        return suspension

    def _resume(self, suspension: Suspension) -> None:
        if not self.loop.in_thread():
            self.loop.call_soon_threadsafe(self._resume, suspension)
            return
        if suspension.timer is not None:
            suspension.timer.mark_end(self.clock.now())

        def clear() -> None:
            if self.suspension is suspension:
                self.suspension = None
                if self.on_suspension is not None:
                    self.on_suspension(suspension.reason, False)

        self.mailbox.put_first(Mail(clear, MAX_PRIORITY, "resume"))
        self.schedule()

    # -- the loop step ------------------------------------------------------------------------

    def charge(self, seconds: float) -> None:
        """Simulated work of a user function (``kernel.clock.sleep``): what the step emitted
        so far goes on first (``before_sleep``), at the virtual time it was emitted."""
        if self.before_sleep is not None:
            self.before_sleep()
        self._charge += int(seconds * 1e9)

    def charged_ns(self) -> int:
        """Simulated work charged in the running step so far (slowdown applied): what the
        step emits now is emitted that long after the step's start."""
        charge = self._charge
        return int(charge * self.slowdown) if charge and self.slowdown != 1.0 else charge

    def run_step(self) -> None:
        self._scheduled = False
        if not self.running:
            return
        now = self.clock.now()
        if self._busy_until > now:
            self._wake_at(self._busy_until)
            return
        if self._simulated:
            previous = kclock.set_sleeper(self.charge, deferred=True)
        clock = self.clock
        deadline = now + TIME_SLICE_NS
        self.step_started = now
        try:
            for _ in range(MAX_STEPS_PER_SLICE):
                self._run_mails()
                if self._charge or not self.running or self.suspension is not None:
                    break
                self.default_action(self)
                if self._charge or not self.running or self.suspension is not None:
                    break
                if not self._simulated and clock.now() >= deadline:
                    break
        except BaseException as exc:  # a task failure: the task decides what it means
            self.running = False
            self.step_started = None  # the output flusher relays nothing of a failed step
            self.on_error(exc)
            return
        finally:
            self.step_started = None
            if self._simulated:
                kclock.set_sleeper(previous)
        if self.slowdown != 1.0:
            work = self._charge if self._simulated else self.clock.now() - now
            self._charge += int(work * (self.slowdown - 1.0))
        if self._charge:
            self._busy_until = self.clock.now() + self._charge
            self._charge = 0
            self._wake_at(self._busy_until)
        elif self.running and (self.suspension is None or len(self.mailbox)):
            self.schedule()

    def _wake_at(self, when: int) -> None:
        if not self._scheduled:
            self._scheduled = True

            def wake() -> None:
                self._scheduled = False
                self.run_step()

            self.loop.call_at(when, wake)

    def _run_mails(self) -> None:
        mailbox = self.mailbox
        if not len(mailbox):
            return
        suspension = self.suspension
        timer = suspension.timer if suspension is not None else None
        if timer is not None:
            timer.mark_end(self.clock.now())
        for _ in range(len(mailbox)):
            if self._charge:  # a mail charged work: the task is busy, the rest waits for it
                break
            mail = mailbox.take(MIN_PRIORITY)
            if mail is None or not self.running:
                break
            mail.action()
        if timer is not None and self.suspension is suspension and suspension.active:
            timer.mark_start(self.clock.now())

    def stop(self) -> None:
        """End the loop (input finished, task cancelled or failed)."""
        self.running = False
