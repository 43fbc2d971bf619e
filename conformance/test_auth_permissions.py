"""Users, permissions and accounts from a config file (both targets get the same file).

``authorization { users = [...] }`` with plain and bcrypt passwords, ``permissions`` (publish /
subscribe allow and deny, the short forms, queue groups, wildcards, ``allow_responses``),
``default_permissions``, ``include``, ``accounts`` with ``no_auth_user``, and the config errors.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.helpers import SpawnFn, get_json, refused_start, wait_for_log
from conformance.rawclient import RawClient, msg, pub, split_frames
from conformance.servers import Endpoint, free_port

AUTH_VIOLATION = b"-ERR 'Authorization Violation'\r\n"
#: bcrypt (cost 4) of "s3cret", in the "$2a$" form nats-server's docs show.
BCRYPT_S3CRET = "$2a$04$bTaSwU3XuVKQx5y5GyM91OVkvLHY/zoeTtaOOmmr6ax.NmfojMv6u"

PERMS_CONF = """
authorization {
  default_permissions = { publish = "def.>" }
  users = [
    { user: alice, password: pa, permissions: {
        publish: { allow: ["foo.>", "bar"], deny: "foo.secret" }
        subscribe: { allow: ["foo.>", "q.* grp"], deny: ["foo.bad"] }
    } }
    { user: bob, password: pb }
    { user: carol, password: pc, permissions: { publish: ["x.*", "y"], subscribe: "x.>" } }
    { user: dave, password: "%s" }
    { user: svc, password: ps, permissions: { subscribe: "req", allow_responses: true } }
    { user: svc2, password: ps, permissions: { subscribe: "req", allow_responses: { max: 2 } } }
    { user: open, password: po, permissions: {} }
  ]
}
""" % BCRYPT_S3CRET


def pub_err(subject: str) -> bytes:
    return f"-ERR 'Permissions Violation for Publish to \"{subject}\"'\r\n".encode()


def sub_err(subject: str, queue: str | None = None) -> bytes:
    extra = f' using queue "{queue}"' if queue else ""
    return f"-ERR 'Permissions Violation for Subscription to \"{subject}\"{extra}'\r\n".encode()


def login(ep: Endpoint, user: str, password: str, **opts: Any) -> RawClient:
    client = RawClient.connect(ep.host, ep.port)
    client.handshake(user=user, **{"pass": password}, **opts)
    return client


def try_login(ep: Endpoint, **fields: Any) -> RawClient:
    client = RawClient.connect(ep.host, ep.port)
    client.send(b"CONNECT " + __import__("json").dumps(
        {"verbose": False, "pedantic": False, "protocol": 1, **fields}).encode()
        + b"\r\nPING\r\n")
    return client


def test_users_array_logins(target: str, spawn: SpawnFn) -> None:
    """Each user of the array logs in with its own password (a bcrypt hash too); a wrong
    password, an unknown user or no credentials is an authorization violation."""
    ep = spawn(config=PERMS_CONF)
    for user, password in (("alice", "pa"), ("bob", "pb"), ("dave", "s3cret")):
        with login(ep, user, password) as client:
            assert client.barrier() == b""
    for fields in ({"user": "alice", "pass": "pb"}, {"user": "zed", "pass": "pa"}, {},
                   {"user": "dave", "pass": BCRYPT_S3CRET}, {"auth_token": "pa"}):
        with try_login(ep, **fields) as client:
            client.assert_closed(expect_data=AUTH_VIOLATION)
    assert "[WRN] Plaintext passwords detected, use nkeys or bcrypt" in ep.log


def test_bcrypt_only_config_has_no_plaintext_warning(target: str, spawn: SpawnFn) -> None:
    """Only bcrypt hashes: no plaintext-password warning at startup; the hash logs in."""
    ep = spawn(config='authorization { users = [ { user: dave, password: "%s" } ] }\n'
               % BCRYPT_S3CRET)
    with login(ep, "dave", "s3cret") as client:
        assert client.barrier() == b""
    assert "Plaintext passwords" not in ep.log


def test_publish_permissions(target: str, spawn: SpawnFn) -> None:
    """A denied publish gets ``-ERR 'Permissions Violation for Publish to "…"'`` (no ``+OK``),
    is dropped, is logged, and the connection stays open; allowed ones flow."""
    ep = spawn(config=PERMS_CONF)
    with login(ep, "bob", "pb") as watcher, login(ep, "alice", "pa", verbose=True) as alice:
        watcher.send(b"SUB > 1\r\n")
        assert watcher.barrier() == b""
        alice.send(pub("foo.secret", b"1") + pub("bar", b"2") + pub("baz", b"3")
                   + pub("def.x", b"4") + pub("foo.a.b", b"5"))
        assert alice.barrier() == (pub_err("foo.secret") + b"+OK\r\n" + pub_err("baz")
                                   + pub_err("def.x") + b"+OK\r\n")
        assert watcher.barrier() == msg("bar", 1, b"2") + msg("foo.a.b", 1, b"5")
    log = wait_for_log(ep, 'Publish Violation - Subject "def.x"')
    for subject in ("foo.secret", "baz", "def.x"):
        assert f'Publish Violation - Subject "{subject}"' in log


def test_subscribe_permissions_and_queues(target: str, spawn: SpawnFn) -> None:
    """Subscribe allow/deny with wildcards and queue-qualified entries (``"q.* grp"``: only
    that queue group may subscribe there); each refusal names the subject (and queue)."""
    ep = spawn(config=PERMS_CONF)
    with login(ep, "alice", "pa", verbose=True) as alice:
        alice.send(b"SUB foo.bad 1\r\nSUB foo.* 2\r\nSUB q.x 3\r\nSUB q.x grp 4\r\n"
                   b"SUB q.x other 5\r\nSUB zzz 6\r\nSUB foo.> 7\r\n")
        assert alice.barrier() == (sub_err("foo.bad") + b"+OK\r\n" + sub_err("q.x")
                                   + b"+OK\r\n" + sub_err("q.x", "other") + sub_err("zzz")
                                   + b"+OK\r\n")
    log = wait_for_log(ep, 'Subscription Violation - Subject "zzz", SID 6')
    assert 'Subscription Violation - Subject "q.x", Queue: "other", SID 5' in log


def test_wildcard_subscription_skips_denied_subjects(target: str, spawn: SpawnFn) -> None:
    """A wildcard subscription that a deny rule overlaps does not receive the denied subject."""
    ep = spawn(config=PERMS_CONF)
    with login(ep, "alice", "pa") as alice, login(ep, "bob", "pb") as bob:
        alice.send(b"SUB foo.* 1\r\n")
        assert alice.barrier() == b""
        bob.send(b"PUB def.z 1\r\nz\r\n")  # bob may only publish def.>
        assert bob.barrier() == b""
    conf = PERMS_CONF.replace('{ user: bob, password: pb }',
                              '{ user: bob, password: pb, permissions: {} }')
    ep = spawn(config=conf)
    with login(ep, "alice", "pa") as alice, login(ep, "bob", "pb") as bob:
        alice.send(b"SUB foo.* 1\r\n")
        assert alice.barrier() == b""
        bob.send(pub("foo.bad", b"no") + pub("foo.ok", b"yes"))
        assert bob.barrier() == b""
        assert alice.barrier() == msg("foo.ok", 1, b"yes")


def test_default_and_short_form_permissions(target: str, spawn: SpawnFn) -> None:
    """``default_permissions`` apply to users without their own; short forms (a string, a list)
    are allow lists; an empty ``permissions {}`` allows everything."""
    ep = spawn(config=PERMS_CONF)
    with login(ep, "bob", "pb") as bob:
        bob.send(pub("def.a", b"1") + pub("other", b"2") + b"SUB anything 1\r\n")
        assert bob.barrier() == pub_err("other")
    with login(ep, "carol", "pc") as carol:
        carol.send(b"SUB x.> 1\r\nSUB y 2\r\n" + pub("x.1", b"a") + pub("y", b"b")
                   + pub("x.1.2", b"c"))
        assert carol.barrier() == (sub_err("y") + msg("x.1", 1, b"a") + pub_err("x.1.2"))
    with login(ep, "open", "po") as client:
        client.send(b"SUB > 1\r\n" + pub("any.thing", b"ok"))
        assert client.barrier() == msg("any.thing", 1, b"ok")


@pytest.mark.parametrize("user,allowed", [("svc", 1), ("svc2", 2)])
def test_allow_responses(target: str, spawn: SpawnFn, user: str, allowed: int) -> None:
    """``allow_responses``: a responder may publish to the reply subject of a request it
    received (once by default, ``max`` times if set) and nowhere else."""
    ep = spawn(config=PERMS_CONF)
    with login(ep, "open", "po") as requester, login(ep, user, "ps") as svc:
        requester.send(b"SUB _INBOX.r 1\r\n")
        svc.send(b"SUB req 1\r\n" + pub("other", b"x"))
        assert svc.barrier() == pub_err("other")
        assert requester.barrier() == b""
        svc.send(pub("_INBOX.r", b"too-early"))
        assert svc.barrier() == pub_err("_INBOX.r")
        requester.send(pub("req", b"q", reply="_INBOX.r"))
        assert requester.barrier() == b""
        assert svc.barrier() == msg("req", 1, b"q", reply="_INBOX.r")
        svc.send(pub("_INBOX.r", b"r") * 3)
        assert svc.barrier() == pub_err("_INBOX.r") * (3 - allowed)
        assert requester.barrier() == msg("_INBOX.r", 1, b"r") * allowed


def test_include_and_variables(target: str, spawn: SpawnFn) -> None:
    """Users in an included file, permissions from a variable."""
    users = ('PERMS = { publish: "ok.>", subscribe: ">" }\n'
             "authorization {\n  users = [ { user: u, password: p, permissions: $PERMS } ]\n}\n")
    ep = spawn(config="include ./users.conf\n", files={"users.conf": users})
    with login(ep, "u", "p") as client:
        client.send(b"SUB ok.* 1\r\n" + pub("ok.1", b"a") + pub("no", b"b"))
        assert client.barrier() == msg("ok.1", 1, b"a") + pub_err("no")
    with try_login(ep, user="u", **{"pass": "x"}) as client:
        client.assert_closed(expect_data=AUTH_VIOLATION)


ACCOUNTS_CONF = """
accounts {
  A: { users: [ { user: a, password: pa } ] }
  B: { users: [ { user: b, password: pb }, { user: b2, password: pb } ] }
}
no_auth_user: b
"""


def test_accounts_isolate_subjects(target: str, spawn: SpawnFn) -> None:
    """Accounts do not see each other's messages; a client without credentials becomes the
    ``no_auth_user`` (of account B); INFO names the account after CONNECT."""
    ep = spawn(config=ACCOUNTS_CONF)
    with RawClient.connect(ep.host, ep.port) as anon:
        assert "auth_required" not in anon.info
        info = anon.handshake()
        assert info is not None and info["remote_account"] == "B"
        assert info["auth_required"] is True
        with login(ep, "b2", "pb") as b2, login(ep, "a", "pa") as a:
            b2.send(b"SUB x 1\r\n")
            a.send(b"SUB x 1\r\nSUB > 2\r\n")
            assert b2.barrier() == b"" and a.barrier() == b""
            anon.send(pub("x", b"from-b"))
            assert anon.barrier() == b""
            assert b2.barrier() == msg("x", 1, b"from-b")
            a.send(pub("x", b"from-a"))
            got = split_frames(a.barrier())  # the order of the two is not guaranteed
            assert sorted(got) == [msg("x", 1, b"from-a"), msg("x", 2, b"from-a")]
            assert b2.barrier() == b""
    with try_login(ep, user="a", **{"pass": "bad"}) as client:
        client.assert_closed(expect_data=AUTH_VIOLATION)


@pytest.mark.parametrize("text,message", [
    ('authorization {\n  users = [\n    {user: a, password: b, permissions: '
     '{publish: {allow: "x", nope: "y"}}}\n  ]\n}\n',
     "bad.conf:3:64: Unknown field name \"nope\" parsing subject permissions, only 'allow' "
     "or 'deny' are permitted"),
    ('authorization {\n users = [ {password: b} ]\n}\n', "User entry requires a user"),
    ('no_auth_user: zed\nauthorization { users = [ {user: a, password: b} ] }\n',
     'no_auth_user: "zed" not present as user or nkey in authorization block or account '
     "configuration"),
    ('authorization {\n  users = [ {user: a, password: b, permissions: {publish: "a..b"}} ]\n}\n',
     'subject "a..b" is not a valid subject'),
    ('accounts { $G: { users: [ {user: a, password: b} ] } }\n', '"$G" is a Reserved Account'),
], ids=["unknown-permission-field", "user-without-name", "unknown-no-auth-user",
        "invalid-subject", "reserved-account"])
def test_bad_auth_config_refused(target: str, tmp_path: Path, text: str, message: str) -> None:
    """Bad authorization settings stop the server at startup with nats-server's message."""
    stderr = refused_start(target, tmp_path, text)
    assert message in stderr, stderr


