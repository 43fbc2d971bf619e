"""The conformance suite's process clusters start again on fresh ports when a node loses one
of its ports to another program between the choice and the bind.

nats-server opens its route listener after it logs ``Server is ready`` and exits when that
port is taken, so a node can come up and die: the cluster start must see the address in use
in the node's log and start over, not fail the case that asked for the cluster.
"""
from __future__ import annotations

import socket

import pytest

from conformance import cluster as conformance_cluster
from conformance.servers import free_port


@pytest.mark.parametrize("target", ["nats-server", "minijs"])
def test_route_port_taken_meanwhile(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    busy = taken.getsockname()[1]
    handed: list[int] = []

    def ports() -> int:
        # node 2's route port (the fifth port chosen) is the busy one, the first time only
        port = busy if len(handed) == 4 else free_port()
        handed.append(port)
        return port

    monkeypatch.setattr(conformance_cluster, "free_port", ports)
    try:
        c = conformance_cluster.start_cluster(target, size=2, jetstream=False, processes=True)
        try:
            assert busy in handed and len(handed) > 6  # a second start, on fresh ports
            assert len(c.nodes) == 2
        finally:
            c.stop()
    finally:
        taken.close()
