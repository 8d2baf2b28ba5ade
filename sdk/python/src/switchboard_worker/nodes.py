"""Connections to one or several Switchboard nodes, with failover.

Leases live in the database, not in a node: when a node dies, a worker's
claims, heartbeats and acks go on through the others. :class:`Nodes` holds
one gRPC channel per address (so each host name is resolved, reconnected
and, over TLS, verified on its own) and hands out stubs round robin over
the channels that are not failing. A single target with a scheme, such as
``dns:///queue.internal:7000``, is one channel balanced round robin by gRPC
over every address the name resolves to.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from typing import Any

import grpc
import grpc.aio

from switchboard_worker._proto.switchboard.queue.v1 import queue_service_pb2_grpc

# Keepalive: a connection silent for 12 s is pinged, and a node that does not
# answer within 4 s is left (its RPCs fail over). The server lets a client
# ping every 10 s at most and closes the connection of one that pings more
# often (GOAWAY too_many_pings).
KEEPALIVE_TIME_MS = 12_000
KEEPALIVE_TIMEOUT_MS = 4_000
# Reconnect backoff tops out at 5 s, so a node that comes back is used again
# within seconds.
RECONNECT_MAX_BACKOFF_MS = 5_000

_CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
    ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.max_reconnect_backoff_ms", RECONNECT_MAX_BACKOFF_MS),
    ("grpc.lb_policy_name", "round_robin"),
]


def addresses_from_env() -> list[str]:
    """The node addresses in SWITCHBOARD_ADDRS (comma-separated), if any."""
    raw = os.environ.get("SWITCHBOARD_ADDRS", "")
    return [a.strip() for a in raw.split(",") if a.strip()]


class _Bearer(
    grpc.aio.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.aio.UnaryStreamClientInterceptor,  # type: ignore[misc]
):
    """Adds ``authorization: Bearer <token>`` to every call's metadata."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", "Bearer " + token)

    def _details(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        metadata = grpc.aio.Metadata(*(details.metadata or ()))
        metadata.add(*self._header)
        return grpc.aio.ClientCallDetails(
            details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
        )

    async def intercept_unary_unary(self, continuation, details, request):  # type: ignore[no-untyped-def]
        return await continuation(self._details(details), request)

    async def intercept_unary_stream(self, continuation, details, request):  # type: ignore[no-untyped-def]
        return await continuation(self._details(details), request)


class Nodes:
    """Channels to the nodes at ``addresses``, handing out QueueService stubs.

    ``addresses`` are ``host:port`` entries (default: SWITCHBOARD_ADDRS), or
    one target with a scheme. ``token`` (default: SWITCHBOARD_TOKEN) is sent
    with every call as a bearer token. A token goes only over TLS (``tls``:
    True for the system's roots, or ``grpc.ssl_channel_credentials(...)``)
    unless ``insecure=True`` says plaintext is fine (loopback, or a mesh
    that encrypts for you), as gRPC itself refuses to send call credentials
    in the clear. Channels connect lazily; close them with :meth:`close` or
    ``async with``.
    """

    def __init__(
        self,
        addresses: Sequence[str] | str | None = None,
        *,
        token: str | None = None,
        tls: bool | grpc.ChannelCredentials = False,
        insecure: bool = False,
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        if isinstance(addresses, str):
            addresses = [a.strip() for a in addresses.split(",") if a.strip()]
        targets = list(addresses) if addresses is not None else addresses_from_env()
        if not targets:
            raise ValueError("switchboard_worker: no node address (pass addresses or set SWITCHBOARD_ADDRS)")
        if token is None:
            token = os.environ.get("SWITCHBOARD_TOKEN") or None
        if token and not tls and not insecure:
            raise ValueError("switchboard_worker: a token needs tls, or insecure=True to send it in plaintext")
        creds: grpc.ChannelCredentials | None = None
        if tls is True:
            creds = grpc.ssl_channel_credentials()
        elif isinstance(tls, grpc.ChannelCredentials):
            creds = tls
        interceptors = [_Bearer(token)] if token else []
        opts = _CHANNEL_OPTIONS + list(options)
        self.targets = targets
        self._channels: list[grpc.aio.Channel] = [
            grpc.aio.secure_channel(t, creds, options=opts, interceptors=interceptors)
            if creds is not None
            else grpc.aio.insecure_channel(t, options=opts, interceptors=interceptors)
            for t in targets
        ]
        self._stubs = [queue_service_pb2_grpc.QueueServiceStub(c) for c in self._channels]
        self._next = itertools.count()

    def stub(self) -> queue_service_pb2_grpc.QueueServiceStub:
        """The next node's stub, round robin, passing over nodes whose
        connection is failing (while gRPC reconnects to them with backoff).
        When every node is failing it still returns one: a call then waits
        for a connection (wait_for_ready) or fails as UNAVAILABLE."""
        n = len(self._stubs)
        start = next(self._next)
        for i in range(n):
            k = (start + i) % n
            state = self._channels[k].get_state(try_to_connect=True)
            if state not in (grpc.ChannelConnectivity.TRANSIENT_FAILURE, grpc.ChannelConnectivity.SHUTDOWN):
                return self._stubs[k]
        return self._stubs[start % n]

    async def close(self) -> None:
        """Closes every channel; calls in flight are cancelled."""
        for c in self._channels:
            await c.close()

    async def __aenter__(self) -> Nodes:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
