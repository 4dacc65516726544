from __future__ import annotations

from kernel.clock import NS_PER_MS, NS_PER_S, RealtimeClock, SimulatedClock
from kernel.events import Event
from kernel.loop import EventLoop
from kernel.rng import SeededRandom
from kernel.testing import EventCapture


def test_call_soon_is_fifo_and_timers_fire_in_deadline_then_creation_order():
    clock = SimulatedClock()
    loop = EventLoop(clock)
    seen = []
    loop.call_later(5 * NS_PER_S, lambda: seen.append(("t5a", clock.now())))
    loop.call_later(2 * NS_PER_S, lambda: seen.append(("t2", clock.now())))
    loop.call_later(5 * NS_PER_S, lambda: seen.append(("t5b", clock.now())))
    loop.call_soon(lambda: seen.append(("soon1", clock.now())))
    loop.call_soon(lambda: seen.append(("soon2", clock.now())))
    loop.run()
    assert seen == [
        ("soon1", 0), ("soon2", 0), ("t2", 2 * NS_PER_S), ("t5a", 5 * NS_PER_S), ("t5b", 5 * NS_PER_S),
    ]


def test_a_callback_at_rest_runs_after_everything_else_due_at_its_instant():
    clock = SimulatedClock()
    loop = EventLoop(clock)
    seen = []

    def tick():
        loop.call_at_rest(lambda: seen.append(("at rest", clock.now())))

    loop.call_later(NS_PER_S, tick)  # created first: it fires first
    loop.call_later(NS_PER_S, lambda: loop.call_soon(lambda: seen.append(("work", clock.now()))))
    loop.call_later(2 * NS_PER_S, lambda: seen.append(("later", clock.now())))
    loop.run()
    assert seen == [("work", NS_PER_S), ("at rest", NS_PER_S), ("later", 2 * NS_PER_S)]


def test_simulated_time_jumps_only_when_nothing_is_ready():
    clock = SimulatedClock()
    loop = EventLoop(clock)
    seen = []

    def chain(n):
        seen.append((n, clock.now()))
        if n < 3:
            loop.call_soon(chain, n + 1)

    loop.call_later(50 * NS_PER_S, lambda: seen.append(("timeout", clock.now())))
    loop.call_soon(chain, 0)
    loop.run()
    assert seen == [(0, 0), (1, 0), (2, 0), (3, 0), ("timeout", 50 * NS_PER_S)]


def test_cancelled_timer_does_not_run_and_stop_ends_the_loop():
    clock = SimulatedClock()
    loop = EventLoop(clock)
    seen = []
    handle = loop.call_later(NS_PER_S, seen.append, "cancelled")
    handle.cancel()
    loop.call_later(2 * NS_PER_S, loop.stop)
    loop.call_later(3 * NS_PER_S, seen.append, "after stop")
    loop.run()
    assert seen == []
    assert clock.now() == 2 * NS_PER_S
    loop.run()  # the loop can continue
    assert seen == ["after stop"]


def test_realtime_loop_waits_for_its_timer():
    clock = RealtimeClock()
    loop = EventLoop(clock)
    start = clock.now()
    fired = []
    loop.call_later(30 * NS_PER_MS, lambda: fired.append(clock.now()))
    loop.run()
    assert fired and fired[0] - start >= 30 * NS_PER_MS


def test_threadsafe_callback_wakes_a_sleeping_realtime_loop():
    import threading

    clock = RealtimeClock()
    loop = EventLoop(clock)
    seen = []
    loop.call_later(60 * NS_PER_S, seen.append, "never")
    threading.Timer(0.05, lambda: loop.call_soon_threadsafe(loop.stop)).start()
    loop.run()
    assert seen == []


def test_a_realtime_loop_waits_for_announced_io_and_runs_daemon_timers_meanwhile():
    import threading

    clock = RealtimeClock()
    loop = EventLoop(clock)
    seen = []

    def sample():
        seen.append("sample")
        loop.call_later(10 * NS_PER_MS, sample, daemon=True)

    def arrived():
        seen.append("io")
        loop.io_finished()

    loop.call_later(10 * NS_PER_MS, sample, daemon=True)
    loop.io_started()
    assert loop.has_pending(daemon=False)
    threading.Timer(0.1, lambda: loop.call_soon_threadsafe(arrived)).start()
    loop.run()  # without the announcement it would return at once: only a daemon timer is left
    # a sample due when the I/O came back runs in the same round, then the loop returns
    assert seen[seen.index("io") + 1:] in ([], ["sample"]) and "sample" in seen
    assert not loop.has_pending(daemon=False)


