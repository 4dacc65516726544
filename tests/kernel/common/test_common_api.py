"""``kernel.common`` and the environment's settings as PyFlink 2.3 has them: ExecutionConfig,
Configuration, ConfigOptions, slot sharing groups and memory sizes, window serializers."""

from __future__ import annotations

from io import BytesIO

import pytest

from kernel.common import Configuration, ConfigOptions, ExecutionConfig, Types
from kernel.datastream import MemorySize, SlotSharingGroup, StreamExecutionEnvironment
from kernel.datastream.window import (
    CountTumblingWindowAssigner,
    CountWindow,
    CountWindowSerializer,
    EventTimeSessionWindows,
    GlobalWindow,
    GlobalWindows,
    GlobalWindowSerializer,
    Time,
    TimeWindow,
    TimeWindowSerializer,
    TumblingEventTimeWindows,
)
from kernel.lifecycle.executors import CapturingExecutor, use_executor
from kernel.lifecycle.session import Session
from tests.runtime import run_job


@pytest.fixture
def env():
    with use_executor(CapturingExecutor(Session.open(environ={}))):
        yield StreamExecutionEnvironment.get_execution_environment()


def test_execution_config_defaults_are_flinks(env):
    config = env.get_config()
    assert isinstance(config, ExecutionConfig) and env.from_collection([1]).get_execution_config() is config
    assert (config.get_auto_watermark_interval(), config.get_latency_tracking_interval()) == (200, 0)
    assert (config.get_task_cancellation_interval(), config.get_task_cancellation_timeout()) == (30000, 180000)
    assert (config.is_closure_cleaner_enabled(), config.has_auto_generated_uids_enabled()) == (True, True)
    assert (config.is_force_kryo_enabled(), config.is_force_avro_enabled(), config.has_generic_types_disabled(),
            config.is_object_reuse_enabled(), config.is_use_snapshot_compression()) == (False,) * 5
    assert (config.get_default_kryo_serializer_classes(), config.get_registered_kryo_types(),
            config.get_registered_pojo_types()) == ({}, [], [])
    config.disable_closure_cleaner().enable_object_reuse().disable_generic_types().set_use_snapshot_compression(True)
    assert (config.is_closure_cleaner_enabled(), config.is_object_reuse_enabled(),
            config.has_generic_types_disabled(), config.is_use_snapshot_compression()) == (False, True, True, True)
    with pytest.raises(ValueError, match="Timeout value must be >= 0."):
        config.set_task_cancellation_timeout(-1)


def test_the_task_cancellation_settings_are_the_jobs_configuration(env):
    env.get_config().set_task_cancellation_timeout(1500).set_task_cancellation_interval(600)
    assert (env.get_config().get_task_cancellation_interval(), env.get_config().get_task_cancellation_timeout()) == (
        600, 1500)
    assert env._configuration.get_string("task.cancellation.timeout") == "1500 ms"


def test_latency_tracking_interval_is_rills_latency_marker_interval(env):
    env.get_config().set_latency_tracking_interval(150).set_auto_watermark_interval(50)
    assert (env.get_config().get_latency_tracking_interval(), env.get_config().get_auto_watermark_interval()) == (150, 50)
    env.from_collection([1]).print()
    program = env._program(None, clear=False)
    assert program.sets() == ["metrics.latency.interval=150 ms"] and program.auto_watermark_interval == 50


def test_global_job_parameters_reach_every_function():
    from kernel.datastream import MapFunction

    class Threshold(MapFunction):
        def open(self, runtime_context):
            self.limit = runtime_context.get_job_parameter("limit", "none")
            self.other = runtime_context.get_job_parameter("other", "default")

        def map(self, value):
            return f"{value} {self.limit} {self.other}"

    def build(env):
        env.get_config().set_global_job_parameters({"limit": 5})
        env.from_collection([1], Types.INT()).map(Threshold(), Types.STRING()).print()
        env.execute()

    assert run_job(build).lines == ["1 5 default"]


def test_environment_settings_pyflink_records(env):
    env.add_jars("file:///a.jar", "file:///b.jar")
    env.add_jars("file:///c.jar")
    env.add_classpaths("file:///d.jar")
    env.set_python_executable("py_env/bin/python")
    env.set_python_requirements("requirements.txt", "cached_dir")
    recorded = env._configuration.to_dict()
    assert Configuration.parse_list_value(recorded["pipeline.jars"]) == ["file:///a.jar", "file:///b.jar",
                                                                          "file:///c.jar"]
    assert recorded["pipeline.classpaths"] == "['file:///d.jar']"
    assert (recorded["python.executable"], recorded["python.requirements"]) == ("py_env/bin/python",
                                                                                 "requirements.txt#cached_dir")
    env.from_collection([1]).print()
    # the jars change nothing; the Python dependencies reach rill's configuration
    assert env._program(None, clear=False).sets() == ['python.executable="py_env/bin/python"',
                                                      'python.requirements="requirements.txt#cached_dir"']
    assert env.is_chaining_of_operators_with_different_max_parallelism_enabled() is True
    env.set_default_local_parallelism(3)
    assert env.get_default_local_parallelism() == 3
    group = SlotSharingGroup.builder("heavy").set_cpu_cores(2.0).set_task_heap_memory_mb(100).build()
    assert env.register_slot_sharing_group(group) is env


