"""Operator mode in process: JWT decoding, .creds files, the accounts a memory resolver
makes, expiry on the server clock."""
from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance.natskeys import Keys, account_jwt, creds, operator_jwt, user_jwt  # noqa: E402
from minijs import Server  # noqa: E402
from minijs.auth import jwt as jwtlib  # noqa: E402
from minijs.clock import VirtualClock  # noqa: E402


def _setup():
    op, sys_acc, acc, user = Keys("operator"), Keys("account"), Keys("account"), Keys("user")
    preload = ((sys_acc.public, account_jwt(sys_acc, op, name="SYS")),
               (acc.public, account_jwt(acc, op, name="A", limits={"conn": 5, "payload": 512},
                                        exports=[{"subject": "pub.>", "type": "stream"}])))
    return op, sys_acc, acc, user, dict(operator=(operator_jwt(op),), resolver="MEMORY",
                                        resolver_preload=preload,
                                        system_account=sys_acc.public)


def test_decode_checks_type_and_signature():
    op, _, acc, user, _ = _setup()
    token = account_jwt(acc, op, name="A")
    claims = jwtlib.decode(token, "account")
    assert claims.subject == acc.public and claims.issuer == op.public and claims.name == "A"
    with pytest.raises(jwtlib.JwtError, match="not user claim"):
        jwtlib.decode(token, "user")
    head, body, sig = token.split(".")
    with pytest.raises(jwtlib.JwtError, match="signature"):
        jwtlib.decode(f"{head}.{body}.{sig[:-4]}AAAA", "account")
    with pytest.raises(jwtlib.JwtError, match="expected 3 chunks"):
        jwtlib.decode("a.b", "account")
    expired = jwtlib.decode(user_jwt(user, acc, exp=100), "user")
    assert jwtlib.validity_issue(expired, time.time()) == "claim is expired"


def test_creds_files():
    _, _, acc, user, _ = _setup()
    token = user_jwt(user, acc)
    assert jwtlib.parse_creds(creds(token, user.seed)) == (token, user.seed)
    with pytest.raises(jwtlib.CredsError, match="expected a user JWT and a user seed"):
        jwtlib.parse_creds("just text", "u.creds")
    with pytest.raises(jwtlib.CredsError, match="never closed"):
        jwtlib.parse_creds("-----BEGIN NATS USER JWT-----\nabc\n")


def test_accounts_come_from_the_preloaded_jwts():
    op, sys_acc, acc, _, options = _setup()
    stranger = Keys("account")
    options["resolver_preload"] += ((stranger.public, account_jwt(stranger, Keys("operator"))),)
    server = Server(port=0, **options)
    config = server.config
    assert set(config.accounts) == {sys_acc.public, acc.public}  # the untrusted one is out
    assert dict(config.account_limits)[acc.public].max_payload == 512
    assert [e.subject for e in config.exports] == ["pub.>"]
    assert config.auth_required and server.auth_nonce


async def _login(port, token, signer):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    info = json.loads((await reader.readline())[5:])
    fields = {"jwt": token, "verbose": False, "protocol": 1}
    if signer is not None:
        fields["sig"] = signer.sign_nonce(info["nonce"])
    writer.write(b"CONNECT " + json.dumps(fields).encode() + b"\r\nPING\r\n")
    await writer.drain()
    return reader, writer, await reader.readline()


async def test_user_jwt_expiry_follows_the_server_clock():
    """A JWT's ``exp`` is judged on the server's clock: a virtual clock moved past it closes
    the client with ``User Authentication Expired``."""
    _, _, acc, user, options = _setup()
    clock = VirtualClock()
    async with Server(port=0, clock=clock, **options) as server:
        token = user_jwt(user, acc, exp=int(clock.time()) + 60)
        reader, writer, line = await _login(server.port, token, user)
        assert line == b"PONG\r\n"
        await reader.readline()  # the INFO after CONNECT
        await clock.advance_async(61)
        assert await reader.readline() == b"-ERR 'User Authentication Expired'\r\n"
        assert await reader.read() == b""
        writer.close()


async def test_revocation_by_claims_update_in_process():
    op, sys_acc, acc, user, options = _setup()
    async with Server(port=0, **options) as server:
        reader, writer, line = await _login(server.port, user_jwt(user, acc), user)
        assert line == b"PONG\r\n"
        await reader.readline()
        update = account_jwt(acc, op, name="A", revocations={"*": int(time.time()) + 10})
        assert server.operator.update_account(acc.public, update) == ("jwt updated", None)
        await asyncio.sleep(0.05)
        assert await reader.readline() == b"-ERR 'User Authentication Revoked'\r\n"
        writer.close()


def test_manage_commands_take_creds(tmp_path):
    """``minijs pub --creds FILE`` logs in with a .creds file; a malformed one is refused
    naming the file and what is missing."""
    import subprocess

    from minijs import ServerThread
    from minijs.auth.issue import Operator

    op = Operator()
    acc = op.account("A")
    user = acc.user("u")
    good = user.write_creds(tmp_path)
    bad = tmp_path / "bad.creds"
    bad.write_text("-----BEGIN NATS USER JWT-----\nabc\n")
    with ServerThread(**op.server_options()) as srv:
        base = [sys.executable, "-m", "minijs", "pub", "x", "hi", "-s", srv.client_url]
        ok = subprocess.run(base + ["--creds", good], capture_output=True, text=True,
                            timeout=60)
        assert ok.returncode == 0, ok.stderr
        refused = subprocess.run(base + ["--creds", str(bad)], capture_output=True, text=True,
                                 timeout=60)
        assert refused.returncode != 0
        assert f"{bad}: a -----BEGIN block is never closed" in refused.stderr
        anonymous = subprocess.run(base, capture_output=True, text=True, timeout=60)
        assert "authorization violation" in anonymous.stderr
