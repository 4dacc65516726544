"""Async I/O (``AsyncDataStream``): PyFlink 2.3's API and semantics, on the simulated clock.

Coroutines run in simulated time (``await asyncio.sleep(0.3)`` takes 0.3 s of the kernel clock),
so every output, its clock time and every metric are exact. Where a test says "recorded on
PyFlink 2.3", the same job (imports ``pyflink.``) was run on real PyFlink 2.3.0
(``/work/venvs/pyflink``, parallelism 1) and its printed lines copied here.
"""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from kernel.runtime.cluster_events import SinkOutputPrinted, TaskMetricsSampled
from kernel.common import Configuration, Time, Types, WatermarkStrategy
from kernel.common.watermark_strategy import TimestampAssigner
from kernel.datastream import (
    AsyncDataStream,
    AsyncRetryStrategy,
    ProcessFunction,
    StreamExecutionEnvironment,
    async_retry_strategies,
)
from kernel.datastream import async_retry_predicates as predicates
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.functions import AsyncFunction
from kernel.clock import SimulatedClock
from kernel.loop import EventLoop
from kernel.runtime.simulated_asyncio import SimulatedAsyncioLoop
from kernel.runtime.streaming.async_io import AsyncExecutor, BlockingAsyncExecutor, attempt
from kernel.runtime.streaming.async_queue import OrderedStreamElementQueue, RecordEntry, UnorderedStreamElementQueue
from kernel.runtime.streaming.chain import OperatorChain
from tests.graphs import compile_job, vertex_names
from tests.runtime import run_job
from tests.kernel.runtime.streaming.test_operator_chain import ListOutput, PlainRuntime


class Slow(AsyncFunction[int, str]):
    """Takes ``value * 0.3`` s and returns two results."""

    async def async_invoke(self, value: int) -> list[str]:
        await asyncio.sleep(value * 0.3)
        return [f"{value}:a", f"{value}:b"]


class Late(AsyncFunction[int, str]):
    """4 takes 3 s (longer than the 1 s timeout); the timeout emits its own result."""

    async def async_invoke(self, value: int) -> list[str]:
        await asyncio.sleep(3 if value == 4 else 0.01)
        return [f"{value}:ok"]

    def timeout(self, value: int) -> list[str]:
        return [f"{value}:timeout"]


class ValueTimestamps(TimestampAssigner):
    def __init__(self, scale: int) -> None:
        self.scale = scale

    def extract_timestamp(self, value, record_timestamp):
        return value * self.scale


class ShowTimestamp(ProcessFunction):
    def process_element(self, value, ctx):
        yield f"{value}@{ctx.timestamp()}"


def printed(job) -> list[tuple[float, str]]:
    """(clock ms, line) of every printed line."""
    return [(event.time / 1e6, line) for event in job.events(SinkOutputPrinted) for line in event.text.splitlines()]


def per_sink(lines: list[str]) -> dict[str, list[str]]:
    sinks: dict[str, list[str]] = {}
    for line in lines:
        sink, _, text = line.partition("> ")
        sinks.setdefault(sink, []).append(text)
    return sinks


# -- order and timestamps (recorded on PyFlink 2.3) ---------------------------------------------


def recorded_job(env):
    env.set_parallelism(1)
    ds = env.from_collection([5, 1, 4, 2, 3], Types.INT())
    AsyncDataStream.ordered_wait(ds, Slow(), Time.seconds(10), 10, Types.STRING()).print("ord")
    AsyncDataStream.unordered_wait(ds, Slow(), Time.seconds(10), 10, Types.STRING()).print("unord")
    timed = ds.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ValueTimestamps(1000)))
    AsyncDataStream.ordered_wait(timed, Late(), Time.seconds(1), 10, Types.STRING()) \
        .process(ShowTimestamp(), Types.STRING()).print("ts")
    env.execute("async oracle a")


#: recorded on PyFlink 2.3 (see the module docstring); per sink, in order
PYFLINK_RECORDED = {
    "ord": ["5:a", "5:b", "1:a", "1:b", "4:a", "4:b", "2:a", "2:b", "3:a", "3:b"],
    "unord": ["1:a", "1:b", "2:a", "2:b", "3:a", "3:b", "4:a", "4:b", "5:a", "5:b"],
    "ts": ["5:ok@5000", "1:ok@1000", "4:timeout@4000", "2:ok@2000", "3:ok@3000"],
}


def test_ordered_and_unordered_results_as_pyflink_prints_them():
    job = run_job(recorded_job)
    assert job.outcome.status == "FINISHED"
    assert per_sink(job.lines) == PYFLINK_RECORDED


