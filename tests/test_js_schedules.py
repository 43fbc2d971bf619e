"""Message schedules on the virtual clock: an ``@every 1h`` schedule produces its messages the
moment time is advanced (milliseconds of real time), ``@at`` fires exactly at its time, removed
schedules stay silent, schedules survive a restart; and the cron arithmetic. Wire-level
behaviour against nats-server is in conformance/test_js_schedules.py."""
from __future__ import annotations

import time
from typing import Any

import pytest

from minijs.clock import VirtualClock
from minijs.jetstream.streams import schedules as S
from minijs.jetstream.jsonfmt import go_time, parse_go_time
from minijs.server import Server

from jsapi import api

START = 1_800_000_000  # 2027-01-15T08:00:00Z, a Friday
HOUR = 3600


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(start=START)


async def create(nc: Any, name: str, **cfg: Any) -> dict:
    cfg.setdefault("subjects", [f"{name.lower()}.>"])
    out = await api(nc, f"STREAM.CREATE.{name}", {"name": name, "allow_msg_schedules": True, **cfg})
    assert "error" not in out, out
    return out


async def on_subject(nc: Any, stream: str, subject: str) -> list[Any]:
    js = nc.jetstream()
    info = await js.stream_info(stream)
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            msg = await js.get_msg(stream, seq)
        except Exception:
            continue
        if msg.subject == subject:
            out.append(msg)
    return out


@pytest.mark.parametrize("storage", ["memory", "file"])
async def test_every_hour_on_the_virtual_clock(nc: Any, clock: VirtualClock, storage: str) -> None:
    await create(nc, "TICK", storage=storage)
    js = nc.jetstream()
    sub = await js.pull_subscribe("tick.out", "C", stream="TICK")
    began = time.monotonic()
    await js.publish("tick.sched", b"beat", headers={
        "Nats-Schedule": "@every 1h", "Nats-Schedule-Target": "tick.out"})
    await clock.advance_async(HOUR - 1)
    assert await on_subject(nc, "TICK", "tick.out") == []
    await clock.advance_async(1)  # 09:00:00Z: the first beat
    out = await on_subject(nc, "TICK", "tick.out")
    assert len(out) == 1 and out[0].data == b"beat"
    assert out[0].headers == {"Nats-Scheduler": "tick.sched",
                              "Nats-Schedule-Next": "2027-01-15T10:00:00Z"}
    await clock.advance_async(HOUR)
    assert len(await on_subject(nc, "TICK", "tick.out")) == 2
    await clock.advance_async(5 * HOUR)  # each timer fires at its own time: five more beats
    out = await on_subject(nc, "TICK", "tick.out")
    assert len(out) == 7
    assert out[6].headers["Nats-Schedule-Next"] == "2027-01-15T16:00:00Z"
    msgs = await sub.fetch(7, timeout=1)
    assert [m.data for m in msgs] == [b"beat"] * 7
    assert len(await on_subject(nc, "TICK", "tick.sched")) == 1  # the schedule stays
    assert time.monotonic() - began < 5  # eight virtual hours, in (much less than) seconds


async def test_at_fires_exactly_at_its_time(nc: Any, clock: VirtualClock) -> None:
    await create(nc, "AT")
    js = nc.jetstream()
    await js.publish("at.sched", b"once", headers={
        "Nats-Schedule": "@at 2027-01-15T08:00:10Z", "Nats-Schedule-Target": "at.out",
        "Nats-Msg-Id": "x"})
    await clock.advance_async(9.999)
    assert await on_subject(nc, "AT", "at.out") == []
    await clock.advance_async(0.001)
    out = await on_subject(nc, "AT", "at.out")
    assert len(out) == 1
    assert out[0].headers == {"Nats-Scheduler": "at.sched", "Nats-Schedule-Next": "purge"}
    assert await on_subject(nc, "AT", "at.sched") == []  # the schedule is purged
    await clock.advance_async(HOUR)
    assert len(await on_subject(nc, "AT", "at.out")) == 1


async def test_at_in_the_past_fires_on_the_next_advance(nc: Any, clock: VirtualClock) -> None:
    await create(nc, "PAST")
    js = nc.jetstream()
    await js.publish("past.sched", b"late", headers={
        "Nats-Schedule": "@at 2020-01-01T00:00:00Z", "Nats-Schedule-Target": "past.out"})
    await clock.advance_async(0)
    assert len(await on_subject(nc, "PAST", "past.out")) == 1


