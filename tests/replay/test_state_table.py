"""``rill sql --checkpoint PATH``: the keyed state of a checkpoint or savepoint as the table
``state`` — every keyed state kind, window contents and timers with exact rows — and what a
malicious PATH gets: one ``rill: error:`` line (symbolic links, files that are not
checkpoints, crafted metadata with bad versions or sizes), values decoded without running any
of the checkpoint's code, and the same sandbox as every ``rill sql``."""

from __future__ import annotations

import csv
import io
import os
import pickle

import msgspec
import pytest

from kernel.runtime.checkpointing.format import (
    MAGIC,
    METADATA_FILE,
    CheckpointMetadata,
    KeyGroupState,
    decode_key_group,
    encode,
    encode_metadata,
)
from kernel.runtime.checkpointing.pointers import MAX_METADATA_BYTES, resolve
from replay.safe_pickle import json_value, readable, safe_loads
from tests.savepoint_jobs import COUNT_JOB, savepoint_path, write

ALL_KINDS_JOB = """
from kernel.common import Types, WatermarkStrategy
from kernel.common.time import Time
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.functions import AggregateFunction, KeyedProcessFunction
from kernel.datastream.state import (AggregatingStateDescriptor, ListStateDescriptor, MapStateDescriptor,
                                     ReducingStateDescriptor, StateTtlConfig, ValueStateDescriptor)
from kernel.datastream.window import TumblingProcessingTimeWindows


class Mean(AggregateFunction):
    def create_accumulator(self):
        return 0, 0

    def add(self, value, accumulator):
        return accumulator[0] + value, accumulator[1] + 1

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, a, b):
        return a[0] + b[0], a[1] + b[1]


class AllKinds(KeyedProcessFunction):
    def open(self, ctx):
        self.last = ctx.get_state(ValueStateDescriptor("last", Types.INT()))
        self.items = ctx.get_list_state(ListStateDescriptor("items", Types.INT()))
        self.labels = ctx.get_map_state(MapStateDescriptor("labels", Types.INT(), Types.STRING()))
        self.total = ctx.get_reducing_state(ReducingStateDescriptor("total", lambda a, b: a + b, Types.INT()))
        self.mean = ctx.get_aggregating_state(AggregatingStateDescriptor("mean", Mean(), Types.PICKLED_BYTE_ARRAY()))
        recent = ValueStateDescriptor("recent", Types.INT())
        recent.enable_time_to_live(StateTtlConfig.new_builder(Time.hours(1)).build())
        self.recent = ctx.get_state(recent)

    def process_element(self, value, ctx):
        i = value[1]
        self.last.update(i)
        self.items.add(i)
        self.labels.put(i, "#%d" % i)
        self.total.add(i)
        self.mean.add(i)
        self.recent.update(i * 10)
        ctx.timer_service().register_event_time_timer(1000 + i)
        if i < 2:
            ctx.timer_service().register_processing_time_timer(3_600_000 + i)
        yield value


env = StreamExecutionEnvironment.get_execution_environment()
source = DataGeneratorSource(lambda i: ("ab"[i % 2], i), None, records_per_second=10)
records = env.from_source(source, WatermarkStrategy.no_watermarks(), "Records").filter(lambda v: v[1] < 6)
kept = records.key_by(lambda v: v[0]).process(AllKinds()).name("All kinds").uid("all-kinds")
kept.key_by(lambda v: v[0]).window(TumblingProcessingTimeWindows.of(Time.seconds(10))) \\
    .reduce(lambda a, b: (a[0], a[1] + b[1])).name("Sums").uid("sums").print()
env.execute("all kinds")
"""


def query(cli, path: str, sql: str) -> list[dict[str, str]]:
    code, out, err = cli("sql", "--format", "csv", "--checkpoint", path, sql)
    assert code == 0, err
    return list(csv.DictReader(io.StringIO(out)))


