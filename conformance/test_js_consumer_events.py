"""Consumer events and replay pacing: the ack metric of
``sample_freq``, the MSG_NAKED and MSG_TERMINATED advisories with their exact JSON, and
``replay_policy: original`` spacing deliveries like the stored timestamps (pull and push)."""
from __future__ import annotations

import time
import uuid
from typing import Any

from conformance.jshelpers import JsClient, Sub, ack_fields, check_envelope
from conformance.pullconsumer import Pull, pull

def test_js_consumer_ack_metric_sampled_at_100(target: str, js: JsClient,
                                                stream_name: str) -> None:
    pl = Pull(js, stream_name, msgs=3, sample_freq="100%")
    ev = Sub(js, f"$JS.EVENT.*.CONSUMER.*.{stream_name}.c")
    got = pl.next({"batch": 3}, until_status=False, count=3)
    time.sleep(0.02)
    pl.ack(got[0])
    pl.ack(got[0])  # not pending any more: no second sample
    pl.ack(got[2], b"+ACK")
    subject, body = ev.event()
    assert subject == f"$JS.EVENT.METRIC.CONSUMER.ACK.{stream_name}.c"
    rest = check_envelope(body, "metric.v1.consumer_ack")
    assert list(rest) == ["stream", "consumer", "consumer_seq", "stream_seq", "ack_time",
                          "deliveries"]
    assert (rest["stream"], rest["consumer"], rest["consumer_seq"], rest["stream_seq"],
            rest["deliveries"]) == (stream_name, "c", 1, 1, 1)
    assert isinstance(rest["ack_time"], int) and 10_000_000 <= rest["ack_time"] < 5 * 10**9
    subject, body = ev.event()
    assert (body["consumer_seq"], body["stream_seq"]) == (3, 3)


def test_js_consumer_ack_metric_not_for_term_ack_all_or_unsampled(
        target: str, js: JsClient, stream_name: str) -> None:
    """+TERM acks are not sampled; ack-all consumers and consumers without sample_freq (or
    with 0%) send no metric. A final sampled ack shows nothing came before it."""
    name = stream_name
    js.create(name, subjects=[f"{name.lower()}.>"])
    for i in range(3):
        js.pub_ok(f"{name.lower()}.m", f"m{i}")
    for cname, cfg in [("all", {"ack_policy": "all", "sample_freq": "100"}),
                       ("plain", {"ack_policy": "explicit"}),
                       ("zero", {"ack_policy": "explicit", "sample_freq": "0%"}),
                       ("c", {"ack_policy": "explicit", "sample_freq": "100"})]:
        out = js.api(f"CONSUMER.CREATE.{name}.{cname}",
                     {"stream_name": name, "config": {"durable_name": cname, **cfg}})
        assert "error" not in out, out
    ev = Sub(js, f"$JS.EVENT.METRIC.CONSUMER.ACK.{name}.*")
    for cname in ("all", "plain", "zero"):
        got = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{name}.{cname}", {"batch": 3},
                   until_status=False, count=3)
        js.request(got[2].reply or "", b"+ACK")
    got = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{name}.c", {"batch": 3},
               until_status=False, count=3)
    js.request(got[0].reply or "", b"+TERM")
    js.request(got[1].reply or "", b"")
    subject, body = ev.event()
    assert subject == f"$JS.EVENT.METRIC.CONSUMER.ACK.{name}.c"
    assert (body["consumer_seq"], body["stream_seq"]) == (2, 2)


