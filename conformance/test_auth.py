"""Authentication: user/password, token, ops before CONNECT, auth timeout."""
from __future__ import annotations

import time
from typing import Any

import pytest

from conformance.helpers import SpawnFn, connect_line
from conformance.rawclient import OK, PONG, RawClient, msg, pub
from conformance.servers import Endpoint

AUTH_VIOLATION = b"-ERR 'Authorization Violation'\r\n"

USER_CONF = "authorization {\n  user: alice\n  password: s3cret\n}\n"
TOKEN_CONF = 'authorization {\n  token: "t0k3n-abc"\n}\n'


def try_connect(ep: Endpoint, **fields: Any) -> RawClient:
    """Open a connection and send a verbose CONNECT with ``fields`` plus a PING."""
    client = RawClient.connect(ep.host, ep.port)
    client.send(connect_line(verbose=True, pedantic=False, protocol=1, **fields) + b"PING\r\n")
    return client


def test_user_password_good(target: str, spawn: SpawnFn, subject: str) -> None:
    """Correct user/password: ``+OK``, ``PONG``, connect INFO, and normal pub/sub."""
    ep = spawn(config=USER_CONF)
    with try_connect(ep, user="alice", **{"pass": "s3cret"}) as client:
        client.expect(OK + PONG)
        assert client.read_line().startswith(b"INFO {")
        client.send(f"SUB {subject} 1\r\n".encode() + pub(subject, b"x"))
        assert client.barrier() == OK + OK + msg(subject, 1, b"x")


@pytest.mark.parametrize(
    "fields",
    [{"user": "alice", "pass": "wrong"}, {"user": "bob", "pass": "s3cret"},
     {"user": "alice"}, {}, {"auth_token": "s3cret"}],
    ids=["bad-password", "bad-user", "no-password", "no-credentials", "token-instead"],
)
def test_user_password_bad(target: str, spawn: SpawnFn, fields: dict[str, str]) -> None:
    """Wrong or missing credentials: ``-ERR 'Authorization Violation'`` and close."""
    ep = spawn(config=USER_CONF)
    with try_connect(ep, **fields) as client:
        client.assert_closed(expect_data=AUTH_VIOLATION)


def test_token_good(target: str, spawn: SpawnFn, subject: str) -> None:
    """The configured token authenticates."""
    ep = spawn(config=TOKEN_CONF)
    with try_connect(ep, auth_token="t0k3n-abc") as client:
        assert client.info.get("auth_required") is True
        client.expect(OK + PONG)
        assert client.read_line().startswith(b"INFO {")


def test_token_bad(target: str, spawn: SpawnFn) -> None:
    """A wrong token (or none) is an authorization violation; each connection is closed."""
    ep = spawn(config=TOKEN_CONF)
    for fields in ({"auth_token": "nope"}, {}, {"user": "t0k3n-abc"}):
        with try_connect(ep, **fields) as client:
            client.assert_closed(expect_data=AUTH_VIOLATION)


@pytest.mark.parametrize(
    "first",
    [b"PING\r\n", b"SUB foo 1\r\n", b"PUB foo 1\r\nx\r\n"],
    ids=["ping", "sub", "pub"],
)
def test_op_before_connect_with_auth(target: str, spawn: SpawnFn, first: bytes) -> None:
    """With auth configured the first op must be CONNECT; anything else is refused."""
    ep = spawn(config=USER_CONF)
    with RawClient.connect(ep.host, ep.port) as client:
        client.send(first)
        client.assert_closed(expect_data=AUTH_VIOLATION)


def test_auth_timeout(target: str, spawn: SpawnFn) -> None:
    """No CONNECT within ``authorization.timeout`` (1 s): ``Authentication Timeout`` + close."""
    ep = spawn(config=USER_CONF.replace("}\n", "  timeout: 1\n}\n"))
    with RawClient.connect(ep.host, ep.port, auto_pong=False) as client:
        start = time.monotonic()
        client.assert_closed(timeout=5, expect_data=b"-ERR 'Authentication Timeout'\r\n")
        elapsed = time.monotonic() - start
        assert 0.7 <= elapsed <= 3.0, f"closed after {elapsed:.2f}s, expected about 1s"


def test_authenticated_connection_outlives_auth_timeout(target: str, spawn: SpawnFn) -> None:
    """A client that authenticated in time is not hit by the auth timer."""
    ep = spawn(config=USER_CONF.replace("}\n", "  timeout: 1\n}\n"))
    with try_connect(ep, user="alice", **{"pass": "s3cret"}) as client:
        client.expect(OK + PONG)
        client.read_line()
        time.sleep(1.3)
        assert client.barrier() == b""