def test_rng_streams_depend_only_on_seed_and_name():
    a = SeededRandom(7)
    first = [a.stream("shuffle/Map/0").random() for _ in range(1)]
    b = SeededRandom(7)
    b.stream("something-else").random()
    assert [b.stream("shuffle/Map/0").random()] == first
    assert SeededRandom(8).stream("shuffle/Map/0").random() != first[0]


class Jittered(Event, tag="test_jittered"):
    n: int = 0
    value: float = 0.0


def simulate(session_factory, seed: int):
    capture = EventCapture()
    session = session_factory("rill.clock=simulated", f"rill.seed={seed}", plugins=[capture])
    session.events.register(Jittered)
    run = session.new_run("determinism")
    run.start()
    rng = run.rng.stream("test")

    def step(n):
        run.bus.emit(Jittered(time=run.clock.now(), n=n, value=rng.random()))
        if n < 50:
            run.loop.call_later(int(rng.uniform(1, 100) * NS_PER_MS), step, n + 1)

    run.loop.call_soon(step, 0)
    run.loop.run()
    run.finish("finished")
    return capture.last.comparable()


def test_simulated_runs_with_the_same_seed_give_identical_event_sequences(session_factory):
    first = simulate(session_factory, 11)
    second = simulate(session_factory, 11)
    assert len(first) == 53  # run_started, 51 steps, run_finished
    assert first == second
    assert simulate(session_factory, 12) != first


def test_cancelled_timers_leave_the_heap_before_their_deadline():
    """A long-lived loop where timers are set far ahead and cancelled (request timeouts,
    heartbeat suspicions) holds about as many timers as are pending, not every one ever set."""
    clock = SimulatedClock()
    loop = EventLoop(clock)
    seen = []
    for i in range(10_000):
        handle = loop.call_later(3600 * NS_PER_S + i, seen.append, i)
        if i % 1000:
            handle.cancel()
    assert len(loop._timers) <= 128
    loop.run()
    assert seen == list(range(0, 10_000, 1000))


def test_a_timer_group_forgets_the_timers_that_fired_or_were_cancelled():
    from kernel.loop import TimerGroup

    clock = SimulatedClock()
    loop = EventLoop(clock)
    group = TimerGroup()
    seen = []

    def tick(n):
        seen.append(n)
        if n < 5_000:
            group.add(loop.call_later(NS_PER_MS, tick, n + 1))

    group.add(loop.call_later(NS_PER_MS, tick, 1))
    far = group.add(loop.call_later(3600 * NS_PER_S, seen.append, "far"))
    loop.call_later(4 * NS_PER_S + NS_PER_MS // 2, loop.stop)
    loop.run()
    assert seen[-1] == 4000 and len(group) <= 64  # 4,000 fired: only the pending two are needed
    group.cancel_all()
    assert far.cancelled and len(group) == 0
    loop.run()
    assert seen[-1] == 4000


def test_other_threads_schedule_through_the_thread_safe_queue():
    """call_soon and call_at from another thread reach the loop's thread; a timer cancelled
    from another thread does not fire and no longer keeps the loop running."""
    import threading

    clock = RealtimeClock()
    loop = EventLoop(clock)
    seen = []
    handles = {}

    def from_elsewhere():
        loop.call_soon(lambda: seen.append(("soon", threading.current_thread() is threading.main_thread())))
        handles["kept"] = loop.call_later(20 * NS_PER_MS, lambda: seen.append("timer"))
        handles["cancelled"] = loop.call_later(3600 * NS_PER_S, seen.append, "never")
        handles["cancelled"].cancel()
        loop.call_in_thread(lambda: seen.append(("in thread", threading.current_thread() is threading.main_thread())))
        loop.call_later(40 * NS_PER_MS, loop.io_finished)

    loop.io_started()
    other = threading.Thread(target=from_elsewhere)
    other.start()
    other.join()
    loop.run()  # returns once the work announced ended and only the cancelled timer is left
    assert seen == [("soon", True), ("in thread", True), "timer"]
    assert handles["cancelled"].done and not loop.has_pending(daemon=False)


def test_call_in_thread_runs_at_once_in_the_loops_thread():
    loop = EventLoop(SimulatedClock())
    seen = []
    loop.call_soon(seen.append, "later")
    loop.call_in_thread(seen.append, "now")
    loop.run()
    assert seen == ["now", "later"]