@pytest.fixture
def all_kinds(cli, tmp_path) -> str:
    """A savepoint of ``ALL_KINDS_JOB`` after records 0-5 (keys a: 0, 2, 4 and b: 1, 3, 5), its
    state in files (no inline state)."""
    job = write(tmp_path, "kinds.py", ALL_KINDS_JOB)
    code, _, err = cli("run", "--clock", "simulated", "--quiet", "--duration", "2s", "--stop-with-savepoint",
                       str(tmp_path / "sp"), "--set", "execution.checkpointing.data-inline-threshold=0", job)
    assert code == 0, err
    return savepoint_path(err)


def test_every_keyed_state_kind_window_contents_and_timers(cli, all_kinds):
    rows = query(cli, all_kinds, "SELECT operator, key, namespace, state_name, kind, value FROM state "
                                 "ORDER BY operator, key, state_name, value::VARCHAR")
    kinds = [(r["operator"], r["key"], r["namespace"], r["state_name"], r["kind"], r["value"]) for r in rows]
    window = "TimeWindow(start=0, end=10000)"
    assert kinds == [
        ("All kinds", "a", "", "_timer_state/event_timers", "timers", "1000"),
        ("All kinds", "a", "", "_timer_state/event_timers", "timers", "1002"),
        ("All kinds", "a", "", "_timer_state/event_timers", "timers", "1004"),
        ("All kinds", "a", "", "_timer_state/processing_timers", "timers", "3600000"),
        ("All kinds", "a", "", "items", "list", "[0, 2, 4]"),
        ("All kinds", "a", "", "labels", "map", '[[0, "#0"], [2, "#2"], [4, "#4"]]'),
        ("All kinds", "a", "", "last", "value", "4"),
        ("All kinds", "a", "", "mean", "aggregating", "[6, 3]"),
        ("All kinds", "a", "", "recent", "value", "40"),  # a TTL state: the user value
        ("All kinds", "a", "", "total", "reducing", "6"),
        ("All kinds", "b", "", "_timer_state/event_timers", "timers", "1001"),
        ("All kinds", "b", "", "_timer_state/event_timers", "timers", "1003"),
        ("All kinds", "b", "", "_timer_state/event_timers", "timers", "1005"),
        ("All kinds", "b", "", "_timer_state/processing_timers", "timers", "3600001"),
        ("All kinds", "b", "", "items", "list", "[1, 3, 5]"),
        ("All kinds", "b", "", "labels", "map", '[[1, "#1"], [3, "#3"], [5, "#5"]]'),
        ("All kinds", "b", "", "last", "value", "5"),
        ("All kinds", "b", "", "mean", "aggregating", "[9, 3]"),
        ("All kinds", "b", "", "recent", "value", "50"),
        ("All kinds", "b", "", "total", "reducing", "9"),
        ("Sums", "a", window, "_timer_state/processing_timers", "timers", "9999"),
        ("Sums", "a", window, "window-contents", "reducing", '["a", 6]'),
        ("Sums", "b", window, "_timer_state/processing_timers", "timers", "9999"),
        ("Sums", "b", window, "window-contents", "reducing", '["b", 9]')]
    metadata = resolve(all_kinds).metadata
    ids = {operator.name: operator.operator_id for operator in metadata.operators}
    assert query(cli, all_kinds, "SELECT DISTINCT operator, operator_id, key, key_group FROM state ORDER BY ALL") == [
        {"operator": name, "operator_id": ids[name], "key": key, "key_group": group}
        for name in ("All kinds", "Sums") for key, group in (("a", "33"), ("b", "9"))]
    # values are JSON: they compute
    assert query(cli, all_kinds, "SELECT key, value->>'$[1]' AS n, json_array_length(value) AS length FROM state "
                                 "WHERE state_name = 'mean' ORDER BY key") == [
        {"key": "a", "n": "3", "length": "2"}, {"key": "b", "n": "3", "length": "2"}]


