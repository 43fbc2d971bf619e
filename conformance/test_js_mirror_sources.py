"""Stream mirrors and sources between streams of one server: create replies and stream info
(``mirror`` / ``sources`` state), catch-up and live follow, origin sequences, gaps and
timestamps kept by mirrors, the ``Nats-Stream-Source`` header sources add (byte for byte),
filters and subject transforms, start options, duplicates, config updates (promotion, sources
added and removed) and the errors for what is refused, cycles, origins created late, deleted
and re-created, ``mirror_direct``, Key-Value buckets mirrored and sourced, work-queue and
interest origins, limits on the follower, restarts.

Mirrors and sources start a moment after their stream is created and follow asynchronously,
so every wait polls (``wait_for``); nothing depends on how long the follower takes.
"""
from __future__ import annotations

import asyncio
import base64
from typing import Any

import nats.errors
import nats.js.errors
import pytest

from conformance.helpers import restartable
from conformance.jshelpers import (
    TIMESTAMP,
    TYPE_PREFIX,
    JsClient,
    api_error,
    default_config,
    empty_state,
    get_hash,
    header_block,
    parse_msg,
    unique_name,
    wait_for,
)
from conformance.pullconsumer import pull
from conformance.streamcontent import get, hdrs, messages, origin_seqs, wait_messages

#: Key order of ``StreamSourceInfo`` (``external``/``error``/``filter_subject``/
#: ``subject_transforms`` only when set; ``seq`` for sources once something was sourced).
def identity(js: JsClient, stream: str) -> str:
    """A stream's identity as sources record it: the hash of its ``created`` timestamp."""
    return get_hash(js.info(stream)["created"])


