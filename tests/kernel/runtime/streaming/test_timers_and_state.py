"""Per-key timers (event and processing time) and keyed state of every kind."""

from __future__ import annotations

from kernel.runtime.cluster_events import TaskMetricsSampled
from kernel.common import Duration, Types, WatermarkStrategy
from kernel.datastream import AggregateFunction, KeyedProcessFunction, ReduceFunction
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.functions import (
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    ProcessWindowFunction,
)
from kernel.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from kernel.datastream.time_domain import TimeDomain
from kernel.runtime.streaming.handover import HandOver
from kernel.runtime.streaming.state import KeyedStateBackend
from kernel.runtime.streaming.timers import InternalTimerService
from tests.runtime import run_job

MAX = (1 << 63) - 1


def timestamped():
    return WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, ts: v[1])


def scripted(env, records, rate: int = 10):
    """One record every 1000/rate ms of simulated time, monotonous watermarks from field 1."""
    return env.from_source(DataGeneratorSource(records.__getitem__, count=len(records), records_per_second=rate),
                           timestamped(), "Records")


# -- the timer service -------------------------------------------------------------------------


class Recorder:
    """An operator to a timer service (Triggerable) and its runtime: records the timers that
    fire, what their callbacks emit and the counters, schedules wake-ups with ``schedule``."""

    batch = False

    def __init__(self, schedule=lambda when, callback: None, now=lambda: 0) -> None:
        self.fired: list = []
        self.times: list = []  # (timestamp, key) of each timer fired
        self.flushed: list = []
        self.counters: dict = {}
        self.schedule, self.now_ms = schedule, now
        self.handover = HandOver(lambda values, timestamps: self.flushed.append((values, timestamps)))

    def on_timer(self, timestamp, key, namespace, domain, out):
        self.fired.append(("event" if domain is TimeDomain.EVENT_TIME else "processing", timestamp, key, namespace))
        self.times.append((timestamp, key))
        out.values.append((timestamp, key))
        out.timestamps.append(timestamp)

    def count(self, metric, amount=1):
        self.counters[metric] = self.counters.get(metric, 0) + amount


def timer_service(backend, recorder):
    return InternalTimerService(backend, recorder, recorder)


def test_timers_are_unique_per_key_namespace_and_timestamp_and_fire_in_order():
    backend = KeyedStateBackend(lambda: 0)
    scheduled: list = []
    recorder = Recorder(lambda when, callback: scheduled.append(when))
    fired = recorder.fired
    timers = timer_service(backend, recorder)
    for key, timestamp in [("b", 20), ("a", 10), ("b", 20), ("a", 30), ("c", 10)]:
        backend.current_key = key
        timers.register_event_time_timer(None, timestamp)
    backend.current_key = "a"
    timers.delete_event_time_timer(None, 30)
    timers.register_processing_time_timer(None, 500)
    timers.register_processing_time_timer(None, 500)
    timers.register_processing_time_timer(None, 400)
    assert timers.pending() == 5
    timers.advance_watermark(20)
    assert fired == [("event", 10, "a", None), ("event", 10, "c", None), ("event", 20, "b", None)]
    assert timers.current_watermark == 20
    # what the callbacks emitted, in one batch; the timers counted
    assert recorder.flushed == [([(10, "a"), (10, "c"), (20, "b")], [10, 10, 20])]
    assert recorder.counters == {"timers_fired": 3}
    timers.advance_watermark(MAX)
    assert len(fired) == 3  # the deleted timer never fires
    assert len(recorder.flushed) == 1 and recorder.counters == {"timers_fired": 3}  # nothing fired, nothing emitted
    assert scheduled == [500, 400]  # a wake-up when an earlier processing-time timer arrives
    timers.fire_processing_time(1_000)
    assert fired[3:] == [("processing", 400, "a", None), ("processing", 500, "a", None)]
    assert recorder.flushed[1:] == [([(400, "a"), (500, "a")], [400, 500])]
    assert recorder.counters == {"timers_fired": 5}
    assert timers.pending() == 0


