"""Flink's ``KafkaSourceReaderMetrics``, in the source operator's metric group (user metrics:
``rill metrics``, ``rill report``, the ``user_metrics`` view).

Per partition ``KafkaSourceReader.topic.<t>.partition.<p>.currentOffset`` (the last offset
emitted, -1 before any), ``.committedOffset`` (-1 before any commit), ``.records-lag`` (records
behind the partition's high watermark as last fetched, no request) and rill's
``.recordsConsumed`` (its throughput); ``KafkaSourceReader.KafkaConsumer.records-lag-max``,
``KafkaSourceReader.commitsSucceeded`` / ``commitsFailed`` and FLIP-33's ``pendingRecords``.
"""

from __future__ import annotations

from typing import Any


class KafkaSourceReaderMetrics:
    def __init__(self, group: Any, reader: Any) -> None:
        self.reader = reader
        self.group = group.add_group("KafkaSourceReader")
        self.commits_succeeded = self.group.counter("commitsSucceeded")
        self.commits_failed = self.group.counter("commitsFailed")
        self.committed_offsets: dict[str, int] = {}
        self.records: dict[str, Any] = {}  # recordsConsumed per partition
        self.group.add_group("KafkaConsumer").gauge("records-lag-max", lambda: max(self.lags().values(), default=0))
        group.gauge("pendingRecords", lambda: sum(self.lags().values()))

    def add_split(self, split: Any) -> None:
        partition = self.group.add_group("topic", split.topic).add_group("partition", str(split.partition))
        partition.gauge("currentOffset", lambda: split.next - 1 if split.next > split.first else -1)
        partition.gauge("committedOffset", lambda: self.committed_offsets.get(split.name, -1))
        partition.gauge("records-lag", lambda: self.lags().get(split.name, 0))
        self.records[split.name] = partition.counter("recordsConsumed")

    def consumed(self, runs: list[tuple[str, int]]) -> None:
        records = self.records
        for name, count in runs:
            records[name].inc(count)

    def committed(self, names: list[str], offsets: list[int], succeeded: bool) -> None:
        if succeeded:
            self.commits_succeeded.inc()
            self.committed_offsets.update(zip(names, offsets))
        else:
            self.commits_failed.inc()

    def lags(self) -> dict[str, int]:
        """Records behind the high watermark per partition (read where metrics are sampled)."""
        reader = self.reader
        consumer, lags = reader.consumer, {}
        if consumer is None:
            return lags
        for split in list(reader.splits.values()):
            try:
                high = consumer.get_watermark_offsets(reader.ck.TopicPartition(split.topic, split.partition),
                                                      cached=True)[1]
            except Exception:  # the consumer closed meanwhile
                return lags
            lags[split.name] = max(0, high - split.next) if high >= 0 else 0
        return lags
