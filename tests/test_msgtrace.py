"""Message tracing internals: header lifting, Go JSON, server time, the floors."""
from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

import nats

from minijs import Server
from minijs.clock import VirtualClock
from minijs.core import msgtrace


def test_header_map_lifts_headers_as_nats_server():
    hdr = (b"NATS/1.0\r\nNats-Trace-Dest:  t.x \t\r\nA: 1\r\nA: 2\r\nEmpty: \r\n"
           b"b-Case: v\r\n\r\n")
    assert msgtrace.header_map(hdr) == ({"Nats-Trace-Dest": ["t.x"], "A": ["1", "2"],
                                         "b-Case": ["v"]}, False)


def test_header_map_none_without_destination():
    none = (None, False)
    assert msgtrace.header_map(b"NATS/1.0\r\nA: 1\r\n\r\n") == none
    assert msgtrace.header_map(b"NATS/1.0\r\nnats-trace-dest: t\r\n\r\n") == none
    assert msgtrace.header_map(b"NATS/1.0\r\nNats-Trace-Dest: trace disabled\r\n\r\n") == none
    assert msgtrace.header_map(b"NATS/1.0 503\r\nNats-Trace-Dest: t\r\n\r\n") == none
    assert msgtrace.header_map(b"NATS/1.0\r\ntraceparent: 00-a-b-00\r\n\r\n") == none


def test_header_map_sampled_traceparent_is_external():
    hdr = b"NATS/1.0\r\nTraceParent: 00-a-b-01\r\n\r\n"
    assert msgtrace.header_map(hdr) == ({"TraceParent": ["00-a-b-01"]}, True)
    both = b"NATS/1.0\r\ntraceparent: 00-a-b-01\r\nNats-Trace-Dest: t\r\n\r\n"
    assert msgtrace.header_map(both)[1] is False


def test_start_trace_only_and_invalid_destinations():
    clock = VirtualClock(start=0)
    hdr = b"NATS/1.0\r\nNats-Trace-Dest: t.x\r\nNats-Trace-Only: On\r\n\r\n"
    skip, trace, rewritten = msgtrace.start(hdr, 7, "me", b"s", 10, clock)
    assert not skip and rewritten is None and trace is not None and trace.only
    bad = b"NATS/1.0\r\nNats-Trace-Dest: t.*\r\nNats-Trace-Only: true\r\n\r\n"
    assert msgtrace.start(bad, 7, "", b"s", 10, clock) == (True, None, None)
    bad = b"NATS/1.0\r\nNats-Trace-Dest: t..x\r\n\r\n"
    assert msgtrace.start(bad, 7, "", b"s", 10, clock) == (False, None, None)


def test_origin_account_header_disables_tracing():
    hdr = b"NATS/1.0\r\nNats-Trace-Dest: t.x\r\nNats-Trace-Origin-Account: A\r\n\r\n"
    skip, trace, rewritten = msgtrace.start(hdr, 1, "", b"s", 1, VirtualClock())
    assert (skip, trace) == (False, None)
    assert rewritten == (b"NATS/1.0\r\nNats-Trace-Origin-Account: A\r\n"
                         b"Nats-Trace-Dest: trace disabled\r\n\r\n")


def test_go_json_and_time():
    assert msgtrace.go_json({"a": "<&>\u2028é"}) == '{"a":"\\u003c\\u0026\\u003e\\u2028é"}'.encode()
    assert msgtrace.go_time(1_700_000_000_120_000_000) == "2023-11-14T22:13:20.12Z"
    assert msgtrace.go_time(1_700_000_000_000_000_000) == "2023-11-14T22:13:20Z"


def test_core_does_not_import_jetstream():
    core = Path(msgtrace.__file__).parent
    for path in core.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(("minijs.jetstream", "minijs.server")), path


async def test_trace_events_stamped_by_server_clock():
    clock = VirtualClock(start=1_800_000_000.5)
    async with Server(port=0, clock=clock, jetstream=True) as server:
        nc = await nats.connect(server.client_url)
        try:
            got: asyncio.Queue = asyncio.Queue()

            async def cb(m):
                await got.put(m)
            await nc.subscribe("trace.dest", cb=cb)
            js = nc.jetstream()
            await js.add_stream(name="S", subjects=["s.>"], storage="memory")
            await nc.request("s.a", b"v", timeout=2, headers={"Nats-Trace-Dest": "trace.dest"})
            event = json.loads((await asyncio.wait_for(got.get(), 2)).data)
            stamps = {event["server"]["time"]} | {e["ts"] for e in event["events"]}
            assert stamps == {"2027-01-15T08:00:00.5Z"}
            assert [e["type"] for e in event["events"]] == ["in", "js"]
            assert event["events"][1]["subject"] == "s.a"
            stored = await js.get_msg("S", 1)
            assert stored.headers == {"Nats-Trace-Dest": "trace disabled"}
        finally:
            await nc.close()
