"""Re-executing a recorded run, and comparing the two.

A run records what it needs to run again: the job file (path, arguments, content, SHA-256), the
effective configuration (with plugin choices and faults), seed and clock mode, and the files
its sources read (``source_file_opened`` events, with their content) and the Kafka offset ranges
they read (``kafka_offsets_consumed``). ``--rerun`` executes the job file again with that
configuration — the recorded copy of an input that changed or disappeared replaces it; Kafka
sources read exactly the recorded ranges again (on the wall clock, while the topics still hold
them), Kafka sinks write nothing — and, for a simulated run without changes, checks that the new run's
event sequence equals the recorded one: both are cut into windows of ``WINDOW`` events whose
hashes are chained (a rolling fingerprint computed inside DuckDB, so neither log is held in
memory); at the first differing window the two windows are compared event by event. Fields
that describe where a run happened rather than what it did (``Event.environment``: process
ids, hosts, executor ids, the directories state went to) are recorded but left out of the
comparison, which names them; the job file's recorded copy runs under its recorded path, so
tracebacks name the same file. With
``--set`` changes (a what-if) or for a realtime run (timing is not reproduced: the re-execution
uses the simulated clock), a comparison of outputs and figures is printed instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

from kernel.config import RawConfig
from kernel.errors import UsageError

WINDOW = 4096

FINGERPRINT = """
SELECT seq // {window} AS w, count(*) AS n,
       md5(string_agg(concat_ws(' ', seq, time, kind, {payload}), chr(10) ORDER BY seq)) AS h
FROM rill.events WHERE run_id = $run GROUP BY w ORDER BY w
"""

WINDOW_EVENTS = """
SELECT seq, time, kind, {payload} FROM rill.events WHERE run_id = $run AND seq // {window} = $w ORDER BY seq
"""


def compared_payload(environment: dict[str, tuple[str, ...]]) -> str:
    """The SQL of an event's payload as a re-execution is compared: without the fields that
    describe the environment (``Event.environment``: process ids, hosts, state directories)."""
    if not environment:
        return "payload::VARCHAR"
    cases = " ".join(f"WHEN '{tag}' THEN json_merge_patch(payload, '{json.dumps(dict.fromkeys(fields))}')"
                     for tag, fields in sorted(environment.items()))
    return f"(CASE kind {cases} ELSE payload END)::VARCHAR"


def left_out(environment: dict[str, tuple[str, ...]]) -> list[str]:
    """``tag.field`` of every field the comparison leaves out."""
    return [f"{tag}.{name}" for tag, fields in sorted(environment.items()) for name in fields]


@dataclass
class Divergence:
    seq: int
    expected: str
    found: str


@dataclass
class Rerun:
    run_id: str
    status: str
    notes: list[str] = field(default_factory=list)


def fingerprint(con: Any, run_id: str, payload: str = "payload::VARCHAR") -> list[tuple[int, int, str]]:
    """(window, events, chained hash) per window of the run's event sequence."""
    chained, out = "", []
    query = FINGERPRINT.format(window=WINDOW, payload=payload)
    for window, count, digest in con.execute(query, {"run": run_id}).fetchall():
        chained = hashlib.sha256((chained + digest).encode()).hexdigest()
        out.append((window, count, chained))
    return out


def first_divergence(con: Any, recorded: str, rerun: str,
                     environment: dict[str, tuple[str, ...]] | None = None) -> Divergence | None:
    """The first event at which the two runs differ, the ``environment`` fields left out."""
    payload = compared_payload(environment or {})
    old, new = fingerprint(con, recorded, payload), fingerprint(con, rerun, payload)
    window_events = WINDOW_EVENTS.format(window=WINDOW, payload=payload)
    for index in range(max(len(old), len(new))):
        if index < len(old) and index < len(new) and old[index] == new[index]:
            continue
        window = (old[index] if index < len(old) else new[index])[0]
        expected = con.execute(window_events, {"run": recorded, "w": window}).fetchall()
        found = con.execute(window_events, {"run": rerun, "w": window}).fetchall()
        for position in range(max(len(expected), len(found))):
            a = expected[position] if position < len(expected) else None
            b = found[position] if position < len(found) else None
            if a != b:
                seq = (a or b)[0]
                text = lambda row: "(no more events)" if row is None else f"t={row[1]} {row[2]} {row[3]}"  # noqa: E731
                return Divergence(seq, text(a), text(b))
    return None


