"""What a stream holds, read back message by message through ``STREAM.MSG.GET``: for cases
that compare a stream's whole content (mirrors, sources, retention), where the state's
counters alone would hide a wrong message."""
from __future__ import annotations

import base64
from typing import Any

from conformance.jshelpers import JsClient, wait_for


def get(js: JsClient, stream: str, seq: int) -> dict[str, Any] | None:
    """``message`` of STREAM.MSG.GET, None when there is none."""
    out = js.msg_get(stream, {"seq": seq})
    if "error" in out:
        assert out["error"]["err_code"] == 10037, out
        return None
    return out["message"]


def hdrs(message: dict[str, Any]) -> bytes:
    """The header block of a STREAM.MSG.GET ``message`` (b"" when it has none)."""
    return base64.b64decode(message.get("hdrs", ""))


def messages(js: JsClient, stream: str) -> list[dict[str, Any]]:
    """Every stored message, in sequence order."""
    st = js.state(stream)
    out = []
    for seq in range(max(st["first_seq"], 1), st["last_seq"] + 1):
        m = get(js, stream, seq)
        if m is not None:
            out.append(m)
    return out


def wait_messages(js: JsClient, stream: str, count: int, timeout: float = 10.0) -> dict[str, Any]:
    """Poll until ``stream`` holds ``count`` messages; return its state."""
    return wait_for(lambda: (st := js.state(stream))["messages"] == count and st, timeout)


def origin_seqs(js: JsClient, stream: str) -> list[int]:
    """Origin sequences named by each stored message's ``Nats-Stream-Source`` header."""
    out = []
    for m in messages(js, stream):
        value = dict(line.split(": ", 1) for line in hdrs(m).decode().split("\r\n")[1:] if line)
        out.append(int(value["Nats-Stream-Source"].split(" ")[1]))
    return out
