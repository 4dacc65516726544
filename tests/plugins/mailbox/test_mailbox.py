"""The MailboxProcessor: mails, priorities, suspension timers, simulated work."""

from __future__ import annotations

from kernel import clock as kclock
from kernel.clock import NS_PER_MS, SimulatedClock
from kernel.loop import EventLoop
from plugins.local.tasks.io_metrics import TimerGauge
from plugins.mailbox.processor import MAX_PRIORITY, Mail, TaskMailbox
from plugins.mailbox.processor import DefaultMailboxProcessor as MailboxProcessor


def test_take_returns_the_first_mail_of_sufficient_priority():
    box = TaskMailbox()
    for name, priority in (("low", 0), ("high", 5), ("also low", 0)):
        box.put(Mail(lambda: None, priority, name))
    assert box.take(5).description == "high"
    assert [box.take().description, box.take().description] == ["low", "also low"]
    assert box.take() is None


def make(default_action):
    loop = EventLoop(SimulatedClock())
    errors = []
    return loop, MailboxProcessor(default_action, loop, errors.append), errors


def test_mails_run_between_default_actions_and_a_suspension_measures_its_timer():
    log = []
    idle = TimerGauge()
    steps = iter(range(100))

    def default_action(processor):
        step = next(steps)
        log.append(f"step {step}")
        if step == 1:
            suspension = processor.suspend_default_action(idle, "idle")
            processor.loop.call_later(5 * NS_PER_MS, suspension.resume)
        if step == 3:
            processor.stop()

    loop, processor, errors = make(default_action)
    processor.execute(lambda: log.append("mail"), "mail")
    processor.schedule()
    loop.run()
    assert log == ["mail", "step 0", "step 1", "step 2", "step 3"]
    assert idle.sample(loop.clock.now()) == 5 * NS_PER_MS
    assert errors == []


def test_resume_goes_before_older_mails():
    loop, processor, _ = make(lambda p: None)
    box = processor.mailbox
    box.put(Mail(lambda: None, 0, "old"))
    suspension = processor.suspend_default_action(None, "idle")
    suspension.resume()
    assert box.take().priority == MAX_PRIORITY


def test_simulated_work_keeps_the_task_busy_on_the_clock():
    done = []

    def default_action(processor):
        kclock.sleep(0.25)
        done.append(processor.clock.now())
        if len(done) == 3:
            processor.stop()

    loop, processor, _ = make(default_action)
    processor.schedule()
    loop.run()
    assert done == [0, 250 * NS_PER_MS, 500 * NS_PER_MS]


def test_a_charged_sleep_hands_on_first_and_ends_the_step_before_the_mails_behind_it():
    """Before each charge the task hands on what it emitted (``before_sleep``, seeing the work
    charged before it); the mail that charged ends the step: the next mail runs once the task
    is no longer busy, and the step between is known to other threads only while it runs."""
    log = []
    loop = EventLoop(SimulatedClock())
    processor = MailboxProcessor(lambda p: p.suspend_default_action(None, "idle"), loop, log.append,
                                 before_sleep=lambda: log.append(("hand on", processor.charged_ns())))

    def sleepy():
        log.append(("sleepy", processor.step_started))
        kclock.sleep(0.1)
        kclock.sleep(0.2)

    processor.execute(sleepy, "sleepy")
    processor.execute(lambda: log.append(("next", loop.clock.now())), "next")
    processor.schedule()
    loop.run()
    assert log == [("sleepy", 0), ("hand on", 0), ("hand on", 100 * NS_PER_MS), ("next", 300 * NS_PER_MS)]
    assert processor.step_started is None


def test_an_exception_stops_the_processor_and_is_reported():
    def default_action(processor):
        raise ValueError("boom")

    loop, processor, errors = make(default_action)
    processor.schedule()
    loop.run()
    assert [str(e) for e in errors] == ["boom"] and not processor.running