def _sha256(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def recorded_config(run: Any, sets: tuple[str, ...], kafka: bool = False) -> tuple[RawConfig, list[str]]:
    """The recorded run's configuration (flat keys, plugins, faults) with ``sets`` on top; a
    run that read Kafka runs again on the wall clock (Kafka needs it)."""
    values = dict(run.config)
    sources = {key: f"recorded run {run.run_id}" for key in values}
    notes = []
    if kafka:
        notes.append(f"run {run.run_id} read Kafka: the re-execution reads the offset ranges it read, on the wall clock "
                     "(timing is not reproduced); its Kafka sinks write nothing")
    elif run.clock != "simulated":
        values["rill.clock"] = "simulated"
        notes.append(f"run {run.run_id} ran under the {run.clock} clock: the re-execution uses the simulated clock "
                     "with the recorded inputs, so timing is not reproduced (outputs of event-time logic should match)")
    return RawConfig(values, sources, {}).with_sets(sets), notes


def job_file(run: Any, allow_changed: bool) -> tuple[str, str | None, list[str]]:
    """The job file to execute at its recorded path: the file, or the text recorded with the run
    if the file is gone (its code still names the recorded path)."""
    path, digest, source = (run.metadata.get(k) for k in ("job_file", "job_sha256", "job_source"))
    if not path or digest is None:
        raise UsageError(f"run {run.run_id} did not come from a job file: there is nothing to re-execute")
    if os.path.isfile(path):
        current = _sha256(path)
        if current != digest:
            if not allow_changed:
                raise UsageError(f"job file {path} changed since run {run.run_id} was recorded (sha256 "
                                 f"{digest[:12]} recorded, {current[:12]} now); use --allow-changed to re-execute it "
                                 "anyway")
            return path, None, [f"job file {path} changed since the recording: re-executing the current version"]
        return path, None, []
    return path, source, [f"job file {path} no longer exists: re-executing the copy recorded with the run"]


def input_overrides(con: Any, run: Any, scratch: str) -> tuple[dict[str, str], list[str]]:
    """Recorded copies of the files the run's sources read that changed or disappeared."""
    rows = con.execute(
        "SELECT path, arg_min(sha256, seq), arg_min(content, seq), arg_min(size, seq) FROM rill.ev_source_file_opened "
        "WHERE run_id = $run GROUP BY path", {"run": run.run_id}).fetchall()
    overrides, notes = {}, []
    for path, digest, content, size in rows:
        if os.path.isfile(path) and _sha256(path) == digest:
            continue
        if len(content) != size:
            notes.append(f"input {path} changed since the recording and was too large to record: reading it as it is")
            continue
        copy = os.path.join(scratch, f"input-{len(overrides)}-{os.path.basename(path)}")
        with open(copy, "wb") as handle:
            handle.write(content)
        overrides[path] = copy
        notes.append(f"input {path} changed since the recording: reading the recorded copy")
    return overrides, notes


def kafka_overrides(con: Any, run: Any) -> dict[str, str]:
    """The offset ranges the run's Kafka sources read, per cluster (every attempt's, merged:
    from the first offset read to the one after the last), checked to be still in the topics."""
    rows = con.execute(
        "SELECT bootstrap_servers, partitions, first_offsets, next_offsets FROM rill.ev_kafka_offsets_consumed "
        "WHERE run_id = $run", {"run": run.run_id}).fetchall()
    ranges: dict[str, dict[str, list[int]]] = {}
    for servers, partitions, firsts, nexts in rows:
        values = [json.loads(v) if isinstance(v, str) else list(v) for v in (partitions, firsts, nexts)]
        cluster = ranges.setdefault(servers, {})
        for name, first, last in zip(*values):
            known = cluster.get(name)
            cluster[name] = [first, last] if known is None else [min(known[0], first), max(known[1], last)]
    if not ranges:
        return {}
    from kernel.runtime.streaming.kafka.reader import recorded_ranges_key
    from kernel.runtime.streaming.kafka.writer import RERUN_KEY

    for servers, partitions in ranges.items():
        check_still_there(run.run_id, servers, partitions)
    overrides = {recorded_ranges_key(servers): json.dumps(partitions) for servers, partitions in ranges.items()}
    overrides[RERUN_KEY] = "1"
    return overrides


def check_still_there(run_id: str, servers: str, partitions: dict[str, list[int]]) -> None:
    """Every recorded range is still in its partition, or a clear error says what is gone."""
    from kernel.runtime.streaming.kafka.client import KafkaConnectorError, confluent

    try:
        ck = confluent()
    except KafkaConnectorError as exc:
        raise UsageError(f"run {run_id} read Kafka; {exc}") from None
    consumer = ck.Consumer({"bootstrap.servers": servers, "group.id": f"rill-rerun-{run_id}", "log_level": 0})
    try:
        for name, (first, last) in sorted(partitions.items()):
            if last <= first:
                continue
            topic, _, partition = name.rpartition("-")
            try:
                low, high = consumer.get_watermark_offsets(ck.TopicPartition(topic, int(partition)), timeout=10)
            except ck.KafkaException as exc:
                raise UsageError(f"run {run_id} read offsets {first}..{last - 1} of {name} at {servers}, which cannot be "
                                 f"read again: {exc.args[0].str() if exc.args else exc}") from None
            if low > first or high < last:
                raise UsageError(f"run {run_id} read offsets {first}..{last - 1} of {name} at {servers}, but the "
                                 f"partition now holds {low}..{high - 1}: the data is gone (retention or a recreated "
                                 "topic), so the run cannot be re-executed")
    finally:
        consumer.close()


@dataclass
class Preparation:
    """Everything a re-execution needs from the log (read before the log is written again)."""

    path: str
    source: str | None  # the recorded text of a job file that is gone
    raw: RawConfig
    overrides: dict[str, str]
    notes: list[str]


def prepare(con: Any, run: Any, sets: tuple[str, ...], allow_changed: bool) -> Preparation:
    path, source, notes = job_file(run, allow_changed)
    kafka = kafka_overrides(con, run)
    raw, config_notes = recorded_config(run, sets, kafka=bool(kafka))
    scratch = tempfile.mkdtemp(prefix=f"rill-rerun-{run.run_id}-")
    overrides, input_notes = input_overrides(con, run, scratch)
    return Preparation(path, source, raw, {**overrides, **kafka}, notes + config_notes + input_notes)


def execute(prepared: Preparation, arguments: list[str] | None = None) -> Rerun:
    """Run the job again with the ``arguments`` it was given (its print output is recorded in
    the log, not shown)."""
    from kernel.lifecycle.executors import SessionExecutor
    from kernel.lifecycle.jobfile import run_script
    from kernel.lifecycle.session import Session

    notes = list(prepared.notes)
    session = Session.from_raw(prepared.raw)
    session.input_overrides = prepared.overrides
    executor = SessionExecutor(session, quiet=True)
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            run_script(prepared.path, executor, arguments or [], prepared.source)
            executor.wait_for_jobs()  # jobs started with execute_async, as under rill run
        except Exception as exc:
            if not executor.outcomes:
                raise
            notes.append(f"the re-execution raised {type(exc).__name__}: {exc}")
    if not executor.outcomes:
        raise UsageError(f"job file {prepared.path} defined no job when re-executed")
    outcome = executor.outcomes[0]
    return Rerun(outcome.run_id, outcome.status, notes)
