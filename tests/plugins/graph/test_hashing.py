"""Operator ID hashing: the Murmur3 primitive against Guava's published vectors, and IDs of
topologies whose Flink IDs are known."""

from __future__ import annotations

import struct
import subprocess
import sys

import pytest

from kernel.common import Types
from plugins.graph.hashing import murmur3_128, user_hash
from tests.graphs import compile_job, ids

GUAVA_VECTORS = [  # Murmur3Hash128Test.testKnownValues (seed 0 rows): input -> (h1, h2)
    (b"hell", 0x629942693E10F867, 0x92DB0B82BAEB5347),
    (b"The quick brown fox jumps over the lazy dog", 0xE34BBC7BBC071B6C, 0x7A433CA9C49A9347),
    (b"The quick brown fox jumps over the lazy cog", 0x658CA970FF85269A, 0x43FEE3EAA68E5C3E),
]


@pytest.mark.parametrize("data, h1, h2", GUAVA_VECTORS)
def test_murmur3_128_matches_guava(data, h1, h2):
    assert murmur3_128(data) == struct.pack("<QQ", h1, h2)


def test_guava_hex_rendering():
    assert murmur3_128(b"The quick brown fox jumps over the lazy dog").hex() == "6c1b07bc7bbc4be347939ac4a93c437a"
    assert murmur3_128(b"").hex() == "00000000000000000000000000000000"


def test_user_uid_hash_is_murmur_of_utf8():
    assert user_hash("source").hex() == "e5a72f353fc1e6bbf3bd96a41384998c"
    assert user_hash("my-uid").hex() == "8409efe6adc6d20787611f16017c808f"


def test_source_keyby_flatmap_sink_matches_flink():
    """Reference §2.4: source -keyBy-> flatMap -> sink."""

    def build(env):
        env.from_collection(["a"]).key_by(lambda x: x).flat_map(lambda x: [x]).print()
        env.execute()

    found = ids(compile_job(build))
    assert found["Source: Collection Source"] == "bc764cd8ddf7a0cff126f51c16239658"
    assert found["Flat Map"] == "20ba6b65f97481d5570070de90e4e791"


def test_source_map_keyby_process_sink_matches_flink():
    """Reference §2.4: source -> map -keyBy-> process -> sink; the IDs of real Flink logs."""
    from kernel.datastream import KeyedProcessFunction

    class Noop(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield value

    def build(env):
        env.from_collection(["a"]).map(lambda x: x).key_by(lambda x: x).process(Noop()).print()
        env.execute()

    found = ids(compile_job(build))
    assert found["Source: Collection Source"] == "cbc357ccb763df2852fee8c4fc7d55f2"
    assert found["KeyedProcess"] == "90bea66de1c231edf33913ecd54406c1"


def test_user_uids_and_positions_as_in_flink_logs():
    """A topology from a Flink 1.9 deployment whose vertex IDs were read off its REST API:
    source(uid "source_uid") -> map -> map(uid "count_uid") -> sink, chains broken by
    disable_chaining between the maps."""

    def build(env):
        src = env.from_collection(["a"]).uid("source_uid")
        first = src.map(lambda x: x).name("first")
        second = first.map(lambda x: x).name("second").uid("count_uid").disable_chaining()
        second.print()
        env.execute()

    found = ids(compile_job(build))
    assert found["Source: Collection Source"] == "64248066b88fd35e9203cd469ffb4a53"
    assert found["first"] == "d216482dd1005af6d275607ff9eabe2c"
    assert found["second"] == "77fec41789154996bfa76055dea29472"
    assert found["Sink: Print to Std. Out"] == "f0bb9ed0d20321fef7413e1942e21550"


def test_ids_do_not_depend_on_names_or_functions():
    def build(name, fn):
        def run(env):
            env.from_collection([1]).map(fn, Types.INT()).name(name).print()
            env.execute()

        return run

    assert ids(compile_job(build("A", lambda x: x)))["A"] == ids(compile_job(build("B", abs)))["B"]


def test_ids_are_stable_across_processes(tmp_path):
    script = tmp_path / "ids.py"
    script.write_text(
        "from tests.graphs import compile_job, ids\n"
        "def build(env):\n"
        "    env.from_collection(['a', 'b']).flat_map(str.split).key_by(lambda w: w).reduce(lambda a, b: a).print()\n"
        "    env.execute()\n"
        "print(sorted(ids(compile_job(build)).items()))\n"
    )
    outputs = {
        subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True,
                       cwd=str(tmp_path), env={"PYTHONPATH": str(pytest_root()), "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outputs) == 1


def pytest_root():
    from pathlib import Path

    return Path(__file__).resolve().parents[3]
