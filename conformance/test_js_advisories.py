"""JetStream advisories as nats-server 2.15.1 publishes them.

* ``$JS.EVENT.ADVISORY.API`` (``api_audit``): one per handled JSON API request, success or
  error, also without a reply subject; a successful ``STREAM.MSG.GET`` is not audited. The
  ``request`` is the raw request body (omitted when empty), the ``response`` the exact reply
  text, ``client`` the requester's ``ClientInfo`` with omitempty fields in Go order.
* ``$JS.EVENT.ADVISORY.STREAM.{CREATED,UPDATED,DELETED}.<S>`` (``stream_action``) and
  ``CONSUMER.{CREATED,DELETED}.<S>.<C>`` (``consumer_action``).

Variable values (ids, times, rtt) are checked by type and format; field names and order, and
the stable values, exactly.
"""
from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from nats.aio.client import __version__ as NATS_PY_VERSION

from conformance.helpers import NatsFactory, SpawnFn, ensure_subs

AUDIT = "$JS.EVENT.ADVISORY.API"
AUDIT_TYPE = "io.nats.jetstream.advisory.v1.api_audit"
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")
NUID_RE = re.compile(r"^[0-9A-Za-z]{22}$")
CLIENT_NAME = "adv-client"


class Collector:
    """Collects the messages of one subscription (filtered by a predicate on the payload)."""

    def __init__(self) -> None:
        self.msgs: list[tuple[str, bytes]] = []

    async def cb(self, msg: Any) -> None:
        self.msgs.append((msg.subject, msg.data))

    async def wait_for(self, pred: Any, count: int, timeout: float = 3.0) -> list[dict]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            found = [json.loads(d) for s, d in self.msgs if pred(s, d)]
            if len(found) >= count or loop.time() > deadline:
                return found
            await asyncio.sleep(0.02)


async def _observe(js_nats: NatsFactory, subject: str, endpoint: Any = None,
                   **kwargs: Any) -> Collector:
    obs = await js_nats(endpoint, **kwargs)
    col = Collector()
    await obs.subscribe(subject, cb=col.cb)
    await ensure_subs(obs)
    return col


def _audits_for(col: Collector, api_subject: str) -> Any:
    def pred(s: str, d: bytes) -> bool:
        return s == AUDIT and json.loads(d).get("subject") == api_subject
    return pred


def check_envelope(adv: dict, event_type: str) -> None:
    assert adv["type"] == event_type
    assert NUID_RE.match(adv["id"]), adv["id"]
    assert TIME_RE.match(adv["timestamp"]), adv["timestamp"]


def check_client(ci: dict, nc: Any, name: str | None = CLIENT_NAME,
                 user: str | None = None) -> None:
    """The requester's ClientInfo: Go field order, omitempty, values of a nats-py client."""
    server_name = nc._server_info["server_name"]
    keys = ["start", "host", "id", "acc"]
    if user is not None:
        keys.append("user")
    if name is not None:
        keys.append("name")
    keys += ["lang", "ver", "rtt", "server", "kind", "client_type"]
    assert list(ci) == keys, ci
    assert TIME_RE.match(ci["start"]), ci["start"]
    assert ci["host"] == "127.0.0.1"
    assert ci["id"] == nc.client_id
    assert ci["acc"] == "$G"
    if user is not None:
        assert ci["user"] == user
    if name is not None:
        assert ci["name"] == name
    assert ci["lang"] == "python3"
    assert ci["ver"] == NATS_PY_VERSION
    assert isinstance(ci["rtt"], int) and ci["rtt"] > 0
    assert ci["server"] == server_name
    assert ci["kind"] == "Client"
    assert ci["client_type"] == "nats"


def check_audit(adv: dict, nc: Any, api_subject: str, request: bytes, response: bytes,
                **client_kw: Any) -> None:
    check_envelope(adv, AUDIT_TYPE)
    keys = ["type", "id", "timestamp", "server", "client", "subject"]
    if request:
        keys.append("request")
    keys.append("response")
    assert list(adv) == keys, adv
    assert adv["server"] == nc._server_info["server_name"]
    check_client(adv["client"], nc, **client_kw)
    assert adv["subject"] == api_subject
    if request:
        assert adv["request"] == request.decode()
    assert adv["response"] == response.decode()


async def test_js_audit_stream_create(target: str, js_nats: NatsFactory,
                                      stream_name: str) -> None:
    """A successful STREAM.CREATE: request body verbatim, response = the exact reply bytes."""
    col = await _observe(js_nats, AUDIT)
    nc = await js_nats(name=CLIENT_NAME)
    p = stream_name.lower()
    subj = f"$JS.API.STREAM.CREATE.{stream_name}"
    body = json.dumps({"name": stream_name, "subjects": [f"{p}.>"], "storage": "memory"})
    try:
        reply = await nc.request(subj, body.encode(), timeout=3)
        assert json.loads(reply.data)["did_create"] is True
        [adv] = await col.wait_for(_audits_for(col, subj), 1)
        check_audit(adv, nc, subj, body.encode(), reply.data)
        # The request text keeps the client's bytes; Go escapes '>' inside the JSON string.
        assert adv["request"].endswith('"storage": "memory"}')
    finally:
        await nc.request(f"$JS.API.STREAM.DELETE.{stream_name}", b"", timeout=3)


