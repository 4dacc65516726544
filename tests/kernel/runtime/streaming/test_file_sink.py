"""FileSink: part files, rolling, buckets and the two-phase commit with checkpoints.

The first half drives the sink operator as a task does (records, ``prepare_snapshot_pre_barrier``,
``snapshot_state``, ``notify_checkpoint_complete``, restore through the checkpoint format) on a
manual clock; the second half runs jobs with checkpoints and failures on the local runtime and
reads what became visible.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest

from kernel.runtime.checkpointing.format import StateHandle
from kernel.runtime.checkpointing.snapshots import OperatorSnapshot, RestoredOperatorState
from kernel.common import Encoder, Types, WatermarkStrategy
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.connectors.file_system import BucketAssigner, FileSink, OutputFileConfig, RollingPolicy
from kernel.runtime.streaming import file_sink
from kernel.runtime.streaming.operators.factory import create_operator
from kernel.runtime.streaming.runtime import OperatorRuntime, TaskInfo
from plugins.checkpointing.events import CheckpointCompleted, CheckpointStateRestored, CheckpointTriggered
from tests.graphs import compile_job
from tests.runtime import run_job

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


class ManualRuntime(OperatorRuntime):
    """A task's runtime with a clock the test moves; scheduled callbacks run when it passes them."""

    def __init__(self, subtask: int = 0, attempt: int = 0, checkpointing: bool = True) -> None:
        super().__init__(TaskInfo("Sink: Writer", subtask, 2, 128, attempt, vertex_id="sink"), random.Random)
        self.checkpointing = checkpointing
        self.now = 0
        self.timers: list[tuple[int, object]] = []

    def now_ms(self) -> int:
        return self.now

    def schedule(self, when_ms, callback):
        self.timers.append((when_ms, callback))

    def advance(self, to: int) -> None:
        while True:
            due = sorted((t for t in self.timers if t[0] <= to), key=lambda t: t[0])
            if not due:
                break
            self.timers.remove(due[0])
            self.now = due[0][0]
            due[0][1]()
        self.now = to


def sink_operator(sink: FileSink, runtime: ManualRuntime):
    def build(env):
        env.from_collection(["a"], Types.STRING()).sink_to(sink)
        env.execute()

    graph = compile_job(build).stream_graph
    [node] = [n for n in graph.nodes.values() if n.name == "Sink: Writer"]
    operator = create_operator(node, runtime)
    operator.open()
    return operator


def checkpoint(operator, checkpoint_id: int) -> StateHandle:
    """The sink's part of checkpoint ``checkpoint_id``: pre-barrier, then its state as bytes."""
    operator.prepare_snapshot_pre_barrier(checkpoint_id)
    snapshot = OperatorSnapshot(None)
    operator.snapshot_state(snapshot)
    data, key_groups, operator_state, _ = snapshot.encode()
    return StateHandle(data=data, size=len(data), key_groups=key_groups, operator_state=operator_state)


def restore(operator, *handles: StateHandle) -> None:
    restored = RestoredOperatorState.read(list(enumerate(handles)), None, (0, 63), 0, 1, len(handles))
    operator.initialize_state(restored)


def row_sink(path: Path, policy: RollingPolicy | None = None, **kwargs) -> FileSink:
    builder = FileSink.for_row_format(str(path), Encoder.simple_string_encoder()) \
        .with_bucket_assigner(kwargs.pop("assigner", BucketAssigner.base_path_bucket_assigner()))
    if policy is not None:
        builder = builder.with_rolling_policy(policy)
    for name, value in kwargs.items():
        builder = getattr(builder, f"with_{name}")(value)
    return builder.build()


def visible(directory: Path) -> dict[str, list[str]]:
    """The finished part files (not hidden) and their lines."""
    return {p.name: p.read_text().splitlines() for p in sorted(directory.iterdir())
            if p.is_file() and not p.name.startswith(".")}


