"""nkey users: the nonce in INFO, the signed nonce in CONNECT, permissions, refusals.

Keys are made by the suite with the ``nkeys`` package (``conformance/natskeys.py``)."""
from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import nats
import pytest

from conformance.helpers import SpawnFn, connect_line, ensure_subs, refused_start
from conformance.natskeys import Keys
from conformance.rawclient import OK, PONG, RawClient, msg, pub
from conformance.servers import Endpoint

AUTH_VIOLATION = b"-ERR 'Authorization Violation'\r\n"


def nkey_conf(*users: str, extra: str = "") -> str:
    return "authorization {\n  users = [\n" + "".join(f"    {u}\n" for u in users) + \
        "  ]\n}\n" + extra


def signed_connect(ep: Endpoint, keys: Keys | None, **fields: Any) -> RawClient:
    """Connect, sign the INFO nonce with ``keys`` (unless a ``sig`` is given), send a verbose
    CONNECT and a PING."""
    client = RawClient.connect(ep.host, ep.port)
    nonce = client.info.get("nonce", "")
    if keys is not None:
        fields.setdefault("nkey", keys.public)
        fields.setdefault("sig", keys.sign_nonce(nonce))
    client.send(connect_line(verbose=True, pedantic=False, protocol=1, **fields) + b"PING\r\n")
    return client


def test_info_nonce_only_with_nkey_users(target: str, spawn: SpawnFn) -> None:
    """With nkey users INFO carries a fresh 15-character base64url ``nonce`` per connection
    (before ``api_lvl``); user/password auth sends none; the INFO after CONNECT has none."""
    user = Keys()
    ep = spawn(config=nkey_conf(f"{{nkey: {user.public}}}"))
    nonces = []
    for _ in range(3):
        with RawClient.connect(ep.host, ep.port) as client:
            nonce = client.info["nonce"]
            assert re.fullmatch(r"[A-Za-z0-9_-]{15}", nonce), nonce
            keys = list(client.info)
            assert keys.index("client_ip") < keys.index("nonce") < keys.index("api_lvl")
            nonces.append(nonce)
            client.send(connect_line(verbose=False, protocol=1, nkey=user.public,
                                     sig=user.sign_nonce(nonce)) + b"PING\r\n")
            client.expect(PONG)
            assert b'"nonce"' not in client.read_line()
    assert len(set(nonces)) == 3
    plain = spawn(config="authorization { user: a, password: b }\n")
    with RawClient.connect(plain.host, plain.port) as client:
        assert "nonce" not in client.info


@pytest.mark.parametrize("padded", [False, True], ids=["base64url", "std-base64"])
def test_nkey_user_signs_nonce(target: str, spawn: SpawnFn, subject: str, padded: bool) -> None:
    """The nonce signed by the user's seed (base64url, or standard base64 as nats-server
    also takes it): ``+OK``, ``PONG``, then pub/sub as usual."""
    user = Keys()
    ep = spawn(config=nkey_conf(f"{{nkey: {user.public}}}"))
    client = RawClient.connect(ep.host, ep.port)
    with client:
        sig = user.sign_nonce(client.info["nonce"], padded=padded)
        client.send(connect_line(verbose=True, pedantic=False, protocol=1, nkey=user.public,
                                 sig=sig) + b"PING\r\n")
        client.expect(OK + PONG)
        info = client.read_line()
        assert b'"remote_account":"$G"' in info
        client.send(f"SUB {subject} 1\r\n".encode() + pub(subject, b"x"))
        assert client.barrier() == OK + OK + msg(subject, 1, b"x")