def test_configuration_as_pyflinks():
    config = Configuration.from_dict({"a": "1", "b": "true"})
    assert (config.get_integer("a", 0), config.get_boolean("b", False), config.get_string("c", "x")) == (1, True, "x")
    config.set_bytearray("bytes", bytearray(b"\x01\x02"))
    assert config.get_bytearray("bytes", bytearray()) == bytearray(b"\x01\x02")
    assert config.get_bytearray("missing", bytearray(b"d")) == bytearray(b"d")
    target = {"z": "0"}
    config.add_all_to_dict(target)
    assert target == {"z": "0", "a": "1", "b": "true"}
    assert Configuration.parse_list_value("[a, 'b c']") == ["a", "b c"]
    assert Configuration.parse_list_value("a;b") == ["a", "b"]
    assert Configuration.parse_list_value("") == []


def test_config_options():
    option = ConfigOptions.key("tmp.dir").string_type().default_value("/tmp")
    assert (option.key(), option.default_value(), option.has_default_value()) == ("tmp.dir", "/tmp", True)
    assert not ConfigOptions.key("user.name").string_type().no_default_value().has_default_value()
    assert ConfigOptions.key("n").int_type().default_value(100) == ConfigOptions.key("n").long_type().default_value(100)


def test_memory_sizes_print_as_java_does():
    # Java's MemorySize.toString: the largest unit dividing the size exactly (0 and whole
    # tebibytes fall back to bytes, as Flink's formatToString does)
    assert [str(MemorySize(bytes_size=n)) for n in (0, 1536, 2048, 3 << 20, 5 << 30, 1 << 40)] == [
        "0 bytes", "1536 bytes", "2 kb", "3 mb", "5 gb", "1099511627776 bytes"]
    size = MemorySize.of_mebi_bytes(100)
    assert (size.get_bytes(), size.get_kibi_bytes(), size.get_mebi_bytes(), size.get_gibi_bytes()) == (
        104857600, 102400, 100, 0)
    assert MemorySize.of_mebi_bytes(1) < size <= MemorySize.of_mebi_bytes(100)


def test_slot_sharing_groups_as_flinks_builder():
    group = SlotSharingGroup.builder("heavy").set_cpu_cores(2.0).set_task_heap_memory_mb(100) \
        .set_external_resource("gpu", 1.0).build()
    assert (group.get_name(), group.get_cpu_cores(), str(group.get_task_heap_memory()),
            str(group.get_task_off_heap_memory()), str(group.get_managed_memory()),
            group.get_external_resources()) == ("heavy", 2.0, "100 mb", "0 bytes", "0 bytes", {"gpu": 1.0})
    assert SlotSharingGroup.builder("plain").build().get_cpu_cores() is None
    with pytest.raises(ValueError, match="The cpu cores and task heap memory are required"):
        SlotSharingGroup.builder("half").set_cpu_cores(1.0).build()


def test_window_serializers_write_pyflinks_coder_bytes():
    stream = BytesIO()
    TimeWindowSerializer().serialize(TimeWindow(1000, 2000), stream)
    CountWindowSerializer().serialize(CountWindow(7), stream)
    GlobalWindowSerializer().serialize(GlobalWindow.get(), stream)
    data = stream.getvalue()
    assert data == (1000).to_bytes(8, "big") + (2000).to_bytes(8, "big") + (7).to_bytes(8, "big") + b"\x00"
    stream.seek(0)
    assert TimeWindowSerializer().deserialize(stream) == TimeWindow(1000, 2000)
    assert CountWindowSerializer().deserialize(stream) == CountWindow(7)
    assert GlobalWindowSerializer().deserialize(stream) is GlobalWindow.get()
    assert TimeWindowSerializer() == TimeWindowSerializer() and repr(CountWindowSerializer()) == "CountWindowSerializer()"
    assigners = [TumblingEventTimeWindows.of(Time.seconds(1)), EventTimeSessionWindows.with_gap(Time.seconds(1)),
                 GlobalWindows.create(), CountTumblingWindowAssigner.of(2)]
    assert [type(a.get_window_serializer()).__name__ for a in assigners] == [
        "TimeWindowSerializer", "TimeWindowSerializer", "GlobalWindowSerializer", "CountWindowSerializer"]
