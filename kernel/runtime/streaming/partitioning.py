"""Channel selection of each partitioner, batch at a time.

``route(values, timestamps)`` yields (channel, values, timestamps) groups for one batch.
Randomness (rebalance's first channel, shuffle) comes from the kernel's seeded RNG.
"""

from __future__ import annotations

from random import Random
from typing import Any, Callable

from kernel.jvm.keyhash import equal_keys_hash_equal, key_hasher
from kernel.runtime.graph import partitioner as p
from kernel.runtime.streaming.keygroups import assign_to_key_group

Routed = list[tuple[int, list, "list | None"]]

#: keys whose routing is remembered (bounded memory for unbounded key spaces)
KEY_CACHE_LIMIT = 1 << 16
#: key types whose Python equality is Java equality whatever the key type: 1 == True == 1.0 and
#: 0.0 == -0.0 are different keys to PyFlink when pickled (or typed as DOUBLE), so only str and int
#: keys, and tuples of them, are remembered unless ``equal_keys_hash_equal(key_type)``
_PLAIN_KEYS = frozenset((str, int))


class ChannelSelector:
    num_channels: int
    broadcast = False

    def route(self, values: list, timestamps: list | None) -> Routed:
        raise NotImplementedError


class SingleChannel(ChannelSelector):
    """Forward and global: everything to channel 0."""

    def __init__(self, num_channels: int) -> None:
        self.num_channels = num_channels

    def route(self, values, timestamps):
        return [(0, values, timestamps)]


class Broadcast(ChannelSelector):
    broadcast = True

    def __init__(self, num_channels: int) -> None:
        self.num_channels = num_channels

    def route(self, values, timestamps):
        return [(c, values, timestamps) for c in range(self.num_channels)]


def _split(channels: list[int], values: list, timestamps: list | None, n: int) -> Routed:
    out_values: list[list] = [[] for _ in range(n)]
    if timestamps is None:
        for channel, value in zip(channels, values):
            out_values[channel].append(value)
        return [(c, out_values[c], None) for c in range(n) if out_values[c]]
    out_ts: list[list] = [[] for _ in range(n)]
    for channel, value, ts in zip(channels, values, timestamps):
        out_values[channel].append(value)
        out_ts[channel].append(ts)
    return [(c, out_values[c], out_ts[c]) for c in range(n) if out_values[c]]


class RoundRobin(ChannelSelector):
    """Rebalance (first channel random) and rescale (first channel 0)."""

    def __init__(self, num_channels: int, start: int) -> None:
        self.num_channels = num_channels
        self.next = start

    def route(self, values, timestamps):
        n = self.num_channels
        if n == 1:
            return [(0, values, timestamps)]
        start = self.next
        self.next = (start + len(values)) % n
        routed = []
        for channel in range(n):
            offset = (channel - start) % n  # record i goes to channel (start + i) % n
            part = values[offset::n]
            if part:
                routed.append((channel, part, timestamps[offset::n] if timestamps is not None else None))
        return routed


class Shuffle(ChannelSelector):
    def __init__(self, num_channels: int, rng: Random) -> None:
        self.num_channels = num_channels
        self.rng = rng

    def route(self, values, timestamps):
        n = self.num_channels
        if n == 1:
            return [(0, values, timestamps)]
        pick = self.rng.randrange
        return _split([pick(n) for _ in values], values, timestamps, n)


