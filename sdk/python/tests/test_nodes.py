"""Nodes against a real node: the generated stubs, the bearer token, and
failover past a node that does not answer."""

from __future__ import annotations

import asyncio
import socket

import grpc
import pytest

from harness import Node
from switchboard_worker import Nodes, queue_pb2, queue_service_pb2


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"  # closed again when the block ends


async def test_claim_complete_and_a_repeated_ack_is_already(node: Node) -> None:
    todo = node.enqueue("py-basic", {"lang": "python"})
    async with Nodes([node.grpc], token=node.token, insecure=True) as nodes:
        claim = await nodes.stub().Claim(
            queue_service_pb2.ClaimRequest(queue="py-basic", worker_id="pytest", max_todos=1), timeout=30
        )
        assert [t.id for t in claim.todos] == [int(todo["id"])]
        got = claim.todos[0]
        assert got.lease_token > 0 and got.attempt == 1
        assert dict(got.payload) == {"lang": "python"}
        ack = queue_service_pb2.CompleteBatchRequest(
            items=[queue_service_pb2.CompleteRequest(id=got.id, lease_token=got.lease_token)]
        )
        first = await nodes.stub().CompleteBatch(ack, timeout=30)
        again = await nodes.stub().CompleteBatch(ack, timeout=30)
    assert [r.outcome for r in first.results] == [queue_service_pb2.BATCH_OUTCOME_OK]
    assert [r.outcome for r in again.results] == [queue_service_pb2.BATCH_OUTCOME_ALREADY]
    assert node.todo(got.id)["state"] == queue_pb2.TodoState.Name(queue_pb2.TODO_STATE_COMPLETED)


async def test_calls_without_the_token_are_unauthenticated(node: Node) -> None:
    async with Nodes([node.grpc]) as nodes:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await nodes.stub().Claim(queue_service_pb2.ClaimRequest(queue="q", worker_id="w", max_todos=1), timeout=30)
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_a_failing_node_is_passed_over(node: Node) -> None:
    dead = _closed_port()
    async with Nodes([dead, node.grpc], token=node.token, insecure=True) as nodes:
        channel = nodes._channels[0]
        state = channel.get_state(try_to_connect=True)
        async with asyncio.timeout(30):
            while state != grpc.ChannelConnectivity.TRANSIENT_FAILURE:
                await channel.wait_for_state_change(state)
                state = channel.get_state()
        for _ in range(6):  # round robin would have sent half of these to the dead node
            res = await nodes.stub().Claim(
                queue_service_pb2.ClaimRequest(queue="py-failover", worker_id="pytest", max_todos=1), timeout=30
            )
            assert len(res.todos) == 0


def test_a_token_needs_tls_or_an_explicit_insecure() -> None:
    with pytest.raises(ValueError, match="needs tls"):
        Nodes(["127.0.0.1:1"], token="secret")
    with pytest.raises(ValueError, match="no node address"):
        Nodes([])


def test_addresses_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_ADDRS", "127.0.0.1:1, 127.0.0.1:2")
    monkeypatch.setenv("SWITCHBOARD_TOKEN", "t")
    nodes = Nodes(insecure=True)
    assert nodes.targets == ["127.0.0.1:1", "127.0.0.1:2"]
