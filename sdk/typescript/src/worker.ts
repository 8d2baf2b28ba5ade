/**
 * The worker: claims todos from one queue and runs a handler over each.
 *
 * A {@link Worker} keeps at most `concurrency` todos in hand. Each todo's lease is renewed every
 * `heartbeatIntervalMs` (by default a third of the lease) with one `HeartbeatBatch` call for
 * every todo in hand, carrying the handlers' progress ({@link Job.progress}), from the claim
 * until its outcome is confirmed. A handler that returns completes its todo (`CompleteBatch`,
 * shared by the completions of `ackDelayMs`); one that throws fails it (`Fail`, with
 * {@link RetryAfter}'s delay, or dead-lettered by {@link Permanent}).
 *
 * Acknowledgements are idempotent on the server, so one whose answer was lost to a transient
 * error is sent again (`ALREADY` counts as confirmed) for as long as its lease could still be
 * alive and at most `ackTimeoutMs`. When the server says a lease is gone, the todo's
 * {@link Job.signal} is aborted and nothing is acknowledged for it. On stop, claiming ends,
 * handlers get `shutdownGraceMs` to finish, and the todos of those still running are released
 * (their `job.signal` aborted). `onAck` is told every claimed todo's final {@link Outcome}
 * exactly once.
 *
 * This mirrors the Python SDK's `switchboard_worker.Worker` and the Go SDK's `pkg/worker`.
 *
 * @example
 * ```ts
 * import { createQueueClient, Worker, RetryAfter } from "@switchboard/worker";
 *
 * const client = createQueueClient({ address: "127.0.0.1:9090" });
 * const worker = new Worker(client, "builds", async (job) => {
 *   job.progress({ step: "fetch" });
 *   const res = await fetch(String(job.payload["url"]), { signal: job.signal });
 *   if (res.status === 429) throw new RetryAfter(60, "rate limited");
 *   return { status: res.status };
 * });
 * await worker.runUntilSignal(); // SIGTERM or SIGINT drains and returns
 * ```
 *
 * @module
 */
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { TodoState, type Todo } from "./gen/switchboard/queue/v1/queue_pb.js";
import { BatchOutcome } from "./gen/switchboard/queue/v1/queue_service_pb.js";
import type { QueueClient } from "./index.js";

// --- outcomes and handler errors ----------------------------------------------------------------

/**
 * The final outcome of a claimed todo, told once per todo to {@link WorkerOptions.onAck}.
 *
 * `completed`, `failed`, `dead_lettered` and `released` were confirmed by the server.
 * `lease_lost`: the server said the lease is gone, so the todo will run again elsewhere.
 * `unconfirmed`: the SDK gave up retrying the acknowledgement; the server may or may not have
 * recorded it. Tie exactly-once side effects to `completed`.
 */
export const Outcome = {
  COMPLETED: "completed",
  FAILED: "failed",
  DEAD_LETTERED: "dead_lettered",
  RELEASED: "released",
  LEASE_LOST: "lease_lost",
  UNCONFIRMED: "unconfirmed",
} as const;

/** One of the {@link Outcome} values: `"completed"`, `"failed"`, `"lease_lost"`, …. */
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

/** The {@link WorkerStats} counter each outcome adds to. */
const OUTCOME_COUNTER = {
  completed: "completed",
  failed: "failed",
  dead_lettered: "deadLettered",
  released: "released",
  lease_lost: "leaseLost",
  unconfirmed: "unconfirmed",
} as const satisfies Record<Outcome, keyof WorkerStats>;

/**
 * Thrown by a handler: fail the todo and run it again no sooner than `seconds` from now
 * (clamped to 0 s–30 days, the server's limits). The server still dead-letters the todo when it
 * was its last attempt.
 */
export class RetryAfter extends Error {
  /** The delay before the next attempt, in seconds. */
  readonly seconds: number;

  /**
   * @param seconds the delay before the next attempt
   * @param message the todo's `last_error`; default `retry after <seconds> s`
   */
  constructor(seconds: number, message?: string) {
    super(message || `retry after ${seconds} s`);
    this.name = "RetryAfter";
    this.seconds = seconds;
  }
}

