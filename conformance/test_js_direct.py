"""``$JS.API.DIRECT.GET``: raw message replies, status replies, batches and multi_last, compared
as wire bytes.

Each message's ``Nats-Time-Stamp`` is taken from ``STREAM.MSG.GET``'s ``time`` for the same
sequence, so the expected frames are exact and the two APIs must agree.
"""
from __future__ import annotations

import pytest

from conformance.jshelpers import TIMESTAMP, JsClient, Msg, header_block

G = "$JS.API.DIRECT.GET."


def hmsg(m: Msg, header: bytes, data: bytes) -> bytes:
    return (b"HMSG %s %s %d %d\r\n" % (m.subject.encode(), m.sid.encode(), len(header),
                                       len(header) + len(data)) + header + data + b"\r\n")


def status_frame(m: Msg, status: str, *pairs: tuple[str, str]) -> bytes:
    return hmsg(m, header_block(*pairs, status=status), b"")


class Stream:
    """A direct-get enabled stream ``<N>`` on ``<p>.*`` with 1 p.a "one", 2 p.b "two"
    (stored header X-H: 1), 3 p.a "three", 4 p.c "four"."""

    STORED = header_block(("X-H", "1"))

    def __init__(self, js: JsClient, name: str) -> None:
        self.js, self.name, self.p = js, name, name.lower()
        js.create(name, subjects=[f"{self.p}.*"], allow_direct=True)
        js.pub_ok(f"{self.p}.a", b"one")
        js.pub_ok(f"{self.p}.b", b"two", self.STORED)
        js.pub_ok(f"{self.p}.a", b"three")
        js.pub_ok(f"{self.p}.c", b"four")
        self.subjects = {1: f"{self.p}.a", 2: f"{self.p}.b", 3: f"{self.p}.a", 4: f"{self.p}.c"}
        self.data = {1: b"one", 2: b"two", 3: b"three", 4: b"four"}
        self.times = {seq: js.msg_get(name, {"seq": seq})["message"]["time"] for seq in range(1, 5)}

    def header(self, seq: int, *extra: tuple[str, str], no_stored: bool = False) -> bytes:
        stored = [] if (seq != 2 or no_stored) else [("X-H", "1")]
        pairs = stored + [("Nats-Stream", self.name), ("Nats-Subject", self.subjects[seq]),
                          ("Nats-Sequence", str(seq)), ("Nats-Time-Stamp", self.times[seq]),
                          *extra]
        return header_block(*pairs)

    def frame(self, m: Msg, seq: int, *extra: tuple[str, str]) -> bytes:
        return hmsg(m, self.header(seq, *extra), self.data[seq])

    def get(self, suffix: str = "", body: object = None) -> Msg:
        return self.js.request(G + self.name + suffix, body)

    def batch(self, body: object) -> list[Msg]:
        return self.js.request_many(G + self.name, body)


@pytest.fixture
def ds(js: JsClient, stream_name: str) -> Stream:
    return Stream(js, stream_name)


def test_js_direct_get_needs_allow_direct(target: str, js: JsClient, stream_name: str) -> None:
    """Without ``allow_direct`` nobody serves DIRECT.GET: the core 503 with Nats-Subject."""
    js.create(stream_name)
    js.pub_ok(stream_name, b"x")
    m = js.request(G + stream_name, {"seq": 1})
    assert m.frame == status_frame(m, "503", ("Nats-Subject", G + stream_name))


def test_js_direct_get_by_seq(target: str, ds: Stream) -> None:
    """The stored message with Nats-Stream/Subject/Sequence/Time-Stamp appended."""
    m = ds.get(body={"seq": 1})
    assert m.frame == ds.frame(m, 1)
    assert TIMESTAMP.match(m.headers["Nats-Time-Stamp"])
    assert m.reply is None


def test_js_direct_get_stored_headers_first(target: str, ds: Stream) -> None:
    """Stored headers come first, the server's after them."""
    m = ds.get(body={"seq": 2})
    assert m.frame == ds.frame(m, 2)
    assert m.header.startswith(b"NATS/1.0\r\nX-H: 1\r\nNats-Stream: ")


def test_js_direct_get_no_hdr(target: str, ds: Stream) -> None:
    """``no_hdr`` answers with a plain MSG holding only the payload."""
    for seq in (1, 2):
        m = ds.get(body={"seq": seq, "no_hdr": True})
        assert m.frame == b"MSG %s %s %d\r\n%s\r\n" % (
            m.subject.encode(), m.sid.encode(), len(ds.data[seq]), ds.data[seq])


