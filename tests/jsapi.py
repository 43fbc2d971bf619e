"""Shared helpers for minijs's own JetStream tests (the conformance suite has its own)."""
from __future__ import annotations

import json
from typing import Any


async def api(nc: Any, subject: str, body: Any = None) -> dict:
    """One ``$JS.API.<subject>`` request through nats-py; the decoded JSON reply."""
    payload = b"" if body is None else json.dumps(body).encode()
    msg = await nc.request(f"$JS.API.{subject}", payload, timeout=5)
    return json.loads(msg.data)


async def pull_consumer(nc: Any, msgs: int = 1, **config: Any) -> Any:
    """Memory stream ``S`` on ``s.>`` holding ``msgs`` messages on ``s.m`` (``m0``, ``m1``,
    ...), a durable pull consumer ``c`` (explicit acks unless ``config`` says otherwise), and a
    subscription on ``pull.>`` to use as the requests' reply subjects."""
    out = await api(nc, "STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"], "storage": "memory"})
    assert "error" not in out, out
    for i in range(msgs):
        await nc.request("s.m", b"m%d" % i, timeout=5)
    config.setdefault("ack_policy", "explicit")
    out = await api(nc, "CONSUMER.CREATE.S.c",
                    {"stream_name": "S", "config": {"durable_name": "c", **config}})
    assert "error" not in out, out
    return await nc.subscribe("pull.>")
