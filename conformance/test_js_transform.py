"""Stream subject transforms (applied before storing) and republish (after storing)."""
from __future__ import annotations

from conformance.jshelpers import TIMESTAMP, JsClient


def test_js_subject_transform_rewrites_the_stored_subject(target: str, js: JsClient,
                                                          stream_name: str) -> None:
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.in.*.*"], storage="memory",
              subject_transform={"src": f"{p}.in.*.*", "dest": f"{p}.out.{{{{wildcard(2)}}}}.$1"})
    assert js.pub_ok(f"{p}.in.a.b", b"x") == 1
    msg = js.msg_get(stream_name, {"seq": 1})["message"]
    assert msg["subject"] == f"{p}.out.b.a"
    assert js.msg_get(stream_name, {"last_by_subj": f"{p}.out.b.a"})["message"]["seq"] == 1


def test_js_subject_transform_partition(target: str, js: JsClient, stream_name: str) -> None:
    """Deterministic partitioning: the same keys land in the same partition on both servers."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.*"], storage="memory",
              subject_transform={"src": f"{p}.*", "dest": f"{p}.p.{{{{partition(5,1)}}}}.$1"})
    got = []
    for key in ("alpha", "beta", "gamma", "delta", "order-17"):
        seq = js.pub_ok(f"{p}.{key}")
        got.append(js.msg_get(stream_name, {"seq": seq})["message"]["subject"])
    # Observed on nats-server 2.15.1.
    assert got == [f"{p}.p.2.alpha", f"{p}.p.1.beta", f"{p}.p.4.gamma", f"{p}.p.0.delta",
                   f"{p}.p.2.order-17"]


def test_js_republish_headers(target: str, js: JsClient, stream_name: str) -> None:
    """Republished copies keep the stored headers and gain Nats-Stream, Nats-Subject,
    Nats-Sequence, Nats-Time-Stamp and Nats-Last-Sequence (previous seq on that subject)."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"], storage="memory",
              republish={"src": f"{p}.>", "dest": f"rp{p}.>"})
    js.raw.send(f"SUB rp{p}.> 77\r\n".encode())
    js.raw.barrier()
    js.pub_ok(f"{p}.a", b"one")
    js.pub_ok(f"{p}.b", b"two", headers=b"NATS/1.0\r\nX-A: 1\r\n\r\n")
    js.pub_ok(f"{p}.a", b"three")
    first = js.next_msg(f"rp{p}.a")
    second = js.next_msg(f"rp{p}.b")
    third = js.next_msg(f"rp{p}.a")
    assert first.data == b"one" and second.data == b"two" and third.data == b"three"
    names = [k for k, _ in second.header_pairs]
    assert names == ["X-A", "Nats-Stream", "Nats-Subject", "Nats-Sequence", "Nats-Time-Stamp",
                     "Nats-Last-Sequence"]
    h = second.headers
    assert (h["Nats-Stream"], h["Nats-Subject"], h["Nats-Sequence"], h["Nats-Last-Sequence"]) == (
        stream_name, f"{p}.b", "2", "0")
    assert TIMESTAMP.match(h["Nats-Time-Stamp"])
    assert third.headers["Nats-Last-Sequence"] == "1"
    assert third.headers["Nats-Time-Stamp"] == js.msg_get(
        stream_name, {"seq": 3})["message"]["time"]


def test_js_republish_headers_only(target: str, js: JsClient, stream_name: str) -> None:
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"], storage="memory",
              republish={"src": f"{p}.>", "dest": f"rp{p}.>", "headers_only": True})
    js.raw.send(f"SUB rp{p}.> 78\r\n".encode())
    js.raw.barrier()
    js.pub_ok(f"{p}.a", b"12345")
    m = js.next_msg(f"rp{p}.a")
    assert m.data == b""
    assert m.headers["Nats-Msg-Size"] == "5"
    assert [k for k, _ in m.header_pairs][-1] == "Nats-Msg-Size"
