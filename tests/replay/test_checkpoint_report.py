"""Checkpoints seen: the report's checkpoints section (Flink's checkpoint tab: counts, the
latest completed checkpoint, savepoint, failure and restore, the history) rendered in headless
Chromium, ``rill metrics`` and ``rill replay --at`` — each checked against the views and events
of the same runs."""

from __future__ import annotations

import csv
import io
import json

from tests.savepoint_jobs import COUNT_JOB, savepoint_path, write
from tests.replay.test_report import Elements, chromium, render_dom  # noqa: F401 (chromium: a fixture)

SIM = ("--clock", "simulated", "--quiet")


def rows(cli, query: str) -> list[dict[str, str]]:
    code, out, err = cli("sql", "--format", "csv", query)
    assert code == 0, err
    return list(csv.DictReader(io.StringIO(out)))


def two_runs(cli, tmp_path) -> tuple[str, str, str]:
    """A job taking checkpoints stopped with a savepoint at 3.5 s (checkpoints 1-3, savepoint 4),
    then resumed from it to its end (checkpoints 5-6 and the final one, 7): the run ids and the
    savepoint."""
    job = write(tmp_path, "counts.py", COUNT_JOB)
    code, _, err = cli("run", *SIM, "--duration", "3500ms", "--stop-with-savepoint", str(tmp_path / "sp"), job,
                       "checkpoints")
    assert code == 0, err
    path = savepoint_path(err)
    code, _, err = cli("run", *SIM, "-s", path, job, "checkpoints")
    assert code == 0, err
    first, second = [row["run_id"] for row in rows(cli, "SELECT run_id FROM rill.runs ORDER BY started_at")]
    return first, second, path


def history(cli, run_id: str) -> list[dict[str, str]]:
    return rows(cli, "SELECT checkpoint_id, status, kind, trigger_s, end_to_end_ms, state_size, max_alignment_ms, "
                     f"acknowledged_subtasks, total_subtasks FROM checkpoints WHERE run_id = '{run_id}' "
                     "ORDER BY checkpoint_id")


def test_the_reports_checkpoints_section(cli, tmp_path, chromium):  # noqa: F811
    first, second, path = two_runs(cli, tmp_path)
    code, _, err = cli("report", first, "--compare", second, "-o", str(tmp_path / "report.html"))
    assert code == 0, err
    elements = Elements(render_dom(chromium, (tmp_path / "report.html").as_uri(), tmp_path,
                                   str(tmp_path / "report.png")))
    counts = [text for _, text in elements.of("table", "checkpoint-counts")]
    latest = [text for _, text in elements.of("table", "checkpoint-latest")]
    tables = [text for _, text in elements.of("table", "checkpoint-history")]
    assert len(counts) == len(latest) == len(tables) == 2
    assert counts == ["triggeredin progresscompletedfailedrestored40400",
                      "triggeredin progresscompletedfailedrestored30301"]
    for table, run_id in zip(tables, (first, second)):
        expected = "idstatuskindtrigger time send to end msstate sizemax alignment msacknowledgedfailure"
        for row in history(cli, run_id):
            expected += (f'{row["checkpoint_id"]}{row["status"]}{row["kind"]}{float(row["trigger_s"]):,.3f}'
                         .rstrip("0").rstrip(".") + f'{float(row["end_to_end_ms"]):g}{int(row["state_size"]):,}'
                         f'{float(row["max_alignment_ms"]):g}{row["acknowledged_subtasks"]}/{row["total_subtasks"]}-')
        assert table == expected
    size = int(history(cli, first)[3]["state_size"])
    # run 1: the latest checkpoint is 3, its savepoint 4; run 2 restored savepoint 4
    assert latest[0] == ("idtime send to end msstate sizepath / cause"
                         f"latest completed checkpoint32.9250{int(history(cli, first)[2]['state_size']):,}"
                         "JobMaster memory"
                         f"latest savepoint43.50{size:,}{path}"
                         "latest failed-----latest restore-----")
    assert latest[1].endswith(f"latest restore40-{size:,}savepoint {path}")