/** Thrown by a handler: fail the todo for good; it goes to the dead letters, not retried. */
export class Permanent extends Error {
  /** @param message the todo's `last_error` */
  constructor(message?: string) {
    super(message);
    this.name = "Permanent";
  }
}

// --- the job ------------------------------------------------------------------------------------

/** The server stores at most 1 KiB of progress (as JSON) per todo. */
export const MAX_PROGRESS_BYTES = 1024;

/**
 * One claimed todo, handed to the handler.
 *
 * `signal` is aborted when the server said the lease is gone, or when the worker shuts down
 * past its grace (the todo is then released): the handler should pass it to what it awaits, or
 * check it between steps, and stop, since nothing it does from then on is acknowledged.
 * Jobs are made by the {@link Worker}.
 */
export class Job {
  /** The claimed todo (id, kind, payload, attempt, lease token, …). */
  readonly todo: Todo;
  /** Aborted when the lease is lost or at a forced shutdown; its `reason` says which. */
  readonly signal: AbortSignal;
  readonly #report: (progress: JsonObject) => void;

  /** @internal The worker makes jobs; `report` receives each {@link Job.progress} value. */
  constructor(todo: Todo, signal: AbortSignal, report: (progress: JsonObject) => void) {
    this.todo = todo;
    this.signal = signal;
    this.#report = report;
  }

  /** The todo's id. */
  get id(): bigint {
    return this.todo.id;
  }

  /** The todo's payload, a JSON object (`{}` when it has none). */
  get payload(): JsonObject {
    return this.todo.payload ?? {};
  }

  /** The attempt this run is, from 1. */
  get attempt(): number {
    return this.todo.attempt;
  }

  /**
   * The W3C trace context (`traceparent`) of the request that created the todo, or `""` when
   * there was none.
   */
  get traceParent(): string {
    return this.todo.traceParent;
  }

  /**
   * Records how far the handler got: a JSON object of at most 1 KiB as JSON, sent with the
   * todo's next lease renewal (stored as `Todo.progress` and published as a `todo.progress`
   * event). Only the latest value is sent; a heartbeat that failed sends it again unless newer
   * progress was recorded meanwhile.
   *
   * @throws TypeError when `value` is not a JSON object; RangeError when it is over 1 KiB.
   */
  progress(value: JsonObject): void {
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      throw new TypeError("progress must be a JSON object");
    }
    const encoded = JSON.stringify(value);
    const bytes = Buffer.byteLength(encoded, "utf8");
    if (bytes > MAX_PROGRESS_BYTES) {
      throw new RangeError(`progress is ${bytes} bytes as JSON, at most ${MAX_PROGRESS_BYTES}`);
    }
    this.#report(JSON.parse(encoded) as JsonObject);
  }
}

// --- options and stats --------------------------------------------------------------------------

/**
 * A handler: called once per claimed todo. Returning (a JSON object, the todo's result, or
 * nothing) completes the todo; throwing fails it (see {@link RetryAfter} and {@link Permanent}).
 * It should honour {@link Job.signal}, and must not block the event loop.
 */
export type Handler = (job: Job) => Promise<JsonObject | void> | JsonObject | void;

/**
 * Told every claimed todo's final outcome exactly once, with the error behind it for
 * `lease_lost` and `unconfirmed`. It must not throw (a throw is logged and ignored) nor block.
 */
export type OnAck = (todo: Todo, outcome: Outcome, err: Error | undefined) => void;

/** Where the worker writes its warnings and errors; `console` by default. */
export interface WorkerLogger {
  /** Something failed and will be retried: a Claim, a HeartbeatBatch. */
  warn(message: string): void;
  /** Something failed for good: an acknowledgement given up on a non-transient error, an onAck that threw. */
  error(message: string): void;
}

