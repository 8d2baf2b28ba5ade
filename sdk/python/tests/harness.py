"""A real Switchboard node for the SDK's tests, on a database of its own.

The node is the binary in SWITCHBOARD_BIN (``make build`` writes
bin/switchboard); the database is created on SWITCHBOARD_TEST_PG, else
TEST_DATABASE_URL (``eval "$(deploy/local/postgres.sh test)"``), and dropped
afterwards. The harness creates a tenant (a human), an agent and the agent's
credential over the node's REST API, as an operator would.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def _admin_url() -> str:
    url = os.environ.get("SWITCHBOARD_TEST_PG") or os.environ.get("TEST_DATABASE_URL")
    if not url:
        raise RuntimeError("set SWITCHBOARD_TEST_PG or TEST_DATABASE_URL (eval \"$(deploy/local/postgres.sh test)\")")
    return url


def _with_db(url: str, db: str, **params: str) -> str:
    u = urllib.parse.urlsplit(url)
    q = dict(urllib.parse.parse_qsl(u.query))
    q.update(params)
    return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + db, urllib.parse.urlencode(q), ""))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _psql(url: str, sql: str) -> None:
    subprocess.run(["psql", url, "-XAtqc", sql], check=True, capture_output=True, timeout=120)


@dataclass
class Node:
    """A running node: its gRPC address, REST base URL, the agent's token,
    the tenant administrator's (scope admin in the agent's tenant) and the
    operator's (the bootstrap administrator)."""

    grpc: str
    api: str
    token: str
    admin_token: str
    human: str
    database_url: str
    log: Path
    tenant_admin: str = ""
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def rest(self, method: str, path: str, body: object | None = None, token: str | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.api + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + (token or self.token))
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else {}

    def enqueue(self, queue: str, payload: dict | None = None, **fields: object) -> dict:
        """Enqueues one todo over REST as the agent; returns it."""
        body = {"kind": "test", "payload": payload or {}, **fields}
        return self.rest("POST", f"/api/queues/{queue}/todos", body)["todo"]

    def todo(self, todo_id: int | str) -> dict:
        return self.rest("GET", f"/api/todos/{todo_id}")["todo"]


def _wait_healthy(api: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"node exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(api + "/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.05)
    raise RuntimeError(f"node not healthy within {timeout} s:\n{log.read_text()[-3000:]}")


def start_node() -> Node:
    """Creates a database, migrates it, starts ``serve all`` on it and
    provisions an agent; stop it with :func:`stop_node`."""
    binary = os.environ.get("SWITCHBOARD_BIN") or str(REPO / "bin" / "switchboard")
    admin = _admin_url()
    db = "sdktest_" + secrets.token_hex(6)
    _psql(admin, f"CREATE DATABASE {db}")
    try:
        # The node's pools stay small: the suite shares the server's
        # connections with other tests.
        url = _with_db(admin, db)
        env = {**os.environ, "DATABASE_URL": url}
        subprocess.run([binary, "migrate", "up"], env=env, check=True, capture_output=True, timeout=120)
        admin_token = subprocess.run(
            [binary, "token", "generate"], check=True, capture_output=True, text=True, timeout=30
        ).stdout.strip()
        grpc_addr, http_addr = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
        log = Path(tempfile.mkstemp(prefix="switchboard-node-", suffix=".log")[1])
        env.update(
            DATABASE_URL=_with_db(admin, db, pool_max_conns="4"),
            SWITCHBOARD_GRPC_ADDR=grpc_addr,
            SWITCHBOARD_HTTP_ADDR=http_addr,
            CLUSTER_NODE_ID="sdk-" + secrets.token_hex(3),
            SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN=admin_token,
        )
        with log.open("wb") as out:
            proc = subprocess.Popen([binary, "serve", "all"], env=env, stdout=out, stderr=subprocess.STDOUT)
        api = "http://" + http_addr
        node = Node(grpc_addr, api, "", admin_token, "", url, log, proc=proc)
        _wait_healthy(api, proc, log)
        human = node.rest("POST", "/api/admin/humans", {"email": f"sdk+{secrets.token_hex(4)}@example.com"}, admin_token)
        node.human = human["human"]["id"]
        agent = node.rest("POST", "/api/admin/agents", {"human_id": node.human, "name": "sdk"}, admin_token)
        cred = node.rest(
            "POST",
            "/api/admin/credentials",
            {"human_id": node.human, "agent_id": agent["agent"]["id"], "scopes": ["agent"]},
            admin_token,
        )
        node.token = cred["token"]
        owner = node.rest("POST", "/api/admin/credentials", {"human_id": node.human, "scopes": ["admin"]}, admin_token)
        node.tenant_admin = owner["token"]
        return node
    except BaseException:
        _psql(admin, f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
        raise


def stop_node(node: Node) -> None:
    """SIGTERMs the node (SIGKILL after 30 s) and drops its database."""
    if node.proc is not None and node.proc.poll() is None:
        node.proc.send_signal(signal.SIGTERM)
        try:
            node.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            node.proc.kill()
            node.proc.wait()
    db = urllib.parse.urlsplit(node.database_url).path.lstrip("/")
    _psql(_admin_url(), f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    node.log.unlink(missing_ok=True)
