#!/usr/bin/env node
/**
 * The echo worker (`npx switchboard-echo`): completes each todo of a queue with its payload.
 *
 * It drains SWITCHBOARD_QUEUE on the node in SWITCHBOARD_ADDRS with the token in
 * SWITCHBOARD_TOKEN, and on SIGTERM or SIGINT stops claiming, lets running handlers finish
 * within the shutdown grace, releases the rest and exits 0. The same knobs as the Go and
 * Python echo workers: SWITCHBOARD_LEASE_SECONDS (30), SWITCHBOARD_CONCURRENCY (10) and
 * SWITCHBOARD_ECHO_DELAY_MS (0: how long each handler waits before it completes, so a test can
 * hold todos). TLS with the system's roots when SWITCHBOARD_TLS=1; plaintext only to loopback
 * addresses, or anywhere with SWITCHBOARD_INSECURE=1. This SDK connects to one node so far: a
 * list of several addresses is refused rather than half used.
 *
 * @module
 */
import { setTimeout as sleep } from "node:timers/promises";
import { isIP } from "node:net";
import { createQueueClient, Worker } from "../index.js";

function intEnv(name: string, fallback: number): number {
  const raw = process.env[name] ?? "";
  if (raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n)) throw new Error(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  return n;
}

function loopback(address: string): boolean {
  const host = address.slice(0, address.lastIndexOf(":")).replace(/^\[|\]$/g, "");
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

async function main(): Promise<number> {
  const queue = process.env["SWITCHBOARD_QUEUE"] ?? "";
  const addresses = (process.env["SWITCHBOARD_ADDRS"] ?? "").split(",").map((a) => a.trim()).filter((a) => a !== "");
  if (queue === "" || addresses.length === 0) {
    console.error("echo: set SWITCHBOARD_QUEUE and SWITCHBOARD_ADDRS (and SWITCHBOARD_TOKEN)");
    return 2;
  }
  if (addresses.length > 1) {
    console.error("echo: the TypeScript SDK connects to one node so far; give SWITCHBOARD_ADDRS one address");
    return 2;
  }
  if (process.env["SWITCHBOARD_TLS_CA_FILE"]) {
    console.error("echo: SWITCHBOARD_TLS_CA_FILE is not supported by the TypeScript SDK yet (SWITCHBOARD_TLS=1 uses the system's roots)");
    return 2;
  }
  const address = addresses[0] as string;
  const tls = process.env["SWITCHBOARD_TLS"] === "1" || process.env["SWITCHBOARD_TLS"] === "true";
  const insecureOk = ["1", "true"].includes(process.env["SWITCHBOARD_INSECURE"] ?? "") || loopback(address);
  if (!tls && !insecureOk) {
    console.error("echo: a token needs tls (SWITCHBOARD_TLS=1), or SWITCHBOARD_INSECURE=1 to send it in plaintext");
    return 2;
  }
  const delayMs = intEnv("SWITCHBOARD_ECHO_DELAY_MS", 0);
  const worker = new Worker(
    createQueueClient({ address, tls }),
    queue,
    async (job) => {
      if (delayMs > 0) await sleep(delayMs, undefined, { signal: job.signal });
      return job.payload;
    },
    { concurrency: intEnv("SWITCHBOARD_CONCURRENCY", 10), leaseSeconds: intEnv("SWITCHBOARD_LEASE_SECONDS", 30) },
  );
  console.error(`echo: draining ${JSON.stringify(queue)} on ${address}`);
  await worker.runUntilSignal();
  const s = worker.stats();
  console.error(`echo: stopped: ${s.claimed} claimed, ${s.completed} completed, ${s.released} released`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`echo: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(2);
  },
);
