"""Mirrors and sources of work-queue and interest streams: the origin serves them through a
durable sourcing consumer it shows like any other (``JS_MIRROR_<hash>`` / ``JS_SRC_<hash>``,
``ack_policy: flow_control``, ``sourcing``, the follower named in its metadata), and removes a
message only once that consumer (and every other one still interested) has acked it. Deleting
the follower, or removing the source by an update, deletes the consumer; file-stored
followers resume after a restart with no gap and no duplicate. A mirror or source may instead
name (``consumer``) a durable ``flow_control`` consumer the application made: it reads through
that one, which stays when the follower goes.

Flow-control acks come about once per heartbeat (1 s) on nats-server: every wait on the origin
draining polls with a generous timeout; nothing asserts when the acks happen.
"""
from __future__ import annotations

import base64
import re
from typing import Any

import pytest

from conformance.helpers import restartable
from conformance.jshelpers import JsClient, get_hash, unique_name, wait_for
from conformance.pullconsumer import pull
from conformance.streamcontent import messages, origin_seqs, wait_messages

#: Origins drain after the followers' flow-control acks (about once a second on nats-server).
DRAIN = 15.0
#: nats-server's followers resume after a restart at their first health check (10 s).
RESUME = 40.0


def consumer_names(js: JsClient, stream: str) -> list[str]:
    out = js.api(f"CONSUMER.NAMES.{stream}")
    assert "error" not in out, out
    return out["consumers"]


def consumer_info(js: JsClient, stream: str, name: str) -> dict[str, Any]:
    out = js.api(f"CONSUMER.INFO.{stream}.{name}")
    assert "error" not in out, out
    return out


def drained(js: JsClient, stream: str, last_seq: int, timeout: float = DRAIN) -> dict[str, Any]:
    """Poll until ``stream`` holds nothing and has seen ``last_seq`` messages."""
    return wait_for(lambda: (st := js.state(stream))["messages"] == 0
                    and st["last_seq"] == last_seq and st, timeout)


def _sourcing_config(name: str, kind: str, follower: str, deliver: str) -> dict[str, Any]:
    """The config nats-server gives a durable sourcing consumer (``kind`` ``mirror``/``src``)
    started at the origin's first message, keys in its order (``_nats.level`` and
    ``_nats.ver`` of the metadata left out)."""
    return {"durable_name": name, "name": name, "deliver_policy": "all",
            "ack_policy": "flow_control", "max_deliver": -1, "replay_policy": "instant",
            "max_ack_pending": 1000, "flow_control": True, "deliver_subject": deliver,
            "idle_heartbeat": 1_000_000_000, "num_replicas": 0, "sourcing": True,
            "metadata": {f"_nats.{kind}.acc": "$G", f"_nats.{kind}.stream": follower,
                         "_nats.req.level": "4"}}


@pytest.mark.parametrize("retention", ["workqueue", "interest"])
def test_retention_origin_shows_durable_sourcing_consumers(target: str, js: JsClient,
                                                           retention: str) -> None:
    """A mirror and a source of a work-queue or interest stream: two durable consumers on the
    origin with nats-server's names, config and metadata, push-bound, counted in the origin's
    state; both followers get every message and the origin drains once
    they have acked (an interest origin keeps nothing published before anyone was
    interested)."""
    origin, mirror, s = unique_name(), unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"], retention=retention)
    before = 0
    if retention == "workqueue":
        for i in range(3):
            js.pub_ok(f"{p}.a", b"early%d" % i)
        before = 3
    js.create(mirror, mirror={"name": origin})
    js.create(s, sources=[{"name": origin}])
    m_name = "JS_MIRROR_" + get_hash(f"{mirror} $G")
    s_name = "JS_SRC_" + get_hash(get_hash(f"{s} $G"))
    wait_for(lambda: sorted(consumer_names(js, origin)) == [m_name, s_name])
    if before:
        wait_messages(js, mirror, before)
        wait_messages(js, s, before)
    for i in range(4):
        js.pub_ok(f"{p}.b", b"late%d" % i)
    wait_messages(js, mirror, before + 4)
    wait_messages(js, s, before + 4)
    assert [m["seq"] for m in messages(js, mirror)] == list(range(1, before + 5))
    assert origin_seqs(js, s) == list(range(1, before + 5))
    drained(js, origin, before + 4)
    assert js.state(origin)["consumer_count"] == 2

    for name, kind, follower, prefix in ((m_name, "mirror", mirror, "$JS.M."),
                                         (s_name, "src", s, "$JS.S.")):
        info = wait_for(lambda: (i := consumer_info(js, origin, name))["ack_floor"]["stream_seq"]
                        == before + 4 and i, DRAIN)
        cfg = info["config"]
        deliver = cfg["deliver_subject"]
        assert re.fullmatch(re.escape(prefix) + "[0-9A-Za-z]{8}", deliver), deliver
        meta = {k: v for k, v in cfg["metadata"].items() if k not in ("_nats.level", "_nats.ver")}
        expected = _sourcing_config(name, kind, follower, deliver)
        assert {**cfg, "metadata": meta} == expected
        assert list(cfg) == list(expected)
        assert info["stream_name"] == origin
        assert info["push_bound"] is True
        assert (info["num_ack_pending"], info["num_pending"], info["num_redelivered"]) == (0, 0, 0)
        assert info["delivered"]["stream_seq"] == before + 4
        assert info["delivered"]["consumer_seq"] == info["ack_floor"]["consumer_seq"]


