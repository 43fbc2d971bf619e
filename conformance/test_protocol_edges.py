"""Edges of the client protocol where nats-server's exact parser shows (protocol.md §4, §10):
output queued before a close, publish subjects its sublist cannot match, bytes that are or are
not argument separators, header blocks of size zero, CONNECT decoded by Go's encoding/json, and
where the control-line limit applies.

Every case sends its bytes in a single write unless it says otherwise: nats-server reads at most
512 bytes at first, and a few answers depend on where its reads end.
"""
from __future__ import annotations

import pytest

from conformance.helpers import RawFactory, connect_line, ready
from conformance.rawclient import OK, PING, PONG, hmsg, msg, pub
from conformance.test_pubsub import subscribe

UNKNOWN_OP = b"-ERR 'Unknown Protocol Operation'\r\n"
MAX_CONTROL_LINE = b"-ERR 'maximum control line exceeded'\r\n"
MAX_PAYLOAD = b"-ERR 'Maximum Payload Violation'\r\n"
INVALID_PUB = b"-ERR 'Invalid Publish Subject'\r\n"
INVALID_SUB = b"-ERR 'Invalid Subject'\r\n"


def no_responders(reply: str, sid: int | str, subject: str) -> bytes:
    """The 503 status a requester gets when nobody received its request."""
    return hmsg(reply, sid, f"NATS/1.0 503\r\nNats-Subject: {subject}\r\n\r\n".encode(), b"")


# ---------------------------------------------------------------- 1. output before a close


@pytest.mark.parametrize(
    "bad, error",
    [(b"PUB foo\r\n", b""), (b"FOO\r\n", UNKNOWN_OP), (b"PUB foo 1048577\r\n", MAX_PAYLOAD),
     (b"SUB " + b"s" * 4100 + b" 9\r\n", MAX_CONTROL_LINE), (b"-ERR 'bye'\r\n", b""),
     (b"PUB foo 1\r\nxy", UNKNOWN_OP)],
    ids=["silent-close", "unknown-op", "max-payload", "max-control-line", "client-err",
         "bad-payload-end"],
)
def test_replies_queued_before_a_close_are_written(
    target: str, raw: RawFactory, subject: str, bad: bytes, error: bytes
) -> None:
    """CONNECT (verbose), SUB, PING and then an op that closes the connection, all in one
    write: every reply queued before the close arrives first (+OK for CONNECT and SUB, PONG),
    then the close's own -ERR, if it has one."""
    client = raw()
    client.send(connect_line(verbose=True, pedantic=False, headers=False)
                + f"SUB {subject} 1\r\n".encode() + PING + bad)
    client.assert_closed(expect_data=OK + OK + PONG + error)


def test_sub_then_bad_pub_in_one_write(target: str, raw: RawFactory) -> None:
    """The issue's case: with verbose on, ``SUB foo 1`` and a ``PUB foo`` without size in one
    write after CONNECT: ``+OK`` for CONNECT, ``+OK`` for SUB, then a silent close."""
    client = raw()
    client.send(b'CONNECT {"verbose":true}\r\nSUB foo 1\r\nPUB foo\r\n')
    client.assert_closed(expect_data=OK + OK)


def test_client_err_still_routes_rest_of_read(target: str, raw: RawFactory, subject: str) -> None:
    """A client's ``-ERR`` closes its connection without a reply, yet the publishes that
    follow it in the same read are still delivered to others (nats-server finishes parsing
    the read it is in); the closed client gets nothing more, not even +OK."""
    sub = ready(raw)
    subscribe(sub, subject, 1)
    client = ready(raw, verbose=True)
    client.send(b"-ERR 'x'\r\n" + pub(subject, b"after") + f"SUB {subject} 2\r\n".encode() + PING)
    client.assert_closed(expect_data=b"")
    assert sub.barrier() == msg(subject, 1, b"after")