JS_CONF = """
authorization {
  users = [
    { user: app, password: pa, permissions: {
        publish: ["$JS.API.>", "orders.>", "$JS.ACK.>"]
        subscribe: ["_INBOX.>"]
    } }
    { user: reader, password: pr, permissions: {
        publish: { deny: ["$JS.API.STREAM.DELETE.>", "orders.>"] }
        subscribe: "_INBOX.>"
    } }
  ]
}
"""


async def test_jetstream_with_permissions(target: str, spawn: SpawnFn,
                                          nats_connect: Any) -> None:
    """The permissions a JetStream client needs (``$JS.API.>``, ``_INBOX.>``, ``$JS.ACK.>``):
    a user with them creates a stream, publishes, fetches and acks; a user denied an API
    subject gets the publish violation, which nats-py surfaces as an error (no answer)."""
    import nats
    import nats.errors

    ep = spawn(config=JS_CONF, jetstream=True)
    app = await nats_connect(ep, user="app", password="pa")
    js = app.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    ack = await js.publish("orders.1", b"one")
    assert ack.stream == "ORDERS" and ack.seq == 1
    sub = await js.pull_subscribe("orders.>", "worker")
    got = await sub.fetch(1, timeout=5)
    assert got[0].data == b"one"
    await got[0].ack_sync(timeout=5)
    info = await js.consumer_info("ORDERS", "worker")
    assert info.num_ack_pending == 0 and info.ack_floor.stream_seq == 1

    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    reader = await nats_connect(ep, user="reader", password="pr", error_cb=on_error)
    rjs = reader.jetstream(timeout=1)
    assert (await rjs.stream_info("ORDERS")).state.messages == 1
    with pytest.raises(nats.errors.TimeoutError):
        await rjs.delete_stream("ORDERS")
    assert any('permissions violation for publish to "$js.api.stream.delete.orders"'
               in str(e).lower() for e in errors), errors  # nats-py lower-cases the text
    assert (await js.stream_info("ORDERS")).state.messages == 1