def test_ordered_results_wait_for_their_predecessors_unordered_ones_leave_when_done():
    job = run_job(recorded_job)
    lines = [(ms, line) for ms, line in printed(job) if not line.startswith("ts>")]
    # unordered: each input's results when its coroutine completes (value * 300 ms); ordered:
    # 5 (1500 ms) is first, so everything leaves at 1500 ms, in input order
    assert [entry for entry in lines if entry[1].startswith("unord")] == [
        (300.0, "unord> 1:a"), (300.0, "unord> 1:b"), (600.0, "unord> 2:a"), (600.0, "unord> 2:b"),
        (900.0, "unord> 3:a"), (900.0, "unord> 3:b"), (1200.0, "unord> 4:a"), (1200.0, "unord> 4:b"),
        (1500.0, "unord> 5:a"), (1500.0, "unord> 5:b"),
    ]
    assert [entry for entry in lines if entry[1].startswith("ord")] == [
        (1500.0, f"ord> {v}:{s}") for v in (5, 1, 4, 2, 3) for s in "ab"]


# -- unordered results never cross a watermark --------------------------------------------------

DURATIONS = [0.5, 0.1, 0.05, 0.6, 0.05, 0.35, 0.3, 0.01]


class Sleepy(AsyncFunction[int, int]):
    async def async_invoke(self, value: int) -> list[int]:
        await asyncio.sleep(DURATIONS[value])
        return [value]


class ShowWatermark(ProcessFunction):
    def process_element(self, value, ctx):
        yield f"{value} ts={ctx.timestamp()} wm={ctx.timer_service().current_watermark()}"


def watermarked_job(strategy):
    def build(env):
        env.set_parallelism(1)
        source = DataGeneratorSource(lambda i: i, count=8, records_per_second=10, type_info=Types.INT())
        ds = env.from_source(source, strategy, "Gen")
        AsyncDataStream.unordered_wait(ds, Sleepy(), Time.seconds(10), 10, Types.INT()) \
            .process(ShowWatermark(), Types.STRING()).print()
        env.execute("unordered")

    return build


def test_unordered_results_are_in_completion_order_without_watermarks():
    job = run_job(watermarked_job(WatermarkStrategy.no_watermarks()))
    # input i is read at i * 100 ms and completes DURATIONS[i] later
    assert [(ms, line.split()[0]) for ms, line in printed(job)] == [
        (200.0, "1"), (250.0, "2"), (450.0, "4"), (500.0, "0"), (710.0, "7"), (850.0, "5"), (900.0, "3"),
        (900.0, "6")]


def test_unordered_results_never_cross_a_watermark():
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ValueTimestamps(100))
    job = run_job(watermarked_job(strategy))
    # periodic watermarks (every 200 ms: the largest timestamp so far - 1) split the inputs into
    # segments [0, 1] | 99 | [2, 3] | 299 | [4, 5] | 499 | [6, 7]: inside a segment completion
    # order, the segments one after the other, each watermark after its segment's results
    assert printed(job) == [
        (200.0, "1 ts=100 wm=-9223372036854775808"),
        (500.0, "0 ts=0 wm=-9223372036854775808"),
        (500.0, "2 ts=200 wm=99"),  # done at 250 ms, waited for 0 and the watermark 99
        (900.0, "3 ts=300 wm=99"),
        (900.0, "4 ts=400 wm=299"),  # done at 450 ms, after 3: no result crosses the watermark 299
        (900.0, "5 ts=500 wm=299"),
        (900.0, "7 ts=700 wm=499"),  # 7 (710 ms) before 6 (900 ms): completion order in a segment
        (900.0, "6 ts=600 wm=499"),
    ]


def test_the_queues_let_completed_entries_leave_in_their_order():
    def drain(queue):
        out = []
        while (entry := queue.pop_completed()) is not None:
            out.append(entry.value if isinstance(entry, RecordEntry) else f"W{entry.timestamp}")
        return out

    def complete(queue, *entries):
        for entry in entries:
            entry.results = []
            queue.completed(entry)

    for queue in (OrderedStreamElementQueue(), UnorderedStreamElementQueue()):
        a, b, c, d = (RecordEntry(name, None) for name in "abcd")
        queue.put_record(a)
        queue.put_watermark(10)
        queue.put_watermark(20)  # two watermarks in a row: segments of their own
        queue.put_record(b)
        queue.put_record(c)
        complete(queue, c)
        assert drain(queue) == [] and queue.records == 3  # a still runs
        complete(queue, a)
        queue.put_watermark(30)
        queue.put_record(d)
        complete(queue, d)
        if isinstance(queue, OrderedStreamElementQueue):
            assert drain(queue) == ["a", "W10", "W20"]  # c waits for b
        else:
            assert drain(queue) == ["a", "W10", "W20", "c"]  # d waits behind the watermark 30
        complete(queue, b)
        assert drain(queue) == (["b", "c", "W30", "d"] if isinstance(queue, OrderedStreamElementQueue)
                                else ["b", "W30", "d"])
        assert queue.records == 0 and queue.is_empty()


