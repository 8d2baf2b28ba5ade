/**
 * Test harness: starts a real Switchboard node on a database of its own, for one test file.
 *
 *   import { useNode } from "./harness.js";
 *   const node = useNode();           // registers before/after hooks on the file
 *   test("…", async () => { const { grpc, agentToken } = node(); … });
 *
 * before: createdb sdktest_<random> → `switchboard migrate up` → `switchboard token generate`
 * (the bootstrap administrator) → two free ports from 26000–26999 → `switchboard serve all`
 * → poll GET /health until 200 → POST /api/admin/humans, /agents, /credentials (scopes
 * ["agent"]), /credentials again (the tenant administrator: scopes ["admin"], no agent).
 * after: SIGTERM, wait for the exit, DROP DATABASE … WITH (FORCE), also when the start failed
 * half way.
 *
 * Environment:
 *   SWITCHBOARD_BIN      the built binary (go build -o bin/switchboard ./services/cmd/switchboard)
 *   SWITCHBOARD_TEST_PG  a Postgres URL that may create and drop databases (its database is only
 *                        the maintenance one); defaults to TEST_DATABASE_URL, which
 *                        `eval "$(deploy/local/postgres.sh test)"` exports.
 * createdb and psql must be on PATH.
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createServer } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { after, before } from "node:test";

const run = promisify(execFile);

/** What a started node gives a test. */
export interface TestNode {
  /** gRPC listener, host:port (for createQueueClient). */
  grpc: string;
  /** HTTP base URL (REST gateway), without a trailing slash. */
  api: string;
  /** Bearer token of an agent credential (scopes ["agent"]) in a fresh tenant. */
  agentToken: string;
  /** The bootstrap administrator's bearer token. */
  adminToken: string;
  /**
   * Bearer token of the tenant's administrator (scopes ["admin"] in the agent's tenant), for
   * what an agent may not do, such as cancelling a todo over REST.
   */
  tenantAdminToken: string;
  /** The tenant (human) and agent the agent token belongs to. */
  humanId: string;
  agentId: string;
  /** The database the node runs on (dropped after the file). */
  database: string;
  /** The node's stdout and stderr so far (the last 256 KiB), for failure messages. */
  logs(): string;
}

export interface NodeOptions {
  /** Extra environment for `serve all`, e.g. OTEL_EXPORTER_OTLP_ENDPOINT for trace tests. */
  env?: Record<string, string>;
  /** How long to wait for GET /health to return 200. Default 60 s. */
  startTimeoutMs?: number;
}

/**
 * Starts a node before the file's tests and stops it (dropping its database) after them.
 * Returns a getter for the running node; it throws when called outside a test.
 */
export function useNode(opts: NodeOptions = {}): () => TestNode {
  let started: StartedNode | undefined;
  before(async () => {
    started = await startNode(opts);
  });
  after(async () => {
    await started?.stop();
  });
  return () => {
    if (!started) throw new Error("useNode: the node is not running (call the getter inside a test)");
    return started.node;
  };
}

interface StartedNode {
  node: TestNode;
  stop(): Promise<void>;
}