async def test_removed_schedules_do_not_fire(nc: Any, clock: VirtualClock) -> None:
    await create(nc, "RM")
    js = nc.jetstream()
    for name in ("a", "b", "c"):
        await js.publish(f"rm.{name}", name.encode(), headers={
            "Nats-Schedule": "@every 1m", "Nats-Schedule-Target": f"rm.out.{name}"})
    await js.purge_stream("RM", subject="rm.a")
    await js.publish("rm.b", b"plain")  # a plain message on the schedule subject ends it
    await js.publish("rm.x", b"", headers={"Nats-Schedule-Next": "purge", "Nats-Scheduler": "rm.c"})
    await clock.advance_async(HOUR)
    for name in ("a", "b", "c"):
        assert await on_subject(nc, "RM", f"rm.out.{name}") == []


async def test_schedules_survive_a_restart(server: Server, clock: VirtualClock) -> None:
    import nats
    nc = await nats.connect(server.client_url)
    await create(nc, "DUR", storage="file")
    js = nc.jetstream()
    await js.publish("dur.sched", b"d", headers={
        "Nats-Schedule": "@every 1h", "Nats-Schedule-Target": "dur.out"})
    await nc.close()
    await server.restart()
    nc = await nats.connect(server.client_url)
    await clock.advance_async(HOUR)
    assert len(await on_subject(nc, "DUR", "dur.out")) == 1
    await nc.close()


# ------------------------------------------------------------------------------ patterns

def _ns(text: str) -> int:
    return parse_go_time(text)


@pytest.mark.parametrize("pattern, after, expected", [
    ("0 30 9 * * MON-FRI", "2027-01-16T12:00:00Z", "2027-01-18T09:30:00Z"),  # Sat → Mon
    ("*/15 * * * * *", "2027-01-15T08:00:07Z", "2027-01-15T08:00:15Z"),
    ("0 0 0 1 1 *", "2027-06-01T00:00:00Z", "2028-01-01T00:00:00Z"),
    ("0 0 12 29 2 *", "2027-03-01T00:00:00Z", "2028-02-29T12:00:00Z"),
    ("0 0 0 13 * fri", "2027-01-01T00:00:00Z", "2027-01-01T00:00:00Z"),  # dom OR dow
])
def test_next_cron(pattern: str, after: str, expected: str) -> None:
    got = S.next_cron(pattern, None, _ns(after) - 1)
    assert go_time(got) == expected


def test_cron_in_a_time_zone() -> None:
    from zoneinfo import ZoneInfo
    paris = ZoneInfo("Europe/Paris")
    got = S.next_cron("0 0 9 * * *", paris, _ns("2027-01-15T10:00:00Z"))
    assert go_time(got) == "2027-01-16T08:00:00Z"  # 09:00 in Paris (UTC+1 in winter)
    got = S.next_cron("0 0 9 * * *", paris, _ns("2027-07-15T10:00:00Z"))
    assert go_time(got) == "2027-07-16T07:00:00Z"  # UTC+2 in summer
    assert S._offset(got, paris) == 7200


@pytest.mark.parametrize("pattern", [
    "", "@every 999ms", "@every", "@at 2027-13-01T00:00:00Z", "0 0 0 31 2 *", "60 * * * * *",
    "* * * * *", "1-2-3 * * * * *", "*/0 * * * * *", "@every 1h junk", ", * * * * *",
    "0 0 0 ,, * *"])
def test_invalid_or_empty_patterns(pattern: str) -> None:
    when, _, ok = S.parse_schedule(pattern, None, _ns("2027-01-15T00:00:00Z"),
                                   _ns("2027-01-15T00:00:00Z"))
    assert (when, ok) == (0, True) if pattern == "" else not ok


def test_every_skips_ahead_when_behind() -> None:
    ts, now = _ns("2027-01-15T00:00:00.4Z"), _ns("2027-01-15T05:00:00.6Z")
    assert S.parse_schedule("@every 1h", None, ts, ts) == (_ns("2027-01-15T01:00:00Z"), True, True)
    assert S.parse_schedule("@every 1h", None, ts, now) == (_ns("2027-01-15T06:00:01Z"), True, True)