# -- timeouts -----------------------------------------------------------------------------------


class NeverInTime(AsyncFunction[int, str]):
    async def async_invoke(self, value: int) -> list[str]:
        await asyncio.sleep(5 if value == 2 else 0.1 * value)
        return [str(value)]


def test_a_timeout_fails_the_task_by_default_after_what_completed():
    def build(env):
        env.set_parallelism(1)
        ds = env.from_collection([1, 2, 3], Types.INT())
        AsyncDataStream.ordered_wait(ds, NeverInTime(), Time.seconds(1)).print()
        env.execute("timeout")

    job = run_job(build)
    assert job.outcome.status == "FAILED"
    # 2 timed out at 1 s: it completes with no results, 3 (done at 300 ms) follows, and the
    # error fails the task when the operator finishes its requests
    assert job.lines == ["1", "3"]
    assert job.outcome.clock_seconds == 1.0
    assert job.outcome.failure.splitlines()[0] == (
        "async wait operator -> Sink: Print to Std. Out (1/1) failed in operator 'async wait operator': "
        f"Exception: (\"Error happens inside the class '<class '{__name__}.NeverInTime'>' during handling "
        "input '2'\", TimeoutError('Async function call has timed out for input: 2'))")


def test_an_overridden_timeout_emits_its_results_with_the_inputs_timestamp():
    job = run_job(recorded_job)
    assert [(ms, line) for ms, line in printed(job) if line.startswith("ts>")] == [
        (10.0, "ts> 5:ok@5000"), (10.0, "ts> 1:ok@1000"),
        (1000.0, "ts> 4:timeout@4000"), (1000.0, "ts> 2:ok@2000"), (1000.0, "ts> 3:ok@3000")]


# -- results that fail the task ----------------------------------------------------------------


class Returns(AsyncFunction[int, str]):
    def __init__(self, result):
        self.result = result

    async def async_invoke(self, value: int):
        return self.result


class RaisesOnTwo(AsyncFunction[int, str]):
    async def async_invoke(self, value: int) -> list[str]:
        await asyncio.sleep(5 if value == 3 else 0.1 * value)
        if value == 2:
            raise ValueError("no 2")
        return [str(value)]


def one_input_job(function, values=(1, 2)):
    def build(env):
        env.set_parallelism(1)
        AsyncDataStream.ordered_wait(env.from_collection(list(values), Types.INT()), function, Time.seconds(10)).print()
        env.execute("failing")

    return build


def failure(job) -> str:
    assert job.outcome.status == "FAILED"
    return job.outcome.failure.splitlines()[0].partition("failed in operator 'async wait operator': ")[2]


def test_a_result_that_is_not_a_list_fails_the_task_with_pyflinks_message():
    # recorded on PyFlink 2.3: RuntimeError: The result of AsyncFunction should be of list type, ...
    job = run_job(one_input_job(Returns(5)))
    assert failure(job) == ("RuntimeError: The result of AsyncFunction should be of list type, please check the "
                            f"methods 'async_invoke' and 'timeout' of class '<class '{__name__}.Returns'>'.")
    assert job.lines == []
    none = run_job(one_input_job(Returns(None)))
    assert failure(none) == ("RuntimeError: The result of AsyncFunction cannot be none, please check the methods "
                             f"'async_invoke' and 'timeout' of class '<class '{__name__}.Returns'>'.")


def test_any_iterable_result_is_emitted_element_by_element_as_in_pyflink():
    # recorded on PyFlink 2.3: a coroutine returning "s1" prints "s" and "1"
    job = run_job(one_input_job(Returns("ab")))
    assert job.outcome.status == "FINISHED"
    assert job.lines == ["a", "b", "a", "b"]


def test_an_exception_fails_the_task_one_bundle_time_after_it_at_the_latest():
    job = run_job(one_input_job(RaisesOnTwo(), (1, 2, 3)))
    assert failure(job) == (f"Exception: (\"Error happens inside the class '<class '{__name__}.RaisesOnTwo'>' "
                            "during handling input '2'\", ValueError('no 2'))")
    # 2 raised at 200 ms; no input or end follows before 3 (5 s): PyFlink's bundle time (1 s) ends it
    assert job.outcome.clock_seconds == 1.2
    assert job.lines == ["1"]
    assert "ValueError: no 2" in job.outcome.failure  # the cause's traceback is recorded too


