"""Attacks on a running job's ports, as a user runs the job (``rill run`` in a process of its own)
and as an attacker would (``tests/attacker.py``, a process of its own): the cluster's messaging
hub, every TaskExecutor's partition port and, with Spark workers, the driver's task channel get a
frame carrying a pickle (with and without a guessed handshake), a handshake recorded from one of
the run's own connections (by a TCP relay the workers reach the hub through), garbage and 4 GiB
length headers. None is decoded: no marker file, the job prints what it prints unattacked, every
attempt is recorded as ``connection_rejected`` with the attacker's address and a one-line warning.
With TLS between the processes (``processes`` and ``spark`` workers), plain and wrongly certified
peers never get to the handshake, and what crosses is encrypted.

The run's ports are found in ``/proc`` (Linux): the hub listens at ``jobmanager.rpc.port``, the
TaskExecutors serve their partitions on a loopback address of the test's own."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.certs import needs_openssl, self_signed
from tests.conftest import rill_command
from tests.kernel.remoting.test_security import Relay

ROOT = Path(__file__).resolve().parents[3]
COUNT = 12_000
KEYS = 4
#: what the job prints, without the subtask prefixes: each key's running count
EXPECTED = sorted(f"(k{k},{n})" for k in range(KEYS) for n in range(1, COUNT // KEYS + 1))
JOB = f"""
from kernel.common import Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.datagen import DataGeneratorSource

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.from_source(DataGeneratorSource(lambda i: (f"k{{i % {KEYS}}}", 1), count={COUNT}, records_per_second=1_000,
                                    type_info=Types.TUPLE([Types.STRING(), Types.INT()])),
                WatermarkStrategy.no_watermarks(), "Numbers") \\
    .key_by(lambda r: r[0], Types.STRING()).reduce(lambda a, b: (a[0], a[1] + b[1])).print()
env.execute("counts")
"""
#: what a listening process says first: rill's handshake
MAGIC = b"RILL\x00\x01\r\n".hex()
REJECTED = {
    "pickle": "it did not prove it knows the run's secret",
    "pickle after a guessed proof": "it did not prove it knows the run's secret",
    "garbage": "it did not prove it knows the run's secret",
    "huge header": "no handshake within 3 s",
    "huge header, closed": "closed during the handshake",
    "replay": "it did not prove it knows the run's secret",
}

TLS_REJECTED = {
    "pickle": "TLS handshake failed: WRONG_VERSION_NUMBER",
    "pickle after a guessed proof": "no handshake within 3 s",  # waits for the greeting TLS never sends
    "huge header": "no handshake within 3 s",  # not even a TLS record header
    "huge header, closed": "closed during the TLS handshake",
    "tls pickle": "TLS handshake failed: certificate verify failed (self-signed certificate)",
}

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="finds the run's ports in /proc (Linux)")


def loopback_network() -> str:
    """A /24 of the loopback range for this test's addresses (``127.a.b.``)."""
    return f"127.{random.randint(100, 250)}.{random.randint(1, 250)}."


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _listening() -> list[tuple[str, int, str]]:
    """(ip, port, socket inode) of every IPv4 TCP socket listening on this machine."""
    found = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] != "0A":  # LISTEN
            continue
        ip_hex, port_hex = fields[1].split(":")
        ip = socket.inet_ntoa(bytes.fromhex(ip_hex)[::-1])
        found.append((ip, int(port_hex, 16), fields[9]))
    return found


def listening_on(ip: str) -> list[int]:
    return sorted(port for address, port, _ in _listening() if address == ip)