/** Options of a {@link Worker}; all optional. */
export interface WorkerOptions {
  /** Names this process to the server. Default `${os.hostname()}-${process.pid}`. */
  workerId?: string | undefined;
  /** How many handlers run at once (and so how many todos are held). Default 10. */
  concurrency?: number | undefined;
  /** The lease asked for at every claim and renewal, 1–3600 s. Default 30. */
  leaseSeconds?: number | undefined;
  /** How often the held leases are renewed. Default a third of the lease. */
  heartbeatIntervalMs?: number | undefined;
  /** How long a Claim long-polls an empty queue, 0–60000 ms. Default 10000. */
  waitMs?: number | undefined;
  /** How long running handlers may finish after the stop. Default 10000 ms. */
  shutdownGraceMs?: number | undefined;
  /** The most completions sent in one CompleteBatch call, 1–1000. Default 500. */
  ackBatch?: number | undefined;
  /** How long a completion waits for others to share its CompleteBatch call. Default 2 ms. */
  ackDelayMs?: number | undefined;
  /** How long an acknowledgement is retried at most (also bounded by its lease). Default 300000 ms. */
  ackTimeoutMs?: number | undefined;
  /** Told every claimed todo's final outcome exactly once; see {@link OnAck}. */
  onAck?: OnAck | undefined;
  /** Where warnings (failed claims, heartbeats) and errors go. Default `console`. */
  logger?: WorkerLogger | undefined;
}

/** Counters of a worker's life so far (a snapshot from {@link Worker.stats}). */
export interface WorkerStats {
  /** Todos claimed. */
  claimed: number;
  /** Todos whose completion the server confirmed. */
  completed: number;
  /** Todos failed for a retry. */
  failed: number;
  /** Todos failed for good (dead-lettered). */
  deadLettered: number;
  /** Todos released at shutdown. */
  released: number;
  /** Todos whose lease the server said was gone. */
  leaseLost: number;
  /** Todos whose acknowledgement was given up. */
  unconfirmed: number;
  /** Acknowledgement attempts retried after a transient error. */
  acksRetried: number;
  /** Completions the server answered ALREADY (an earlier attempt had committed). */
  acksAlready: number;
  /** HeartbeatBatch calls answered. */
  heartbeats: number;
  /** Claim calls that failed. */
  claimErrors: number;
}

// Limits of the QueueService contract.
const MAX_BATCH = 1000;
const MAX_WAIT_MS = 60_000;
const MAX_RETRY_AFTER_SECONDS = 2_592_000;
const MAX_ERROR_CHARS = 4096;
const RPC_TIMEOUT_MS = 30_000;
// Retry backoff (jittered, doubling) of acknowledgements and of claims, in ms.
const ACK_BACKOFF: readonly [number, number] = [50, 2_000];
const CLAIM_BACKOFF: readonly [number, number] = [100, 10_000];

/**
 * Codes after which a call is sent again: the node or the database was restarting
 * (Unavailable), a deadlock or serialization failure (Aborted), one attempt's deadline,
 * overload, or a broken connection (Unknown).
 */
const TRANSIENT: ReadonlySet<Code> = new Set([
  Code.Unavailable,
  Code.Aborted,
  Code.DeadlineExceeded,
  Code.ResourceExhausted,
  Code.Unknown,
]);
/** Codes that mean the lease is gone. */
const LEASE_GONE: ReadonlySet<Code> = new Set([Code.FailedPrecondition, Code.NotFound]);

function codeOf(err: unknown): Code | undefined {
  return err instanceof ConnectError ? err.code : undefined;
}

/** A ConnectError with a transient code, or an error that is no RPC status (a broken connection). */
function isTransient(err: unknown): boolean {
  const code = codeOf(err);
  return code === undefined || TRANSIENT.has(code);
}

function backoff(attempt: number, [lo, hi]: readonly [number, number]): number {
  return Math.min(hi, lo * 2 ** Math.min(attempt, 30)) * (0.5 + Math.random() * 0.5);
}

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

function describe(err: unknown): string {
  const code = codeOf(err);
  return code === undefined ? String(err) : `${Code[code]}: ${(err as ConnectError).rawMessage}`;
}

/** A google.protobuf.Duration (as a message init) of `seconds` ≥ 0. */
function durationOf(seconds: number): { seconds: bigint; nanos: number } {
  const whole = Math.floor(seconds);
  const nanos = Math.min(999_999_999, Math.round((seconds - whole) * 1e9));
  return { seconds: BigInt(whole), nanos };
}