# -- retries ------------------------------------------------------------------------------------


class Attempts(AsyncFunction[int, str]):
    """Returns the simulated times (ms) of all attempts of an input so far."""

    def __init__(self, duration: float = 0.0):
        self.duration = duration

    def open(self, ctx):
        self.calls: dict[int, list[int]] = {}

    async def async_invoke(self, value: int) -> list[str]:
        calls = self.calls.setdefault(value, [])
        calls.append(round(asyncio.get_running_loop().time() * 1000))
        await asyncio.sleep(self.duration)
        return [f"{value} attempts at {calls}"]


def retry_job(function, strategy, values=(1,), timeout=None, ordered=True):
    def build(env):
        env.set_parallelism(1)
        ds = env.from_collection(list(values), Types.INT())
        wait = AsyncDataStream.ordered_wait_with_retry if ordered else AsyncDataStream.unordered_wait_with_retry
        wait(ds, function, timeout or Time.seconds(20), strategy, 10, Types.STRING()).print()
        env.execute("retries")

    return build


def test_fixed_delay_makes_max_attempts_retries_after_a_constant_delay():
    # recorded on PyFlink 2.3: fixed_delay(3, 100, always retry) calls async_invoke 4 times
    strategy = AsyncRetryStrategy.fixed_delay(3, 200, lambda result: True, None)
    job = run_job(retry_job(Attempts(duration=0.1), strategy))
    # each attempt takes 100 ms, then 200 ms of backoff: attempts at 0, 300, 600, 900 ms
    assert job.lines == ["1 attempts at [0, 300, 600, 900]"]
    assert job.outcome.clock_seconds == 1.0


def test_exponential_backoff_grows_the_delay_up_to_its_maximum():
    # recorded on PyFlink 2.3: exponential_backoff(2, ...) calls async_invoke 3 times
    strategy = AsyncRetryStrategy.exponential_backoff(4, 100, 500, 3.0, lambda result: True, None)
    job = run_job(retry_job(Attempts(), strategy))
    # delays 100, min(300, 500), min(900, 500), min(1500, 500)
    assert job.lines == ["1 attempts at [0, 100, 400, 900, 1400]"]


def test_exponential_backoff_keeps_its_last_delay_on_the_strategy_as_pyflink_does():
    # PyFlink's strategy remembers the last delay on itself, not per input: two inputs failing
    # together at 100 ms get 100 * 3 = 300 (1) and then 300 * 3 = 900 (2) as their next delays
    strategy = AsyncRetryStrategy.exponential_backoff(2, 100, 1000, 3.0, lambda result: True, None)
    job = run_job(retry_job(Attempts(), strategy, values=(1, 2)))
    assert job.lines == ["1 attempts at [0, 100, 400]", "2 attempts at [0, 100, 1000]"]


class FailsTwice(AsyncFunction[int, str]):
    def __init__(self, error: type[Exception]):
        self.error = error

    def open(self, ctx):
        self.calls: dict[int, int] = {}

    async def async_invoke(self, value: int) -> list[str]:
        n = self.calls[value] = self.calls.get(value, 0) + 1
        if n <= 2:
            raise self.error(f"boom {value} {n}")
        return [f"{value} ok after {n}"]


def test_the_exception_predicate_retries_matching_exceptions_only():
    # recorded on PyFlink 2.3: "1 ok after 3", "2 ok after 3" (unordered, exception_type_predicate)
    strategy = AsyncRetryStrategy.fixed_delay(5, 50, None, lambda e: predicates.exception_type_predicate(e, ValueError))
    job = run_job(retry_job(FailsTwice(ValueError), strategy, values=(1, 2), ordered=False))
    assert job.lines == ["1 ok after 3", "2 ok after 3"]
    other = run_job(retry_job(FailsTwice(TypeError), strategy, values=(1, 2), ordered=False))
    # both fail at once without a retry; the task fails with the latest error, as PyFlink keeps it
    assert failure(other).endswith("during handling input '2'\", TypeError('boom 2 1'))")


class EmptyUntil(AsyncFunction[int, str]):
    """Returns [] until the value-th attempt; its timeout reports the attempts made."""

    def open(self, ctx):
        self.calls: dict[int, int] = {}

    async def async_invoke(self, value: int) -> list[str]:
        n = self.calls[value] = self.calls.get(value, 0) + 1
        return [] if n < value else [f"{value} after {n}"]

    def timeout(self, value: int) -> list[str]:
        return [f"{value} timed out after {self.calls[value]}"]

    def close(self):
        print(f"calls {self.calls}")


