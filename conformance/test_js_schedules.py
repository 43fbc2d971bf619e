"""Message schedules (``allow_msg_schedules``, nats-server 2.12+): ``Nats-Schedule`` with
``@at``, ``@every`` and cron patterns, ``Nats-Schedule-Target`` / ``-Source`` / ``-TTL`` /
``-Rollup`` / ``-Time-Zone``, the messages a schedule produces (``Nats-Scheduler``,
``Nats-Schedule-Next``), replacement and removal of a schedule, and every validation error.

Cases that fire wait in real time (schedules fire on whole seconds, at least 1 s apart); they
poll the stream state and never assert on timing. nats-server runs due schedules at most every
250 ms, so "not fired" is only ever checked after a later schedule has fired."""
from __future__ import annotations

import base64
import re
import time
from datetime import datetime, timedelta, timezone

import pytest

from conformance.jshelpers import JsClient, api_error, b64, header_block, wait_for

H = header_block
SECOND = 1_000_000_000
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$")


def _at(seconds: float) -> str:
    """``@at`` a whole second at least ``seconds`` from now (UTC, RFC 3339)."""
    t = datetime.now(timezone.utc) + timedelta(seconds=seconds + 1)
    return "@at " + t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _msgs(js: JsClient, name: str) -> list[dict]:
    """Every stored message, headers decoded."""
    st = js.state(name)
    out = []
    for seq in range(st["first_seq"], st["last_seq"] + 1):
        r = js.msg_get(name, {"seq": seq})
        if "message" in r:
            m = r["message"]
            out.append({"seq": m["seq"], "subject": m["subject"],
                        "hdrs": base64.b64decode(m.get("hdrs", "")),
                        "data": base64.b64decode(m.get("data", ""))})
    return out


def _on(js: JsClient, name: str, subject: str) -> list[dict]:
    return [m for m in _msgs(js, name) if m["subject"] == subject]


def _headers(block: bytes) -> list[tuple[str, str]]:
    lines = block.decode().split("\r\n")[1:]
    return [(k, v.strip()) for k, _, v in (ln.partition(":") for ln in lines if ln)]


def _sched_stream(js: JsClient, name: str, **extra) -> str:
    p = name.lower()
    js.create(name, subjects=[f"{p}.>"], allow_msg_schedules=True, **extra)
    return p


# ------------------------------------------------------------------------------ config


def test_js_schedules_config_defaults(target: str, js: JsClient, stream_name: str) -> None:
    """``allow_msg_schedules`` turns on roll-ups (non-pedantic create) and shows in the config."""
    out = js.create(stream_name, subjects=[stream_name.lower()], allow_msg_schedules=True)
    cfg = out["config"]
    assert cfg["allow_msg_schedules"] is True
    assert cfg["allow_rollup_hdrs"] is True
    assert cfg["deny_purge"] is False


@pytest.mark.parametrize("extra, error", [
    ({"discard": "new"}, (500, 10052, "message scheduling cannot use discard new")),
    ({"mirror": {"name": "ORIGIN_SCHED"}, "subjects": None},
     (400, 10186, "stream mirrors can not also schedule messages")),
    ({"sources": [{"name": "ORIGIN_SCHED"}]},
     (400, 10187, "stream source can not also schedule messages")),
])
def test_js_schedules_config_errors(target: str, js: JsClient, stream_name: str,
                                    extra: dict, error: tuple) -> None:
    """Settings a schedule stream cannot have."""
    cfg = {"subjects": [stream_name.lower()], "allow_msg_schedules": True, **extra}
    if cfg.get("subjects") is None:
        del cfg["subjects"]
    out = js.create(stream_name, check=False, **cfg)
    assert out["error"] == api_error(*error)


def test_js_schedules_cannot_be_disabled(target: str, js: JsClient, stream_name: str) -> None:
    """Schedules may be turned on by an update, never off."""
    subj = [stream_name.lower()]
    js.create(stream_name, subjects=subj)
    out = js.update(stream_name, subjects=subj, allow_msg_schedules=True)
    assert out["config"]["allow_msg_schedules"] is True
    out = js.update(stream_name, subjects=subj, allow_msg_schedules=False, allow_rollup_hdrs=True)
    assert out["error"] == api_error(500, 10052, "message schedules can not be disabled")


