"""CONNECT handling, the post-CONNECT INFO and pre-CONNECT defaults."""
from __future__ import annotations

import pytest

from conformance.helpers import RawFactory, connect_line
from conformance.rawclient import OK, PING, PONG, parse_info


def test_connect_verbose_ok(target: str, raw: RawFactory) -> None:
    """A verbose CONNECT is acknowledged with exactly ``+OK\\r\\n``."""
    client = raw()
    client.send(connect_line(verbose=True, pedantic=False, protocol=1) + PING)
    client.expect(OK + PONG)


def test_connect_unknown_fields_ignored(target: str, raw: RawFactory) -> None:
    """Unknown CONNECT fields are ignored; informational fields are accepted."""
    client = raw()
    client.send(
        connect_line(verbose=True, name="conf", lang="python3", version="9.9.9",
                     some_future_field={"x": [1, 2]}, tls_required=False)
    )
    client.expect(OK)
    client.send(PING)
    client.expect(PONG)


def test_first_ping_gets_pong_then_connect_info(target: str, raw: RawFactory) -> None:
    """protocol 1: the first PING after CONNECT gets ``PONG`` followed by an INFO with
    ``connect_info: true`` and ``remote_account: "$G"``; later PINGs get only ``PONG``."""
    client = raw()
    client.send(connect_line(verbose=False, pedantic=False, protocol=1, headers=True) + PING)
    client.expect(PONG)
    line = client.read_line()
    assert line.startswith(b"INFO {") and line.endswith(b"} \r\n"), line
    info = parse_info(line)
    assert info["connect_info"] is True
    assert info["remote_account"] == "$G"
    assert info["server_id"] == client.info["server_id"]
    assert info["client_id"] == client.info["client_id"]
    assert info["headers"] is True
    assert "acc_is_sys" not in info
    # Second and third PING: just PONG, no further INFO.
    client.send(PING + PING)
    client.expect(PONG + PONG)
    assert client.barrier() == b""


def test_protocol_zero_gets_no_connect_info(target: str, raw: RawFactory) -> None:
    """protocol 0 clients never get the post-CONNECT INFO."""
    client = raw()
    client.send(connect_line(verbose=False, pedantic=False, protocol=0) + PING + PING)
    client.expect(PONG + PONG)
    assert client.barrier() == b""


def test_ops_before_connect_use_defaults(target: str, raw: RawFactory) -> None:
    """Without auth, ops before CONNECT run with verbose/pedantic/echo on; no INFO follows
    the PONG because no CONNECT was seen."""
    client = raw()
    client.send(b"PUB foo 1\r\nx\r\nPING\r\n")
    client.expect(OK + PONG)
    assert client.barrier() == b""


def test_ops_before_connect_pedantic_and_echo(target: str, raw: RawFactory, subject: str) -> None:
    """Before CONNECT, pedantic and echo are on too: a wildcard publish is flagged, still
    acknowledged and routed back to the publisher's own subscription."""
    client = raw()
    s = subject.encode()
    client.send(b"SUB " + s + b".* 1\r\nPUB " + s + b".* 1\r\nx\r\nPING\r\n")
    client.expect(
        OK + b"-ERR 'Invalid Publish Subject'\r\n" + OK + b"MSG " + s + b".* 1 1\r\nx\r\n" + PONG
    )


def test_sub_before_connect_survives_connect(target: str, raw: RawFactory, subject: str) -> None:
    """A subscription made before CONNECT (no auth) is kept after CONNECT."""
    client = raw()
    s = subject.encode()
    client.send(b"SUB " + s + b" 1\r\n" + connect_line(verbose=False, protocol=0)
                + b"PUB " + s + b" 1\r\nx\r\nPING\r\n")
    client.expect(OK + b"MSG " + s + b" 1 1\r\nx\r\n" + PONG)