class Wakeup:
    """A timer handle as a runtime's ``schedule`` returns it."""

    def __init__(self, when, callback):
        self.when, self.callback, self.cancelled = when, callback, False

    def cancel(self):
        self.cancelled = True


def test_one_processing_time_wake_up_is_scheduled_at_a_time():
    backend = KeyedStateBackend(lambda: now[0])
    wakeups: list[Wakeup] = []
    now = [0]

    def schedule(when, callback):
        wakeups.append(Wakeup(when, callback))
        return wakeups[-1]

    recorder = Recorder(schedule, lambda: now[0])
    timers = timer_service(backend, recorder)
    fired = recorder.times
    backend.current_key = "a"
    timers.register_processing_time_timer(None, 500)
    timers.register_processing_time_timer(None, 300)  # earlier: the wake-up at 500 is cancelled
    assert [(w.when, w.cancelled) for w in wakeups] == [(500, True), (300, False)]
    now[0] = 500
    wakeups[0].callback()  # fired before it could be cancelled (its mail was queued): superseded
    assert fired == [] and len(wakeups) == 2
    wakeups[1].callback()
    assert fired == [(300, "a"), (500, "a")] and len(wakeups) == 2  # nothing left: no wake-up
    for i in range(200):  # timers registered in no particular order
        backend.current_key = i
        timers.register_processing_time_timer(None, 1000 + (i * 37) % 200)
    called = 2
    while len(fired) < 202:
        live = [w for w in wakeups[called:] if not w.cancelled]
        assert len(live) == 1
        now[0] = live[0].when
        called = len(wakeups)
        live[0].callback()
    assert [t for t, _ in fired[2:]] == sorted(1000 + (i * 37) % 200 for i in range(200))
    assert all(w.cancelled for w in wakeups[called:]) or len(wakeups) == called


def test_deleted_timers_leave_the_queue_and_one_registered_again_takes_a_new_place():
    """A timeout moved at every record (delete, register later) leaves the queue holding about
    as many timestamps as there are live timers, not one per record; a timer deleted and
    registered again is added anew, behind the other timer of its timestamp (timers of one
    timestamp fire in the order registered)."""
    backend = KeyedStateBackend(lambda: 0)
    recorder = Recorder()
    timers = timer_service(backend, recorder)
    fired = recorder.times
    for key in ("a", "b"):
        backend.current_key = key
        timers.register_event_time_timer(None, 10)
    backend.current_key = "a"
    timers.delete_event_time_timer(None, 10)
    timers.register_event_time_timer(None, 10)
    for i in range(10_000):
        backend.current_key = i % 100
        if i >= 100:
            timers.delete_event_time_timer(None, 60_000 + i - 100)
        timers.register_event_time_timer(None, 60_000 + i)
    queue = timers.event_timers
    assert len(queue) == 102 and len(queue.buckets) == 101 and len(queue.times) <= 2 * 101 + 65
    timers.advance_watermark(10)
    assert fired == [(10, "b"), (10, "a")]
    timers.advance_watermark(MAX)
    assert fired[2:] == [(60_000 + i, i % 100) for i in range(9_900, 10_000)]