def test_the_result_predicate_retries_and_a_timeout_cancels_a_pending_retry():
    # recorded on PyFlink 2.3: "1 after 1", "2 after 2", "5 timed out after 3"
    strategy = AsyncRetryStrategy.fixed_delay(10, 800, predicates.empty_result_predicate, None)
    job = run_job(retry_job(EmptyUntil(), strategy, values=(1, 2, 5), timeout=Time.seconds(2)))
    # 5 is attempted at 0, 800 and 1600 ms; its timeout (2 s) comes while the retry of 2400 ms
    # is pending: that retry never happens
    assert job.lines == ["1 after 1", "2 after 2", "5 timed out after 3", "calls {1: 1, 2: 2, 5: 3}"]
    assert job.outcome.clock_seconds == 2.0


def test_no_retry_after_the_timeout_has_passed_since_the_first_attempt():
    class SlowEmpty(AsyncFunction[int, str]):
        def open(self, ctx):
            self.attempts = 0

        async def async_invoke(self, value: int) -> list[str]:
            self.attempts += 1
            await asyncio.sleep(0.6)
            return [] if self.attempts < 3 else ["late"]

        def timeout(self, value: int) -> list[str]:
            return [f"timeout after {self.attempts} attempts"]

    strategy = AsyncRetryStrategy.fixed_delay(5, 100, predicates.empty_result_predicate, None)
    job = run_job(retry_job(SlowEmpty(), strategy, timeout=Time.seconds(1)))
    # attempt 1 ends at 600 ms (retry at 700), attempt 2 is under way when the timeout fires at 1 s
    assert job.lines == ["timeout after 2 attempts"]


def test_retry_strategies_and_predicates_are_pyflinks():
    fixed = async_retry_strategies.FixedDelayRetryStrategy(2, 10, None, None)
    assert [fixed.can_retry(n) for n in (1, 2, 3)] == [True, True, False]
    assert fixed.get_backoff_time_millis(7) == 10
    assert async_retry_strategies.NO_RETRY_STRATEGY.can_retry(1) is False
    assert AsyncRetryStrategy.no_restart() is async_retry_strategies.NO_RETRY_STRATEGY
    assert predicates.empty_result_predicate([]) and predicates.empty_result_predicate(None)
    assert not predicates.empty_result_predicate([0])
    assert predicates.has_exception_predicate(ValueError()) and not predicates.has_exception_predicate(None)
    with pytest.raises(AssertionError, match="max_attempts should be greater than zero."):
        AsyncRetryStrategy.fixed_delay(0, 10, None, None)
    with pytest.raises(AssertionError, match="multiplier should be greater than zero."):
        AsyncRetryStrategy.exponential_backoff(1, 10, 10, 0, None, None)


# -- checks at definition (PyFlink's messages) -------------------------------------------------


class NotACoroutine(AsyncFunction[int, int]):
    def async_invoke(self, value):  # forgot "async"
        return [value]


class Fine(AsyncFunction[int, int]):
    async def async_invoke(self, value):
        return [value]


def define(check, configuration=None):
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    check(env.from_collection([1], Types.INT()))


def test_definition_checks_raise_pyflinks_errors():
    with pytest.raises(Exception, match=rf"^Method 'async_invoke' of class '<class '{__name__}.NotACoroutine'>' "
                                        r"should be declared as 'async def'.$"):
        define(lambda ds: AsyncDataStream.ordered_wait(ds, NotACoroutine(), Time.seconds(1)))
    with pytest.raises(Exception, match="^Async retry strategy should not be None.$"):
        define(lambda ds: AsyncDataStream.unordered_wait_with_retry(ds, Fine(), Time.seconds(1), None))
    fixed = AsyncRetryStrategy.fixed_delay(1, 10, None, None)
    with pytest.raises(Exception, match="^Timeout should be configured when do async with retry.$"):
        define(lambda ds: AsyncDataStream.ordered_wait_with_retry(ds, Fine(), Time.seconds(0), fixed))

    class NoPredicate(async_retry_strategies.NoRetryStrategy):
        def get_retry_predicate(self):
            return None

    with pytest.raises(Exception,
                       match=r"^Retry predicate of the async retry strategy '<class '.*NoPredicate'>' is None.$"):
        define(lambda ds: AsyncDataStream.ordered_wait_with_retry(ds, Fine(), Time.seconds(1), NoPredicate()))
    thread = Configuration()
    thread.set_string("python.execution-mode", "thread")
    with pytest.raises(Exception, match="^AsyncFunction is still not supported for 'thread' mode.$"):
        define(lambda ds: AsyncDataStream.ordered_wait(ds, Fine(), Time.seconds(1)), thread)
    with pytest.raises(ValueError, match="^The number of concurrent async operation should be greater than 0.$"):
        define(lambda ds: AsyncDataStream.ordered_wait(ds, Fine(), Time.seconds(1), 0))


