"""pytest fixtures: one real node per test module (harness.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness import Node, start_node, stop_node


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    n = start_node()
    try:
        yield n
    finally:
        stop_node(n)
