"""The worker: claims todos from one queue and runs a handler over each.

It keeps at most ``concurrency`` todos in hand. Each todo's lease is renewed
every ``lease_seconds / 3`` with HeartbeatBatch (one call for every todo in
hand, carrying the handlers' progress) from the claim until its outcome is
confirmed. A handler that returns completes its todo (CompleteBatch, shared
by the completions of ``ack_delay``); one that raises fails it (Fail, with
:class:`RetryAfter`'s delay, or dead-lettered by :class:`Permanent`).
Acknowledgements are idempotent on the server, so one whose answer was lost
to a transient error is sent again (ALREADY counts as confirmed) for as long
as its lease could still be alive and at most ``ack_timeout``. When the
server says a lease is gone, the todo's handler is cancelled and nothing is
acknowledged for it. On stop, claiming ends, handlers get ``shutdown_grace``
to finish, and the todos of those still running are released.

Handlers may be ``async def`` functions or plain ones; plain ones run in a
thread pool (``executor``, default the event loop's).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
import logging
import os
import random
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass, fields
from typing import Any, Union

from google.protobuf import duration_pb2, json_format, struct_pb2

from switchboard_worker._proto.switchboard.queue.v1 import queue_pb2, queue_service_pb2 as pb
from switchboard_worker.errors import LEASE_GONE, Permanent, RetryAfter, code_of, is_transient
from switchboard_worker.job import Job
from switchboard_worker.nodes import Nodes
from switchboard_worker.outcome import Outcome

log = logging.getLogger("switchboard_worker")

Handler = Callable[[Job], Union[Awaitable[Any], Any]]
OnAck = Callable[[queue_pb2.Todo, Outcome, Union[BaseException, None]], None]

# Limits of the QueueService contract.
MAX_BATCH = 1000
MAX_WAIT_SECONDS = 60.0
# Retry backoff of acknowledgements (jittered, doubling) and of claims.
ACK_BACKOFF = (0.05, 2.0)
CLAIM_BACKOFF = (0.1, 10.0)


@dataclass
class Stats:
    """Counters of a worker's life so far (a snapshot from Worker.stats)."""

    claimed: int = 0
    completed: int = 0
    failed: int = 0
    dead_lettered: int = 0
    released: int = 0
    lease_lost: int = 0
    unconfirmed: int = 0
    acks_retried: int = 0
    acks_already: int = 0
    heartbeats: int = 0
    claim_errors: int = 0


@dataclass
class _Held:
    """A todo in hand, from its claim until its outcome is settled."""

    job: Job
    lease_token: int
    expires: float  # monotonic time the lease surely lasts until
    task: asyncio.Task[None] | None = None
    lost: bool = False
    settled: bool = False
    # An acknowledgement attempt is in flight: no heartbeat is sent for the
    # todo meanwhile, and a heartbeat's "stale" answer is ignored (it may
    # have crossed the completion that ended the lease).
    acking: bool = False


def _backoff(attempt: int, bounds: tuple[float, float]) -> float:
    lo, hi = bounds
    return min(hi, lo * 2**attempt) * random.uniform(0.5, 1.0)


