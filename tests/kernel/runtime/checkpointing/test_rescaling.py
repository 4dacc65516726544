"""Rescaling: restoring at another parallelism redistributes key groups (Flink's
KeyGroupRangeAssignment), operator list state (``RoundRobinOperatorStateRepartitioner``),
broadcast state (every new subtask gets a copy) and source splits (number ranges, generator
ranges, files with their read positions). Each job runs 2 -> 3 -> 1 subtasks, stopped with a
savepoint at each change, and ends in exactly the state of a run that was never rescaled."""

from __future__ import annotations

import ast
import csv
import io
import os
import pickle

from kernel.runtime.checkpointing.pointers import resolve
from kernel.runtime.checkpointing.format import decode_operator_state
from kernel.runtime.checkpointing.snapshots import read_handle, repartition_lists
from kernel.runtime.streaming.keygroups import key_group_range
from kernel.runtime.streaming.readers import READER_STATE, DataGeneratorReader, NumberSequenceReader
from tests.savepoint_jobs import COUNT_JOB, counts, savepoint_path, write

SIM = ("--clock", "simulated", "--quiet")


def printed(out: str) -> list:
    """The values a print sink wrote (``k> `` subtask prefixes removed)."""
    return [ast.literal_eval(line.partition("> ")[2] if "> " in line[:4] else line) for line in out.splitlines()]


