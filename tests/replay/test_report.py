"""``rill report``: the HTML page of a back-pressured run and of a fault run, rendered in headless
Chromium and checked against ``rill metrics`` and the views; the live status line of
``rill run`` under a pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from replay.report.svg import vertex_colors
from tests.replay.test_replay import FAULT_JOB

SLOW_SINK_JOB = """
from kernel import clock
from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource

def slow(value):
    clock.sleep(0.001)

env = StreamExecutionEnvironment.get_execution_environment()
env.from_source(DataGeneratorSource(lambda i: i, count=60_000), WatermarkStrategy.no_watermarks(), "Numbers") \\
    .map(lambda x: x * 2, Types.LONG()).name("Double").rebalance().add_sink(slow).name("Slow Sink")
env.execute("slow sink")
"""

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def chromium() -> str:
    """Headless Chromium when it is installed (``.ci/run`` installs Debian's package); the tests
    never install anything themselves."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("headless Chromium is not installed (no chromium, chromium-browser or google-chrome on PATH): "
                "install Debian's chromium package, as .ci/run does, to render the reports")


def render_dom(chromium: str, url: str, tmp_path, screenshot: str | None = None) -> str:
    """The page's DOM after its script ran (and a screenshot)."""
    profile = tmp_path / f"chromium-profile-{len(os.listdir(tmp_path))}"
    flags = [*CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1400,2200"]
    if screenshot:
        shot = subprocess.run([chromium, *flags, f"--screenshot={screenshot}", url], capture_output=True, timeout=120)
        assert shot.returncode == 0 and os.path.getsize(screenshot) > 10_000, shot.stderr[-500:]
    dom = subprocess.run([chromium, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-500:]
    return dom.stdout


class Elements(HTMLParser):
    """Attributes (and text) of the elements of a page, by tag."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str], list[str]]] = []
        self.open: list[list[str]] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        text: list[str] = []
        self.found.append((tag, dict(attrs), text))
        if tag not in ("rect", "line", "polyline", "path", "input", "meta", "br"):
            self.open.append(text)

    def handle_endtag(self, tag):
        if tag not in ("rect", "line", "polyline", "path", "input", "meta", "br") and self.open:
            done = self.open.pop()
            if self.open:
                self.open[-1].extend(done)

    def handle_data(self, data):
        if self.open:
            self.open[-1].append(data)

    def of(self, tag: str, css: str | None = None) -> list[tuple[dict[str, str], str]]:
        return [(attrs, "".join(text)) for t, attrs, text in self.found
                if t == tag and (css is None or css in attrs.get("class", "").split())]


def record(cli, tmp_path, name: str, source: str, *args: str) -> dict:
    path = tmp_path / name
    path.write_text(source)
    code, _, err = cli("run", "--clock", "simulated", "--quiet", *args, str(path))
    assert code == 0, err
    code, out, err = cli("metrics", "last", "--json")
    assert code == 0, err
    return json.loads(out)


def number(text: str) -> float | None:
    return None if text == "" else float(text)


def check_graph(elements: Elements, metrics: dict) -> None:
    vertices = {attrs["data-vertex"]: (attrs, text) for attrs, text in elements.of("g", "vertex")}
    assert set(vertices) == {v["vertex"] for v in metrics["vertices"]}
    for vertex in metrics["vertices"]:
        attrs, text = vertices[vertex["vertex"]]
        assert attrs["data-level"] == (vertex["level"] or "")
        assert number(attrs["data-busy-pct"]) == vertex["busy_pct"]
        assert number(attrs["data-back-pressured-pct"]) == vertex["back_pressured_pct"]
        assert attrs["data-background"] == vertex_colors(vertex["busy_pct"], vertex["back_pressured_pct"])[0]
        assert f"Parallelism: {vertex['parallelism']}" in text and (vertex["level"] or "N/A") in text


def check_charts(elements: Elements, metrics: dict) -> None:
    charts = elements.of("svg", "chart")
    for vertex in metrics["vertices"]:
        mine = [attrs for attrs, _ in charts if attrs["data-vertex"] == vertex["vertex"]]
        assert {c["data-chart"] for c in mine} == {"time per second", "records per second", "watermark lag"}
    series = {}
    for attrs, _ in elements.of("polyline", "series"):
        series.setdefault(attrs["data-series"], []).append(json.loads(attrs["data-values"]))
    # the records charts add up to what rill metrics counts, per vertex, in the page's order
    assert [sum(v or 0 for v in values) for values in series["records_in"]] == \
        [v["records_in"] for v in metrics["vertices"]]
    assert [sum(v or 0 for v in values) for values in series["records_out"]] == \
        [v["records_out"] for v in metrics["vertices"]]
    for busy, idle, back_pressured in zip(series["busy_ms"], series["idle_ms"], series["back_pressured_ms"]):
        for b, i, p in zip(busy, idle, back_pressured):
            if b is not None and i is not None:
                assert b + i + p == pytest.approx(1000, abs=1e-6)


def test_the_report_of_a_back_pressured_run(cli, tmp_path, chromium):
    metrics = record(cli, tmp_path, "slow.py", SLOW_SINK_JOB)
    by_name = {v["vertex"]: v for v in metrics["vertices"]}
    assert by_name["Source: Numbers -> Double"]["level"] == "HIGH"
    assert by_name["Sink: Slow Sink"]["busy_pct"] == 100.0
    code, out, err = cli("report", "last", "-o", str(tmp_path / "slow.html"))
    assert code == 0 and out.strip().endswith(f"report of run {metrics['run_id']}"), err
    page = (tmp_path / "slow.html").read_text()
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page  # nothing fetched

    dom = render_dom(chromium, (tmp_path / "slow.html").as_uri(), tmp_path, str(tmp_path / "slow.png"))
    elements = Elements(dom)
    check_graph(elements, metrics)
    # Flink's colours: the back-pressured source grey/black, the busy sink red
    vertices = {attrs["data-vertex"]: attrs for attrs, _ in elements.of("g", "vertex")}
    assert vertices["Source: Numbers -> Double"]["data-background"] == "#888888"
    assert vertices["Sink: Slow Sink"]["data-background"] == "#ee6464"
    [edge] = elements.of("g", "edge")
    assert edge[0]["data-ship-strategy"] == "REBALANCE" and "REBALANCE" in edge[1]
    check_charts(elements, metrics)
    [(_, label)] = elements.of("output", "instant-label")
    assert label == "run average"

    # an instant: the worst subtask of that second, from the backpressure view
    code, out, _ = cli("sql", "--format", "json", "SELECT vertex_name, level, busy_ms, back_pressured_ms FROM "
                       f"backpressure WHERE run_id = '{metrics['run_id']}' AND second = 30")
    expected = {row["vertex_name"]: row for row in json.loads(out)}
    elements = Elements(render_dom(chromium, (tmp_path / "slow.html").as_uri() + "#t=30", tmp_path))
    [(_, label)] = elements.of("output", "instant-label")
    assert label == "second 30"
    for attrs, _ in elements.of("g", "vertex"):
        row = expected[attrs["data-vertex"]]
        busy, back_pressured = min(round(row["busy_ms"] / 10), 100), min(round(row["back_pressured_ms"] / 10), 100)
        assert (attrs["data-level"], number(attrs["data-busy-pct"]), number(attrs["data-back-pressured-pct"])) == (
            row["level"], busy, back_pressured)
        assert attrs["data-background"] == vertex_colors(busy, back_pressured)[0]


def test_the_report_of_a_fault_run_marks_faults_timeouts_failures_and_restarts(cli, tmp_path, chromium):
    metrics = record(cli, tmp_path, "fault.py", FAULT_JOB, "--set", "restart-strategy.type=fixed-delay",
                     "--inject", "kill:target=taskexecutor-2,at=30s")
    code, _, err = cli("report", metrics["run_id"][:6], "-o", str(tmp_path / "fault.html"))
    assert code == 0, err
    elements = Elements(render_dom(chromium, (tmp_path / "fault.html").as_uri(), tmp_path, str(tmp_path / "fault.png")))
    check_graph(elements, metrics)
    check_charts(elements, metrics)
    markers = sorted((attrs["data-kind"], float(attrs["data-second"])) for attrs, _ in elements.of("g", "marker"))
    assert markers == [("failure", 70.0), ("fault", 30.0), ("heartbeat timeout", 70.0), ("heartbeat timeout", 70.0),
                       ("restart", 71.0)]
    states = [(attrs["data-state"], attrs["data-attempt"]) for attrs, _ in elements.of("rect", "state")]
    assert ("FAILED", "0") in states and ("RUNNING", "1") in states
    failures = elements.of("table", "failures")
    assert failures and "TimeoutException: Heartbeat of TaskManager with id taskexecutor-2 timed out." in failures[0][1]
    heartbeats = elements.of("table", "heartbeats")[0][1]
    assert "resourcemanager" in heartbeats and "taskexecutor-2" in heartbeats
    run = elements.of("section", "run")[0][1]
    assert "restart-strategy.type" in run and "fixed-delay" in run and "pipelined-region" in run


def test_two_runs_side_by_side(cli, tmp_path):
    first = record(cli, tmp_path, "fault.py", FAULT_JOB)
    second = record(cli, tmp_path, "fault.py", FAULT_JOB, "--set", "restart-strategy.type=fixed-delay",
                    "--inject", "kill:target=taskexecutor-2,at=30s")
    code, out, err = cli("report", first["run_id"], "--compare", second["run_id"], "-o", str(tmp_path / "both.html"))
    assert code == 0, err
    elements = Elements((tmp_path / "both.html").read_text())
    assert [attrs["data-run-id"] for attrs, _ in elements.of("section", "run")] == [first["run_id"], second["run_id"]]
    [(_, table)] = elements.of("table", "comparison")
    assert "failures" in table and "restarts" in table


def test_bad_report_requests_are_clear_errors(cli, tmp_path):
    record(cli, tmp_path, "fault.py", FAULT_JOB)
    code, _, err = cli("report", "nosuchrun")
    assert code == 2 and "no recorded run 'nosuchrun'" in err
    code, _, err = cli("report", "last", "-o", str(tmp_path / "missing" / "dir" / "r.html"))
    assert (code, err) == (2, f"rill: error: --output {tmp_path}/missing/dir/r.html: no directory "
                              f"{tmp_path}/missing/dir\n")


# -- the live status line ------------------------------------------------------------------------------

PROGRESS_JOB = """
from kernel.common import Duration, Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(100)) \\
    .with_timestamp_assigner(lambda v, ts: v * 10)
env.from_source(DataGeneratorSource(lambda i: i, count=8000, records_per_second=2000), strategy, "Numbers") \\
    .key_by(lambda v: v % 7, Types.INT()).map(lambda v: v + 1).name("Plus").add_sink(lambda v: None).name("Out")
env.execute("progress")
"""


def run_with_terminal(tmp_path, *args: str, stderr_tty: bool = True) -> tuple[int, str]:
    """``rill run`` with stderr on a pseudo-terminal (or a pipe): (exit code, what stderr got)."""
    job = tmp_path / "progress.py"
    job.write_text(PROGRESS_JOB)
    env = {**os.environ, "RILL_HOME": str(tmp_path / ".rill")}
    command = [sys.executable, "-m", "kernel.cli.main", "run", "--set", "rill.events.flush-interval=200ms", *args,
               str(job)]
    if not stderr_tty:
        result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
        return result.returncode, result.stderr
    master, slave = pty.openpty()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=slave, cwd=tmp_path, env=env)
    os.close(slave)
    received = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed the terminal
                chunk = b""
            if not chunk:
                break
            received += chunk
        elif process.poll() is not None:
            break
    os.close(master)
    return process.wait(timeout=60), received.decode()


def test_a_live_status_line_on_a_terminal(tmp_path):
    code, received = run_with_terminal(tmp_path)
    assert code == 0, received
    updates = [part for part in received.split("\r\x1b[K") if part.startswith("rill: ") and "records/s" in part]
    assert len(updates) >= 3
    elapsed = [float(update.split(" s |")[0].removeprefix("rill: ").replace(",", "")) for update in updates]
    assert elapsed == sorted(elapsed) and elapsed[-1] > 0.5
    assert any(" 0 records/s" not in update for update in updates)  # the sources' rate once sampled
    assert all(update.endswith("failures 0") for update in updates)
    assert any("low watermark" in u and "low watermark -" not in u for u in updates)
    assert any("back pressure OK" in update for update in updates)
    # the line is cleared before the summary, which follows on its own lines
    summary = received.rsplit("\r\x1b[K", 1)[1]
    assert summary.startswith("rill: run ") and "FINISHED" in summary and "records/s" not in summary


def test_no_status_line_without_a_terminal_or_with_quiet(tmp_path):
    code, received = run_with_terminal(tmp_path, stderr_tty=False)
    assert code == 0 and "\x1b[K" not in received and "records/s" not in received and "FINISHED" in received
    code, received = run_with_terminal(tmp_path, "--quiet")
    assert code == 0 and received == ""