def _bad(user: Keys, other: Keys) -> dict[str, dict[str, Any]]:
    return {
        "wrong-key-signed": {"sig": lambda n: other.sign_nonce(n)},
        "other-data-signed": {"sig": lambda n: user.sign_nonce(n + "x")},
        "no-sig": {"sig": None},
        "not-base64": {"sig": lambda n: "!!not base64!!"},
        "unknown-nkey": {"nkey": other.public, "sig": lambda n: other.sign_nonce(n)},
        "not-an-nkey": {"nkey": "UABC", "sig": lambda n: user.sign_nonce(n)},
        "user-password": {"nkey": None, "user": "u", "pass": "p"},
        "nothing": {"nkey": None, "sig": None},
    }


@pytest.mark.parametrize("case", list(_bad(Keys(), Keys())))
def test_nkey_refusals(target: str, spawn: SpawnFn, case: str) -> None:
    """A signature that does not verify, is missing or is not base64, an unknown or invalid
    nkey, or other credentials: ``-ERR 'Authorization Violation'`` and close."""
    user, other = Keys(), Keys()
    ep = spawn(config=nkey_conf(f"{{nkey: {user.public}}}"))
    spec = _bad(user, other)[case]
    with RawClient.connect(ep.host, ep.port) as client:
        nonce = client.info["nonce"]
        fields: dict[str, Any] = {"nkey": user.public}
        for key, value in spec.items():
            if value is None:
                fields.pop(key, None)
            elif callable(value):
                fields[key] = value(nonce)
            else:
                fields[key] = value
        client.send(connect_line(verbose=True, pedantic=False, protocol=1, **fields)
                    + b"PING\r\n")
        client.assert_closed(expect_data=AUTH_VIOLATION)


def test_nkey_auth_error_logged(target: str, spawn: SpawnFn) -> None:
    """A refused nkey user is logged as nats-server logs it: ``authentication error - Nkey
    "U..."``."""
    user, other = Keys(), Keys()
    ep = spawn(config=nkey_conf(f"{{nkey: {user.public}}}"))
    with signed_connect(ep, user, sig=other.sign_nonce("x")) as client:
        client.assert_closed(expect_data=AUTH_VIOLATION)
    line = f'authentication error - Nkey "{user.public}"'
    _wait_log(ep, line)


def _wait_log(ep: Any, needle: str, timeout: float = 3.0) -> str:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in ep.log:
            return ep.log
        time.sleep(0.02)
    raise AssertionError(f"{needle!r} not logged:\n{ep.log}")


def test_nkey_user_permissions(target: str, spawn: SpawnFn, subject: str) -> None:
    """An nkey user's ``permissions`` apply: the violations, and the log line naming
    ``$G/nkey:U...``."""
    user = Keys()
    ep = spawn(config=nkey_conf(
        f'{{nkey: {user.public}, permissions: {{publish: "{subject}.ok", '
        f'subscribe: "{subject}.ok"}}}}'))
    with signed_connect(ep, user) as client:
        client.expect(OK + PONG)
        client.read_line()
        client.send(pub(f"{subject}.no", b"x") + f"SUB {subject}.no 1\r\n".encode())
        assert client.barrier() == (
            f"-ERR 'Permissions Violation for Publish to \"{subject}.no\"'\r\n"
            f"-ERR 'Permissions Violation for Subscription to \"{subject}.no\"'\r\n").encode()
        client.send(f"SUB {subject}.ok 2\r\n".encode() + pub(f"{subject}.ok", b"y"))
        assert client.barrier() == OK + OK + msg(f"{subject}.ok", 2, b"y")
    _wait_log(ep, f'"$G/nkey:{user.public}" - Publish Violation - Subject "{subject}.no"')


