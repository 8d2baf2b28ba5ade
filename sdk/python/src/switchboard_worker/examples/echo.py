"""The echo worker: completes each todo of a queue with its payload.

Run it as ``python -m switchboard_worker.examples.echo``. It drains
SWITCHBOARD_QUEUE on the nodes in SWITCHBOARD_ADDRS (comma-separated) with
the token in SWITCHBOARD_TOKEN, and on SIGTERM or SIGINT stops claiming,
lets running handlers finish within the shutdown grace, releases the rest
and exits 0. The same knobs as the Go and TypeScript echo workers:
SWITCHBOARD_LEASE_SECONDS (30), SWITCHBOARD_CONCURRENCY (10) and
SWITCHBOARD_ECHO_DELAY_MS (0: how long each handler waits before it
completes, so a test can hold todos). Connections use TLS when
SWITCHBOARD_TLS_CA_FILE names a CA bundle or SWITCHBOARD_TLS=1 (the system's
roots); plaintext only to loopback addresses, or anywhere with
SWITCHBOARD_INSECURE=1.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import sys
from typing import Any

import grpc

from switchboard_worker import Job, Nodes, Worker
from switchboard_worker.nodes import addresses_from_env


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"echo: {name} must be a whole number, got {raw!r}") from None


def _loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _tls() -> grpc.ChannelCredentials | bool:
    ca = os.environ.get("SWITCHBOARD_TLS_CA_FILE", "")
    if ca:
        with open(ca, "rb") as f:
            return grpc.ssl_channel_credentials(root_certificates=f.read())
    return os.environ.get("SWITCHBOARD_TLS", "") in ("1", "true")


async def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s echo %(levelname)s %(message)s")
    queue = os.environ.get("SWITCHBOARD_QUEUE", "")
    addresses = addresses_from_env()
    if not queue or not addresses:
        print("echo: set SWITCHBOARD_QUEUE and SWITCHBOARD_ADDRS (and SWITCHBOARD_TOKEN)", file=sys.stderr)
        return 2
    tls = _tls()
    insecure = os.environ.get("SWITCHBOARD_INSECURE", "") in ("1", "true") or all(_loopback(a) for a in addresses)
    delay = _int_env("SWITCHBOARD_ECHO_DELAY_MS", 0) / 1000

    async def echo(job: Job) -> dict[str, Any]:
        if delay:
            await asyncio.sleep(delay)
        return job.payload

    try:
        nodes = Nodes(addresses, tls=tls, insecure=insecure and tls is False)
    except ValueError as err:
        print(f"echo: {err} (SWITCHBOARD_TLS=1, SWITCHBOARD_TLS_CA_FILE or SWITCHBOARD_INSECURE=1)", file=sys.stderr)
        return 2
    async with nodes:
        worker = Worker(
            nodes,
            queue,
            echo,
            concurrency=_int_env("SWITCHBOARD_CONCURRENCY", 10),
            lease_seconds=_int_env("SWITCHBOARD_LEASE_SECONDS", 30),
        )
        logging.info("draining %s on %s", queue, ",".join(addresses))
        await worker.run_until_signal()
        s = worker.stats()
        logging.info("stopped: %d claimed, %d completed, %d released", s.claimed, s.completed, s.released)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
