"""Meta-tests of the typed contracts (``kernel.contracts``): every built-in plugin's product
satisfies its concern's Protocol — every method with a signature that accepts the contract's
calls, every attribute — and every hook spec is implemented by a built-in plugin and called
by rill. The products are the real ones, captured from real runs by a wrapper plugin."""

from __future__ import annotations

import importlib.metadata
import inspect
import pathlib
import re
from typing import Any, Protocol

import pytest

from kernel import hookimpl, hookspecs
from kernel.common import Duration, Types, WatermarkStrategy
from kernel.contracts.backend import ExecutionBackend
from kernel.contracts.backpressure import BackPressureMonitor, MonitoredJob, TaskBackPressureResponse
from kernel.contracts.checkpointing import (
    CheckpointableTask,
    CheckpointBarrierHandler,
    CheckpointCoordinator,
    CheckpointCoordinatorContext,
    CheckpointStorageWorker,
)
from kernel.contracts.eventstore import EventStore
from kernel.contracts.failover import FailoverStrategy, RestartBackoffTimeStrategy
from kernel.contracts.heartbeats import HeartbeatListener, HeartbeatManager, HeartbeatTarget
from kernel.contracts.mailbox import MailboxProcessor, MailboxTask, Suspension, SuspensionTimer
from kernel.contracts.scheduling import SchedulerOperations, SchedulingStrategy
from kernel.contracts.sql import SqlEngine
from kernel.contracts.watermarks import (
    AlignmentMembership,
    ValveOutput,
    WatermarkAlignmentCoordinator,
    WatermarkGenerator,
    WatermarkOutput,
    WatermarkValve,
)
from kernel.contracts.workers import ResourceEventHandler, ResourceManagerDriver, WorkerHost
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.eventbus import EventObserver
from kernel.lifecycle.session import Session
from kernel.runtime.streaming.alignment import AlignmentMember
from tests.graphs import compile_job, execution_graph
from tests.runtime import run_job

ROOT = pathlib.Path(__file__).resolve().parents[2]
_EMPTY = inspect.Parameter.empty
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


# -- the structural check ------------------------------------------------------------------------


def protocol_members(protocol: type) -> dict[str, Any]:
    """name -> the protocol's function (a method) or None (an attribute), inherited ones too."""
    members: dict[str, Any] = {}
    for klass in reversed(protocol.__mro__):
        if not getattr(klass, "_is_protocol", False) or klass is Protocol:
            continue
        for name in getattr(klass, "__annotations__", {}):
            members[name] = None
        for name, value in vars(klass).items():
            if not name.startswith("_") and inspect.isfunction(value):
                members[name] = value
    return members


def violations(product: Any, protocol: type) -> list[str]:
    """What ``product`` lacks to satisfy ``protocol``: missing members, methods whose signature
    does not accept the contract's calls (by position and by keyword), required extras."""
    problems = []
    for name, spec in protocol_members(protocol).items():
        if not hasattr(product, name):
            problems.append(f"{name}: missing")
            continue
        actual = getattr(product, name)
        if spec is None:
            continue
        if not callable(actual):
            problems.append(f"{name}: not a method")
            continue
        expected = list(inspect.signature(spec).parameters.values())[1:]  # without self
        params = list(inspect.signature(actual).parameters.values())
        positional = [p for p in params if p.kind in _POSITIONAL]
        keywords = {p.name for p in params if p.kind in (*_POSITIONAL, inspect.Parameter.KEYWORD_ONLY)}
        var_positional = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
        var_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        for index, wanted in enumerate(expected):
            if index < len(positional):
                given = positional[index]
                if given.name != wanted.name and not var_keyword:
                    problems.append(f"{name}: parameter {index + 1} is {given.name!r}, the contract says {wanted.name!r}")
                if wanted.default is not _EMPTY and given.default is _EMPTY:
                    problems.append(f"{name}: {given.name!r} needs a default")
            elif not var_positional:
                problems.append(f"{name}: takes no parameter {wanted.name!r}")
            elif wanted.name not in keywords and not var_keyword:
                problems.append(f"{name}: {wanted.name!r} cannot be passed by keyword")
        for extra in positional[len(expected):]:
            if extra.default is _EMPTY:
                problems.append(f"{name}: requires {extra.name!r}, which the contract does not pass")
        for param in params:
            if param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is _EMPTY:
                problems.append(f"{name}: requires keyword {param.name!r}")
    return problems