def test_the_service_switches_to_a_timers_key_as_pyflink():
    """Keys as PyFlink's Java keys (untyped: pickled bytes, so 1 and True are two keys): each
    timer's callback gets its own Python key, and state is read under the key PyFlink would
    hold: a timer whose key Python calls equal to the previous timer's keeps that key's state
    (True's after 1's reads 1's), the first timer after records always switches, and the first
    record after timers too."""
    from kernel.jvm.keyidentity import JavaKey, state_key_function

    backend = KeyedStateBackend(lambda: 0, state_key_function(None))
    held: list = []

    class Holding(Recorder):
        def on_timer(self, timestamp, key, namespace, domain, out):
            held.append((key, backend.current_key))

    timers = timer_service(backend, Holding())
    for key, time in ((1, 10), ("x", 11), (True, 10)):  # a record each: True after "x" has its own state
        (backend.current_key,) = backend.state_keys([key])
        timers.register_event_time_timer(None, time)
    assert backend.current_key == JavaKey(b"\x80\x05\x88.", True)
    timers.advance_watermark(11)  # True's timer right after 1's, then "x"'s
    assert held == [(1, 1), (True, 1), ("x", "x")]
    assert backend.state_keys([True, 1]) == [JavaKey(b"\x80\x05\x88.", True)] * 2


#: recorded with Java 17 and Flink 2.3's table runtime: windows (start,end) added in this order to a
#: java.util.HashSet of ``org.apache.flink.table.runtime.operators.window.TimeWindow``, and the
#: order the set iterates them (the last: nine windows in one of 16 bins, the ninth doubles the table)
JAVA_HASH_SET_ORDERS = [
    ("2185,2385 2540,2743", "2540,2743 2185,2385"),
    ("57135,59698 71133,71402 74377,74431 56503,57566 67192,68152",
     "57135,59698 71133,71402 74377,74431 67192,68152 56503,57566"),
    ("20132,23070 56638,58854 67041,68993 47053,49671 14741,15691 78212,78834 63574,65172 92157,92220 83003,83266 "
     "15892,18314 608,1842 97246,97374 30314,32251",
     "78212,78834 63574,65172 92157,92220 30314,32251 15892,18314 56638,58854 83003,83266 97246,97374 20132,23070 "
     "67041,68993 14741,15691 47053,49671 608,1842"),
    ("8,108 18,118 24,124 0,100 41,141 85,185 89,189 108,208 112,212",
     "8,108 18,118 24,124 41,141 85,185 89,189 108,208 112,212 0,100"),
    ("2185,2385 2540,2743 3000,3100", "2540,2743 3000,3100 2185,2385"),
]


def test_namespaces_merge_in_the_order_the_jvm_merges_pyflinks_windows():
    """PyFlink's JVM reads the windows whose state it merges into a java.util.HashSet: the
    sources' list elements are appended in the order that set iterates them, and a reducing
    state (a bag of one value in PyFlink) keeps the first value in that order (a continuous
    trigger's next firing time over merged sessions)."""
    from kernel.jvm.javavalues import hash_set_order
    from kernel.datastream.window import TimeWindow

    def windows(text):
        return [TimeWindow(*map(int, pair.split(","))) for pair in text.split()]

    for added, iterated in JAVA_HASH_SET_ORDERS:
        assert hash_set_order(windows(added), TimeWindow.java_hash_code) == windows(iterated)

    backend = KeyedStateBackend(lambda: 0)
    backend.current_key = "k"
    first, second, third = windows("2185,2385 2540,2743 3000,3100")
    result = TimeWindow(2185, 3100)
    elements = backend.get_state(ListStateDescriptor("elements", Types.INT()))
    fire_time = backend.get_state(ReducingStateDescriptor("fire-time", min, Types.LONG()))
    for window, value in ((first, 1), (second, 2), (third, 3)):
        elements.namespace = fire_time.namespace = window
        elements.add(value)
        fire_time.add(window.max_timestamp())
    elements.namespace = fire_time.namespace = result
    elements.merge(result, [first, second, third])
    fire_time.merge(result, [first, second, third])
    assert elements.get() == [2, 3, 1]  # in the order of the last recorded set
    assert fire_time.get() == 2742  # the first in that order, not the least
    for window in (first, second, third):
        elements.namespace = fire_time.namespace = window
        assert elements.get() == [] and fire_time.get() is None


# -- in a job ------------------------------------------------------------------------------------


