"""Proving that a TCP peer belongs to the run (kernel/remoting/security.py, kernel/remoting/tcp.py): real sockets on
127.0.0.1. Both ends prove the run's secret before a frame is read; a peer without it, a replayed
handshake, a pickle, garbage, a huge length header or silence are dropped before anything is
decoded, each rejection reported with the peer's address; an authenticated peer's oversized frame
drops it too. Mutual TLS with certificates made by ``openssl``: frames cross encrypted, a peer
without a trusted certificate (or the pinned one, or the secret) is dropped; the keys' errors."""

from __future__ import annotations

import os
import pickle
import socket
import threading
import time

import msgspec
import pytest

from kernel.errors import UsageError
from kernel.options import SecurityOptions
from kernel.remoting.security import MAGIC, Rejected, TransportSecurity, new_secret, tls_contexts
from kernel.remoting.tcp import Connection, Refused, Server, connect
from tests.certs import encrypted, needs_openssl, self_signed, signed_by

SECRET = new_secret()


class Marker:
    """Unpickled, it would create ``path``: what an attacker sends."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return os.system, (f"touch {self.path}",)


def pickle_frame(marker: str) -> bytes:
    """A frame of the messaging layer carrying a pickle (the issue's attack)."""
    body = msgspec.msgpack.encode(["msg", "a", "b", 0, 0, False, "", msgspec.msgpack.Ext(1, pickle.dumps(Marker(marker)))])
    return len(body).to_bytes(4, "big") + body


def wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


class Ends:
    """A server guarded by ``security`` recording what reaches it and what it rejects."""

    def __init__(self, secret: bytes = SECRET, **options) -> None:
        self.rejections: list[tuple[str, str, str, str]] = []
        self.security = self.guard(secret, **options)
        self.frames: list[bytes] = []
        self.closed: list[BaseException | None] = []
        self.connections: list[Connection] = []
        self.server = Server("127.0.0.1", 0, self._frames, lambda c, error: self.closed.append(error), "rpc",
                             self.security)
        self.address = self.server.address

    def guard(self, secret: bytes = SECRET, **options) -> TransportSecurity:
        return TransportSecurity(secret, on_rejected=lambda *rejection: self.rejections.append(rejection), **options)

    def _frames(self, connection: Connection, frames: list[bytes]) -> None:
        self.connections.append(connection)
        self.frames.extend(frames)

    def connect(self, secret: bytes = SECRET, on_frames=lambda c, f: None, **options) -> Connection:
        return connect(self.address, on_frames, lambda c, e: None, "rpc", self.guard(secret, **options))

    def raw(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", int(self.address.rsplit(":", 1)[1])), timeout=10)

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def ends():
    ends = Ends()
    yield ends
    ends.close()


def dropped(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (after what it sent)."""
    try:
        while sock.recv(1 << 16):
            pass
    except ConnectionResetError:
        pass
    sock.close()
    return True


def test_both_ends_prove_the_secret_and_frames_cross_both_ways(ends):
    received: list[bytes] = []
    client = ends.connect(on_frames=lambda c, frames: received.extend(frames))
    assert client.send(b"hello") and client.send(b"")
    wait_for(lambda: len(ends.frames) == 2)
    assert ends.frames == [b"hello", b""]
    ends.connections[0].send(b"welcome")
    wait_for(lambda: received == [b"welcome"])
    client.close()
    wait_for(lambda: ends.closed == [None])
    assert ends.rejections == []


def test_a_peer_without_the_secret_is_dropped_before_a_frame_is_read(ends):
    with pytest.raises(Refused, match=f"^{ends.address} is not a process of this run: closed during the handshake"):
        ends.connect(secret=new_secret())
    wait_for(lambda: len(ends.rejections) == 2)
    server, client = sorted(ends.rejections, key=lambda r: r[2] == ends.address)
    assert server[0] == "rpc" and server[1] == ends.address and server[3] == "it did not prove it knows the run's secret"
    assert client[:3] == ("rpc", server[2], ends.address) and client[3].startswith("closed during the handshake")
    assert ends.frames == [] and ends.closed == []  # the server's owner never heard of it


def test_a_client_refuses_a_server_that_does_not_prove_the_secret_or_is_no_rill_process():
    def impostor(reply) -> str:
        listener = socket.create_server(("127.0.0.1", 0))

        def serve() -> None:
            sock, _ = listener.accept()
            reply(sock)
            time.sleep(0.2)
            sock.close()

        threading.Thread(target=serve, daemon=True).start()
        return f"127.0.0.1:{listener.getsockname()[1]}"

    def guessing(sock: socket.socket) -> None:  # speaks rill's handshake, guesses the proof
        sock.sendall(MAGIC + os.urandom(32))
        sock.recv(64)
        sock.sendall(os.urandom(32))

    rejections: list = []
    security = TransportSecurity(SECRET, on_rejected=lambda *r: rejections.append(r))
    with pytest.raises(Refused, match="it did not prove it knows the run's secret$"):
        connect(impostor(guessing), lambda c, f: None, lambda c, e: None, "partition", security)
    with pytest.raises(Refused, match=r"it is not a process of a rill run \(no rill handshake\)$"):
        connect(impostor(lambda sock: sock.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" + bytes(20))),
                lambda c, f: None, lambda c, e: None, "partition", security)
    assert [(r[0], r[3]) for r in rejections] == [("partition", "it did not prove it knows the run's secret"),
                                                  ("partition", "it is not a process of a rill run (no rill handshake)")]


class Relay:
    """A TCP relay at ``listen`` in front of ``target`` recording what each connection's client
    sent (and what its server answered)."""

    def __init__(self, target: str, listen: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.listener = socket.create_server(listen)
        self.address = f"{listen[0]}:{self.listener.getsockname()[1]}"
        self.sent: list[bytearray] = []
        self.answered: list[bytearray] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            self.sent.append(bytearray())
            self.answered.append(bytearray())
            for a, b, record in ((client, server, self.sent[-1]), (server, client, self.answered[-1])):
                threading.Thread(target=self._pump, args=(a, b, record), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, record: bytearray) -> None:
        while True:
            try:
                data = source.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                try:
                    sink.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            record += data
            sink.sendall(data)


def test_a_replayed_handshake_proves_nothing_on_another_connection(ends):
    relay = Relay(ends.address)
    legit = connect(relay.address, lambda c, f: None, lambda c, e: None, "rpc", ends.guard())
    legit.send(b"a legitimate frame")
    wait_for(lambda: ends.frames == [b"a legitimate frame"])
    recorded = bytes(relay.sent[0])
    assert len(recorded) == 64 + 4 + 18  # the client's handshake and its frame
    attacker = ends.raw()
    attacker.sendall(recorded)  # the same bytes on a new connection: the server's nonce differs
    assert attacker.recv(40)[:8] == MAGIC and dropped(attacker)
    wait_for(lambda: len(ends.rejections) == 1)
    assert ends.rejections[0][3] == "it did not prove it knows the run's secret"
    assert ends.frames == [b"a legitimate frame"]
    # nor can a recorded server answer a new client: its nonce differs too
    recorded_server = bytes(relay.answered[0])
    listener = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=lambda: listener.accept()[0].sendall(recorded_server), daemon=True).start()
    with pytest.raises(Refused, match="it did not prove it knows the run's secret$"):
        connect(f"127.0.0.1:{listener.getsockname()[1]}", lambda c, f: None, lambda c, e: None, "rpc", ends.guard())
    legit.close()


def test_a_pickle_garbage_a_huge_header_or_silence_are_never_decoded(tmp_path):
    ends = Ends(handshake_timeout=0.5)
    marker = tmp_path / "marker"
    attacks = {
        "pickle": pickle_frame(str(marker)),
        "garbage": os.urandom(200),
        "huge header": b"\xff\xff\xff\xff" + b"x" * 10,
        "silence": b"",
    }
    peers = {}
    for name, data in attacks.items():
        sock = ends.raw()
        peers[f"127.0.0.1:{sock.getsockname()[1]}"] = name
        sock.sendall(data)
        if name == "huge header":
            sock.shutdown(socket.SHUT_WR)
        assert dropped(sock)
    wait_for(lambda: len(ends.rejections) == 4)
    reasons = {peers[peer]: (role, address, reason) for role, address, peer, reason in ends.rejections}
    assert reasons == {
        "pickle": ("rpc", ends.address, "it did not prove it knows the run's secret"),
        "garbage": ("rpc", ends.address, "it did not prove it knows the run's secret"),
        "huge header": ("rpc", ends.address, "closed during the handshake"),
        "silence": ("rpc", ends.address, "no handshake within 0.5 s"),
    }
    assert ends.frames == [] and not marker.exists()
    # the server goes on
    ends.connect().send(b"still here")
    wait_for(lambda: ends.frames == [b"still here"])
    ends.close()


def test_a_peer_trickling_its_handshake_gets_no_more_time_than_a_silent_one():
    ends = Ends(handshake_timeout=0.5)
    sock = ends.raw()
    started = time.monotonic()
    try:
        for _ in range(40):  # a byte every 0.1 s: each read would be in time, the whole is not
            sock.sendall(b"x")
            time.sleep(0.1)
    except OSError:
        pass
    assert dropped(sock) and time.monotonic() - started < 3
    wait_for(lambda: ends.rejections)
    assert [r[3] for r in ends.rejections] == ["no handshake within 0.5 s"]
    ends.close()


def test_a_flood_of_connections_costs_a_bounded_number_of_handshakes(monkeypatch):
    monkeypatch.setattr(Server, "MAX_HANDSHAKES", 4)
    ends = Ends(handshake_timeout=1.0)
    silent = [ends.raw() for _ in range(4)]
    time.sleep(0.2)  # accepted, each proving itself (silently) on a thread of its own
    flood = ends.raw()
    assert dropped(flood)  # at once, not after the handshake timeout
    assert [r[3] for r in ends.rejections] == ["more than 4 peers proving themselves at once"]
    assert all(dropped(sock) for sock in silent)
    ends.connect().send(b"after the flood")
    wait_for(lambda: ends.frames == [b"after the flood"])
    assert sorted(r[3] for r in ends.rejections) == ["more than 4 peers proving themselves at once"] + [
        "no handshake within 1 s"] * 4
    ends.close()


def test_an_authenticated_peer_sending_a_frame_over_the_bound_is_dropped():
    ends = Ends(max_frame_size=1024)
    client = ends.connect()
    client.send(b"x" * 1024)
    client.send(b"y" * 1025)
    client.send(b"z")
    wait_for(lambda: ends.closed)
    assert ends.frames == [b"x" * 1024]
    assert isinstance(ends.closed[0], Rejected)
    assert [(r[0], r[3]) for r in ends.rejections] == [
        ("rpc", "a frame of 1025 bytes is larger than rill.security.max-frame-size (1024 bytes)")]
    assert ends.rejections[0][2] == client.address
    wait_for(lambda: client.closed)
    ends.close()


# -- TLS ---------------------------------------------------------------------------------------------


def tls(identity, truststore, fingerprint=None, **passwords) -> dict:
    options = SecurityOptions(ssl_enabled=True, keystore=str(identity.keystore), truststore=str(truststore),
                              cert_fingerprint=fingerprint, **passwords)
    server, client = tls_contexts(options)
    fingerprints = TransportSecurity.of(options, SECRET).fingerprints
    return {"server_tls": server, "client_tls": client, "fingerprints": fingerprints}


@needs_openssl
def test_mutual_tls_carries_the_frames_encrypted_both_ways(tmp_path):
    run = self_signed(tmp_path / "run", "rill-internal")
    ends = Ends(**tls(run, run.certificate))
    relay = Relay(ends.address)
    received: list[bytes] = []
    client = connect(relay.address, lambda c, frames: received.extend(frames), lambda c, e: None, "rpc",
                     ends.guard(**tls(run, run.certificate)))
    big = os.urandom(3 << 20)  # more than a socket takes at once: the writer thread sends the rest
    for frame in (b"plain words", big, b"after"):
        client.send(frame)
    wait_for(lambda: len(ends.frames) == 3)
    assert ends.frames == [b"plain words", big, b"after"]
    for i in range(100):
        ends.connections[0].send(b"answer %d" % i)
    wait_for(lambda: len(received) == 100)
    assert received == [b"answer %d" % i for i in range(100)]
    assert b"plain words" not in relay.sent[0] and b"answer 7" not in relay.answered[0]
    assert ends.rejections == []
    client.close()
    wait_for(lambda: ends.closed == [None])
    ends.close()


@needs_openssl
def test_a_peer_without_a_trusted_certificate_the_pinned_one_or_the_secret_is_dropped(tmp_path):
    run = self_signed(tmp_path / "run", "rill-internal")
    intruder = self_signed(tmp_path / "intruder", "rill-internal")  # the same name, another key
    ends = Ends(**tls(run, run.certificate))

    with pytest.raises(Refused, match="TLS handshake failed: TLSV1_ALERT_UNKNOWN_CA$"):
        ends.connect(**tls(intruder, run.certificate))  # it trusts the run, the run does not trust it
    with pytest.raises(Refused, match=r"TLS handshake failed: certificate verify failed \(self-signed certificate\)$"):
        ends.connect(**tls(run, intruder.certificate))  # the server is not the one it trusts
    plain = ends.raw()
    plain.sendall(pickle_frame(str(tmp_path / "marker")))  # no TLS at all
    assert dropped(plain)
    with pytest.raises(Refused, match="closed during the handshake$"):
        ends.connect(secret=new_secret(), **tls(run, run.certificate))  # the certificate alone proves nothing
    wait_for(lambda: len([r for r in ends.rejections if r[1] == ends.address]) == 4)
    assert sorted(r[3] for r in ends.rejections if r[1] == ends.address) == [
        "TLS handshake failed: TLSV1_ALERT_UNKNOWN_CA",  # the client did not trust the server
        "TLS handshake failed: WRONG_VERSION_NUMBER",  # no TLS
        "TLS handshake failed: certificate verify failed (self-signed certificate)",  # the intruder's
        "it did not prove it knows the run's secret",
    ]
    assert ends.frames == [] and not (tmp_path / "marker").exists()
    ends.close()

    # a firm-wide CA signs every certificate: the fingerprint pins the run's
    ca = self_signed(tmp_path / "ca", "firm-ca")
    ours, theirs = signed_by(ca, tmp_path / "ours", "ours"), signed_by(ca, tmp_path / "theirs", "theirs")
    pinned = Ends(**tls(ours, ca.certificate, fingerprint=ours.fingerprint()))
    pinned.connect(**tls(ours, ca.certificate, fingerprint=ours.fingerprint())).send(b"pinned")
    wait_for(lambda: pinned.frames == [b"pinned"])
    with pytest.raises(Refused):
        pinned.connect(**tls(theirs, ca.certificate))
    wait_for(lambda: any(r[1] == pinned.address for r in pinned.rejections))
    assert [r[3] for r in pinned.rejections if r[1] == pinned.address] == [
        "its certificate's fingerprint is not in security.ssl.internal.cert.fingerprint"]
    sha256 = Ends(**tls(ours, ca.certificate, fingerprint=f"{theirs.fingerprint()}, {ours.fingerprint('sha256')}"))
    sha256.connect(**tls(ours, ca.certificate)).send(b"sha-256")
    wait_for(lambda: sha256.frames == [b"sha-256"])
    pinned.close()
    sha256.close()


@needs_openssl
def test_the_tls_keys_load_pem_files_and_name_the_key_that_cannot_be_loaded(tmp_path):
    run = self_signed(tmp_path / "run", "rill-internal")
    locked = encrypted(run, "changeit")
    tls(locked, run.certificate, key_password="changeit")
    tls(locked, run.certificate, keystore_password="changeit")  # Flink's keystore password when no key password
    with pytest.raises(UsageError, match=f"^security.ssl.internal.keystore '{locked.keystore}': cannot load a PEM "
                                         "certificate and private key from it"):
        tls(locked, run.certificate, key_password="wrong")
    with pytest.raises(UsageError, match="^security.ssl.internal.keystore '/nowhere.pem': cannot load a PEM "
                                         r"certificate and private key from it \(No such file or directory\)$"):
        tls_contexts(SecurityOptions(ssl_enabled=True, keystore="/nowhere.pem", truststore=str(run.certificate)))
    with pytest.raises(UsageError, match=f"^security.ssl.internal.truststore '{run.key}': cannot load PEM "
                                         "certificates from it"):
        tls(run, run.key)


def test_the_security_keys_are_checked_and_passwords_never_shown(cli):
    code, out, err = cli("config", "--set", "security.ssl.internal.enabled=true")
    assert code == 2 and err.strip().splitlines()[-1].endswith(
        "security.ssl.internal.enabled needs security.ssl.internal.keystore and security.ssl.internal.truststore "
        "(PEM files)")
    code, out, err = cli("config", "--json", "--set", "security.ssl.internal.key-password=hunter2",
                         "--set", "rill.security.max-frame-size=1 mb")
    values = {key: entry["value"] for key, entry in __import__("json").loads(out).items()}
    assert code == 0 and "hunter2" not in out
    assert values["security.ssl.internal.key-password"] == "******"
    assert values["security.ssl.internal.keystore-password"] is None
    assert values["rill.security.max-frame-size"] == 1 << 20
    assert values["rill.security.handshake-timeout"] == 10_000


def test_every_run_gets_a_secret_of_its_own_whatever_its_seed():
    assert len({new_secret() for _ in range(100)}) == 100 and len(new_secret()) == 32
    with pytest.raises(ValueError, match="at least 16 bytes"):
        TransportSecurity(b"short")


@needs_openssl
def test_a_run_whose_tls_files_cannot_be_loaded_fails_in_one_line(shell, tmp_path):
    run = self_signed(tmp_path / "run", "rill-internal")
    (tmp_path / "job.py").write_text("from kernel.datastream import StreamExecutionEnvironment\n"
                                     "env = StreamExecutionEnvironment.get_execution_environment()\n"
                                     "env.from_collection([1]).print()\nenv.execute()\n")
    code, out, err = shell("run", "--set", "plugins.workers=processes", "--set", "security.ssl.internal.enabled=true",
                           "--set", "security.ssl.internal.keystore=nowhere.pem",
                           "--set", f"security.ssl.internal.truststore={run.certificate}", "job.py")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"rill: error: security.ssl.internal.keystore 'nowhere.pem': cannot load a PEM certificate and private key "
        f"from it (No such file or directory)"]


def test_a_worker_spec_never_shows_the_run_secret():
    from kernel.contracts.workers import TaskExecutorProcessSpec

    secret = new_secret()
    spec = TaskExecutorProcessSpec(resource_id="taskexecutor-1", slots=1, entry="m:f", rpc_address="127.0.0.1:1",
                                   secret=secret, run_id="r")
    shown = repr(spec)
    assert "secret=<secret>" in shown and "resource_id='taskexecutor-1'" in shown
    assert repr(secret) not in shown and secret.hex() not in shown
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(spec), type=TaskExecutorProcessSpec).secret == secret