async def test_js_audit_error_reply(target: str, js_nats: NatsFactory,
                                    stream_name: str) -> None:
    """An error reply is audited too; an empty request body leaves ``request`` out."""
    col = await _observe(js_nats, AUDIT)
    nc = await js_nats(name=CLIENT_NAME)
    subj = f"$JS.API.STREAM.INFO.{stream_name}"
    reply = await nc.request(subj, b"", timeout=3)
    err = json.loads(reply.data)
    assert err["error"]["err_code"] == 10059
    [adv] = await col.wait_for(_audits_for(col, subj), 1)
    check_audit(adv, nc, subj, b"", reply.data)
    assert "request" not in adv
    assert json.loads(adv["response"]) == {
        "type": "io.nats.jetstream.api.v1.stream_info_response",
        "error": {"code": 404, "err_code": 10059, "description": "stream not found"},
        "total": 0, "offset": 0, "limit": 0}


async def test_js_audit_without_reply_subject(target: str, js_nats: NatsFactory,
                                              stream_name: str) -> None:
    """A request published without a reply is still handled and audited."""
    col = await _observe(js_nats, AUDIT)
    nc = await js_nats(name=CLIENT_NAME)
    subj = f"$JS.API.STREAM.INFO.{stream_name}"
    await nc.publish(subj, b"garbage")
    await nc.flush()
    [adv] = await col.wait_for(_audits_for(col, subj), 1)
    check_audit(adv, nc, subj, b"garbage",
                b'{"type":"io.nats.jetstream.api.v1.stream_info_response","error":{"code":404,'
                b'"err_code":10059,"description":"stream not found"},"total":0,"offset":0,'
                b'"limit":0}')


async def test_js_audit_consumer_create(target: str, js_nats: NatsFactory,
                                        stream_name: str) -> None:
    """Consumer endpoints are audited like stream ones; CONSUMER.CREATED is published."""
    nc = await js_nats(name=CLIENT_NAME)
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"], storage="memory")
    try:
        col = await _observe(js_nats, "$JS.EVENT.ADVISORY.>")
        subj = f"$JS.API.CONSUMER.CREATE.{stream_name}.C1"
        body = json.dumps({"stream_name": stream_name,
                           "config": {"durable_name": "C1", "ack_policy": "explicit"}})
        reply = await nc.request(subj, body.encode(), timeout=3)
        assert json.loads(reply.data)["name"] == "C1"
        [adv] = await col.wait_for(_audits_for(col, subj), 1)
        check_audit(adv, nc, subj, body.encode(), reply.data)
        created = f"$JS.EVENT.ADVISORY.CONSUMER.CREATED.{stream_name}.C1"
        [action] = await col.wait_for(lambda s, d: s == created, 1)
        check_envelope(action, "io.nats.jetstream.advisory.v1.consumer_action")
        assert list(action) == ["type", "id", "timestamp", "stream", "consumer", "action"]
        assert (action["stream"], action["consumer"], action["action"]) == (
            stream_name, "C1", "create")
    finally:
        await js.delete_stream(stream_name)


async def test_js_audit_msg_get_only_errors(target: str, js_nats: NatsFactory,
                                            stream_name: str) -> None:
    """A successful STREAM.MSG.GET is not audited; a failing one is."""
    nc = await js_nats(name=CLIENT_NAME)
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"], storage="memory")
    try:
        await js.publish(f"{p}.a", b"x")
        col = await _observe(js_nats, AUDIT)
        subj = f"$JS.API.STREAM.MSG.GET.{stream_name}"
        ok = await nc.request(subj, b'{"seq":1}', timeout=3)
        assert "message" in json.loads(ok.data)
        bad = await nc.request(subj, b'{"seq":9}', timeout=3)
        assert json.loads(bad.data)["error"]["err_code"] == 10037
        marker = f"$JS.API.STREAM.INFO.{stream_name}"
        await nc.request(marker, b"", timeout=3)
        await col.wait_for(_audits_for(col, marker), 1)
        gets = await col.wait_for(_audits_for(col, subj), 1, timeout=0.2)
        assert len(gets) == 1
        check_audit(gets[0], nc, subj, b'{"seq":9}', bad.data)
    finally:
        await js.delete_stream(stream_name)


