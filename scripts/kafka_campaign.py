"""The fault campaign's Kafka job (``fault_campaign.py --kafka``): seeded realtime runs of an
exactly-once Kafka pipeline with random kills and exceptions, judged by what a
``read_committed`` consumer sees.

    python scripts/fault_campaign.py --kafka [--runs 50] [--seed 1] [--only N ...]

A librdkafka mock cluster (``tests/kafka_mock.py``) holds an input topic of ``RECORDS`` records
over 4 partitions (record i: key ``k<i % KEYS>``). Each run is ``rill run`` in a process of its
own, on the wall clock, with checkpoints every 200 ms and a fixed-delay restart strategy:
Kafka source (bounded at the topic's end) → a map that sleeps a little per record → keyed
running count (ValueState) → ``KafkaSink`` with ``EXACTLY_ONCE`` into a fresh topic. Run N's
settings follow from the seed and N alone: embedded or ``processes`` workers (one slot each),
parallelism 1 or 2, and one or two faults — an operator raising on its Nth record, a
TaskExecutor killed (SIGKILL with processes) at a random instant. A correct run commits
exactly the running counts of every key, each once: ``k: 1`` … ``k: n``. Counted: lost
(missing lines), duplicated (lines seen twice), wrong (lines no fault-free run writes) and hung
runs (not done within ``TIMEOUT_S``). Exits 1 on any.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = 3000
KEYS = 7
TIMEOUT_S = 180

JOB = '''
import sys, time
from kernel.common import SimpleStringSchema, Types, WatermarkStrategy
from kernel.datastream import MapFunction, StreamExecutionEnvironment
from kernel.datastream.connectors.base import DeliveryGuarantee
from kernel.datastream.connectors.kafka import (KafkaOffsetsInitializer, KafkaRecordSerializationSchema, KafkaSink,
                                                KafkaSource)
from kernel.datastream.state import ValueStateDescriptor
from kernel.datastream.functions import KeyedProcessFunction


class Slow(MapFunction):
    def map(self, value):
        time.sleep(0.001)
        return value


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield f"{value}: {n}"


servers, source_topic, sink_topic, parallelism = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(parallelism)
env.enable_checkpointing(200)
source = KafkaSource.builder().set_bootstrap_servers(servers).set_topics(source_topic).set_group_id(sink_topic) \\
    .set_starting_offsets(KafkaOffsetsInitializer.earliest()).set_bounded(KafkaOffsetsInitializer.latest()) \\
    .set_value_only_deserializer(SimpleStringSchema()).build()
sink = KafkaSink.builder().set_bootstrap_servers(servers).set_record_serializer(
    KafkaRecordSerializationSchema.builder().set_topic(sink_topic).set_value_serialization_schema(SimpleStringSchema())
    .build()).set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE).set_transactional_id_prefix(sink_topic).build()
env.from_source(source, WatermarkStrategy.no_watermarks(), "Kafka").map(Slow(), output_type=Types.STRING()) \\
    .name("Slow").key_by(lambda v: v).process(Count(), output_type=Types.STRING()).sink_to(sink)
env.execute("kafka campaign")
'''


@dataclass
class Verdict:
    run: int
    settings: list[str]
    faults: list[str]
    seconds: float
    status: str
    lost: int = 0
    duplicated: int = 0
    wrong: int = 0
    hung: bool = False
    detail: str = ""
    restarts: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def expected_lines() -> Counter:
    counts: Counter = Counter()
    out: Counter = Counter()
    for i in range(RECORDS):
        key = f"k{i % KEYS}"
        counts[key] += 1
        out[f"{key}: {counts[key]}"] += 1
    return out


def plan(seed: int, run: int) -> tuple[list[str], list[str], int]:
    """Run ``run``'s settings, faults and parallelism (from the seed and the run alone)."""
    rng = random.Random(seed * 1_000_003 + run)
    workers = rng.choice(["embedded", "processes"])
    parallelism = rng.choice([1, 2])
    settings = [f"plugins.workers={workers}", "taskmanager.numberOfTaskSlots=1", "rill.network.record-size=1024",
                "restart-strategy.type=fixed-delay", "restart-strategy.fixed-delay.attempts=20",
                "restart-strategy.fixed-delay.delay=200 ms"]
    faults = []
    for _ in range(rng.choice([1, 1, 2])):
        if rng.random() < 0.5:
            faults.append(f"raise:operator=Slow,record={rng.randint(50, RECORDS // parallelism - 50)}")
        else:
            faults.append(f"kill:target=taskexecutor-{rng.randint(1, parallelism)},at={rng.randint(1500, 4500)}ms")
    return settings, faults, parallelism