# ------------------------------------------------------------------------------ validation


def test_js_schedules_disabled(target: str, js: JsClient, stream_name: str) -> None:
    """A stream without ``allow_msg_schedules`` refuses a schedule, valid or not, and the
    scheduler headers; nothing is stored."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"])
    disabled = api_error(400, 10188, "message schedules is disabled")
    for hdrs in [(("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", f"{p}.t")),
                 (("Nats-Schedule", "bogus"),),
                 (("Nats-Schedule-Next", "purge"), ("Nats-Scheduler", f"{p}.other"))]:
        assert js.pub(f"{p}.s", b"", H(*hdrs))["error"] == disabled
    assert js.pub(f"{p}.s", b"", H(("Nats-Scheduler", f"{p}.x")))["error"] == api_error(
        400, 10212, "message schedules invalid scheduler")
    assert js.state(stream_name)["messages"] == 0


PATTERN = (400, 10189, "message schedules pattern is invalid")
TARGET = (400, 10190, "message schedules target is invalid")
TTL = (400, 10191, "message schedules invalid per-message TTL")
ROLLUP = (400, 10192, "message schedules invalid rollup")
SOURCE = (400, 10203, "message schedules source is invalid")
SCHEDULER = (400, 10212, "message schedules invalid scheduler")
ZONE = (400, 10223, "message schedules time zone is invalid")


@pytest.mark.parametrize("hdrs, error", [
    ([("Nats-Schedule", "bogus")], PATTERN),
    ([("Nats-Schedule", "@every 500ms"), ("Nats-Schedule-Target", "{p}.t")], PATTERN),
    ([("Nats-Schedule", "@every x"), ("Nats-Schedule-Target", "{p}.t")], PATTERN),
    ([("Nats-Schedule", "@at tomorrow"), ("Nats-Schedule-Target", "{p}.t")], PATTERN),
    ([("Nats-Schedule", "* * * * *"), ("Nats-Schedule-Target", "{p}.t")], PATTERN),
    ([("Nats-Schedule", "0 0 25 * * *"), ("Nats-Schedule-Target", "{p}.t")], PATTERN),
    ([("Nats-Schedule", "0 0 0 30 2 *"), ("Nats-Schedule-Target", "{p}.t")], PATTERN),
    ([("Nats-Schedule", "0 0 0 * * 7"), ("Nats-Schedule-Target", "{p}.t")], PATTERN),
    ([("Nats-Schedule", "0 0 12 ? * 1#2"), ("Nats-Schedule-Target", "{p}.t")], PATTERN),
    ([("Nats-Schedule", "0 0 0 ,, * *"), ("Nats-Schedule-Target", "{p}.t")], PATTERN),
    ([("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "{p}.t"),
      ("Nats-Schedule-Time-Zone", "UTC")], PATTERN),
    ([("Nats-Schedule", "@hourly"), ("Nats-Schedule-Target", "{p}.t"),
      ("Nats-Schedule-Time-Zone", "Not/AZone")], ZONE),
    ([("Nats-Schedule", "@every 1s")], TARGET),
    ([("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "other.t")], TARGET),
    ([("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "{p}.s")], TARGET),
    ([("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "{p}.*")], TARGET),
    ([("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "{p}.t"),
      ("Nats-Schedule-TTL", "soon")], TTL),
    ([("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "{p}.t"),
      ("Nats-Schedule-TTL", "5s")], (400, 10166, "per-message TTL is disabled")),
    ([("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "{p}.t"),
      ("Nats-Schedule-Rollup", "all")], ROLLUP),
    ([("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "{p}.t"),
      ("Nats-Rollup", "all")], ROLLUP),
    ([("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "{p}.t"),
      ("Nats-Schedule-Source", "{p}.t")], SOURCE),
    ([("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "{p}.t"),
      ("Nats-Schedule-Source", "other.x")], SOURCE),
    ([("Nats-Schedule-Next", "2030-01-01T00:00:00Z"), ("Nats-Scheduler", "{p}.x")], SCHEDULER),
    ([("Nats-Schedule-Next", "purge")], SCHEDULER),
    ([("Nats-Schedule-Next", "purge"), ("Nats-Scheduler", "{p}.s")], SCHEDULER),
    ([("Nats-Schedule-Next", "purge"), ("Nats-Scheduler", "{p}.plain")], SCHEDULER),
    ([("Nats-Scheduler", "{p}.x")], SCHEDULER),
])
def test_js_schedules_invalid(target: str, js: JsClient, stream_name: str,
                              hdrs: list, error: tuple) -> None:
    """Each invalid schedule gets its own error; nothing is stored."""
    p = _sched_stream(js, stream_name)
    js.pub_ok(f"{p}.plain", b"not a schedule")
    block = H(*[(k, v.format(p=p)) for k, v in hdrs])
    assert js.pub(f"{p}.s", b"", block)["error"] == api_error(*error)
    assert js.state(stream_name)["messages"] == 1


@pytest.mark.parametrize("pattern", [
    "@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually",
    "0 30 9 * * MON-FRI", "*/15 * * ? JAN,jul *", "0 0 0 1-7/2 * sun", "@every 1h30m",
    "@at 2020-01-01T00:00:00Z", "+5 * * * * *", "0 0 0 * * SUN-SAT", "0 0 0 1,,15 * *",
])
def test_js_schedules_patterns_accepted(target: str, js: JsClient, stream_name: str,
                                        pattern: str) -> None:
    """Patterns nats-server accepts (cron with names, ranges, steps; an ``@at`` in the past)."""
    p = _sched_stream(js, stream_name)
    js.pub_ok(f"{p}.s", b"", H(("Nats-Schedule", pattern), ("Nats-Schedule-Target", f"{p}.t")))


# ------------------------------------------------------------------------------ storage


def test_js_schedule_stored_with_rollup(target: str, js: JsClient, stream_name: str) -> None:
    """A schedule is stored with ``Nats-Rollup: sub`` added; a newer one on the same subject
    replaces it, and a plain message there replaces it too."""
    p = _sched_stream(js, stream_name)
    sched = [("Nats-Schedule", "@at 2099-01-01T00:00:00Z"), ("Nats-Schedule-Target", f"{p}.t")]
    js.pub_ok(f"{p}.s", b"one", H(*sched))
    assert js.msg_get(stream_name, {"seq": 1})["message"]["hdrs"] == b64(
        H(*sched, ("Nats-Rollup", "sub")))
    js.pub_ok(f"{p}.s", b"two", H(*sched, ("Nats-Rollup", "sub")))
    st = js.state(stream_name)
    assert (st["messages"], st["first_seq"], st["last_seq"]) == (1, 2, 2)
    assert js.msg_get(stream_name, {"seq": 2})["message"]["hdrs"] == b64(
        H(*sched, ("Nats-Rollup", "sub")))


# ------------------------------------------------------------------------------ firing


def test_js_schedule_at_fires_once(target: str, js: JsClient, stream_name: str) -> None:
    """An ``@at`` schedule produces one message on its target (its headers minus the schedule,
    dedup, TTL and rollup headers, plus ``Nats-Scheduler`` and ``Nats-Schedule-Next: purge``),
    then the schedule itself is purged."""
    p = _sched_stream(js, stream_name, allow_msg_ttl=True)
    js.pub_ok(f"{p}.t", b"before")
    js.pub_ok(f"{p}.s", b"payload", H(
        ("Nats-Schedule", _at(0.5)), ("Nats-Schedule-Target", f"{p}.t"), ("App", "1"),
        ("Nats-Msg-Id", "m1"), ("Nats-TTL", "1h"), ("Nats-Expected-Last-Sequence", "1")))
    out = wait_for(lambda: len(t := _on(js, stream_name, f"{p}.t")) == 2 and t, timeout=10)
    fired = out[1]
    assert fired["seq"] == 3
    assert fired["data"] == b"payload"
    assert _headers(fired["hdrs"]) == [("App", "1"), ("Nats-Scheduler", f"{p}.s"),
                                       ("Nats-Schedule-Next", "purge")]
    wait_for(lambda: not _on(js, stream_name, f"{p}.s"), timeout=5)
    st = js.state(stream_name)
    assert (st["messages"], st["last_seq"]) == (2, 3)


def test_js_schedule_ttl_rollup_and_source(target: str, js: JsClient, stream_name: str) -> None:
    """``Nats-Schedule-TTL`` / ``-Rollup`` become the produced message's ``Nats-TTL`` /
    ``Nats-Rollup``; with ``Nats-Schedule-Source`` the produced message carries the last message
    of that subject (its headers and payload) instead of the schedule's."""
    p = _sched_stream(js, stream_name, allow_msg_ttl=True)
    js.pub_ok(f"{p}.t", b"old-1")
    js.pub_ok(f"{p}.t", b"old-2")
    js.pub_ok(f"{p}.src", b"from source", H(("Src", "yes"), ("Nats-Msg-Id", "s1")))
    js.pub_ok(f"{p}.s", b"from schedule", H(
        ("Nats-Schedule", _at(0.5)), ("Nats-Schedule-Target", f"{p}.t"),
        ("Nats-Schedule-Source", f"{p}.src"), ("Nats-Schedule-TTL", "1h"),
        ("Nats-Schedule-Rollup", "sub"), ("Own", "x")))
    out = wait_for(lambda: len(t := _on(js, stream_name, f"{p}.t")) == 1
                   and t[0]["data"] == b"from source" and t, timeout=10)
    assert _headers(out[0]["hdrs"]) == [
        ("Src", "yes"), ("Nats-Scheduler", f"{p}.s"), ("Nats-Schedule-Next", "purge"),
        ("Nats-TTL", "1h"), ("Nats-Rollup", "sub")]
    wait_for(lambda: not _on(js, stream_name, f"{p}.s"), timeout=5)