class Alarm(KeyedProcessFunction):
    """Per key: an event-time timer 5 ms after each record (registered twice: deduplicated),
    a processing-time timer 250 ms after the first one; deletes the timer of a value 999."""

    def process_element(self, value, ctx):
        service = ctx.timer_service()
        if value[0] == "delete":
            service.delete_event_time_timer(value[1] + 5)
            return
        service.register_event_time_timer(ctx.timestamp() + 5)
        service.register_event_time_timer(ctx.timestamp() + 5)
        if value[1] == 0:
            service.register_processing_time_timer(service.current_processing_time() + 250)
        yield "element", ctx.get_current_key(), ctx.timestamp(), service.current_watermark()

    def on_timer(self, timestamp, ctx):
        domain = "event" if ctx.time_domain() is TimeDomain.EVENT_TIME else "processing"
        yield domain, ctx.get_current_key(), timestamp, ctx.timestamp(), ctx.timer_service().current_watermark()


def test_keyed_process_function_timers():
    results: list = []
    records = [("a", 0), ("b", 100), ("a", 200), ("delete", 200), ("b", 300)]

    def build(env):
        scripted(env, records).key_by(lambda v: "a" if v[0] == "delete" else v[0], Types.STRING()) \
            .process(Alarm()).add_sink(results.append)
        env.execute("timers")

    job = run_job(build, "pipeline.auto-watermark-interval=100 ms")
    assert job.outcome.status == "FINISHED"
    assert results == [
        ("element", "a", 0, -(1 << 63)),
        # watermark -1 at 100 ms (ticks see the records read before them)
        ("element", "b", 100, -1),
        # watermark 99 at 200 ms fires a's timer at 5
        ("event", "a", 5, 5, 99),
        ("element", "a", 200, 99),
        # watermark 199 fires b's timer at 105
        ("event", "b", 105, 105, 199),
        # a's first record reached this task at 100 ms (the 100 ms buffer timeout), so its
        # processing-time timer is at 350 (ctx.timestamp() in on_timer is the timer's time)
        ("processing", "a", 350, 350, 199),
        ("element", "b", 300, 199),
        # the final watermark fires what is left; a's timer at 205 was deleted
        ("event", "b", 305, 305, MAX),
    ]


def register_timers(value, ctx):
    """Event-time timers at the end of the record's second (one per key and second), one at
    5000 deleted at once (key b), a processing-time timer 1 ms later (records before 1000)."""
    service = ctx.timer_service()
    ts = ctx.timestamp()
    service.register_event_time_timer(ts - ts % 1000 + 999)
    if value[0] == "b":
        service.register_event_time_timer(5000)
        service.delete_event_time_timer(5000)
    if ts < 1000:
        service.register_processing_time_timer(service.current_processing_time() + 1)


def timer_fired(timestamp, ctx):
    """The timer at 999 registers one at 1500."""
    if timestamp == 999:
        ctx.timer_service().register_event_time_timer(1500)
    yield f"{ctx.time_domain().name} {ctx.get_current_key()} {timestamp}"


class ProcessTimers(KeyedProcessFunction):
    def process_element(self, value, ctx):
        register_timers(value, ctx)

    def on_timer(self, timestamp, ctx):
        return timer_fired(timestamp, ctx)


class CoProcessTimers(KeyedCoProcessFunction):
    def process_element1(self, value, ctx):
        register_timers(value, ctx)

    def process_element2(self, value, ctx):
        return None

    def on_timer(self, timestamp, ctx):
        return timer_fired(timestamp, ctx)


class BroadcastTimers(KeyedBroadcastProcessFunction):
    def process_element(self, value, ctx):
        register_timers(value, ctx)

    def process_broadcast_element(self, value, ctx):
        return None

    def on_timer(self, timestamp, ctx):
        return timer_fired(timestamp, ctx)