def execute(run: int, seed: int, servers: str, source_topic: str, job: str, rill: list[str], workdir: str) -> Verdict:
    from kafka_mock import read_topic

    settings, faults, parallelism = plan(seed, run)
    sink_topic = f"campaign-{seed}-{run}-{uuid.uuid4().hex[:6]}"
    command = [*rill, "run"]
    for setting in settings:
        command += ["--set", setting]
    for fault in faults:
        command += ["--inject", fault]
    command += [job, servers, source_topic, sink_topic, str(parallelism)]
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=workdir,
                              env={**os.environ, "RILL_HOME": os.path.join(workdir, ".rill")})
    except subprocess.TimeoutExpired:
        return Verdict(run, settings, faults, time.monotonic() - started, "hung", hung=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        return Verdict(run, settings, faults, seconds, "failed", detail=done.stderr.strip().splitlines()[-1:][0]
                       if done.stderr.strip() else f"exit {done.returncode}")
    found = re.search(r"restarts: (\d+)", done.stderr)
    restarts = int(found.group(1)) if found else 0
    written = Counter(value for _, _, value in read_topic(servers, sink_topic))
    expected = expected_lines()
    lost = sum((expected - written).values())
    extra = written - expected
    duplicated = sum(n for line, n in extra.items() if line in expected)
    wrong = sum(n for line, n in extra.items() if line not in expected)
    status = "ok" if not (lost or duplicated or wrong) else "wrong"
    return Verdict(run, settings, faults, seconds, status, lost, duplicated, wrong, restarts=restarts)


def campaign(runs: int, seed: int, only: list[int] | None, verbose: bool) -> int:
    sys.path[:0] = [os.path.join(ROOT, "tests"), ROOT]
    from kafka_mock import MockCluster, produce

    beside = os.path.join(os.path.dirname(sys.executable), "rill")
    rill = [beside] if os.path.isfile(beside) else ["rill"]
    with MockCluster() as cluster:
        source_topic = f"campaign-input-{seed}"
        produce(cluster.bootstrap, source_topic, [(f"k{i % KEYS}", i % 4) for i in range(RECORDS)])
        workdir = tempfile.mkdtemp(prefix="rill-kafka-campaign-")
        job = os.path.join(workdir, "kafka_campaign_job.py")
        with open(job, "w") as handle:
            handle.write(JOB)
        verdicts = []
        for run in only or range(runs):
            verdict = execute(run, seed, cluster.bootstrap, source_topic, job, rill, workdir)
            verdicts.append(verdict)
            if verbose or not verdict.ok:
                print(f"run {run}: {verdict.status} in {verdict.seconds:.1f} s {' '.join(verdict.faults)} "
                      f"[{verdict.settings[0]}] lost {verdict.lost} duplicated {verdict.duplicated} "
                      f"wrong {verdict.wrong} restarts {verdict.restarts} {verdict.detail}", flush=True)
        shutil.rmtree(workdir, ignore_errors=True)
    seconds = sorted(v.seconds for v in verdicts)
    kills = sum(f.startswith("kill") for v in verdicts for f in v.faults)
    raises = sum(f.startswith("raise") for v in verdicts for f in v.faults)
    processes = sum("plugins.workers=processes" in v.settings for v in verdicts)
    print(f"kafka campaign: {len(verdicts)} runs (seed {seed}; {processes} with worker processes; {kills} kills, "
          f"{raises} exceptions; {sum(v.restarts > 0 for v in verdicts)} restarted): ok {sum(v.ok for v in verdicts)}, lost {sum(v.lost for v in verdicts)} lines, "
          f"duplicated {sum(v.duplicated for v in verdicts)}, wrong {sum(v.wrong for v in verdicts)}, "
          f"failed {sum(v.status == 'failed' for v in verdicts)}, hung {sum(v.hung for v in verdicts)}; "
          f"run time median {seconds[len(seconds) // 2]:.1f} s, max {seconds[-1]:.1f} s")
    return 0 if all(v.ok for v in verdicts) else 1