async def test_js_stream_action_advisories(target: str, js_nats: NatsFactory,
                                           stream_name: str) -> None:
    """STREAM.CREATED / UPDATED / DELETED: exact fields, actions create/modify/delete, each
    each request audited too."""
    col = await _observe(js_nats, "$JS.EVENT.ADVISORY.>")
    nc = await js_nats(name=CLIENT_NAME)
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"], storage="memory")
    await js.update_stream(name=stream_name, subjects=[f"{p}.>"], storage="memory",
                           description="updated")
    # Re-creating with the same config is not a new stream: no second CREATED.
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"], storage="memory",
                        description="updated")
    await js.delete_stream(stream_name)
    mine = f".{stream_name}"

    def pred(s: str, d: bytes) -> bool:
        return s.startswith("$JS.EVENT.ADVISORY.STREAM.") and s.endswith(mine)

    actions = await col.wait_for(pred, 3)
    await asyncio.sleep(0.1)
    actions = [json.loads(d) for s, d in col.msgs if pred(s, d)]
    assert [s for s, d in col.msgs if pred(s, d)] == [
        f"$JS.EVENT.ADVISORY.STREAM.CREATED.{stream_name}",
        f"$JS.EVENT.ADVISORY.STREAM.UPDATED.{stream_name}",
        f"$JS.EVENT.ADVISORY.STREAM.DELETED.{stream_name}",
    ]
    for adv, action in zip(actions, ["create", "modify", "delete"]):
        check_envelope(adv, "io.nats.jetstream.advisory.v1.stream_action")
        assert list(adv) == ["type", "id", "timestamp", "stream", "action"]
        assert (adv["stream"], adv["action"]) == (stream_name, action)
    # Each request causing one is audited as well (nats-server sends the action advisory
    # and the audit from different goroutines, so their relative order is not fixed).
    audited = [json.loads(d)["subject"] for s, d in col.msgs
               if s == AUDIT and json.loads(d).get("subject", "").endswith(mine)]
    # (nor the order of the audits among themselves: compare them as a multiset).
    assert sorted(a.split(".")[3] for a in audited) == ["CREATE", "CREATE", "DELETE", "UPDATE"]
    assert len({a["id"] for a in actions}) == 3


async def test_js_audit_user_and_server_name(target: str, spawn: SpawnFn,
                                             js_nats: NatsFactory) -> None:
    """With user/password auth ``user`` (the user name) follows ``acc``; ``server`` and
    ``client.server`` carry the configured server name."""
    srv = spawn(config="server_name: advsrv\nauthorization { user: auditor, password: pw }\n",
                jetstream=True)
    col = await _observe(js_nats, AUDIT, srv, user="auditor", password="pw")
    nc = await js_nats(srv, name=CLIENT_NAME, user="auditor", password="pw")
    subj = "$JS.API.INFO"
    reply = await nc.request(subj, b"", timeout=3)
    [adv] = await col.wait_for(_audits_for(col, subj), 1)
    assert adv["server"] == "advsrv" and adv["client"]["server"] == "advsrv"
    check_audit(adv, nc, subj, b"", reply.data, user="auditor")


async def test_js_audit_token_redacted(target: str, spawn: SpawnFn,
                                       js_nats: NatsFactory) -> None:
    """With token auth the client's ``user`` is ``[REDACTED]``; an unnamed client has no
    ``name``."""
    srv = spawn(config="authorization { token: s3cret }\n", jetstream=True)
    col = await _observe(js_nats, AUDIT, srv, token="s3cret")
    nc = await js_nats(srv, token="s3cret")
    subj = "$JS.API.STREAM.NAMES"
    reply = await nc.request(subj, b"", timeout=3)
    [adv] = await col.wait_for(_audits_for(col, subj), 1)
    check_audit(adv, nc, subj, b"", reply.data, user="[REDACTED]", name=None)


async def test_js_api_counted_without_reply_subject(target: str, spawn: SpawnFn,
                                                    js_nats: NatsFactory) -> None:
    """Reply-less API requests still count in the account's ``api.total`` / ``api.errors``."""
    srv = spawn(jetstream=True)
    nc = await js_nats(srv)

    async def api() -> dict:
        return json.loads((await nc.request("$JS.API.INFO", b"", timeout=3)).data)["api"]

    assert await api() == {"level": 5, "total": 0, "errors": 0}
    await nc.publish("$JS.API.STREAM.INFO.NOPE", b"")
    await nc.publish("$JS.API.STREAM.NAMES", b"")
    await nc.flush()
    # nats-server handles API requests on a queue: poll until both were processed. Every
    # INFO is counted too, after its own reply.
    for polls in range(50):
        got = await api()
        if got["errors"] == 1 and got["total"] >= 3 + polls:
            break
        await asyncio.sleep(0.05)
    assert got == {"level": 5, "total": 3 + polls, "errors": 1}