# -- capacity: back pressure --------------------------------------------------------------------


class OneSecond(AsyncFunction[int, int]):
    def open(self, ctx):
        self.in_flight = self.most = 0

    async def async_invoke(self, value: int) -> list[int]:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(1)
        self.in_flight -= 1
        return [self.most]


def capacity_job(capacity: int):
    def build(env):
        env.set_parallelism(1)
        source = DataGeneratorSource(lambda i: i, count=20, type_info=Types.LONG())
        ds = env.from_source(source, WatermarkStrategy.no_watermarks(), "Numbers")
        AsyncDataStream.unordered_wait(ds, OneSecond(), Time.seconds(10), capacity, Types.INT()).print()
        env.execute("capacity")

    return build


def test_a_full_queue_back_pressures_the_task():
    job = run_job(capacity_job(2))
    assert job.outcome.clock_seconds == 10.0  # 20 requests of 1 s, 2 at a time
    assert set(job.lines) == {"2"}  # never more than 2 in flight
    samples = [e for e in job.events(TaskMetricsSampled) if not e.final]
    vertex = "Source: Numbers -> async wait operator -> Sink: Print to Std. Out"
    assert [s.vertex_name for s in samples] == [vertex] * 10
    # waiting for room in the queue is back pressure; the last second the task finishes its
    # last two requests (busy, as Flink counts waiting in endInput)
    assert [(s.idle_ms, s.busy_ms, s.back_pressured_ms) for s in samples] == [(0.0, 0.0, 1000.0)] * 9 + [
        (0.0, 1000.0, 0.0)]
    assert job.outcome.vertices[0].level == "HIGH"


def test_with_room_for_every_request_nothing_waits():
    job = run_job(capacity_job(100))
    assert job.outcome.clock_seconds == 1.0 and set(job.lines) == {"20"}
    samples = [e for e in job.events(TaskMetricsSampled) if not e.final]
    assert [(s.idle_ms, s.busy_ms, s.back_pressured_ms) for s in samples] == [(0.0, 1000.0, 0.0)]


def test_rill_metrics_shows_the_back_pressure_of_a_full_queue(cli, tmp_path):
    job = tmp_path / "capacity.py"
    job.write_text(
        "import asyncio\n"
        "from kernel.common import Time, Types, WatermarkStrategy\n"
        "from kernel.datastream import AsyncDataStream, StreamExecutionEnvironment\n"
        "from kernel.datastream.connectors.datagen import DataGeneratorSource\n"
        "from kernel.datastream.functions import AsyncFunction\n"
        "class OneSecond(AsyncFunction):\n"
        "    async def async_invoke(self, value):\n"
        "        await asyncio.sleep(1)\n"
        "        return [value]\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.set_parallelism(1)\n"
        "ds = env.from_source(DataGeneratorSource(lambda i: i, count=20, type_info=Types.LONG()),\n"
        "                     WatermarkStrategy.no_watermarks(), 'Gen')\n"
        "AsyncDataStream.unordered_wait(ds, OneSecond(), Time.seconds(10), 2, Types.LONG()).add_sink(lambda v: None)\n"
        "env.execute('capacity')\n")
    code, _, err = cli("run", "--clock", "simulated", str(job))
    assert code == 0, err
    code, out, err = cli("metrics", "last", "--json")
    assert code == 0, err
    (vertex,) = json.loads(out)["vertices"]
    # 9 of the task's 10 s (it starts 100 ms into the run) waiting for room in the queue
    assert vertex["vertex"] == "Source: Gen -> async wait operator -> Sink: Unnamed"
    assert vertex["level"] == "HIGH"
    assert math.isclose(vertex["back_pressured_pct"] + vertex["busy_pct"] + vertex["idle_pct"], 100.0)
    assert vertex["back_pressured_pct"] == 90.0


# -- chaining -----------------------------------------------------------------------------------