def test_js_direct_get_last_and_next_by_subject(target: str, ds: Stream) -> None:
    m = ds.get(body={"last_by_subj": f"{ds.p}.a"})
    assert m.frame == ds.frame(m, 3)
    m = ds.get(body={"next_by_subj": f"{ds.p}.a", "seq": 2})
    assert m.frame == ds.frame(m, 3)
    m = ds.get(body={"next_by_subj": f"{ds.p}.*", "seq": 2})
    assert m.frame == ds.frame(m, 2)


def test_js_direct_get_subject_suffix(target: str, ds: Stream) -> None:
    """``DIRECT.GET.<S>.<subject>``: last message on that subject; a wildcard suffix gives the
    newest match; ``{}`` and ``no_hdr`` bodies are allowed."""
    m = ds.get(f".{ds.p}.a")
    assert m.frame == ds.frame(m, 3)
    m = ds.get(f".{ds.p}.*")
    assert m.frame == ds.frame(m, 4)
    m = ds.get(f".{ds.p}.b", {})
    assert m.frame == ds.frame(m, 2)
    m = ds.get(f".{ds.p}.b", {"no_hdr": True})
    assert m.frame == b"MSG %s %s 3\r\ntwo\r\n" % (m.subject.encode(), m.sid.encode())


@pytest.mark.parametrize(
    ("suffix", "body", "status"),
    [
        ("", {"seq": 99}, "404 Message Not Found"),
        (".{p}.zz", None, "404 Message Not Found"),
        ("", {"last_by_subj": "{p}.zz"}, "404 Message Not Found"),
        ("", None, "408 Empty Request"),
        ("", {}, "408 Empty Request"),
        ("", b"garbage", "408 Malformed Request"),
        (".{p}.a", b"garbage", "408 Malformed Request"),
        ("", {"seq": 1, "last_by_subj": "{p}.a"}, "408 Bad Request"),
        ("", {"last_by_subj": "{p}.a", "next_by_subj": "{p}.a"}, "408 Bad Request"),
        ("", {"last_by_subj": "{p}.a", "batch": 2}, "408 Bad Request"),
        ("", {"multi_last": ["{p}.a"], "next_by_subj": "{p}.a"}, "408 Bad Request"),
        ("", {"multi_last": ["{p}.a"], "up_to_seq": 2,
              "up_to_time": "2030-01-01T00:00:00Z"}, "408 Bad Request"),
        (".{p}.a", {"seq": 1}, "408 Bad Request"),
        (".{p}.a", {"last_by_subj": "{p}.a"}, "408 Bad Request"),
        (".{p}.a", {"batch": 2}, "408 Bad Request"),
        ("", {"multi_last": ["{p}.zz"]}, "404 No Results"),
    ],
    ids=["seq-missing", "suffix-missing", "last-missing", "empty", "empty-json", "malformed",
         "suffix-malformed", "seq+last", "last+next", "last+batch", "multi+next",
         "upto-both", "suffix+seq", "suffix+last", "suffix+batch", "multi-none"],
)
def test_js_direct_get_status_replies(target: str, ds: Stream, suffix: str, body: object,
                                      status: str) -> None:
    """Failures are a bare status header block, no payload."""
    if isinstance(body, dict):
        body = {k: ([x.format(p=ds.p) for x in v] if isinstance(v, list)
                    else v.format(p=ds.p) if isinstance(v, str) and "{p}" in v else v)
                for k, v in body.items()}
    m = ds.get(suffix.format(p=ds.p), body)
    assert m.frame == status_frame(m, status)


def test_js_direct_get_batch(target: str, ds: Stream) -> None:
    """A batch adds Nats-Num-Pending / Nats-Last-Sequence to each message and ends with
    ``204 EOB`` carrying the last message's values."""
    msgs = ds.batch({"seq": 1, "batch": 3})
    assert len(msgs) == 4
    assert msgs[0].frame == ds.frame(msgs[0], 1, ("Nats-Num-Pending", "3"),
                                     ("Nats-Last-Sequence", "0"))
    assert msgs[1].frame == ds.frame(msgs[1], 2, ("Nats-Num-Pending", "2"),
                                     ("Nats-Last-Sequence", "1"))
    assert msgs[2].frame == ds.frame(msgs[2], 3, ("Nats-Num-Pending", "1"),
                                     ("Nats-Last-Sequence", "2"))
    assert msgs[3].frame == status_frame(msgs[3], "204 EOB", ("Nats-Num-Pending", "1"),
                                         ("Nats-Last-Sequence", "3"))


