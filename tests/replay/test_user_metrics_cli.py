"""User metrics as a user meets them, each command a ``rill`` process of its own: a job counting
into a counter, a gauge, a meter and a distribution in nested groups (``add_group`` with and
without a value group), run on the simulated clock; the exact values in ``rill sql`` on DuckDB,
on a Parquet export and on Spark, in ``rill metrics`` (and ``--json``), ``rill replay --at``
and the report's HTML. Then the same job on process TaskExecutors, on Spark workers and on the
spark backend, and what a user gets wrong (a gauge without a number, a name taken by another
kind of metric, metrics switched off)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

RILL = str(Path(sys.executable).with_name("rill"))
JOB = '''
import sys

from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource
from kernel.datastream.functions import MapFunction


class Measure(MapFunction):
    def open(self, runtime_context):
        group = runtime_context.get_metrics_group().add_group("shop").add_group("region", "eu")
        self.orders = group.counter("orders")
        self.refunds = group.counter("refunds")
        self.rate = group.meter("rate", 10)
        self.sizes = group.distribution("sizes")
        self.last = 0
        group.gauge("last", lambda: self.last)

    def map(self, value):
        self.orders.inc()
        if value % 10 == 0:
            self.refunds.inc(2)
            self.refunds.dec()
        self.rate.mark_event()
        self.sizes.update(value % 7)
        self.last = value
        return value


parallelism, rate = int(sys.argv[1]), None if sys.argv[2] == "unlimited" else int(sys.argv[2])
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(parallelism)
env.from_source(DataGeneratorSource(lambda i: i, count=120, records_per_second=rate),
                WatermarkStrategy.no_watermarks(), "Orders").map(Measure(), Types.LONG()).name("Measure") \\
    .add_sink(lambda value: None)
env.execute("user metrics")
'''
VERTEX = "Source: Orders -> Measure -> Sink: Unnamed"
SCOPE = "shop.region.eu"
COLUMNS = ("subtask", "attempt", "operator", "metric", "kind", "value", "count", "sum", "min", "max", "error")


def rill(cwd: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RILL_")}, "RILL_HOME": str(cwd / ".rill")}
    done = subprocess.run([RILL, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
    assert done.returncode == code, (args, done.stdout[-2000:], done.stderr[-3000:])
    return done


def metric_rows(values: dict[str, tuple], subtask: int = 0, sampled: float | None = None) -> list[dict]:
    """The rows ``rill metrics --json`` / ``replay --at --json`` give, in registration order."""
    rows = []
    for name, (kind, value, count, total, low, high) in values.items():
        row = {"vertex": VERTEX, "subtask": subtask, "attempt": 0, "operator": "Measure", "metric": f"{SCOPE}.{name}",
               "kind": kind, "value": value, "count": count, "sum": total, "min": low, "max": high, "error": None}
        if sampled is not None:
            row["sampled_s"] = sampled
        rows.append(row)
    return rows


#: 120 records, 10 a second on the simulated clock: by the sample at 5 s, 49 of them (0..48); at the
#: end all. Refunds: +2 -1 for each multiple of 10. The meter (span 10 s) updates at the fifth and
#: tenth samples: 49 / 10, then 99 / 10. The distribution: value % 7 (its last value, count, sum,
#: min, max); the gauge: the last value mapped.
AT_5_S = {"orders": ("counter", 49, 49, None, None, None), "refunds": ("counter", 5, 5, None, None, None),
          "rate": ("meter", 4.9, 49, None, None, None), "sizes": ("distribution", 6.0, 49, 147.0, 0.0, 6.0),
          "last": ("gauge", 48.0, None, None, None, None)}
AT_END = {"orders": ("counter", 120, 120, None, None, None), "refunds": ("counter", 12, 12, None, None, None),
          "rate": ("meter", 9.9, 120, None, None, None), "sizes": ("distribution", 0.0, 120, 357.0, 0.0, 6.0),
          "last": ("gauge", 119.0, None, None, None, None)}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A directory with the job, its simulated run recorded, and that run exported to ``export``."""
    base = tmp_path_factory.mktemp("user-metrics")
    (base / "job.py").write_text(JOB)
    rill(base, "run", "--clock", "simulated", "--quiet", "job.py", "1", "10")
    rill(base, "export", "last", "--parquet", "export")
    return base


