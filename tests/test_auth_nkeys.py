"""nkeys: decoding public keys, signatures over the nonce, nkey users in process."""
from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from minijs import Server
from minijs.auth import nkeys
from minijs.authconfig import Permissions, User
from minijs.confparse import parse_config
from minijs.config import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def test_key_pairs_match_the_nkeys_package():
    import nkeys as reference

    for prefix in (nkeys.PREFIX_USER, nkeys.PREFIX_ACCOUNT, nkeys.PREFIX_OPERATOR):
        kp = nkeys.KeyPair.create(prefix)
        assert reference.from_seed(kp.seed.encode()).public_key.decode() == kp.public_key
        assert nkeys.is_valid_public(kp.public_key, prefix)
        assert len(nkeys.decode_public(kp.public_key)) == 32


@pytest.mark.parametrize("key", ["", "UABC", "U" * 56, None, 42, "ü" * 56])
def test_invalid_public_keys(key):
    assert not nkeys.is_user_key(key)


def test_checksum_and_role_are_checked():
    kp = nkeys.KeyPair.create(nkeys.PREFIX_USER)
    flipped = kp.public_key[:-1] + ("A" if kp.public_key[-1] != "A" else "B")
    assert not nkeys.is_user_key(flipped)
    assert not nkeys.is_account_key(kp.public_key)
    with pytest.raises(nkeys.NkeyError):
        nkeys.KeyPair(kp.public_key)  # a public key is no seed


def test_signatures_in_both_encodings():
    kp = nkeys.KeyPair.create(nkeys.PREFIX_USER)
    nonce = nkeys.new_nonce()
    assert len(nonce) == 15
    raw = kp.sign(nonce.encode())
    for text in (kp.sign_nonce(nonce), base64.b64encode(raw).decode()):
        assert nkeys.verify(kp.public_key, nonce.encode(), nkeys.decode_signature(text))
    assert not nkeys.verify(kp.public_key, b"other", raw)
    assert nkeys.decode_signature("!!") is None
    assert nkeys.decode_signature(base64.b64encode(raw).decode().rstrip("=") + "+") is None


def test_config_nkey_users():
    kp = nkeys.KeyPair.create(nkeys.PREFIX_USER)
    config = parse_config(f'authorization {{ users = [ {{nkey: {kp.public_key}, '
                          f'permissions: {{publish: "a"}}, '
                          f'allowed_connection_types: ["standard", "WEBSOCKET"]}} ] }}')
    (user,) = config.users
    assert user.nkey and user.user == kp.public_key
    assert user.connection_types == ("STANDARD", "WEBSOCKET")
    assert user.permissions.pub_allow == ("a",)
    with pytest.raises(ConfigError, match="Not a valid public nkey for a user"):
        parse_config("authorization { users = [ {nkey: UABC} ] }")


async def _connect(port: int, fields_for):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    info = json.loads((await reader.readline())[5:])
    writer.write(b"CONNECT " + json.dumps(fields_for(info)).encode() + b"\r\nPING\r\n")
    line = await reader.readline()
    writer.close()
    return info, line


async def test_nkey_user_in_process():
    kp = nkeys.KeyPair.create(nkeys.PREFIX_USER)
    user = User(kp.public_key, nkey=True, permissions=Permissions(pub_allow=("a",)))
    async with Server(port=0, users=(user,)) as server:
        info, line = await _connect(server.port, lambda i: {
            "nkey": kp.public_key, "sig": kp.sign_nonce(i["nonce"]), "verbose": False})
        assert line == b"PONG\r\n"
        _, line = await _connect(server.port, lambda i: {
            "nkey": kp.public_key, "sig": kp.sign_nonce("not the nonce"), "verbose": False})
        assert line == b"-ERR 'Authorization Violation'\r\n"


async def test_no_nonce_without_nkeys():
    async with Server(port=0, user="a", password="b") as server:
        info, _ = await _connect(server.port, lambda i: {"user": "a", "pass": "b"})
        assert "nonce" not in info


def test_missing_pynacl_names_the_fix():
    """Without PyNaCl a server with nkey users refuses to start, naming the extra."""
    kp = nkeys.KeyPair.create(nkeys.PREFIX_USER)
    code = textwrap.dedent(f"""
        import asyncio, sys
        sys.modules["nacl"] = None  # not installed
        from minijs import Server
        from minijs.authconfig import User
        from minijs.server import StartupError
        async def main():
            try:
                await Server(port=0, users=(User({kp.public_key!r}, nkey=True),)).start()
            except StartupError as exc:
                print(exc)
        asyncio.run(main())
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdout.strip() == ("nkey and JWT authentication need PyNaCl: "
                                   "pip install 'minijs[nkeys]'"), proc.stderr
