"""What ``rill sql --parquet DIR`` reads (:mod:`replay.exported`), on both engines: only regular
files inside DIR, each one a Parquet file of its table as ``rill export`` writes it. A symbolic
link (to a file, a run directory or an events directory), a FIFO, a foreign directory, garbage,
a truncated file or another table's columns is refused before any engine reads a row: one line
naming the file, exit 2, the same on DuckDB and Spark."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import rill_command

WORDCOUNT = Path(__file__).resolve().parents[2] / "examples" / "wordcount.py"
ENGINES = ["duckdb", "spark"]


@pytest.fixture(scope="module", autouse=True)
def spark():
    from plugins.spark.options import SparkOptions
    from plugins.spark.session import spark_session

    session, _ = spark_session(SparkOptions())
    yield session
    session.stop()


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """An export of two simulated word counts (seeds 1 and 2), one directory per run."""
    base = tmp_path_factory.mktemp("exported")
    env = {name: value for name, value in os.environ.items() if not name.startswith("RILL_")}
    env["RILL_HOME"] = str(base / ".rill")
    for args in (("run", "--clock", "simulated", "--quiet", "--seed", "1", str(WORDCOUNT)),
                 ("run", "--clock", "simulated", "--quiet", "--seed", "2", str(WORDCOUNT)),
                 ("export", "last", "--parquet", "export")):
        done = subprocess.run([*rill_command(), *args], capture_output=True, text=True, cwd=base, env=env)
        assert done.returncode == 0, done.stderr
    return base / "export"


def tampered(exported: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """(a copy of the export, its run's directory, a directory outside it)."""
    export = tmp_path / "export"
    shutil.copytree(exported, export)
    [run] = list(export.iterdir())
    outside = tmp_path / "outside"
    outside.mkdir()
    return export, run, outside


def _link_a_run_file(export, run, outside):
    shutil.copy(run / "run.parquet", outside / "runs.parquet")
    (export / "elsewhere").mkdir()
    (export / "elsewhere" / "run.parquet").symlink_to(outside / "runs.parquet")
    return export / "elsewhere" / "run.parquet", "is a symbolic link: only regular files inside {export} are read"


def _link_an_event_file(export, run, outside):
    (run / "events" / "passwd.parquet").symlink_to("/etc/passwd")
    return run / "events" / "passwd.parquet", "is a symbolic link: only regular files inside {export} are read"


def _link_a_run(export, run, outside):
    shutil.copytree(run, outside / "run")
    (export / "elsewhere").symlink_to(outside / "run")
    return export / "elsewhere", "is a symbolic link: only what lies inside {export} is read"


def _link_the_events(export, run, outside):
    shutil.move(run / "events", outside / "events")
    (run / "events").symlink_to(outside / "events")
    return run / "events", "is not a directory (a symbolic link?): only what lies inside {export} is read"


def _a_fifo(export, run, outside):
    os.mkfifo(run / "events" / "waiting.parquet")
    return run / "events" / "waiting.parquet", "is not a regular file: only regular files inside {export} are read"


def _a_foreign_directory(export, run, outside):
    (export / "notes").mkdir()
    (export / "notes" / "todo.txt").write_text("read me\n")
    return export / "notes", ("holds no run.parquet: not a run `rill export` wrote (an export directory holds only "
                              "runs)")


def _garbage_runs(export, run, outside):
    (run / "run.parquet").write_bytes(os.urandom(4096))
    return run / "run.parquet", "{file}: not a Parquet file `rill export` wrote: "


def _an_empty_event_file(export, run, outside):
    (run / "events" / "run_started.parquet").write_bytes(b"")
    return run / "events" / "run_started.parquet", "{file}: not a Parquet file `rill export` wrote: "


def _a_truncated_event_file(export, run, outside):
    path = run / "events" / "task_metrics_sampled.parquet"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path, "{file}: not a Parquet file `rill export` wrote: "


def _another_tables_columns(export, run, outside):
    shutil.copy(run / "events" / "run_started.parquet", run / "run.parquet")
    return run / "run.parquet", ("{file}: not a file `rill export` wrote for runs: it has no column status, config, "
                                 "plugins, ")


def _no_event_columns(export, run, outside):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"run_id": ["x"], "when": [1]}), run / "events" / "job_submitted.parquet")
    return run / "events" / "job_submitted.parquet", ("{file}: not a file `rill export` wrote for ev_job_submitted: "
                                                      "it has no column seq, time")


