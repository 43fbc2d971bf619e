"""The sans-IO parser: exact operations, any chunking, and never an exception on bad input."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from minijs.protocol.parser import (
    ERR_AUTH_VIOLATION, ERR_MAX_CONTROL_LINE, ERR_MAX_PAYLOAD, ERR_UNKNOWN_OP, OP_CLOSE,
    OP_CONNECT, OP_ERR, OP_HPUB, OP_INFO, OP_OK, OP_PING, OP_PONG, OP_PUB, OP_PUB_RUN, OP_SUB,
    OP_UNSUB, Parser,
)


def parser(headers: bool = True, **kw) -> Parser:
    """A parser as after a CONNECT that declared headers (unless ``headers=False``)."""
    p = Parser(**kw)
    p.headers = headers
    return p


def one_by_one(ops: list[tuple]) -> list[tuple]:
    """``ops`` with each ``OP_PUB_RUN`` written out as the PUBs it stands for."""
    out: list[tuple] = []
    for op in ops:
        if op[0] == OP_PUB_RUN:
            out += [(OP_PUB, op[1], op[2], payload) for payload in op[3]]
        else:
            out.append(op)
    return out


def parse(data: bytes, **kw) -> list[tuple]:
    return parser(**kw).feed(data)


def parse_chunked(data: bytes, sizes: list[int], **kw) -> list[tuple]:
    p = parser(**kw)
    ops: list[tuple] = []
    i = 0
    for n in sizes:
        ops += p.feed(data[i:i + n])
        i += n
    ops += p.feed(data[i:])
    return ops


def test_pub_with_and_without_reply():
    assert parse(b"PUB foo 5\r\nhello\r\n") == [(OP_PUB, b"foo", None, b"hello")]
    assert parse(b"PUB foo bar 0\r\n\r\n") == [(OP_PUB, b"foo", b"bar", b"")]


def test_hpub_splits_header_and_payload():
    hdr = b"NATS/1.0\r\nA: b\r\n\r\n"
    data = b"HPUB s r %d %d\r\n%bhi\r\n" % (len(hdr), len(hdr) + 2, hdr)
    assert parse(data) == [(OP_HPUB, b"s", b"r", hdr, b"hi")]


def test_sub_unsub_ping_pong_connect_info_ok_err():
    data = (b"SUB a 1\r\nSUB a q 2\r\nUNSUB 1\r\nUNSUB 2 5\r\nPING\r\nPONG\r\n"
            b'CONNECT {"verbose":false}\r\nINFO {}\r\n+OK\r\n-ERR \'x\'\r\n')
    assert parse(data) == [
        (OP_SUB, b"a", None, b"1"), (OP_SUB, b"a", b"q", b"2"), (OP_UNSUB, b"1", None),
        (OP_UNSUB, b"2", 5), (OP_PING,), (OP_PONG,),
        (OP_CONNECT, {"verbose": False, "pedantic": True, "echo": True}, b'{"verbose":false}'),
        (OP_INFO, b"{}"), (OP_OK,), (OP_ERR, "'x'"),
    ]


def test_case_insensitive_tabs_and_bare_lf():
    assert parse(b"pub\tfoo \t 2\nhi\r\nsub  x\t9\nping\n") == [
        (OP_PUB, b"foo", None, b"hi"), (OP_SUB, b"x", None, b"9"), (OP_PING,)]


def test_ping_tolerates_trailing_bytes():
    assert parse(b"PINGxyz\r\n") == [(OP_PING,)]


def test_unknown_ops():
    for line in (b"FOO\r\n", b"\r\n", b"PUBX a 1\r\n", b"PUB\r\n", b"MSG a 1 1\r\n",
                 b"SUBSCRIBE a 1\r\n"):
        assert parse(line) == [(OP_CLOSE, ERR_UNKNOWN_OP)], line


def test_unknown_op_detected_before_newline():
    assert parse(b"XYZ") == [(OP_CLOSE, ERR_UNKNOWN_OP)]
    assert parse(b"PU") == []


def test_bad_payload_terminator():
    assert parse(b"PUB a 2\r\nhiXX") == [(OP_CLOSE, ERR_UNKNOWN_OP)]
    assert parse(b"PUB a 2\r\nhi\rX") == [(OP_CLOSE, ERR_UNKNOWN_OP)]
    assert parse(b"PUB a 2\r\nhi") == []


def test_malformed_arguments_close_silently():
    for line in (b"PUB foo\r\n", b"PUB a b c 1\r\n", b"PUB a x\r\n", b"SUB foo\r\n",
                 b"SUB a b c d\r\n", b"UNSUB\t\r\n", b"UNSUB 1 2 3\r\n", b"HPUB a 10 5\r\n",
                 b"HPUB a 1\r\n"):
        assert parse(line) == [(OP_CLOSE, None)], line


def test_unsub_max_that_is_not_a_number_means_no_max():
    assert parse(b"UNSUB 1 x\r\n") == [(OP_UNSUB, b"1", None)]
    assert parse(b"UNSUB 1 0\r\n") == [(OP_UNSUB, b"1", None)]


def test_max_payload_from_control_line():
    assert parse(b"PUB a 11\r\n", max_payload=10) == [(OP_CLOSE, ERR_MAX_PAYLOAD)]
    assert parse(b"HPUB a 2 11\r\n", max_payload=10) == [(OP_CLOSE, ERR_MAX_PAYLOAD)]
    assert parse(b"PUB a 10\r\n0123456789\r\n", max_payload=10)[0][0] == OP_PUB


def test_max_control_line_complete_and_partial():
    long = b"a" * 5000
    assert parse(b"SUB " + long + b" 1\r\n") == [(OP_CLOSE, ERR_MAX_CONTROL_LINE)]
    assert parse(b"PUB " + long) == [(OP_CLOSE, ERR_MAX_CONTROL_LINE)]


def test_require_connect_gates_first_op():
    assert parse(b"PING\r\n", require_connect=True) == [(OP_CLOSE, ERR_AUTH_VIOLATION)]
    ops = parse(b"CONNECT {}\r\nPING\r\n", require_connect=True)
    assert ops == [(OP_CONNECT, {"verbose": True, "pedantic": True, "echo": True}, b"{}"),
                   (OP_PING,)]


def test_dead_parser_yields_nothing():
    p = Parser()
    assert p.feed(b"BAD\r\n") == [(OP_CLOSE, ERR_UNKNOWN_OP)]
    assert p.feed(b"PING\r\n") == []


STREAM = (b'CONNECT {"verbose":false}\r\nSUB a.* q 1\r\nPUB a.b r 3\r\nabc\r\n'
          b"HPUB h 12 14\r\nNATS/1.0\r\n\r\nhi\r\nUNSUB 1 3\r\nPING\r\nPONG\r\n")


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=20))
def test_any_chunking_gives_the_same_ops(cuts):
    sizes = []
    last = 0
    for c in sorted(cuts):
        sizes.append(c - last)
        last = c
    assert parse_chunked(STREAM, sizes) == parse(STREAM)


_ops = st.sampled_from([b"PUB ", b"HPUB ", b"SUB ", b"UNSUB ", b"PING", b"PONG", b"CONNECT ",
                        b"INFO ", b"+OK", b"-ERR ", b"\r\n", b"\n", b" ", b"\t", b"5", b"12",
                        b"foo", b"NATS/1.0\r\n\r\n", b"*", b">", b"."])


@settings(max_examples=400)
@given(st.lists(st.one_of(_ops, st.binary(max_size=30)), max_size=30),
       st.lists(st.integers(min_value=1, max_value=40), max_size=10))
def test_fuzz_never_raises(pieces, sizes):
    data = b"".join(pieces)
    ops = parse_chunked(data, sizes, max_control_line=64, max_payload=100)
    for i, op in enumerate(ops):
        assert isinstance(op, tuple) and op
        if op[0] == OP_CLOSE:
            assert i == len(ops) - 1  # nothing after a protocol error


@settings(max_examples=100)
@given(st.binary(min_size=0, max_size=20000))
def test_oversized_random_input_never_raises(data):
    p = Parser(max_control_line=128, max_payload=256)
    p.feed(data)
    p.feed(data)


# ------------------------------------------------------------- nats-server's exact parser

from minijs.protocol.parser import OP_HMSG, OP_SEND_ERR  # noqa: E402
from minijs.protocol.wire import Sized  # noqa: E402


def test_reads_follow_nats_server_buffer_sizes():
    p = Parser()
    assert [len(r) for r in p.reads(b"x" * 2000)] == [512, 1024, 464]
    assert p.read_size == 2048
    # Short reads: after more than two in a row the buffer halves, down to 64 bytes.
    p = Parser()
    sizes = []
    for _ in range(8):
        p.reads(b"x" * 10)
        sizes.append(p.read_size)
    assert sizes == [512, 512, 256, 128, 64, 64, 64, 64]
    assert [len(r) for r in p.reads(b"y" * 300)] == [64, 128, 108]


def test_cr_inside_argument_drops_last_byte():
    assert parse(b"PUB a\rb 2\r\nhi\r\n") == [(OP_PUB, b"a\rb", None, b"hi")]
    assert parse(b"PUB a\rb 2\nhi\r\n") == [(OP_CLOSE, None)]  # "a\rb " has no size
    assert parse(b"SUB a 2\r3\r\n") == [(OP_SUB, b"a", b"2", b"3")]
    assert parse(b"SUB a\x0bb 1\x0c2\r\n") == [(OP_SUB, b"a\x0bb", None, b"1\x0c2")]
    assert parse(b"PUB a\x0cb 2\r\nhi\r\n") == [(OP_PUB, b"a\x0cb", None, b"hi")]


def test_argument_split_across_reads_keeps_what_arrived():
    p = parser()
    assert p.feed(b"SUB a b") == []
    assert p.feed(b"\rc d\r\n") == [(OP_SUB, b"a", b"bc", b"d")]  # later \r bytes left out
    p = parser()
    assert p.feed(b"PUB fo\ro 1") == []  # a \r seen: the read's last byte is dropped
    assert p.feed(b"\r\n") == [(OP_CLOSE, None)]  # "fo\ro " has no size


def test_argument_starts_at_any_byte_after_the_spaces():
    assert parse(b"PUB \nfoo 2\r\nhi\r\n") == [(OP_PUB, b"\nfoo", None, b"hi")]
    assert parse(b"PUB \r\n") == [(OP_CLOSE, None)]
    assert parse(b'CONNECT\n{"verbose":false}\r\n')[0][1]["verbose"] is False


def test_connect_and_info_need_no_space():
    assert parse(b"CONNECT{}\r\n")[0][0] == OP_CONNECT
    assert parse(b"CONNECTX\r\n") == [(OP_CLOSE, None)]
    assert parse(b"INFOX\r\n") == [(OP_CLOSE, None)]
    assert parse(b'INFO {"port":"x"}\r\n') == [(OP_CLOSE, None)]
    assert parse(b"INFO {}\r\n") == [(OP_INFO, b"{}")]


def test_ping_junk_is_never_buffered():
    p = parser()
    assert p.feed(b"PING") == []
    for _ in range(100):
        assert p.feed(b"x" * 65536) == []
    assert p._buf == b""
    assert p.feed(b"\r\nPONG\r\n") == [(OP_PING,), (OP_PONG,)]


def test_control_line_limit_counts_the_argument_only():
    p = parser(max_control_line=16)
    assert p.feed(b"SUB" + b" " * 1000 + b"a" * 16) == []  # spaces before it do not count
    assert p.feed(b"a") == [(OP_CLOSE, ERR_MAX_CONTROL_LINE)]
    assert parse(b'CONNECT {"name":"xxxxxxxxxx"}\r\n', max_control_line=16) == [
        (OP_CLOSE, ERR_MAX_CONTROL_LINE)]
    assert parse(b"-ERR " + b"e" * 17 + b"\r\n", max_control_line=16) == [
        (OP_CLOSE, ERR_MAX_CONTROL_LINE)]
    assert parse(b"PING " + b"p" * 100 + b"\r\n", max_control_line=16) == [(OP_PING,)]


def test_hpub_header_sizes():
    assert parse(b"HPUB s 0 2\r\nhi\r\n") == [(OP_PUB, b"s", None, b"hi")]
    assert parse(b"HPUB s 2 2\r\nhi\r\n") == [(OP_HPUB, b"s", None, b"hi", b"")]
    assert parse(b"HPUB s 0 2\r\n", headers=False) == [(OP_CLOSE, None)]  # at the line


def test_client_hmsg():
    assert parse(b"HMSG anything at all\r\n\r\nPING\r\n") == [(OP_HMSG,), (OP_PING,)]
    assert parse(b"HMSG x\r\nhi\r\n") == [(OP_CLOSE, ERR_UNKNOWN_OP)]
    assert parse(b"HMSG x\r\n") == [(OP_CLOSE, ERR_UNKNOWN_OP)]  # its CRLF is not in this read


def test_pedantic_error_at_line_and_again_when_payload_is_later():
    p = parser()
    p.pedantic = True
    assert p.feed(b"PUB a.* 2\r\nhi\r\n") == [
        (OP_SEND_ERR, "Invalid Publish Subject"), (OP_PUB, b"a.*", None, b"hi")]
    assert p.feed(b"PUB a..b 2\r\n") == [(OP_SEND_ERR, "Invalid Publish Subject")] * 2
    assert p.feed(b"hi\r\n") == [(OP_PUB, b"a..b", None, b"hi")]
    assert p.feed(b"PUB a\x0cb 1\r\nx\r\n") == [(OP_PUB, b"a\x0cb", None, b"x")]


def test_size_tokens_with_leading_zeros_travel_with_the_payload():
    (op,) = parse(b"PUB a 007\r\n1234567\r\n")
    assert op == (OP_PUB, b"a", None, b"1234567")
    assert type(op[3]) is Sized and op[3].size == b"007" and op[3].header_size is None
    (op,) = parse(b"HPUB a 02 03\r\nh:x\r\n")
    assert type(op[4]) is Sized and (op[4].header_size, op[4].size) == (b"02", b"03")
    assert type(parse(b"PUB a 7\r\n1234567\r\n")[0][3]) is bytes


def test_client_err_does_not_stop_the_parser():
    assert parse(b"-ERR 'x'\r\nPUB a 1\r\nx\r\n") == [(OP_ERR, "'x'"), (OP_PUB, b"a", None, b"x")]


def test_connect_sets_headers_and_pedantic():
    p = Parser()
    ops = p.feed(b'CONNECT {"headers":true,"pedantic":false}\r\nHPUB a 2 3\r\nh:x\r\n')
    assert ops[1] == (OP_HPUB, b"a", None, b"h:", b"x")
    assert p.feed(b"PUB a..b 1\r\nx\r\n") == [(OP_PUB, b"a..b", None, b"x")]


# ------------------------------------------------------------- runs of short PUBs (acks)

_run_records = st.sampled_from([
    b"PUB $JS.ACK.S.C.1.%d.%d.17.0 4\r\n+ACK\r\n", b"PUB $JS.ACK.S.C.1.%d.%d.17.0 0\r\n\r\n",
    b"PUB a.%d.%d 4\r\n-NAK\r\n", b"PUB a.%d.%d r 4\r\n+ACK\r\n", b"PUB a.%d.%d 4\r\n+AC \r\n",
    b"PUB a.%d.%d 2\r\n\r\n\r\n", b"PUB a.%d.%d 4\r\n+ACKX\r\n", b"PUB a.%d.%d  4\r\n+ACK\r\n",
    b"PUB a.%d\t%d 4\r\n+ACK\r\n", b"PUB " + b"x" * 54 + b".%d.%d 4\r\n+ACK\r\n",
    b"PUB a.%d.%d 04\r\n+ACK\r\n", b"PING\r\n", b"PUB a.%d.%d 4\r\n+ACK",
    # the same control line again and again (an async publisher's burst), odd ones among them
    b"PUB s.x 3\r\nabc\r\n", b"PUB s.x 3\r\nabc\r\n", b"PUB s.x r 3\r\nabc\r\n",
    b"PUB s.x 3\r\nab\r\n\r\n", b"PUB s.x 3\r\nabcd\r\n", b"PUB s.x 3\r\na",
    b"PUB s.x 0\r\n\r\n", b"PUB s.x 3\r\n\r\n\r\n\r\n",
])


@settings(max_examples=300)
@given(st.lists(_run_records, min_size=1, max_size=40), st.booleans(),
       st.sampled_from([60, 4096]))
def test_runs_of_short_pubs_parse_as_one_by_one(records, pedantic, max_control_line):
    """Runs of PUBs with an ack's body each (as acks come), or with one control line (as an
    async publisher's burst comes), taken together by the parser, give exactly the
    operations the byte-by-byte path gives (which never takes a fast path): odd records, a
    reply, a control line over the limit, a payload longer than its size, a record cut off
    at the end."""
    data = b"".join(r % (i, i) if b"%d" in r else r for i, r in enumerate(records))

    def run(sizes: list[int]) -> list[tuple]:
        p = parser(max_control_line=max_control_line)
        p.pedantic = pedantic
        ops: list[tuple] = []
        i = 0
        for n in sizes:
            ops += p.feed(data[i:i + n])
            i += n
        return ops

    whole = run([len(data)])
    assert one_by_one(whole) == run([1] * len(data))
    # a run op stands for two or more PUBs with one control line, never for one
    assert all(len(op[3]) > 1 for op in whole if op[0] == OP_PUB_RUN)


def test_a_run_of_acks_is_parsed_in_one_step():
    """Forty ``+ACK`` PUBs, taken by the parser's run form: the same forty operations."""
    from minijs.protocol import parser as parser_module

    data = b"".join(b"PUB $JS.ACK.S.C.1.%d.%d.17.%d 4\r\n+ACK\r\n" % (i, i, 40 - i)
                    for i in range(40))
    p = parser()
    p.pedantic = False
    ops = p.feed(data)
    assert ops == [(OP_PUB, b"$JS.ACK.S.C.1.%d.%d.17.%d" % (i, i, 40 - i), None, b"+ACK")
                   for i in range(40)]
    assert set(parser_module._RUN_FORMS) == {b"", b"+ACK"}


def test_a_run_stops_at_a_control_line_over_the_limit():
    """In a run of ``+ACK`` PUBs, one whose control line is one byte over the limit ends
    the run: the parser fails on it as it does alone, after the ones before it."""
    limit = 20
    ok = b"PUB %s 4\r\n+ACK\r\n" % (b"a" * (limit - 2))  # argument exactly at the limit
    over = b"PUB %s 4\r\n+ACK\r\n" % (b"b" * (limit - 1))
    p = parser(max_control_line=limit)
    p.pedantic = False
    ops = p.feed(b"".join(ok.replace(b"PUB a", b"PUB %d" % i) for i in range(3)) + over + ok)
    assert ops[:3] == [(OP_PUB, b"%d" % i + b"a" * (limit - 3), None, b"+ACK") for i in range(3)]
    assert ops[3:] == [(OP_CLOSE, ERR_MAX_CONTROL_LINE)]