class KeyGroupChannels(ChannelSelector):
    """keyBy: the subtask owning the key's key group, as PyFlink routes ``key_by``."""

    def __init__(self, num_channels: int, max_parallelism: int, key_selector: Callable[[Any], Any], key_type: Any,
                 keys_of: Callable[[list], list] | None = None, always: bool = False) -> None:
        """``keys_of``: the keys of a batch of records, as ``key_selector`` gives them one by one;
        ``always``: compute them for one channel too (a user's KeySelector runs for every record,
        as in PyFlink)."""
        self.num_channels = num_channels
        self.always = always
        self.max_parallelism = max_parallelism
        self.keys_of = keys_of or (lambda values: list(map(key_selector, values)))
        self.key_hash = key_hasher(key_type)
        self.cache: dict[Any, int] = {}
        self.cache_any_key = equal_keys_hash_equal(key_type)

    def channel_of(self, key: Any) -> int:
        key_group = assign_to_key_group(self.key_hash(key), self.max_parallelism)
        return key_group * self.num_channels // self.max_parallelism

    def route(self, values, timestamps):
        n = self.num_channels
        if n == 1:
            if self.always:
                self.keys_of(values)
            return [(0, values, timestamps)]
        keys = self.keys_of(values)
        if self.cache_any_key or _PLAIN_KEYS.issuperset(map(type, keys)):
            channels = self._remembered_channels(keys)
        else:
            channels = list(map(self._channel_of_any, keys))
        return _split(channels, values, timestamps, n)

    def _remembered_channels(self, keys: list) -> list[int]:
        """The channels of keys whose equal values are one key: remembered per key, a batch's in
        one look-up pass (in C) once every key of it was seen."""
        cache = self.cache
        try:
            return list(map(cache.__getitem__, keys))
        except KeyError:
            try:
                unseen = set(keys).difference(cache)
            except TypeError:  # an unhashable key (a list, a dict): routed without the cache
                return list(map(self.channel_of, keys))
        except TypeError:
            return list(map(self.channel_of, keys))
        channel_of = self.channel_of
        if len(cache) + len(unseen) > KEY_CACHE_LIMIT:
            return [cache[key] if key in cache else channel_of(key) for key in keys]
        for key in unseen:
            cache[key] = channel_of(key)
        return list(map(cache.__getitem__, keys))

    def _channel_of_any(self, key: Any) -> int:
        """A key of a type whose equal values may be different keys (1, True and 1.0 pickled):
        remembered only when it is a str, an int or a tuple of them."""
        kind = type(key)
        if kind in _PLAIN_KEYS or (kind is tuple and _PLAIN_KEYS.issuperset(map(type, key))):
            channel = self.cache.get(key)
            if channel is None:
                channel = self.channel_of(key)
                if len(self.cache) < KEY_CACHE_LIMIT:
                    self.cache[key] = channel
            return channel
        return self.channel_of(key)


class Custom(ChannelSelector):
    def __init__(self, num_channels: int, partition: Callable[[Any, int], int], key_selector: Callable[[Any], Any]) -> None:
        self.num_channels = num_channels
        self.partition = partition
        self.key_selector = key_selector

    def route(self, values, timestamps):
        n, partition, select = self.num_channels, self.partition, self.key_selector
        channels = []
        for value in values:
            channel = partition(select(value), n)
            if not 0 <= channel < n:
                raise ValueError(f"custom partitioner returned channel {channel}, not in [0, {n})")
            channels.append(channel)
        return _split(channels, values, timestamps, n)


def channel_selector(partitioner: p.StreamPartitioner, num_channels: int, max_parallelism: int, rng: Random,
                     runtime: Any = None) -> ChannelSelector:
    """The channel selection of ``partitioner``; a user's KeySelector runs in a copy the task
    ``runtime`` opens (without one, the partitioner's own)."""
    if isinstance(partitioner, (p.ForwardPartitioner, p.GlobalPartitioner)):
        return SingleChannel(num_channels)
    if isinstance(partitioner, p.BroadcastPartitioner):
        return Broadcast(num_channels)
    if isinstance(partitioner, p.RebalancePartitioner):
        return RoundRobin(num_channels, rng.randrange(num_channels))
    if isinstance(partitioner, p.RescalePartitioner):
        return RoundRobin(num_channels, 0)
    if isinstance(partitioner, p.ShufflePartitioner):
        return Shuffle(num_channels, rng)
    if isinstance(partitioner, p.KeyGroupStreamPartitioner):
        if partitioner.key_function is not None and runtime is not None:
            key = runtime.key_selector(partitioner)
            return KeyGroupChannels(num_channels, max_parallelism, key.selector, key.key_type, key.keys_of, always=True)
        return KeyGroupChannels(num_channels, max_parallelism, partitioner.key_selector, partitioner.key_type,
                                partitioner.keys_of)
    if isinstance(partitioner, p.CustomPartitionerWrapper):
        return Custom(num_channels, partitioner.partitioner, partitioner.key_selector)
    raise ValueError(f"no channel selection for partitioner {partitioner!r}")
