"""The command-line flows of the docs (README.md, docs/cli.md, docs/replay.md, ...) as a user's shell
runs them: every command is the installed ``rill`` in a process of its own, reading and writing
one event log under ``RILL_HOME``.

One recorded history serves the read-only commands: a realtime run of the README's example, a
simulated run with an injected fault (its job file deleted afterwards), a checkpointed job
stopped with a savepoint and started again from it. Each test then runs the commands a user
would type about those runs and checks what they print."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import rill_command
from tests.replay.test_replay import FAULT_JOB

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

#: runs until stopped; its counts live in keyed state, so a savepoint carries them
STATEFUL_JOB = """
import sys
from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource

env = StreamExecutionEnvironment.get_execution_environment()
env.enable_checkpointing(1000)
env.from_source(DataGeneratorSource(lambda i: (f"k{i % 3}", 1), count=int(sys.argv[1]), records_per_second=20),
                WatermarkStrategy.no_watermarks(), "Keys") \\
    .key_by(lambda pair: pair[0], Types.STRING()).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("counts") \\
    .name("Counts").print()
env.execute("stateful")
"""


class Shell:
    """``rill`` commands in processes of their own, all in one directory and event log."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("RILL_")},
                    "RILL_HOME": str(home / ".rill")}

    def __call__(self, *args: str, ok: bool = True, timeout: float = 300) -> tuple[int, str, str]:
        done = subprocess.run([*rill_command(), *args], capture_output=True, text=True, cwd=self.home,
                              env=self.env, timeout=timeout)
        if ok:
            assert done.returncode == 0, f"rill {' '.join(args)}: {done.stdout}{done.stderr}"
        return done.returncode, done.stdout, done.stderr

    def json(self, *args: str):
        return json.loads(self(*args)[1])

    def write(self, name: str, source: str) -> str:
        path = self.home / name
        path.write_text(textwrap.dedent(source))
        return str(path)


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Shell, dict[str, str]]:
    """The recorded history the read-only flows look at: run name -> run id."""
    shell = Shell(tmp_path_factory.mktemp("flows"))
    runs = {}
    shell("run", "--quiet", str(EXAMPLES / "wordcount.py"))
    runs["wordcount"] = shell.json("runs", "--limit", "1", "--format", "json")[0]["run_id"]
    fault = shell.write("fault.py", FAULT_JOB)
    shell("run", "--quiet", "--clock", "simulated", "--seed", "4", "--set", "restart-strategy.type=fixed-delay",
          "--inject", "kill:target=taskexecutor-2,at=30s", fault)
    runs["fault"] = shell.json("runs", "--limit", "1", "--format", "json")[0]["run_id"]
    os.remove(fault)
    stateful = shell.write("stateful.py", STATEFUL_JOB)
    _, _, err = shell("run", "--quiet", "--clock", "simulated", "--duration", "3s", "--stop-with-savepoint",
                      str(shell.home / "savepoints"), stateful, "150")
    runs["savepoint"] = re.search(r"Savepoint completed\. Path: (\S+)", err).group(1)
    runs["stopped"] = shell.json("runs", "--limit", "1", "--format", "json")[0]["run_id"]
    shell("run", "--quiet", "--clock", "simulated", "-s", runs["savepoint"], stateful, "150")
    runs["restored"] = shell.json("runs", "--limit", "1", "--format", "json")[0]["run_id"]
    return shell, runs


def test_help_names_every_command(history):
    shell, _ = history
    _, out, _ = shell("--help")
    for command in ("run", "plan", "plugins", "config", "runs", "sql", "metrics", "replay", "export", "log", "report"):
        assert re.search(rf"^\s+{command}\s", out, re.M), command


def test_run_prints_the_example_s_counts_and_a_summary(history):
    shell, _ = history
    _, out, err = shell("run", str(EXAMPLES / "wordcount.py"))
    words = [word.strip(".,;:!?'\"") for line in (EXAMPLES / "data" / "hamlet.txt").read_text().splitlines()
             for word in line.lower().split()]
    printed = [re.fullmatch(r"([123])> \((.+),(\d+)\)", line) for line in out.splitlines()]
    assert all(printed) and len(printed) == len(words)
    per_word: dict[str, list[int]] = {}
    for match in printed:
        per_word.setdefault(match.group(2), []).append(int(match.group(3)))
    assert {word: counts[-1] for word, counts in per_word.items()} == Counter(words)
    assert all(counts == list(range(1, len(counts) + 1)) for counts in per_word.values())
    assert re.match(r"rill: run [0-9a-f]{12} FINISHED - wall [\d.]+ s, clock [\d.]+ s \(realtime\)\n", err)
    assert "Keyed Aggregation -> Sink: Print to Std. Out    3           83            0" in err