def test_retention_origin_start_and_filter_in_consumer_config(target: str, js: JsClient) -> None:
    """The follower's start and filter become the origin consumer's: a mirror's
    ``filter_subject``, a source's ``opt_start_seq`` (``by_start_sequence``) and the source
    of a source's subject transform."""
    origin, mirror, s1, s2 = unique_name(), unique_name(), unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"], retention="workqueue")
    for i in range(3):
        js.pub_ok(f"{p}.a", b"%d" % i)
    js.create(mirror, mirror={"name": origin, "filter_subject": f"{p}.a"})
    js.create(s1, sources=[{"name": origin, "opt_start_seq": 2}])
    js.create(s2, subjects=[f"{s2.lower()}.>"], sources=[{"name": origin, "subject_transforms": [
        {"src": f"{p}.b", "dest": f"{s2.lower()}.b"}]}])
    names = {"JS_MIRROR_" + get_hash(f"{mirror} $G"): ("mirror", mirror),
             "JS_SRC_" + get_hash(get_hash(f"{s1} $G")): ("s1", s1),
             "JS_SRC_" + get_hash(get_hash(f"{s2} $G")): ("s2", s2)}
    wait_for(lambda: sorted(consumer_names(js, origin)) == sorted(names))
    cfgs = {names[n][0]: consumer_info(js, origin, n)["config"] for n in names}
    assert cfgs["mirror"]["deliver_policy"] == "all"
    assert cfgs["mirror"]["filter_subject"] == f"{p}.a"
    assert (cfgs["s1"]["deliver_policy"], cfgs["s1"]["opt_start_seq"]) == ("by_start_sequence", 2)
    assert cfgs["s2"]["filter_subject"] == f"{p}.b"  # one transform: a single filter
    assert "filter_subjects" not in cfgs["s2"]
    for cfg in cfgs.values():
        assert (cfg["ack_policy"], cfg["sourcing"]) == ("flow_control", True)
    js.pub_ok(f"{p}.b", b"b")
    wait_messages(js, mirror, 3)
    wait_messages(js, s1, 3)  # origin 2, 3 and 4
    wait_messages(js, s2, 1)
    assert [m["subject"] for m in messages(js, s2)] == [f"{s2.lower()}.b"]
    # origin 1 only ever interested the mirror, 4 the sources: all acked, all gone
    drained(js, origin, 4)


def test_interest_origin_sourced_twice(target: str, js: JsClient) -> None:
    """One interest origin sourced twice with different filters: two consumers whose names
    hash the source's index name too; what neither filter selects is not kept at all."""
    origin, s = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"], retention="interest")
    js.create(s, sources=[{"name": origin, "filter_subject": f"{p}.a"},
                          {"name": origin, "filter_subject": f"{p}.b"}])
    stable = get_hash(f"{s} $G")
    expected = sorted("JS_SRC_" + get_hash(f"{stable} {origin} {p}.{x} >") for x in "ab")
    wait_for(lambda: sorted(consumer_names(js, origin)) == expected)
    for i in range(3):
        for x in "abc":
            js.pub_ok(f"{p}.{x}", b"%d" % i)
    wait_messages(js, s, 6)
    assert sorted(m["subject"] for m in messages(js, s)) == [f"{p}.a"] * 3 + [f"{p}.b"] * 3
    drained(js, origin, 9)