def test_the_async_operator_is_not_chained_after_a_legacy_source():
    # Flink's StreamingJobGraphGenerator: a yielding operator is not chained into a chain whose
    # head is a legacy source (from_collection), also after operators chained to it; it chains
    # after a FLIP-27 source and after any other head. (Real PyFlink 2.3 runs its async
    # operator as a plain Python operator, which is not yielding, and prints the job graph
    # "Source: Collection Source -> (async wait operator -> Sink: Print to Std. Out, ...)".)
    def build(env):
        env.set_parallelism(1)
        collection = env.from_collection([1, 2], Types.INT())
        AsyncDataStream.ordered_wait(collection, Fine(), Time.seconds(1)).print()
        AsyncDataStream.ordered_wait(collection.map(lambda x: x).name("M1"), Fine(), Time.seconds(1)).print()
        rebalanced = collection.rebalance().map(lambda x: x).name("M2")
        AsyncDataStream.ordered_wait(rebalanced, Fine(), Time.seconds(1)).print()
        generated = env.from_source(DataGeneratorSource(lambda i: i, count=2), WatermarkStrategy.no_watermarks(), "Gen")
        AsyncDataStream.unordered_wait(generated, Fine(), Time.seconds(1)).print()
        env.execute("chaining")

    compiled = compile_job(build)
    assert sorted(vertex_names(compiled)) == [
        "M2 -> async wait operator -> Sink: Print to Std. Out",
        "Source: Collection Source -> M1",
        "Source: Gen -> async wait operator -> Sink: Print to Std. Out",
        "async wait operator -> Sink: Print to Std. Out",
        "async wait operator -> Sink: Print to Std. Out",
    ]
    heads = {v.name: v.invokable for v in compiled.job_graph.vertices}
    assert heads["Source: Gen -> async wait operator -> Sink: Print to Std. Out"] == "SourceOperatorStreamTask"


def test_the_operator_is_named_as_pyflink_names_it():
    # recorded on PyFlink 2.3: get_execution_plan() shows "async wait operator"
    def build(env):
        AsyncDataStream.unordered_wait(env.from_collection([1], Types.INT()), Fine(), Time.seconds(1)).print()
        env.execute()

    compiled = compile_job(build)
    assert [n.name for n in compiled.stream_graph.nodes.values()] == [
        "Source: Collection Source", "async wait operator", "Sink: Print to Std. Out"]


# -- determinism, realtime, the chain's drain entry point --------------------------------------


def test_re_execution_of_an_async_job_is_identical(cli, tmp_path):
    job = tmp_path / "retrying.py"
    job.write_text(
        "import asyncio\n"
        "from kernel.common import Time, Types\n"
        "from kernel.datastream import AsyncDataStream, AsyncRetryStrategy, StreamExecutionEnvironment\n"
        "from kernel.datastream.functions import AsyncFunction\n"
        "class Flaky(AsyncFunction):\n"
        "    def open(self, ctx):\n"
        "        self.calls = {}\n"
        "    async def async_invoke(self, value):\n"
        "        n = self.calls[value] = self.calls.get(value, 0) + 1\n"
        "        await asyncio.sleep(0.1 * (value % 4))\n"
        "        return [] if n < value % 3 else [value]\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.set_parallelism(2)\n"
        "retry = AsyncRetryStrategy.exponential_backoff(3, 50, 400, 2.0, lambda r: not r, None)\n"
        "ds = env.from_collection(list(range(40)), Types.INT()).rebalance()\n"
        "AsyncDataStream.unordered_wait_with_retry(ds, Flaky(), Time.seconds(1), retry, 3).print()\n"
        "env.execute('retrying')\n")
    code, _, err = cli("run", "--clock", "simulated", str(job))
    assert code == 0, err
    code, out, err = cli("replay", "last", "--rerun")
    assert code == 0, err
    assert "identical sequence" in out


def test_many_requests_are_in_flight_at_once_in_realtime():
    class Tracking(AsyncFunction[int, int]):
        def open(self, ctx):
            self.in_flight = self.most = 0

        async def async_invoke(self, value: int) -> list[tuple[int, int]]:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            await asyncio.sleep(0.2)  # real time: the task goes on meanwhile
            self.in_flight -= 1
            return [(value, self.most)]

    def build(env):
        env.set_parallelism(1)
        ds = env.from_collection(list(range(30)), Types.INT())
        AsyncDataStream.ordered_wait(ds, Tracking(), Time.seconds(60), 10).print()
        env.execute("realtime")

    job = run_job(build, "rill.clock=realtime")
    assert job.outcome.status == "FINISHED"
    results = [eval(line) for line in job.lines]
    assert [value for value, _ in results] == list(range(30))
    assert max(most for _, most in results) == 10  # the capacity, reached: ten real sleeps at once


