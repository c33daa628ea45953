// An app written against Dapr's distributed-lock API (the official
// JavaScript SDK, @dapr/dapr), pointed at `lockctl agent --dapr-store
// lockstore --listen 127.0.0.1:PORT` instead of a Dapr sidecar: nothing
// in it knows about redlease.
//
//   DAPR_HTTP_PORT=3500 node app.js RESOURCE
//
// It prints one JSON line per call, for test/agentclients to check.
"use strict";

const { DaprClient, CommunicationProtocolEnum } = require("@dapr/dapr");

async function main() {
  const resource = process.argv[2] || "report";
  const client = new DaprClient({
    daprHost: "127.0.0.1",
    daprPort: process.env.DAPR_HTTP_PORT || "3500",
    communicationProtocol: CommunicationProtocolEnum.HTTP,
  });
  const steps = [
    ["lock a", () => client.lock.lock("lockstore", resource, "a", 60)],
    ["lock b", () => client.lock.lock("lockstore", resource, "b", 60)],
    ["unlock b", () => client.lock.unlock("lockstore", resource, "b")],
    ["unlock a", () => client.lock.unlock("lockstore", resource, "a")],
    ["unlock a again", () => client.lock.unlock("lockstore", resource, "a")],
    ["lock b after", () => client.lock.lock("lockstore", resource, "b", 60)],
    ["unlock b after", () => client.lock.unlock("lockstore", resource, "b")],
  ];
  for (const [name, call] of steps) {
    console.log(JSON.stringify({ step: name, result: await call() }));
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
