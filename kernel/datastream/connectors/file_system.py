"""Files as sources and sinks (``pyflink.datastream.connectors.file_system``)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kernel.pyflink import unsupported
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
    """When a bucket's in-progress part file is closed (becomes pending) and a new one started.
    Limits in bytes and ms; None: never."""

    def __init__(self, part_size: int | None, rollover_interval: int | None, inactivity_interval: int | None) -> None:
        self.part_size = part_size
        self.rollover_interval = rollover_interval
        self.inactivity_interval = inactivity_interval

    @staticmethod
    def default_rolling_policy(part_size: int = 1024 * 1024 * 128, rollover_interval: int = 60 * 1000,
                               inactivity_interval: int = 60 * 1000) -> DefaultRollingPolicy:
        """Rolls a part larger than ``part_size`` (before the next record, and at a
        checkpoint), open for ``rollover_interval`` or not written for ``inactivity_interval``
        (checked every bucket check interval)."""
        for name, value in (("part_size", part_size), ("rollover_interval", rollover_interval),
                            ("inactivity_interval", inactivity_interval)):
            if value <= 0:
                raise ValueError(f"{name} must be positive")
        return DefaultRollingPolicy(part_size, rollover_interval, inactivity_interval)

    @staticmethod
    def on_checkpoint_rolling_policy() -> OnCheckpointRollingPolicy:
        """Rolls (only) at every checkpoint."""
        return OnCheckpointRollingPolicy(None, None, None)

    def rolls_on_checkpoint(self, size: int) -> bool:
        """Whether an in-progress part of ``size`` bytes closes at a checkpoint."""
        return self.part_size is not None and size > self.part_size


class DefaultRollingPolicy(RollingPolicy):
    """Flink's DefaultRollingPolicy: part size, rollover and inactivity intervals."""


class OnCheckpointRollingPolicy(RollingPolicy):
    """Flink's OnCheckpointRollingPolicy: no part file crosses a checkpoint."""

    def rolls_on_checkpoint(self, size: int) -> bool:
        return True


#: Java DateTimeFormatter letters rill formats, by run length
_FIELDS = {("y", 4): "%Y", ("u", 4): "%Y", ("y", 2): "%y", ("u", 2): "%y", ("M", 2): "%m", ("d", 2): "%d",
           ("H", 2): "%H", ("m", 2): "%M", ("s", 2): "%S", ("D", 3): "%j"}


def _strftime_pattern(pattern: str) -> str:
    """A Java DateTimeFormatter pattern (``yyyy-MM-dd--HH``) as a ``strftime`` one; text in
    single quotes is literal."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "'":
            end = pattern.find("'", i + 1)
            if end < 0:
                raise ValueError(f"date-time pattern {pattern!r}: unterminated quote")
            out.append(pattern[i + 1:end].replace("%", "%%") or "'")
            i = end + 1
            continue
        run = 1
        while i + run < len(pattern) and pattern[i + run] == char:
            run += 1
        if char.isalpha():
            field = _FIELDS.get((char, run))
            if field is None:
                raise ValueError(f"date-time pattern {pattern!r}: {char * run!r} is not supported "
                                 "(yyyy, yy, MM, dd, DDD, HH, mm, ss)")
            out.append(field)
        else:
            out.append((char * run).replace("%", "%%"))
        i += run
    return "".join(out)


def _time_zone(zone_id: str | None) -> tzinfo | None:
    """A Java ZoneId: a region (``Europe/Berlin``), ``UTC``/``GMT``/``Z``, or an offset
    (``+08:00``, ``GMT-08:00``); None is the system's time zone."""
    if zone_id is None:
        return None
    text = zone_id.strip()
    for prefix in ("UTC", "GMT", "UT"):
        if text.startswith(prefix) and (len(text) == len(prefix) or text[len(prefix)] in "+-"):
            text = text[len(prefix):] or "Z"
            break
    if text == "Z":
        return timezone.utc
    if text[:1] in "+-":
        hours, _, minutes = text[1:].partition(":")
        try:
            offset = timedelta(hours=int(hours), minutes=int(minutes or 0))
        except ValueError:
            raise ValueError(f"time zone {zone_id!r}: not an offset like +08:00") from None
        return timezone(-offset if text[0] == "-" else offset)
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {zone_id!r}") from None



@unsupported.members("pyflink.datastream.connectors.file_system:BucketAssigner")
class BucketAssigner:
    """Which directory under the base path a record goes to (its bucket)."""

    def __init__(self, kind: str, format_str: str = "yyyy-MM-dd--HH", timezone_id: str | None = None) -> None:
        self.kind = kind
        self.format_str = format_str
        self.timezone_id = timezone_id
        self._format = _strftime_pattern(format_str)
        self._zone = _time_zone(timezone_id)

    @staticmethod
    def base_path_bucket_assigner() -> BucketAssigner:
        """Every part file in the base path itself."""
        return BucketAssigner("base_path")

    @staticmethod
    def date_time_bucket_assigner(format_str: str = "yyyy-MM-dd--HH", timezone_id: str | None = None) -> BucketAssigner:
        """One directory per ``format_str`` (a Java DateTimeFormatter pattern) of the current
        processing time in ``timezone_id`` (default: the system's time zone); hourly by default."""
        return BucketAssigner("date_time", format_str, timezone_id)

    def bucket_id(self, now_ms: int) -> str:
        """The bucket of a record written at processing time ``now_ms`` ('' for the base path)."""
        if self.kind == "base_path":
            return ""
        return datetime.fromtimestamp(now_ms / 1000, self._zone).strftime(self._format)


@unsupported.members("pyflink.datastream.connectors.file_system:FileSink")
class FileSink:
    """Writes records as lines into part files in bucket directories under a base path
    (default: hourly ``yyyy-MM-dd--HH`` directories of processing time, as Flink).

    Part files are named ``<prefix>-<uuid>-<counter><suffix>`` (a fresh uuid per writer and
    bucket) and are written hidden (``.<name>.inprogress.<uuid>``). They become visible when
    committed: with checkpointing, once the checkpoint after which they were closed completes
    (two-phase commit, exactly once); without, at the end of input (see
    :mod:`kernel.runtime.streaming.file_sink`).
    """

    def __init__(self, base_path: str, encoder: Encoder, output_file_config: OutputFileConfig,
                 rolling_policy: RollingPolicy, bucket_assigner: BucketAssigner,
                 bucket_check_interval: int = 60 * 1000) -> None:
        self.base_path = base_path
        self.encoder = encoder
        self.output_file_config = output_file_config
        self.rolling_policy = rolling_policy
        self.bucket_assigner = bucket_assigner
        self.bucket_check_interval = bucket_check_interval

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> FileSink.RowFormatBuilder:
        return FileSink.RowFormatBuilder(base_path, encoder)

    class RowFormatBuilder:
        def __init__(self, base_path: str, encoder: Encoder) -> None:
            self._base_path = base_path
            self._encoder = encoder
            self._config = OutputFileConfig()
            self._rolling: RollingPolicy = RollingPolicy.default_rolling_policy()
            self._buckets = BucketAssigner.date_time_bucket_assigner()
            self._check_interval = 60 * 1000

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
            """How often (ms of processing time) part files are checked against the rolling
            policy's rollover and inactivity intervals."""
            if interval <= 0:
                raise ValueError("the bucket check interval must be positive")
            self._check_interval = interval
            return self

        def build(self) -> FileSink:
            return FileSink(self._base_path, self._encoder, self._config, self._rolling, self._buckets,
                            self._check_interval)


__getattr__ = unsupported.module_getattr(__name__)