def _a_column_of_another_type(export, run, outside):
    import pyarrow.parquet as pq

    table = pq.read_table(run / "run.parquet")
    index = table.schema.get_field_index("status")
    pq.write_table(table.set_column(index, "status", [[3] * table.num_rows]), run / "run.parquet")
    return run / "run.parquet", ("{file}: not a file `rill export` wrote for runs: its column status holds int64, "
                                 "not text")


TAMPERINGS = [_link_a_run_file, _link_an_event_file, _link_a_run, _link_the_events, _a_fifo, _a_foreign_directory,
              _garbage_runs, _an_empty_event_file, _a_truncated_event_file, _another_tables_columns,
              _no_event_columns, _a_column_of_another_type]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("tamper", TAMPERINGS, ids=[tamper.__name__.strip("_") for tamper in TAMPERINGS])
def test_what_rill_did_not_write_is_refused_in_one_line_naming_the_file(cli, exported, tmp_path, engine, tamper):
    export, run, outside = tampered(exported, tmp_path)
    path, problem = tamper(export, run, outside)
    code, out, err = cli("sql", "--engine", engine, "--parquet", str(export), "SELECT count(*) AS n FROM runs")
    line = problem.format(export=export, file=path)
    expected = f"rill: error: {line}" if line.startswith(str(path)) else f"rill: error: {path} {line}"
    assert (code, out) == (2, "") and err.startswith(expected) and err.count("\n") == 1, err
    assert "internal error" not in err


@pytest.mark.parametrize("engine", ENGINES)
def test_a_directory_named_like_a_pattern_is_read_as_itself(cli, exported, tmp_path, engine):
    """``exp*`` is that directory, not also its sibling ``export2``; ``runs[1]`` is read at all."""
    for name in ("exp*", "export2", "runs[1]"):
        shutil.copytree(exported, tmp_path / name)
    [run] = list(exported.iterdir())
    shutil.copytree(run, tmp_path / "export2" / "another")  # a second run beside the pattern's directory
    for name in ("exp*", "runs[1]"):
        code, out, err = cli("sql", "--engine", engine, "--parquet", str(tmp_path / name), "--format", "csv",
                             "SELECT count(*) AS n FROM runs")
        assert (code, out, err) == (0, "n\n1\n", ""), name


def test_an_export_as_rill_wrote_it_reads_on_both_engines(cli, exported):
    answers = [cli("sql", "--engine", engine, "--parquet", str(exported), "--format", "csv",
                   "SELECT job_name, seed, status FROM runs") for engine in ENGINES]
    assert answers[0] == answers[1] == (0, "job_name,seed,status\nWordCount,2,finished\n", "")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_file_uri_is_the_local_directory_and_checked_as_such(cli, exported, tmp_path, engine):
    code, out, err = cli("sql", "--engine", engine, "--parquet", f"file://{exported}", "--format", "csv",
                         "SELECT seed FROM runs")
    assert (code, out, err) == (0, "seed\n2\n", "")
    export, run, outside = tampered(exported, tmp_path)
    path, problem = _link_an_event_file(export, run, outside)
    for uri in (f"file:{export}", f"file://localhost{export}"):
        code, out, err = cli("sql", "--engine", engine, "--parquet", uri, "SELECT count(*) FROM runs")
        assert (code, out, err) == (2, "", f"rill: error: {path} {problem.format(export=export)}\n"), uri


def test_duckdb_reads_no_other_file_system(cli):
    code, out, err = cli("sql", "--parquet", "hdfs://namenode/exports", "SELECT count(*) FROM runs")
    assert (code, out, err) == (2, "", "rill: error: --parquet hdfs://namenode/exports: DuckDB reads an export on this "
                                       "machine (Spark reads other file systems: --engine spark)\n")


def test_which_uris_name_this_machine():
    from kernel.contracts.sql import local_path

    assert [local_path(uri) for uri in ("export", "/data/export", "file:/data/export", "file:///data/export",
                                        "file://localhost/data/export", "FILE:/x", "file://nn/data/export",
                                        "hdfs://nn/data/export", "s3a://bucket/export")] == [
        "export", "/data/export", "/data/export", "/data/export", "/data/export", "/x", None, None, None]
