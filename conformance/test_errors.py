"""Protocol errors and the connections they close."""
from __future__ import annotations

import pytest

from conformance.helpers import RawFactory, SpawnFn, ready, subscribe
from conformance.rawclient import OK, RawClient, msg, pub

UNKNOWN_OP = b"-ERR 'Unknown Protocol Operation'\r\n"
MAX_PAYLOAD = b"-ERR 'Maximum Payload Violation'\r\n"
MAX_CONTROL_LINE = b"-ERR 'maximum control line exceeded'\r\n"


@pytest.mark.parametrize(
    "data",
    [b"FOO bar\r\n", b"XPUB foo 1\r\n", b"\r\n", b"  PING\r\n", b"PUB\r\n", b"SUB\r\n",
     b"UNSUB\r\n"],
    ids=["garbage-op", "unknown-op", "empty-line", "leading-space", "pub-no-args",
         "sub-no-args", "unsub-no-args"],
)
def test_unknown_protocol_operation(target: str, raw: RawFactory, data: bytes) -> None:
    """An unparsable op is answered with ``-ERR 'Unknown Protocol Operation'`` and closed.
    (An op word directly followed by CRLF, with no arguments, also falls in this class.)"""
    client = ready(raw)
    client.send(data)
    client.assert_closed(expect_data=UNKNOWN_OP)


@pytest.mark.parametrize(
    "tail",
    [b"abcX\r\n", b"abcd\r\n", b"abc\n", b"abc\rX"],
    ids=["junk-byte", "payload-too-long", "bare-lf", "cr-junk"],
)
def test_bad_bytes_after_payload(target: str, raw: RawFactory, subject: str, tail: bytes) -> None:
    """A payload must be followed by exactly CRLF; anything else is an unknown op + close,
    and the message is not delivered."""
    client = ready(raw)
    subscribe(client, subject, 1)
    client.send(f"PUB {subject} 3\r\n".encode() + tail)
    client.assert_closed(expect_data=UNKNOWN_OP)


def test_max_payload_violation_from_control_line(target: str, raw: RawFactory) -> None:
    """PUB size > max_payload is rejected from the control line alone, before any payload."""
    client = ready(raw)
    client.send(b"PUB foo 1048577\r\n")
    client.assert_closed(expect_data=MAX_PAYLOAD)


def test_max_payload_violation_hpub_total(target: str, raw: RawFactory) -> None:
    """For HPUB the limit applies to the total (headers + payload)."""
    client = ready(raw, headers=True)
    client.send(b"HPUB foo 12 1048577\r\n")
    client.assert_closed(expect_data=MAX_PAYLOAD)


def test_max_payload_configured(target: str, spawn: SpawnFn, subject: str) -> None:
    """With ``max_payload: 1024``: INFO says so, 1024 bytes (PUB and HPUB total) are
    delivered, 1025 gets the violation and a close."""
    ep = spawn(config="max_payload: 1024\n")
    client = RawClient.connect(ep.host, ep.port)
    try:
        assert client.info["max_payload"] == 1024
        client.handshake()
        subscribe(client, subject, 1)
        client.send(pub(subject, b"p" * 1024))
        assert client.barrier() == msg(subject, 1, b"p" * 1024)
        header = b"NATS/1.0\r\n\r\n"
        body = b"h" * (1024 - len(header))
        client.send(f"HPUB {subject} {len(header)} 1024\r\n".encode() + header + body + b"\r\n")
        expected = f"HMSG {subject} 1 12 1024\r\n".encode() + header + body + b"\r\n"
        assert client.barrier() == expected
        client.send(f"PUB {subject} 1025\r\n".encode())
        client.assert_closed(expect_data=MAX_PAYLOAD)
    finally:
        client.close()


def test_max_control_line_boundary(target: str, raw: RawFactory) -> None:
    """The 4096-byte limit counts the argument part: 4096 is fine, 4097 is not."""
    ok = ready(raw, verbose=True)
    args = b"a" * 4094 + b" 1"  # subject + " " + sid = 4096 bytes
    assert len(args) == 4096
    ok.send(b"SUB " + args + b"\r\n")
    ok.expect(OK)
    bad = ready(raw, verbose=True)
    bad.send(b"SUB " + b"a" * 4095 + b" 1\r\n")
    bad.assert_closed(expect_data=MAX_CONTROL_LINE)


def test_max_control_line_partial_line(target: str, raw: RawFactory) -> None:
    """A control line already over the limit errors before its newline arrives."""
    client = ready(raw)
    client.send(b"PUB " + b"a" * 5000)
    client.assert_closed(expect_data=MAX_CONTROL_LINE)


def test_max_control_line_configured(target: str, spawn: SpawnFn) -> None:
    """``max_control_line: 256`` lowers the limit."""
    ep = spawn(config="max_control_line: 256\n")
    with RawClient.connect(ep.host, ep.port) as ok:
        ok.handshake(verbose=True)
        ok.send(b"SUB " + b"s" * 254 + b" 1\r\n")
        ok.expect(OK)
    with RawClient.connect(ep.host, ep.port) as bad:
        bad.handshake()
        bad.send(b"SUB " + b"s" * 300 + b" 1\r\n")
        bad.assert_closed(expect_data=MAX_CONTROL_LINE)


@pytest.mark.parametrize(
    "data",
    [b"PUB foo\r\n", b"PUB foo x\r\n", b"PUB foo -1\r\n", b"PUB a b c d\r\n", b"SUB foo\r\n",
     b"SUB a b c d\r\n", b"UNSUB 1 2 3\r\n", b"HPUB foo 10 5\r\n", b"HPUB foo 5\r\n",
     b"HPUB foo x 5\r\n"],
    ids=["pub-no-size", "pub-bad-size", "pub-negative", "pub-too-many", "sub-no-sid",
         "sub-too-many", "unsub-too-many", "hpub-hdr-gt-total", "hpub-one-size",
         "hpub-bad-hdr"],
)
def test_malformed_arguments_close_silently(target: str, raw: RawFactory, data: bytes) -> None:
    """Wrong argument counts or sizes close the connection without any ``-ERR``."""
    client = ready(raw, headers=True)
    client.send(data)
    client.assert_closed(expect_data=b"")


def test_unsub_lenient_max(target: str, raw: RawFactory, subject: str) -> None:
    """A non-numeric UNSUB max is not an error: the sid is simply unsubscribed."""
    client = ready(raw, verbose=True)
    client.send(f"SUB {subject} 1\r\n".encode())
    client.expect(OK)
    client.send(b"UNSUB 1 x\r\n")
    client.expect(OK)
    client.send(pub(subject, b"x"))
    assert client.barrier() == OK