def test_a_checkpoint_is_read_as_a_savepoint_is(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    checkpoints = tmp_path / "checkpoints"
    code, _, err = cli("run", "--clock", "simulated", "--quiet", "--duration", "2500ms",
                       "--set", f"execution.checkpointing.dir={checkpoints}",
                       "--set", "execution.checkpointing.externalized-checkpoint-retention=RETAIN_ON_CANCELLATION",
                       job, "checkpoints", "uid")
    assert code == 0, err
    (job_id,) = os.listdir(checkpoints)
    # checkpoint 2 (1.925 s) holds records 0-18 (one every 100 ms from 0.1 s): 7 of k0, 6 of k1 and k2
    rows = query(cli, str(checkpoints / job_id / "chk-2"),
                 "SELECT key, state_name, value FROM state WHERE operator = 'Count' ORDER BY key, state_name")
    assert [(row["key"], row["state_name"], int(row["value"])) for row in rows] == [
        ("k0", "count", 7), ("k0", "total", sum(range(0, 19, 3))), ("k1", "count", 6),
        ("k1", "total", sum(range(1, 19, 3))), ("k2", "count", 6), ("k2", "total", sum(range(2, 19, 3)))]


# -- what a malicious PATH gets ----------------------------------------------------------------


def refused(cli, path, sql: str = "SELECT count(*) FROM state") -> str:
    code, out, err = cli("sql", "--checkpoint", str(path), sql)
    assert (code, out) == (2, "") and err.count("\n") == 1 and err.startswith("rill: error: "), err
    return err.removeprefix("rill: error: ").rstrip("\n")


def rewrite(path: str, change) -> None:
    """Rewrite a savepoint's _metadata with ``change(metadata)`` (read as it is, unchecked)."""
    with open(os.path.join(path, METADATA_FILE), "rb") as stream:
        metadata = msgspec.msgpack.decode(stream.read()[len(MAGIC):], type=CheckpointMetadata)
    with open(os.path.join(path, METADATA_FILE), "wb") as stream:
        stream.write(encode_metadata(change(metadata)))


def state_file(path: str) -> tuple[str, object]:
    """The file and handle of the savepoint's "All kinds" subtask state."""
    (operator,) = [o for o in resolve(path).metadata.operators if o.name == "All kinds"]
    handle = operator.subtasks[0].state
    return os.path.join(path, handle.file), handle


def test_symbolic_links_are_refused(cli, all_kinds, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(all_kinds)
    assert refused(cli, link) == f"--checkpoint {link}: {link} is a symbolic link: name the checkpoint's directory itself"
    elsewhere = tmp_path / "elsewhere"
    os.rename(os.path.join(all_kinds, METADATA_FILE), elsewhere)
    os.symlink(elsewhere, os.path.join(all_kinds, METADATA_FILE))
    assert refused(cli, all_kinds) == (f"--checkpoint {all_kinds}: {all_kinds}/_metadata is a symbolic link: a "
                                       "checkpoint's files are read only when they are regular files inside its "
                                       "directory")
    os.remove(os.path.join(all_kinds, METADATA_FILE))
    os.rename(elsewhere, os.path.join(all_kinds, METADATA_FILE))
    path, _ = state_file(all_kinds)
    os.remove(path)
    os.symlink("/etc/passwd", path)
    assert refused(cli, all_kinds) == (f"--checkpoint {all_kinds}: {path} is a symbolic link: a checkpoint's files "
                                       "are read only when they are regular files inside its directory")


def test_files_that_are_not_checkpoints_are_refused(cli, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    assert refused(cli, text) == (f"--checkpoint {text}: {text} is neither a checkpoint or savepoint directory nor "
                                  "its _metadata file")
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / METADATA_FILE).write_bytes(b"PK\x03\x04 not a checkpoint")
    assert refused(cli, tmp_path / "fake") == (f"--checkpoint {tmp_path / 'fake'}: {tmp_path / 'fake'}/_metadata "
                                               "is not a rill checkpoint's metadata")
    assert refused(cli, tmp_path / "nothing") == f"--checkpoint {tmp_path / 'nothing'}: {tmp_path / 'nothing'} does not exist"
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "fifo").mkdir()
    os.rename(tmp_path / "pipe", tmp_path / "fifo" / METADATA_FILE)
    assert refused(cli, tmp_path / "fifo") == (f"--checkpoint {tmp_path / 'fifo'}: {tmp_path / 'fifo'}/_metadata is "
                                               "not a regular file")


def test_crafted_metadata_is_refused(cli, all_kinds):
    where = f"--checkpoint {all_kinds}: {all_kinds}/_metadata"
    rewrite(all_kinds, lambda m: msgspec.structs.replace(m, format_version=99))
    assert refused(cli, all_kinds) == f"{where} was written in checkpoint format 99; this rill reads formats up to 1"
    rewrite(all_kinds, lambda m: msgspec.structs.replace(m, format_version=0))
    assert refused(cli, all_kinds) == f"{where} has checkpoint format version 0; rill writes versions 1 to 1"
    rewrite(all_kinds, lambda m: msgspec.structs.replace(m, format_version=1))

    def operator(m, **changes):
        operators = [msgspec.structs.replace(o, **changes) if o.name == "All kinds" else o for o in m.operators]
        return msgspec.structs.replace(m, operators=operators)

    def handle(m, **changes):
        (op,) = [o for o in m.operators if o.name == "All kinds"]
        subtask = op.subtasks[0]
        changed = msgspec.structs.replace(subtask, state=msgspec.structs.replace(subtask.state, **changes))
        return operator(m, subtasks=[changed])

    original = resolve(all_kinds).metadata
    (op,) = [o for o in original.operators if o.name == "All kinds"]
    state = op.subtasks[0].state
    for change, problem in (
            (lambda m: operator(m, max_parallelism=1 << 40), f"has max parallelism {1 << 40} (1 to 32768)"),
            (lambda m: operator(m, parallelism=0), "has parallelism 0 (1 to its max parallelism 128)"),
            (lambda m: handle(m, size=10 ** 15), None),
            (lambda m: handle(m, key_groups=[(9, 0, 1 << 62)]), None),
            (lambda m: handle(m, key_groups=[(1000, 0, 1)]), None),
            (lambda m: handle(m, file="../../etc/passwd"), None)):
        rewrite(all_kinds, lambda m: change(original))
        message = refused(cli, all_kinds)
        if problem is not None:
            assert message == f"{where}: operator {op.operator_id} {problem}"
    rewrite(all_kinds, lambda m: handle(original, size=10 ** 15))
    assert refused(cli, all_kinds) == (f"--checkpoint {all_kinds}: {all_kinds}/{state.file} has {state.size} bytes; "
                                       f"the checkpoint's metadata says {10 ** 15}")
    rewrite(all_kinds, lambda m: handle(original, key_groups=[(9, 0, 1 << 62)]))
    assert refused(cli, all_kinds).endswith(f"a frame at 0 of {1 << 62} bytes lies outside its {state.size} bytes of state")
    rewrite(all_kinds, lambda m: handle(original, key_groups=[(1000, 0, 1)]))
    assert refused(cli, all_kinds).endswith("key group 1000 is outside 0 to 127")
    rewrite(all_kinds, lambda m: handle(original, file="../../etc/passwd"))
    assert refused(cli, all_kinds).endswith("state file '../../etc/passwd' is not a plain file name")


def test_a_huge_metadata_file_is_not_read(cli, tmp_path):
    (tmp_path / "huge").mkdir()
    with open(tmp_path / "huge" / METADATA_FILE, "wb") as stream:
        stream.truncate(MAX_METADATA_BYTES + 1)  # sparse: nothing is written
    assert refused(cli, tmp_path / "huge") == (
        f"--checkpoint {tmp_path / 'huge'}: {tmp_path / 'huge'}/_metadata has {MAX_METADATA_BYTES + 1} bytes, more "
        f"than a checkpoint's metadata may have ({MAX_METADATA_BYTES} bytes)")


class RunsCode:
    """What an attacker pickles: unpickling it with :mod:`pickle` runs a shell command."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


class Allocates:
    def __reduce__(self):
        return bytearray, (10 ** 12,)


def replace_entries(path: str, entries: bytes) -> None:
    """Put ``entries`` (a pickle) in place of the first state table of the "All kinds" subtask's
    first key group, keeping the file's frames where _metadata says they are."""
    file, handle = state_file(path)
    with open(file, "rb") as stream:
        data = stream.read()
    group, offset, length = handle.key_groups[0]
    frame = decode_key_group(data[offset:offset + length])
    table = msgspec.structs.replace(frame.tables[0], entries=entries)
    new = encode(KeyGroupState(key_group=group, tables=[table, *frame.tables[1:]]))
    data = data[:offset] + new + data[offset + length:]
    with open(file, "wb") as stream:
        stream.write(data)
    key_groups = [(g, o if o <= offset else o + len(new) - length, len(new) if o == offset else n)
                  for g, o, n in handle.key_groups]

    def change(m):
        operators = []
        for op in m.operators:
            if op.name == "All kinds":
                subtask = op.subtasks[0]
                state = msgspec.structs.replace(subtask.state, size=len(data), key_groups=key_groups)
                op = msgspec.structs.replace(op, subtasks=[msgspec.structs.replace(subtask, state=state),
                                                           *op.subtasks[1:]])
            operators.append(op)
        return msgspec.structs.replace(m, operators=operators)

    rewrite(path, change)


def test_values_are_decoded_without_running_the_checkpoints_code(cli, all_kinds, tmp_path):
    marker = tmp_path / "pwned"
    shared: list = []
    nested = shared
    for _ in range(40):  # 2**40 elements if expanded: the pickle is a few hundred bytes
        nested = [nested, nested]
    cycle: list = []
    cycle.append(cycle)
    entries = [("evil", None, RunsCode(f"touch {marker}")), ("big", None, Allocates()),
               ("laughs", None, nested), ("cycle", None, cycle), ("fine", None, {"n": (1, 2.5)})]
    replace_entries(all_kinds, pickle.dumps(entries, protocol=pickle.HIGHEST_PROTOCOL))
    rows = query(cli, all_kinds, "SELECT key, value FROM state WHERE key IN ('evil', 'big', 'laughs', 'cycle', 'fine') "
                                 "ORDER BY key")
    assert not marker.exists()
    values = {row["key"]: row["value"] for row in rows}
    assert values["evil"] == f'"system(\'touch {marker}\')"'
    assert values["big"] == '"bytearray(1000000000000)"'
    assert values["cycle"] == '"[…]"'
    assert values["fine"] == '{"n": [1, 2.5]}'
    assert values["laughs"].startswith('"[[[[') and values["laughs"].endswith('…]"') and len(values["laughs"]) < 20_000


def test_a_damaged_pickle_is_one_clear_error(cli, all_kinds):
    replace_entries(all_kinds, b"\x80\x05\x95not a pickle")
    message = refused(cli, all_kinds)
    assert message.startswith(f"--checkpoint {all_kinds}: operator ") and " cannot be decoded: " in message
    replace_entries(all_kinds, pickle.dumps("a string, not entries"))
    assert refused(cli, all_kinds).endswith("does not hold (key, namespace, value) entries")


def test_the_state_table_is_sandboxed_like_every_rill_sql(cli, all_kinds, tmp_path):
    assert refused(cli, all_kinds, f"COPY (SELECT * FROM state) TO '{tmp_path / 'out.csv'}'") == \
        "rill sql is read-only: COPY statements are refused (use SELECT)"
    message = refused(cli, all_kinds, "SELECT * FROM read_text('/etc/passwd')")
    assert message.startswith("rill sql is sandboxed") and not (tmp_path / "out.csv").exists()
    message = refused(cli, all_kinds, "SELECT * FROM rill.runs")
    assert message.startswith("SQL error: Catalog Error: ") and "runs" in message
    assert refused(cli, all_kinds, "SET enable_external_access = true").startswith("rill sql is read-only")
    code, out, err = cli("sql", "--checkpoint", all_kinds, "--parquet", str(tmp_path), "SELECT 1")
    assert (code, out, err) == (2, "", "rill: error: --checkpoint reads one checkpoint with DuckDB: give neither "
                                       "--parquet nor another --engine\n")


def test_the_restricted_unpickler_builds_value_types_only():
    assert safe_loads(pickle.dumps({1, 2})) == {1, 2}
    assert safe_loads(pickle.dumps(complex(1, 2))) == complex(1, 2)
    decoded = safe_loads(pickle.dumps(RunsCode("true")))
    assert type(decoded).__name__ == "system" and readable(decoded) == "system('true')"
    assert json_value(float("nan")) == '"nan"' and json_value(1 << 100) == '"1267650600228229401496703205376"'
    assert readable(1 << 4000) == "<int of 4001 bits>"