def test_run_errors_are_one_line_and_record_nothing(history):
    shell, _ = history
    before = shell.json("runs", "--format", "json", "--limit", "100")
    code, out, err = shell("run", "no-such-job.py", ok=False)
    assert (code, out, err) == (2, "", "rill: error: job file 'no-such-job.py' does not exist\n")
    code, _, err = shell("run", "--clock", "sundial", str(EXAMPLES / "wordcount.py"), ok=False)
    assert code == 2 and err.startswith("rill: error: ") and err.count("\n") == 1 and "sundial" in err
    assert shell.json("runs", "--format", "json", "--limit", "100") == before


def test_plan_at_every_level_and_format(history):
    shell, _ = history
    job = str(EXAMPLES / "window_wordcount.py")
    _, out, _ = shell("plan", job)
    assert out.startswith('JobGraph "Window WordCount" (') and ": 3 vertices\n" in out.splitlines()[0] + "\n"
    graph = shell.json("plan", "--level", "job", "--format", "json", job)
    assert [(n["description"], n["parallelism"]) for n in graph["nodes"]] == [
        ("Source: Text File", 1), ("Flat Map", 4), ("TumblingEventTimeWindows -> Sink: Print to Std. Out", 3)]
    _, out, _ = shell("plan", "--format", "dot", job)
    assert out.startswith('digraph "Window WordCount" {') and out.rstrip().endswith("}")
    for level in ("stream", "execution"):
        _, out, _ = shell("plan", "--level", level, job)
        assert "Flat Map" in out


def test_plugins_and_config_describe_the_installation(history):
    shell, _ = history
    plugins = shell.json("plugins", "--json")
    selected = {p["concern"]: p["name"] for p in plugins if p["status"] == "selected"}
    assert selected["backend"] == "local" and selected["eventlog"] == "duckdb" and selected["graph"] == "flink"
    config = shell.json("config", "--json")
    assert config["eventlog.path"]["value"] == str(shell.home / ".rill" / "rill.duckdb")
    assert config["parallelism.default"] == {"value": 1, "source": "default"}
    _, out, _ = shell("config", "--set", "parallelism.default=3")
    assert re.search(r"^parallelism\.default\s+3\s+--set", out, re.M)


def test_runs_lists_the_history_in_every_format(history):
    shell, runs = history
    listed = shell.json("runs", "--format", "json", "--limit", "100")
    ids = [row["run_id"] for row in listed]
    for name in ("wordcount", "fault", "stopped", "restored"):
        assert runs[name] in ids
    assert ids.index(runs["restored"]) < ids.index(runs["stopped"]) < ids.index(runs["fault"])  # newest first
    _, out, _ = shell("runs", "--format", "csv", "--limit", "2")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [row["run_id"] for row in rows] == ids[:2]
    code, _, err = shell("runs", "--limit", "-5", ok=False)
    assert code == 2 and err.startswith("rill: error: ") and err.count("\n") == 1


def test_sql_on_the_log_on_an_export_and_in_spark(history, tmp_path):
    shell, runs = history
    query = (f"SELECT kind, count(*) AS n FROM events WHERE run_id = '{runs['fault']}' "
             "AND kind IN ('fault_injected', 'tasks_restarted') GROUP BY kind ORDER BY kind")
    expected = [{"kind": "fault_injected", "n": 1}, {"kind": "tasks_restarted", "n": 1}]
    assert shell.json("sql", "--format", "json", query) == expected
    _, out, _ = shell("sql", "--format", "csv", query)
    assert out == "kind,n\nfault_injected,1\ntasks_restarted,1\n"
    _, out, _ = shell("export", runs["fault"], "--parquet", str(tmp_path / "export"))
    assert shell.json("sql", "--format", "json", "--parquet", str(tmp_path / "export"), query) == expected
    spark = shell.json("sql", "--format", "json", "--engine", "spark", "--set", "spark.master=local[1]", query)
    assert spark == expected
    code, out, err = shell("sql", "SELECT * FROM no_such_table", ok=False)
    assert (code, out) == (2, "") and err.startswith("rill: error: SQL error: Catalog Error: ")