/** Resolves after `ms`, or (false) as soon as `signal` aborts; never rejects. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** A todo in hand, from its claim until its outcome is settled. */
interface Held {
  job: Job;
  abort: AbortController;
  /** The monotonic time (performance.now()) the lease surely lasts until. */
  expires: number;
  /** Progress recorded and not yet sent. */
  progress: JsonObject | undefined;
  /** Resolves when the handler has returned and its acknowledgement is queued or started. */
  handled: Promise<void>;
  handlerDone: boolean;
  lost: boolean;
  /** Aborted at shutdown past its grace; its todo is released. */
  forced: boolean;
  settled: boolean;
  /**
   * An acknowledgement attempt is in flight: no heartbeat is sent for the todo meanwhile, and a
   * heartbeat's "stale" answer is ignored (it may have crossed the completion that ended the lease).
   */
  acking: boolean;
}

interface Completion {
  h: Held;
  result: JsonObject | undefined;
}

// --- the worker ---------------------------------------------------------------------------------

/**
 * Drains one queue with a handler; see the module documentation.
 *
 * @example
 * ```ts
 * const controller = new AbortController();
 * const done = new Worker(client, "emails", send, { concurrency: 4 }).run(controller.signal);
 * // … later:
 * controller.abort();
 * await done; // every claimed todo's outcome is settled
 * ```
 */
export class Worker {
  /** The client the worker's calls go through. */
  readonly client: QueueClient;
  /** The queue it drains. */
  readonly queue: string;
  /** The handler it runs over each todo. */
  readonly handler: Handler;
  /** The name it gives itself at every Claim. */
  readonly workerId: string;
  readonly #concurrency: number;
  readonly #leaseSeconds: number;
  readonly #heartbeatIntervalMs: number;
  readonly #waitMs: number;
  readonly #shutdownGraceMs: number;
  readonly #ackBatch: number;
  readonly #ackDelayMs: number;
  readonly #ackTimeoutMs: number;
  readonly #onAck: OnAck | undefined;
  readonly #log: WorkerLogger;

