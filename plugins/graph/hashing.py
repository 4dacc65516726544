"""Operator IDs exactly as Flink's StreamGraphHasherV2 computes them.

Breadth-first from the sources (sorted by node id); a node is hashed once all its inputs are.
A node with a user ``uid`` hashes the uid's UTF-8 bytes; any other node hashes its position
(the number of nodes hashed before it), repeated once per chainable output edge, then mixes in
the hashes of its inputs. The primitive is Murmur3 x64 128-bit with seed 0 (Guava's
``murmur3_128(0)``), bytes in Guava's order. IDs therefore depend on the topology, never on
names, node ids or user functions, and are the same in every process.
"""

from __future__ import annotations

import struct
from collections import deque
from typing import Callable

import mmh3

from kernel.errors import JobDefinitionError
from kernel.runtime.graph.stream import StreamEdge, StreamGraph, StreamNode


def murmur3_128(data: bytes) -> bytes:
    """Guava ``Hashing.murmur3_128(0).hashBytes(data).asBytes()``."""
    return mmh3.hash_bytes(data, 0, True)


def put_int(value: int) -> bytes:
    """Guava ``Hasher.putInt``: four bytes, little-endian two's complement."""
    return struct.pack("<i", value)


def user_hash(uid: str) -> bytes:
    return murmur3_128(uid.encode("utf-8"))


def traverse_and_hash(graph: StreamGraph, is_chainable: Callable[[StreamEdge], bool]) -> dict[int, bytes]:
    """16-byte hash per stream node id."""
    hashes: dict[int, bytes] = {}
    visited: set[int] = set()
    remaining: deque[int] = deque()
    for source in graph.source_ids:
        remaining.append(source)
        visited.add(source)
    while remaining:
        node = graph.nodes[remaining.popleft()]
        if _hash_node(node, graph, hashes, is_chainable):
            for edge in node.out_edges:
                if edge.target_id not in visited:
                    remaining.append(edge.target_id)
                    visited.add(edge.target_id)
        else:
            visited.discard(node.id)  # revisited once another input has its hash
    return hashes


def _hash_node(
    node: StreamNode, graph: StreamGraph, hashes: dict[int, bytes], is_chainable: Callable[[StreamEdge], bool]
) -> bool:
    if node.uid is not None:
        digest = user_hash(node.uid)
        if digest in hashes.values():
            raise JobDefinitionError(
                f"Hash collision on user-specified ID {node.uid!r} (operator {node.name!r}). Most likely "
                "cause is a non-unique ID. Please check that all IDs specified via uid() are unique."
            )
        hashes[node.id] = digest
        return True
    if any(edge.source_id not in hashes for edge in node.in_edges):
        return False
    position = put_int(len(hashes))
    data = position
    for edge in node.out_edges:
        if graph.chaining_enabled and is_chainable(edge):
            data += position
    digest = bytearray(murmur3_128(data))
    for edge in node.in_edges:
        other = hashes[edge.source_id]
        for j in range(16):
            digest[j] = ((digest[j] * 37) ^ other[j]) & 0xFF
    hashes[node.id] = bytes(digest)
    return True
