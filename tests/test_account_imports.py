"""Unit tests for minijs.core.imports: mappings, the config checks, response imports on the
server clock."""
from __future__ import annotations

import asyncio
import random

import nats
import pytest

from minijs import Server
from minijs.authconfig import Export, Import, Mapping
from minijs.confparse import parse_config
from minijs.core.imports import Mappings, check_imports, set_header


def test_mapping_literal_wildcard_and_leftover_weight():
    m = Mappings([
        Mapping("A", "a", (("b", 100),)),
        Mapping("A", "x.*.>", (("y.{{wildcard(1)}}.>", 100),)),
        Mapping("A", "w", (("w1", 30),)),  # 70% stays "w"
    ])
    assert m.map(b"a") == b"b"
    assert m.map(b"x.1.2.3") == b"y.1.2.3"
    assert m.map(b"other") == b"other"
    random.seed(7)
    seen = {m.map(b"w") for _ in range(200)}
    assert seen == {b"w", b"w1"}


def test_mapping_zero_weight_is_never_chosen():
    m = Mappings([Mapping("A", "s", (("all", 100), ("none", 0)))])
    assert {m.map(b"s") for _ in range(100)} == {b"all"}


def test_check_imports():
    exports = [Export("A", "a.>", False), Export("A", "svc.*", True, ("B",))]
    ok = [Import("B", False, "A", "a.b", prefix="p"), Import("B", True, "A", "svc.x", "q")]
    assert check_imports(["A", "B", "C"], exports, ok) is None
    assert check_imports(["A", "B", "C"], exports, [Import("C", True, "A", "svc.x", "q")]) == (
        'Error adding service import "svc.x": service import not authorized')
    assert check_imports(["A", "B"], exports, [Import("B", False, "A", "b")]) == (
        'Error adding stream import "b": stream import not authorized')
    assert check_imports(["A", "B"], exports, [Import("B", False, "A", "a.b", prefix="p.*")]) \
        == 'Error adding stream import "a.b": stream import prefix can not contain wildcard tokens'


def test_set_header():
    assert set_header(None, b"X", b"1") == b"NATS/1.0\r\nX: 1\r\n\r\n"
    assert set_header(b"NATS/1.0\r\nA: b\r\nX: 0\r\n\r\n", b"X", b"1") == (
        b"NATS/1.0\r\nA: b\r\nX: 1\r\n\r\n")


CONF = """
accounts {
  A: { users: [ {user: a, password: pa} ],
       exports: [ {service: "one"}, {service: "feed", response_type: stream,
                                     response_threshold: "10s"} ] }
  B: { users: [ {user: b, password: pb} ],
       imports: [ {service: {account: A, subject: "one"}},
                  {service: {account: A, subject: "feed"}} ] }
}
"""


def test_response_imports_live_on_the_server_clock():
    """A singleton response import is gone after its response; a streamed one stays while
    responses come within the threshold and expires on the (virtual) server clock."""
    async def main() -> None:
        config = parse_config(CONF)
        async with Server(config, port=0, clock="virtual") as server:
            a = await nats.connect(server.client_url, user="a", password="pa")
            b = await nats.connect(server.client_url, user="b", password="pb")
            links = server.account_links["A"]
            replies: list[str] = []

            async def serve(msg) -> None:
                replies.append(msg.reply)
                await msg.respond(b"r1")

            await a.subscribe("one", cb=serve)
            held: list[str] = []

            async def hold(msg) -> None:
                held.append(msg.reply)

            await a.subscribe("feed", cb=hold)
            await a.flush()
            assert (await b.request("one", b"q", timeout=2)).data == b"r1"
            assert replies[0].startswith("_R_.") and links.num_responses() == 0
            assert server.account_sublist("A").links is None  # off A's publish path again
            inbox = b.new_inbox()
            sub = await b.subscribe(inbox)
            await b.publish("feed", b"q", reply=inbox)
            await b.flush()
            for _ in range(100):
                if held:
                    break
                await asyncio.sleep(0.01)
            assert links.num_responses() == 1
            assert server.account_sublist("A").links is links
            await server.clock.advance_async(6)
            await a.publish(held[0], b"c1")
            await a.flush()
            assert (await sub.next_msg(timeout=2)).data == b"c1"
            await server.clock.advance_async(6)  # 12 s after the request, 6 s after c1
            await a.publish(held[0], b"c2")
            await a.flush()
            assert (await sub.next_msg(timeout=2)).data == b"c2"
            await server.clock.advance_async(11)
            assert links.num_responses() == 0
            await a.publish(held[0], b"late")
            await a.flush()
            with pytest.raises(nats.errors.TimeoutError):
                await sub.next_msg(timeout=0.3)
            await a.close()
            await b.close()

    asyncio.run(main())


def test_account_report_shapes():
    """The /accountz fields, shaped as nats-server 2.15.1 answered for this config (its
    exports and imports come in map order; these in a fixed one)."""
    from minijs.core.imports import account_report

    config = parse_config("""
accounts {
  A: { exports: [ {stream: "a.>"}, {stream: "private.>", accounts: [B]}, {service: "svc.>"},
                  {service: "feed", response_type: stream, response_threshold: "10s"} ] }
  B: { imports: [ {stream: {account: A, subject: "a.>"}, prefix: "x"},
                  {stream: {account: A, subject: "private.>"}, to: "p.>"},
                  {service: {account: A, subject: "svc.q"}, to: "q"},
                  {service: {account: A, subject: "feed"}} ],
       mappings: { "m1": "m2" } }
}
""")
    a, _ = account_report(config, "A")
    assert a == {"exports": [
        {"subject": "svc.>", "type": "service", "response_type": "Singleton"},
        {"subject": "feed", "type": "service", "response_type": "Streamed"},
        {"subject": "a.>", "type": "stream"},
        {"subject": "private.>", "type": "stream", "approved_accounts": ["B"]}]}
    b, after = account_report(config, "B")
    assert after == {}
    assert b == {
        "mappings": {"m1": [{"subject": "m2", "weight": 100}]},
        "imports": [
            {"subject": "a.>", "account": "A", "local_subject": "x.a.>", "type": "stream",
             "invalid": False, "share": False, "tracking": False},
            {"subject": "private.>", "account": "A", "local_subject": "p.>", "type": "stream",
             "invalid": False, "share": False, "tracking": False},
            {"subject": "svc.q", "account": "A", "to": "q", "local_subject": "q",
             "type": "service", "invalid": False, "share": False, "tracking": False},
            {"subject": "feed", "account": "A", "to": "feed", "local_subject": "feed",
             "type": "service", "invalid": False, "share": False, "tracking": False}]}
    assert list(b) == ["mappings", "imports"]