def test_js_direct_get_batch_next_by_subject(target: str, ds: Stream) -> None:
    """A filtered batch stops when nothing more matches."""
    msgs = ds.batch({"seq": 2, "batch": 10, "next_by_subj": f"{ds.p}.a"})
    assert len(msgs) == 2
    assert msgs[0].frame == ds.frame(msgs[0], 3, ("Nats-Num-Pending", "0"),
                                     ("Nats-Last-Sequence", "0"))
    assert msgs[1].frame == status_frame(msgs[1], "204 EOB", ("Nats-Num-Pending", "0"),
                                         ("Nats-Last-Sequence", "3"))


def test_js_direct_get_batch_max_bytes(target: str, ds: Stream) -> None:
    """``max_bytes`` stops the batch once reached (at least one message is sent)."""
    msgs = ds.batch({"seq": 1, "batch": 3, "max_bytes": 5})
    assert len(msgs) == 2
    assert msgs[0].frame == ds.frame(msgs[0], 1, ("Nats-Num-Pending", "3"),
                                     ("Nats-Last-Sequence", "0"))
    assert msgs[1].frame == status_frame(msgs[1], "204 EOB", ("Nats-Num-Pending", "3"),
                                         ("Nats-Last-Sequence", "1"))


def test_js_direct_get_batch_past_end(target: str, ds: Stream) -> None:
    """A batch whose first lookup fails is just the 404, no EOB."""
    msgs = ds.js.request_many(G + ds.name, {"seq": 10, "batch": 2})
    assert len(msgs) == 1 and msgs[0].frame == status_frame(msgs[0], "404 Message Not Found")
    ds.js.raw.barrier()
    assert not ds.js.raw.read_available(0.2)


def test_js_direct_get_multi_last(target: str, ds: Stream) -> None:
    """multi_last: the last message per matching subject in sequence order, then EOB with
    Nats-UpTo-Sequence."""
    msgs = ds.batch({"multi_last": [f"{ds.p}.*"]})
    assert len(msgs) == 4
    assert msgs[0].frame == ds.frame(msgs[0], 2, ("Nats-Num-Pending", "2"),
                                     ("Nats-Last-Sequence", "0"))
    assert msgs[1].frame == ds.frame(msgs[1], 3, ("Nats-Num-Pending", "1"),
                                     ("Nats-Last-Sequence", "2"))
    assert msgs[2].frame == ds.frame(msgs[2], 4, ("Nats-Num-Pending", "0"),
                                     ("Nats-Last-Sequence", "3"))
    assert msgs[3].frame == status_frame(msgs[3], "204 EOB", ("Nats-Num-Pending", "0"),
                                         ("Nats-Last-Sequence", "4"),
                                         ("Nats-UpTo-Sequence", "4"))


def test_js_direct_get_multi_last_up_to_seq(target: str, ds: Stream) -> None:
    msgs = ds.batch({"multi_last": [f"{ds.p}.*"], "up_to_seq": 3})
    assert len(msgs) == 3
    assert msgs[0].frame == ds.frame(msgs[0], 2, ("Nats-Num-Pending", "1"),
                                     ("Nats-Last-Sequence", "0"))
    assert msgs[1].frame == ds.frame(msgs[1], 3, ("Nats-Num-Pending", "0"),
                                     ("Nats-Last-Sequence", "2"))
    assert msgs[2].frame == status_frame(msgs[2], "204 EOB", ("Nats-Num-Pending", "0"),
                                         ("Nats-Last-Sequence", "3"),
                                         ("Nats-UpTo-Sequence", "3"))


def test_js_direct_get_required_api_level(target: str, ds: Stream) -> None:
    m = ds.js.request(G + ds.name, {"seq": 1}, header_block(("Nats-Required-Api-Level", "9")))
    assert m.frame == status_frame(m, "412 Required Api Level")


def test_js_direct_get_lenient_decoding(target: str, ds: Stream) -> None:
    """Unknown fields in a DIRECT.GET body are ignored (unlike the JSON APIs)."""
    m = ds.get(body={"seq": 1, "whatever": True})
    assert m.frame == ds.frame(m, 1)


def test_js_direct_get_after_delete(target: str, ds: Stream) -> None:
    """A deleted sequence is not found; the subject form falls back to the previous one."""
    assert ds.js.msg_delete(ds.name, {"seq": 3})["success"] is True
    m = ds.get(body={"seq": 3})
    assert m.frame == status_frame(m, "404 Message Not Found")
    m = ds.get(f".{ds.p}.a")
    assert m.frame == ds.frame(m, 1)
