"""An attacker process: connects to a run's ports and tries what the transport must refuse.

    python tests/attacker.py --target rpc=HOST:PORT --target partition=HOST:PORT ... \
        --marker PATH [--replay FILE] [--tls-keystore PEM --tls-truststore PEM] [--only ATTACK]

Each attack is a connection of its own, all at once; it prints one JSON object per attack:
``{"role", "target", "attack", "peer" (its own address), "dropped" (the target closed it),
"seconds", "greeting" (hex of what the target sent first)}``. Attacks:

* ``pickle``: a frame of the messaging layer carrying a pickle that would create ``--marker``;
* ``pickle after a guessed proof``: the same, after answering the challenge with random bytes;
* ``replay``: the bytes a legitimate client sent on another connection (``--replay``);
* ``garbage``: random bytes; ``huge header``: a 4 GiB length header, then silence;
  ``huge header, closed``: the same, then the end of what it sends;
* with ``--tls-keystore``: ``tls pickle`` — a TLS client with that certificate sending the
  pickle frame (after a guessed proof).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import socket
import ssl
import threading
import time

import msgspec


class Marker:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return os.system, (f"touch {self.path}",)


def pickle_frame(marker: str) -> bytes:
    body = msgspec.msgpack.encode(["msg", "a", "b", 0, 0, False, "", msgspec.msgpack.Ext(1, pickle.dumps(Marker(marker)))])
    return len(body).to_bytes(4, "big") + body


def wait_dropped(sock: socket.socket, timeout: float) -> tuple[bool, bytes]:
    """Read until the target closes (True) or ``timeout`` passes (False); what it sent."""
    sock.settimeout(timeout)
    received = b""
    try:
        while True:
            data = sock.recv(1 << 16)
            if not data:
                return True, received
            received += data
    except (ConnectionResetError, ssl.SSLError):  # SSLError: TLS's alert
        return True, received
    except socket.timeout:
        return False, received


def attack(role: str, target: str, name: str, args: argparse.Namespace, results: list) -> None:
    host, port = target.rsplit(":", 1)
    started = time.monotonic()
    sock = socket.create_connection((host, int(port)), timeout=10)
    peer = "%s:%d" % sock.getsockname()[:2]
    state = {"sock": sock, "greeting": b""}
    try:
        send(state, name, args)
        dropped, received = wait_dropped(state["sock"], args.timeout)
    except OSError:  # it was dropped while this attacker was still sending (or TLS was refused)
        dropped, received = True, b""
    state["sock"].close()
    greeting = state["greeting"]
    results.append({"role": role, "target": target, "attack": name, "peer": peer, "dropped": dropped,
                    "seconds": round(time.monotonic() - started, 2), "greeting": (greeting or received)[:8].hex()})


def send(state: dict, name: str, args: argparse.Namespace) -> None:
    """Send what attack ``name`` sends on ``state["sock"]`` (which TLS replaces), keeping what
    the target sent first in ``state["greeting"]``."""
    sock = state["sock"]
    frame = pickle_frame(args.marker)
    if name == "pickle":
        sock.sendall(frame)
    elif name == "pickle after a guessed proof":
        state["greeting"] = sock.recv(40)
        sock.sendall(os.urandom(64) + frame)
    elif name == "replay":
        with open(args.replay, "rb") as recorded:
            sock.sendall(recorded.read())
    elif name == "garbage":
        sock.sendall(os.urandom(200))
    elif name == "huge header":
        sock.sendall(b"\xff\xff\xff\xff")
    elif name == "huge header, closed":
        sock.sendall(b"\xff\xff\xff\xff")
        sock.shutdown(socket.SHUT_WR)
    elif name == "tls pickle":
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.load_cert_chain(args.tls_keystore)
        context.load_verify_locations(args.tls_truststore)
        state["sock"] = sock = context.wrap_socket(sock)
        state["greeting"] = sock.recv(40)
        sock.sendall(os.urandom(64) + frame)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", action="append", default=[], help="ROLE=HOST:PORT")
    parser.add_argument("--replay")
    parser.add_argument("--marker", required=True)
    parser.add_argument("--tls-keystore")
    parser.add_argument("--tls-truststore")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--only", action="append", help="run this attack only (repeatable)")
    args = parser.parse_args()
    names = ["pickle", "pickle after a guessed proof", "garbage", "huge header", "huge header, closed"]
    if args.replay:
        names.append("replay")
    if args.tls_keystore:
        names.append("tls pickle")
    if args.only:
        names = [name for name in names if name in args.only]
    results: list[dict] = []
    threads = [threading.Thread(target=attack, args=(*target.split("=", 1), name, args, results))
               for target in args.target for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for result in results:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
