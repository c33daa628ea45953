// ledger.js LOCK LEDGER N: N times, hold LOCK through the pod-local lock
// agent's streamed Acquire (gRPC over HTTP/2 on its Unix socket, with
// @connectrpc/connect-node), append one write to the fenced LEDGER under the
// lease's fence, and close the stream, which gives the lock back.
//
//   npm ci && REDLEASE_AGENT_SOCKET=/tmp/agent.sock node ledger.js nightly /tmp/ledger 3
//
// The socket is in REDLEASE_AGENT_SOCKET (lockctl sidecar sets it; default
// /run/redlease/agent.sock). HOLD_MS keeps each lease that long after its
// write: a long critical section (the test kills the process in one).
//
// The ledger is a tiny fenced store: one line "FENCE COUNT" per accepted
// write, the last line its state. It accepts a write only with a fence
// above the last one it accepted, so a writer whose lease ended (paused, cut
// off) is refused instead of overwriting its successor's work. Each
// accepted write prints "fence N". See docs/agent.md.

import { appendFileSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

import { LockService } from "./gen/redlease/lock/v1/lock_pb.js";

const socket = process.env.REDLEASE_AGENT_SOCKET ?? "/run/redlease/agent.sock";
const holdMs = Number(process.env.HOLD_MS ?? 0);

// HTTP/2 to the socket: the authority in baseUrl is only a name, every
// connection goes to the agent's socket.
const agent = createClient(LockService, createGrpcTransport({
  baseUrl: "http://agent",
  nodeOptions: { createConnection: () => connect(socket) },
}));

// withLock waits for the lock, runs work(lease) while the stream is open and
// closes the stream after it, however work ends: the agent releases the
// lock at once. lease.fence is the grant's fence (a bigint: a uint64);
// lease.lost is set when the agent reports the lease ended before that.
async function withLock(lock, work) {
  const closer = new AbortController();
  const events = agent.acquire({ lock: { name: lock } }, { signal: closer.signal })[Symbol.asyncIterator]();
  try {
    const first = await events.next();
    if (first.done || first.value.event.case !== "granted") {
      throw new Error("the agent ended the stream without a grant");
    }
    const lease = { fence: first.value.event.value.fence, lost: undefined };
    void watch(events, lease); // runs until the stream ends; never throws
    await work(lease);
  } finally {
    closer.abort();
  }
}

// watch reads the stream's later events: renewals, and a loss (the lease
// ended: max hold reached, Redis lost it, the agent stops), after which the
// stream ends with an error. Closing it ourselves ends it as Canceled.
async function watch(events, lease) {
  try {
    for (let next = await events.next(); !next.done; next = await events.next()) {
      const { event } = next.value;
      if (event.case === "lost") {
        lease.lost = `${event.value.reason}: ${event.value.message}`;
      }
    }
  } catch (err) {
    if (ConnectError.from(err).code !== Code.Canceled) {
      lease.lost ??= ConnectError.from(err).message;
    }
  }
}

// readLedger is the ledger's state; fence 0, count 0 before any write.
function readLedger(path) {
  let text = "";
  try {
    text = readFileSync(path, "ascii");
  } catch (err) {
    if (err.code !== "ENOENT") throw err;
  }
  const [fence, count] = (text.trim().split("\n").at(-1) || "0 0").split(" ");
  return { fence: BigInt(fence), count: Number(count) };
}

// write is the store's check: the write carries the fence, and only a fence
// above the last accepted one is taken.
function write(path, lease) {
  const last = readLedger(path);
  if (lease.lost) throw new Error(`not writing: the lease ended (${lease.lost})`);
  if (lease.fence <= last.fence) {
    throw new Error(`refused: fence ${lease.fence} is not above the ledger's ${last.fence}`);
  }
  appendFileSync(path, `${lease.fence} ${last.count + 1}\n`);
  console.log(`fence ${lease.fence}`);
}

async function main() {
  const [lock, ledger, n] = process.argv.slice(2);
  if (!lock || !ledger || !(Number(n) >= 0)) throw new Error("usage: node ledger.js LOCK LEDGER N");
  for (let i = 0; i < Number(n); i++) {
    await withLock(lock, async (lease) => {
      write(ledger, lease);
      await sleep(holdMs);
    });
  }
}

main().catch((err) => {
  console.error(`ledger.js: ${err.message}`);
  process.exit(1);
});
