// createQueueClient's argument checks; no node needed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createQueueClient } from "../src/index.js";

test("createQueueClient refuses an address with a scheme, and a missing token", () => {
  assert.throws(() => createQueueClient({ address: "http://127.0.0.1:9090", token: "t" }), TypeError);
  assert.throws(() => createQueueClient({ address: "127.0.0.1", token: "t" }), TypeError);
  const saved = process.env["SWITCHBOARD_TOKEN"];
  delete process.env["SWITCHBOARD_TOKEN"];
  try {
    assert.throws(() => createQueueClient({ address: "127.0.0.1:9090" }), /SWITCHBOARD_TOKEN/);
  } finally {
    if (saved !== undefined) process.env["SWITCHBOARD_TOKEN"] = saved;
  }
});

test("createQueueClient takes the token from SWITCHBOARD_TOKEN", () => {
  const saved = process.env["SWITCHBOARD_TOKEN"];
  process.env["SWITCHBOARD_TOKEN"] = "sbt_from_env";
  try {
    const client = createQueueClient({ address: "[::1]:9090", tls: true });
    assert.equal(typeof client.claim, "function");
  } finally {
    if (saved === undefined) delete process.env["SWITCHBOARD_TOKEN"];
    else process.env["SWITCHBOARD_TOKEN"] = saved;
  }
});