def rescaled_runs(cli, job: str, job_args: tuple[str, ...], sp, stops=("3s", "3s"),
                  sets: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """Run ``job`` at 2, then 3, then 1 subtasks, each resumed from the savepoint the previous
    one stopped with; the outputs and the two savepoints."""
    outputs, savepoints = [], []
    for parallelism, stop in zip((2, 3, 1), (*stops, None)):
        args = ["--set", f"parallelism.default={parallelism}", *(arg for key in sets for arg in ("--set", key))]
        if savepoints:
            args += ["-s", savepoints[-1]]
        if stop is not None:
            args += ["--duration", stop, "--stop-with-savepoint", str(sp / str(parallelism))]
        code, out, err = cli("run", *SIM, *args, job, *job_args)
        assert code == 0, err
        outputs.append(out)
        if stop is not None:
            savepoints.append(savepoint_path(err))
    return outputs, savepoints


def final_state(records: list[tuple]) -> dict[str, tuple]:
    state: dict[str, tuple] = {}
    for key, count, total in records:
        if count > state.get(key, (0, 0))[0]:
            state[key] = (count, total)
    return state


def test_keyed_state_of_list_keys_rescaled_2_3_1_ends_as_if_never_rescaled(cli, tmp_path):
    """Keys Python cannot hash (``["k0"]``): savepoints hold them by key group as any key."""
    job = write(tmp_path, "counts.py", COUNT_JOB)
    outputs, _ = rescaled_runs(cli, job, ("uid", "keys=7", "list-keys"), tmp_path / "sp")
    rescaled = [record for out in outputs for record in printed(out)]
    assert final_state(rescaled) == final_state([ast.literal_eval(line) for line in counts(0, 60, keys=7)])


def test_keyed_state_rescaled_2_3_1_ends_as_if_never_rescaled(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    code, out, err = cli("run", *SIM, "--set", "parallelism.default=2", job, "uid", "keys=7")
    assert code == 0, err
    unrescaled = printed(out)
    outputs, savepoints = rescaled_runs(cli, job, ("uid", "keys=7"), tmp_path / "sp")
    rescaled = [record for out in outputs for record in printed(out)]
    # every record counted once, into the count of its key: the same (key, count) pairs, the same
    # final count and sum of every key as the unrescaled run's (and as counting them one by one)
    assert sorted((key, count) for key, count, _ in rescaled) == sorted((key, count) for key, count, _ in unrescaled)
    expected = final_state([ast.literal_eval(line) for line in counts(0, 60, keys=7)])
    assert final_state(rescaled) == final_state(unrescaled) == expected
    assert len(expected) == 7 and expected["k0"] == (9, 252)

    # at 3 subtasks each one held the key groups of its range; the savepoint it stopped with holds
    # exactly the counts printed so far
    middle = resolve(savepoints[1]).metadata
    (operator,) = [o for o in middle.operators if o.name == "Count"]
    assert (operator.parallelism, operator.max_parallelism) == (3, 128)
    held = [subtask for subtask in operator.subtasks if subtask.state is not None]
    assert len(held) >= 2  # 7 keys among 3 subtasks' key group ranges
    for subtask in held:
        first, last = key_group_range(128, 3, subtask.subtask)
        assert all(first <= group <= last for group, _, _ in subtask.state.key_groups)
    code, out, err = cli("sql", "--format", "csv", "--checkpoint", savepoints[1],
                         "SELECT key, value FROM state WHERE state_name = 'count' ORDER BY key")
    assert code == 0, err
    so_far = final_state([record for out in outputs[:2] for record in printed(out)])
    assert list(csv.DictReader(io.StringIO(out))) == [
        {"key": key, "value": str(so_far[key][0])} for key in sorted(so_far)]


SLOW_SEQUENCE_JOB = """
from kernel import clock
from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.number_seq import NumberSequenceSource


def slowly(value):
    clock.sleep(0.01)
    return value


env = StreamExecutionEnvironment.get_execution_environment()
env.from_source(NumberSequenceSource(0, 1999), WatermarkStrategy.no_watermarks(), "Sequence").uid("sequence") \\
    .rebalance().map(slowly, Types.LONG()).uid("slowly").print()
env.execute("sequence")
"""


def test_number_sequence_splits_are_reassigned(cli, tmp_path):
    job = write(tmp_path, "sequence.py", SLOW_SEQUENCE_JOB)
    # small network buffers (8 records): the source cannot read far ahead of the slow map; the
    # second run stops while both splits still have numbers left
    outputs, savepoints = rescaled_runs(cli, job, (), tmp_path / "sp", stops=("3s", "1500ms"),
                                        sets=("rill.network.record-size=4096",))
    numbers = [n for out in outputs for n in printed(out)]
    assert sorted(numbers) == list(range(2000))  # each number once: nothing lost, nothing read twice
    assert all(outputs)  # every run read some
    # 2 splits (ranges) went to 3 subtasks: the third got none and finished at once
    (source,) = [o for o in resolve(savepoints[1]).metadata.operators if o.name == "Source: Sequence"]
    assert [s.finished for s in source.subtasks] == [False, False, True]


FILES_JOB = """
import sys
from kernel import clock
from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.file_system import FileSource, StreamFormat


def slowly(line):
    clock.sleep(0.005)
    return line


env = StreamExecutionEnvironment.get_execution_environment()
source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), sys.argv[1]).build()
env.from_source(source, WatermarkStrategy.no_watermarks(), "Lines").uid("lines").rebalance() \\
    .map(slowly, Types.STRING()).print()
env.execute("lines")
"""


def test_files_and_their_read_positions_are_reassigned(cli, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for file in range(5):
        (data / f"part-{file}.txt").write_text("".join(f"{file}-{line}\n" for line in range(400)))
    job = write(tmp_path, "lines.py", FILES_JOB)
    outputs, savepoints = rescaled_runs(cli, job, (str(data),), tmp_path / "sp", stops=("1s", "1s"),
                                        sets=("rill.network.record-size=4096",))
    lines = [line.partition("> ")[2] if "> " in line[:4] else line for out in outputs for line in out.splitlines()]
    assert sorted(lines) == sorted(f"{file}-{line}" for file in range(5) for line in range(400))
    assert all(outputs)
    # the first stop came in the middle of files: a split is a file with the position read to
    snapshot = resolve(savepoints[0])
    (source,) = [o for o in snapshot.metadata.operators if o.name == "Source: Lines"]
    splits = []
    for subtask in source.subtasks:
        data = read_handle(subtask.state, snapshot.directory)
        offset, length = subtask.state.operator_state
        for state in decode_operator_state(data[offset:offset + length]).states:
            if state.name == READER_STATE:
                splits += [split for split, _ in pickle.loads(state.elements)]
    assert {os.path.basename(path) for path, _ in splits} <= {f"part-{file}.txt" for file in range(5)}
    assert any(position > 0 for _, position in splits) and any(position == 0 for _, position in splits)


BROADCAST_JOB = """
from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.functions import BroadcastProcessFunction
from kernel.datastream.state import MapStateDescriptor

FACTORS = MapStateDescriptor("factors", Types.STRING(), Types.INT())


class Scale(BroadcastProcessFunction):
    def open(self, ctx):
        self.subtask = ctx.get_index_of_this_subtask()

    def process_element(self, value, ctx):
        yield self.subtask, value, ctx.get_broadcast_state(FACTORS).get("factor")

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(FACTORS).put(value[0], value[1])


env = StreamExecutionEnvironment.get_execution_environment()
factors = env.from_collection([("factor", 10)], Types.TUPLE([Types.STRING(), Types.INT()])).uid("factors")
numbers = env.from_source(DataGeneratorSource(lambda i: i, 90, records_per_second=10, type_info=Types.LONG()),
                          WatermarkStrategy.no_watermarks(), "Numbers").uid("numbers")
numbers.rebalance().connect(factors.broadcast(FACTORS)).process(Scale()).uid("scale").print()
env.execute("scale")
"""


def test_broadcast_state_reaches_every_new_subtask(cli, tmp_path):
    job = write(tmp_path, "scale.py", BROADCAST_JOB)
    outputs, savepoints = rescaled_runs(cli, job, (), tmp_path / "sp", stops=("4s", "3s"))
    records = [printed(out) for out in outputs]
    # the factor came once, in the first run; every subtask of every later run had it: the new
    # third subtask at 3 too (a copy of subtask 0's), and the one subtask at 1
    assert {factor for run in records for _, value, factor in run if value >= 5} == {10}
    assert {subtask for subtask, _, _ in records[1]} == {0, 1, 2}
    assert sorted(value for run in records for _, value, _ in run) == list(range(90))
    (scale,) = [o for o in resolve(savepoints[1]).metadata.operators if o.name == "Co-Process-Broadcast"]
    assert scale.parallelism == 3


# -- the repartitioning itself ------------------------------------------------------------------


def test_split_list_state_is_cut_into_contiguous_shares_as_flinks():
    old = {("offsets", "split"): {0: ["a", "b", "c"], 1: ["d", "e"]}}
    assert [repartition_lists(old, i, 3, 2) for i in range(3)] == [
        {"offsets": ["a", "b"]}, {"offsets": ["c", "d"]}, {"offsets": ["e"]}]
    assert [repartition_lists(old, i, 1, 2) for i in range(1)] == [{"offsets": ["a", "b", "c", "d", "e"]}]
    # same parallelism: each subtask its own
    assert [repartition_lists(old, i, 2, 2) for i in range(2)] == [{"offsets": ["a", "b", "c"]},
                                                                  {"offsets": ["d", "e"]}]
    # a second state starts where the first one's larger shares ended (Flink's startParallelOp)
    two = {("a", "split"): {0: [1, 2], 1: [3, 4]}, ("b", "split"): {0: [5, 6], 1: [7, 8]}}
    assert [repartition_lists(two, i, 3, 2) for i in range(3)] == [
        {"a": [1, 2], "b": [8]}, {"a": [3], "b": [5, 6]}, {"a": [4], "b": [7]}]


def test_union_state_goes_whole_and_broadcast_state_as_one_copy():
    old = {("seen", "union"): {0: ["x"], 1: ["y"]}, ("rules", "broadcast"): {0: [("r", 1)], 1: [("r", 1)]}}
    assert [repartition_lists(old, i, 3, 2) for i in range(3)] == [
        {"rules": [("r", 1)], "seen": ["x", "y"]}] * 3
    assert repartition_lists(old, 1, 2, 2) == {"rules": [("r", 1)], "seen": ["x", "y"]}


def test_readers_read_the_splits_they_are_given_in_order():
    reader = NumberSequenceReader(source=None)
    reader.restore_splits([(5, 7), (20, 21), (9, 8)])  # an empty range is dropped
    assert (reader.poll(4), reader.poll(4), reader.finished) == ([5, 6, 7, 20], [21], True)
    assert reader.snapshot_splits() == []
    reader.restore_splits([])
    assert reader.finished


def test_a_generator_split_carries_where_its_random_numbers_were():
    import random

    class Runtime:
        info = type("Info", (), {"subtask": 0, "parallelism": 1, "task_name": "gen"})()

        def rng_factory(self, name):
            return random.Random(name)

        def now_ms(self):
            return 0

    from kernel.datastream.connectors.datagen import DataGeneratorSource, GeneratorFunction

    class Draws(GeneratorFunction):
        def open(self, context):
            self.random = context.random

        def map(self, index):
            return index, self.random.randint(0, 999)

    whole = DataGeneratorReader(DataGeneratorSource(Draws(), 6))
    whole.open(Runtime())
    expected = whole.poll(6)
    first = DataGeneratorReader(DataGeneratorSource(Draws(), 6))
    first.open(Runtime())
    head = first.poll(2)
    splits = first.snapshot_splits()
    resumed = DataGeneratorReader(DataGeneratorSource(Draws(), 6))
    resumed.open(Runtime())
    resumed.context.random.seed("another subtask's")
    resumed.restore_splits(splits)
    assert head + resumed.poll(10) == expected