def listening_in(pid: int, ip: str) -> list[int]:
    """The ports process ``pid`` listens on at ``ip``."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return sorted(port for address, port, inode in _listening() if address == ip and inode in inodes)


class RillRun:
    """``rill run job.py`` in a process of its own, its output in files."""

    def __init__(self, directory: Path, *sets: str) -> None:
        self.directory = directory
        (directory / "job.py").write_text(JOB)
        self.out, self.err = directory / "out.txt", directory / "err.txt"
        args = [arg for key in sets for arg in ("--set", key)]
        with self.out.open("w") as out, self.err.open("w") as err:
            self.process = subprocess.Popen([*rill_command(), "run", "--quiet", *args, "job.py"], cwd=directory,
                                            stdout=out, stderr=err)

    def alive(self) -> bool:
        return self.process.poll() is None

    def finish(self, timeout: float = 600) -> tuple[int, list[str], str]:
        code = self.process.wait(timeout)
        return code, self.out.read_text().splitlines(), self.err.read_text()

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
            self.process.wait()


def wait_until(condition, run: RillRun, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert run.alive(), f"the run ended before {what}: {run.err.read_text()[-2000:]}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def attack(marker: Path, targets: list[tuple[str, str]], *options: str) -> list[dict]:
    """Run the attacker process against ``targets`` ((role, host:port)); its results."""
    args = [arg for role, target in targets for arg in ("--target", f"{role}={target}")]
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "attacker.py"), "--marker", str(marker), *args,
                           *options], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def rejections() -> dict[str, tuple[str, str, str]]:
    """peer -> (role, address, reason) of the last run's ``connection_rejected`` events."""
    done = subprocess.run([*rill_command(), "sql", "--format", "json",
                           "SELECT role, address, peer, reason FROM rill.ev_connection_rejected"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return {row["peer"]: (row["role"], row["address"], row["reason"]) for row in json.loads(done.stdout)}


def printed_counts(lines: list[str]) -> list[str]:
    """The job's lines without their subtask prefixes (each key printed by one subtask)."""
    by_key: dict[str, set[str]] = {}
    for line in lines:
        prefix, _, count = line.partition("> ")
        by_key.setdefault(count.split(",")[0], set()).add(prefix)
    assert all(len(prefixes) == 1 for prefixes in by_key.values()), by_key
    return sorted(line.partition("> ")[2] for line in lines)


def attacked_run(tmp_path: Path, workers: str, *sets: str, tls: tuple[str, ...] = (), timeout: float = 300):
    """Start a run whose TaskExecutors reach the hub through a relay (recording what they send)
    and serve their partitions on loopback addresses of the test's own (the hub listens on
    ``NET.1``, the relay at ``NET.2`` — jobmanager.rpc.address —, the partitions on ``NET.3``);
    wait until both TaskExecutors are there. Returns the run, the relay, the hub's and the
    partitions' addresses."""
    net = loopback_network()
    port = free_port()
    relay = Relay(f"{net}1:{port}", listen=(f"{net}2", port))
    run = RillRun(tmp_path, f"plugins.workers={workers}", f"jobmanager.rpc.address={net}2",
                  f"jobmanager.bind-host={net}1", f"jobmanager.rpc.port={port}", f"taskmanager.host={net}3",
                  "rill.security.handshake-timeout=3 s", *tls, *sets)
    try:
        wait_until(lambda: len(relay.sent) == 2 and all(len(sent) > 200 for sent in relay.sent)
                   and len(listening_on(f"{net}3")) == 2, run, "two TaskExecutors", timeout)
    except BaseException:
        run.kill()
        raise
    partitions = [f"{net}3:{p}" for p in listening_on(f"{net}3")]
    return run, relay, f"{net}1:{port}", partitions


def check_rejected(results: list[dict]) -> None:
    """Every attack dropped and recorded as rejected, for its reason, at the port it attacked."""
    recorded = rejections()
    for result in results:
        assert result["dropped"], result
        assert recorded[result["peer"]] == (result["role"], result["target"], REJECTED[result["attack"]]), result


def check_unaffected(run: RillRun, marker: Path, attacks: int) -> str:
    code, lines, err = run.finish()
    assert code == 0, err[-3000:]
    assert printed_counts(lines) == EXPECTED
    assert not marker.exists()
    assert "Traceback" not in err
    assert err.count("rill: warning: rejected a connection from ") >= attacks
    return err


def test_attacks_on_the_hub_and_the_partition_ports_of_a_processes_run_are_rejected_and_change_nothing(tmp_path):
    marker = tmp_path / "marker"
    run, relay, hub, partitions = attacked_run(tmp_path, "processes")
    try:
        recorded = bytes(relay.sent[0])
        assert b"taskexecutor-" in recorded  # a legitimate connection: its hello, after the handshake
        (tmp_path / "replay").write_bytes(recorded)
        results = attack(marker, [("rpc", hub)] + [("partition", p) for p in partitions],
                         "--replay", str(tmp_path / "replay"))
    except BaseException:
        run.kill()
        raise
    err = check_unaffected(run, marker, 18)
    assert len(results) == 18 and all(r["greeting"].startswith(MAGIC) for r in results if r["attack"] == "huge header")
    check_rejected(results)
    assert "rpc" in err and "partition" in err


@pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
                    reason="Spark needs Java (none on PATH or in JAVA_HOME)")
def test_attacks_on_every_port_of_a_spark_workers_run_are_rejected_and_change_nothing(tmp_path):
    marker = tmp_path / "marker"
    run, relay, hub, partitions = attacked_run(tmp_path, "spark", "spark.master=local[2]", timeout=600)
    try:
        (tmp_path / "replay").write_bytes(bytes(relay.sent[0]))
        host = hub.rsplit(":", 1)[0]
        channel = [f"{host}:{p}" for p in listening_in(run.process.pid, host) if f"{host}:{p}" != hub]
        assert len(channel) == 1, channel  # the driver listens for its tasks where it listens for the workers
        results = attack(marker, [("rpc", hub), ("task-channel", channel[0])] + [("partition", p) for p in partitions],
                         "--replay", str(tmp_path / "replay"))
    except BaseException:
        run.kill()
        raise
    check_unaffected(run, marker, 24)
    assert len(results) == 24
    check_rejected(results)


@needs_openssl
def test_with_tls_between_the_processes_peers_without_the_certificate_or_the_secret_are_rejected(tmp_path):
    internal = self_signed(tmp_path / "certs", "rill-internal")
    intruder = self_signed(tmp_path / "intruder", "rill-internal")
    marker = tmp_path / "marker"
    tls = ("security.ssl.internal.enabled=true", f"security.ssl.internal.keystore={internal.keystore}",
           f"security.ssl.internal.truststore={internal.certificate}")
    run, relay, hub, partitions = attacked_run(tmp_path, "processes", tls=tls)
    try:
        assert all(b"taskexecutor-" not in sent for sent in relay.sent)  # what crosses is encrypted
        targets = [("rpc", hub)] + [("partition", p) for p in partitions]
        plain = attack(marker, targets, "--tls-keystore", str(intruder.keystore),
                       "--tls-truststore", str(internal.certificate))
        stolen = attack(marker, targets, "--only", "tls pickle", "--tls-keystore", str(internal.keystore),
                        "--tls-truststore", str(internal.certificate))
    except BaseException:
        run.kill()
        raise
    check_unaffected(run, marker, 21)
    assert len(plain) == 18 and len(stolen) == 3
    recorded = rejections()
    for result in plain:
        assert result["dropped"], result
        role, address, reason = recorded[result["peer"]]
        assert role == result["role"] and address == result["target"]
        if result["attack"] == "garbage":
            assert reason.startswith("TLS handshake failed: "), result  # how OpenSSL reads random bytes varies
        else:
            assert reason == TLS_REJECTED[result["attack"]], result
    for result in stolen:  # the right certificate without the secret: dropped at the handshake inside TLS
        assert result["dropped"] and recorded[result["peer"]][2] == "it did not prove it knows the run's secret"


@needs_openssl
@pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
                    reason="Spark needs Java (none on PATH or in JAVA_HOME)")
