"""JetStream in configured accounts, in process: one engine per account with JetStream (on
that account's view of the bus), isolation, limits, store layout, inspection and reset."""
from __future__ import annotations

import json

import nats
import pytest

from minijs import Server, ServerThread
from minijs.authconfig import User
from minijs.config import AccountLimits

USERS = (User("a", "p", account="A"), User("b", "p", account="B"), User("c", "p", account="C"))


def accounts_server(**kw):
    return Server(port=0, jetstream=True, accounts=("A", "B", "C"), users=USERS,
                  account_jetstream=(("A", AccountLimits()),
                                     ("C", AccountLimits(max_streams=1))), **kw)


async def test_engines_per_account_and_isolation(tmp_path):
    async with accounts_server(store_dir=str(tmp_path)) as srv:
        assert sorted(srv.engines()) == ["A", "C"] and srv.jetstream is None
        a = await nats.connect(srv.client_url, user="a", password="p")
        c = await nats.connect(srv.client_url, user="c", password="p")
        b = await nats.connect(srv.client_url, user="b", password="p")
        try:
            for nc in (a, c):
                await nc.jetstream().add_stream(name="S", subjects=["s.>"], storage="file")
            await a.jetstream().publish("s.1", b"from a")
            await c.jetstream().publish("s.2", b"from c")
            await c.jetstream().publish("s.3", b"from c")
            assert srv.stream("S", account="A").messages == 1
            assert srv.stream("S", account="C").messages == 2
            with pytest.raises(LookupError, match="exists in accounts A, C"):
                srv.stream("S")
            assert [(s.account, s.name) for s in srv.streams()] == [("A", "S"), ("C", "S")]
            assert srv.messages("S", account="C")[0].data == b"from c"
            assert (tmp_path / "jetstream" / "A" / "streams" / "S").is_dir()
            assert (tmp_path / "jetstream" / "C" / "streams" / "S").is_dir()
            # C may have one stream only; B has no JetStream at all
            with pytest.raises(nats.js.errors.APIError) as err:
                await c.jetstream().add_stream(name="T", subjects=["t"])
            assert err.value.err_code == 10027
            reply = await b.request("$JS.API.INFO", b"", timeout=2)
            assert json.loads(reply.data)["error"]["err_code"] == 10039
            # the account's advisories stay in the account
            seen = await c.subscribe("$JS.EVENT.ADVISORY.STREAM.DELETED.>")
            await c.flush()
            await a.jetstream().delete_stream("S")
            await c.jetstream().delete_stream("S")
            msg = await seen.next_msg(timeout=2)
            assert json.loads(msg.data)["stream"] == "S"
            with pytest.raises(nats.errors.TimeoutError):
                await seen.next_msg(timeout=0.2)
        finally:
            for nc in (a, b, c):
                await nc.close()


async def test_restart_and_reset_cover_every_account(tmp_path):
    async with accounts_server(store_dir=str(tmp_path)) as srv:
        a = await nats.connect(srv.client_url, user="a", password="p")
        await a.jetstream().add_stream(name="F", subjects=["f"], storage="file")
        await a.jetstream().add_stream(name="M", subjects=["m"], storage="memory")
        await a.jetstream().publish("f", b"kept")
        await a.close()
        await srv.restart()
        assert [s.name for s in srv.streams()] == ["F"]
        assert srv.stream("F").messages == 1 and srv.stream("F").account == "A"
        srv.reset()
        assert srv.streams() == []
        assert not (tmp_path / "jetstream" / "A" / "streams" / "F").exists()


def test_private_store_without_store_dir_is_removed(tmp_path):
    import os

    with ServerThread(jetstream=True, accounts=("A",), users=(User("a", "p", account="A"),),
                      account_jetstream=(("A", AccountLimits()),)) as srv:
        async def make():
            server = srv.server
            engine = server.engines()["A"]
            return engine.temp_dir

        temp = srv.call(make)
        assert temp and os.path.isdir(temp)
    assert not os.path.exists(temp)


