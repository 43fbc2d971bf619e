"""Unit tests for the ``api_audit`` advisory of :class:`minijs.jetstream.api.dispatch.JetStreamApi`.

The dispatcher runs against small fakes (no sockets); the wire shape against the real
nats-server is covered by ``conformance/test_js_advisories.py``.
"""
from __future__ import annotations

import json
from types import SimpleNamespace

from minijs.config import ServerConfig
from minijs.jetstream.api.dispatch import AUDIT_SUBJECT, JetStreamApi
from minijs.randomness import RandomSource


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def time(self) -> float:
        return self.now

    def time_ns(self) -> int:
        return int(self.now * 1e9)


class FakeServer:
    def __init__(self, interest: bool, **config: object) -> None:
        self.interest = interest
        self.has_interest = lambda subj: self.interest
        self.clock = FakeClock()
        self.randomness = RandomSource(1)
        self.server_name = "NTEST"
        self.config = ServerConfig(token=config.get("token"), user=config.get("user"))
        self.published: list[tuple[bytes, bytes]] = []

    def publish(self, subject: bytes, reply: object, hdr: object, payload: bytes) -> None:
        self.published.append((subject, payload))


def make_api(interest: bool = True, **config: object) -> tuple[JetStreamApi, FakeServer]:
    server = FakeServer(interest, **config)
    js = SimpleNamespace(bus=server, api_total=0, api_errors=0, streams={}, cluster=None,
                         lookup=lambda name: None, log=SimpleNamespace(error=print),
                         account_info=lambda: {"api": {"level": 5}})
    return JetStreamApi(js), server  # type: ignore[arg-type]


class FakeConn:
    """The attributes of :class:`minijs.core.connection.Connection` an audit reads."""

    def __init__(self, **kw: object) -> None:
        base = dict(cid=7, host="127.0.0.1", start_time=1_699_999_999.5, connected=True,
                    name="", lang="python3", version="2.16.0", rtt=0.000321)
        base.update(kw)
        self.__dict__.update(base)


def conn(**kw: object) -> FakeConn:
    return FakeConn(**kw)


def audits(server: FakeServer) -> list[dict]:
    return [json.loads(p) for s, p in server.published if s == AUDIT_SUBJECT]


def test_audit_shape_success_and_error() -> None:
    api, server = make_api()
    origin = conn()
    api._on_request(None, b"$JS.API.INFO", b"_INBOX.1", None, b"", origin)
    api._on_request(None, b"$JS.API.STREAM.INFO.X", b"_INBOX.2", None, b"{}", origin)
    info, err = audits(server)
    assert list(info) == ["type", "id", "timestamp", "server", "client", "subject", "response"]
    assert info["type"] == "io.nats.jetstream.advisory.v1.api_audit"
    assert info["server"] == "NTEST"
    assert info["client"] == {"start": "2023-11-14T22:13:19.5Z", "host": "127.0.0.1", "id": 7,
                              "acc": "$G", "lang": "python3", "ver": "2.16.0", "rtt": 321000,
                              "server": "NTEST", "kind": "Client", "client_type": "nats"}
    # The response is the exact reply text.
    assert info["response"].encode() == server.published[0][1]
    assert err["request"] == "{}"
    assert json.loads(err["response"])["error"]["err_code"] == 10059
    assert (api.js.api_total, api.js.api_errors) == (2, 1)


def test_no_interest_no_audit() -> None:
    api, server = make_api(interest=False)
    api._on_request(None, b"$JS.API.INFO", b"_INBOX.1", None, b"", conn())
    assert [s for s, _ in server.published] == [b"_INBOX.1"]
    assert api.js.api_total == 1


def test_without_reply_counted_and_audited() -> None:
    api, server = make_api()
    api._on_request(None, b"$JS.API.STREAM.INFO.X", None, None, b"", conn())
    assert [s for s, _ in server.published] == [AUDIT_SUBJECT]
    assert (api.js.api_total, api.js.api_errors) == (1, 1)


def test_user_fields_and_internal_origin() -> None:
    api, server = make_api(user="bob")
    api._on_request(None, b"$JS.API.INFO", b"_INBOX.1", None, b"", conn(name="n", user="bob"))
    api._on_request(None, b"$JS.API.INFO", b"_INBOX.2", None, b"", None)
    named, internal = audits(server)
    assert list(named["client"])[3:6] == ["acc", "user", "name"]
    assert named["client"]["user"] == "bob"
    assert internal["client"] is None
    api, server = make_api(token="t")
    api._on_request(None, b"$JS.API.INFO", b"_INBOX.1", None, b"", conn())
    assert audits(server)[0]["client"]["user"] == "[REDACTED]"


def test_rtt_estimate_until_measured_is_stable() -> None:
    api, server = make_api()
    origin = conn(rtt=0.0)
    server.clock.now = origin.start_time + 0.002
    api._on_request(None, b"$JS.API.INFO", b"_INBOX.1", None, b"", origin)
    server.clock.now += 1.0
    api._on_request(None, b"$JS.API.INFO", b"_INBOX.1", None, b"", origin)
    first, second = audits(server)
    assert first["client"]["rtt"] == second["client"]["rtt"]
    assert 1_000_000 < first["client"]["rtt"] < 3_000_000
    origin.rtt = 0.0005
    api._on_request(None, b"$JS.API.INFO", b"_INBOX.1", None, b"", origin)
    assert audits(server)[2]["client"]["rtt"] == 500000


def test_successful_msg_get_not_audited() -> None:
    api, server = make_api()
    api.streams.msg_get = lambda payload, name: {"message": {}}  # type: ignore[method-assign]
    api._on_request(None, b"$JS.API.STREAM.MSG.GET.X", b"_INBOX.1", None, b'{"seq":1}', conn())
    assert audits(server) == [] and api.js.api_total == 0