def test_js_schedule_source_without_message(target: str, js: JsClient, stream_name: str) -> None:
    """With no message on ``Nats-Schedule-Source`` the schedule's own content is produced."""
    p = _sched_stream(js, stream_name)
    js.pub_ok(f"{p}.s", b"own", H(("Nats-Schedule", _at(0.5)), ("Nats-Schedule-Target", f"{p}.t"),
                                  ("Nats-Schedule-Source", f"{p}.empty"), ("Own", "x")))
    out = wait_for(lambda: (t := _on(js, stream_name, f"{p}.t")) and t, timeout=10)
    assert out[0]["data"] == b"own"
    assert _headers(out[0]["hdrs"]) == [("Own", "x"), ("Nats-Scheduler", f"{p}.s"),
                                        ("Nats-Schedule-Next", "purge")]


def test_js_schedule_every_repeats(target: str, js: JsClient, stream_name: str) -> None:
    """``@every 1s`` keeps its schedule message and produces a message each time, each saying
    when the next one is due (RFC 3339, later each time)."""
    p = _sched_stream(js, stream_name)
    js.pub_ok(f"{p}.s", b"tick", H(("Nats-Schedule", "@every 1s"),
                                   ("Nats-Schedule-Target", f"{p}.t")))
    out = wait_for(lambda: len(t := _on(js, stream_name, f"{p}.t")) >= 2 and t, timeout=10)
    nexts = []
    for m in out[:2]:
        hdrs = _headers(m["hdrs"])
        assert [k for k, _ in hdrs] == ["Nats-Scheduler", "Nats-Schedule-Next"]
        assert hdrs[0][1] == f"{p}.s"
        assert RFC3339.match(hdrs[1][1]), hdrs
        assert m["data"] == b"tick"
        nexts.append(hdrs[1][1])
    assert nexts[0] < nexts[1]
    assert len(_on(js, stream_name, f"{p}.s")) == 1