async def test_server_wide_memory_limit_counts_every_account():
    async with accounts_server(max_memory_store=2000) as srv:
        a = await nats.connect(srv.client_url, user="a", password="p")
        c = await nats.connect(srv.client_url, user="c", password="p")
        try:
            await a.jetstream().add_stream(name="S", subjects=["s"], storage="memory",
                                           max_bytes=1500)
            with pytest.raises(nats.js.errors.APIError) as err:
                await c.jetstream().add_stream(name="S", subjects=["s"], storage="memory",
                                               max_bytes=1000)
            assert err.value.err_code == 10028
        finally:
            await a.close()
            await c.close()


def test_virtual_clock_reaches_account_streams():
    with ServerThread(clock="virtual", jetstream=True, accounts=("A",),
                      users=(User("a", "p", account="A"),),
                      account_jetstream=(("A", AccountLimits()),)) as srv:
        import asyncio

        async def fill():
            nc = await nats.connect(srv.client_url, user="a", password="p")
            await nc.jetstream().add_stream(name="T", subjects=["t"], max_age=60)
            await nc.jetstream().publish("t", b"x")
            await nc.close()

        asyncio.run(fill())
        assert srv.stream("T").messages == 1
        srv.clock.advance(61)
        assert srv.stream("T", account="A").messages == 0


async def test_readme_accounts_config_starts(tmp_path):
    """The config shown under "JetStream in accounts" (docs/accounts.md) works as described."""
    from pathlib import Path

    from minijs.confparse import parse_config

    text = (Path(__file__).parent.parent / "docs" / "accounts.md").read_text()
    section = text.split("## JetStream in accounts", 1)[1]
    block = section.split("```conf\n", 1)[1].split("```", 1)[0]
    cfg = parse_config(block.replace("/var/lib/app", str(tmp_path)))
    assert [a for a, _ in cfg.account_jetstream] == ["ORDERS", "BILLING"]
    async with Server(cfg.with_overrides(port=0)) as srv:
        guest = await nats.connect(srv.client_url)  # no_auth_user: guest (PUBLIC)
        billing = await nats.connect(srv.client_url, user="billing", password="b")
        try:
            reply = await guest.request("$JS.API.INFO", b"")
            assert json.loads(reply.data)["error"]["err_code"] == 10039
            info = await billing.jetstream().account_info()
            assert (info.limits.max_memory, info.limits.max_streams) == (64_000_000, 10)  # "64M" is 64 * 10**6, as nats-server reads it
        finally:
            await guest.close()
            await billing.close()


async def test_nats_py_through_an_imported_jetstream_api():
    """The documented shared-JetStream pattern with nats-py: prefix API, publish, pull, ack."""
    from minijs.confparse import parse_config

    cfg = parse_config("""
    jetstream {}
    accounts {
      A: { jetstream: enabled, users: [ {user: a, password: a} ],
           exports: [ {service: "$JS.API.>", response_type: stream}, {service: "$JS.ACK.>"},
                      {service: "orders.>"} ] }
      B: { users: [ {user: b, password: b} ],
           imports: [ {service: {account: A, subject: "$JS.API.>"}, to: "JSA.API.>"},
                      {service: {account: A, subject: "$JS.ACK.>"}},
                      {service: {account: A, subject: "orders.>"}} ] }
    }
    """).with_overrides(port=0)
    async with Server(cfg) as srv:
        nc = await nats.connect(srv.client_url, user="b", password="b")
        try:
            js = nc.jetstream(prefix="JSA.API")
            await js.add_stream(name="ORDERS", subjects=["orders.>"], storage="memory")
            ack = await js.publish("orders.1", b"one")
            assert (ack.stream, ack.seq) == ("ORDERS", 1)
            sub = await js.pull_subscribe("orders.>", durable="D", stream="ORDERS")
            msgs = await sub.fetch(1, timeout=2)
            assert (msgs[0].subject, msgs[0].data) == ("orders.1", b"one")
            await msgs[0].ack_sync()
            assert srv.consumer("ORDERS", "D", account="A").num_ack_pending == 0
        finally:
            await nc.close()