def test_nkey_users_in_accounts(target: str, spawn: SpawnFn, subject: str) -> None:
    """nkey users of an account land in it (``remote_account``) and see only its subjects."""
    a, b = Keys(), Keys()
    ep = spawn(config=f"accounts {{\n  A: {{ users = [ {{nkey: {a.public}}} ] }}\n"
                      f"  B: {{ users = [ {{nkey: {b.public}}} ] }}\n}}\n")
    with signed_connect(ep, a) as ca, signed_connect(ep, b) as cb:
        ca.expect(OK + PONG)
        assert b'"remote_account":"A"' in ca.read_line()
        cb.expect(OK + PONG)
        assert b'"remote_account":"B"' in cb.read_line()
        ca.send(f"SUB {subject} 1\r\n".encode())
        assert ca.barrier() == OK
        cb.send(pub(subject, b"other account"))
        assert cb.barrier() == OK
        ca.send(pub(subject, b"same account"))
        assert ca.barrier() == OK + msg(subject, 1, b"same account")


def test_nkey_no_auth_user(target: str, spawn: SpawnFn) -> None:
    """``no_auth_user`` naming an nkey user: a client without credentials becomes it, with
    no signature."""
    user = Keys()
    ep = spawn(config=nkey_conf(f"{{nkey: {user.public}}}", extra=f"no_auth_user: {user.public}\n"))
    with RawClient.connect(ep.host, ep.port) as client:
        client.send(connect_line(verbose=True, pedantic=False, protocol=1) + b"PING\r\n")
        client.expect(OK + PONG)


@pytest.mark.parametrize("types,allowed", [('["STANDARD"]', True), ('["websocket"]', False),
                                           ('["MQTT", "LEAFNODE"]', False)],
                         ids=["standard", "websocket-only", "mqtt-leaf"])
def test_nkey_allowed_connection_types(target: str, spawn: SpawnFn, types: str,
                                       allowed: bool) -> None:
    """``allowed_connection_types``: a plain client connection is ``STANDARD``."""
    user = Keys()
    ep = spawn(config=nkey_conf(f"{{nkey: {user.public}, allowed_connection_types: {types}}}"))
    with signed_connect(ep, user) as client:
        if allowed:
            client.expect(OK + PONG)
        else:
            client.assert_closed(expect_data=AUTH_VIOLATION)


async def test_natspy_nkeys_seed(target: str, spawn: SpawnFn, subject: str,
                                 tmp_path: Path) -> None:
    """nats-py signs with a seed file (``nkeys_seed``) and with the seed itself."""
    user = Keys()
    ep = spawn(config=nkey_conf(f"{{nkey: {user.public}}}"))
    seed_file = tmp_path / "user.nk"
    seed_file.write_text(user.seed + "\n")
    nc = await nats.connect(ep.url, nkeys_seed=str(seed_file))
    nc2 = await nats.connect(ep.url, nkeys_seed_str=user.seed)
    try:
        sub = await nc.subscribe(subject)
        await ensure_subs(nc)
        await nc2.publish(subject, b"signed")
        await nc2.flush()
        assert (await sub.next_msg(5)).data == b"signed"
    finally:
        await nc.close()
        await nc2.close()


@pytest.mark.parametrize("entry,error", [
    ("{nkey: UABC}", "Not a valid public nkey for a user"),
    ("{nkey: SEED}", "Not a valid public nkey for a user"),
    ("{nkey: KEY, user: bob}", "Nkey users do not take usernames or passwords"),
    ("{nkey: KEY, password: x}", "Nkey users do not take usernames or passwords"),
    ("{nkey: KEY, allowed_connection_types: [\"FOO\", \"standard\"]}",
     'invalid connection types ["FOO"]'),
    ("{nkey: KEY}, {nkey: KEY}", 'Duplicate nkey "KEY" detected'),
], ids=["short", "seed", "with-user", "with-password", "connection-type", "duplicate"])
def test_nkey_config_errors(target: str, tmp_path: Path, entry: str, error: str) -> None:
    """nats-server's refusals of bad nkey user entries, with its text."""
    user = Keys()
    entry = entry.replace("SEED", user.seed).replace("KEY", user.public)
    error = error.replace("KEY", user.public)
    stderr = refused_start(target, tmp_path, nkey_conf(entry))
    assert error in stderr, stderr
