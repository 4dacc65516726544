"""The PyFlink 2.3 names rill does not support, grouped by feature, with the reason.

Names are PyFlink's ``module: (qualified names...)``; a name is a class when it starts with
an upper-case letter (PyFlink's CamelCase), else a function or method. Every name here is in
``tests/kernel/datastream/pyflink_api.txt`` (PyFlink's public API) and is refused when used (see
:mod:`kernel.pyflink.unsupported`); docs/pyflink.md lists the groups. A group disappears when rill gains
the feature: delete it here and implement the names.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UnsupportedGroup:
    title: str
    reason: str
    names: dict[str, tuple[str, ...]]


DS = "pyflink.datastream"
SEE = "pyflink.datastream.stream_execution_environment"
CONNECTORS = "pyflink.datastream.connectors"
FORMATS = "pyflink.datastream.formats"

STATE_BACKEND_OBJECTS = UnsupportedGroup(
    "state backend and checkpoint storage objects",
    "PyFlink 2.3 accepts them nowhere; choose with state.backend.type and execution.checkpointing.storage", {
        f"{DS}.checkpoint_storage": (
            "CheckpointStorage", "JobManagerCheckpointStorage", "FileSystemCheckpointStorage", "CustomCheckpointStorage",
        ),
        f"{DS}.state_backend": (
            "StateBackend", "HashMapStateBackend", "EmbeddedRocksDBStateBackend", "CustomStateBackend",
            "PredefinedOptions",
        ),
    })

CHANGELOG = UnsupportedGroup(
    "changelog state backend", "rill keeps keyed state on the heap and snapshots it in full", {
        SEE: ("StreamExecutionEnvironment.enable_changelog_state_backend",
              "StreamExecutionEnvironment.is_changelog_state_backend_enabled"),
    })

EXTERNAL_CONNECTORS = UnsupportedGroup(
    "connectors", "rill reads collections, files, number sequences, generated data and Kafka (KafkaSource), and "
                  "writes to stdout, files, Kafka (KafkaSink) and sink functions", {
        f"{CONNECTORS}.kafka": ("FlinkKafkaConsumer", "FlinkKafkaProducer", "Semantic"),
        f"{CONNECTORS}.dynamic_kafka": (
            "DynamicKafkaSource", "DynamicKafkaSourceBuilder", "KafkaMetadataService",
            "KafkaRecordDeserializationSchema", "KafkaStreamSetSubscriber", "KafkaStreamSubscriber",
            "SingleClusterTopicMetadataService", "StreamPatternSubscriber",
        ),
        f"{CONNECTORS}.pulsar": (
            "MessageDelayer", "PulsarSink", "PulsarSinkBuilder", "PulsarSource", "PulsarSourceBuilder",
            "RangeGenerator", "StartCursor", "StopCursor", "TopicRoutingMode",
        ),
        f"{CONNECTORS}.kinesis": (
            "FlinkKinesisConsumer", "KinesisDeserializationSchema", "KinesisFirehoseSink",
            "KinesisFirehoseSinkBuilder", "KinesisShardAssigner", "KinesisStreamsSink", "KinesisStreamsSinkBuilder",
            "PartitionKeyGenerator", "WatermarkTracker",
        ),
        f"{CONNECTORS}.elasticsearch": (
            "Elasticsearch6SinkBuilder", "Elasticsearch7SinkBuilder", "ElasticsearchEmitter", "ElasticsearchSink",
            "FlushBackoffType",
        ),
        f"{CONNECTORS}.cassandra": (
            "CassandraCommitter", "CassandraFailureHandler", "CassandraSink", "ClusterBuilder", "ConsistencyLevel",
            "MapperOptions",
        ),
        f"{CONNECTORS}.jdbc": ("JdbcConnectionOptions", "JdbcExecutionOptions", "JdbcSink"),
        f"{CONNECTORS}.rabbitmq": ("RMQConnectionConfig", "RMQSink", "RMQSource"),
        f"{CONNECTORS}.hybrid_source": ("HybridSource", "HybridSourceBuilder"),
        "pyflink.common.serialization": (
            "SerializationSchema", "DeserializationSchema", "ByteArraySchema", "RowFieldExtractorSchema",
        ),
    })

FILE_CONNECTOR = UnsupportedGroup(
    "file connector features", "rill's FileSource reads text lines (StreamFormat.text_line_format) and its "
                               "FileSink writes rows with an Encoder", {
        f"{CONNECTORS}.file_system": (
            "BulkFormat", "FileCompactStrategy", "FileCompactor", "FileEnumeratorProvider",
            "FileSplitAssignerProvider", "StreamingFileSink", "FileSink.BaseBuilder", "FileSink.BulkFormatBuilder",
            "FileSink.for_bulk_format", "FileSink.RowFormatBuilder.enable_compact",
            "FileSink.RowFormatBuilder.disable_compact", "FileSource.for_bulk_file_format",
            "FileSourceBuilder.set_file_enumerator", "FileSourceBuilder.set_split_assigner",
        ),
        "pyflink.common.serialization": ("BulkWriterFactory",),
    })

FORMAT_LIBRARIES = UnsupportedGroup("formats", "rill has no Avro, CSV, ORC or Parquet formats, and reads JSON rows "
                                                "by their type info, not by a JSON schema", {
    f"{FORMATS}.avro": (
        "AvroBulkWriters", "AvroInputFormat", "AvroRowDeserializationSchema", "AvroRowSerializationSchema",
        "AvroSchema", "GenericRecordAvroTypeInfo",
    ),
    f"{FORMATS}.csv": (
        "CsvBulkWriters", "CsvReaderFormat", "CsvRowDeserializationSchema", "CsvRowSerializationSchema", "CsvSchema",
        "CsvSchemaBuilder",
    ),
    f"{FORMATS}.json": ("JsonRowDeserializationSchema.Builder.json_schema",),
    f"{FORMATS}.orc": ("OrcBulkWriters",),
    f"{FORMATS}.parquet": (
        "AvroParquetReaders", "AvroParquetWriters", "ParquetBulkWriters", "ParquetColumnarRowInputFormat",
    ),
})

JAVA_BRIDGE = UnsupportedGroup("Java objects", "rill runs no JVM, so there is no Java object behind it", {
    "pyflink.common.io": ("InputFormat",),
    "pyflink.common.typeinfo": ("TypeInformation.get_java_type_info",),
    "pyflink.common.types": ("RowKind.to_j_row_kind",),
    "pyflink.common.watermark_strategy": ("AssignerWithPeriodicWatermarksWrapper",),
    f"{DS}.functions": ("SourceFunction", "SinkFunction.get_java_function"),
    f"{DS}.output_tag": ("OutputTag.get_java_output_tag",),
    f"{DS}.slot_sharing_group": (
        "MemorySize.get_java_memory_size", "SlotSharingGroup.get_java_slot_sharing_group",
    ),
    SEE: ("StreamExecutionEnvironment.create_input", "StreamExecutionEnvironment.add_source"),
    f"{CONNECTORS}.base": ("Source", "Sink", "StreamTransformer", "SupportsPreprocessing"),
    f"{CONNECTORS}.file_system": (
        "FileSource.get_java_function", "FileSink.get_java_function", "FileSink.get_transformer",
        "BucketAssigner.get_java_object", "OutputFileConfig.get_java_object", "RollingPolicy.get_java_object",
    ),
    f"{CONNECTORS}.number_seq": ("NumberSequenceSource.get_java_function",),
    f"{CONNECTORS}.kafka": ("KafkaSource.get_java_function", "KafkaSink.get_java_function",
                            "KafkaSink.get_transformer"),
})

RESTART_STRATEGIES = UnsupportedGroup(
    "restart strategies in code", "choose one with rill's restart-strategy.* configuration keys", {
        "pyflink.common.restart_strategy": ("RestartStrategies", "RestartStrategyConfiguration"),
    })

DISTRIBUTED_CACHE = UnsupportedGroup(
    "distributed cache", "rill's tasks read files from the local file system by path", {
        SEE: ("StreamExecutionEnvironment.register_cached_file",),
    })

CACHED_STREAMS = UnsupportedGroup(
    "cached streams", "rill does not keep intermediate results between jobs yet", {
        f"{DS}.data_stream": ("DataStream.cache",),
    })

GROUPS: tuple[UnsupportedGroup, ...] = (
    STATE_BACKEND_OBJECTS, CHANGELOG, EXTERNAL_CONNECTORS, FILE_CONNECTOR,
    FORMAT_LIBRARIES, JAVA_BRIDGE, RESTART_STRATEGIES, DISTRIBUTED_CACHE, CACHED_STREAMS,
)