def test_spark_workers_speak_tls_to_the_hub_the_task_channel_and_each_other(tmp_path):
    internal = self_signed(tmp_path / "certs", "rill-internal")
    marker = tmp_path / "marker"
    (tmp_path / "rill.toml").write_text(  # relative paths: the driver's directory, not the Spark task's
        "[security.ssl.internal]\nenabled = true\n"
        f"keystore = \"certs/{internal.keystore.name}\"\ntruststore = \"certs/{internal.certificate.name}\"\n")
    run, relay, hub, partitions = attacked_run(tmp_path, "spark", "spark.master=local[2]", timeout=600)
    try:
        assert all(b"taskexecutor-" not in sent for sent in relay.sent)
        host = hub.rsplit(":", 1)[0]
        channel = [f"{host}:{p}" for p in listening_in(run.process.pid, host) if f"{host}:{p}" != hub]
        results = attack(marker, [("rpc", hub), ("task-channel", channel[0])] + [("partition", p) for p in partitions],
                         "--only", "pickle")
    except BaseException:
        run.kill()
        raise
    check_unaffected(run, marker, 4)
    recorded = rejections()
    assert len(results) == 4
    for result in results:
        assert result["dropped"] and recorded[result["peer"]] == (
            result["role"], result["target"], "TLS handshake failed: WRONG_VERSION_NUMBER"), result
