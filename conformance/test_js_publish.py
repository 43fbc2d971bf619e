"""The JetStream publish path: pub acks, dedup, expectation headers, rollups, TTL header
checks, limits and discard policies, byte accounting."""
from __future__ import annotations

import pytest

from conformance.jshelpers import (
    JsClient,
    b64,
    file_bytes,
    header_block,
    mem_bytes,
    unique_name,
)

H = header_block


def ack_error(stream: str, code: int, err_code: int, description: str) -> bytes:
    """The exact bytes of an error pub ack."""
    desc = description.replace('"', '\\"')
    return (f'{{"error":{{"code":{code},"err_code":{err_code},"description":"{desc}"}},'
            f'"stream":"{stream}","seq":0}}').encode()


@pytest.fixture
def ps(js: JsClient, stream_name: str) -> tuple[str, str]:
    """A default file stream ``<N>`` on ``<p>.*``."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.*"])
    return stream_name, p


def test_js_pub_ack_bytes(target: str, js: JsClient, ps: tuple[str, str]) -> None:
    """The ack is a plain MSG with compact JSON ``{"stream":..,"seq":..}``."""
    name, p = ps
    m = js.publish(f"{p}.a", b"hello")
    ack = b'{"stream":"%s","seq":1}' % name.encode()
    assert m.frame == b"MSG %s 1 %d\r\n%s\r\n" % (m.subject.encode(), len(ack), ack)
    assert js.publish(f"{p}.b", b"").data == b'{"stream":"%s","seq":2}' % name.encode()


def test_js_pub_without_reply_is_stored_silently(target: str, js: JsClient,
                                                 ps: tuple[str, str]) -> None:
    """A PUB without reply is stored; nothing comes back."""
    name, p = ps
    js.send(f"{p}.a", b"x")
    js.send(f"{p}.a", b"x", H(("Nats-Expected-Stream", "WRONG")))  # error: silent
    assert js.raw.barrier() == b""
    assert js.pub_ok(f"{p}.a") == 2
    assert js.state(name)["messages"] == 2


def test_js_pub_no_stream_no_responders(target: str, js: JsClient) -> None:
    """A publish with reply to a subject no stream covers gets the core 503."""
    subj = f"{unique_name().lower()}.none"
    m = js.publish(subj, b"x")
    assert m.data == b"" and m.header == f"NATS/1.0 503\r\nNats-Subject: {subj}\r\n\r\n".encode()


def test_js_pub_core_subscribers_still_receive(target: str, js: JsClient,
                                               ps: tuple[str, str]) -> None:
    """The stream is just another subscriber: core subscribers get the message (with the
    publisher's reply subject) too."""
    _, p = ps
    js.raw.send(f"SUB {p}.a 77\r\n".encode())
    js.raw.barrier()
    ack = js.publish(f"{p}.a", b"both")
    assert ack.json()["seq"] == 1
    core = js.next_msg(f"{p}.a", timeout=2)
    assert core.frame == b"MSG %s 77 %s 4\r\nboth\r\n" % (f"{p}.a".encode(), ack.subject.encode())


def test_js_dedup_msg_id(target: str, js: JsClient, ps: tuple[str, str]) -> None:
    """Same Nats-Msg-Id within the window: duplicate ack (note the space) with the original
    sequence, nothing stored."""
    name, p = ps
    hdr = H(("Nats-Msg-Id", "m-1"))
    assert js.publish(f"{p}.a", b"1", hdr).data == b'{"stream":"%s","seq":1}' % name.encode()
    js.pub_ok(f"{p}.a", b"2")
    dup = js.publish(f"{p}.b", b"other", hdr)
    assert dup.data == b'{"stream":"%s","seq":1,"duplicate": true}' % name.encode()
    assert js.state(name)["messages"] == 2
    assert js.pub_ok(f"{p}.a", b"3", H(("Nats-Msg-Id", "m-2"))) == 3


def test_js_dedup_small_window(target: str, js: JsClient) -> None:
    """A 100 ms window still catches an immediate duplicate."""
    name = unique_name()
    js.create(name, duplicate_window=100_000_000)
    hdr = H(("Nats-Msg-Id", "x"))
    assert js.pub_ok(name, b"1", hdr) == 1
    assert js.pub(name, b"1", hdr) == {"stream": name, "seq": 1, "duplicate": True}


def test_js_expected_stream(target: str, js: JsClient, ps: tuple[str, str]) -> None:
    name, p = ps
    m = js.publish(f"{p}.a", b"x", H(("Nats-Expected-Stream", "OTHER")))
    assert m.data == ack_error(name, 400, 10060, "expected stream does not match")
    assert js.pub_ok(f"{p}.a", b"x", H(("Nats-Expected-Stream", name))) == 1


def test_js_expected_last_sequence(target: str, js: JsClient, ps: tuple[str, str]) -> None:
    name, p = ps
    assert js.pub_ok(f"{p}.a", b"x", H(("Nats-Expected-Last-Sequence", "0"))) == 1
    m = js.publish(f"{p}.a", b"x", H(("Nats-Expected-Last-Sequence", "5")))
    assert m.data == ack_error(name, 400, 10071, "wrong last sequence: 1")
    assert js.pub_ok(f"{p}.b", b"x", H(("Nats-Expected-Last-Sequence", "1"))) == 2


def test_js_expected_last_subject_sequence(target: str, js: JsClient,
                                           ps: tuple[str, str]) -> None:
    """0 succeeds on an empty subject, a second 0 fails with the subject's last sequence."""
    name, p = ps
    js.pub_ok(f"{p}.other")
    hdr0 = H(("Nats-Expected-Last-Subject-Sequence", "0"))
    assert js.pub_ok(f"{p}.k", b"v1", hdr0) == 2
    assert js.publish(f"{p}.k", b"v2", hdr0).data == ack_error(
        name, 400, 10071, "wrong last sequence: 2")
    js.pub_ok(f"{p}.other")
    assert js.pub_ok(f"{p}.k", b"v2", H(("Nats-Expected-Last-Subject-Sequence", "2"))) == 4


def test_js_expected_last_subject_sequence_subject(target: str, js: JsClient,
                                                   ps: tuple[str, str]) -> None:
    """The ``-Subject`` header redirects the check (wildcards allowed); alone it is 10193."""
    name, p = ps
    js.pub_ok(f"{p}.a")
    js.pub_ok(f"{p}.b")
    m = js.publish(f"{p}.c", b"", H(("Nats-Expected-Last-Subject-Sequence-Subject", f"{p}.a")))
    assert m.data == ack_error(name, 400, 10193,
                               "missing sequence for expected last sequence per subject")
    redirect = H(("Nats-Expected-Last-Subject-Sequence", "1"),
                 ("Nats-Expected-Last-Subject-Sequence-Subject", f"{p}.a"))
    assert js.pub_ok(f"{p}.c", b"", redirect) == 3
    wild = H(("Nats-Expected-Last-Subject-Sequence", "2"),
             ("Nats-Expected-Last-Subject-Sequence-Subject", f"{p}.*"))
    assert js.publish(f"{p}.c", b"", wild).data == ack_error(
        name, 400, 10071, "wrong last sequence: 3")


def test_js_expected_last_msg_id(target: str, js: JsClient, ps: tuple[str, str]) -> None:
    """Compared with the last stored message's id ('' when it had none); an empty header value
    means no check."""
    name, p = ps
    js.pub_ok(f"{p}.a", b"", H(("Nats-Msg-Id", "first")))
    m = js.publish(f"{p}.a", b"", H(("Nats-Expected-Last-Msg-Id", "nope")))
    assert m.data == ack_error(name, 400, 10070, "wrong last msg ID: first")
    assert js.pub_ok(f"{p}.a", b"", H(("Nats-Expected-Last-Msg-Id", "first"))) == 2
    m = js.publish(f"{p}.a", b"", H(("Nats-Expected-Last-Msg-Id", "first")))
    assert m.data == ack_error(name, 400, 10070, "wrong last msg ID: ")
    assert js.pub_ok(f"{p}.a", b"", H(("Nats-Expected-Last-Msg-Id", ""))) == 3


def test_js_pub_stream_source_header_refused(target: str, js: JsClient,
                                             ps: tuple[str, str]) -> None:
    name, p = ps
    m = js.publish(f"{p}.a", b"", H(("Nats-Stream-Source", "X 1")))
    assert m.data == ack_error(name, 400, 10227, "message stream source header is not allowed")


def test_js_rollup_not_permitted(target: str, js: JsClient, ps: tuple[str, str]) -> None:
    name, p = ps
    m = js.publish(f"{p}.a", b"", H(("Nats-Rollup", "sub")))
    assert m.data == ack_error(name, 500, 10111, "rollup not permitted")
    assert js.state(name)["messages"] == 0


def test_js_rollup_sub_and_all(target: str, js: JsClient, stream_name: str) -> None:
    """``sub`` purges earlier messages on the subject, ``ALL`` (any case) the whole stream;
    an unknown value is 500/10111."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.*"], allow_rollup_hdrs=True)
    for s in ("a", "b", "a", "b"):
        js.pub_ok(f"{p}.{s}")
    assert js.pub_ok(f"{p}.a", b"r", H(("Nats-Rollup", "sub"))) == 5
    st = js.info(stream_name, {"subjects_filter": ">"})["state"]
    assert st["subjects"] == {f"{p}.a": 1, f"{p}.b": 2}
    assert (st["messages"], st["first_seq"], st["num_deleted"]) == (3, 2, 1)  # gap: seq 3
    m = js.publish(f"{p}.a", b"", H(("Nats-Rollup", "bad")))
    assert m.data == ack_error(stream_name, 500, 10111, 'rollup value invalid: "bad"')
    assert js.pub_ok(f"{p}.b", b"all", H(("Nats-Rollup", "ALL"))) == 6
    st = js.state(stream_name)
    assert (st["messages"], st["first_seq"], st["last_seq"]) == (1, 6, 6)


def test_js_ttl_disabled(target: str, js: JsClient, ps: tuple[str, str]) -> None:
    name, p = ps
    m = js.publish(f"{p}.a", b"", H(("Nats-TTL", "5s")))
    assert m.data == ack_error(name, 400, 10166, "per-message TTL is disabled")


@pytest.mark.parametrize("value", ["500ms", "0", "junk", "-1", "0s"])
def test_js_ttl_invalid(target: str, js: JsClient, stream_name: str, value: str) -> None:
    js.create(stream_name, allow_msg_ttl=True)
    m = js.publish(stream_name, b"", H(("Nats-TTL", value)))
    assert m.data == ack_error(stream_name, 400, 10165, "invalid per-message TTL")
    assert js.state(stream_name)["last_seq"] == 0


@pytest.mark.parametrize("value", ["2", "1s", "1h", "1m0s", "never"])
def test_js_ttl_valid_values(target: str, js: JsClient, stream_name: str, value: str) -> None:
    """Accepted TTL forms; the header is stored verbatim."""
    js.create(stream_name, allow_msg_ttl=True)
    hdr = H(("Nats-TTL", value))
    assert js.pub_ok(stream_name, b"x", hdr) == 1
    msg = js.msg_get(stream_name, {"seq": 1})["message"]
    assert msg["hdrs"] == b64(hdr)


def test_js_max_msg_size_counts_headers(target: str, js: JsClient, stream_name: str) -> None:
    js.create(stream_name, max_msg_size=10)
    assert js.pub_ok(stream_name, b"x" * 10) == 1
    too_big = ack_error(stream_name, 400, 10054, "message size exceeds maximum allowed")
    assert js.publish(stream_name, b"x" * 11).data == too_big
    assert js.publish(stream_name, b"x", H(("A", "b"))).data == too_big
    assert js.state(stream_name)["messages"] == 1


def test_js_max_msgs_discard_old(target: str, js: JsClient, stream_name: str) -> None:
    js.create(stream_name, max_msgs=2)
    for i in range(1, 4):
        assert js.pub_ok(stream_name, str(i).encode()) == i
    st = js.state(stream_name)
    assert (st["messages"], st["first_seq"], st["last_seq"]) == (2, 2, 3)


def test_js_max_msgs_discard_new(target: str, js: JsClient, stream_name: str) -> None:
    js.create(stream_name, max_msgs=1, discard="new")
    js.pub_ok(stream_name)
    assert js.publish(stream_name).data == ack_error(
        stream_name, 503, 10077, "maximum messages exceeded")
    st = js.state(stream_name)
    assert (st["messages"], st["last_seq"]) == (1, 1)


def test_js_max_bytes_discard_new_memory(target: str, js: JsClient, stream_name: str) -> None:
    """Memory records are 16+subject+headers+data bytes: one 58-byte record fits in 100, a
    second one does not."""
    js.create(stream_name, storage="memory", max_bytes=100, discard="new")
    data = b"x" * (58 - 16 - len(stream_name))
    assert mem_bytes(stream_name, data) == 58
    js.pub_ok(stream_name, data)
    assert js.publish(stream_name, data).data == ack_error(
        stream_name, 503, 10077, "maximum bytes exceeded")
    assert js.state(stream_name)["bytes"] == 58


def test_js_max_bytes_discard_old_file(target: str, js: JsClient, stream_name: str) -> None:
    """File records are 30+subject+data: with room for two, the third evicts the first."""
    data = b"y" * 20
    size = file_bytes(stream_name, data)
    js.create(stream_name, max_bytes=2 * size + 5)
    for _ in range(3):
        js.pub_ok(stream_name, data)
    st = js.state(stream_name)
    assert (st["messages"], st["bytes"], st["first_seq"]) == (2, 2 * size, 2)


def test_js_max_msgs_per_subject(target: str, js: JsClient, stream_name: str) -> None:
    """The oldest message of a subject is replaced, even with discard new."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.*"], max_msgs_per_subject=2, discard="new")
    for s in ("a", "a", "b", "a"):
        js.pub_ok(f"{p}.{s}")
    st = js.info(stream_name, {"subjects_filter": ">", "deleted_details": True})["state"]
    assert st["subjects"] == {f"{p}.a": 2, f"{p}.b": 1}
    assert (st["first_seq"], st["messages"]) == (2, 3)