class WindowLine(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield f"{context.window().start}-{context.window().end} {key} {len(list(elements))}"


def timers_of_every_operator_kind(env):
    """Records a@100, a@300, b@1200, a@2100 (10 a second; 10 s out of orderness: every
    event-time timer fires at the final watermark) to a KeyedProcessFunction, a
    KeyedCoProcessFunction, a KeyedBroadcastProcessFunction, session windows with a continuous
    trigger (the generic window operator) and tumbling windows with allowed lateness (the
    aligned one)."""
    from kernel.datastream.state import MapStateDescriptor
    from kernel.datastream.window import (
        ContinuousEventTimeTrigger,
        EventTimeSessionWindows,
        Time,
        TumblingEventTimeWindows,
    )

    records = [("a", 100), ("a", 300), ("b", 1200), ("a", 2100)]
    env.set_parallelism(1)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(10)) \
        .with_timestamp_assigner(lambda value, ts: value[1])
    timed = env.from_source(DataGeneratorSource(records.__getitem__, count=len(records), records_per_second=10),
                            strategy, "Records")
    keyed = timed.key_by(lambda v: v[0], Types.STRING())
    keyed.process(ProcessTimers(), Types.STRING()).name("Process").print("process")
    keyed.connect(timed.key_by(lambda v: v[0], Types.STRING())).process(CoProcessTimers(), Types.STRING()) \
        .name("CoProcess").print("co")
    keyed.connect(timed.broadcast(MapStateDescriptor("none", Types.STRING(), Types.STRING()))) \
        .process(BroadcastTimers(), Types.STRING()).name("Broadcast").print("broadcast")
    keyed.window(EventTimeSessionWindows.with_gap(Time.seconds(1))) \
        .trigger(ContinuousEventTimeTrigger.of(Time.milliseconds(200))).process(WindowLine(), Types.STRING()) \
        .name("Sessions").print("sessions")
    keyed.window(TumblingEventTimeWindows.of(Time.seconds(1))).allowed_lateness(500) \
        .process(WindowLine(), Types.STRING()).name("Tumbling").print("tumbling")
    env.execute("counters")


def fired_counters(job) -> dict[str, tuple[int, int]]:
    """(timers_fired, windows_fired) per operator, summed over the task's samples."""
    counters: dict[str, tuple[int, int]] = {}
    for sample in job.events(TaskMetricsSampled):
        name = sample.vertex_name.split(" -> ")[0]
        timers, windows = counters.get(name, (0, 0))
        counters[name] = (timers + sample.timers_fired, windows + sample.windows_fired)
    return counters


def test_every_keyed_operator_counts_the_timers_and_windows_that_fired():
    """Per operator, timers_fired is the number of timers that fired (for the process functions,
    of on_timer calls: one line each) and windows_fired the number of window results.
    STREAMING, per key: event-time timers at 999, 1500 (registered at 999), 2999 (a) and 1999
    (b), one processing-time timer at 101 (a's records read at 0 and 100 ms reached the
    operators together at 100 ms: the flush tick at 100 ms takes what was emitted up to its
    instant); the session windows [100, 1300) (a's two records merged: its first window's
    fire-time timer at 200 still fires, and does nothing), [1200, 2200) and [2100, 3100) each
    fire at their fire time and at their end (7 timers, 6 results); the tumbling windows fire
    at their end and are cleaned up 500 ms later (6 timers, 3 results). BATCH: each key's
    timers fire when its records end, timers registered then are ignored (not the one at
    1500), and processing time stands at 300 ms: a's two processing-time timers are one."""
    from kernel.datastream import RuntimeExecutionMode

    streaming = run_job(timers_of_every_operator_kind)
    assert streaming.outcome.status == "FINISHED"
    for sink in ("process", "co", "broadcast"):
        assert sorted(line for line in streaming.lines if line.startswith(f"{sink}>")) == [
            f"{sink}> {line}" for line in ("EVENT_TIME a 1500", "EVENT_TIME a 2999", "EVENT_TIME a 999",
                                           "EVENT_TIME b 1999", "PROCESSING_TIME a 101")]
    assert sum(line.startswith("sessions>") for line in streaming.lines) == 6
    assert sum(line.startswith("tumbling>") for line in streaming.lines) == 3
    assert fired_counters(streaming) == {"Source: Records": (0, 0), "Process": (5, 0), "CoProcess": (5, 0),
                                         "Broadcast": (5, 0), "Sessions": (7, 6), "Tumbling": (6, 3)}

    def batch(env):
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
        timers_of_every_operator_kind(env)

    job = run_job(batch)
    assert job.outcome.status == "FINISHED"
    for sink in ("process", "co", "broadcast"):
        assert sorted(line for line in job.lines if line.startswith(f"{sink}>")) == [
            f"{sink}> {line}" for line in ("EVENT_TIME a 2999", "EVENT_TIME a 999", "EVENT_TIME b 1999",
                                           "PROCESSING_TIME a 301")]
    assert sum(line.startswith("sessions>") for line in job.lines) == 6
    assert fired_counters(job) == {"Source: Records": (0, 0), "Process": (4, 0), "CoProcess": (4, 0),
                                   "Broadcast": (4, 0), "Sessions": (7, 6), "Tumbling": (6, 3)}