def mirror_config(name: str, origin: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    """The config echoed for a mirror created with only a name and ``mirror``: no subjects,
    no duplicate window, ``mirror`` after ``num_replicas``."""
    cfg = default_config(name, None, **overrides)
    del cfg["subjects"]
    del cfg["duplicate_window"]
    out: dict[str, Any] = {}
    for k, v in cfg.items():
        out[k] = v
        if k == "num_replicas":
            out["mirror"] = origin
    return out


def source_header(js: JsClient, origin: str, seq: int, subject: str, filt: str = ">",
                  dest: str = ">") -> str:
    return f"{origin} {seq} {filt} {dest} {subject} {identity(js, origin)}"


# ---------------------------------------------------------------------- mirrors


def test_mirror_create_reply(target: str, js: JsClient) -> None:
    """The create reply of a mirror: config without subjects or duplicate window, the mirror
    echoed, an empty state (it starts a moment later) and ``mirror`` state with ``active -1``
    (not heard from yet), before ``ts``."""
    origin, mirror = unique_name(), unique_name()
    js.create(origin, subjects=[f"{origin.lower()}.>"])
    js.pub_ok(f"{origin.lower()}.a", b"x")
    out = js.create(mirror, mirror={"name": origin})
    assert list(out) == ["type", "config", "created", "state", "mirror", "ts", "did_create"]
    assert out["type"] == TYPE_PREFIX + "stream_create_response"
    assert out["config"] == mirror_config(mirror, {"name": origin})
    assert list(out["config"]) == list(mirror_config(mirror, {"name": origin}))
    assert out["state"] == empty_state()
    assert out["mirror"] == {"name": origin, "lag": 0, "active": -1}


def test_mirror_catches_up_and_follows(target: str, js: JsClient) -> None:
    """A mirror copies what the origin holds, then what is published to it afterwards: same
    sequences, subjects, headers, payloads and timestamps. Its info reports ``lag 0`` and how
    long ago it last heard from the origin (under the 1 s heartbeat, as ns)."""
    origin, mirror = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.a", b"one")
    js.pub_ok(f"{p}.b", b"two", header_block(("K", "v"), ("Nats-Msg-Id", "m2")))
    js.create(mirror, mirror={"name": origin})
    wait_messages(js, mirror, 2)
    js.pub_ok(f"{p}.c", b"three")
    st = wait_messages(js, mirror, 3)
    assert (st["first_seq"], st["last_seq"], st["num_subjects"]) == (1, 3, 3)
    assert messages(js, mirror) == messages(js, origin)
    info = js.info(mirror)
    assert list(info) == ["type", "total", "offset", "limit", "config", "created", "state",
                          "cluster", "mirror", "ts"]
    m = info["mirror"]
    assert list(m) == ["name", "lag", "active"]
    assert (m["name"], m["lag"]) == (origin, 0)
    assert isinstance(m["active"], int) and 0 <= m["active"] < 5_000_000_000
    assert js.state(mirror)["bytes"] == js.state(origin)["bytes"]


def test_mirror_keeps_origin_gaps(target: str, js: JsClient) -> None:
    """A message deleted in the origin before the mirror copied it is a deleted sequence in the
    mirror: sequences stay the origin's."""
    origin, mirror = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    for i in range(5):
        js.pub_ok(f"{p}.{i}", b"x%d" % i)
    assert js.msg_delete(origin, {"seq": 2})["success"] is True
    assert js.msg_delete(origin, {"seq": 4})["success"] is True
    js.create(mirror, mirror={"name": origin})
    wait_messages(js, mirror, 3)
    st = js.info(mirror, {"deleted_details": True})["state"]
    assert (st["first_seq"], st["last_seq"], st["num_deleted"], st["deleted"]) == (1, 5, 2, [2, 4])
    assert [m["seq"] for m in messages(js, mirror)] == [1, 3, 5]


def test_mirror_of_purged_origin_starts_after_it(target: str, js: JsClient) -> None:
    """A mirror of an origin whose messages were purged starts at the origin's next sequence,
    without gaps: first sequence past the purge, nothing deleted."""
    origin, mirror = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    for i in range(3):
        js.pub_ok(f"{p}.{i}")
    js.purge(origin)
    js.create(mirror, mirror={"name": origin})
    st = wait_for(lambda: (s := js.state(mirror))["last_seq"] == 3 and s)
    assert st == empty_state(first_seq=4, last_seq=3)
    js.pub_ok(f"{p}.x", b"after")
    st = wait_messages(js, mirror, 1)
    assert (st["first_seq"], st["last_seq"]) == (4, 4)
    assert "num_deleted" not in st


def test_mirror_filter_subject(target: str, js: JsClient) -> None:
    """``filter_subject``: only matching messages, at their origin sequences; the mirror's
    first sequence is the first match; info reports the filter."""
    origin, mirror = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    for i in range(6):
        js.pub_ok(f"{p}.{i % 2}", b"%d" % i)
    js.create(mirror, mirror={"name": origin, "filter_subject": f"{p}.1"})
    st = wait_messages(js, mirror, 3)
    assert (st["first_seq"], st["last_seq"]) == (2, 6)
    assert [m["seq"] for m in messages(js, mirror)] == [2, 4, 6]
    assert js.info(mirror)["mirror"]["filter_subject"] == f"{p}.1"
    assert list(js.info(mirror)["mirror"]) == ["name", "lag", "active", "filter_subject"]


def test_mirror_subject_transforms(target: str, js: JsClient) -> None:
    """``subject_transforms``: matching messages under the mapped subject (several filters at
    once); info lists the transforms."""
    origin, mirror = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.a.1", b"1")
    js.pub_ok(f"{p}.b.2", b"2")
    js.pub_ok(f"{p}.c.3", b"3")
    trs = [{"src": f"{p}.a.*", "dest": "ma.$1"}, {"src": f"{p}.b.>", "dest": ""}]
    js.create(mirror, mirror={"name": origin, "subject_transforms": trs})
    wait_messages(js, mirror, 2)
    assert [(m["seq"], m["subject"]) for m in messages(js, mirror)] == [(1, "ma.1"), (2, f"{p}.b.2")]
    info = js.info(mirror)["mirror"]
    assert info["subject_transforms"] == trs
    assert list(info) == ["name", "lag", "active", "subject_transforms"]


def test_mirror_opt_start_seq(target: str, js: JsClient) -> None:
    """``opt_start_seq``: the mirror starts at that origin sequence (its first sequence)."""
    origin, mirror = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    for i in range(5):
        js.pub_ok(f"{p}.x", b"%d" % i)
    out = js.create(mirror, mirror={"name": origin, "opt_start_seq": 3})
    assert out["config"]["mirror"] == {"name": origin, "opt_start_seq": 3}
    st = wait_messages(js, mirror, 3)
    assert (st["first_seq"], st["last_seq"]) == (3, 5)


def test_mirror_opt_start_time(target: str, js: JsClient) -> None:
    """``opt_start_time``: the mirror starts at the first origin message stored at or after
    that time."""
    origin, mirror = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.x", b"old")
    js.pub_ok(f"{p}.x", b"old")
    start = get(js, origin, 2)["time"]
    js.pub_ok(f"{p}.x", b"new")
    out = js.create(mirror, mirror={"name": origin, "opt_start_time": start})
    assert out["config"]["mirror"] == {"name": origin, "opt_start_time": start}
    st = wait_messages(js, mirror, 2)
    assert (st["first_seq"], st["last_seq"]) == (2, 3)


def test_mirror_refuses_publishes_and_subjects(target: str, js: JsClient) -> None:
    """A mirror listens on nothing (a publish to its name finds no responder); subjects,
    another mirror or sources are refused, at create and by update; an update may change
    limits but not the mirror."""
    origin, mirror = unique_name(), unique_name()
    js.create(origin, subjects=[f"{origin.lower()}.>"])
    js.create(mirror, mirror={"name": origin})
    assert js.publish(mirror).status == "503"
    other = unique_name()
    out = js.create(other, check=False, mirror={"name": origin}, subjects=["x.y"])
    assert out["error"] == api_error(400, 10034, "stream mirrors can not contain subjects")
    out = js.update(mirror, mirror={"name": origin}, subjects=[f"{mirror.lower()}.>"])
    assert out["error"] == api_error(400, 10034, "stream mirrors can not contain subjects")
    out = js.update(mirror, mirror={"name": origin, "filter_subject": "a"})
    assert out["error"] == api_error(400, 10055, "stream mirror configuration can not be updated")
    out = js.update(mirror, mirror={"name": origin}, sources=[{"name": origin}])
    assert out["error"] == api_error(400, 10031, "stream mirrors can not also contain other sources")
    out = js.update(origin, subjects=[f"{origin.lower()}.>"], mirror={"name": mirror})
    assert out["error"] == api_error(400, 10034, "stream mirrors can not contain subjects")
    out = js.update(origin, mirror={"name": mirror})
    assert out["error"] == api_error(500, 10052, "detected cycle")
    plain = unique_name()
    js.create(plain)
    out = js.update(plain, mirror={"name": origin})
    assert out["error"] == api_error(400, 10055, "stream mirror configuration can not be updated")
    out = js.update(mirror, mirror={"name": origin}, max_msgs=10)
    assert out["config"]["max_msgs"] == 10 and out["config"]["mirror"] == {"name": origin}


def test_mirror_config_errors(target: str, js: JsClient) -> None:
    """Mirror configs nats-server refuses: a mirror of itself (a cycle), a first sequence,
    filter and transforms together, a message size below the origin's."""
    origin = unique_name()
    js.create(origin, subjects=[f"{origin.lower()}.>"], max_msg_size=1000)
    name = unique_name()
    cases = [
        ({"mirror": {"name": name}}, api_error(500, 10052, "detected cycle")),
        ({"mirror": {"name": origin}, "first_seq": 5},
         api_error(400, 10143, "stream mirrors can not have first sequence configured")),
        ({"mirror": {"name": origin, "filter_subject": "a",
                     "subject_transforms": [{"src": "b", "dest": "c"}]}},
         api_error(400, 10150, "mirror with multiple subject transforms cannot also have a single subject filter")),
        ({"mirror": {"name": origin}, "max_msg_size": 10},
         api_error(400, 10030, "stream mirror must have max message size >= source")),
    ]
    for body, error in cases:
        out = js.create(name, check=False, **body)
        assert out == {"type": TYPE_PREFIX + "stream_create_response", "error": error}, body


def test_mirror_promotion(target: str, js: JsClient) -> None:
    """Removing ``mirror`` by an update promotes the mirror to a normal stream: it keeps its
    messages, stops following, listens on its own name (the default subject), gets the default
    duplicate window and takes publishes after the mirrored sequences."""
    origin, mirror = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.a")
    js.pub_ok(f"{p}.b")
    js.create(mirror, mirror={"name": origin})
    wait_messages(js, mirror, 2)
    out = js.update(mirror)
    assert "error" not in out, out
    assert out["config"] == default_config(mirror)
    assert "mirror" not in out
    assert js.pub(mirror, b"own") == {"stream": mirror, "seq": 3}
    js.pub_ok(f"{p}.c")
    js.pub_ok(f"{p}.d")
    assert js.state(origin)["last_seq"] == 4
    st = js.state(mirror)
    assert (st["messages"], st["last_seq"]) == (3, 3)
    assert "mirror" not in js.info(mirror)


def test_mirror_of_missing_origin(target: str, js: JsClient) -> None:
    """A mirror may be created before its origin: its info reports the failed setup (404/10059
    ``stream not found``) and ``active -1``."""
    origin, mirror = unique_name(), unique_name()
    out = js.create(mirror, mirror={"name": origin})
    assert out["mirror"] == {"name": origin, "lag": 0, "active": -1}
    info = wait_for(lambda: "error" in (m := js.info(mirror)["mirror"]) and m)
    assert info == {"name": origin, "lag": 0, "active": -1,
                    "error": api_error(404, 10059, "stream not found")}


def test_mirror_direct(target: str, js: JsClient) -> None:
    """``mirror_direct`` follows the origin's ``allow_direct`` (pedantic mode refuses a
    mismatch); a caught-up mirror answers DIRECT.GET for its origin, as itself, and still does
    once the origin is gone; without ``mirror_direct`` (an update may turn it off) nobody
    answers then."""
    origin, mirror = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"], allow_direct=True)
    js.pub_ok(f"{p}.a", b"hello", header_block(("A", "b")))
    out = js.create(mirror, mirror={"name": origin})
    assert out["config"]["mirror_direct"] is True
    out = js.api(f"STREAM.CREATE.{unique_name()}", {"name": unique_name(), "mirror": {"name": origin}})
    assert "error" in out  # the subject names another stream
    name = unique_name()
    out = js.api(f"STREAM.CREATE.{name}", {"name": name, "mirror": {"name": origin},
                                           "mirror_direct": False, "pedantic": True})
    assert out["error"] == api_error(
        400, 10157, "pedantic mode: origin stream has direct get set, mirror has it disabled")
    wait_messages(js, mirror, 1)
    js.delete(origin)
    js.created.remove(origin)
    m = wait_for(lambda: (r := js.request(f"$JS.API.DIRECT.GET.{origin}", {"seq": 1})).status == ""
                 and r)
    stamp = get(js, mirror, 1)["time"]
    assert m.header == header_block(("A", "b"), ("Nats-Stream", mirror), ("Nats-Subject", f"{p}.a"),
                                    ("Nats-Sequence", "1"), ("Nats-Time-Stamp", stamp))
    assert m.data == b"hello"
    out = js.update(mirror, mirror={"name": origin}, mirror_direct=False)
    assert out["config"]["mirror_direct"] is False
    assert js.request(f"$JS.API.DIRECT.GET.{origin}", {"seq": 1}).status == "503"


# ---------------------------------------------------------------------- sources


def test_sources_create_reply_and_info(target: str, js: JsClient) -> None:
    """A sourcing stream's create reply lists ``sources`` state (``active -1`` at first);
    once it sourced something each entry adds ``seq``, the last origin sequence taken. No
    duplicate window unless configured."""
    a, b, s = unique_name(), unique_name(), unique_name()
    js.create(a, subjects=[f"{a.lower()}.>"])
    js.create(b, subjects=[f"{b.lower()}.>"])
    js.pub_ok(f"{a.lower()}.x", b"1")
    js.pub_ok(f"{b.lower()}.y", b"2")
    js.pub_ok(f"{b.lower()}.z", b"3")
    srcs = [{"name": a}, {"name": b, "filter_subject": f"{b.lower()}.z"}]
    out = js.create(s, subjects=[f"{s.lower()}.>"], sources=srcs)
    assert list(out) == ["type", "config", "created", "state", "sources", "ts", "did_create"]
    expected_cfg = default_config(s, [f"{s.lower()}.>"])
    del expected_cfg["duplicate_window"]
    cfg = dict(out["config"])
    assert cfg.pop("sources") == srcs
    assert cfg == expected_cfg
    assert sorted(out["sources"], key=lambda x: x["name"]) == sorted([
        {"name": a, "lag": 0, "active": -1},
        {"name": b, "lag": 0, "active": -1, "filter_subject": f"{b.lower()}.z"}],
        key=lambda x: x["name"])
    assert out["state"] == empty_state()
    wait_messages(js, s, 2)
    info = {x["name"]: x for x in js.info(s)["sources"]}
    assert list(info[a]) == ["name", "lag", "seq", "active"]
    assert (info[a]["lag"], info[a]["seq"]) == (0, 1)
    assert list(info[b]) == ["name", "lag", "seq", "active", "filter_subject"]
    assert (info[b]["lag"], info[b]["seq"]) == (0, 2)
    assert all(0 <= x["active"] < 5_000_000_000 for x in info.values())


def test_source_header_bytes(target: str, js: JsClient) -> None:
    """A sourced message keeps subject, payload and headers and gets ``Nats-Stream-Source:
    <origin> <origin seq> <filter> <dest> <origin subject> <origin identity>`` appended (the
    identity hashes the origin's creation time); ``Nats-Expected-*`` headers are dropped; it
    is stored under the sourcing stream's own sequence and time."""
    a, s = unique_name(), unique_name()
    p = a.lower()
    js.create(a, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.one", b"plain")
    js.pub_ok(f"{p}.two", b"with", header_block(("Foo", "bar"), ("Nats-Expected-Last-Sequence", "1"),
                                                  ("X", "y")))
    js.create(s, sources=[{"name": a}])
    wait_messages(js, s, 2)
    one, two = get(js, s, 1), get(js, s, 2)
    assert (one["subject"], base64.b64decode(one["data"])) == (f"{p}.one", b"plain")
    assert hdrs(one) == header_block(("Nats-Stream-Source", source_header(js, a, 1, f"{p}.one")))
    assert hdrs(two) == header_block(("Foo", "bar"), ("X", "y"),
                                     ("Nats-Stream-Source", source_header(js, a, 2, f"{p}.two")))
    assert one["time"] != get(js, a, 1)["time"]
    assert TIMESTAMP.match(two["time"])


def test_source_filter_and_transforms(target: str, js: JsClient) -> None:
    """Filters and subject transforms shape what is sourced and appear in the header (several
    transforms joined by form feeds) and in info."""
    a, s1, s2 = unique_name(), unique_name(), unique_name()
    p = a.lower()
    js.create(a, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.a.1", b"1")
    js.pub_ok(f"{p}.b.2", b"2")
    js.pub_ok(f"{p}.c.3", b"3")
    js.create(s1, sources=[{"name": a, "filter_subject": f"{p}.b.*"}])
    trs = [{"src": f"{p}.a.*", "dest": "x.$1"}, {"src": f"{p}.c.>", "dest": ""}]
    js.create(s2, sources=[{"name": a, "subject_transforms": trs}])
    wait_messages(js, s1, 1)
    wait_messages(js, s2, 2)
    m = get(js, s1, 1)
    assert m["subject"] == f"{p}.b.2"
    assert hdrs(m) == header_block(("Nats-Stream-Source",
                                    source_header(js, a, 2, f"{p}.b.2", f"{p}.b.*")))
    got = messages(js, s2)
    assert [x["subject"] for x in got] == ["x.1", f"{p}.c.3"]
    filt, dest = f"{p}.a.*\f{p}.c.>", "x.$1\f>"
    assert hdrs(got[0]) == header_block(("Nats-Stream-Source",
                                         source_header(js, a, 1, f"{p}.a.1", filt, dest)))
    info = js.info(s2)["sources"][0]
    assert info["subject_transforms"] == trs and info["seq"] == 3


def test_sourcing_stream_subject_transform_applies(target: str, js: JsClient) -> None:
    """The sourcing stream's own ``subject_transform`` also maps what its sources bring (the
    header keeps the origin subject)."""
    a, s = unique_name(), unique_name()
    p = a.lower()
    js.create(a, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.k", b"v")
    js.create(s, subjects=[f"{s.lower()}.>"], sources=[{"name": a}],
              subject_transform={"src": f"{p}.*", "dest": f"{s.lower()}.from.$1"})
    wait_messages(js, s, 1)
    m = get(js, s, 1)
    assert m["subject"] == f"{s.lower()}.from.k"
    assert hdrs(m) == header_block(("Nats-Stream-Source", source_header(js, a, 1, f"{p}.k")))


def test_source_opt_start_seq_and_time(target: str, js: JsClient) -> None:
    """``opt_start_seq`` and ``opt_start_time`` pick where a source starts in its origin."""
    a, s1, s2 = unique_name(), unique_name(), unique_name()
    p = a.lower()
    js.create(a, subjects=[f"{p}.>"])
    for i in range(4):
        js.pub_ok(f"{p}.x", b"%d" % i)
    start = get(js, a, 3)["time"]
    js.create(s1, sources=[{"name": a, "opt_start_seq": 2}])
    js.create(s2, sources=[{"name": a, "opt_start_time": start}])
    wait_messages(js, s1, 3)
    wait_messages(js, s2, 2)
    assert [base64.b64decode(m["data"]) for m in messages(js, s1)] == [b"1", b"2", b"3"]
    assert [base64.b64decode(m["data"]) for m in messages(js, s2)] == [b"2", b"3"]


def test_sources_merge_and_follow(target: str, js: JsClient) -> None:
    """A stream with subjects of its own and two sources holds its own messages and what both
    origins get later, each source's messages in origin order."""
    a, b, s = unique_name(), unique_name(), unique_name()
    js.create(a, subjects=[f"{a.lower()}.>"])
    js.create(b, subjects=[f"{b.lower()}.>"])
    js.create(s, subjects=[f"{s.lower()}.>"], sources=[{"name": a}, {"name": b}])
    wait_for(lambda: all(x["active"] >= 0 for x in js.info(s)["sources"]))
    for i in range(3):
        js.pub_ok(f"{a.lower()}.{i}", b"a%d" % i)
        js.pub_ok(f"{b.lower()}.{i}", b"b%d" % i)
    js.pub_ok(f"{s.lower()}.own", b"s")
    wait_messages(js, s, 7)
    got = [base64.b64decode(m["data"]) for m in messages(js, s)]
    assert [x for x in got if x.startswith(b"a")] == [b"a0", b"a1", b"a2"]
    assert [x for x in got if x.startswith(b"b")] == [b"b0", b"b1", b"b2"]
    assert b"s" in got


def test_source_duplicates_dropped_within_window(target: str, js: JsClient) -> None:
    """With a duplicate window, a ``Nats-Msg-Id`` already stored (from another source or
    published directly) is not stored again; ``seq`` in the source's info is the origin
    sequence of the last message it stored, so a source whose only message was a duplicate
    shows none."""
    a, b, s = unique_name(), unique_name(), unique_name()
    js.create(a, subjects=[f"{a.lower()}.>"])
    js.create(b, subjects=[f"{b.lower()}.>"])
    js.create(s, subjects=[f"{s.lower()}.>"], duplicate_window=60_000_000_000,
              sources=[{"name": a}, {"name": b}])
    dup = header_block(("Nats-Msg-Id", "same"))
    js.pub_ok(f"{s.lower()}.own", b"first", dup)
    js.pub_ok(f"{a.lower()}.x", b"second", dup)
    js.pub_ok(f"{b.lower()}.x", b"third", dup)
    js.pub_ok(f"{b.lower()}.x", b"other", header_block(("Nats-Msg-Id", "other")))
    wait_messages(js, s, 2)
    assert [base64.b64decode(m["data"]) for m in messages(js, s)] == [b"first", b"other"]
    wait_for(lambda: {x["name"]: x.get("seq") for x in js.info(s)["sources"]} == {a: None, b: 2})


def test_sources_added_and_removed_by_update(target: str, js: JsClient) -> None:
    """An update may add a source (it starts from its origin's beginning) and remove one (its
    origin is no longer followed); sources that stay keep their position."""
    a, b, s = unique_name(), unique_name(), unique_name()
    js.create(a, subjects=[f"{a.lower()}.>"])
    js.create(b, subjects=[f"{b.lower()}.>"])
    js.pub_ok(f"{a.lower()}.x", b"a1")
    js.pub_ok(f"{b.lower()}.x", b"b1")
    js.create(s, subjects=[f"{s.lower()}.>"], sources=[{"name": a}])
    wait_messages(js, s, 1)
    out = js.update(s, subjects=[f"{s.lower()}.>"], sources=[{"name": a}, {"name": b}])
    assert [x["name"] for x in out["config"]["sources"]] == [a, b]
    wait_messages(js, s, 2)
    out = js.update(s, subjects=[f"{s.lower()}.>"], sources=[{"name": b}])
    assert [x["name"] for x in out["sources"]] == [b]
    js.pub_ok(f"{a.lower()}.x", b"a2")
    js.pub_ok(f"{b.lower()}.x", b"b2")
    wait_messages(js, s, 3)
    assert [base64.b64decode(m["data"]) for m in messages(js, s)][2] == b"b2"
    out = js.update(s, subjects=[f"{s.lower()}.>"])
    assert "sources" not in out and "sources" not in out["config"]


def test_sources_config_errors(target: str, js: JsClient) -> None:
    """Sources nats-server refuses: the same source twice, filter and transforms together,
    a message size below an origin's, and cycles (a stream sourcing one that sources it, on
    overlapping subjects)."""
    a, b = unique_name(), unique_name()
    js.create(a, subjects=[f"{a.lower()}.>"], max_msg_size=100)
    js.create(b, subjects=[f"{b.lower()}.>"], sources=[{"name": a}])
    name = unique_name()
    cases = [
        ({"sources": [{"name": a}, {"name": a}]},
         api_error(400, 10140, "duplicate source configuration detected")),
        ({"sources": [{"name": a, "filter_subject": "x", "subject_transforms": [{"src": "y", "dest": "z"}]}]},
         api_error(400, 10144, "source with multiple subject transforms cannot also have a single subject filter")),
        ({"sources": [{"name": a}], "max_msg_size": 10},
         api_error(400, 10046, "stream source must have max message size >= target")),
    ]
    for body, error in cases:
        out = js.create(name, check=False, **body)
        assert out == {"type": TYPE_PREFIX + "stream_create_response", "error": error}, body
    out = js.update(a, subjects=[f"{a.lower()}.>"], max_msg_size=100, sources=[{"name": b}])
    assert out["error"] == api_error(500, 10052, "detected cycle")
    out = js.update(a, subjects=[f"{a.lower()}.>"], max_msg_size=100,
                    sources=[{"name": b, "filter_subject": f"{b.lower()}.only"}])
    assert out["error"] == api_error(500, 10052, "detected cycle")
    # no cycle when the filters keep the two directions apart
    c, d = unique_name(), unique_name()
    js.create(c, subjects=[f"{c.lower()}.>"])
    js.create(d, subjects=[f"{d.lower()}.>"], sources=[{"name": c, "filter_subject": "elsewhere.>"}])
    out = js.update(c, subjects=[f"{c.lower()}.>"], sources=[{"name": d}])
    assert "error" not in out, out


def test_source_chain(target: str, js: JsClient) -> None:
    """Chains: A sourced into B, B sourced into C and mirrored into M. C's header names B (the
    earlier header is replaced); the mirror keeps B's header as stored."""
    a, b, c, m = (unique_name() for _ in range(4))
    p = a.lower()
    js.create(a, subjects=[f"{p}.>"])
    js.create(b, subjects=[f"{b.lower()}.>"], sources=[{"name": a}])
    js.create(c, sources=[{"name": b}])
    js.create(m, mirror={"name": b})
    js.pub_ok(f"{p}.x", b"chained")
    wait_messages(js, c, 1)
    wait_messages(js, m, 1)
    assert hdrs(get(js, b, 1)) == header_block(("Nats-Stream-Source", source_header(js, a, 1, f"{p}.x")))
    assert hdrs(get(js, c, 1)) == header_block(("Nats-Stream-Source", source_header(js, b, 1, f"{p}.x")))
    assert get(js, m, 1) == get(js, b, 1)


def test_source_publish_with_source_header_refused(target: str, js: JsClient) -> None:
    """Publishing a ``Nats-Stream-Source`` header into a sourcing stream is refused like into
    any stream (only sourcing may add it)."""
    a, s = unique_name(), unique_name()
    js.create(a, subjects=[f"{a.lower()}.>"])
    js.create(s, subjects=[f"{s.lower()}.>"], sources=[{"name": a}])
    ack = js.pub(f"{s.lower()}.x", b"", header_block(("Nats-Stream-Source", "x 1 > > y")))
    assert ack["error"] == api_error(400, 10227, "message stream source header is not allowed")


def test_source_origin_created_late_deleted_and_recreated(target: str, js: JsClient) -> None:
    """A source whose origin does not exist yet reports 404/10059 and picks the origin up at
    its next retry; after the origin is deleted the source notices (its health check), and
    once the origin is created again (a new identity) sourcing starts over from its first
    message, as the header shows."""
    a, s = unique_name(), unique_name()
    p = a.lower()
    js.create(s, subjects=[f"{s.lower()}.>"], sources=[{"name": a}])
    wait_for(lambda: "error" in js.info(s)["sources"][0])
    js.create(a, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.x", b"first life")
    wait_messages(js, s, 1, timeout=30)
    first_ident = identity(js, a)
    assert "error" not in js.info(s)["sources"][0]
    js.delete(a)
    js.created.remove(a)
    wait_for(lambda: "error" in js.info(s)["sources"][0], timeout=40)
    js.create(a, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.y", b"second life")
    wait_messages(js, s, 2, timeout=40)
    m = get(js, s, 2)
    assert base64.b64decode(m["data"]) == b"second life"
    assert hdrs(m) == header_block(("Nats-Stream-Source", source_header(js, a, 1, f"{p}.y")))
    assert identity(js, a) != first_ident


# ---------------------------------------------------------------------- Key-Value on top


async def expecting_keys(call: Any, tries: int = 3) -> Any:
    """``kv.keys()`` when keys exist: nats-py may end it early with NoKeysError when a
    CONSUMER.INFO reply overtakes the first deliveries (see conformance/test_kv.py); try
    again, as an application would."""
    for attempt in range(tries):
        try:
            return await asyncio.wait_for(call(), 10)
        except nats.js.errors.NoKeysError:
            if attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


def _kv_stream_config(**kw: Any) -> Any:
    """A StreamConfig shaped like a nats-py bucket's (history 1, rollups, discard new)."""
    from nats.js.api import DiscardPolicy, StreamConfig

    base = dict(max_msgs_per_subject=1, allow_rollup_hdrs=True, deny_delete=True,
                discard=DiscardPolicy.NEW, allow_msg_ttl=True)
    base.update(kw)
    return StreamConfig(**base)


async def test_kv_mirror_bucket_reads_through(target: str, js_nats: Any, js: JsClient) -> None:
    """A read-only replica of a nats-py bucket: stream ``KV_<replica>`` mirroring
    ``KV_<bucket>`` with the ``$KV.<bucket>.>`` → ``$KV.<replica>.>`` transform. nats-py opens it
    as a bucket and reads every key (also deletes) through the mirror, live; the replica takes
    no writes."""
    from nats.js.api import StreamSource, SubjectTransform

    nc = await js_nats()
    jsc = nc.jetstream()
    bucket, replica = unique_name("KV"), unique_name("KV")
    kv = await jsc.create_key_value(bucket=bucket, direct=True)
    js.created += [f"KV_{bucket}", f"KV_{replica}"]
    await kv.put("a", b"1")
    await kv.put("b", b"2")
    await kv.put("a", b"3")
    await jsc.add_stream(_kv_stream_config(
        name=f"KV_{replica}", allow_direct=True,
        mirror=StreamSource(name=f"KV_{bucket}", subject_transforms=[
            SubjectTransform(src=f"$KV.{bucket}.>", dest=f"$KV.{replica}.>")])))
    info = js.info(f"KV_{replica}")
    assert info["config"]["mirror_direct"] is True and "subjects" not in info["config"]
    wait_for(lambda: js.state(f"KV_{replica}")["last_seq"] == 3)
    rkv = await jsc.key_value(replica)
    entry = await rkv.get("a")
    assert (entry.key, entry.value, entry.revision) == ("a", b"3", 3)
    await kv.delete("b")
    wait_for(lambda: js.state(f"KV_{replica}")["last_seq"] == 4)
    with pytest.raises(nats.js.errors.KeyNotFoundError):
        await rkv.get("b")
    st = js.state(f"KV_{replica}")
    assert (st["messages"], st["first_seq"], st["last_seq"]) == (2, 3, 4)
    with pytest.raises(nats.js.errors.NoStreamResponseError):
        await rkv.put("c", b"no")


async def test_kv_sourced_bucket_aggregates(target: str, js_nats: Any, js: JsClient) -> None:
    """A bucket fed by two others: ``KV_<agg>`` on ``$KV.<agg>.>`` sourcing both with
    ``$KV.<src>.>`` → ``$KV.<agg>.>`` transforms. nats-py reads sourced keys (revisions are the
    aggregate's own sequences), writes its own, and keys/history see both."""
    from nats.js.api import StreamSource, SubjectTransform

    nc = await js_nats()
    jsc = nc.jetstream()
    b1, b2, agg = unique_name("KV"), unique_name("KV"), unique_name("KV")
    kv1 = await jsc.create_key_value(bucket=b1)
    kv2 = await jsc.create_key_value(bucket=b2)
    js.created += [f"KV_{b1}", f"KV_{b2}", f"KV_{agg}"]
    await kv1.put("x", b"from1")
    await kv2.put("y", b"from2")

    def src(b: str) -> StreamSource:
        return StreamSource(name=f"KV_{b}", subject_transforms=[
            SubjectTransform(src=f"$KV.{b}.>", dest=f"$KV.{agg}.>")])

    await jsc.add_stream(_kv_stream_config(name=f"KV_{agg}", subjects=[f"$KV.{agg}.>"],
                                           sources=[src(b1), src(b2)]))
    wait_messages(js, f"KV_{agg}", 2)
    akv = await jsc.key_value(agg)
    x, y = await akv.get("x"), await akv.get("y")
    assert (x.value, y.value) == (b"from1", b"from2")
    assert sorted([x.revision, y.revision]) == [1, 2]
    assert await akv.put("z", b"own") == 3
    await kv1.put("x", b"again")
    wait_messages(js, f"KV_{agg}", 3)  # history 1: the new x replaces the old one
    assert (await akv.get("x")).value == b"again"
    assert sorted(await expecting_keys(akv.keys)) == ["x", "y", "z"]
    m = get(js, f"KV_{agg}", 4)
    assert m["subject"] == f"$KV.{agg}.x"
    assert hdrs(m) == header_block(("Nats-Stream-Source", source_header(
        js, f"KV_{b1}", 2, f"$KV.{b1}.x", f"$KV.{b1}.>", f"$KV.{agg}.>")))


# ---------------------------------------------------------------------- limits and retention


def test_mirror_limits_of_its_own(target: str, js: JsClient) -> None:
    """A mirror applies its own limits: with ``max_msgs`` 2 it keeps the newest two, at their
    origin sequences; ``max_msgs_per_subject`` likewise."""
    origin, m1, m2 = unique_name(), unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    for i in range(5):
        js.pub_ok(f"{p}.{i % 2}", b"%d" % i)
    js.create(m1, mirror={"name": origin}, max_msgs=2)
    js.create(m2, mirror={"name": origin}, max_msgs_per_subject=1)
    st = wait_for(lambda: (s := js.state(m1))["last_seq"] == 5 and s)
    assert (st["messages"], st["first_seq"]) == (2, 4)
    st = wait_for(lambda: (s := js.state(m2))["last_seq"] == 5 and s)
    assert st["messages"] == 2
    assert [m["seq"] for m in messages(js, m2)] == [4, 5]


def test_mirror_max_age_uses_origin_times(target: str, js: JsClient) -> None:
    """A mirror's ``max_age`` counts from the origin's timestamps: a mirror created well after
    the messages were stored drops them (keeping the sequences) once they are older."""
    origin, mirror = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.a")
    js.pub_ok(f"{p}.b")
    js.create(mirror, mirror={"name": origin}, max_age=1_000_000_000)
    st = wait_for(lambda: (s := js.state(mirror))["last_seq"] == 2 and s["messages"] == 0 and s,
                  timeout=10)
    assert (st["first_seq"], st["last_seq"]) == (3, 2)


def test_mirror_and_source_after_origin_purge(target: str, js: JsClient) -> None:
    """Purging the origin leaves mirrors and sourcing streams alone; what comes after is
    followed at the origin's next sequences."""
    origin, mirror, s = unique_name(), unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.a")
    js.pub_ok(f"{p}.b")
    js.create(mirror, mirror={"name": origin})
    js.create(s, sources=[{"name": origin}])
    wait_messages(js, mirror, 2)
    wait_messages(js, s, 2)
    assert js.purge(origin)["purged"] == 2
    js.pub_ok(f"{p}.c")
    st = wait_messages(js, mirror, 3)
    assert (st["first_seq"], st["last_seq"]) == (1, 3)
    wait_messages(js, s, 3)
    assert hdrs(get(js, s, 3)) == header_block(("Nats-Stream-Source", source_header(js, origin, 3, f"{p}.c")))


def test_sourcing_into_a_work_queue(target: str, js: JsClient) -> None:
    """A work-queue stream fed by a source: a pull consumer takes the sourced messages and
    its acks remove them."""
    origin, wq = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    js.create(wq, retention="workqueue", sources=[{"name": origin}])
    out = js.api(f"CONSUMER.CREATE.{wq}.W", {"stream_name": wq, "config": {
        "durable_name": "W", "ack_policy": "explicit"}})
    assert "error" not in out, out
    for i in range(3):
        js.pub_ok(f"{p}.job", b"%d" % i)
    wait_messages(js, wq, 3)
    got = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{wq}.W", {"batch": 3, "expires": 2_000_000_000},
               until_status=False, count=3)
    assert [m.data for m in got] == [b"0", b"1", b"2"]
    for m in got:
        js.send(m.reply, b"+ACK")
    st = wait_for(lambda: (s := js.state(wq))["messages"] == 0 and s)
    assert (st["first_seq"], st["last_seq"]) == (4, 3)


def test_source_into_discard_new_stream_waits(target: str, js: JsClient) -> None:
    """A sourcing stream full under ``discard: new`` stores nothing more (the origin keeps
    everything); once room is made it takes the rest, in order, with none lost."""
    origin, s = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    for i in range(4):
        js.pub_ok(f"{p}.x", b"%d" % i)
    js.create(s, sources=[{"name": origin}], max_msgs=2, discard="new")
    wait_messages(js, s, 2)
    assert js.purge(s)["purged"] == 2
    wait_messages(js, s, 2, timeout=20)
    assert [base64.b64decode(m["data"]) for m in messages(js, s)] == [b"2", b"3"]


# ---------------------------------------------------------------------- restarts


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_file_mirror_and_source_resume_after_restart(target: str, spawn: Any, tmp_path: Any,
                                                     how: str) -> None:
    """File-stored mirrors and sourcing streams keep their position across a restart (clean or
    killed): what the origin gets afterwards follows with no gap and no duplicate; the source
    reports its last sequence at once. Memory streams do not come back."""
    start = restartable(spawn, tmp_path)
    srv = start()
    js = JsClient.connect(srv)
    origin, mirror, s, mem = unique_name(), unique_name(), unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    for i in range(5):
        js.pub_ok(f"{p}.x", b"%d" % i)
    js.create(mirror, mirror={"name": origin})
    js.create(s, sources=[{"name": origin}])
    js.create(mem, sources=[{"name": origin}], storage="memory")
    wait_messages(js, mirror, 5)
    wait_messages(js, s, 5)
    wait_messages(js, mem, 5)
    js.close()
    if how == "kill":
        srv.proc.kill()
        srv.proc.wait()
    srv.stop()

    srv = start()
    js = JsClient.connect(srv)
    assert js.info(mem)["error"] == api_error(404, 10059, "stream not found")
    assert js.info(s)["sources"][0]["seq"] == 5
    for i in range(5, 8):
        js.pub_ok(f"{p}.x", b"%d" % i)
    st = wait_messages(js, mirror, 8)
    assert (st["first_seq"], st["last_seq"]) == (1, 8)
    wait_messages(js, s, 8)
    assert origin_seqs(js, s) == list(range(1, 9))
    assert [base64.b64decode(m["data"]) for m in messages(js, s)] == [b"%d" % i for i in range(8)]
    wait_for(lambda: js.info(s)["sources"][0].get("seq") == 8)
    js.close()


# ---------------------------------------------------------------------- advisories


def test_follower_consumer_advisories(target: str, js: JsClient) -> None:
    """A mirror or source shows on its origin as a consumer created (``JS_MIRROR_`` /
    ``JS_SRC_``, a hash of the follower's name, a random suffix): a CONSUMER.CREATED advisory;
    when the origin goes, CONSUMER.DELETED for those two and STREAM.DELETED.

    nats-server sends the deletions from several goroutines racing the stream's shutdown: their
    order varies, and now and then one of them is never sent (2 runs in 40 on v2.15.1). So the case
    holds nats-server to "only these, no others" and minijs, which sends all three every time,
    to the full set."""
    import re

    origin, mirror, s = unique_name(), unique_name(), unique_name()
    js.raw.send(f"SUB $JS.EVENT.ADVISORY.*.*.{origin} 90\r\n"
                f"SUB $JS.EVENT.ADVISORY.CONSUMER.*.{origin}.* 91\r\n".encode())
    js.raw.barrier()
    js.create(origin, subjects=[f"{origin.lower()}.>"])
    js.create(mirror, mirror={"name": origin})
    js.create(s, sources=[{"name": origin}])
    seen: list[Any] = []

    def events() -> list[str]:
        while True:
            try:
                frame = js.raw.read_frame(timeout=0.05)
            except TimeoutError:
                break
            if frame.startswith(b"MSG "):
                seen.append(parse_msg(frame))
        seen.extend(m for m in js._pending if m.sid in ("90", "91"))
        js._pending[:] = [m for m in js._pending if m.sid not in ("90", "91")]
        return [m.subject for m in seen]

    prefix = f"$JS.EVENT.ADVISORY.CONSUMER.CREATED.{origin}."
    wait_for(lambda: len([x for x in events() if x.startswith(prefix)]) == 2)
    created = sorted(x[len(prefix):] for x in events() if x.startswith(prefix))
    m_name = next(c for c in created if c.startswith("JS_MIRROR_"))
    s_name = next(c for c in created if c.startswith("JS_SRC_"))
    assert re.fullmatch("JS_MIRROR_" + get_hash(f"{mirror} $G") + "-[0-9A-Za-z]{8}", m_name)
    assert re.fullmatch("JS_SRC_" + get_hash(get_hash(f"{s} $G")) + "-[0-9A-Za-z]{8}", s_name)
    body = next(m for m in seen if m.subject == prefix + m_name).json()
    assert (body["stream"], body["consumer"], body["action"]) == (origin, m_name, "create")
    js.delete(origin)
    js.created.remove(origin)
    done = f"$JS.EVENT.ADVISORY.STREAM.DELETED.{origin}"
    gone = f"$JS.EVENT.ADVISORY.CONSUMER.DELETED.{origin}."
    expected = {done, gone + m_name, gone + s_name}

    def deletions() -> set[str]:
        return {x for x in events() if x == done or x.startswith(gone)}

    try:
        wait_for(lambda: deletions() == expected, timeout=3.0)
    except AssertionError:
        if target == "minijs":
            raise
    assert deletions() <= expected
    assert deletions() == expected or target != "minijs"


async def test_object_store_sourced_bucket(target: str, js_nats: Any, js: JsClient) -> None:
    """An object store fed by another: ``OBJ_<copy>`` on ``$O.<copy>.>`` sourcing
    ``OBJ_<bucket>`` with the ``$O.<bucket>.>`` → ``$O.<copy>.>`` transform; nats-py reads the
    object (meta and every chunk) from the copy. (nats-py finds the chunks' stream by subject,
    so a mirror, which has none, cannot be read as an object store.)"""
    from nats.js.api import StreamConfig, StreamSource, SubjectTransform

    nc = await js_nats()
    jsc = nc.jetstream()
    bucket, copy = unique_name("OB"), unique_name("OB")
    obs = await jsc.create_object_store(bucket=bucket)
    js.created += [f"OBJ_{bucket}", f"OBJ_{copy}"]
    data = bytes(range(256)) * 1000  # several chunks
    await obs.put("blob", data)
    await jsc.add_stream(StreamConfig(
        name=f"OBJ_{copy}", subjects=[f"$O.{copy}.C.>", f"$O.{copy}.M.>"],
        allow_rollup_hdrs=True, discard="new",
        sources=[StreamSource(name=f"OBJ_{bucket}", subject_transforms=[
            SubjectTransform(src=f"$O.{bucket}.>", dest=f"$O.{copy}.>")])]))
    count = js.state(f"OBJ_{bucket}")["messages"]
    wait_messages(js, f"OBJ_{copy}", count)
    cobs = await jsc.object_store(copy)
    got = await cobs.get("blob")
    assert got.data == data and got.info.name == "blob" and got.info.size == len(data)