/** Starts a node on a new database; stop() ends it and drops the database. */
export async function startNode(opts: NodeOptions = {}): Promise<StartedNode> {
  const bin = requireEnv("SWITCHBOARD_BIN", "the switchboard binary (go build -o bin/switchboard ./services/cmd/switchboard)");
  const adminUrl = requireEnv(
    "SWITCHBOARD_TEST_PG",
    'a Postgres URL that may create databases (or TEST_DATABASE_URL: eval "$(deploy/local/postgres.sh test)")',
    "TEST_DATABASE_URL",
  );

  const database = `sdktest_${randomBytes(6).toString("hex")}`;
  const databaseUrl = withDatabase(adminUrl, database);
  const logs = new LogBuffer(256 * 1024);
  let child: ChildProcess | undefined;
  let created = false;

  const stop = async (): Promise<void> => {
    const errors: unknown[] = [];
    if (child) {
      try {
        await terminate(child);
      } catch (err) {
        errors.push(err);
      }
      child = undefined;
    }
    if (created) {
      try {
        await run("psql", [adminUrl, "-XAtqc", `DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`]);
        created = false;
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, `stopping the test node on ${database} failed`);
  };

  try {
    await run("createdb", [`--maintenance-db=${adminUrl}`, database]);
    created = true;
    const env = nodeEnv({ DATABASE_URL: databaseUrl });
    await run(bin, ["migrate", "up"], { env });
    const adminToken = (await run(bin, ["token", "generate"], { env })).stdout.trim();
    if (!adminToken) throw new Error("switchboard token generate printed nothing");

    const [grpcPort, httpPort] = await freePorts(2);
    const grpc = `127.0.0.1:${grpcPort}`;
    const api = `http://127.0.0.1:${httpPort}`;
    const proc = spawn(bin, ["serve", "all"], {
      env: nodeEnv({
        // Small pools, as pkg/pgtest.NodeURL gives the Go tests' nodes: the
        // suite shares the server's connections (100) with the other tests.
        DATABASE_URL: withParam(databaseUrl, "pool_max_conns", "4"),
        SWITCHBOARD_GRPC_ADDR: grpc,
        SWITCHBOARD_HTTP_ADDR: `127.0.0.1:${httpPort}`,
        CLUSTER_NODE_ID: `sdk-ts-${database}`,
        SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN: adminToken,
        SWITCHBOARD_SHUTDOWN_GRACE: "5s",
        ...opts.env,
      }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = proc;
    proc.once("error", (err) => logs.add(Buffer.from(`\nspawn ${bin}: ${String(err)}\n`)));
    proc.stdout?.on("data", (chunk: Buffer) => logs.add(chunk));
    proc.stderr?.on("data", (chunk: Buffer) => logs.add(chunk));
    await waitHealthy(api, proc, opts.startTimeoutMs ?? 60_000, logs);

    const admin = rest(api, adminToken);
    const suffix = randomBytes(4).toString("hex");
    const { human } = await admin<{ human: { id: string } }>("POST", "/api/admin/humans", {
      email: `sdk-ts+${suffix}@example.com`,
    });
    const { agent } = await admin<{ agent: { id: string } }>("POST", "/api/admin/agents", {
      human_id: human.id,
      name: `sdk-ts-${suffix}`,
    });
    const { token: agentToken } = await admin<{ token: string }>("POST", "/api/admin/credentials", {
      human_id: human.id,
      agent_id: agent.id,
      scopes: ["agent"],
    });
    const { token: tenantAdminToken } = await admin<{ token: string }>("POST", "/api/admin/credentials", {
      human_id: human.id,
      scopes: ["admin"],
    });
    return {
      node: { grpc, api, agentToken, adminToken, tenantAdminToken, humanId: human.id, agentId: agent.id, database, logs: () => logs.text() },
      stop,
    };
  } catch (err) {
    const tail = logs.text().slice(-8192);
    await stop().catch(() => {});
    throw new Error(`starting a test node failed: ${String(err)}${tail ? `\n--- node output (tail) ---\n${tail}` : ""}`, {
      cause: err,
    });
  }
}

/**
 * rest(api, token) returns a JSON caller for the REST gateway: it sends `body` as JSON with the
 * bearer token and resolves to the parsed response, rejecting on a non-2xx status.
 */
export function rest(api: string, token: string) {
  return async <T = unknown>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(api + path, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? null : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status}: ${text}`);
    return (text ? JSON.parse(text) : {}) as T;
  };
}

function requireEnv(name: string, what: string, fallback?: string): string {
  const value = process.env[name] || (fallback ? process.env[fallback] : undefined);
  if (!value) throw new Error(`set ${name}: ${what}`);
  return value;
}

/** The admin URL with its database path replaced, keeping user, host and query. */
function withDatabase(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * The node's environment: this process's, without anything that configures a Switchboard
 * node or tracing (a developer's shell may export them), plus `extra`.
 */
function nodeEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(SWITCHBOARD_|CLUSTER_|OTEL_|REALTIME_)/.test(key) || key === "DATABASE_URL") continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

/** Free TCP ports on 127.0.0.1 from 26000–26999, starting the scan at a random port. */
async function freePorts(count: number): Promise<number[]> {
  const low = 26000;
  const span = 1000;
  const start = Math.floor(Math.random() * span);
  const ports: number[] = [];
  for (let i = 0; i < span && ports.length < count; i++) {
    const port = low + ((start + i) % span);
    if (await canListen(port)) ports.push(port);
  }
  if (ports.length < count) throw new Error(`no ${count} free ports in ${low}–${low + span - 1}`);
  return ports;
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ host: "127.0.0.1", port, exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });
}

async function waitHealthy(api: string, proc: ChildProcess, timeoutMs: number, logs: LogBuffer): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "no answer";
  while (Date.now() < deadline) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new Error(`switchboard serve exited (${proc.exitCode ?? proc.signalCode}) before it was healthy`);
    }
    try {
      const res = await fetch(`${api}/health`, { signal: AbortSignal.timeout(2_000) });
      last = `HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`;
      if (res.status === 200) return;
    } catch (err) {
      last = String(err);
    }
    await sleep(100);
  }
  throw new Error(`GET ${api}/health not 200 within ${timeoutMs} ms (last: ${last}); ${logs.size()} bytes of output`);
}

/** SIGTERM, then wait for the exit (SIGKILL after 30 s). */
async function terminate(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = once(proc, "exit");
  proc.kill("SIGTERM");
  const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000);
  try {
    await exited;
  } finally {
    clearTimeout(timer);
  }
}

/** Keeps the last `max` bytes of a process's output. */
class LogBuffer {
  private chunks: Buffer[] = [];
  private bytes = 0;
  constructor(private readonly max: number) {}
  add(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    while (this.bytes > this.max && this.chunks.length > 1) {
      this.bytes -= this.chunks.shift()!.length;
    }
  }
  size(): number {
    return this.bytes;
  }
  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

/** url with the query parameter key set to value. */
function withParam(url: string, key: string, value: string): string {
  const u = new URL(url);
  u.searchParams.set(key, value);
  return u.toString();
}
