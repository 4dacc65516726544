"""Files as sources and sinks (``pyflink.datastream.connectors.file_system``)."""

from __future__ import annotations

from typing import Any

from kernel import unsupported
from kernel.common.serialization import Encoder
from kernel.common.time import Duration
from kernel.common.typeinfo import TypeInformation, Types


class StreamFormat:
    """How records are read from a file stream."""

    def __init__(self, kind: str, charset_name: str = "UTF-8") -> None:
        self.kind = kind
        self.charset_name = charset_name

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> StreamFormat:
        """One string record per line (line terminator removed)."""
        return StreamFormat("text_line", charset_name)


@unsupported.members("pyflink.datastream.connectors.file_system:FileSource")
class FileSource:
    """Reads files (or every file under directories) with a StreamFormat; bounded unless
    ``monitor_continuously`` was set."""

    def __init__(self, stream_format: StreamFormat, paths: tuple[str, ...], discovery_interval_ms: int | None) -> None:
        self.stream_format = stream_format
        self.paths = paths
        self.discovery_interval_ms = discovery_interval_ms

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str) -> FileSourceBuilder:
        if not paths:
            raise ValueError("FileSource needs at least one path")
        return FileSourceBuilder(stream_format, paths)

    def produced_type(self) -> TypeInformation:
        return Types.STRING()

    def is_bounded(self) -> bool:
        return self.discovery_interval_ms is None

    def __repr__(self) -> str:
        return f"FileSource({', '.join(self.paths)})"


@unsupported.members("pyflink.datastream.connectors.file_system:FileSourceBuilder")
class FileSourceBuilder:
    def __init__(self, stream_format: StreamFormat, paths: tuple[str, ...]) -> None:
        self._format = stream_format
        self._paths = paths
        self._interval: int | None = None

    def monitor_continuously(self, discovery_interval: Duration) -> FileSourceBuilder:
        self._interval = discovery_interval.to_milliseconds()
        return self

    def process_static_file_set(self) -> FileSourceBuilder:
        self._interval = None
        return self

    def build(self) -> FileSource:
        return FileSource(self._format, self._paths, self._interval)


@unsupported.members("pyflink.datastream.connectors.file_system:OutputFileConfig")
class OutputFileConfig:
    def __init__(self, part_prefix: str = "part", part_suffix: str = "") -> None:
        self.part_prefix = part_prefix
        self.part_suffix = part_suffix

    def get_part_prefix(self) -> str:
        return self.part_prefix

    def get_part_suffix(self) -> str:
        return self.part_suffix

    @staticmethod
    def builder() -> OutputFileConfig.OutputFileConfigBuilder:
        return OutputFileConfig.OutputFileConfigBuilder()

    class OutputFileConfigBuilder:
        def __init__(self) -> None:
            self._prefix = "part"
            self._suffix = ""

        def with_part_prefix(self, prefix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self._prefix = prefix
            return self

        def with_part_suffix(self, suffix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self._suffix = suffix
            return self

        def build(self) -> OutputFileConfig:
            return OutputFileConfig(self._prefix, self._suffix)


@unsupported.members("pyflink.datastream.connectors.file_system:RollingPolicy")
class RollingPolicy:
    """When a part file is closed and a new one started."""

    def __init__(self, part_size: int | None, rollover_interval: int | None, inactivity_interval: int | None) -> None:
        self.part_size = part_size
        self.rollover_interval = rollover_interval
        self.inactivity_interval = inactivity_interval

    @staticmethod
    def default_rolling_policy(part_size: int = 1024 * 1024 * 128, rollover_interval: int = 60 * 1000,
                               inactivity_interval: int = 60 * 1000) -> RollingPolicy:
        return RollingPolicy(part_size, rollover_interval, inactivity_interval)

    @staticmethod
    def on_checkpoint_rolling_policy() -> RollingPolicy:
        return RollingPolicy(None, None, None)


@unsupported.members("pyflink.datastream.connectors.file_system:BucketAssigner")
class BucketAssigner:
    """Which sub-directory of the base path a record goes to."""

    def __init__(self, kind: str, format_str: str = "yyyy-MM-dd--HH") -> None:
        self.kind = kind
        self.format_str = format_str

    @staticmethod
    def base_path_bucket_assigner() -> BucketAssigner:
        return BucketAssigner("base_path")

    @staticmethod
    def date_time_bucket_assigner(format_str: str = "yyyy-MM-dd--HH", timezone_id: Any = None) -> BucketAssigner:
        return BucketAssigner("date_time", format_str)


@unsupported.members("pyflink.datastream.connectors.file_system:FileSink")
class FileSink:
    """Writes records as lines into part files under a base path.

    Part files are named ``<prefix>-<subtask>-<counter><suffix>`` and become visible when the
    input ends (rill has no checkpoints); until then they are hidden in-progress files.
    """

    def __init__(self, base_path: str, encoder: Encoder, output_file_config: OutputFileConfig,
                 rolling_policy: RollingPolicy, bucket_assigner: BucketAssigner) -> None:
        self.base_path = base_path
        self.encoder = encoder
        self.output_file_config = output_file_config
        self.rolling_policy = rolling_policy
        self.bucket_assigner = bucket_assigner

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> FileSink.RowFormatBuilder:
        return FileSink.RowFormatBuilder(base_path, encoder)

    class RowFormatBuilder:
        def __init__(self, base_path: str, encoder: Encoder) -> None:
            self._base_path = base_path
            self._encoder = encoder
            self._config = OutputFileConfig()
            self._rolling = RollingPolicy.default_rolling_policy()
            self._buckets = BucketAssigner.base_path_bucket_assigner()

        def with_output_file_config(self, output_file_config: OutputFileConfig) -> FileSink.RowFormatBuilder:
            self._config = output_file_config
            return self

        def with_rolling_policy(self, rolling_policy: RollingPolicy) -> FileSink.RowFormatBuilder:
            self._rolling = rolling_policy
            return self

        def with_bucket_assigner(self, bucket_assigner: BucketAssigner) -> FileSink.RowFormatBuilder:
            self._buckets = bucket_assigner
            return self

        def with_bucket_check_interval(self, interval: int) -> FileSink.RowFormatBuilder:
            return self

        def build(self) -> FileSink:
            return FileSink(self._base_path, self._encoder, self._config, self._rolling, self._buckets)


__getattr__ = unsupported.module_getattr(__name__)