  #stats: WorkerStats = {
    claimed: 0,
    completed: 0,
    failed: 0,
    deadLettered: 0,
    released: 0,
    leaseLost: 0,
    unconfirmed: 0,
    acksRetried: 0,
    acksAlready: 0,
    heartbeats: 0,
    claimErrors: 0,
  };
  readonly #held = new Map<bigint, Held>();
  #running = 0;
  #active = false;
  /** Wakes the claim loop when a handler slot frees. */
  #slotFree: (() => void) | undefined;
  /** Completions waiting for the batcher, and its wake-up. */
  #completions: Completion[] = [];
  #completionAdded: (() => void) | undefined;
  /** Acknowledgements in flight (batches, fails, releases). */
  readonly #acks = new Set<Promise<void>>();

  /**
   * @param client a client from {@link createQueueClient}, with an agent's token
   * @param queue the queue to drain
   * @param handler run over each claimed todo
   * @param opts see {@link WorkerOptions}
   * @throws RangeError when an option is out of its range.
   */
  constructor(client: QueueClient, queue: string, handler: Handler, opts: WorkerOptions = {}) {
    const leaseSeconds = opts.leaseSeconds ?? 30;
    const concurrency = opts.concurrency ?? 10;
    const ackBatch = opts.ackBatch ?? 500;
    const waitMs = opts.waitMs ?? 10_000;
    if (!Number.isInteger(leaseSeconds) || leaseSeconds < 1 || leaseSeconds > 3600) {
      throw new RangeError("leaseSeconds must be an integer, 1-3600");
    }
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new RangeError("concurrency must be an integer, at least 1");
    }
    if (!Number.isInteger(ackBatch) || ackBatch < 1 || ackBatch > MAX_BATCH) {
      throw new RangeError(`ackBatch must be an integer, 1-${MAX_BATCH}`);
    }
    if (!(waitMs >= 0 && waitMs <= MAX_WAIT_MS)) {
      throw new RangeError(`waitMs must be 0-${MAX_WAIT_MS}`);
    }
    const heartbeatIntervalMs = opts.heartbeatIntervalMs ?? (leaseSeconds * 1000) / 3;
    if (!(heartbeatIntervalMs > 0)) throw new RangeError("heartbeatIntervalMs must be positive");
    this.client = client;
    this.queue = queue;
    this.handler = handler;
    this.workerId = opts.workerId || `${hostname()}-${process.pid}`;
    this.#concurrency = concurrency;
    this.#leaseSeconds = leaseSeconds;
    this.#heartbeatIntervalMs = heartbeatIntervalMs;
    this.#waitMs = waitMs;
    this.#shutdownGraceMs = Math.max(0, opts.shutdownGraceMs ?? 10_000);
    this.#ackBatch = ackBatch;
    this.#ackDelayMs = Math.max(0, opts.ackDelayMs ?? 2);
    this.#ackTimeoutMs = Math.max(0, opts.ackTimeoutMs ?? 300_000);
    this.#onAck = opts.onAck;
    this.#log = opts.logger ?? console;
  }

  /** A snapshot of the counters. */
  stats(): WorkerStats {
    return { ...this.#stats };
  }

  // --- running ----------------------------------------------------------------------------------

  /**
   * Claims and handles todos until `signal` aborts, then shuts down: claiming ends (the
   * in-flight Claim is aborted), handlers get `shutdownGraceMs` to finish, the rest have their
   * {@link Job.signal} aborted and their todos released, and every outcome is settled (its
   * `onAck` called) before the promise resolves. Handlers that ignore their signal are not
   * waited for past that point; whatever they return is discarded.
   *
   * @throws the Claim's ConnectError (after the shutdown) when a claim failed with an error no
   * retry can change (InvalidArgument, PermissionDenied, Unauthenticated, …).
   */
  async run(signal?: AbortSignal): Promise<void> {
    if (this.#active) throw new Error("Worker.run: this worker is running already");
    this.#active = true;
    const claiming = new AbortController();
    const background = new AbortController();
    const stop = (): void => claiming.abort(signal?.reason);
    if (signal?.aborted) stop();
    signal?.addEventListener("abort", stop, { once: true });
    const heartbeats = this.#heartbeatLoop(background.signal);
    const batcher = this.#completeLoop(background.signal);
    let failure: { err: unknown } | undefined;
    try {
      await this.#claimLoop(claiming.signal);
    } catch (err) {
      failure = { err };
    } finally {
      signal?.removeEventListener("abort", stop);
      claiming.abort();
      await this.#shutdown();
      background.abort();
      await Promise.all([heartbeats, batcher]);
      this.#active = false;
    }
    if (failure) throw failure.err;
  }

  /**
   * {@link Worker.run} until SIGTERM or SIGINT, as a supervised process drains. The first signal
   * starts the shutdown and restores Node's default handling, so a second one ends the process.
   */
  async runUntilSignal(): Promise<void> {
    const controller = new AbortController();
    const signals = ["SIGTERM", "SIGINT"] as const;
    const onSignal = (): void => {
      for (const s of signals) process.off(s, onSignal);
      controller.abort();
    };
    for (const s of signals) process.on(s, onSignal);
    try {
      await this.run(controller.signal);
    } finally {
      for (const s of signals) process.off(s, onSignal);
    }
  }

  async #shutdown(): Promise<void> {
    const running = [...this.#held.values()].filter((h) => !h.handlerDone).map((h) => h.handled);
    if (running.length > 0) {
      const grace = new AbortController();
      await Promise.race([Promise.all(running), sleep(this.#shutdownGraceMs, undefined, { signal: grace.signal }).catch(() => {})]);
      grace.abort();
    }
    for (const h of [...this.#held.values()]) {
      if (h.handlerDone || h.settled || h.lost) continue;
      // Its handler sees job.signal abort; the todo is released without waiting for it.
      h.forced = true;
      h.abort.abort(new Error("switchboard: the worker shut down before the handler finished"));
      this.#track(this.#release(h));
    }
    // Completions still queued or being retried settle before run returns.
    while (this.#acks.size > 0 || this.#held.size > 0) {
      if (this.#acks.size > 0) await Promise.all(this.#acks);
      else await sleep(10);
    }
  }

  // --- claiming ---------------------------------------------------------------------------------

  async #claimLoop(stop: AbortSignal): Promise<void> {
    let failures = 0;
    while (!stop.aborted) {
      const free = this.#concurrency - this.#running;
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          const wake = (): void => {
            stop.removeEventListener("abort", wake);
            this.#slotFree = undefined;
            resolve();
          };
          this.#slotFree = wake;
          stop.addEventListener("abort", wake, { once: true });
        });
        continue;
      }
      const sent = performance.now();
      let todos: Todo[];
      try {
        const res = await this.client.claim(
          {
            queue: this.queue,
            workerId: this.workerId,
            maxTodos: Math.min(free, MAX_BATCH),
            leaseSeconds: this.#leaseSeconds,
            wait: durationOf(this.#waitMs / 1000),
          },
          { signal: stop, timeoutMs: this.#waitMs + RPC_TIMEOUT_MS },
        );
        todos = res.todos;
      } catch (err) {
        if (stop.aborted) return;
        this.#stats.claimErrors++;
        const code = codeOf(err);
        if (code !== undefined && !LEASE_GONE.has(code) && !isTransient(err)) {
          // InvalidArgument, PermissionDenied, Unauthenticated…: no retry will change the answer.
          throw err;
        }
        const delay = backoff(failures, CLAIM_BACKOFF);
        failures++;
        this.#log.warn(`switchboard worker: claim failed (${describe(err)}); retrying in ${Math.round(delay)} ms`);
        await pause(delay, stop);
        continue;
      }
      failures = 0;
      for (const todo of todos) this.#start(todo, sent);
    }
  }

  #start(todo: Todo, sent: number): void {
    this.#stats.claimed++;
    const abort = new AbortController();
    const h: Held = {
      job: undefined as unknown as Job,
      abort,
      expires: sent + this.#leaseSeconds * 1000,
      progress: undefined,
      handled: Promise.resolve(),
      handlerDone: false,
      lost: false,
      forced: false,
      settled: false,
      acking: false,
    };
    h.job = new Job(todo, abort.signal, (p) => {
      h.progress = p;
    });
    this.#held.set(todo.id, h);
    this.#running++;
    h.handled = this.#handle(h);
  }

  #freeSlot(): void {
    this.#running--;
    this.#slotFree?.();
  }

  // --- handling ---------------------------------------------------------------------------------

  async #handle(h: Held): Promise<void> {
    // The handler starts in a later microtask, once #start has registered the todo and set
    // h.handled, and its synchronous part cannot delay the start of the batch's other todos.
    await Promise.resolve();
    try {
      let result: JsonObject | undefined;
      try {
        result = resultObject(await this.handler(h.job));
      } catch (err) {
        if (!h.lost && !h.forced) this.#track(this.#fail(h, err));
        return;
      }
      if (h.lost || h.forced) return; // told already, or released: nothing to acknowledge
      this.#completions.push({ h, result });
      this.#completionAdded?.();
    } finally {
      h.handlerDone = true;
      this.#freeSlot();
    }
  }

  // --- lease renewal ----------------------------------------------------------------------------

  async #heartbeatLoop(stop: AbortSignal): Promise<void> {
    while (await pause(this.#heartbeatIntervalMs, stop)) {
      const held = [...this.#held.values()].filter((h) => !h.settled && !h.lost && !h.acking);
      for (let i = 0; i < held.length && !stop.aborted; i += MAX_BATCH) {
        await this.#heartbeat(held.slice(i, i + MAX_BATCH), stop);
      }
    }
  }

  async #heartbeat(batch: Held[], stop: AbortSignal): Promise<void> {
    if (batch.length === 0) return;
    const taken = new Map<Held, JsonObject>();
    const items = batch.map((h) => {
      const progress = h.progress;
      h.progress = undefined;
      if (progress !== undefined) taken.set(h, progress);
      return { id: h.job.id, leaseToken: h.job.todo.leaseToken, leaseSeconds: this.#leaseSeconds, progress };
    });
    const sent = performance.now();
    let results;
    try {
      const res = await this.client.heartbeatBatch(
        { items },
        { signal: stop, timeoutMs: Math.max(1, Math.round(this.#heartbeatIntervalMs)) },
      );
      results = res.results;
    } catch (err) {
      if (!stop.aborted) {
        this.#log.warn(`switchboard worker: heartbeat of ${items.length} todos failed: ${describe(err)}`);
      }
      for (const [h, p] of taken) {
        if (h.progress === undefined) h.progress = p; // unless newer progress was recorded
      }
      return;
    }
    this.#stats.heartbeats++;
    const byId = new Map(batch.map((h) => [h.job.id, h]));
    for (const r of results) {
      const h = byId.get(r.id);
      if (h === undefined) continue;
      if (r.outcome === BatchOutcome.OK) {
        h.expires = sent + this.#leaseSeconds * 1000;
      } else if ((r.outcome === BatchOutcome.STALE_LEASE || r.outcome === BatchOutcome.NOT_FOUND) && !h.acking) {
        this.#lose(h, `the server says the lease is gone (${BatchOutcome[r.outcome]})`);
      }
    }
  }

  #lose(h: Held, why: string): void {
    if (h.settled || h.lost) return;
    h.lost = true;
    const err = new Error(`switchboard: ${why}`);
    h.abort.abort(err);
    this.#settle(h, Outcome.LEASE_LOST, err);
  }

  // --- acknowledgements -------------------------------------------------------------------------

  #track(ack: Promise<void>): void {
    const p = ack.catch((err: unknown) => {
      this.#log.error(`switchboard worker: acknowledgement failed unexpectedly: ${String(err)}`);
    });
    this.#acks.add(p);
    void p.finally(() => this.#acks.delete(p));
  }

  #settle(h: Held, outcome: Outcome, err?: unknown): void {
    if (h.settled) return;
    h.settled = true;
    this.#held.delete(h.job.id);
    this.#stats[OUTCOME_COUNTER[outcome]]++;
    if (this.#onAck !== undefined) {
      try {
        this.#onAck(h.job.todo, outcome, err === undefined ? undefined : toError(err));
      } catch (hookErr) {
        this.#log.error(`switchboard worker: onAck threw: ${String(hookErr)}`);
      }
    }
  }

  /** When retrying h's acknowledgement stops: its lease could have expired, or ackTimeout passed. */
  #deadline(h: Held, started: number): number {
    return Math.min(h.expires, started + this.#ackTimeoutMs);
  }

  async #completeLoop(stop: AbortSignal): Promise<void> {
    while (!stop.aborted) {
      if (this.#completions.length === 0) {
        await this.#completionWait(undefined, stop);
        continue;
      }
      // Completions arriving within ackDelay share the call, up to ackBatch of them.
      const deadline = performance.now() + this.#ackDelayMs;
      while (this.#completions.length < this.#ackBatch && !stop.aborted) {
        const left = deadline - performance.now();
        if (left <= 0) break;
        await this.#completionWait(left, stop);
      }
      const batch = this.#completions.splice(0, this.#ackBatch);
      if (batch.length > 0) this.#track(this.#complete(batch));
    }
  }

  /** Resolves when a completion is queued, after `ms` (when given) or when `stop` aborts. */
  #completionWait(ms: number | undefined, stop: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const wake = (): void => {
        if (timer !== undefined) clearTimeout(timer);
        stop.removeEventListener("abort", wake);
        if (this.#completionAdded === wake) this.#completionAdded = undefined;
        resolve();
      };
      if (ms !== undefined) timer = setTimeout(wake, ms);
      this.#completionAdded = wake;
      stop.addEventListener("abort", wake, { once: true });
    });
  }

  async #complete(batch: Completion[]): Promise<void> {
    const started = performance.now();
    for (let attempt = 0; ; attempt++) {
      const live = batch.filter((c) => !c.h.settled);
      if (live.length === 0) return;
      for (const { h } of live) h.acking = true;
      let results;
      try {
        const res = await this.client.completeBatch(
          { items: live.map(({ h, result }) => ({ id: h.job.id, leaseToken: h.job.todo.leaseToken, result })) },
          { timeoutMs: RPC_TIMEOUT_MS },
        );
        results = res.results;
      } catch (err) {
        for (const { h } of live) h.acking = false;
        if (!isTransient(err)) {
          for (const { h } of live) this.#settle(h, Outcome.UNCONFIRMED, err);
          this.#log.error(`switchboard worker: complete of ${live.length} todos failed: ${describe(err)}`);
          return;
        }
        const delay = backoff(attempt, ACK_BACKOFF);
        for (const { h } of live) {
          if (performance.now() + delay > this.#deadline(h, started)) this.#settle(h, Outcome.UNCONFIRMED, err);
        }
        this.#stats.acksRetried++;
        await sleep(delay);
        continue;
      }
      const byId = new Map(live.map((c) => [c.h.job.id, c.h]));
      for (const r of results) {
        const h = byId.get(r.id);
        if (h === undefined) continue;
        if (r.outcome === BatchOutcome.OK) {
          this.#settle(h, Outcome.COMPLETED);
        } else if (r.outcome === BatchOutcome.ALREADY) {
          this.#stats.acksAlready++;
          this.#settle(h, Outcome.COMPLETED);
        } else {
          this.#settle(h, Outcome.LEASE_LOST, new Error(`switchboard: ${BatchOutcome[r.outcome] ?? r.outcome}`));
        }
      }
      for (const { h } of live) {
        // An item the server did not answer.
        this.#settle(h, Outcome.UNCONFIRMED, new Error("switchboard: no result for this todo"));
      }
      return;
    }
  }

  async #fail(h: Held, err: unknown): Promise<void> {
    let message = err instanceof Error ? err.message || err.name : String(err);
    if (!message) message = "the handler failed";
    if (message.length > MAX_ERROR_CHARS) message = [...message].slice(0, MAX_ERROR_CHARS).join("");
    const retryAfter =
      err instanceof RetryAfter
        ? durationOf(Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(0, Number.isFinite(err.seconds) ? err.seconds : 0)))
        : undefined;
    const deadLetter = err instanceof Permanent;
    await this.#ack(h, async () => {
      const res = await this.client.fail(
        { id: h.job.id, leaseToken: h.job.todo.leaseToken, error: message, retryAfter, deadLetter },
        { timeoutMs: RPC_TIMEOUT_MS },
      );
      return res.todo?.state === TodoState.DEAD ? Outcome.DEAD_LETTERED : Outcome.FAILED;
    });
  }

  async #release(h: Held): Promise<void> {
    await this.#ack(h, async () => {
      await this.client.release({ id: h.job.id, leaseToken: h.job.todo.leaseToken }, { timeoutMs: RPC_TIMEOUT_MS });
      return Outcome.RELEASED;
    });
  }

  /** Runs one single-todo acknowledgement, retried after transient errors while its lease may be alive. */
  async #ack(h: Held, call: () => Promise<Outcome>): Promise<void> {
    const started = performance.now();
    for (let attempt = 0; ; attempt++) {
      if (h.settled) return;
      h.acking = true;
      let outcome: Outcome;
      try {
        outcome = await call();
      } catch (err) {
        h.acking = false;
        const code = codeOf(err);
        if (code !== undefined && LEASE_GONE.has(code)) {
          this.#settle(h, Outcome.LEASE_LOST, err);
          return;
        }
        const delay = backoff(attempt, ACK_BACKOFF);
        if (!isTransient(err) || performance.now() + delay > this.#deadline(h, started)) {
          this.#settle(h, Outcome.UNCONFIRMED, err);
          return;
        }
        this.#stats.acksRetried++;
        await sleep(delay);
        continue;
      }
      this.#settle(h, outcome);
      return;
    }
  }
}

/**
 * A handler's return value as a todo result: undefined for nothing, else a copy of the JSON
 * object (undefined members dropped).
 *
 * @throws TypeError when it is not a JSON object.
 */
function resultObject(result: unknown): JsonObject | undefined {
  if (result === undefined || result === null) return undefined;
  if (typeof result !== "object" || Array.isArray(result)) {
    throw new TypeError(`a handler's result must be a JSON object or nothing, not ${Array.isArray(result) ? "an array" : typeof result}`);
  }
  return JSON.parse(JSON.stringify(result)) as JsonObject;
}
