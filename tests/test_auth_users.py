"""Users, permissions and accounts: config mapping and the permission checks (unit level)."""
from __future__ import annotations

import asyncio

import nats
import pytest

from minijs import Server
from minijs.authconfig import Permissions, ResponsePermission, User
from minijs.confparse import ConfigError, load_config, parse_config
from minijs.auth.passwords import check_password
from minijs.core.permissions import ClientPermissions


def test_users_permissions_and_defaults_are_mapped():
    cfg = parse_config("""
authorization {
  default_permissions: { publish: "d.>" }
  users: [
    { user: a, password: p, permissions: { publish: { allow: ["x.*"], deny: "x.no" },
                                           subscribe: ["s.>", "q.* grp"],
                                           allow_responses: { max: 3, expires: "5s" } } }
    { user: b, pass: q }
  ]
}
""")
    a, b = cfg.users
    assert a == User("a", "p", Permissions(("x.*",), ("x.no",), ("s.>", "q.* grp"), None,
                                           ResponsePermission(3, 5.0)))
    assert b.permissions == Permissions(pub_allow=("d.>",))
    assert cfg.auth_required


def test_allow_responses_alone_denies_other_publishes():
    cfg = parse_config("authorization { users: [ {user: s, password: p, "
                       "permissions: { allow_responses: true }} ] }")
    perms = cfg.users[0].permissions
    assert perms.pub_allow == () and perms.responses == ResponsePermission(1, 120.0)


def test_accounts_no_auth_user_and_system_account():
    cfg = parse_config("accounts { A: { users: [ {user: a, password: p} ] }, SYS: {} }\n"
                       "no_auth_user: a\nsystem_account: SYS\n")
    assert cfg.accounts == ("A", "SYS") and cfg.users[0].account == "A"
    assert cfg.no_auth_user == "a" and cfg.system_account == "SYS"
    with pytest.raises(ConfigError, match="Duplicate user"):
        parse_config("accounts { A: { users: [ {user: a} ] }, B: { users: [ {user: a} ] } }")
    cfg = parse_config("accounts { A: { jetstream: enabled }, B: { jetstream: disabled }, "
                       "C: { jetstream: { max_mem: 1K, max_streams: 2 } }, D: {} }")
    assert [name for name, _ in cfg.account_jetstream] == ["A", "C"]
    limits = dict(cfg.account_jetstream)["C"]
    assert (limits.max_memory, limits.max_streams, limits.max_storage) == (1000, 2, -1)  # 1K is 1000 in nats-server
    with pytest.raises(ConfigError, match="Expected 'enabled' or 'disabled'"):
        parse_config("accounts { A: { jetstream: maybe } }")
    cfg = parse_config("accounts { A: { limits: { max_conn: 2, max_subscriptions: 3 } } }")
    (name, conn_limits), = cfg.account_limits
    assert (name, conn_limits.max_connections, conn_limits.max_subscriptions,
            conn_limits.max_payload) == ("A", 2, 3, -1)
    with pytest.raises(ConfigError, match='Unknown field "max_x" parsing account limits'):
        parse_config("accounts { A: { limits: { max_x: 1 } } }")


def test_include_is_relative_to_the_including_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "users.conf").write_text("authorization { users: [ {user: u} ] }\n")
    (tmp_path / "main.conf").write_text("port: 4333\ninclude 'sub/users.conf'\n")
    cfg = load_config(tmp_path / "main.conf")
    assert cfg.port == 4333 and cfg.users[0].user == "u"


def test_bcrypt_and_plain_passwords():
    import bcrypt

    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(4)).decode()
    assert check_password(hashed, "pw") and not check_password(hashed, "px")
    assert check_password(hashed.replace("$2b$", "$2a$"), "pw")
    assert check_password("plain", "plain") and not check_password("plain", "plai")


def test_client_permissions_checks():
    perms = ClientPermissions(Permissions(pub_allow=("a.>",), pub_deny=("a.no",),
                                          sub_allow=("s.*", "q.* g"), sub_deny=("s.bad",),
                                          responses=ResponsePermission(2, 0)), lambda: 0.0)
    assert perms.can_publish(b"a.b.c") and not perms.can_publish(b"a.no")
    assert not perms.can_publish(b"b")
    assert perms.can_subscribe(b"s.x", None) and not perms.can_subscribe(b"s.bad", None)
    assert perms.can_subscribe(b"q.x", b"g") and not perms.can_subscribe(b"q.x", None)
    assert not perms.can_subscribe(b"q.x", b"h")
    assert not perms.deliver_filter
    perms.subscribed(b"s.ok", None)
    assert not perms.deliver_filter
    perms.subscribed(b"s.*", None)
    assert perms.deliver_filter
    assert perms.denies_delivery(b"s.bad", None) and not perms.denies_delivery(b"s.ok", None)
    perms.track_reply(b"_INBOX.1")
    assert perms.can_publish(b"_INBOX.1") and perms.can_publish(b"_INBOX.1")
    assert not perms.can_publish(b"_INBOX.1")


async def test_accounts_in_process():
    async with Server(port=0, accounts=("A", "B"), users=(User("a", "p", account="A"),
                                                          User("b", "p", account="B"))) as srv:
        a = await nats.connect(srv.client_url, user="a", password="p")
        b = await nats.connect(srv.client_url, user="b", password="p")
        sub_a = await a.subscribe("x")
        sub_b = await b.subscribe("x")
        await a.flush()
        await b.flush()
        await b.publish("x", b"b")
        await b.flush()
        assert (await sub_b.next_msg(timeout=1)).data == b"b"
        with pytest.raises(nats.errors.TimeoutError):
            await sub_a.next_msg(timeout=0.2)
        await a.close()
        await b.close()


def test_include_inside_a_block_and_variables_across_files(tmp_path):
    (tmp_path / "users.conf").write_text("PW: secret\nusers: [ {user: u, password: $PW} ]\n")
    (tmp_path / "main.conf").write_text("authorization {\n  include users.conf\n}\n")
    cfg = load_config(tmp_path / "main.conf")
    assert cfg.users[0].password == "secret"


def test_allow_responses_expire_on_the_server_clock():
    now = [100.0]
    perms = ClientPermissions(Permissions(pub_allow=(), responses=ResponsePermission(-1, 5.0)),
                              lambda: now[0])
    perms.track_reply(b"_INBOX.a")
    assert perms.can_publish(b"_INBOX.a") and perms.can_publish(b"_INBOX.a")  # no count limit
    now[0] += 6
    assert not perms.can_publish(b"_INBOX.a")
    assert not perms.can_publish(b"_INBOX.a")  # forgotten once expired
