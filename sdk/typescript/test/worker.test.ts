// The Worker against a real node (see harness.ts): completions, failures, lease renewal and
// loss, progress, and the release of held todos on shutdown. A port of the Python SDK's
// tests/test_worker.py, one test for one.
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  Outcome,
  Permanent,
  RetryAfter,
  Worker,
  createQueueClient,
  type Handler,
  type JsonObject,
  type WorkerOptions,
} from "../src/index.js";
import { rest, useNode, type TestNode } from "./harness.js";

const node = useNode();

/** A todo as GET /api/todos/{id} shows it (proto field names). */
interface RestTodo {
  id: string;
  state: string;
  result?: JsonObject;
  progress?: JsonObject;
  last_error?: string;
  run_at?: string;
}

type Acks = Map<bigint, Outcome>;

/** Enqueues one todo over REST as the agent; returns its id. */
async function enqueue(n: TestNode, queue: string, payload: JsonObject = {}): Promise<bigint> {
  const { todo } = await rest(n.api, n.agentToken)<{ todo: RestTodo }>("POST", `/api/queues/${queue}/todos`, {
    kind: "test",
    payload,
  });
  return BigInt(todo.id);
}

async function getTodo(n: TestNode, id: bigint): Promise<RestTodo> {
  return (await rest(n.api, n.agentToken)<{ todo: RestTodo }>("GET", `/api/todos/${id}`)).todo;
}

/**
 * A worker on the test node whose onAck records every outcome in `acks`, and any todo told
 * twice in `twice` (an assertion inside onAck would only be logged by the worker).
 */
function makeWorker(
  n: TestNode,
  queue: string,
  handler: Handler,
  acks: Acks,
  opts: WorkerOptions = {},
): { worker: Worker; twice: bigint[] } {
  const twice: bigint[] = [];
  const client = createQueueClient({ address: n.grpc, token: n.agentToken });
  const worker = new Worker(client, queue, handler, {
    workerId: "node-test",
    onAck: (todo, outcome) => {
      if (acks.has(todo.id)) twice.push(todo.id);
      acks.set(todo.id, outcome);
    },
    ...opts,
  });
  return { worker, twice };
}

/** Polls `cond` every 10 ms until it holds; rejects after `timeoutMs` (or when `failed` says why). */
async function waitFor(cond: () => boolean, timeoutMs = 30_000, failed?: () => unknown): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!cond()) {
    const why = failed?.();
    if (why !== undefined) throw why;
    if (performance.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(10);
  }
}

/** Starts worker.run; `stop()` aborts it and waits for run() to return (rethrowing its error). */
function start(worker: Worker) {
  const controller = new AbortController();
  let ended: { err?: unknown } | undefined;
  const running = worker.run(controller.signal).then(
    () => {
      ended = {};
    },
    (err: unknown) => {
      ended = { err };
    },
  );
  return {
    /** Why run() ended early: its error, or an Error when it returned; undefined while running. */
    endedEarly: (): unknown =>
      ended === undefined ? undefined : (ended.err ?? new Error("run() returned before the condition held")),
    async stop(timeoutMs = 60_000): Promise<void> {
      controller.abort();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        running,
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`run() did not return within ${timeoutMs} ms of the stop`)), timeoutMs);
        }),
      ]).finally(() => clearTimeout(timer));
      if (ended?.err !== undefined) throw ended.err;
    },
  };
}

/** Runs worker until done() holds, then stops it and waits for run(). */
async function runUntil(worker: Worker, done: () => boolean, timeoutMs = 60_000): Promise<void> {
  const run = start(worker);
  try {
    await waitFor(done, timeoutMs, run.endedEarly);
  } finally {
    await run.stop(timeoutMs);
  }
}

test("completes every todo with its result", { timeout: 90_000 }, async () => {
  const n = node();
  const ids: bigint[] = [];
  for (let i = 0; i < 20; i++) ids.push(await enqueue(n, "ts-complete", { n: i }));
  const acks: Acks = new Map();

  const { worker, twice } = makeWorker(n, "ts-complete", async (job) => ({ echo: job.payload["n"] ?? null }), acks, {
    concurrency: 4,
    waitMs: 1000,
  });
  await runUntil(worker, () => acks.size === 20);
  assert.deepEqual(acks, new Map(ids.map((id) => [id, Outcome.COMPLETED])));
  assert.deepEqual(twice, []);
  assert.equal(worker.stats().completed, 20);
  assert.equal(worker.stats().claimed, 20);
  const todo = await getTodo(n, ids[3]!);
  assert.equal(todo.state, "TODO_STATE_COMPLETED");
  assert.deepEqual(todo.result, { echo: 3 });
});

test("a plain (synchronous) function is a handler too", { timeout: 90_000 }, async () => {
  const n = node();
  const id = await enqueue(n, "ts-sync");
  const acks: Acks = new Map();
  const calls: bigint[] = [];

  // Not async: it returns nothing, no promise.
  function handler(job: { id: bigint }): void {
    calls.push(job.id);
  }

  const { worker, twice } = makeWorker(n, "ts-sync", handler, acks, { waitMs: 1000 });
  await runUntil(worker, () => acks.size === 1);
  assert.deepEqual(acks, new Map([[id, Outcome.COMPLETED]]));
  assert.deepEqual(twice, []);
  assert.deepEqual(calls, [id]);
  assert.equal((await getTodo(n, id)).state, "TODO_STATE_COMPLETED");
});

