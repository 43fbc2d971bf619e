"""``$SYS.REQ.USER.INFO``: any client may ask who it is logged in as (nats.js's
``nc.context()``). The reply is a system message, ``{"server": {...}, "data": {...}}``: the
user (``[REDACTED]`` for a token, ``""`` without authentication), its account and, for a user
that has permissions (its own or ``default_permissions``), ``publish`` and ``subscribe`` with
their non-empty lists and ``responses`` with ``allow_responses``. nats-server keeps the lists in
sets, so they are compared here without their order."""
from __future__ import annotations

import json
import urllib.parse
from typing import Any

import nats
import pytest

from conformance.helpers import SpawnFn

USERS_CONF = """
authorization {
  default_permissions: { subscribe: { deny: ["secret.>"] } }
  users: [
    { user: a, password: a }
    { user: b, password: b, permissions: { publish: { deny: "x.>" },
                                           subscribe: ["s.*", "_INBOX.>"] } }
    { user: c, password: c, permissions: { allow_responses: { max: 5, expires: "1m" },
                                           publish: { allow: "$SYS.>" } } }
    { user: d, password: d, permissions: { subscribe: { allow: ["foo q", "bar", "_INBOX.>"],
                                                        deny: "baz" },
                                           publish: ["p1", "$SYS.REQ.USER.INFO", "<&>"],
                                           allow_responses: true } }
  ]
}
no_auth_user: a
"""

ACCOUNTS_CONF = """
accounts {
  S: { users: [ { user: s, password: s } ] }
}
"""

SERVER_KEYS = ["name", "host", "id", "ver", "feature_flags", "jetstream", "flags", "seq", "time"]


def sortedlists(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: sortedlists(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted(value)
    return value


async def user_info(url: str) -> tuple[dict[str, Any], bytes]:
    nc = await nats.connect(url, allow_reconnect=False)
    try:
        msg = await nc.request("$SYS.REQ.USER.INFO", b"", timeout=5)
        return json.loads(msg.data), msg.data
    finally:
        await nc.close()


def with_user(url: str, user: str, password: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return parts._replace(netloc=f"{user}:{password}@{parts.netloc}").geturl()


@pytest.mark.parametrize("login,data", [
    (("a", "a"), {"user": "a", "account": "$G", "account_name": "$G",
                  "permissions": {"publish": {}, "subscribe": {"deny": ["secret.>"]}}}),
    (None, {"user": "a", "account": "$G", "account_name": "$G",
            "permissions": {"publish": {}, "subscribe": {"deny": ["secret.>"]}}}),
    (("b", "b"), {"user": "b", "account": "$G", "account_name": "$G",
                  "permissions": {"publish": {"deny": ["x.>"]},
                                  "subscribe": {"allow": ["s.*", "_INBOX.>"]}}}),
    (("c", "c"), {"user": "c", "account": "$G", "account_name": "$G",
                  "permissions": {"publish": {"allow": ["$SYS.>"]}, "subscribe": {},
                                  "responses": {"max": 5, "ttl": 60_000_000_000}}}),
    (("d", "d"), {"user": "d", "account": "$G", "account_name": "$G",
                  "permissions": {"publish": {"allow": ["p1", "$SYS.REQ.USER.INFO", "<&>"]},
                                  "subscribe": {"allow": ["foo q", "bar", "_INBOX.>"],
                                                "deny": ["baz"]},
                                  "responses": {"max": 1, "ttl": 120_000_000_000}}}),
], ids=["defaults", "no-auth-user", "own", "responses", "lists"])
async def test_user_info_of_users(target: str, spawn: SpawnFn, login: Any,
                                  data: dict[str, Any]) -> None:
    srv = spawn(config=USERS_CONF)
    url = with_user(srv.url, *login) if login else srv.url
    reply, raw = await user_info(url)
    assert list(reply) == ["server", "data"]
    assert list(reply["server"]) == SERVER_KEYS
    assert (reply["server"]["jetstream"], reply["server"]["flags"]) == (False, 0)
    assert list(reply["data"]) == list(data)
    assert list(reply["data"].get("permissions", {})) == list(data.get("permissions", {}))
    assert sortedlists(reply["data"]) == sortedlists(data)
    if login == ("d", "d"):
        assert b'"\\u003c\\u0026\\u003e"' in raw  # Go's JSON escaping


async def test_user_info_token_account_and_jetstream(target: str, spawn: SpawnFn) -> None:
    srv = spawn(config="authorization { token: s3cret }\n", jetstream=True)
    reply, _ = await user_info(with_user(srv.url, "s3cret", "").replace(":@", "@"))
    assert reply["data"] == {"user": "[REDACTED]", "account": "$G", "account_name": "$G"}
    assert (reply["server"]["jetstream"], reply["server"]["flags"]) == (True, 7)
    srv = spawn(config=ACCOUNTS_CONF)
    reply, _ = await user_info(with_user(srv.url, "s", "s"))
    assert reply["data"] == {"user": "s", "account": "S", "account_name": "S"}
    srv = spawn()
    reply, _ = await user_info(srv.url)
    assert reply["data"] == {"user": "", "account": "$G", "account_name": "$G"}