@pytest.mark.parametrize("retention", ["workqueue", "interest"])
def test_retention_origin_waits_for_every_consumer(target: str, js: JsClient,
                                                   retention: str) -> None:
    """An origin with a consumer of its own besides a mirror (on a work queue too: a sourcing
    consumer overlaps with anything): the mirror gets every message whatever the application
    acks, and a message goes only when both are done with it: once the mirror has acked all
    three, the one the application has not acked stays."""
    origin, mirror = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"], retention=retention)
    js.create(mirror, mirror={"name": origin})
    m_name = "JS_MIRROR_" + get_hash(f"{mirror} $G")
    wait_for(lambda: consumer_names(js, origin) == [m_name])
    out = js.api(f"CONSUMER.CREATE.{origin}.app", {"stream_name": origin, "config": {
        "durable_name": "app", "ack_policy": "explicit"}})
    assert "error" not in out, out
    for i in range(3):
        js.pub_ok(f"{p}.job", b"%d" % i)
    got = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{origin}.app", {"batch": 3, "expires": 2_000_000_000},
               until_status=False, count=3)
    assert [m.data for m in got] == [b"0", b"1", b"2"]
    for m in got[:2]:
        js.request(m.reply, b"+ACK")
    wait_messages(js, mirror, 3)
    assert [base64.b64decode(m["data"]) for m in messages(js, mirror)] == [b"0", b"1", b"2"]
    wait_for(lambda: consumer_info(js, origin, m_name)["ack_floor"]["stream_seq"] == 3, DRAIN)
    st = wait_for(lambda: (st := js.state(origin))["messages"] == 1 and st, DRAIN)
    assert (st["first_seq"], st["last_seq"]) == (3, 3)
    js.request(got[2].reply, b"+ACK")
    drained(js, origin, 3)


def test_removing_the_follower_deletes_the_origin_consumer(target: str, js: JsClient) -> None:
    """Deleting a mirror deletes its consumer on a work-queue origin, and so does removing a
    source by an update (nats-server's delete request finds the durable consumer: no API
    error); an interest origin then drops what nobody is interested in any more."""
    origin, mirror, s = unique_name(), unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"], retention="workqueue")
    js.create(mirror, mirror={"name": origin})
    js.create(s, subjects=[f"{s.lower()}.>"], sources=[{"name": origin}])
    m_name = "JS_MIRROR_" + get_hash(f"{mirror} $G")
    s_name = "JS_SRC_" + get_hash(get_hash(f"{s} $G"))
    wait_for(lambda: sorted(consumer_names(js, origin)) == [m_name, s_name])
    js.pub_ok(f"{p}.x")
    wait_messages(js, mirror, 1)
    wait_messages(js, s, 1)
    errors = js.account_info()["api"]["errors"]
    js.delete(mirror)
    js.created.remove(mirror)
    # (nats-server sends its delete request after answering: poll)
    wait_for(lambda: consumer_names(js, origin) == [s_name])
    out = js.update(s, subjects=[f"{s.lower()}.>"], sources=[])
    assert "error" not in out, out
    wait_for(lambda: consumer_names(js, origin) == [])
    assert js.account_info()["api"]["errors"] == errors
    # (nats-server's stream state counts the removed consumer a moment longer)
    wait_for(lambda: js.state(origin)["consumer_count"] == 0)

    # interest: a removed follower no longer holds messages back
    io, im = unique_name(), unique_name()
    js.create(io, subjects=[f"{io.lower()}.>"], retention="interest")
    js.create(im, mirror={"name": io})
    im_name = "JS_MIRROR_" + get_hash(f"{im} $G")
    wait_for(lambda: consumer_names(js, io) == [im_name])
    out = js.api(f"CONSUMER.CREATE.{io}.app", {"stream_name": io, "config": {
        "durable_name": "app", "ack_policy": "explicit", "filter_subject": f"{io.lower()}.a"}})
    assert "error" not in out, out
    js.pub_ok(f"{io.lower()}.b")  # only the mirror is interested
    wait_messages(js, im, 1)
    js.delete(im)
    js.created.remove(im)
    wait_for(lambda: consumer_names(js, io) == ["app"])
    drained(js, io, 1)


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_file_retention_followers_resume_after_restart(target: str, spawn: Any, tmp_path: Any,
                                                       how: str) -> None:
    """File-stored work-queue origin, mirror and source across a restart (clean or killed):
    the origin consumers come back, what was published before and after is in the followers
    once, in order, and the origin drains."""
    start = restartable(spawn, tmp_path)
    srv = start()
    js = JsClient.connect(srv)
    origin, mirror, s = unique_name(), unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"], retention="workqueue")
    js.create(mirror, mirror={"name": origin})
    js.create(s, sources=[{"name": origin}])
    names = sorted(["JS_MIRROR_" + get_hash(f"{mirror} $G"),
                    "JS_SRC_" + get_hash(get_hash(f"{s} $G"))])
    wait_for(lambda: sorted(consumer_names(js, origin)) == names)
    for i in range(5):
        js.pub_ok(f"{p}.x", b"%d" % i)
    wait_messages(js, mirror, 5)
    wait_messages(js, s, 5)
    drained(js, origin, 5)
    for i in range(5, 8):  # followed, maybe not acked yet when the server goes
        js.pub_ok(f"{p}.x", b"%d" % i)
    wait_messages(js, mirror, 8)
    wait_messages(js, s, 8)
    js.close()
    if how == "kill":
        srv.proc.kill()
        srv.proc.wait()
    srv.stop()

    srv = start()
    js = JsClient.connect(srv)
    assert sorted(consumer_names(js, origin)) == names
    for i in range(8, 10):
        js.pub_ok(f"{p}.x", b"%d" % i)
    # nats-server's followers stall after a restart until their 10 s health check
    st = wait_messages(js, mirror, 10, timeout=RESUME)
    assert (st["first_seq"], st["last_seq"]) == (1, 10)
    wait_messages(js, s, 10, timeout=RESUME)
    assert origin_seqs(js, s) == list(range(1, 11))
    assert [base64.b64decode(m["data"]) for m in messages(js, s)] == [b"%d" % i for i in range(10)]
    drained(js, origin, 10)
    assert sorted(consumer_names(js, origin)) == names
    js.close()