SQL = ("SELECT vertex_name, subtask, attempt, operator, scope, name, metric, kind, t_s, second, interval_ms, value, "
       "count, sum, min, max, final, error FROM user_metrics WHERE second = 4 OR final ORDER BY t_s, seq")


def sql_rows(values: dict[str, tuple], t_s: float, second: int, interval_ms: float, final: bool) -> list[dict]:
    rows = []
    for name, (kind, value, count, total, low, high) in values.items():
        rows.append({"vertex_name": VERTEX, "subtask": 0, "attempt": 0, "operator": "Measure", "scope": SCOPE,
                     "name": name, "metric": f"{SCOPE}.{name}", "kind": kind, "t_s": t_s, "second": second,
                     "interval_ms": interval_ms, "value": None if value is None else float(value), "count": count,
                     "sum": total, "min": low, "max": high, "final": final, "error": ""})
    return rows


@pytest.mark.parametrize("path", [(), ("--parquet", "export"), ("--engine", "spark")],
                         ids=["duckdb", "parquet", "spark"])
def test_every_sql_path_gives_the_exact_values(recorded, path):
    out = rill(recorded, "sql", *path, "--format", "json", SQL).stdout
    assert json.loads(out) == sql_rows(AT_5_S, 5.0, 4, 1000.0, False) + sql_rows(AT_END, 12.0, 12, 0.0, True)


def test_rill_metrics_lists_each_subtasks_metrics_as_they_ended(recorded):
    report = json.loads(rill(recorded, "metrics", "last", "--json").stdout)
    assert report["user_metrics"] == metric_rows(AT_END, sampled=12.0)
    text = rill(recorded, "metrics", "last").stdout
    table = text[text.index("user metrics\n"):].splitlines()
    assert table[1].split() == ["vertex", "subtask", "attempt", "operator", "metric", "kind", "value"]
    assert [re.split(r"\s{2,}", line) for line in table[2:]] == [
        [VERTEX, "0", "0", "Measure", f"{SCOPE}.orders", "counter", "120"],
        [VERTEX, "0", "0", "Measure", f"{SCOPE}.refunds", "counter", "12"],
        [VERTEX, "0", "0", "Measure", f"{SCOPE}.rate", "meter", "rate 9.9/s, count 120"],
        [VERTEX, "0", "0", "Measure", f"{SCOPE}.sizes", "distribution", "sum 357, count 120, min 0, max 6 (last 0)"],
        [VERTEX, "0", "0", "Measure", f"{SCOPE}.last", "gauge", "119"]]


def test_replay_at_an_instant_gives_the_values_sampled_by_then(recorded):
    state = json.loads(rill(recorded, "replay", "last", "--at", "5.5", "--json").stdout)
    assert state["user_metrics"] == metric_rows(AT_5_S, sampled=5.0)
    assert json.loads(rill(recorded, "replay", "last", "--at", "0.5", "--json").stdout)["user_metrics"] == []
    text = rill(recorded, "replay", "last", "--at", "5.5").stdout
    lines = text[text.index("User metrics\n"):].splitlines()[1:6]
    assert lines == [f"  {VERTEX + '/0':<50} Measure: {SCOPE}.{values}" for values in (
        "orders (counter) 49 at 5.000 s", "refunds (counter) 5 at 5.000 s",
        "rate (meter) rate 4.9/s, count 49 at 5.000 s",
        "sizes (distribution) sum 147, count 49, min 0, max 6 (last 6) at 5.000 s", "last (gauge) 48 at 5.000 s")]


