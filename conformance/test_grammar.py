"""Lexical leniency of the client protocol parser."""
from __future__ import annotations

from conformance.helpers import RawFactory, ready
from conformance.rawclient import OK, PONG, msg


def test_case_insensitive_ops(target: str, raw: RawFactory, subject: str) -> None:
    """Op names are case-insensitive (CONNECT, SUB, PUB, HPUB, UNSUB, PING)."""
    client = raw()
    s = subject.encode()
    client.send(
        b'connect {"verbose":false,"pedantic":false,"headers":true}\r\n'
        b"sub " + s + b" 1\r\n"
        b"pub " + s + b" 1\r\na\r\n"
        b"Pub " + s + b" 1\r\nb\r\n"
        b"hPuB " + s + b" 12 13\r\nNATS/1.0\r\n\r\nc\r\n"
        b"UnSuB 1\r\n"
        b"pub " + s + b" 1\r\nd\r\n"
        b"pInG\r\n"
    )
    client.expect(
        b"MSG " + s + b" 1 1\r\na\r\n"
        + b"MSG " + s + b" 1 1\r\nb\r\n"
        + b"HMSG " + s + b" 1 12 13\r\nNATS/1.0\r\n\r\nc\r\n"
        + PONG
    )
    assert client.barrier() == b""


def test_tabs_and_repeated_spaces_separate_args(target: str, raw: RawFactory, subject: str) -> None:
    """Arguments may be separated by runs of spaces and/or tabs."""
    client = ready(raw)
    s = subject.encode()
    client.send(
        b"SUB\t" + s + b" \t 1\r\n"
        b"PUB  " + s + b"\t\treply.x   3\r\nabc\r\n"
        b"PUB\t" + s + b"\t0\r\n\r\n"
    )
    assert client.barrier() == (
        msg(subject, 1, b"abc", reply="reply.x") + msg(subject, 1, b"")
    )


def test_bare_lf_control_lines(target: str, raw: RawFactory, subject: str) -> None:
    """Control lines may end in a bare LF (the payload still needs CRLF)."""
    client = raw()
    s = subject.encode()
    client.send(
        b'CONNECT {"verbose":true,"pedantic":false}\n'
        b"SUB " + s + b" 1\n"
        b"PUB " + s + b" 2\nhi\r\n"
        b"PING\n"
    )
    client.expect(OK + OK + OK + msg(subject, 1, b"hi") + PONG)


def test_input_split_byte_by_byte(target: str, raw: RawFactory, subject: str) -> None:
    """Ops arriving one byte per TCP segment are parsed exactly as a single write."""
    client = raw()
    s = subject.encode()
    header = b"NATS/1.0\r\nK: v\r\n\r\n"
    data = (
        b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"protocol":0}\r\n'
        b"SUB " + s + b" 1\r\n"
        b"PUB " + s + b" r.1 5\r\nhe\r\no\r\n"
        b"HPUB " + s + b" " + str(len(header)).encode() + b" " + str(len(header) + 2).encode()
        + b"\r\n" + header + b"ok\r\n"
        b"PING\r\n"
    )
    client.send_bytewise(data)
    client.expect(
        msg(subject, 1, b"he\r\no", reply="r.1")
        + f"HMSG {subject} 1 {len(header)} {len(header) + 2}\r\n".encode() + header + b"ok\r\n"
        + PONG
    )


def test_pipelined_ops_in_one_write(target: str, raw: RawFactory, subject: str) -> None:
    """Many ops in one segment, including PINGs in between, are answered in order."""
    client = ready(raw)
    s = subject.encode()
    client.send(
        b"SUB " + s + b" 1\r\nPING\r\nPUB " + s + b" 1\r\n1\r\nPING\r\nPUB " + s + b" 1\r\n2\r\n"
    )
    client.expect(PONG + msg(subject, 1, b"1") + PONG + msg(subject, 1, b"2"))
    assert client.barrier() == b""


def test_ping_pong(target: str, raw: RawFactory) -> None:
    """Client PING is answered with exactly ``PONG\\r\\n``; client PONG gets no answer."""
    client = ready(raw)
    client.send(b"PING\r\nPONG\r\nPING\r\n")
    client.expect(PONG + PONG)
    assert client.barrier() == b""
