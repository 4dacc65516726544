"""Channel selection of every partitioner, batch at a time."""

from __future__ import annotations

import random

import pytest

from kernel.common import Types
from kernel.common.typeinfo import key_hash
from kernel.graph import partitioner as p
from kernel.streaming.keygroups import murmur_hash
from kernel.streaming.partitioning import channel_selector


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
    words = ["hello", "world", "flink", "rill", "a", "b"]
    out = routed(p.KeyGroupStreamPartitioner(lambda w: w, Types.STRING()), words, n=4)
    for channel, (values, _) in out.items():
        for word in values:
            assert (murmur_hash(key_hash(word, Types.STRING())) % 128) * 4 // 128 == channel


def test_custom_partitioner_and_its_bounds():
    out = routed(p.CustomPartitionerWrapper(lambda key, n: key % n, lambda v: v), [4, 5, 6])
    assert out == {1: ([4], None), 2: ([5], None), 0: ([6], None)}
    with pytest.raises(ValueError, match="custom partitioner returned channel 7"):
        routed(p.CustomPartitionerWrapper(lambda key, n: 7, lambda v: v), [1])