def test_the_check_finds_what_a_product_lacks():
    class Incomplete:
        def monitor_target(self, resource, target):  # the contract's name is resource_id
            pass

        def unmonitor_target(self, resource_id, force):  # requires a parameter nobody passes
            pass

        def request_heartbeat(self, requester_id, payload=None):
            pass

        def receive_heartbeat(self, sender_id):  # misses payload
            pass

    assert violations(Incomplete(), HeartbeatManager) == [
        "monitor_target: parameter 1 is 'resource', the contract says 'resource_id'",
        "unmonitor_target: requires 'force', which the contract does not pass",
        "receive_heartbeat: takes no parameter 'payload'",
        "stop: missing",
    ]

    class Attributes:
        update_interval_ms = 1000

        def report(self, watermark, *more):
            pass

    assert violations(Attributes(), AlignmentMembership) == [
        "max_drift_ms: missing", "waiting: missing", "leave: missing"]


# -- the products of the built-in plugins, from real runs -----------------------------------------


class Products:
    """A wrapper plugin keeping every factory hook's result and the objects handed to it."""

    def __init__(self) -> None:
        self.variant = ""
        self.made: dict[str, list[Any]] = {}
        self.given: dict[str, list[Any]] = {}

    def _keep(self, hook: str, result: Any, **given: Any) -> Any:
        if result is not None:
            self.made.setdefault(hook, []).append(result)
        for name, value in given.items():
            self.given.setdefault(name, []).append(value)
        return result

    @hookimpl(wrapper=True)
    def create_execution_backend(self, config):
        return self._keep("create_execution_backend", (yield))

    @hookimpl(wrapper=True)
    def create_event_observers(self, run):
        observers = yield
        for observer in observers:
            self._keep("create_event_observers", observer)
        return observers

    @hookimpl(wrapper=True)
    def create_resource_manager_driver(self, host, run):
        driver = yield
        self._keep("create_resource_manager_driver", driver, host=host)
        initialize = driver.initialize
        captured = self

        def initialized(handler):
            captured.given.setdefault("handler", []).append(handler)
            initialize(handler)

        driver.initialize = initialized  # the real driver, watched for its handler
        return driver

    @hookimpl(wrapper=True)
    def create_scheduling_strategy(self, execution_graph, scheduler, config):
        return self._keep("create_scheduling_strategy", (yield), scheduler=scheduler)

    @hookimpl(wrapper=True)
    def create_restart_strategy(self, run, checkpointing):
        return self._keep("create_restart_strategy", (yield))

    @hookimpl(wrapper=True)
    def create_failover_strategy(self, execution_graph, config):
        return self._keep("create_failover_strategy", (yield))

    @hookimpl(wrapper=True)
    def create_mailbox_processor(self, task, run):
        return self._keep("create_mailbox_processor", (yield), task=task)

    @hookimpl(wrapper=True)
    def create_watermark_generator(self, strategy, run, activity_clock):
        return self._keep("create_watermark_generator", (yield))

    @hookimpl(wrapper=True)
    def create_watermark_valve(self, num_channels, run):
        return self._keep("create_watermark_valve", (yield))

    @hookimpl(wrapper=True)
    def create_watermark_alignment(self, run):
        return self._keep("create_watermark_alignment", (yield))

    @hookimpl(wrapper=True)
    def create_back_pressure_monitor(self, job, run):
        monitor = yield
        self._keep("create_back_pressure_monitor", monitor, job=job)
        if monitor is not None:
            request = job.request_task_back_pressure
            captured = self

            def request_task_back_pressure(execution, num_samples, delay_between_samples_ms):
                answer = request(execution, num_samples, delay_between_samples_ms)
                answer.add_done_callback(lambda done: done.exception() is None and captured.given.setdefault(
                    "response", []).append(done.result()))
                return answer

            job.request_task_back_pressure = request_task_back_pressure  # the real gateway, watched for answers
        return monitor

    @hookimpl(wrapper=True)
    def create_heartbeat_manager(self, owner, listener, role, run):
        manager = yield
        self._keep("create_heartbeat_manager", manager, listener=listener)
        monitor = manager.monitor_target
        captured = self

        def monitor_target(resource_id, target):
            captured.given.setdefault("target", []).append(target)
            monitor(resource_id, target)

        manager.monitor_target = monitor_target  # the real manager, watched for its targets
        return manager