WILDCARD_CONF = """
authorization {
  users = [
    { user: u, password: p, permissions: { subscribe: { allow: ">",
                                                        deny: ["foo.bad", "bar.* grpx"] } } }
    { user: w, password: p, permissions: { subscribe: ["foo.bar", "x.>", "y.*"] } }
    { user: o, password: p }
  ]
}
"""


def test_queue_qualified_denies_and_wildcard_subscribes(target: str, spawn: SpawnFn) -> None:
    """A queue-qualified deny (``"bar.* grpx"``) refuses that queue group on matching subjects
    and filters its deliveries; a plain deny filters queue subscriptions too; a wildcard
    SUB is judged by matching it against the allow list as a subject (``y.>`` passes ``y.*``,
    as in nats-server; ``foo.*`` does not pass ``foo.bar``)."""
    ep = spawn(config=WILDCARD_CONF)
    with login(ep, "u", "p") as u, login(ep, "o", "p") as o, login(ep, "w", "p") as w:
        u.send(b"SUB foo.* g1 1\r\nSUB bar.x grpx 2\r\nSUB bar.* grpx 3\r\nSUB bar.* grpy 4\r\n"
               b"SUB > grpx 5\r\nSUB bar.> grpx 6\r\n")
        assert u.barrier() == (sub_err("bar.x", "grpx") + sub_err("bar.*", "grpx")
                               + sub_err("bar.>", "grpx"))
        o.send(pub("foo.bad", b"1") + pub("foo.ok", b"2") + pub("bar.1", b"3")
               + pub("other", b"4"))
        assert o.barrier() == b""
        assert sorted(split_frames(u.barrier())) == sorted([
            msg("foo.ok", 1, b"2"), msg("foo.ok", 5, b"2"), msg("bar.1", 4, b"3"),
            msg("other", 5, b"4")])
        w.send(b"SUB foo.* 1\r\nSUB foo.bar 2\r\nSUB x.* 3\r\nSUB x.> 4\r\nSUB y.> 5\r\n"
               b"SUB y.* 6\r\nSUB > 7\r\nSUB x.a.> 8\r\nSUB y.a 9\r\n")
        assert w.barrier() == sub_err("foo.*") + sub_err(">")