class Everything(KeyedProcessFunction):
    class Longest(AggregateFunction):
        def create_accumulator(self):
            return ""

        def add(self, value, accumulator):
            return value if len(value) > len(accumulator) else accumulator

        def get_result(self, accumulator):
            return accumulator.upper()

        def merge(self, a, b):
            return a if len(a) >= len(b) else b

    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.INT()))
        self.words = ctx.get_list_state(ListStateDescriptor("words", Types.STRING()))
        self.lengths = ctx.get_map_state(MapStateDescriptor("lengths", Types.STRING(), Types.INT()))
        self.total = ctx.get_reducing_state(ReducingStateDescriptor("total", lambda a, b: a + b, Types.INT()))
        self.longest = ctx.get_aggregating_state(AggregatingStateDescriptor("longest", self.Longest(), Types.STRING()))

    def process_element(self, value, ctx):
        word = value[0]
        self.count.update((self.count.value() or 0) + 1)
        self.words.add(word)
        self.lengths.put(word, len(word))
        self.total.add(len(word))
        self.longest.add(word)
        if word == "reset":
            self.words.clear()
            self.lengths.remove("reset")
        yield (ctx.get_current_key(), self.count.value(), list(self.words.get()), sorted(self.lengths.items()),
               self.total.get(), self.longest.get())


def test_value_list_map_reducing_and_aggregating_state_per_key():
    results: list = []
    data = [("to", 0), ("be", 1), ("or", 2), ("not", 3), ("reset", 4), ("be", 5)]

    def build(env):
        env.set_parallelism(2)
        env.from_collection(data).key_by(lambda v: len(v[0]) % 2, Types.INT()) \
            .process(Everything()).add_sink(results.append)
        env.execute("state")

    run_job(build)
    even = [r for r in results if r[0] == 0]
    odd = [r for r in results if r[0] == 1]
    assert even == [
        (0, 1, ["to"], [("to", 2)], 2, "TO"),
        (0, 2, ["to", "be"], [("be", 2), ("to", 2)], 4, "TO"),
        (0, 3, ["to", "be", "or"], [("be", 2), ("or", 2), ("to", 2)], 6, "TO"),
        (0, 4, ["to", "be", "or", "be"], [("be", 2), ("or", 2), ("to", 2)], 8, "TO"),
    ]
    assert odd == [
        (1, 1, ["not"], [("not", 3)], 3, "NOT"),
        (1, 2, [], [("not", 3)], 8, "RESET"),
    ]