def test_js_schedule_cron_in_time_zone(target: str, js: JsClient, stream_name: str) -> None:
    """A cron schedule firing every second in a time zone announces its next time with the
    zone's offset."""
    p = _sched_stream(js, stream_name)
    js.pub_ok(f"{p}.s", b"c", H(("Nats-Schedule", "* * * * * *"),
                                ("Nats-Schedule-Time-Zone", "Asia/Kolkata"),
                                ("Nats-Schedule-Target", f"{p}.t")))
    out = wait_for(lambda: (t := _on(js, stream_name, f"{p}.t")) and t, timeout=10)
    nxt = dict(_headers(out[0]["hdrs"]))["Nats-Schedule-Next"]
    assert RFC3339.match(nxt) and nxt.endswith("+05:30"), nxt


def test_js_schedule_removed_and_replaced(target: str, js: JsClient, stream_name: str) -> None:
    """A deleted schedule, a purged one and one overwritten by a plain message never fire; a
    replaced one fires with its new content. Checked once a later schedule has fired."""
    p = _sched_stream(js, stream_name)

    def sched(subject: str, when: str, data: bytes) -> int:
        return js.pub_ok(f"{p}.{subject}", data, H(("Nats-Schedule", when),
                                                   ("Nats-Schedule-Target", f"{p}.t.{subject}")))

    soon = _at(0.5)
    seq_a = sched("a", soon, b"a")
    sched("b", soon, b"b")
    sched("c", soon, b"c")
    sched("d", "@at 2099-01-01T00:00:00Z", b"d-old")
    assert js.msg_delete(stream_name, {"seq": seq_a}).get("success") is True
    assert js.purge(stream_name, {"filter": f"{p}.b"}).get("success") is True
    js.pub_ok(f"{p}.c", b"plain")
    sched("d", soon, b"d-new")
    sched("z", _at(1.5), b"z")
    wait_for(lambda: _on(js, stream_name, f"{p}.t.z"), timeout=10)
    fired = sorted((m["subject"], m["data"]) for m in _msgs(js, stream_name)
                   if m["subject"].startswith(f"{p}.t."))
    assert fired == [(f"{p}.t.d", b"d-new"), (f"{p}.t.z", b"z")]