async def test_external_minijs_cannot_follow_is_refused():
    from minijs.confparse import parse_config

    cfg = parse_config("""
    jetstream {}
    accounts {
      A: { jetstream: enabled, users: [ {user: a, password: a} ], exports: [ {service: "$JS.API.>"} ] }
      B: { jetstream: enabled, users: [ {user: b, password: b} ],
           imports: [ {service: {account: A, subject: "$JS.API.>"}, to: "$JS.A.API.>"} ] }
    }
    """).with_overrides(port=0)
    async with Server(cfg) as srv:
        nc = await nats.connect(srv.client_url, user="b", password="b")
        try:
            for api, deliver, why in (("$JS.A.API", "", "deliveries cannot come back"),
                                      ("$JS.A.API", "deliver.b", "deliveries cannot come back"),
                                      ("$JS.hub.API", "d", "another JetStream domain")):
                body = {"name": "AGG", "sources": [
                    {"name": "ORIG", "external": {"api": api, "deliver": deliver}}]}
                reply = await nc.request("$JS.API.STREAM.CREATE.AGG", json.dumps(body).encode())
                err = json.loads(reply.data)["error"]
                assert err["err_code"] == 10052
                assert why in err["description"]
        finally:
            await nc.close()


async def test_system_account_with_jetstream_is_refused_at_start():
    from minijs.server import StartupError

    srv = Server(port=0, jetstream=True, accounts=("SYS",), system_account="SYS",
                 account_jetstream=(("SYS", AccountLimits()),))
    with pytest.raises(StartupError, match="Not allowed to enable JetStream on the system"):
        await srv.start()
    assert not srv.running


async def test_account_limits_beyond_the_server_are_refused_at_start():
    from minijs.server import StartupError

    srv = Server(port=0, jetstream=True, accounts=("A",), max_memory_store=1000,
                 account_jetstream=(("A", AccountLimits(max_memory=2000)),))
    with pytest.raises(StartupError, match=r"insufficient memory resources available \(10028\)"):
        await srv.start()
    assert not srv.running


async def test_restart_without_a_store_dir_keeps_account_file_streams():
    import os

    async with accounts_server() as srv:
        a = await nats.connect(srv.client_url, user="a", password="p")
        await a.jetstream().add_stream(name="F", subjects=["f"], storage="file")
        await a.jetstream().publish("f", b"kept")
        await a.close()
        temp = srv.engines()["A"].temp_dir
        await srv.restart()
        assert srv.engines()["A"].temp_dir == temp
        assert srv.stream("F", account="A").messages == 1
        await srv.crash()
        assert srv.stream("F", account="A").messages == 1
    assert not os.path.exists(temp)


async def test_control_plane_and_faults_in_an_account():
    """$MINIJS.> answers in every account, about the requester's account's streams; a fault
    rule's answer reaches a requester in an account."""
    async with accounts_server(control=True, control_user="a") as srv:
        a = await nats.connect(srv.client_url, user="a", password="p")
        c = await nats.connect(srv.client_url, user="c", password="p")
        try:
            for nc in (a, c):
                await nc.jetstream().add_stream(name="S", subjects=["s"], storage="memory")
            await a.jetstream().publish("s", b"in a")
            reply = await a.request("$MINIJS.STATE.MESSAGES.S", b"{}", timeout=2)
            msgs = json.loads(reply.data)["messages"]
            assert [m["seq"] for m in msgs] == [1]
            reply = await a.request("$MINIJS.FAULT.ADD", json.dumps(
                {"target": "requests", "action": "status", "subject": "$JS.API.INFO",
                 "status": 408}).encode(), timeout=2)
            assert "rule" in json.loads(reply.data)
            got = await c.request("$JS.API.INFO", b"", timeout=2)
            assert got.headers and got.headers.get("Status") == "408"
            denied = await c.request("$MINIJS.STATE.STREAMS", b"{}", timeout=2)
            assert json.loads(denied.data)["error"]["code"] == 403
        finally:
            await a.close()
            await c.close()