def test_second_connect_changes_user(target: str, spawn: SpawnFn) -> None:
    """A second CONNECT as another user drops the subscriptions and applies the new user's
    permissions."""
    ep = spawn(config=WILDCARD_CONF)
    with login(ep, "w", "p") as w, login(ep, "o", "p") as o:
        w.send(b"SUB x.1 1\r\n")
        assert w.barrier() == b""
        w.send(b'CONNECT {"verbose":false,"pedantic":false,"user":"o","pass":"p",'
               b'"protocol":1}\r\nSUB zz 2\r\n')
        assert w.barrier() == b""
        o.send(pub("zz", b"5") + pub("x.1", b"6"))
        assert o.barrier() == b""
        assert w.barrier() == msg("zz", 2, b"5")


def test_connz_names_users_and_accounts(target: str, spawn: SpawnFn) -> None:
    """``/connz?auth=1`` shows each connection's user, its ``account`` (omitted for ``$G``)
    and ``name_tag``; ``acc=A`` lists that account's connections only."""

    port = free_port()
    ep = spawn(config=f"http_port: {port}\n"
                      "authorization { users = [ {user: g, password: p} ] }\n"
                      "accounts { A: { users: [ {user: a, password: p} ] } }\n")
    with login(ep, "g", "p"), login(ep, "a", "p"):
        conns = get_json(port, "/connz?auth=1")["connections"]
        shown = sorted((c["authorized_user"], c.get("account"), c["name_tag"]) for c in conns)
        assert shown == [("a", "A", "A"), ("g", None, "$G")]
        only_a = get_json(port, "/connz?acc=A&auth=1")
        assert only_a["total"] == 1 and only_a["connections"][0]["authorized_user"] == "a"
        only_g = get_json(port, "/connz?acc=$G&auth=1")
        assert only_g["total"] == 1 and only_g["connections"][0]["authorized_user"] == "g"