def hidden(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def uuid_of(name: str) -> str:
    return re.fullmatch(rf"part-({UUID})-\d+", name).group(1)


# -- the two phases -------------------------------------------------------------------------------


def test_parts_become_visible_only_when_the_checkpoint_covering_them_completes(tmp_path):
    operator = sink_operator(row_sink(tmp_path, RollingPolicy.on_checkpoint_rolling_policy()), ManualRuntime())
    operator.process_batch(["a", "b"], None)
    [in_progress] = hidden(tmp_path)
    assert re.fullmatch(rf"\.part-{UUID}-0\.inprogress\.{UUID}", in_progress)
    assert visible(tmp_path) == {}
    checkpoint(operator, 1)  # closed: pending, still hidden
    assert visible(tmp_path) == {} and hidden(tmp_path) == [in_progress]
    operator.notify_checkpoint_complete(1)
    [name] = visible(tmp_path)
    unique = uuid_of(name)
    assert visible(tmp_path) == {f"part-{unique}-0": ["a", "b"]} and hidden(tmp_path) == []

    operator.process_batch(["c"], None)
    checkpoint(operator, 2)  # checkpoint 2 will not complete
    operator.process_batch(["d"], None)
    checkpoint(operator, 3)
    operator.process_batch(["e"], None)
    assert visible(tmp_path) == {f"part-{unique}-0": ["a", "b"]}
    operator.notify_checkpoint_complete(3)  # commits what checkpoints 2 and 3 prepared
    assert visible(tmp_path) == {f"part-{unique}-0": ["a", "b"], f"part-{unique}-1": ["c"],
                                 f"part-{unique}-2": ["d"]}
    assert len(hidden(tmp_path)) == 1  # "e", in progress


def test_without_checkpoints_parts_are_committed_at_the_end_of_input(tmp_path):
    runtime = ManualRuntime(checkpointing=False)
    operator = sink_operator(row_sink(tmp_path, RollingPolicy.default_rolling_policy(part_size=4)), runtime)
    operator.process_batch(["aa", "bb", "cc"], None)  # 3 bytes a line: "cc" finds the part at 6 > 4
    assert visible(tmp_path) == {} and len(hidden(tmp_path)) == 2
    operator.end_input()
    [first, second] = visible(tmp_path)
    assert visible(tmp_path) == {first: ["aa", "bb"], second: ["cc"]} and hidden(tmp_path) == []
    assert first.endswith("-0") and second.endswith("-1") and uuid_of(first) == uuid_of(second)


def test_the_end_of_input_closes_every_part_and_the_next_checkpoint_commits_it(tmp_path):
    operator = sink_operator(row_sink(tmp_path), ManualRuntime())
    operator.process_batch(["a"], None)
    checkpoint(operator, 1)
    operator.notify_checkpoint_complete(1)
    assert visible(tmp_path) == {}  # the default policy keeps a small part open across checkpoints
    operator.process_batch(["b"], None)
    operator.end_input()
    assert visible(tmp_path) == {}
    checkpoint(operator, 2)  # the final checkpoint
    operator.notify_checkpoint_complete(2)
    [name] = visible(tmp_path)
    assert visible(tmp_path) == {name: ["a", "b"]} and name.endswith("-0") and hidden(tmp_path) == []


# -- rolling --------------------------------------------------------------------------------------


def test_the_default_policy_rolls_on_size_before_a_record_and_at_a_checkpoint(tmp_path):
    operator = sink_operator(row_sink(tmp_path, RollingPolicy.default_rolling_policy(part_size=6)), ManualRuntime())
    operator.process_batch(["aa", "bb"], None)  # 3 bytes a line
    operator.process_batch(["cc"], None)  # finds 6 bytes, not larger than the part size
    operator.process_batch(["dd"], None)  # finds 9 bytes: a new part
    checkpoint(operator, 1)  # the new part has 3 bytes: stays open
    operator.notify_checkpoint_complete(1)
    [name] = visible(tmp_path)
    unique = uuid_of(name)
    assert visible(tmp_path) == {f"part-{unique}-0": ["aa", "bb", "cc"]}
    operator.process_batch(["ee", "ff"], None)  # 9 bytes: closes at the next checkpoint
    checkpoint(operator, 2)
    operator.notify_checkpoint_complete(2)
    assert visible(tmp_path) == {f"part-{unique}-0": ["aa", "bb", "cc"], f"part-{unique}-1": ["dd", "ee", "ff"]}


def test_bucket_checks_roll_parts_open_too_long_or_inactive(tmp_path):
    runtime = ManualRuntime()
    policy = RollingPolicy.default_rolling_policy(rollover_interval=5_000, inactivity_interval=2_000)
    operator = sink_operator(row_sink(tmp_path, policy, bucket_check_interval=1_000), runtime)
    operator.process_batch(["a"], None)  # part 0 created at 0
    for now in range(500, 4_600, 500):  # written every 0.5 s: never inactive
        runtime.advance(now)
        operator.process_batch([str(now)], None)
    runtime.advance(5_000)  # the check at 5 s: part 0 has been open 5 s
    operator.process_batch(["b"], None)  # part 1 created at 5 s
    runtime.advance(7_000)  # the check at 7 s: part 1 unwritten for 2 s
    operator.process_batch(["c"], None)
    checkpoint(operator, 1)
    operator.notify_checkpoint_complete(1)
    names = sorted(visible(tmp_path), key=lambda n: int(n.rsplit("-", 1)[1]))
    assert [visible(tmp_path)[n] for n in names] == [["a"] + [str(t) for t in range(500, 4_600, 500)], ["b"]]


def test_part_names_carry_the_output_file_config(tmp_path):
    config = OutputFileConfig.builder().with_part_prefix("events").with_part_suffix(".txt").build()
    operator = sink_operator(row_sink(tmp_path, RollingPolicy.on_checkpoint_rolling_policy(),
                                      output_file_config=config), ManualRuntime())
    operator.process_batch([1, 2], None)
    checkpoint(operator, 1)
    operator.notify_checkpoint_complete(1)
    [name] = visible(tmp_path)
    assert re.fullmatch(rf"events-{UUID}-0\.txt", name)


def test_date_time_buckets_are_directories_of_processing_time(tmp_path):
    runtime = ManualRuntime()
    assigner = BucketAssigner.date_time_bucket_assigner("yyyy-MM-dd--HH", "UTC")
    operator = sink_operator(row_sink(tmp_path, RollingPolicy.on_checkpoint_rolling_policy(), assigner=assigner),
                             runtime)
    operator.process_batch(["a"], None)
    runtime.advance(3_600_000)
    operator.process_batch(["b"], None)
    checkpoint(operator, 1)
    operator.notify_checkpoint_complete(1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1970-01-01--00", "1970-01-01--01"]
    [first] = visible(tmp_path / "1970-01-01--00")
    [second] = visible(tmp_path / "1970-01-01--01")
    assert uuid_of(first) != uuid_of(second)  # a fresh uuid per bucket, counters from 0
    assert first.endswith("-0") and second.endswith("-0")


@pytest.mark.parametrize("pattern, zone, millis, bucket", [
    ("yyyy-MM-dd--HH", "GMT+08:00", 0, "1970-01-01--08"),
    ("yyyy-MM-dd--HH", "America/Los_Angeles", 0, "1969-12-31--16"),
    ("yyyy/MM/dd/'hour='HH", "UTC", 5 * 3_600_000, "1970/01/01/hour=05"),
    ("yyyyMMdd-HHmmss", "Z", 61_000, "19700101-000101"),
])
def test_date_time_bucket_ids(pattern, zone, millis, bucket):
    assert BucketAssigner.date_time_bucket_assigner(pattern, zone).bucket_id(millis) == bucket


def test_bad_date_time_patterns_and_zones_are_refused():
    with pytest.raises(ValueError, match="'EEE' is not supported"):
        BucketAssigner.date_time_bucket_assigner("yyyy EEE")
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        BucketAssigner.date_time_bucket_assigner(timezone_id="Mars/Olympus")


# -- restore --------------------------------------------------------------------------------------


def test_a_restore_commits_the_restored_committables_and_resumes_the_part_at_its_length(tmp_path):
    operator = sink_operator(row_sink(tmp_path), ManualRuntime())
    operator.process_batch(["a", "b"], None)
    state = checkpoint(operator, 1)  # the part stays open: 4 bytes in the state
    operator.process_batch(["lost"], None)  # after the checkpoint: never committed
    [old_file] = hidden(tmp_path)
    (tmp_path / old_file).write_text("a\nb\nlost\n")  # the failed attempt got this far

    restored = sink_operator(row_sink(tmp_path), ManualRuntime(attempt=1))
    restore(restored, state)
    restored.process_batch(["c"], None)
    restored.end_input()
    checkpoint(restored, 2)
    assert (tmp_path / old_file).exists()  # until checkpoint 2 completes a restore needs it
    restored.notify_checkpoint_complete(2)
    [name] = visible(tmp_path)
    assert visible(tmp_path) == {name: ["a", "b", "c"]} and hidden(tmp_path) == []
    assert re.fullmatch(rf"\.{re.escape(name)}\.inprogress\.{UUID}", old_file)  # the part kept its name


def test_a_second_failure_restores_from_the_same_checkpoint_again(tmp_path):
    first = sink_operator(row_sink(tmp_path), ManualRuntime())
    first.process_batch(["a"], None)
    state = checkpoint(first, 1)
    for attempt in (1, 2):
        again = sink_operator(row_sink(tmp_path), ManualRuntime(attempt=attempt))
        restore(again, state)
        again.process_batch([f"after {attempt}"], None)
        again.close()
    last = sink_operator(row_sink(tmp_path), ManualRuntime(attempt=3))
    restore(last, state)
    last.end_input()
    checkpoint(last, 2)
    last.notify_checkpoint_complete(2)
    [name] = visible(tmp_path)
    assert visible(tmp_path) == {name: ["a"]}


def test_restored_writers_draw_a_fresh_uuid_so_committed_parts_are_never_overwritten(tmp_path):
    policy = RollingPolicy.on_checkpoint_rolling_policy()
    operator = sink_operator(row_sink(tmp_path, policy), ManualRuntime())
    operator.process_batch(["a"], None)
    state = checkpoint(operator, 1)
    operator.notify_checkpoint_complete(1)
    restored = sink_operator(row_sink(tmp_path, policy), ManualRuntime(attempt=1))
    restore(restored, state)
    restored.process_batch(["b"], None)
    checkpoint(restored, 2)
    restored.notify_checkpoint_complete(2)
    names = sorted(visible(tmp_path))
    assert len(names) == 2 and {n.rsplit("-", 1)[1] for n in names} == {"0"}  # both counters start at 0
    assert sorted(visible(tmp_path).values()) == [["a"], ["b"]]


def test_a_uuid_already_used_in_the_bucket_is_drawn_again(tmp_path):
    first = sink_operator(row_sink(tmp_path, RollingPolicy.on_checkpoint_rolling_policy()), ManualRuntime())
    first.process_batch(["a"], None)
    checkpoint(first, 1)
    first.notify_checkpoint_complete(1)
    # the same subtask and attempt of a second run with the same seed: the same random stream
    second = sink_operator(row_sink(tmp_path, RollingPolicy.on_checkpoint_rolling_policy()), ManualRuntime())
    second.process_batch(["b"], None)
    checkpoint(second, 1)
    second.notify_checkpoint_complete(1)
    names = sorted(visible(tmp_path))
    assert len({uuid_of(n) for n in names}) == 2 and sorted(visible(tmp_path).values()) == [["a"], ["b"]]


def test_the_state_of_two_subtasks_restored_into_one_resumes_one_part_and_commits_the_other(tmp_path):
    states = []
    for subtask in (0, 1):
        operator = sink_operator(row_sink(tmp_path), ManualRuntime(subtask=subtask))
        operator.process_batch([f"from {subtask}"], None)
        states.append(checkpoint(operator, 1))
    merged = sink_operator(row_sink(tmp_path), ManualRuntime(attempt=1))
    restore(merged, *states)
    merged.process_batch(["more"], None)
    checkpoint(merged, 2)
    merged.notify_checkpoint_complete(2)  # the second part was closed on restore: pending
    assert sorted(visible(tmp_path).values()) == [["from 1"]]
    merged.end_input()
    checkpoint(merged, 3)
    merged.notify_checkpoint_complete(3)
    assert sorted(visible(tmp_path).values()) == [["from 0", "more"], ["from 1"]]


def test_a_missing_in_progress_file_fails_the_restore_clearly(tmp_path):
    operator = sink_operator(row_sink(tmp_path), ManualRuntime())
    operator.process_batch(["a"], None)
    state = checkpoint(operator, 1)
    os.remove(tmp_path / hidden(tmp_path)[0])
    with pytest.raises(FileNotFoundError, match=r"cannot resume the in-progress part file .* it is missing \(was "
                                                r"the part committed after this checkpoint or savepoint"):
        restore(sink_operator(row_sink(tmp_path), ManualRuntime(attempt=1)), state)


def test_commits_can_be_repeated_but_never_overwrite_a_file(tmp_path):
    (tmp_path / ".p.inprogress.1").write_text("x\n")
    file_sink.commit((str(tmp_path / ".p.inprogress.1"), str(tmp_path / "p")))
    file_sink.commit((str(tmp_path / ".p.inprogress.1"), str(tmp_path / "p")))  # a repeated commit
    assert visible(tmp_path) == {"p": ["x"]}
    (tmp_path / ".p.inprogress.2").write_text("y\n")
    with pytest.raises(FileExistsError, match="p exists already"):
        file_sink.commit((str(tmp_path / ".p.inprogress.2"), str(tmp_path / "p")))
    with pytest.raises(FileNotFoundError, match="its pending file .* does not exist"):
        file_sink.commit((str(tmp_path / ".q.inprogress.3"), str(tmp_path / "q")))
    assert visible(tmp_path) == {"p": ["x"]}


# -- jobs -----------------------------------------------------------------------------------------


def numbers(env, count: int, rate: float, name: str = "Numbers"):
    return env.from_source(DataGeneratorSource(lambda i: i, count=count, records_per_second=rate,
                                               type_info=Types.LONG()), WatermarkStrategy.no_watermarks(), name)


def watched_job(out: Path, policy: RollingPolicy, seen: list):
    """Numbers 0..44 at 10/s into a FileSink; a second pipeline lists the sink's directory
    every 10 ms of clock time (its record i at i * 10 ms) and keeps what it saw."""

    def watch(i):
        seen.append((i * 10, {p.name: p.read_text().split() for p in sorted(out.iterdir())
                              if not p.name.startswith(".")}))
        return i

    def build(env):
        env.enable_checkpointing(1000)
        numbers(env, 45, 10).sink_to(row_sink(out, policy))
        numbers(env, 600, 100, "Watcher").map(watch, Types.LONG()).add_sink(lambda v: None)
        env.execute("watched")

    return build


def commits(job, policy_rolls_at_checkpoints: bool) -> list[tuple[int, list[list[str]]]]:
    """(completion time in ms, the parts' lines visible after it) per completed checkpoint:
    the numbers emitted before barrier n (number i is due at i * 100 ms) are committed by
    checkpoint n — each checkpoint's in its own part when parts roll at checkpoints, else all
    in one part at the end of input."""
    triggered = {e.checkpoint_id: e.time // 1_000_000 for e in job.events(CheckpointTriggered)}
    out, parts, emitted = [], [], 0
    for event in job.events(CheckpointCompleted):
        due = min(45, triggered[event.checkpoint_id] // 100 + 1)
        if policy_rolls_at_checkpoints and due > emitted:
            parts = parts + [[str(i) for i in range(emitted, due)]]
        elif due == 45 and not parts:
            parts = [[str(i) for i in range(45)]]
        emitted = due
        out.append((event.time // 1_000_000, parts))
    return out


@pytest.mark.parametrize("policy", [RollingPolicy.on_checkpoint_rolling_policy(),
                                    RollingPolicy.default_rolling_policy()], ids=["on-checkpoint", "default"])
def test_parts_of_a_job_become_visible_exactly_when_their_checkpoints_complete(tmp_path, policy):
    seen: list = []
    out = tmp_path / "out"
    out.mkdir()
    job = run_job(watched_job(out, policy, seen))
    assert job.outcome.status == "FINISHED"
    expected = commits(job, policy_rolls_at_checkpoints=policy.rolls_on_checkpoint(0))
    assert len(expected) == 7 and expected[-1][1] and len(seen) == 600
    [unique] = {uuid_of(name) for _, files in seen for name in files}
    for at, files in seen:  # at every instant the watcher looked: what the completed checkpoints committed
        parts = ([parts for done, parts in expected if done < at] or [[]])[-1]
        assert files == {f"part-{unique}-{n}": lines for n, lines in enumerate(parts)}
    assert visible(out) == {f"part-{unique}-{n}": lines for n, lines in enumerate(expected[-1][1])}
    assert hidden(out) == []


def sink_job(out: Path, policy: RollingPolicy | None = None, count: int = 45):
    def build(env):
        env.enable_checkpointing(1000)
        env.set_parallelism(2)
        numbers(env, count, 10).map(lambda i: i, Types.LONG()).name("Pass").sink_to(row_sink(out, policy))
        env.execute("numbers to files")

    return build


def all_lines(directory: Path) -> list[str]:
    return sorted((line for lines in visible(directory).values() for line in lines), key=int)


def test_a_bounded_job_ends_with_a_final_checkpoint_that_commits(tmp_path):
    job = run_job(sink_job(tmp_path / "out"))
    assert job.outcome.status == "FINISHED"
    last = job.events(CheckpointTriggered)[-1]
    assert not last.periodic  # triggered as every task had ended its input (FLIP-147)
    assert job.events(CheckpointCompleted)[-1].checkpoint_id == last.checkpoint_id
    assert all_lines(tmp_path / "out") == [str(i) for i in range(45)]
    assert len(visible(tmp_path / "out")) == 2  # one part per subtask: the default policy never rolled


def test_without_checkpoints_after_tasks_finish_the_last_parts_stay_pending(tmp_path):
    job = run_job(sink_job(tmp_path / "out"), "execution.checkpointing.checkpoints-after-tasks-finish=false")
    assert job.outcome.status == "FINISHED"
    assert visible(tmp_path / "out") == {} and len(hidden(tmp_path / "out")) == 2  # as Flink's "Important Note 2"


@pytest.mark.parametrize("policy", [RollingPolicy.on_checkpoint_rolling_policy(),
                                    RollingPolicy.default_rolling_policy()], ids=["on-checkpoint", "default"])
def test_after_failures_every_record_is_committed_exactly_once(tmp_path, policy):
    out = tmp_path / "out"
    job = run_job(sink_job(out, policy, count=120), "restart-strategy.type=fixed-delay",
                  "restart-strategy.fixed-delay.attempts=3",
                  faults=["raise:operator=Pass,record=25", "raise:operator=Pass,record=50,subtask=1"])
    assert job.outcome.status == "FINISHED"
    restored = job.events(CheckpointStateRestored)
    assert {e.checkpoint_id for e in restored} and all(e.checkpoint_id > 0 for e in restored)
    assert all_lines(out) == [str(i) for i in range(120)]
    counters: dict[str, list[int]] = {}
    for name in visible(out):
        counters.setdefault(uuid_of(name), []).append(int(name.rsplit("-", 1)[1]))
    # a uuid per writer: restored writers never reuse one, and each numbers its parts from 0
    # (parts opened after the last checkpoint by a failed attempt are never committed): two
    # subtasks, each restarted once (its own region); with the default policy nothing rolls and
    # each subtask's restored attempt resumed its one part
    assert all(sorted(c) == list(range(len(c))) for c in counters.values())
    assert len(counters) == (4 if policy.rolls_on_checkpoint(0) else 2)
    assert all(re.fullmatch(rf"\.part-{UUID}-\d+\.inprogress\.{UUID}", name) for name in hidden(out))


def test_a_second_run_into_the_same_directory_overwrites_nothing(tmp_path):
    out = tmp_path / "out"
    policy = RollingPolicy.on_checkpoint_rolling_policy()
    run_job(sink_job(out, policy))
    first = visible(out)
    run_job(sink_job(out, policy))  # the same seed: the same random streams draw the same uuids first
    second = visible(out)
    assert {name: second[name] for name in first} == first
    assert len(second) == 2 * len(first) and all_lines(out) == sorted([str(i) for i in range(45)] * 2, key=int)
    assert not {uuid_of(n) for n in first} & {uuid_of(n) for n in second if n not in first}


def test_print_is_at_least_once_with_checkpoints():
    """As in Flink, print() is not transactional: after a restore the records since the
    restored checkpoint are printed again."""
    def build(env):
        env.enable_checkpointing(1000)
        numbers(env, 30, 10).map(lambda i: i, Types.LONG()).name("Pass").print()
        env.execute("print")

    job = run_job(build, "restart-strategy.type=fixed-delay", faults=["raise:operator=Pass,record=25"])
    assert job.outcome.status == "FINISHED"
    [restored] = job.events(CheckpointStateRestored)
    triggered = {e.checkpoint_id: e.time // 1_000_000 for e in job.events(CheckpointTriggered)}
    position = triggered[restored.checkpoint_id] // 100 + 1  # numbers emitted before its barrier
    assert job.lines == [str(i) for i in range(24)] + [str(i) for i in range(position, 30)]
    assert 0 < position < 24
