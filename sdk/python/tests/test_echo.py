"""The echo example worker as a process: it completes todos with their
payload, and on SIGTERM releases what it holds and exits 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness import Node

SRC = Path(__file__).resolve().parents[1] / "src"


def _echo(node: Node, queue: str, **env: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "switchboard_worker.examples.echo"],
        env={
            **os.environ,
            "PYTHONPATH": str(SRC),
            "SWITCHBOARD_QUEUE": queue,
            "SWITCHBOARD_ADDRS": node.grpc,
            "SWITCHBOARD_TOKEN": node.token,
            **env,
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _wait(cond, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_echo_completes_with_the_payload(node: Node) -> None:
    ids = [int(node.enqueue("py-echo", {"n": i})["id"]) for i in range(5)]
    proc = _echo(node, "py-echo")
    try:
        _wait(lambda: all(node.todo(i)["state"] == "TODO_STATE_COMPLETED" for i in ids))
        assert [node.todo(i)["result"] for i in ids] == [{"n": i} for i in range(5)]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out.decode()


def test_echo_releases_held_todos_on_sigterm(node: Node) -> None:
    ids = [int(node.enqueue("py-echo-held")["id"]) for _ in range(3)]
    proc = _echo(node, "py-echo-held", SWITCHBOARD_ECHO_DELAY_MS="120000", SWITCHBOARD_LEASE_SECONDS="60")
    try:
        _wait(lambda: all(node.todo(i)["state"] == "TODO_STATE_RUNNING" for i in ids))
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out.decode()
    assert {node.todo(i)["state"] for i in ids} == {"TODO_STATE_PENDING"}, out.decode()
    assert b"3 released" in out


def test_echo_refuses_to_send_a_token_in_plaintext_off_loopback(node: Node) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "switchboard_worker.examples.echo"],
        env={**os.environ, "PYTHONPATH": str(SRC), "SWITCHBOARD_QUEUE": "q", "SWITCHBOARD_ADDRS": "192.0.2.1:9090",
             "SWITCHBOARD_TOKEN": node.token},
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 2 and b"needs tls" in proc.stderr
