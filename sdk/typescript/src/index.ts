/**
 * `@switchboard/worker`: the TypeScript SDK for Switchboard workers.
 *
 * A worker claims todos from a Switchboard queue over gRPC, heartbeats them while it works
 * (renewing the lease and reporting progress) and completes, fails or releases them. This
 * package holds {@link Worker}, which does all of that around a handler function (with
 * {@link Job}, {@link RetryAfter}, {@link Permanent} and {@link Outcome}); the typed contract
 * underneath, generated with protobuf-es v2 from `proto/switchboard/queue/v1` (the
 * `QueueService` descriptor and every request, response and message schema); and
 * {@link createQueueClient}, which connects a promise-based Connect client to a node's gRPC
 * listener with the worker's bearer token.
 *
 * int64 fields (todo ids, lease tokens) are `bigint`; `google.protobuf.Struct` fields (payload,
 * progress, result) are plain JSON objects; enum values drop their prefix
 * (`BatchOutcome.OK`). Build requests with `create(Schema, init)` from `@bufbuild/protobuf`
 * or pass plain objects to the client's methods.
 *
 * @example
 * ```ts
 * import { createQueueClient, Worker } from "@switchboard/worker";
 *
 * const client = createQueueClient({ address: "127.0.0.1:9090" }); // token: $SWITCHBOARD_TOKEN
 * await new Worker(client, "builds", async (job) => ({ built: job.payload["lang"] })).runUntilSignal();
 * ```
 *
 * @example The raw calls underneath:
 * ```ts
 * import { createQueueClient } from "@switchboard/worker";
 *
 * const queue = createQueueClient({ address: "127.0.0.1:9090" }); // token: $SWITCHBOARD_TOKEN
 * const { todos } = await queue.claim({ queue: "builds", workerId: "w1", maxTodos: 1 });
 * for (const todo of todos) {
 *   await queue.completeBatch({ items: [{ id: todo.id, leaseToken: todo.leaseToken }] });
 * }
 * ```
 *
 * @module
 */
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { QueueService } from "./gen/switchboard/queue/v1/queue_service_pb.js";

export * from "./gen/switchboard/queue/v1/queue_pb.js";
export * from "./gen/switchboard/queue/v1/queue_service_pb.js";
export { Code, ConnectError } from "@connectrpc/connect";
export type { JsonObject } from "@bufbuild/protobuf";
export {
  Job,
  MAX_PROGRESS_BYTES,
  Outcome,
  Permanent,
  RetryAfter,
  Worker,
  type Handler,
  type OnAck,
  type WorkerLogger,
  type WorkerOptions,
  type WorkerStats,
} from "./worker.js";

/** A promise-based client for `switchboard.queue.v1.QueueService`. */
export type QueueClient = Client<typeof QueueService>;

/** Options for {@link createQueueClient}. */
export interface QueueClientOptions {
  /** The node's gRPC listener as `host:port` (`127.0.0.1:9090`, `[::1]:9090`), without a scheme. */
  address: string;
  /**
   * The credential sent as `authorization: Bearer <token>` on every call.
   * Defaults to the `SWITCHBOARD_TOKEN` environment variable.
   */
  token?: string | undefined;
  /** Dial with TLS (`https`) instead of plaintext HTTP/2. Default: false. */
  tls?: boolean | undefined;
}

/**
 * How often an idle HTTP/2 connection is pinged. Nodes refuse pings more often than every 10 s,
 * so 12 s keeps a connection alive through idle proxies without being sent GOAWAY.
 */
const PING_INTERVAL_MS = 12_000;

/**
 * Creates a {@link QueueClient} for one node: a Connect gRPC transport over HTTP/2 (one
 * connection, pinged every 12 s) whose calls all carry the bearer token.
 *
 * Per-call options work as usual: `{ signal }` aborts a call (a long-poll Claim rejects with
 * `Code.Canceled`) and `{ timeoutMs }` bounds it. Errors are `ConnectError`s; test them with
 * `ConnectError.from(err).code === Code.FailedPrecondition` and so on.
 *
 * @throws TypeError when `address` is not `host:port`, or when there is no token.
 */
export function createQueueClient(opts: QueueClientOptions): QueueClient {
  const { address } = opts;
  if (!/^[^\s/]+:\d{1,5}$/.test(address)) {
    throw new TypeError(`createQueueClient: address must be "host:port" without a scheme, got ${JSON.stringify(address)}`);
  }
  const token = opts.token ?? process.env["SWITCHBOARD_TOKEN"];
  if (!token) {
    throw new TypeError("createQueueClient: no token: pass opts.token or set SWITCHBOARD_TOKEN");
  }
  const authorization = `Bearer ${token}`;
  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", authorization);
    return next(req);
  };
  const transport = createGrpcTransport({
    baseUrl: `${opts.tls ? "https" : "http"}://${address}`,
    pingIntervalMs: PING_INTERVAL_MS,
    interceptors: [bearer],
  });
  return createClient(QueueService, transport);
}