def event_time_job(env):
    """Two sources with event time and idleness, their union keyed, timestamps assigned again:
    valves on every input gate, both built-in generators."""
    plain = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(50)) \
        .with_timestamp_assigner(lambda v, ts: v * 10)
    strategy = plain.with_idleness(Duration.of_seconds(1))
    env.set_parallelism(2)
    first = env.from_source(DataGeneratorSource(lambda i: i, count=300, records_per_second=100,
                                                type_info=Types.LONG()), strategy, "First")
    second = env.from_source(DataGeneratorSource(lambda i: i, count=200, records_per_second=100,
                                                 type_info=Types.LONG()), strategy, "Second")
    (first.union(second).key_by(lambda v: v % 3, Types.LONG())
     .map(lambda v: v, Types.LONG()).assign_timestamps_and_watermarks(plain)
     .add_sink(lambda v: None))
    env.execute("contracts")


VARIANTS = {
    "defaults": (),
    "alternatives": ("plugins.scheduling=eager", "plugins.watermarking=aligned", "plugins.heartbeats=phi-accrual",
                     "restart-strategy.type=fixed-delay", "jobmanager.execution.failover-strategy=full",
                     "plugins.backpressure=sampling", "web.backpressure.num-samples=5"),
}


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def products(request, tmp_path_factory, monkeypatch_module):
    monkeypatch_module.chdir(tmp_path_factory.mktemp("contracts"))
    captured = Products()
    captured.variant = request.param
    job = run_job(event_time_job, *VARIANTS[request.param], plugins=(captured,))
    assert job.outcome.status == "FINISHED"
    return captured


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


FACTORIES = {
    "create_execution_backend": ExecutionBackend,
    "create_resource_manager_driver": ResourceManagerDriver,
    "create_event_observers": EventObserver,
    "create_scheduling_strategy": SchedulingStrategy,
    "create_restart_strategy": RestartBackoffTimeStrategy,
    "create_failover_strategy": FailoverStrategy,
    "create_mailbox_processor": MailboxProcessor,
    "create_watermark_generator": WatermarkGenerator,
    "create_watermark_valve": WatermarkValve,
    "create_watermark_alignment": WatermarkAlignmentCoordinator,
    "create_heartbeat_manager": HeartbeatManager,
    "create_back_pressure_monitor": BackPressureMonitor,
}


@pytest.mark.parametrize("hook", sorted(FACTORIES))
def test_every_product_of_a_run_satisfies_its_contract(products, hook):
    made = products.made.get(hook, [])
    # the default watermarking plugin aligns no sources; the default back-pressure plugin needs no monitor
    none = hook in ("create_watermark_alignment", "create_back_pressure_monitor") and products.variant == "defaults"
    assert bool(made) != none
    for product in made:
        assert violations(product, FACTORIES[hook]) == [], type(product).__qualname__


@pytest.mark.parametrize("name, protocol", [("scheduler", SchedulerOperations), ("task", MailboxTask),
                                            ("host", WorkerHost), ("handler", ResourceEventHandler),
                                            ("listener", HeartbeatListener), ("target", HeartbeatTarget),
                                            ("job", MonitoredJob), ("response", TaskBackPressureResponse)])