def test_js_consumer_nak_and_term_advisories(target: str, js: JsClient,
                                             stream_name: str) -> None:
    pl = Pull(js, stream_name, msgs=5)
    ev = Sub(js, f"$JS.EVENT.ADVISORY.CONSUMER.*.{stream_name}.c")
    got = pl.next({"batch": 5}, until_status=False, count=5)
    pl.ack(got[0], b"-NAK")
    pl.ack(got[1], b'-NAK {"delay": 5000000000}')
    pl.ack(got[2], b"+TERM")
    pl.ack(got[3], b"+TERM  poison  pill ")
    pl.ack(got[2], b"-NAK")  # terminated: not pending, no advisory
    pl.ack(got[2], b"+TERM again")  # still announced
    pl.ack(got[4], b"")

    subject, body = ev.event()
    assert subject == f"$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.{stream_name}.c"
    assert check_envelope(body, "advisory.v1.nak") == {
        "stream": stream_name, "consumer": "c", "consumer_seq": 1, "stream_seq": 1,
        "deliveries": 1}
    assert list(body)[3:] == ["stream", "consumer", "consumer_seq", "stream_seq", "deliveries"]
    subject, body = ev.event()
    assert body["type"].endswith(".nak") and (body["consumer_seq"], body["stream_seq"]) == (2, 2)
    expected_terms = [(3, None), (4, "poison  pill"), (3, "again")]
    for seq, reason in expected_terms:
        subject, body = ev.event()
        assert subject == f"$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.{stream_name}.c"
        want: dict[str, Any] = {"stream": stream_name, "consumer": "c", "consumer_seq": seq,
                                "stream_seq": seq, "deliveries": 1}
        if reason is not None:
            want["reason"] = reason
        assert check_envelope(body, "advisory.v1.terminated") == want
        assert list(body)[3:] == list(want)
    # The NAKed message comes back with delivery count 2 (and its NAK in turn is announced).
    [again] = pl.next({"batch": 1}, until_status=False, count=1)
    assert ack_fields(again)[2:5] == (2, 1, 6)
    pl.ack(again, b"-NAK")
    subject, body = ev.event()
    assert (body["consumer_seq"], body["stream_seq"], body["deliveries"]) == (6, 1, 2)


def test_js_consumer_advisories_only_to_listeners(target: str, js: JsClient,
                                                  stream_name: str) -> None:
    """Nothing is published without a subscriber; a later subscriber sees only later events."""
    pl = Pull(js, stream_name, msgs=2)
    got = pl.next({"batch": 2}, until_status=False, count=2)
    pl.ack(got[0], b"+TERM early")
    ev = Sub(js, f"$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.{stream_name}.c")
    pl.ack(got[1], b"+TERM late")
    _, body = ev.event()
    assert body["reason"] == "late"


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in zip(times, times[1:])]


def test_js_consumer_replay_original_pull(target: str, js: JsClient, stream_name: str) -> None:
    name = stream_name
    js.create(name, subjects=[f"{name.lower()}.>"])
    for i, gap in enumerate([0, 0.3, 0.6]):
        time.sleep(gap)
        js.pub_ok(f"{name.lower()}.m", f"m{i}")
    out = js.api(f"CONSUMER.CREATE.{name}.c", {"stream_name": name, "config": {
        "durable_name": "c", "ack_policy": "explicit", "replay_policy": "original"}})
    assert "error" not in out and out["config"]["replay_policy"] == "original", out
    pl_inbox = f"_R.{uuid.uuid4().hex}"
    ev = Sub(js, pl_inbox)
    t0 = time.monotonic()
    js.send(f"$JS.API.CONSUMER.MSG.NEXT.{name}.c", {"batch": 4, "expires": 5_000_000_000},
            reply=pl_inbox)
    times, datas = [], []
    for _ in range(3):
        m = ev.next()
        times.append(time.monotonic())
        datas.append(m.data)
    assert datas == [b"m0", b"m1", b"m2"]
    assert times[0] - t0 < 0.25
    g = _gaps(times)
    assert 0.2 < g[0] < 0.5 and 0.45 < g[1] < 0.85, g
    # Caught up: a new message is delivered at once.
    time.sleep(0.3)
    t1 = time.monotonic()
    js.pub_ok(f"{name.lower()}.m", "late")
    m = ev.next()
    assert m.data == b"late" and time.monotonic() - t1 < 0.25


def test_js_consumer_replay_original_push(target: str, js: JsClient, stream_name: str) -> None:
    name = stream_name
    js.create(name, subjects=[f"{name.lower()}.>"])
    for i, gap in enumerate([0, 0.4, 0.2]):
        time.sleep(gap)
        js.pub_ok(f"{name.lower()}.m", f"m{i}")
    dsubj = f"_D.{uuid.uuid4().hex}"
    ev = Sub(js, dsubj)
    t0 = time.monotonic()
    out = js.api(f"CONSUMER.CREATE.{name}.p", {"stream_name": name, "config": {
        "durable_name": "p", "deliver_subject": dsubj, "replay_policy": "original"}})
    assert "error" not in out, out
    times = []
    for i in range(3):
        m = ev.next()
        assert m.data == f"m{i}".encode()
        times.append(time.monotonic())
    assert times[0] - t0 < 0.25
    g = _gaps(times)
    assert 0.3 < g[0] < 0.6 and 0.1 < g[1] < 0.4, g