def test_js_discard_new_per_subject(target: str, js: JsClient, stream_name: str) -> None:
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.*"], max_msgs_per_subject=1, discard="new",
              discard_new_per_subject=True)
    js.pub_ok(f"{p}.a")
    assert js.publish(f"{p}.a").data == ack_error(
        stream_name, 503, 10077, "maximum messages per subject exceeded")
    assert js.pub_ok(f"{p}.b") == 2


def test_js_no_ack_stream(target: str, js: JsClient, stream_name: str) -> None:
    """``no_ack`` streams store but never answer."""
    js.create(stream_name, no_ack=True)
    js.no_reply(stream_name, b"x")
    js.no_reply(stream_name, b"x", H(("Nats-Expected-Last-Sequence", "9")))
    st = js.state(stream_name)
    assert (st["messages"], st["last_seq"]) == (1, 1)


def test_js_interest_retention_without_consumers(target: str, js: JsClient,
                                                 stream_name: str) -> None:
    """Interest stream with no consumer: normal acks, sequences consumed, nothing stored."""
    js.create(stream_name, retention="interest")
    assert js.pub(stream_name, b"x") == {"stream": stream_name, "seq": 1}
    assert js.pub(stream_name, b"x") == {"stream": stream_name, "seq": 2}
    st = js.state(stream_name)
    assert (st["messages"], st["bytes"], st["first_seq"], st["last_seq"]) == (0, 0, 3, 2)


