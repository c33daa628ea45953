#!/usr/bin/env python3
"""ledger.py LOCK LEDGER N: N times, take LOCK through the pod-local lock
agent, append one write to the fenced LEDGER under the lease's fence, and
give the lock back.

Python 3's standard library only: Connect's HTTP/JSON is plain HTTP/1.1
POSTs of JSON, which http.client sends over the agent's Unix socket once
its connect() opens an AF_UNIX socket. The socket is in
REDLEASE_AGENT_SOCKET (lockctl sidecar sets it; default
/run/redlease/agent.sock). See docs/agent.md.

    REDLEASE_AGENT_SOCKET=/tmp/agent.sock python3 ledger.py nightly /tmp/ledger 3

The ledger is a tiny fenced store: one line "FENCE COUNT" per accepted
write, the last line its state. It accepts a write only with a fence above
the last one it accepted, so a writer whose lease ended (paused, cut off)
is refused instead of overwriting its successor's work. Each accepted write
prints "fence N".
"""

import http.client
import json
import os
import socket
import sys
import threading
import time

SOCKET = os.environ.get("REDLEASE_AGENT_SOCKET", "/run/redlease/agent.sock")
SERVICE = "/redlease.lock.v1.LockService/"
# A lease dies without a KeepAlive for this long (the agent stops renewing
# it), so a process that hangs cannot hold the lock for ever. The lease
# thread sends one every third of it.
KEEP_ALIVE_SECONDS = float(os.environ.get("KEEP_ALIVE_SECONDS", "10"))
# How long AcquireLease waits in the lock's line before giving up (ABORTED).
WAIT_SECONDS = 50
# The work between taking the lock and writing (WORK_SECONDS, default 0):
# a writer frozen here loses its lease, and its late write is refused.
WORK_SECONDS = float(os.environ.get("WORK_SECONDS", "0"))


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client's HTTP/1.1, over a Unix socket instead of TCP."""

    def __init__(self, socket_path, timeout):
        super().__init__("agent", timeout=timeout)
        self.socket_path = socket_path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.socket_path)
        self.sock = sock


class AgentError(Exception):
    """A Connect error: code is the gRPC code in lower case ("aborted",
    "failed_precondition", ...; the list is in lock.proto)."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code


def call(method, request, timeout=30):
    """Calls one unary method and returns its JSON reply. One connection a
    call keeps it safe to use from the keep-alive thread too. An agent that
    cannot be reached is "unavailable", as a gRPC client would say."""
    conn = UnixHTTPConnection(SOCKET, timeout)
    try:
        conn.request("POST", SERVICE + method, body=json.dumps(request),
                     headers={"Content-Type": "application/json", "Connect-Protocol-Version": "1"})
        resp = conn.getresponse()
        raw = resp.read()
    except OSError as e:
        raise AgentError("unavailable", f"{method} on {SOCKET}: {e}") from e
    finally:
        conn.close()
    try:
        body = json.loads(raw or b"{}")
    except ValueError:  # not the agent's reply: a proxy's, or a wrong path's
        raise AgentError("unknown", f"{method}: HTTP {resp.status}: {raw[:200]!r}") from None
    if resp.status != 200:
        raise AgentError(body.get("code", "unknown"), body.get("message", ""))
    return body


class Lease:
    """A lease handle from AcquireLease, kept alive by a thread until
    released. lost is set when a KeepAlive was refused: the lease ended and
    nothing may be written under it any more."""

    def __init__(self, reply):
        self.id = reply["leaseId"]
        # uint64: a string of digits in proto3 JSON.
        self.fence = int(reply["grant"]["fence"])
        self.lost = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep_alive, daemon=True)
        self._thread.start()

    def _keep_alive(self):
        while not self._stop.wait(KEEP_ALIVE_SECONDS / 3):
            try:
                call("KeepAlive", {"leaseId": self.id})
            except AgentError as e:
                self.lost = e
                return

    def release(self):
        self._stop.set()
        self._thread.join()
        if self.lost is None:
            call("Release", {"leaseId": self.id})


def acquire(lock):
    """Waits in the lock's line (FIFO with every other client of it)."""
    reply = call("AcquireLease", {
        "lock": {"name": lock},
        "keepAlivePeriod": f"{KEEP_ALIVE_SECONDS:g}s",
        "wait": f"{WAIT_SECONDS}s",
    }, timeout=WAIT_SECONDS + 10)
    return Lease(reply)


def read_ledger(path):
    """The ledger's state, (last fence, count); (0, 0) before any write."""
    try:
        with open(path, encoding="ascii") as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        return 0, 0
    last = [line for line in lines if line][-1:] or ["0 0"]
    fence, count = last[0].split()
    return int(fence), int(count)


def write_ledger(path, lease):
    """The store's check: the write carries the fence, and only a fence
    above the last accepted one is taken."""
    last_fence, count = read_ledger(path)
    if lease.lost is not None:
        sys.exit(f"not writing: the lease ended ({lease.lost})")
    if lease.fence <= last_fence:
        sys.exit(f"refused: fence {lease.fence} is not above the ledger's {last_fence}")
    with open(path, "a", encoding="ascii") as f:
        f.write(f"{lease.fence} {count + 1}\n")
    print(f"fence {lease.fence}", flush=True)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: ledger.py LOCK LEDGER N")
    lock, ledger, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for _ in range(n):
        lease = acquire(lock)
        try:
            print(f"acquired fence {lease.fence}", flush=True)
            time.sleep(WORK_SECONDS)
            write_ledger(ledger, lease)
        finally:
            lease.release()


if __name__ == "__main__":
    try:
        main()
    except AgentError as e:
        sys.exit(f"ledger.py: {e}")
