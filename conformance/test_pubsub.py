"""PUB/SUB/UNSUB, MSG framing, fan-out, echo and ordering."""
from __future__ import annotations

from conformance.helpers import RawFactory, ready, subscribe
from conformance.rawclient import OK, msg, pub, split_frames


def test_pub_sub_exact_bytes(target: str, raw: RawFactory, subject: str) -> None:
    """A publish without reply arrives as ``MSG <subject> <sid> <#bytes>``."""
    sub, pubc = ready(raw), ready(raw)
    subscribe(sub, subject, 7)
    pubc.send(pub(subject, b"hello"))
    assert pubc.barrier() == b""
    assert sub.barrier() == f"MSG {subject} 7 5\r\nhello\r\n".encode()


def test_pub_sub_with_reply_exact_bytes(target: str, raw: RawFactory, subject: str) -> None:
    """A publish with reply arrives as ``MSG <subject> <sid> <reply> <#bytes>``."""
    sub, pubc = ready(raw), ready(raw)
    subscribe(sub, subject, "abc")
    pubc.send(f"PUB {subject} {subject}.reply.1 5\r\nhello\r\n".encode())
    assert pubc.barrier() == b""
    assert sub.barrier() == f"MSG {subject} abc {subject}.reply.1 5\r\nhello\r\n".encode()


def test_empty_payload(target: str, raw: RawFactory, subject: str) -> None:
    """A zero-length payload is still framed with its CRLF."""
    client = ready(raw)
    subscribe(client, subject, 1)
    client.send(f"PUB {subject} 0\r\n\r\n".encode())
    assert client.barrier() == f"MSG {subject} 1 0\r\n\r\n".encode()


def test_binary_payload_verbatim(target: str, raw: RawFactory, subject: str) -> None:
    """The payload is opaque: CRLFs, NULs, protocol keywords and high bytes pass unchanged."""
    payload = b"PING\r\nMSG x 1 1\r\n\x00\xff\xfe\r\n-ERR 'x'\r\n" + bytes(range(256))
    sub, pubc = ready(raw), ready(raw)
    subscribe(sub, subject, 1)
    pubc.send(pub(subject, payload))
    assert pubc.barrier() == b""
    assert sub.barrier() == msg(subject, 1, payload)


def test_multiple_subs_same_connection(target: str, raw: RawFactory, subject: str) -> None:
    """Every matching subscription of a connection gets its own copy (one MSG per sid)."""
    sub, pubc = ready(raw), ready(raw)
    sub.send(f"SUB {subject}.a 1\r\nSUB {subject}.* 2\r\nSUB {subject}.> 3\r\n"
             f"SUB {subject}.a 4\r\n".encode())
    assert sub.barrier() == b""
    pubc.send(pub(f"{subject}.a", b"x"))
    assert pubc.barrier() == b""
    got = sub.barrier()
    # One MSG per sid; the order between the subscriptions is unspecified.
    expected = [msg(f"{subject}.a", sid, b"x") for sid in (1, 2, 3, 4)]
    assert sorted(split_frames(got)) == sorted(expected)


def test_unsub_stops_delivery(target: str, raw: RawFactory, subject: str) -> None:
    """After UNSUB nothing more is delivered on that sid."""
    client = ready(raw)
    subscribe(client, subject, 5)
    client.send(pub(subject, b"1"))
    assert client.barrier() == msg(subject, 5, b"1")
    client.send(b"UNSUB 5\r\n" + pub(subject, b"2"))
    assert client.barrier() == b""


def test_unsub_max_auto_unsubscribes(target: str, raw: RawFactory, subject: str) -> None:
    """``UNSUB sid 2`` then 4 publishes: exactly 2 MSGs."""
    sub, pubc = ready(raw), ready(raw)
    sub.send(f"SUB {subject} 11\r\nUNSUB 11 2\r\n".encode())
    assert sub.barrier() == b""
    pubc.send(b"".join(pub(subject, str(i).encode()) for i in range(4)))
    assert pubc.barrier() == b""
    assert sub.barrier() == msg(subject, 11, b"0") + msg(subject, 11, b"1")
    # The sub is gone: more publishes deliver nothing.
    pubc.send(pub(subject, b"later"))
    assert pubc.barrier() == b""
    assert sub.barrier() == b""


def test_unsub_max_already_reached_removes_now(
    target: str, raw: RawFactory, subject: str
) -> None:
    """``UNSUB sid max`` with max <= messages already delivered removes the sub at once."""
    client = ready(raw)
    subscribe(client, subject, 3)
    client.send(pub(subject, b"a") + pub(subject, b"b") + pub(subject, b"c"))
    assert client.barrier() == msg(subject, 3, b"a") + msg(subject, 3, b"b") + msg(subject, 3, b"c")
    client.send(b"UNSUB 3 2\r\n" + pub(subject, b"d"))
    assert client.barrier() == b""