def test_what_the_runtime_hands_to_plugins_satisfies_its_contract(products, name, protocol):
    given = products.given.get(name, [])
    assert bool(given) != (name == "response" and products.variant == "defaults")  # sampled only by the alternative
    for product in given:
        assert violations(product, protocol) == [], type(product).__qualname__


def test_the_aligned_plugin_coordinates_with_memberships_that_satisfy_their_contract(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session = Session.open(sets=["plugins.watermarking=aligned"], environ={})
    run = session.new_run("alignment")
    coordinator = session.plugin_manager.hook.create_watermark_alignment(run=run)
    assert violations(coordinator, WatermarkAlignmentCoordinator) == []
    strategy = WatermarkStrategy.for_monotonous_timestamps()
    membership = coordinator.join(strategy, AlignmentMember("v", "Source", 0), lambda high, low: None)
    assert violations(membership, AlignmentMembership) == []
    coordinator.close()
    unaligned = Session.open(environ={})  # the default plugin: sources read unaligned
    assert unaligned.plugin_manager.hook.create_watermark_alignment(run=unaligned.new_run("unaligned")) is None


def test_the_outputs_and_suspensions_the_runtime_hands_over_satisfy_their_contracts():
    from kernel.clock import SimulatedClock
    from kernel.loop import EventLoop
    from kernel.runtime.streaming.sources import WatermarkOutput as SourceWatermarkOutput
    from plugins.local.tasks.input_processor import ValveOutput as TaskValveOutput
    from plugins.local.tasks.io_metrics import TimerGauge
    from plugins.mailbox.processor import DefaultMailboxProcessor

    assert violations(SourceWatermarkOutput(None), WatermarkOutput) == []
    assert violations(TaskValveOutput(None, 0), ValveOutput) == []
    assert violations(TimerGauge(), SuspensionTimer) == []
    processor = DefaultMailboxProcessor(lambda p: None, EventLoop(SimulatedClock()), lambda exc: None)
    assert violations(processor.suspend_default_action(TimerGauge(), "idle"), Suspension) == []


class CheckpointingProducts:
    """Keeps the checkpoint coordinators and barrier handlers made, and what they were given."""

    def __init__(self) -> None:
        self.made: list[tuple[Any, type]] = []

    @hookimpl(wrapper=True)
    def create_checkpoint_coordinator(self, context, run):
        coordinator = yield
        self.made += [(coordinator, CheckpointCoordinator), (coordinator.storage, CheckpointStorageWorker),
                      (context, CheckpointCoordinatorContext)]
        return coordinator

    @hookimpl(wrapper=True)
    def create_checkpoint_barrier_handler(self, task, channels, run):
        handler = yield
        self.made += [(handler, CheckpointBarrierHandler), (task, CheckpointableTask)]
        return handler


@pytest.mark.parametrize("sets", [("execution.checkpointing.mode=EXACTLY_ONCE",),
                                  ("execution.checkpointing.mode=AT_LEAST_ONCE",),
                                  ("execution.checkpointing.unaligned.enabled=true",)])
def test_every_checkpointing_product_satisfies_its_contract(sets):
    captured = CheckpointingProducts()
    job = run_job(event_time_job, "execution.checkpointing.interval=100ms", *sets, plugins=(captured,))
    assert job.outcome.status == "FINISHED"
    assert {protocol for _, protocol in captured.made} == {
        CheckpointCoordinator, CheckpointStorageWorker, CheckpointCoordinatorContext, CheckpointBarrierHandler,
        CheckpointableTask}
    for product, protocol in captured.made:
        assert violations(product, protocol) == [], type(product).__qualname__


@pytest.mark.parametrize("sets", [(), ("restart-strategy.type=failure-rate",), ("restart-strategy.type=exponential-delay",),
                                  ("restart-strategy.type=fixed-delay",)])
def test_every_restart_strategy_satisfies_its_contract(sets):
    session = Session.open(sets=sets, environ={})
    strategy = session.plugin_manager.hook.create_restart_strategy(run=session.new_run("restarts"), checkpointing=False)
    assert violations(strategy, RestartBackoffTimeStrategy) == []
    assert str(strategy).endswith(")") or str(strategy) == "NoRestartBackoffTimeStrategy"


@pytest.mark.parametrize("failover", ["region", "full"])
def test_every_failover_strategy_satisfies_its_contract(failover):
    session = Session.open(sets=[f"jobmanager.execution.failover-strategy={failover}"], environ={})
    compiled = compile_job(lambda env: (env.from_collection([1, 2]).map(lambda v: v).add_sink(lambda v: None),
                                        env.execute()), session=session)
    strategy = session.plugin_manager.hook.create_failover_strategy(
        execution_graph=execution_graph(compiled, session), config=session.config)
    assert violations(strategy, FailoverStrategy) == []


def test_the_processes_driver_and_what_it_is_handed_satisfy_their_contracts():
    captured = Products()
    job = run_job(lambda env: (env.from_collection([1, 2]).map(lambda v: v).add_sink(lambda v: None), env.execute()),
                  "rill.clock=realtime", "plugins.workers=processes", plugins=(captured,))
    assert job.outcome.status == "FINISHED"
    [driver] = captured.made["create_resource_manager_driver"]
    assert type(driver).__name__ == "ProcessDriver" and not driver.in_process
    assert violations(driver, ResourceManagerDriver) == []
    assert violations(captured.given["host"][0], WorkerHost) == []
    assert violations(captured.given["handler"][0], ResourceEventHandler) == []


def test_the_spark_backend_satisfies_the_backend_contract():
    session = Session.open(sets=["plugins.backend=spark"], environ={})
    backend = session.plugin_manager.hook.create_execution_backend(config=session.config)
    assert backend.name == "spark" and violations(backend, ExecutionBackend) == []


def test_the_event_store_satisfies_its_contract(tmp_path):
    session = Session.open(sets=[f"eventlog.path={tmp_path / 'log.duckdb'}"], environ={})
    store = session.plugin_manager.hook.open_event_store(config=session.config)
    assert violations(store, EventStore) == [] and store.path == tmp_path / "log.duckdb"


def test_every_sql_engine_satisfies_its_contract():
    session = Session.open(environ={})
    engines: dict[str, Any] = {}
    session.plugin_manager.hook.register_sql_engines(register=engines.__setitem__)
    assert {name: violations(engine, SqlEngine) for name, engine in engines.items()} == {"duckdb": [], "spark": []}


# -- every hook spec is implemented and called ----------------------------------------------------

SPECS = sorted(name for name, func in vars(hookspecs).items() if callable(func) and hasattr(func, "rill_spec"))
def builtin_hooks() -> set[str]:
    """Hooks implemented by the built-in plugins (this distribution's entry points) and by
    the plugin objects the kernel itself registers (the live status line, the test capture)."""
    from kernel.cli.progress import LiveProgress
    from kernel.testing import EventCapture

    found: set[str] = set()
    dist = importlib.metadata.distribution("rill")
    modules = [ep.load() for ep in dist.entry_points if ep.group == "rill"]
    for plugin in (*modules, LiveProgress, EventCapture):
        found.update(name for name, value in vars(plugin).items() if hasattr(value, "rill_impl"))
    return found


def test_every_hook_spec_is_implemented_by_a_builtin_plugin():
    assert set(SPECS) - builtin_hooks() == set()


@pytest.mark.parametrize("name", SPECS)
def test_every_hook_spec_is_called(name):
    calls = re.compile(rf"hook\.{name}(\(|\.call_historic\()")
    sources = [path for package in ("kernel", "plugins", "replay") for path in (ROOT / package).rglob("*.py")]
    assert any(calls.search(path.read_text()) for path in sources), f"nothing calls hook {name}"