def test_second_connect_updates_options(target: str, raw: RawFactory, subject: str) -> None:
    """A second CONNECT replaces the options of the first (here: verbose off)."""
    client = raw()
    client.send(connect_line(verbose=True, protocol=0) + connect_line(verbose=False, protocol=0)
                + f"SUB {subject} 1\r\n".encode() + PING)
    client.expect(OK + PONG)
    assert client.barrier() == b""


def test_connect_empty_object_keeps_defaults(target: str, raw: RawFactory, subject: str) -> None:
    """``CONNECT {}`` leaves verbose, pedantic and echo true."""
    client = raw()
    s = subject.encode()
    client.send(b"CONNECT {}\r\nSUB " + s + b" 1\r\nPUB " + s + b" 2\r\nhi\r\nPING\r\n")
    # verbose: +OK for CONNECT, SUB, PUB; echo: our own message comes back.
    client.expect(OK + OK + OK + b"MSG " + s + b" 1 2\r\nhi\r\n" + PONG)
    # pedantic: a wildcard publish subject is flagged, then acknowledged and routed.
    client.send(b"PUB " + s + b".* 1\r\nx\r\n")
    assert client.barrier() == b"-ERR 'Invalid Publish Subject'\r\n" + OK


@pytest.mark.parametrize("protocol", [2, -1], ids=["protocol-2", "protocol-minus-1"])
def test_connect_invalid_protocol(target: str, raw: RawFactory, protocol: int) -> None:
    """CONNECT with a protocol other than 0/1 is refused with an error and closed."""
    client = raw()
    client.send(connect_line(verbose=False, protocol=protocol))
    client.assert_closed(expect_data=b"-ERR 'invalid client protocol'\r\n")


def test_connect_no_responders_requires_headers(target: str, raw: RawFactory) -> None:
    """``no_responders: true`` without ``headers: true`` is refused and closed."""
    client = raw()
    client.send(connect_line(verbose=False, protocol=1, no_responders=True, headers=False))
    client.assert_closed(expect_data=b"-ERR 'no responders requires headers support'\r\n")


@pytest.mark.parametrize(
    "line",
    [b"CONNECT {bad json\r\n", b'CONNECT {"verbose":true\r\n', b"CONNECT [1,2]\r\n"],
    ids=["garbage", "unterminated", "array"],
)
def test_connect_malformed_json_closes_silently(
    target: str, raw: RawFactory, line: bytes
) -> None:
    """Unparsable CONNECT JSON closes the connection without any ``-ERR``."""
    client = raw()
    client.send(line + PING)
    client.assert_closed(expect_data=b"")


def test_client_info_and_ok_tolerated(target: str, raw: RawFactory) -> None:
    """A client may send INFO and +OK; the server ignores both."""
    client = raw()
    client.handshake()
    client.send(b'INFO {"server_id":"fake","proto":1}\r\n+OK\r\n')
    assert client.barrier() == b""


def test_client_err_disconnects(target: str, raw: RawFactory) -> None:
    """A client sending ``-ERR`` is disconnected without a reply."""
    client = raw()
    client.handshake()
    client.send(b"-ERR 'client says no'\r\n")
    client.assert_closed(expect_data=b"")


def test_verbose_acks(target: str, raw: RawFactory, subject: str) -> None:
    """Verbose mode: ``+OK`` for SUB, PUB, HPUB, UNSUB (also unknown sid); none for PING/PONG."""
    client = raw()
    client.handshake(verbose=True)
    s = subject.encode()
    client.send(b"SUB " + s + b" 1\r\n")
    client.expect(OK)
    client.send(b"PUB " + s + b".other 0\r\n\r\n")
    client.expect(OK)
    client.send(b"HPUB " + s + b".other 12 12\r\nNATS/1.0\r\n\r\n\r\n")
    client.expect(OK)
    client.send(b"UNSUB 1\r\n")
    client.expect(OK)
    client.send(b"UNSUB 999\r\n")  # unknown sid
    client.expect(OK)
    client.send(PONG)  # unsolicited PONG: no reply at all
    assert client.barrier() == b""
