"""Which source subtask reads a partition: Flink's ``KafkaSourceEnumerator.getSplitOwner``."""

from __future__ import annotations


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit signed)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def split_owner(topic: str, partition: int, readers: int) -> int:
    """``(((topic.hashCode() * 31) & 0x7FFFFFFF) % readers + partition) % readers``: a topic's
    partitions go round robin over the readers from a start index its name gives."""
    start = ((java_string_hash(topic) * 31) & 0x7FFFFFFF) % readers
    return (start + partition) % readers
