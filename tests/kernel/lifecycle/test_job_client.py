"""``execute_async`` and the JobClient: the job runs while the script goes on; every request
answers with a CompletableFuture, as PyFlink's.

What PyFlink 2.3 answers was recorded by running the same calls on it (``/work/venvs/pyflink``):
for a job still running, ``get_job_status()`` is a done CompletableFuture of
``JobStatus.RUNNING``; ``cancel()`` a CompletableFuture whose result is None; afterwards
``get_job_execution_result().result()`` raises ``JobCancellationException: Job was cancelled.``.
For a finished job ``get_job_execution_result().result()`` is a JobExecutionResult whose
``get_job_id()`` prints as the client's 32-hex-digit id, with no accumulators.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from kernel.common import CompletableFuture, JobExecutionResult, JobID, JobStatus, Types, WatermarkStrategy
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.errors import JobCancelled, JobFailed
from tests.runtime import run_job


def test_a_finished_job_answers_with_futures():
    seen = {}

    def build(env):
        env.from_collection([1, 2], Types.INT()).print("async")
        client = env.execute_async("async job")
        seen["id"] = client.get_job_id()
        future = client.get_job_execution_result()
        seen["future"] = future
        seen["result"] = future.result()
        seen["status"] = client.get_job_status()
        seen["accumulators"] = client.get_accumulators().result()
        seen["cancel"] = client.cancel()

    run = run_job(build)
    assert run.lines == ["async> 1", "async> 2"]
    assert isinstance(seen["future"], CompletableFuture) and seen["future"].done()
    result = seen["result"]
    assert isinstance(result, JobExecutionResult) and isinstance(seen["id"], JobID)
    assert str(result.get_job_id()) == str(seen["id"]) == run.outcome.job_id and len(str(seen["id"])) == 32
    assert (result.get_accumulator_result("x"), result.get_all_accumulator_results()) == (None, {})
    assert seen["status"].result() is JobStatus.FINISHED
    assert seen["accumulators"] == {}
    with pytest.raises(JobCancelled, match=rf"^Flink job \({seen['id']}\) was not canceled, but instead FINISHED\.$"):
        seen["cancel"].result()


def unbounded(env, sink):
    source = DataGeneratorSource(lambda i: i, records_per_second=1000, type_info=Types.LONG())
    env.from_source(source, WatermarkStrategy.no_watermarks(), "Generator").add_sink(sink)


def test_cancelling_a_running_job():
    seen = {}
    arrived = threading.Event()

    def sink(value):
        if value == 100:
            arrived.set()

    def build(env):
        unbounded(env, sink)
        client = env.execute_async("unbounded")
        assert arrived.wait(60)  # a guard against hanging, not a timing assertion
        status = client.get_job_status()
        seen["running"] = (status.done(), status.result(), status.exception())
        seen["cancelled"] = client.cancel().result()
        seen["status"] = client.get_job_status().result()
        seen["result"] = client.get_job_execution_result()

    run = run_job(build)
    assert seen["running"] == (True, JobStatus.RUNNING, None)
    assert seen["cancelled"] is None
    assert seen["status"] is JobStatus.CANCELED and run.outcome.status == "CANCELED"
    with pytest.raises(JobCancelled, match="^Job was cancelled.$"):
        seen["result"].result()
    assert isinstance(seen["result"].exception(), JobCancelled)


def test_a_failed_job_fails_its_result_future():
    seen = {}

    def fail(value):
        raise ValueError(f"bad {value}")

    def build(env):
        env.from_collection([1], Types.INT()).map(fail).print()
        client = env.execute_async()
        with pytest.raises(JobFailed, match="ValueError: bad 1"):
            client.get_job_execution_result().result()
        seen["status"] = client.get_job_status().result()

    run_job(build)
    assert seen["status"] is JobStatus.FAILED


def test_closing_a_collect_iterator_cancels_the_running_job():
    seen = {}

    def build(env):
        numbers = env.from_source(DataGeneratorSource(lambda i: i, records_per_second=1000, type_info=Types.LONG()),
                                  WatermarkStrategy.no_watermarks(), "Generator")
        seen["first"] = numbers.execute_and_collect(limit=5)
        with numbers.map(lambda x: -x, Types.LONG()).execute_and_collect("negated") as iterator:
            seen["next"] = [next(iterator), next(iterator)]

    run = run_job(build)
    assert seen == {"first": [0, 1, 2, 3, 4], "next": [0, -1]}
    assert (run.outcome.job_name, run.outcome.status) == ("negated", "CANCELED")


JOB = """
from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource

env = StreamExecutionEnvironment.get_execution_environment()
env.from_source(DataGeneratorSource(lambda i: i, records_per_second=10, type_info=Types.LONG()),
                WatermarkStrategy.no_watermarks(), "Generator").add_sink(lambda v: None)
client = env.execute_async("left running")
print("submitted", client.get_job_id())
"""


def test_a_job_still_running_when_the_script_ends_is_cancelled_and_recorded(tmp_path, cli):
    job = tmp_path / "job.py"
    job.write_text(JOB)
    done = subprocess.run([sys.executable, str(job)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("submitted ")
    assert "CANCELED" in done.stderr.splitlines()[0]
    code, out, err = cli("run", "--set", "rill.clock=simulated", "--duration", "3s", str(job))  # rill run waits
    assert code == 0 and out.startswith("submitted ")
    assert " CANCELED " in err.splitlines()[0]