def test_state_is_only_for_keyed_streams():
    from kernel.datastream import ProcessFunction

    class Stateful(ProcessFunction):
        def open(self, ctx):
            ctx.get_state(ValueStateDescriptor("x", Types.INT()))

        def process_element(self, value, ctx):
            yield value

    def build(env):
        env.from_collection([1]).process(Stateful()).print()
        env.execute("not keyed")

    job = run_job(build)
    assert job.outcome.status == "FAILED"
    assert "only accessible by functions executed on a KeyedStream" in str(job.error)


def test_timers_on_a_non_keyed_stream_are_refused():
    from kernel.datastream import ProcessFunction

    class Timer(ProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(5)
            yield value

    def build(env):
        env.from_collection([1]).process(Timer()).print()
        env.execute("not keyed")

    job = run_job(build)
    assert job.outcome.status == "FAILED"
    assert "Register timers is only supported on a keyed stream." in str(job.error)


class RunningTotal(KeyedProcessFunction):
    """Keeps a state handle and a plain counter on ``self`` (in ``open``)."""

    def open(self, ctx):
        self.total = ctx.get_state(ValueStateDescriptor("total", Types.INT()))
        self.subtask = ctx.get_index_of_this_subtask()
        self.seen = 0

    def process_element(self, value, ctx):
        self.seen += 1
        self.total.update((self.total.value() or 0) + value[1])
        yield ctx.get_current_key(), self.total.value(), self.subtask, self.seen


def test_every_subtask_has_its_own_copy_of_the_function():
    """As Flink deserialises a function per subtask: what open() puts on self is the subtask's."""
    data = [(f"k{i % 7}", i + 1) for i in range(70)]
    results: list = []

    def build(env):
        env.set_parallelism(2)
        env.from_collection(data).rebalance().map(lambda v: v).key_by(lambda v: v[0], Types.STRING()) \
            .process(RunningTotal()).add_sink(results.append)
        env.execute("copies")

    assert run_job(build).outcome.status == "FINISHED"
    for key in {k for k, _ in data}:
        totals = [total for k, total, _, _ in results if k == key]  # in the order the records came
        added = [b - a for a, b in zip([0, *totals], totals)]
        assert sorted(added) == sorted(v for k, v in data if k == key)
    for subtask in (0, 1):
        seen = [n for _, _, s, n in results if s == subtask]
        assert seen and seen == list(range(1, len(seen) + 1))


class CountingReduce(ReduceFunction):
    """A ReduceFunction keeping keyed state: how often it reduced for the current key."""

    def open(self, runtime_context):
        self.calls = runtime_context.get_state(ValueStateDescriptor("calls", Types.INT()))

    def reduce(self, value1, value2):
        calls = (self.calls.value() or 0) + 1
        self.calls.update(calls)
        return value2[0], calls


def test_a_reduce_function_reads_keyed_state_of_each_records_key():
    """The key is the current key of every record a ReduceFunction reduces, also within one
    batch (a plain callable gets no runtime context, so its keys are set once per batch)."""
    def build(env):
        words = ["a", "b", "a", "a", "b", "c", "a"]
        env.from_collection([(w, 0) for w in words], Types.TUPLE([Types.STRING(), Types.INT()])) \
            .key_by(lambda v: v[0], Types.STRING()).reduce(CountingReduce()).print()
        env.from_collection([(w, 1) for w in words], Types.TUPLE([Types.STRING(), Types.INT()])) \
            .key_by(lambda v: v[0], Types.STRING()).reduce(lambda a, b: (a[0], a[1] + b[1])).print("sum")
        env.execute("reduce state")

    run = run_job(build)
    assert [line for line in run.lines if not line.startswith("sum")] == [
        "(a,0)", "(b,0)", "(a,1)", "(a,2)", "(b,1)", "(c,0)", "(a,3)"]
    assert [line for line in run.lines if line.startswith("sum")] == [
        "sum> (a,1)", "sum> (b,1)", "sum> (a,2)", "sum> (a,3)", "sum> (b,2)", "sum> (c,1)", "sum> (a,4)"]
