// The worker's round trip against a real node (see harness.ts): enqueue over REST, then Claim,
// HeartbeatBatch with progress, CompleteBatch twice (OK, then ALREADY) over gRPC with the
// agent's token, and an aborted long-poll Claim.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  BatchOutcome,
  Code,
  ConnectError,
  TodoState,
  createQueueClient,
} from "../src/index.js";
import { rest, useNode } from "./harness.js";

const node = useNode();

test("claim, heartbeat with progress, complete twice", async () => {
  const { api, grpc, agentToken } = node();
  const agent = rest(api, agentToken);
  const queueName = "sdk-ts";

  const enqueued = await agent<{ todo: { id: string; queue: string; state: string } }>(
    "POST",
    `/api/queues/${queueName}/todos`,
    { kind: "build", payload: { lang: "ts" } },
  );
  const id = BigInt(enqueued.todo.id);
  assert.equal(enqueued.todo.queue, queueName);

  const queue = createQueueClient({ address: grpc, token: agentToken });
  const { todos } = await queue.claim(
    { queue: queueName, workerId: "sdk-ts-test", maxTodos: 1, leaseSeconds: 30 },
    { timeoutMs: 10_000 },
  );
  assert.equal(todos.length, 1);
  const todo = todos[0]!;
  assert.equal(todo.id, id);
  assert.equal(typeof todo.leaseToken, "bigint");
  assert.ok(todo.leaseToken > 0n, "a claimed todo carries a lease token");
  assert.equal(todo.state, TodoState.RUNNING);
  assert.equal(todo.attempt, 1);
  assert.deepEqual(todo.payload, { lang: "ts" });
  const lease = { id: todo.id, leaseToken: todo.leaseToken };

  const beat = await queue.heartbeatBatch({
    items: [{ ...lease, leaseSeconds: 30, progress: { pct: 50 } }],
  });
  assert.equal(beat.results.length, 1);
  assert.equal(beat.results[0]!.id, id);
  assert.equal(beat.results[0]!.outcome, BatchOutcome.OK);
  assert.ok(beat.results[0]!.leaseExpiresAt, "an OK heartbeat returns the new lease expiry");

  const seen = await queue.getTodo({ id });
  assert.deepEqual(seen.todo?.progress, { pct: 50 });

  const first = await queue.completeBatch({ items: [lease] });
  assert.deepEqual(
    first.results.map((r) => [r.id, r.outcome]),
    [[id, BatchOutcome.OK]],
  );
  const again = await queue.completeBatch({ items: [lease] });
  assert.deepEqual(
    again.results.map((r) => [r.id, r.outcome]),
    [[id, BatchOutcome.ALREADY]],
  );
});

test("an aborted long-poll Claim rejects with Code.Canceled", async () => {
  const { grpc, agentToken } = node();
  const queue = createQueueClient({ address: grpc, token: agentToken });
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 200);
  const startedAt = performance.now();
  try {
    await assert.rejects(
      queue.claim(
        { queue: "sdk-ts-empty", workerId: "sdk-ts-test", maxTodos: 1, wait: { seconds: 30n } },
        { signal: controller.signal },
      ),
      (err: unknown) => {
        assert.equal(ConnectError.from(err).code, Code.Canceled);
        return true;
      },
    );
  } finally {
    clearTimeout(timer);
  }
  const elapsed = performance.now() - startedAt;
  assert.ok(elapsed >= 150 && elapsed < 5_000, `the claim ended after ${Math.round(elapsed)} ms, not at the abort`);
});
