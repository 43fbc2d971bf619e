"""HPUB/HMSG framing and the opaque header block."""
from __future__ import annotations

from conformance.helpers import RawFactory, ready, subscribe
from conformance.rawclient import OK, hmsg, hpub, msg


def test_hpub_hmsg_exact_bytes(target: str, raw: RawFactory, subject: str) -> None:
    """HPUB arrives as ``HMSG <subject> <sid> <#hdr> <#total>`` with the block unchanged."""
    sub, pubc = ready(raw), ready(raw)
    subscribe(sub, subject, 1)
    header = b"NATS/1.0\r\nA: b\r\n\r\n"
    pubc.send(f"HPUB {subject} 18 20\r\n".encode() + header + b"hi\r\n")
    assert pubc.barrier() == b""
    assert sub.barrier() == f"HMSG {subject} 1 18 20\r\n".encode() + header + b"hi\r\n"


def test_hpub_hmsg_with_reply(target: str, raw: RawFactory, subject: str) -> None:
    """The reply subject sits between sid and sizes in HMSG."""
    client = ready(raw)
    subscribe(client, subject, 9)
    header = b"NATS/1.0\r\nX-Trace: 1\r\n\r\n"
    client.send(hpub(subject, header, b"payload", reply=f"{subject}.r"))
    assert client.barrier() == hmsg(subject, 9, header, b"payload", reply=f"{subject}.r")


def test_hpub_empty_header_block(target: str, raw: RawFactory, subject: str) -> None:
    """``NATS/1.0\\r\\n\\r\\n`` with an empty payload: ``HMSG s 1 12 12``."""
    client = ready(raw)
    subscribe(client, subject, 1)
    client.send(f"HPUB {subject} 12 12\r\nNATS/1.0\r\n\r\n\r\n".encode())
    assert client.barrier() == f"HMSG {subject} 1 12 12\r\nNATS/1.0\r\n\r\n\r\n".encode()


def test_header_block_carried_verbatim(target: str, raw: RawFactory, subject: str) -> None:
    """The core server does not normalise headers: status line, odd spacing, case and
    repeated names are delivered byte for byte."""
    header = (
        b"NATS/1.0 503 Weird  Description\r\n"
        b"A: b\r\n"
        b"A : x\r\n"
        b"lower-case:no-space\r\n"
        b"Spaces:    lots   \r\n"
        b"Nats-Msg-Id: 1\r\n"
        b"A: second\r\n"
        b"\r\n"
    )
    sub, pubc = ready(raw), ready(raw)
    subscribe(sub, subject, 1)
    pubc.send(hpub(subject, header, b"body\r\nwith crlf"))
    assert pubc.barrier() == b""
    assert sub.barrier() == hmsg(subject, 1, header, b"body\r\nwith crlf")


def test_hpub_verbose_ok(target: str, raw: RawFactory, subject: str) -> None:
    """A verbose HPUB is acknowledged like PUB (``+OK`` before the delivery)."""
    client = ready(raw, verbose=True)
    client.send(f"SUB {subject} 1\r\n".encode())
    client.expect(OK)
    header = b"NATS/1.0\r\n\r\n"
    client.send(hpub(subject, header, b"v"))
    assert client.barrier() == OK + hmsg(subject, 1, header, b"v")


def test_hpub_without_headers_closes_silently(target: str, raw: RawFactory, subject: str) -> None:
    """HPUB from a client that did not declare ``headers: true`` closes the connection
    without an error."""
    client = ready(raw, headers=False, no_responders=False)
    client.send(f"HPUB {subject} 12 12\r\nNATS/1.0\r\n\r\n\r\n".encode())
    client.assert_closed(expect_data=b"")


def test_hpub_before_connect_closes_silently(target: str, raw: RawFactory, subject: str) -> None:
    """Before CONNECT headers are off, so HPUB closes the connection silently."""
    client = raw()
    client.send(f"HPUB {subject} 12 12\r\nNATS/1.0\r\n\r\n\r\n".encode())
    client.assert_closed(expect_data=b"")


def test_headers_stripped_for_subscriber_without_headers(
    target: str, raw: RawFactory, subject: str
) -> None:
    """A subscriber that did not declare header support gets a plain MSG with the payload
    only (the header block is dropped)."""
    plain = ready(raw, headers=False, no_responders=False)
    pubc = ready(raw)
    subscribe(plain, subject, 1)
    pubc.send(hpub(subject, b"NATS/1.0\r\nA: b\r\n\r\n", b"hi", reply=f"{subject}.r"))
    assert pubc.barrier() == b""
    assert plain.barrier() == msg(subject, 1, b"hi", reply=f"{subject}.r")


def test_pub_to_header_subscriber_is_plain_msg(target: str, raw: RawFactory, subject: str) -> None:
    """A plain PUB is delivered as MSG even to a subscriber that supports headers."""
    client = ready(raw, headers=True)
    subscribe(client, subject, 1)
    client.send(f"PUB {subject} 2\r\nhi\r\n".encode())
    assert client.barrier() == msg(subject, 1, b"hi")