class Tables(HTMLParser):
    """The cells of the report's tables by class, and its charts' series."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.charts: dict[str, dict[str, list]] = {}
        self._table: str | None = None
        self._chart: str | None = None
        self._cell: list[str] | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = attrs.get("class") or ""
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []
        elif tag == "svg" and attrs.get("class") == "chart":
            self._chart = attrs["data-chart"]
            self.charts[self._chart] = {}
        elif tag == "polyline" and self._chart is not None:
            self.charts[self._chart][attrs["data-series"]] = [json.loads(attrs["data-seconds"]),
                                                              json.loads(attrs["data-values"])]

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag == "svg":
            self._chart = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def test_the_report_shows_the_final_values_and_a_chart_per_metric(recorded):
    rill(recorded, "report", "last", "-o", "report.html")
    page = Tables((recorded / "report.html").read_text())
    table = page.tables["user-metrics"]
    assert table[0] == ["vertex", "subtask", "attempt", "operator", "metric", "kind", "value", "count", "sum", "min",
                        "max", "error"]
    assert table[1:] == [
        [VERTEX, "0", "0", "Measure", f"{SCOPE}.orders", "counter", "120", "120", "-", "-", "-", "-"],
        [VERTEX, "0", "0", "Measure", f"{SCOPE}.refunds", "counter", "12", "12", "-", "-", "-", "-"],
        [VERTEX, "0", "0", "Measure", f"{SCOPE}.rate", "meter", "9.9", "120", "-", "-", "-", "-"],
        [VERTEX, "0", "0", "Measure", f"{SCOPE}.sizes", "distribution", "0", "120", "357", "0", "6", "-"],
        [VERTEX, "0", "0", "Measure", f"{SCOPE}.last", "gauge", "119", "-", "-", "-", "-", "-"]]
    seconds, orders = page.charts[f"Measure: {SCOPE}.orders"]["subtask 0"]
    assert seconds == [float(s) for s in range(1, 13)] and orders == [9.0 + 10 * i for i in range(12)][:-1] + [120.0]
    seconds, rates = page.charts[f"Measure: {SCOPE}.rate"]["subtask 0"]
    assert rates == [0.0] * 4 + [4.9] * 5 + [9.9] * 3
    assert set(page.charts) >= {f"Measure: {SCOPE}.{name}" for name in AT_END}


# -- every worker kind and the spark backend -----------------------------------------------------------

#: 120 records in two subtasks of 60 (indexes 0..59 and 60..119), as fast as they go
SUBTASKS = [{"orders": ("counter", 60, 60, None, None, None), "refunds": ("counter", 6, 6, None, None, None),
             "sizes": ("distribution", 3.0, 60, 174.0, 0.0, 6.0), "last": ("gauge", 59.0, None, None, None, None)},
            {"orders": ("counter", 60, 60, None, None, None), "refunds": ("counter", 6, 6, None, None, None),
             "sizes": ("distribution", 0.0, 60, 183.0, 0.0, 6.0), "last": ("gauge", 119.0, None, None, None, None)}]
SPARK = pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
                           reason="Spark needs Java (none on PATH or in JAVA_HOME)")


@pytest.mark.parametrize("settings", [
    ("--set", "plugins.workers=processes"),
    pytest.param(("--set", "plugins.workers=spark", "--set", "spark.master=local[2]", "--set",
                  "taskmanager.numberOfTaskSlots=2"), marks=SPARK),
    pytest.param(("--backend", "spark", "--set", "spark.master=local[2]"), marks=SPARK),
], ids=["processes", "spark-workers", "spark-backend"])
def test_every_worker_kind_and_the_spark_backend_records_the_same_values(tmp_path, settings):
    (tmp_path / "job.py").write_text(JOB)
    rill(tmp_path, "run", "--quiet", *settings, "job.py", "2", "unlimited")
    rows = json.loads(rill(tmp_path, "metrics", "last", "--json").stdout)["user_metrics"]
    meters = [row for row in rows if row["kind"] == "meter"]
    assert [(row["subtask"], row["count"]) for row in meters] == [(0, 60), (1, 60)]
    assert all(row["value"] >= 0 for row in meters)  # the rate depends on the wall clock
    expected = [row for subtask, values in enumerate(SUBTASKS) for row in metric_rows(values, subtask)]
    found = [{k: v for k, v in row.items() if k != "sampled_s"} for row in rows if row["kind"] != "meter"]
    key = lambda row: (row["metric"], row["subtask"])  # noqa: E731
    assert sorted(found, key=key) == sorted(expected, key=key)
    finals = json.loads(rill(tmp_path, "sql", "--format", "json",
                             "SELECT count(*) AS n FROM user_metrics WHERE final").stdout)
    assert finals == [{"n": 10}]


# -- what a user gets wrong ------------------------------------------------------------------------------

BAD_GAUGE = '''
from kernel.common import Types
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.functions import MapFunction


class Gauges(MapFunction):
    def open(self, runtime_context):
        group = runtime_context.get_metrics_group()
        group.gauge("ratio", lambda: 1 / 0)
        group.gauge("name", lambda: "many")
        {taken}

    def map(self, value):
        return value


env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1, 2, 3], Types.INT()).map(Gauges(), Types.INT()).add_sink(lambda value: None)
env.execute("gauges")
'''


def test_a_gauge_without_a_number_records_why_and_the_job_goes_on(tmp_path):
    (tmp_path / "job.py").write_text(BAD_GAUGE.format(taken="pass"))
    rill(tmp_path, "run", "--clock", "simulated", "--quiet", "job.py")
    rows = json.loads(rill(tmp_path, "metrics", "last", "--json").stdout)["user_metrics"]
    assert [(row["metric"], row["value"], row["error"]) for row in rows] == [
        ("ratio", None, "ZeroDivisionError: division by zero"), ("name", None, "returned 'many' (str), not a number")]
    text = rill(tmp_path, "metrics", "last").stdout
    assert "ratio   gauge  no value: ZeroDivisionError: division by zero" in text


def test_a_name_taken_by_another_kind_of_metric_fails_the_job_in_one_line(tmp_path):
    (tmp_path / "job.py").write_text(BAD_GAUGE.format(taken='group.counter("ratio")'))
    done = rill(tmp_path, "run", "--clock", "simulated", "job.py", code=1)
    assert "rill: error: job 'gauges' failed" in done.stderr
    assert "ValueError: metric 'ratio' is registered as a gauge: it cannot also be a counter" in done.stderr
    assert "Traceback" not in done.stderr.split("rill: error:")[-1]


def test_python_metric_enabled_false_gives_no_metric_group_as_pyflink(tmp_path):
    (tmp_path / "job.py").write_text(JOB)
    (tmp_path / "off.py").write_text(
        "from kernel.common import Types\nfrom kernel.datastream import StreamExecutionEnvironment\n"
        "from kernel.datastream.functions import MapFunction\n\n\nclass Ask(MapFunction):\n"
        "    def open(self, runtime_context):\n        print(runtime_context.get_metrics_group())\n\n"
        "    def map(self, value):\n        return value\n\n\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.from_collection([1], Types.INT()).map(Ask(), Types.INT()).add_sink(lambda value: None)\n"
        "env.execute('off')\n")
    assert rill(tmp_path, "run", "--clock", "simulated", "--quiet", "--set", "python.metric.enabled=false",
                "off.py").stdout == "None\n"
    assert json.loads(rill(tmp_path, "sql", "--format", "json", "SELECT count(*) AS n FROM user_metrics").stdout) \
        == [{"n": 0}]
    done = rill(tmp_path, "run", "--clock", "simulated", "--set", "python.metric.enabled=false", "job.py", "1",
                "unlimited", code=1)  # as in PyFlink: the job's get_metrics_group() is None
    assert "failed in operator 'Measure': AttributeError: 'NoneType' object has no attribute 'add_group'" in done.stderr
    done = rill(tmp_path, "run", "--set", "python.metric.enabled=maybe", "off.py", code=2)
    assert done.stderr.startswith("rill: error:") and "python.metric.enabled" in done.stderr