def test_unsub_max_larger_than_delivered(target: str, raw: RawFactory, subject: str) -> None:
    """``UNSUB sid max`` counts messages already delivered towards ``max``."""
    client = ready(raw)
    subscribe(client, subject, 3)
    client.send(pub(subject, b"a"))
    assert client.barrier() == msg(subject, 3, b"a")
    client.send(b"UNSUB 3 3\r\n" + b"".join(pub(subject, bytes([c])) for c in b"bcde"))
    assert client.barrier() == msg(subject, 3, b"b") + msg(subject, 3, b"c")


def test_unsub_unknown_sid_verbose_ok(target: str, raw: RawFactory) -> None:
    """UNSUB of an unknown sid is ignored (just ``+OK`` in verbose mode)."""
    client = ready(raw, verbose=True)
    client.send(b"UNSUB nosuchsid\r\nUNSUB nosuchsid 5\r\n")
    client.expect(OK + OK)
    assert client.barrier() == b""


def test_duplicate_sid_keeps_original(target: str, raw: RawFactory, subject: str) -> None:
    """A SUB re-using an existing sid is a no-op: the original subscription stays."""
    client = ready(raw, verbose=True)
    client.send(f"SUB {subject}.first 1\r\nSUB {subject}.second 1\r\n".encode())
    client.expect(OK + OK)
    client.send(pub(f"{subject}.first", b"1") + pub(f"{subject}.second", b"2"))
    assert client.barrier() == OK + msg(f"{subject}.first", 1, b"1") + OK


def test_echo_false(target: str, raw: RawFactory, subject: str) -> None:
    """``echo: false``: a connection never receives its own publishes; others still do."""
    quiet = ready(raw, echo=False)
    other = ready(raw)
    subscribe(quiet, subject, 1)
    subscribe(other, subject, 2)
    quiet.send(pub(subject, b"me"))
    assert quiet.barrier() == b""
    assert other.barrier() == msg(subject, 2, b"me")
    # Messages from other connections are delivered normally.
    other.send(pub(subject, b"you"))
    assert other.barrier() == msg(subject, 2, b"you")
    assert quiet.barrier() == msg(subject, 1, b"you")


def test_echo_default_true(target: str, raw: RawFactory, subject: str) -> None:
    """By default a connection receives its own publishes."""
    client = ready(raw)
    subscribe(client, subject, 1)
    client.send(pub(subject, b"self"))
    assert client.barrier() == msg(subject, 1, b"self")


def test_ordering_1000_messages(target: str, raw: RawFactory, subject: str) -> None:
    """1000 messages from one publisher arrive at a subscriber in publish order."""
    sub, pubc = ready(raw), ready(raw)
    subscribe(sub, subject, 1)
    payloads = [f"m{i}".encode() for i in range(1000)]
    pubc.send(b"".join(pub(subject, p) for p in payloads))
    assert pubc.barrier() == b""
    assert sub.barrier(timeout=10) == b"".join(msg(subject, 1, p) for p in payloads)


def test_max_payload_exactly_at_limit(target: str, raw: RawFactory, subject: str) -> None:
    """A payload of exactly ``max_payload`` (1 MiB by default) is accepted and delivered."""
    client = ready(raw)
    limit = client.info["max_payload"]
    assert limit == 1048576
    subscribe(client, subject, 1)
    payload = bytes(i % 251 for i in range(limit))
    client.send(pub(subject, payload))
    assert client.barrier(timeout=10) == msg(subject, 1, payload)


def test_subjects_are_case_sensitive(target: str, raw: RawFactory, subject: str) -> None:
    """Subject matching is byte-exact: ``Foo`` does not match ``foo``."""
    client = ready(raw)
    subscribe(client, f"{subject}.Foo", 1)
    client.send(pub(f"{subject}.foo", b"x") + pub(f"{subject}.Foo", b"y"))
    assert client.barrier() == msg(f"{subject}.Foo", 1, b"y")


def test_utf8_subject(target: str, raw: RawFactory, subject: str) -> None:
    """Non-ASCII bytes are ordinary subject characters."""
    client = ready(raw)
    subj = f"{subject}.grüße.$x-y_z/ä"
    client.send(f"SUB {subj} 1\r\n".encode())
    assert client.barrier() == b""
    client.send(b"PUB " + subj.encode() + b" 2\r\nok\r\n")
    assert client.barrier() == b"MSG " + subj.encode() + b" 1 2\r\nok\r\n"
