"""Pull consumers on the wire, for the conformance cases: :func:`pull` sends one
``CONSUMER.MSG.NEXT`` request on an inbox of its own and collects what comes back;
:class:`Pull` is a stream with a durable pull consumer ``c``, the fixture most pull cases
start from. Deliveries are read with :class:`~conformance.jshelpers.Sub` (by sid: they carry
the stored subject)."""
from __future__ import annotations

import time
from typing import Any

from conformance.jshelpers import JsClient, Msg, Sub


def pull(js: JsClient, subject: str, body: Any = None, **kw: Any) -> list[Msg]:
    """Send a MSG.NEXT request (``subject``) on its own inbox and collect the replies
    (``kw``: :meth:`Sub.collect`'s ``until_status``, ``count``, ``timeout``)."""
    inbox = Sub(js)
    js.send(subject, body, reply=inbox.subject)
    return inbox.collect(**kw)


class Pull:
    """Stream ``<name>`` on ``<p>.>`` (``p`` its name in lower case) holding ``msgs``
    messages ``m0``, ``m1``, ... on ``<p>.m``, with a durable pull consumer ``c`` (explicit
    acks unless ``config`` says otherwise)."""

    def __init__(self, js: JsClient, name: str, msgs: int = 0, stream: dict | None = None,
                 **config: Any) -> None:
        self.js, self.name, self.p = js, name, name.lower()
        js.create(name, subjects=[f"{self.p}.>"], **(stream or {}))
        for i in range(msgs):
            js.pub_ok(f"{self.p}.m", b"m%d" % i)
        config.setdefault("ack_policy", "explicit")
        js.create_consumer(name, {"durable_name": "c", **config}, "c")
        self.next_subject = f"$JS.API.CONSUMER.MSG.NEXT.{name}.c"

    def next(self, body: Any = None, **kw: Any) -> list[Msg]:
        """One pull request and its replies (see :func:`pull`)."""
        return pull(self.js, self.next_subject, body, **kw)

    def send(self, body: Any = None) -> Sub:
        """Send a pull request without reading; its inbox, to read later."""
        inbox = Sub(self.js)
        self.js.send(self.next_subject, body, reply=inbox.subject)
        return inbox

    def info(self) -> dict[str, Any]:
        return self.js.api(f"CONSUMER.INFO.{self.name}.c")

    def wait_waiting(self, n: int) -> None:
        """nats-server queues pull requests asynchronously: wait until ``n`` are waiting."""
        deadline = time.monotonic() + 5
        while self.info()["num_waiting"] != n:
            assert time.monotonic() < deadline, "pull request never queued"
            time.sleep(0.02)

    def ack(self, m: Msg, body: bytes = b"") -> Msg:
        """Ack ``m`` (``body``: ``+NAK``, ``+TERM``, ...) as a request; the server's reply."""
        return self.js.request(m.reply or "", body)