@pytest.mark.parametrize("storage", ["file", "memory"])
def test_js_byte_accounting(target: str, js: JsClient, stream_name: str, storage: str) -> None:
    """``state.bytes`` is the exact sum of per-record sizes, with and without headers."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"], storage=storage)
    size = file_bytes if storage == "file" else mem_bytes
    msgs = [
        (f"{p}.a", b"", b""),
        (f"{p}.bb.c", b"payload", b""),
        (f"{p}.h", b"1", H(("X-Long-Header", "v" * 13))),
        (f"{p}.h", b"", H(("A", "b"), ("C", "d"))),
    ]
    total = 0
    for subj, data, hdr in msgs:
        js.pub_ok(subj, data, hdr or None)
        total += size(subj, data, hdr)
        assert js.state(stream_name)["bytes"] == total
    js.msg_delete(stream_name, {"seq": 2})
    assert js.state(stream_name)["bytes"] == total - size(f"{p}.bb.c", b"payload")


def test_js_sequences_continue_after_delete_of_last(target: str, js: JsClient,
                                                    stream_name: str) -> None:
    """Sequences are never reused."""
    js.create(stream_name)
    js.pub_ok(stream_name)
    js.pub_ok(stream_name)
    js.msg_delete(stream_name, {"seq": 2})
    assert js.pub_ok(stream_name) == 3


def test_js_batch_headers_on_a_stream_without_atomic_publish(target: str, js: JsClient,
                                                             ps: tuple[str, str]) -> None:
    """A message carrying a non-empty ``Nats-Batch-Id`` on a stream without ``allow_atomic``
    is refused (400/10174 ``atomic publish is disabled``) and nothing is stored, whatever the
    other batch headers; an empty id is a plain message."""
    name, p = ps
    refused = ack_error(name, 400, 10174, "atomic publish is disabled")
    for hdrs in ([("Nats-Batch-Id", "b1"), ("Nats-Batch-Sequence", "1")],
                 [("Nats-Batch-Id", "b1"), ("Nats-Batch-Sequence", "2"),
                  ("Nats-Batch-Commit", "1")],
                 [("Nats-Batch-Id", "b2")]):
        assert js.publish(f"{p}.a", b"x", H(*hdrs)).data == refused
    assert js.info(name)["state"]["messages"] == 0
    assert js.pub(f"{p}.a", b"x", H(("Nats-Batch-Sequence", "1"))) == {"stream": name, "seq": 1}
    assert js.pub(f"{p}.a", b"x", H(("Nats-Batch-Id", ""), ("Nats-Batch-Sequence", "1"))) == {
        "stream": name, "seq": 2}