test("an exception fails the todo with its message and delay", { timeout: 90_000 }, async () => {
  const n = node();
  const retry = await enqueue(n, "ts-fail", { k: "retry" });
  const dead = await enqueue(n, "ts-fail", { k: "dead" });
  const acks: Acks = new Map();

  const handler: Handler = async (job) => {
    if (job.payload["k"] === "retry") throw new RetryAfter(120, "the upstream is busy");
    throw new Permanent("the input can never work");
  };

  const before = Date.now();
  const { worker, twice } = makeWorker(n, "ts-fail", handler, acks, { waitMs: 1000 });
  await runUntil(worker, () => acks.size === 2);
  assert.deepEqual(
    acks,
    new Map([
      [retry, Outcome.FAILED],
      [dead, Outcome.DEAD_LETTERED],
    ]),
  );
  assert.deepEqual(twice, []);
  const t = await getTodo(n, retry);
  assert.equal(t.state, "TODO_STATE_PENDING");
  assert.equal(t.last_error, "the upstream is busy");
  const runAt = Date.parse(t.run_at ?? "");
  assert.ok(runAt - before >= 110_000, `the retry delay is honoured (run_at ${t.run_at})`);
  const d = await getTodo(n, dead);
  assert.equal(d.state, "TODO_STATE_DEAD");
  assert.equal(d.last_error, "the input can never work");
  assert.equal(worker.stats().failed, 1);
  assert.equal(worker.stats().deadLettered, 1);
});

test("the lease is renewed past leaseSeconds, with progress", { timeout: 90_000 }, async () => {
  const n = node();
  const id = await enqueue(n, "ts-lease");
  const acks: Acks = new Map();
  const seen: JsonObject[] = [];

  const slow: Handler = async (job) => {
    job.progress({ pct: 50 });
    // Past two lease lengths: only renewals keep the lease.
    const deadline = performance.now() + 4_500;
    while (performance.now() < deadline) {
      const p = (await getTodo(n, job.id)).progress;
      if (p && Object.keys(p).length > 0 && seen.length === 0) seen.push(p);
      await sleep(200);
    }
  };

  const { worker, twice } = makeWorker(n, "ts-lease", slow, acks, { leaseSeconds: 2, waitMs: 1000 });
  await runUntil(worker, () => acks.size === 1);
  assert.deepEqual(acks, new Map([[id, Outcome.COMPLETED]]));
  assert.deepEqual(twice, []);
  assert.ok(worker.stats().heartbeats >= 2, `${worker.stats().heartbeats} heartbeats`);
  assert.deepEqual(seen, [{ pct: 50 }], "progress reached the server with a renewal");
});

test("a lost lease aborts the handler's signal and sends no ack", { timeout: 90_000 }, async () => {
  const n = node();
  const id = await enqueue(n, "ts-lost");
  const acks: Acks = new Map();
  let started = false;
  let aborted = false;

  const handler: Handler = async (job) => {
    started = true;
    try {
      await sleep(60_000, undefined, { signal: job.signal });
    } catch (err) {
      aborted = job.signal.aborted;
      throw err;
    }
  };

  const { worker, twice } = makeWorker(n, "ts-lost", handler, acks, { leaseSeconds: 3, waitMs: 1000 });
  const run = start(worker);
  try {
    await waitFor(() => started, 30_000, run.endedEarly);
    // The tenant's administrator cancels the todo: its lease ends, and the next renewal hears so.
    await rest(n.api, n.tenantAdminToken)("POST", `/api/todos/${id}:cancel`, {});
    await waitFor(() => aborted, 30_000, run.endedEarly);
  } finally {
    await run.stop(30_000);
  }
  assert.deepEqual(acks, new Map([[id, Outcome.LEASE_LOST]]));
  assert.deepEqual(twice, []);
  assert.equal((await getTodo(n, id)).state, "TODO_STATE_CANCELLED");
  assert.equal(worker.stats().completed, 0);
  assert.equal(worker.stats().failed, 0);
  assert.equal(worker.stats().released, 0);
  assert.equal(worker.stats().leaseLost, 1);
});

test("shutdown releases the todos still running", { timeout: 90_000 }, async () => {
  const n = node();
  const ids = new Set<bigint>();
  for (let i = 0; i < 3; i++) ids.add(await enqueue(n, "ts-release"));
  const acks: Acks = new Map();
  let running = 0;

  const stuck: Handler = async (job) => {
    running++;
    await sleep(60_000, undefined, { signal: job.signal });
  };

  const { worker, twice } = makeWorker(n, "ts-release", stuck, acks, { waitMs: 1000, shutdownGraceMs: 200 });
  await runUntil(worker, () => running === 3);
  assert.deepEqual(acks, new Map([...ids].map((id) => [id, Outcome.RELEASED])));
  assert.deepEqual(twice, []);
  const states = new Set<string>();
  for (const id of ids) states.add((await getTodo(n, id)).state);
  assert.deepEqual(states, new Set(["TODO_STATE_PENDING"]));
  assert.equal(worker.stats().released, 3);
});