class Worker:
    """Drains ``queue`` with ``handler``; see the module documentation.

    ``worker_id`` names this process to the server (default
    ``hostname-pid``). ``on_ack(todo, outcome, error)`` is told every claimed
    todo's final :class:`Outcome` exactly once, from the event loop; it must
    not block.
    """

    def __init__(
        self,
        nodes: Nodes,
        queue: str,
        handler: Handler,
        *,
        worker_id: str | None = None,
        concurrency: int = 10,
        lease_seconds: int = 30,
        heartbeat_interval: float | None = None,
        wait: float = 10.0,
        shutdown_grace: float = 10.0,
        ack_batch: int = 500,
        ack_delay: float = 0.002,
        ack_timeout: float = 300.0,
        on_ack: OnAck | None = None,
        executor: Executor | None = None,
    ) -> None:
        if not 1 <= lease_seconds <= 3600:
            raise ValueError("lease_seconds must be 1-3600")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if not 1 <= ack_batch <= MAX_BATCH:
            raise ValueError(f"ack_batch must be 1-{MAX_BATCH}")
        if not 0 <= wait <= MAX_WAIT_SECONDS:
            raise ValueError(f"wait must be 0-{MAX_WAIT_SECONDS:.0f} s")
        self.nodes = nodes
        self.queue = queue
        self.handler = handler
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}"
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        self.heartbeat_interval = heartbeat_interval or lease_seconds / 3
        self.wait = wait
        self.shutdown_grace = shutdown_grace
        self.ack_batch = ack_batch
        self.ack_delay = ack_delay
        self.ack_timeout = ack_timeout
        self.on_ack = on_ack
        self.executor = executor
        self._stats = Stats()
        self._held: dict[int, _Held] = {}
        self._running = 0
        self._slot_free: asyncio.Event | None = None
        self._completions: asyncio.Queue[tuple[_Held, struct_pb2.Struct | None]] | None = None
        self._acks: set[asyncio.Future[None]] = set()
        # Completions handed to the batcher and not yet in an ack task.
        self._queued = 0

    def stats(self) -> Stats:
        """A snapshot of the counters."""
        return Stats(**{f.name: getattr(self._stats, f.name) for f in fields(Stats)})

    # --- running -----------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Claims and handles todos until ``stop`` is set (or the task running
        it is cancelled), then shuts down: claiming ends, handlers get
        shutdown_grace to finish, the rest are cancelled and their todos
        released, and every outcome is settled before it returns."""
        stop = stop or asyncio.Event()
        self._slot_free = asyncio.Event()
        self._completions = asyncio.Queue()
        heartbeats = asyncio.create_task(self._heartbeat_loop(), name="switchboard-heartbeats")
        batcher = asyncio.create_task(self._complete_loop(), name="switchboard-acks")
        claims = asyncio.create_task(self._claim_loop(), name="switchboard-claims")
        stopped = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({claims, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            claims.cancel()
            stopped.cancel()
            await asyncio.gather(claims, stopped, return_exceptions=True)
            await self._shutdown()
            heartbeats.cancel()
            batcher.cancel()
            await asyncio.gather(heartbeats, batcher, return_exceptions=True)
        if claims.done() and not claims.cancelled() and claims.exception() is not None:
            raise claims.exception()  # type: ignore[misc]

    async def run_until_signal(self) -> None:
        """run() until SIGTERM or SIGINT, as a supervised process drains."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            await self.run(stop)
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    async def _shutdown(self) -> None:
        tasks = [h.task for h in self._held.values() if h.task is not None and not h.task.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=self.shutdown_grace)
        for h in list(self._held.values()):
            if h.task is not None and not h.task.done():
                h.task.cancel()  # its handler sees CancelledError; the todo is released
        tasks = [h.task for h in self._held.values() if h.task is not None]
        await asyncio.gather(*tasks, return_exceptions=True)
        # Completions still queued or being retried settle before run returns.
        while self._acks or self._queued:
            if self._acks:
                await asyncio.wait(set(self._acks))
            else:
                await asyncio.sleep(self.ack_delay or 0.001)
        for h in list(self._held.values()):  # no path left that could settle it
            log.error("todo %d ended without an outcome", h.job.id)
            self._settle(h, Outcome.UNCONFIRMED, RuntimeError("the worker stopped without an outcome"))

    # --- claiming ------------------------------------------------------------

    async def _claim_loop(self) -> None:
        assert self._slot_free is not None
        failures = 0
        while True:
            free = self.concurrency - self._running
            if free <= 0:
                self._slot_free.clear()
                await self._slot_free.wait()
                continue
            req = pb.ClaimRequest(
                queue=self.queue,
                worker_id=self.worker_id,
                max_todos=min(free, MAX_BATCH),
                lease_seconds=self.lease_seconds,
                wait=duration_pb2.Duration(seconds=int(self.wait), nanos=int(self.wait % 1 * 1e9)),
            )
            sent = time.monotonic()
            try:
                res = await self.nodes.stub().Claim(req, timeout=self.wait + 30)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # noqa: BLE001 - every failed claim backs off the same way
                self._stats.claim_errors += 1
                code = code_of(err)
                if code is not None and code not in LEASE_GONE and not is_transient(err):
                    # INVALID_ARGUMENT, PERMISSION_DENIED, UNAUTHENTICATED...: no
                    # retry will change the answer.
                    raise
                delay = _backoff(failures, CLAIM_BACKOFF)
                failures += 1
                log.warning("claim failed (%s); retrying in %.2f s", code or err, delay)
                await asyncio.sleep(delay)
                continue
            failures = 0
            for todo in res.todos:
                self._start(todo, sent)

    def _start(self, todo: queue_pb2.Todo, sent: float) -> None:
        self._stats.claimed += 1
        h = _Held(job=Job(todo), lease_token=int(todo.lease_token), expires=sent + self.lease_seconds)
        self._held[h.job.id] = h
        self._running += 1
        h.task = asyncio.create_task(self._handle(h), name=f"switchboard-todo-{h.job.id}")

    def _free_slot(self) -> None:
        self._running -= 1
        if self._slot_free is not None:
            self._slot_free.set()

    # --- handling --------------------------------------------------------------

    async def _handle(self, h: _Held) -> None:
        try:
            try:
                if inspect.iscoroutinefunction(self.handler):
                    result = await self.handler(h.job)
                else:
                    ctx = contextvars.copy_context()
                    loop = asyncio.get_running_loop()
                    result = await loop.run_in_executor(self.executor, ctx.run, self.handler, h.job)
                    if inspect.isawaitable(result):
                        result = await result
                completion = _result_struct(result)
            except asyncio.CancelledError:
                if not h.lost:  # lost: told already, nothing to acknowledge
                    self._spawn_ack(self._release(h))  # shutdown past its grace
                return
            except Exception as err:  # noqa: BLE001 - a handler's exception is the todo's failure
                if not h.lost:
                    self._spawn_ack(self._fail(h, err))
                return
            if h.lost:
                return
            assert self._completions is not None
            self._queued += 1
            self._completions.put_nowait((h, completion))
        finally:
            self._free_slot()

    def _spawn_ack(self, ack: Awaitable[None]) -> None:
        """Runs a Fail or Release as a task of its own, which shutdown waits
        for: cancelling a handler past the grace must not cancel its ack,
        and its slot frees at once (as a completion's does)."""
        task = asyncio.ensure_future(ack)
        self._acks.add(task)
        task.add_done_callback(self._acks.discard)

    # --- lease renewal -----------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            held = [h for h in self._held.values() if not h.settled and not h.lost and not h.acking]
            for i in range(0, len(held), MAX_BATCH):
                await self._heartbeat(held[i : i + MAX_BATCH])

    async def _heartbeat(self, batch: list[_Held]) -> None:
        items, progress = [], {}
        for h in batch:
            p = h.job.take_progress()
            if p is not None:
                progress[h.job.id] = p
            items.append(
                pb.HeartbeatRequest(id=h.job.id, lease_token=h.lease_token, lease_seconds=self.lease_seconds, progress=p)
            )
        sent = time.monotonic()
        try:
            res = await self.nodes.stub().HeartbeatBatch(pb.HeartbeatBatchRequest(items=items), timeout=self.heartbeat_interval)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - the next round tries again
            log.warning("heartbeat of %d todos failed: %s", len(items), code_of(err) or err)
            for h in batch:
                if h.job.id in progress:
                    h.job.restore_progress(progress[h.job.id])
            return
        self._stats.heartbeats += 1
        by_id = {h.job.id: h for h in batch}
        for r in res.results:
            h = by_id.get(int(r.id))
            if h is None:
                continue
            if r.outcome == pb.BATCH_OUTCOME_OK:
                h.expires = sent + self.lease_seconds
            elif r.outcome in (pb.BATCH_OUTCOME_STALE_LEASE, pb.BATCH_OUTCOME_NOT_FOUND) and not h.acking:
                self._lose(h, "the server says the lease is gone")

    def _lose(self, h: _Held, why: str) -> None:
        if h.settled or h.lost:
            return
        h.lost = True
        h.job.lease_lost.set()
        if h.task is not None and not h.task.done() and inspect.iscoroutinefunction(self.handler):
            h.task.cancel()
        self._settle(h, Outcome.LEASE_LOST, RuntimeError(why))

    # --- acknowledgements ----------------------------------------------------------

    def _settle(self, h: _Held, outcome: Outcome, err: BaseException | None = None) -> None:
        if h.settled:
            return
        h.settled = True
        self._held.pop(h.job.id, None)
        counter = {
            Outcome.COMPLETED: "completed",
            Outcome.FAILED: "failed",
            Outcome.DEAD_LETTERED: "dead_lettered",
            Outcome.RELEASED: "released",
            Outcome.LEASE_LOST: "lease_lost",
            Outcome.UNCONFIRMED: "unconfirmed",
        }[outcome]
        setattr(self._stats, counter, getattr(self._stats, counter) + 1)
        if self.on_ack is not None:
            try:
                self.on_ack(h.job.todo, outcome, err)
            except Exception:  # noqa: BLE001 - a failing hook must not stop the worker
                log.exception("on_ack raised")

    def _deadline(self, h: _Held, started: float) -> float:
        """When retrying h's ack stops: its lease could have expired, or
        ack_timeout passed."""
        return min(h.expires, started + self.ack_timeout)

    async def _complete_loop(self) -> None:
        assert self._completions is not None
        while True:
            first = await self._completions.get()
            batch = [first]
            deadline = time.monotonic() + max(self.ack_delay, 0)
            while len(batch) < self.ack_batch:
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(self._completions.get(), timeout))
                except asyncio.TimeoutError:
                    break
            self._queued -= len(batch)
            self._spawn_ack(self._complete(batch))

    async def _complete(self, batch: list[tuple[_Held, struct_pb2.Struct | None]]) -> None:
        started = time.monotonic()
        pending = {h.job.id: (h, result) for h, result in batch}
        for attempt in itertools.count():
            live = {i: v for i, v in pending.items() if not v[0].settled}
            if not live:
                return
            req = pb.CompleteBatchRequest(
                items=[pb.CompleteRequest(id=i, lease_token=h.lease_token, result=r) for i, (h, r) in live.items()]
            )
            for h, _ in live.values():
                h.acking = True
            try:
                res = await self.nodes.stub().CompleteBatch(req, timeout=30)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # noqa: BLE001 - sorted below
                for h, _ in live.values():
                    h.acking = False
                if not is_transient(err):
                    for h, _ in live.values():
                        self._settle(h, Outcome.UNCONFIRMED, err)
                    log.error("complete of %d todos failed: %s", len(live), err)
                    return
                delay = _backoff(attempt, ACK_BACKOFF)
                for h, _ in live.values():
                    if time.monotonic() + delay > self._deadline(h, started):
                        self._settle(h, Outcome.UNCONFIRMED, err)
                self._stats.acks_retried += 1
                await asyncio.sleep(delay)
                continue
            for r in res.results:
                entry = live.get(int(r.id))
                if entry is None:
                    continue
                h = entry[0]
                if r.outcome == pb.BATCH_OUTCOME_OK:
                    self._settle(h, Outcome.COMPLETED)
                elif r.outcome == pb.BATCH_OUTCOME_ALREADY:
                    self._stats.acks_already += 1
                    self._settle(h, Outcome.COMPLETED)
                else:
                    self._settle(h, Outcome.LEASE_LOST, RuntimeError(pb.BatchOutcome.Name(r.outcome)))
            for h, _ in live.values():  # an item the server did not answer
                self._settle(h, Outcome.UNCONFIRMED, RuntimeError("no result for this todo"))
            return

    async def _fail(self, h: _Held, err: Exception) -> None:
        message = str(err) or type(err).__name__
        req = pb.FailRequest(id=h.job.id, lease_token=h.lease_token, error=message[:4096])
        if isinstance(err, RetryAfter):
            req.retry_after.FromNanoseconds(int(max(err.seconds, 0) * 1e9))
        if isinstance(err, Permanent):
            req.dead_letter = True

        async def call() -> Outcome:
            res = await self.nodes.stub().Fail(req, timeout=30)
            if res.todo.state == queue_pb2.TODO_STATE_DEAD:
                return Outcome.DEAD_LETTERED
            return Outcome.FAILED

        await self._ack(h, call)

    async def _release(self, h: _Held) -> None:
        async def call() -> Outcome:
            await self.nodes.stub().Release(pb.ReleaseRequest(id=h.job.id, lease_token=h.lease_token), timeout=30)
            return Outcome.RELEASED

        await self._ack(h, call)

    async def _ack(self, h: _Held, call: Callable[[], Awaitable[Outcome]]) -> None:
        """Runs one single-todo acknowledgement, retried after transient
        errors while its lease may be alive."""
        started = time.monotonic()
        for attempt in itertools.count():
            if h.settled:
                return
            h.acking = True
            try:
                outcome = await call()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # noqa: BLE001 - sorted below
                h.acking = False
                code = code_of(err)
                if code in LEASE_GONE:
                    self._settle(h, Outcome.LEASE_LOST, err)
                    return
                delay = _backoff(attempt, ACK_BACKOFF)
                if not is_transient(err) or time.monotonic() + delay > self._deadline(h, started):
                    self._settle(h, Outcome.UNCONFIRMED, err)
                    return
                self._stats.acks_retried += 1
                await asyncio.sleep(delay)
                continue
            self._settle(h, outcome)
            return


def _result_struct(result: Any) -> struct_pb2.Struct | None:
    if result is None:
        return None
    if isinstance(result, struct_pb2.Struct):
        return result
    if not isinstance(result, dict):
        raise TypeError(f"a handler's result must be a dict (a JSON object) or None, not {type(result).__name__}")
    s = struct_pb2.Struct()
    json_format.ParseDict(result, s)
    return s
