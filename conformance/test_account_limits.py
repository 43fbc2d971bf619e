"""An account's ``limits { max_connections max_subscriptions max_payload }``: a connection
past the account's count is refused at CONNECT, subscriptions and payload are bounded per
client by the account's limit (the connect INFO's ``max_payload`` says which), other accounts
are not affected."""
from __future__ import annotations

from conformance.helpers import SpawnFn, connect_line
from conformance.rawclient import OK, PONG, RawClient, msg, pub

CONF = """
accounts {
  A: { limits: { max_connections: 1, max_subscriptions: 2, max_payload: 10 },
       users: [ {user: a, password: pa}, {user: a2, password: pa} ] }
  B: { limits: { max_conn: 5, max_subs: 100, max_pay: 2048 }, users: [ {user: b, password: pb} ] }
}
"""


def login(ep, user: str, password: str) -> RawClient:
    client = RawClient.connect(ep.host, ep.port)
    client.send(connect_line(verbose=True, pedantic=False, protocol=1, user=user,
                             **{"pass": password}) + b"PING\r\n")
    return client


def test_account_limits(target: str, spawn: SpawnFn) -> None:
    ep = spawn(config=CONF)
    first = login(ep, "a", "pa")
    first.expect(OK + PONG)
    assert b'"max_payload":10,' in first.read_line()  # the connect INFO
    with login(ep, "a2", "pa") as second:
        second.assert_closed(expect_data=b"-ERR 'maximum account active connections exceeded'"
                                         b"\r\n")
    with login(ep, "b", "pb") as other:
        other.expect(OK + PONG)
        assert b'"max_payload":2048,' in other.read_line()
    first.send(b"SUB x 1\r\nSUB y 2\r\nSUB z 3\r\n")
    assert first.barrier() == OK + OK + b"-ERR 'maximum subscriptions exceeded'\r\n"
    first.send(pub("x", b"hello"))
    assert first.barrier() == OK + msg("x", 1, b"hello")
    first.send(pub("x", b"hello world"))
    first.assert_closed(expect_data=b"-ERR 'Maximum Payload Violation'\r\n")
    with login(ep, "a2", "pa") as again:  # the account has room again
        again.expect(OK + PONG)