def test_a_chain_drains_its_requests_in_flight():
    """``OperatorChain.drain``, the entry point a checkpoint barrier uses (PyFlink finishes its
    bundle before every barrier), here with a backend that runs the coroutines in place."""
    class Executing(PlainRuntime):
        def create_async_executor(self, operator_name):
            return BlockingAsyncExecutor(self.now_ms)

    class Quick(AsyncFunction[int, int]):
        async def async_invoke(self, value):
            await asyncio.sleep(0.02 * (5 - value))  # real time: 80, 60, 40, 20 ms
            return [value * 10]

    def build(env):
        ds = env.from_collection([1], Types.INT()).map(lambda x: x).name("M").start_new_chain()
        AsyncDataStream.unordered_wait(ds, Quick(), Time.seconds(5), 2).map(lambda x: x + 1).key_by(lambda x: x).print()
        env.execute()

    compiled = compile_job(build)
    vertex = next(v for v in compiled.job_graph.vertices if v.name.startswith("M"))
    out = ListOutput()
    chain = OperatorChain(vertex, compiled.stream_graph, Executing(), lambda edge: out)
    chain.open()
    chain.head.process_batch([1, 2, 3, 4], [10, 20, 30, 40])  # capacity 2: waits for room twice
    chain.head.process_watermark(25)
    drained = []
    assert chain.drain(lambda: drained.append(True)) is True and drained == []
    assert sorted(out.values) == [11, 21, 31, 41] and out.watermarks == [25]
    assert out.values[:2] == [21, 11]  # the first two in completion order
    chain.finish()
    chain.close()


class DeferringExecutor(AsyncExecutor):
    """The contract as the local runtime fulfils it, on a kernel event loop of the test's own:
    coroutines on a simulated asyncio loop, callbacks later (never inside ``submit`` or ``when``)."""

    def __init__(self, kernel: EventLoop) -> None:
        self.kernel = kernel
        self.loop = SimulatedAsyncioLoop(kernel)
        self.waiting: list = []

    def now_ms(self):
        return self.kernel.clock.now_ms()

    def submit(self, invocation, completion):
        async def run():
            result, error = await attempt(invocation)
            self.kernel.call_soon(self._run, lambda: completion(result, error))

        self.loop.create_task(run())

    def call_later(self, delay_ms, callback):
        return self.kernel.call_later(delay_ms * 1_000_000, self._run, callback)

    def _run(self, callback):
        callback()
        ready = [wait for wait in self.waiting if wait[0]()]
        self.waiting = [wait for wait in self.waiting if wait not in ready]
        for _, then in ready:
            then()

    def yield_until(self, condition):
        raise AssertionError("the capacity (100) is never used up here")

    def when(self, condition, then):
        if condition():
            return True
        self.waiting.append((condition, then))
        return False

    def close(self):
        self.loop.close()


def test_a_chain_drains_async_operators_one_after_the_other():
    """Two async operators in one chain: the second's requests start when the first's complete;
    ``drain`` reports once both have finished (what a checkpoint barrier waits for)."""
    kernel = EventLoop(SimulatedClock())
    executors = []

    class Deferring(PlainRuntime):
        def now_ms(self):
            return kernel.clock.now_ms()

        def create_async_executor(self, operator_name):
            executors.append(DeferringExecutor(kernel))
            return executors[-1]

    class Tenfold(AsyncFunction[int, int]):
        async def async_invoke(self, value):
            await asyncio.sleep(value)
            return [value * 10]

    def build(env):
        ds = env.from_collection([1], Types.INT()).map(lambda x: x).name("M").start_new_chain()
        first = AsyncDataStream.ordered_wait(ds, Tenfold(), Time.seconds(100))
        AsyncDataStream.unordered_wait(first.map(lambda x: x // 10), Tenfold(), Time.seconds(100)) \
            .key_by(lambda x: x).print()
        env.execute()

    compiled = compile_job(build)
    vertex = next(v for v in compiled.job_graph.vertices if v.name.startswith("M"))
    assert vertex.name == "M -> async wait operator -> Map -> async wait operator"
    out = ListOutput()
    chain = OperatorChain(vertex, compiled.stream_graph, Deferring(), lambda edge: out)
    chain.open()
    chain.head.process_batch([3, 1, 2], None)
    drained = []
    assert chain.drain(lambda: drained.append(kernel.clock.now_ms())) is False
    kernel.run()
    # the first operator's results (ordered) leave at 3 s; each then takes its value again
    assert drained == [6000] and out.values == [10, 20, 30]
    assert chain.drain(lambda: None) is True
    chain.finish()
    chain.close()
