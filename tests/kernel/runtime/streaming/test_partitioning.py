"""Channel selection of every partitioner, batch at a time."""

from __future__ import annotations

import random

import pytest

from kernel.common import Types
from kernel.runtime.graph import partitioner as p
from kernel.runtime.streaming.partitioning import channel_selector


def routed(partitioner, values, n=3, timestamps=None, seed=1):
    selector = channel_selector(partitioner, n, 128, random.Random(seed))
    return {c: (v, t) for c, v, t in selector.route(values, timestamps)}


def test_rescale_round_robin_from_channel_zero_and_keeps_timestamps_aligned():
    out = routed(p.RescalePartitioner(), list("abcdefg"), timestamps=list(range(7)))
    assert out == {0: (["a", "d", "g"], [0, 3, 6]), 1: (["b", "e"], [1, 4]), 2: (["c", "f"], [2, 5])}


def test_rebalance_round_robin_continues_across_batches_from_a_seeded_start():
    selector = channel_selector(p.RebalancePartitioner(), 3, 128, random.Random(1))
    start = random.Random(1).randrange(3)
    first = {c: v for c, v, _ in selector.route([0, 1], None)}
    second = {c: v for c, v, _ in selector.route([2, 3, 4], None)}
    assert first == {start: [0], (start + 1) % 3: [1]}
    assert second[(start + 2) % 3] == [2] and sorted(sum(second.values(), [])) == [2, 3, 4]


def test_forward_global_and_broadcast():
    assert routed(p.ForwardPartitioner(), [1, 2], n=1) == {0: ([1, 2], None)}
    assert routed(p.GlobalPartitioner(), [1, 2]) == {0: ([1, 2], None)}
    assert routed(p.BroadcastPartitioner(), [1]) == {0: ([1], None), 1: ([1], None), 2: ([1], None)}


def test_shuffle_is_seeded():
    values = list(range(50))
    assert routed(p.ShufflePartitioner(), values, seed=3) == routed(p.ShufflePartitioner(), values, seed=3)
    assert routed(p.ShufflePartitioner(), values, seed=3) != routed(p.ShufflePartitioner(), values, seed=4)


def test_key_groups_route_like_pyflink():
    """Real PyFlink 2.3 printed these keys (key_by(..., Types.STRING()), p=4) on subtasks
    3> 3> 1> 2> 1> 1> for a, b, c, hello, world, Flink (tests/kernel/jvm/test_keyhash.py has the recording)."""
    words = ["a", "b", "c", "hello", "world", "Flink"]
    out = routed(p.KeyGroupStreamPartitioner(lambda w: w, Types.STRING()), words, n=4)
    assert out == {2: (["a", "b"], None), 0: (["c", "world", "Flink"], None), 1: (["hello"], None)}


def test_key_routing_tells_apart_keys_python_finds_equal():
    """Untyped keys are pickled: 1, True and 1.0 (equal in Python) are three different keys
    for PyFlink, and 0.0 and -0.0 are two; the routing cache must not merge them."""
    selector = channel_selector(p.KeyGroupStreamPartitioner(lambda v: v, None), 4, 128, random.Random(1))
    channels = {}
    for key in (1, True, 1.0, 0.0, -0.0, (1, "a"), (True, "a")):
        [(channel, _, _)] = selector.route([key], None)
        channels[repr(key)] = channel
    # recorded on PyFlink 2.3 at p=4 (PICKLED in tests/kernel/jvm/test_keyhash.py): 1 2>, True 4>, 1.0 3>,
    # -0.0 2>, (1, 'a') 1>. Derived by the same rule: 0.0 pickles to 80 05 95 0a 00.. 47 00.. 2e,
    # keyHash 62 + Arrays.hashCode = 940475274, key group 2 -> 1>; (True, 'a') pickles to
    # 80 05 95 08 00.. 88 8c 01 61 94 86 94 2e, keyHash -1680706347, key group 74 -> 3>.
    assert channels == {"1": 1, "True": 3, "1.0": 2, "0.0": 0, "-0.0": 1, "(1, 'a')": 0, "(True, 'a')": 2}
    typed = channel_selector(p.KeyGroupStreamPartitioner(lambda v: v, Types.DOUBLE()), 4, 128, random.Random(1))
    # recorded with Types.DOUBLE() at p=4: 0.0 on 2>, -0.0 on 4> (Double.hashCode tells them apart)
    assert [typed.route([key], None)[0][0] for key in (0.0, -0.0)] == [1, 3]


def test_custom_partitioner_and_its_bounds():
    """PyFlink calls the partitioner with the key and the downstream parallelism and sends the
    record to the partition it returns (IdPartitioner); recorded on PyFlink 2.3 with
    ``partition_custom(lambda k, n: (k // n) % n, lambda i: i)`` into 3 subtasks: 0..11 printed as
    1> 1> 1> 2> 2> 2> 3> 3> 3> 1> 1> 1>."""
    out = routed(p.CustomPartitionerWrapper(lambda key, n: (key // n) % n, lambda v: v), list(range(12)))
    assert out == {0: ([0, 1, 2, 9, 10, 11], None), 1: ([3, 4, 5], None), 2: ([6, 7, 8], None)}
    with pytest.raises(ValueError, match="custom partitioner returned channel 7"):
        routed(p.CustomPartitionerWrapper(lambda key, n: 7, lambda v: v), [1])