def test_metrics_replay_and_report_of_a_fault_run(history, tmp_path):
    shell, runs = history
    metrics = shell.json("metrics", runs["fault"], "--json")
    assert (metrics["status"], metrics["failures"], metrics["restarts"]) == ("finished", 1, 1)
    state = shell.json("replay", runs["fault"], "--at", "35", "--json")
    worker = state["task_executors"]["taskexecutor-2"]
    assert (worker["status"], worker["reason"]) == ("stopped", "killed by fault #1")
    assert state["subtasks"]["Source: Numbers/1"] == {"state": "RUNNING", "attempt": 0,  # the loss is not yet detected
                                                      "resource_id": "taskexecutor-2"}
    _, out, _ = shell("replay", runs["fault"], "--events", "--kind", "fault_injected")
    [line] = out.splitlines()
    assert re.match(r"\s+30\.000000\s+\d+\s+fault_injected\s+\{.*\"target\":\"taskexecutor-2\"", line)
    _, out, _ = shell("replay", runs["fault"], "--events", "--from", "69", "--to", "71", "--kind", "tasks_restarted")
    assert len(out.splitlines()) == 1
    code, out, err = shell("replay", runs["fault"], "--events", "--from", "5", "--to", "1", ok=False)
    assert (code, out) == (2, "") and err.startswith("rill: error: ") and err.count("\n") == 1
    _, out, _ = shell("replay", runs["fault"], "--rerun")  # its job file was deleted: the recorded copy runs
    assert "re-executing the copy recorded with the run" in out and "identical sequence" in out
    page = tmp_path / "report.html"
    shell("report", runs["fault"], "-o", str(page))
    html = page.read_text()
    assert html.startswith("<!doctype html>") and runs["fault"] in html and "taskexecutor-2" in html
    shell("report", runs["fault"], "--compare", runs["wordcount"], "-o", str(tmp_path / "both.html"))
    assert runs["wordcount"] in (tmp_path / "both.html").read_text()


def test_a_savepoint_restores_the_counts_and_its_state_reads_as_a_table(history):
    """150 records at 20 a second, stopped with a savepoint after 3 s: started from it, the job
    goes on from each key's count in the savepoint (and from its source's position) to 50."""
    shell, runs = history
    state = shell.json("sql", "--format", "json", "--checkpoint", runs["savepoint"],
                       "SELECT key, value FROM state WHERE operator = 'Counts' ORDER BY key")
    saved = {row["key"]: json.loads(row["value"])[1] for row in state}
    assert sorted(saved) == ["k0", "k1", "k2"] and 50 > max(saved.values()) and min(saved.values()) > 10
    printed = shell.json("sql", "--format", "json", "SELECT text FROM ev_sink_output_printed WHERE run_id = "
                                                    f"'{runs['restored']}' ORDER BY seq")
    counts: dict[str, list[int]] = {}
    for row in printed:
        for key, count in re.findall(r"\('(k\d)', (\d+)\)", row["text"]):
            counts.setdefault(key, []).append(int(count))
    assert counts == {key: list(range(saved[key] + 1, 51)) for key in saved}


def test_the_log_commands_check_salvage_and_recover(history, tmp_path):
    shell, runs = history
    _, out, _ = shell("log", "check")
    assert out.splitlines()[-1].endswith("runs, all intact")
    copy = tmp_path / "salvaged.duckdb"
    _, out, _ = shell("log", "salvage", str(copy))
    assert runs["fault"] in out
    salvaged = shell.json("runs", "--format", "json", "--limit", "100", "--set", f"eventlog.path={copy}")
    assert {row["run_id"] for row in salvaged} >= {runs["fault"], runs["wordcount"]}
    blocked = tmp_path / "blocked.duckdb"
    blocked.mkdir()  # a directory where the log should be: the run spools
    _, _, err = shell("run", "--quiet", "--set", f"eventlog.path={blocked}", str(EXAMPLES / "wordcount.py"))
    assert "cannot be written" in err and "spooled in" in err
    blocked.rmdir()
    _, out, _ = shell("log", "recover", "--set", f"eventlog.path={blocked}")
    assert "recovered 1 run(s)" in out
    [row] = shell.json("runs", "--format", "json", "--set", f"eventlog.path={blocked}")
    assert row["status"] == "finished" and row["job"] == "WordCount"
