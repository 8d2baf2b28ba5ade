"""Worker against a real node: completions, failures, lease renewal and
loss, progress, and the release of held todos on shutdown."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pytest

from harness import Node
from switchboard_worker import Job, Nodes, Outcome, Permanent, RetryAfter, Worker, queue_pb2

Acks = dict[int, Outcome]


async def _run_until(worker: Worker, done: Callable[[], bool], timeout: float = 60) -> None:
    """Runs worker until done() holds, then stops it and waits for run()."""
    stop = asyncio.Event()
    run = asyncio.create_task(worker.run(stop))
    try:
        async with asyncio.timeout(timeout):
            while not done():
                if run.done():
                    run.result()  # raises what ended it
                    pytest.fail("run() returned before the condition held")
                await asyncio.sleep(0.01)
    finally:
        stop.set()
        await asyncio.wait_for(run, timeout)


def _worker(node: Node, nodes: Nodes, queue: str, handler: Any, acks: Acks, **opts: Any) -> Worker:
    def on_ack(todo: queue_pb2.Todo, outcome: Outcome, err: BaseException | None) -> None:
        assert todo.id not in acks, f"todo {todo.id} told twice"
        acks[todo.id] = outcome

    return Worker(nodes, queue, handler, worker_id="pytest", on_ack=on_ack, **opts)


@pytest.fixture
async def nodes(node: Node):  # type: ignore[no-untyped-def]
    async with Nodes([node.grpc], token=node.token, insecure=True) as n:
        yield n


async def test_completes_every_todo_with_its_result(node: Node, nodes: Nodes) -> None:
    ids = [int(node.enqueue("py-complete", {"n": i})["id"]) for i in range(20)]
    acks: Acks = {}

    async def echo(job: Job) -> dict[str, Any]:
        return {"echo": job.payload["n"]}

    w = _worker(node, nodes, "py-complete", echo, acks, concurrency=4, wait=1)
    await _run_until(w, lambda: len(acks) == 20)
    assert acks == {i: Outcome.COMPLETED for i in ids}
    assert w.stats().completed == 20 and w.stats().claimed == 20
    todo = node.todo(ids[3])
    assert todo["state"] == "TODO_STATE_COMPLETED" and todo["result"] == {"echo": 3}


async def test_a_plain_function_runs_in_a_thread(node: Node, nodes: Nodes) -> None:
    todo_id = int(node.enqueue("py-sync")["id"])
    acks: Acks = {}
    threads: list[int] = []

    def handler(job: Job) -> None:
        threads.append(threading.get_ident())

    await _run_until(_worker(node, nodes, "py-sync", handler, acks, wait=1), lambda: len(acks) == 1)
    assert acks == {todo_id: Outcome.COMPLETED}
    assert threads and threads[0] != threading.get_ident()


async def test_an_exception_fails_the_todo_with_its_message_and_delay(node: Node, nodes: Nodes) -> None:
    retry = int(node.enqueue("py-fail", {"k": "retry"})["id"])
    dead = int(node.enqueue("py-fail", {"k": "dead"})["id"])
    acks: Acks = {}

    async def handler(job: Job) -> None:
        if job.payload["k"] == "retry":
            raise RetryAfter(120, "the upstream is busy")
        raise Permanent("the input can never work")

    before = datetime.now(timezone.utc)
    await _run_until(_worker(node, nodes, "py-fail", handler, acks, wait=1), lambda: len(acks) == 2)
    assert acks == {retry: Outcome.FAILED, dead: Outcome.DEAD_LETTERED}
    t = node.todo(retry)
    assert t["state"] == "TODO_STATE_PENDING" and t["last_error"] == "the upstream is busy"
    run_at = datetime.fromisoformat(t["run_at"].replace("Z", "+00:00"))
    assert (run_at - before).total_seconds() >= 110, "the retry delay is honoured"
    d = node.todo(dead)
    assert d["state"] == "TODO_STATE_DEAD" and d["last_error"] == "the input can never work"


async def test_the_lease_is_renewed_past_lease_seconds_with_progress(node: Node, nodes: Nodes) -> None:
    todo_id = int(node.enqueue("py-lease")["id"])
    acks: Acks = {}
    seen: list[dict[str, Any]] = []

    async def slow(job: Job) -> None:
        job.progress({"pct": 50})
        # Past two lease lengths: only renewals keep the lease.
        deadline = time.monotonic() + 4.5
        while time.monotonic() < deadline:
            p = (await asyncio.to_thread(node.todo, job.id)).get("progress")
            if p and not seen:
                seen.append(p)
            await asyncio.sleep(0.2)

    w = _worker(node, nodes, "py-lease", slow, acks, lease_seconds=2, wait=1)
    await _run_until(w, lambda: len(acks) == 1)
    assert acks == {todo_id: Outcome.COMPLETED}
    assert w.stats().heartbeats >= 2
    assert seen == [{"pct": 50}], "progress reached the server with a renewal"


async def test_a_lost_lease_cancels_the_handler_and_sends_no_ack(node: Node, nodes: Nodes) -> None:
    todo_id = int(node.enqueue("py-lost")["id"])
    acks: Acks = {}
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def handler(job: Job) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    w = _worker(node, nodes, "py-lost", handler, acks, lease_seconds=3, wait=1)
    stop = asyncio.Event()
    run = asyncio.create_task(w.run(stop))
    try:
        await asyncio.wait_for(started.wait(), 30)
        # The tenant's administrator cancels the todo: its lease ends, and the
        # next renewal hears so.
        node.rest("POST", f"/api/todos/{todo_id}:cancel", {}, token=node.tenant_admin)
        await asyncio.wait_for(cancelled.wait(), 30)
    finally:
        stop.set()
        await asyncio.wait_for(run, 30)
    assert acks == {todo_id: Outcome.LEASE_LOST}
    assert node.todo(todo_id)["state"] == "TODO_STATE_CANCELLED"
    assert w.stats().completed == 0 and w.stats().released == 0


async def test_shutdown_releases_the_todos_still_running(node: Node, nodes: Nodes) -> None:
    ids = {int(node.enqueue("py-release")["id"]) for _ in range(3)}
    acks: Acks = {}
    running = 0

    async def stuck(job: Job) -> None:
        nonlocal running
        running += 1
        await asyncio.sleep(60)

    w = _worker(node, nodes, "py-release", stuck, acks, wait=1, shutdown_grace=0.2)
    await _run_until(w, lambda: running == 3)
    assert acks == {i: Outcome.RELEASED for i in ids}
    assert {node.todo(i)["state"] for i in ids} == {"TODO_STATE_PENDING"}