def test_a_run_without_checkpoints_says_so(cli, tmp_path):
    job = write(tmp_path, "counts.py", COUNT_JOB)
    assert cli("run", *SIM, job)[0] == 0
    code, _, err = cli("report", "last", "-o", str(tmp_path / "report.html"))
    assert code == 0, err
    page = (tmp_path / "report.html").read_text()
    assert "<h2>Checkpoints</h2><p>No checkpoints.</p>" in page
    code, out, err = cli("metrics", "last")
    assert code == 0 and "checkpoints" not in out, err
    code, out, err = cli("metrics", "last", "--json")
    assert code == 0 and json.loads(out)["checkpoints"] is None


def test_metrics_show_the_last_completed_checkpoint_and_savepoint(cli, tmp_path):
    first, second, path = two_runs(cli, tmp_path)
    one, two = history(cli, first), history(cli, second)
    code, out, err = cli("metrics", first)
    assert code == 0, err
    assert out.splitlines()[-3:] == [
        "checkpoints: 4 completed, 0 failed, 0 in progress, 0 restored",
        f"last completed checkpoint #3 (triggered at 2.925 s): {int(one[2]['state_size']):,} bytes, 0.0 ms, in the "
        "JobMaster's memory",
        f"last savepoint #4 (triggered at 3.500 s): {int(one[3]['state_size']):,} bytes, 0.0 ms, {path}"]
    code, out, err = cli("metrics", second, "--json")
    assert code == 0, err
    checkpoints = json.loads(out)["checkpoints"]
    assert checkpoints["counts"] == {"triggered": 3, "in_progress": 0, "completed": 3, "failed": 0, "restored": 1}
    assert checkpoints["latest_completed"]["checkpoint_id"] == 7 and checkpoints["latest_savepoint"] is None
    assert checkpoints["latest_restore"] == {"checkpoint_id": 4, "kind": "savepoint", "external_path": path,
                                             "restored_s": 0.0, "subtasks": 2, "state_size": int(one[3]["state_size"])}
    assert [c["checkpoint_id"] for c in checkpoints["history"]] == [int(row["checkpoint_id"]) for row in two]


def test_replay_at_shows_the_checkpoints_by_then(cli, tmp_path):
    first, second, path = two_runs(cli, tmp_path)
    one = history(cli, first)
    code, out, err = cli("replay", first, "--at", "2.5")
    assert code == 0, err
    assert out.splitlines()[-4:] == [
        "Checkpoints",
        "  2 triggered, 2 completed, 0 failed, 0 in progress",
        f"  last completed checkpoint #2 (completed at 1.925 s): {int(one[1]['state_size']):,} bytes, 0.0 ms, in the "
        "JobMaster's memory",
        "  last savepoint none"]
    code, out, err = cli("replay", first, "--at", "4")
    assert code == 0, err
    assert out.splitlines()[-2] == (f"  last completed checkpoint #3 (completed at 2.925 s): "
                                    f"{int(one[2]['state_size']):,} bytes, 0.0 ms, in the JobMaster's memory")
    assert out.splitlines()[-1] == (f"  last savepoint #4 (completed at 3.500 s): {int(one[3]['state_size']):,} bytes, "
                                    f"0.0 ms, {path}")
    code, out, err = cli("replay", second, "--at", "0", "--json")
    assert code == 0, err
    assert json.loads(out)["checkpoints"] == {
        "triggered": 0, "completed": 0, "failed": 0, "in_progress": 0, "last_completed": None,
        "last_savepoint": None, "last_failed": None,
        "last_restore": {"checkpoint_id": 4, "kind": "savepoint", "external_path": path, "restored_s": 0.0,
                         "subtasks": 2, "state_size": int(one[3]["state_size"])}}
