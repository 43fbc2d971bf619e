"""Reading a JetStream cluster through the API, for the cluster cases: raft peer ids, the
leader of an asset, whether every replica of it is current, and publishing until a stream's
leader acknowledges. Polls wait for replies no longer than the cluster's ``reply_timeout``
(:func:`quick`), so a check against a node without a leader fails fast and is retried."""
from __future__ import annotations

import uuid
from typing import Any

from conformance.cluster import Cluster
from conformance.jshelpers import JsClient, get_hash


def peer_id(server_name: str) -> str:
    """A server's raft peer id: nats-server's ``getHash`` of its name."""
    return get_hash(server_name)


def quick(js: JsClient) -> float:
    """How long a polled check waits for a reply (the cluster's ``reply_timeout``)."""
    return float(getattr(js, "reply_timeout", 1.0))


def all_current(js: JsClient, suffix: str) -> dict[str, Any] | None:
    """The info reply of ``suffix`` (STREAM.INFO.X, CONSUMER.INFO.X.Y) once it has a leader,
    every replica is current and no change of peers is under way (no ``desired``), else
    None."""
    out = js.api(suffix, timeout=quick(js))
    ci = out.get("cluster", {})
    if "error" in out or not ci.get("leader") or "desired" in ci:
        return None
    if any(not r["current"] or "lag" in r for r in ci.get("replicas", [])):
        return None
    return out


def leader_of(js: JsClient, suffix: str) -> str | None:
    out = js.api(suffix, timeout=quick(js))
    return out.get("cluster", {}).get("leader")


async def stored(cluster: Cluster, js: JsClient, subject: str, data: bytes = b"",
                 headers: bytes | None = None) -> int:
    """Publish until the stream acknowledges; returns the sequence. A stream's subjects are
    subscribed on its leader's node only, and until that interest has crossed the routes
    (after a create, a stepdown, a move) a publish from another node gets the 503
    no-responders status. Retries carry one ``Nats-Msg-Id``, so nothing is stored twice."""
    if headers is None:
        headers = f"NATS/1.0\r\nNats-Msg-Id: {uuid.uuid4().hex}\r\n\r\n".encode()

    def attempt() -> int | None:
        try:
            m = js.publish(subject, data, headers, timeout=quick(js))
        except TimeoutError:
            return None
        if m.status:
            return None
        ack = m.json()
        assert "error" not in ack, ack
        return int(ack["seq"])
    return int(await cluster.wait_until(attempt, timeout=30,
                                        what=f"publish to {subject} acknowledged"))
