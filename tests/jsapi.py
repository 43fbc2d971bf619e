"""Shared helpers for minijs's own JetStream tests (the conformance suite has its own)."""
from __future__ import annotations

import json
from typing import Any


async def api(nc: Any, subject: str, body: Any = None) -> dict:
    """One ``$JS.API.<subject>`` request through nats-py; the decoded JSON reply."""
    payload = b"" if body is None else json.dumps(body).encode()
    msg = await nc.request(f"$JS.API.{subject}", payload, timeout=5)
    return json.loads(msg.data)