def test_js_schedule_purged_by_client(target: str, js: JsClient, stream_name: str) -> None:
    """A client may remove a schedule with ``Nats-Schedule-Next: purge`` and
    ``Nats-Scheduler``: the message is stored and the schedule's subject purged."""
    p = _sched_stream(js, stream_name)
    js.pub_ok(f"{p}.s", b"", H(("Nats-Schedule", "@every 1h"), ("Nats-Schedule-Target", f"{p}.t")))
    seq = js.pub_ok(f"{p}.x", b"stop", H(("Nats-Schedule-Next", "purge"),
                                         ("Nats-Scheduler", f"{p}.s")))
    assert seq == 2
    assert [m["subject"] for m in _msgs(js, stream_name)] == [f"{p}.x"]
    # a scheduler subject with no message at all is accepted too
    js.pub_ok(f"{p}.y", b"", H(("Nats-Schedule-Next", "purge"), ("Nats-Scheduler", f"{p}.none")))


def test_js_schedule_without_interest_stops(target: str, js: JsClient, stream_name: str) -> None:
    """On an interest stream whose consumers do not want the target, the first produced message
    only takes a sequence; nats-server never hears back from its store, so the repeating
    schedule stays "in flight" and fires no more (checked 3 s later)."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"], allow_msg_schedules=True, retention="interest")
    out = js.api(f"CONSUMER.CREATE.{stream_name}.C", {"stream_name": stream_name, "config": {
        "durable_name": "C", "filter_subject": f"{p}.s", "ack_policy": "explicit"}})
    assert "error" not in out, out
    js.pub_ok(f"{p}.s", b"x", H(("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", f"{p}.t")))
    wait_for(lambda: js.state(stream_name)["last_seq"] == 2, timeout=10)
    time.sleep(3)
    st = js.state(stream_name)
    assert (st["messages"], st["last_seq"]) == (1, 2)