# ---------------------------------------------------------------------- a given consumer


def _fc_consumer(js: JsClient, stream: str, name: str, deliver: str, **extra: Any) -> None:
    out = js.api(f"CONSUMER.CREATE.{stream}.{name}", {"stream_name": stream, "config": {
        "durable_name": name, "ack_policy": "flow_control", "deliver_subject": deliver,
        "max_ack_pending": 100, **extra}})
    assert "error" not in out, out


def test_mirror_and_source_through_a_given_consumer(target: str, js: JsClient) -> None:
    """``consumer`` names a durable ``flow_control`` push consumer the application made on the
    origin: the follower reads through it (no consumer of its own appears), acks it, and the
    source header names the origin with ``:C=<hash of the consumer>``; deleting the followers
    leaves the consumers alone."""
    wq, lim, mirror, s = unique_name(), unique_name(), unique_name(), unique_name()
    wp, lp = wq.lower(), lim.lower()
    js.create(wq, subjects=[f"{wp}.>"], retention="workqueue")
    js.create(lim, subjects=[f"{lp}.>"])
    for i in range(3):
        js.pub_ok(f"{wp}.job", b"%d" % i)
        js.pub_ok(f"{lp}.a", b"%d" % i)
    _fc_consumer(js, wq, "UC", f"dlv.{wp}")
    _fc_consumer(js, lim, "LC", f"dlv.{lp}", filter_subject=f"{lp}.a")
    js.create(mirror, mirror={"name": wq, "consumer": {"name": "UC", "deliver_subject": f"dlv.{wp}"}})
    js.create(s, sources=[{"name": lim, "consumer": {"name": "LC", "deliver_subject": f"dlv.{lp}"}}])
    wait_messages(js, mirror, 3)
    wait_messages(js, s, 3)
    assert [m["seq"] for m in messages(js, mirror)] == [1, 2, 3]
    ident = get_hash(js.info(lim)["created"])
    headers = [base64.b64decode(m["hdrs"]).decode() for m in messages(js, s)]
    assert headers == [f"NATS/1.0\r\nNats-Stream-Source: {lim}:C={get_hash('LC')} {i} > > {lp}.a "
                       f"{ident}\r\n\r\n" for i in (1, 2, 3)]
    drained(js, wq, 3)
    assert consumer_names(js, wq) == ["UC"]
    assert consumer_names(js, lim) == ["LC"]
    for stream, name in ((wq, "UC"), (lim, "LC")):
        info = wait_for(lambda: (i := consumer_info(js, stream, name))["ack_floor"]["stream_seq"] == 3
                        and i, DRAIN)
        assert info["push_bound"] is True
        assert (info["delivered"]["stream_seq"], info["num_ack_pending"]) == (3, 0)
    js.pub_ok(f"{lp}.a", b"3")
    wait_messages(js, s, 4)
    wait_for(lambda: js.info(s)["sources"][0].get("seq") == 4)
    js.delete(mirror)
    js.created.remove(mirror)
    js.delete(s)
    js.created.remove(s)
    assert consumer_names(js, wq) == ["UC"]
    assert consumer_names(js, lim) == ["LC"]


def test_given_consumer_missing_or_not_flow_control(target: str, js: JsClient) -> None:
    """A given consumer that is not acked by flow control is an error in the follower's info
    (10214 for a mirror, 10217 for a source); a missing one is waited for without an error,
    and followed once the application creates it. The config checks: a valid name and literal
    deliver subject, no start options or filter beside it (10213 / 10215)."""
    origin, mirror, s, late = unique_name(), unique_name(), unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.a")
    out = js.api(f"CONSUMER.CREATE.{origin}.EX", {"stream_name": origin, "config": {
        "durable_name": "EX", "ack_policy": "explicit", "deliver_subject": f"dlv.{p}.ex"}})
    assert "error" not in out, out
    given = {"name": "EX", "deliver_subject": f"dlv.{p}.ex"}
    js.create(mirror, mirror={"name": origin, "consumer": given})
    js.create(s, sources=[{"name": origin, "consumer": given}])
    wait_for(lambda: js.info(mirror)["mirror"].get("error") == {
        "code": 400, "err_code": 10214, "description": "stream mirror consumer requires flow control ack policy"})
    wait_for(lambda: js.info(s)["sources"][0].get("error") == {
        "code": 400, "err_code": 10217, "description": "stream source consumer requires flow control ack policy"})
    assert js.state(mirror)["messages"] == 0

    js.create(late, sources=[{"name": origin, "consumer": {"name": "LATE",
                                                             "deliver_subject": f"dlv.{p}.late"}}])
    info = js.info(late)["sources"][0]
    assert "error" not in info and info["active"] == -1
    _fc_consumer(js, origin, "LATE", f"dlv.{p}.late")
    wait_messages(js, late, 1, timeout=DRAIN)
    assert "error" not in js.info(late)["sources"][0]

    bad = [({"mirror": {"name": origin, "consumer": {"name": "a.b", "deliver_subject": "x"}}}, 10213),
           ({"mirror": {"name": origin, "consumer": {"name": "a", "deliver_subject": "x.*"}}}, 10213),
           ({"mirror": {"name": origin, "opt_start_seq": 2, "consumer": {"name": "a", "deliver_subject": "x"}}}, 10213),
           ({"sources": [{"name": origin, "filter_subject": f"{p}.a",
                          "consumer": {"name": "a", "deliver_subject": "x"}}]}, 10215)]
    for body, code in bad:
        out = js.create(unique_name(), check=False, **body)
        assert out["error"]["err_code"] == code, (body, out)


def test_followed_limits_stream_updated_to_interest(target: str, js: JsClient) -> None:
    """A limits stream followed by a source is updated to interest retention: the source's
    consumer (made for a limits stream, not shown) counts as interest for what its filter
    selects, so those messages are stored and copied; nothing removes them. What it does not
    select is not kept."""
    origin, s = unique_name(), unique_name()
    p = origin.lower()
    js.create(origin, subjects=[f"{p}.>"])
    js.create(s, sources=[{"name": origin, "filter_subject": f"{p}.a"}])
    wait_for(lambda: js.info(s)["sources"][0]["active"] >= 0)
    out = js.update(origin, subjects=[f"{p}.>"], retention="interest")
    assert "error" not in out, out
    js.pub_ok(f"{p}.a", b"1")
    js.pub_ok(f"{p}.b", b"2")
    wait_messages(js, s, 1)
    st = js.state(origin)
    assert (st["messages"], st["first_seq"], st["last_seq"]) == (1, 1, 2)
    assert consumer_names(js, origin) == []


def test_durable_consumer_names_and_metadata_with_a_domain(target: str, spawn: Any,
                                                           tmp_path: Any) -> None:
    """With a JetStream ``domain`` the consumer names hash it too, and the metadata names it
    (``_nats.mirror.domain`` / ``_nats.src.domain``)."""
    srv = spawn(config="jetstream { domain: HUB, store_dir: '%s' }\n" % (tmp_path / "sd"))
    js = JsClient.connect(srv)
    origin, mirror, s = unique_name(), unique_name(), unique_name()
    js.create(origin, subjects=[f"{origin.lower()}.>"], retention="workqueue")
    js.create(mirror, mirror={"name": origin})
    js.create(s, sources=[{"name": origin}])
    m_name = "JS_MIRROR_" + get_hash(f"{mirror} $G HUB")
    s_name = "JS_SRC_" + get_hash(get_hash(f"{s} $G HUB"))
    wait_for(lambda: sorted(consumer_names(js, origin)) == sorted([m_name, s_name]))
    for name, kind, follower in ((m_name, "mirror", mirror), (s_name, "src", s)):
        meta = consumer_info(js, origin, name)["config"]["metadata"]
        assert (meta[f"_nats.{kind}.domain"], meta[f"_nats.{kind}.stream"]) == ("HUB", follower)
    js.close()
