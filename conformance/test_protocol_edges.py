"""Edges of the client protocol where nats-server's exact parser shows:
output queued before a close, publish subjects its sublist cannot match, bytes that are or are
not argument separators, header blocks of size zero, CONNECT decoded by Go's encoding/json, and
where the control-line limit applies.

Every case sends its bytes in a single write unless it says otherwise: nats-server reads at most
512 bytes at first, and a few answers depend on where its reads end.
"""
from __future__ import annotations

import json

import pytest

from conformance.helpers import RawFactory, SpawnFn, connect_line, ready, subscribe
from conformance.jshelpers import JsClient
from conformance.rawclient import OK, PING, PONG, RawClient, hmsg, msg, pub

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
     (b"HPUB foo 12 12\r\n", b""), (b"PUB foo 1\r\nxy", UNKNOWN_OP)],
    ids=["silent-close", "unknown-op", "max-payload", "max-control-line", "client-err",
         "hpub-without-headers", "bad-payload-end"],
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


# ---------------------------------------------------------------- 2. invalid publish subjects


@pytest.mark.parametrize("pedantic", [True, False], ids=["pedantic", "lenient"])
@pytest.mark.parametrize("bad", ["{s}..b", ".{s}", "{s}.", "{s}.a..b.c"],
                         ids=["double-dot", "leading-dot", "trailing-dot", "inner-empty"])
def test_empty_token_subject_reaches_no_one(
    target: str, raw: RawFactory, subject: str, bad: str, pedantic: bool
) -> None:
    """A publish subject with an empty token matches no subscription, not even ``>``;
    pedantic clients get ``Invalid Publish Subject`` first, others nothing; the connection
    stays open."""
    client = ready(raw, pedantic=pedantic)
    subscribe(client, ">", 1)
    subject_bad = bad.format(s=subject)
    client.send(pub(subject_bad, b"x"))
    assert client.barrier() == (INVALID_PUB if pedantic else b"")
    client.send(pub(f"{subject}.ok", b"y"))
    assert client.barrier() == msg(f"{subject}.ok", 1, b"y")


@pytest.mark.parametrize("pedantic", [True, False], ids=["pedantic", "lenient"])
def test_wildcard_publish_subject_still_routed(
    target: str, raw: RawFactory, subject: str, pedantic: bool
) -> None:
    """Unlike an empty token, a ``*`` token is routed (as a literal); pedantic clients get the
    error as well."""
    client = ready(raw, pedantic=pedantic)
    subscribe(client, f"{subject}.>", 1)
    client.send(pub(f"{subject}.*", b"x"))
    expected = msg(f"{subject}.*", 1, b"x")
    assert client.barrier() == (INVALID_PUB + expected if pedantic else expected)


def test_request_to_empty_token_subject_gets_no_responders(
    target: str, raw: RawFactory, subject: str
) -> None:
    """A request to ``a..b`` reaches no one, so a no-responders client gets the 503."""
    client = ready(raw)
    subscribe(client, f"{subject}.>", 1)
    subscribe(client, f"_INBOX.{subject}.*", 2)
    bad = f"{subject}.a..b"
    client.send(pub(bad, b"req", reply=f"_INBOX.{subject}.1"))
    assert client.barrier() == no_responders(f"_INBOX.{subject}.1", 2, bad)


def test_reply_with_empty_token_gets_no_503(target: str, raw: RawFactory, subject: str) -> None:
    """Nor can a 503 find a reply subject with an empty token: a request nobody hears, with
    reply ``_INBOX.<x>..1``, gets nothing, even though the client has ``_INBOX.>``."""
    client = ready(raw)
    subscribe(client, "_INBOX.>", 1)
    client.send(pub(f"{subject}.nobody", b"req", reply=f"_INBOX.{subject}..1"))
    assert client.barrier() == b""


def test_kv_key_with_empty_token_is_not_stored(
    target: str, js: JsClient, stream_name: str
) -> None:
    """A raw publish to ``$KV.<bucket>.a..b`` is not stored by the bucket's stream (its
    ``$KV.<bucket>.>`` interest does not match): the request gets 503 no responders."""
    bucket = stream_name
    js.create(f"KV_{bucket}", subjects=[f"$KV.{bucket}.>"], storage="memory")
    reply = js.publish(f"$KV.{bucket}.a..b", b"v")
    assert reply.status == "503"
    assert js.pub_ok(f"$KV.{bucket}.a.b", b"v") == 1
    assert js.state(f"KV_{bucket}")["messages"] == 1


@pytest.mark.parametrize(
    "subject, reply, error",
    [("_GR_.x", None, 'Permissions Violation for Publish to "_GR_.x"'),
     ("$GR.x.y", None, 'Permissions Violation for Publish to "$GR.x.y"'),
     ("$GR.\x0bx", None, 'Permissions Violation for Publish to "$GR.\\vx"'),
     ("$NRG.\xff", None, 'Permissions Violation for Publish to "$NRG.\\xff"'),
     ("_GR_", None, None), ("$GR", None, None),
     ("f", "$JS.ACK.\x0c", 'Permissions Violation for Publish with Reply of "$JS.ACK.\\f"'),
     ("f", "_GR_.x", 'Permissions Violation for Publish with Reply of "_GR_.x"'),
     ("f", "_R_.", 'Permissions Violation for Publish with Reply of "_R_."'),
     ("f", "_GR_.", None), ("f", "$JS.ACK.", None),
     ("f", "$GR.a", 'Permissions Violation for Publish with Reply of "$GR.a"'),
     ("f", "$GR.", None)],
    ids=["gr-new", "gr-old", "quoted-vt", "quoted-bad-utf8", "gr-new-bare", "gr-old-bare",
         "reply-js-ack-quoted", "reply-gr", "reply-r-bare", "reply-gr-bare", "reply-js-ack-bare",
         "reply-gr-old", "reply-gr-old-bare"],
)
def test_reserved_prefixes(
    target: str, raw: RawFactory, subject: str, reply: str | None, error: str | None
) -> None:
    """Gateway-routed reply prefixes (``_GR_.``, ``$GR.``) are reserved for publishing too,
    ``_R_.`` is reserved even bare, ``$JS.ACK.`` and ``_GR_.`` only with something after them;
    the subject in the error is Go-quoted (``%q``)."""
    client = ready(raw)
    subscribe(client, ">", 1)
    subj = subject.encode("latin-1")
    rep = reply.encode("latin-1") if reply else None
    client.send(b"PUB " + subj + (b" " + rep if rep else b"") + b" 1\r\nx\r\n")
    if error:
        expected = b"-ERR '" + error.encode("latin-1") + b"'\r\n"
    else:
        expected = b"MSG " + subj + b" 1 " + (rep + b" " if rep else b"") + b"1\r\nx\r\n"
    assert client.barrier() == expected


def test_sys_queue_error_quotes_subject(target: str, raw: RawFactory) -> None:
    """The ``_sys_`` queue error quotes the subject the Go way too."""
    client = ready(raw)
    client.send(b"SUB a\x0c _sys_ 2\r\n")
    assert client.barrier() == (
        b"-ERR 'Permissions Violation for Subscription to \"a\\f\" using queue \"_sys_\"'\r\n")


def test_pedantic_error_repeats_when_payload_comes_later(
    target: str, raw: RawFactory, subject: str
) -> None:
    """When a pedantic publish's payload is not in the same read as its control line,
    nats-server reads the control line again and sends the error twice; the message itself
    (a wildcard subject here) is routed once."""
    client = ready(raw, pedantic=True)
    subscribe(client, f"{subject}.>", 1)
    client.send(f"PUB {subject}.* 2\r\n".encode())
    client.expect(INVALID_PUB + INVALID_PUB)
    client.send(b"hi\r\n")
    assert client.barrier() == msg(f"{subject}.*", 1, b"hi")


def test_pedantic_error_repeats_when_payload_crosses_first_read(
    target: str, raw: RawFactory, subject: str
) -> None:
    """The same in one write: nats-server's first read of a connection takes 512 bytes, so a
    payload that crosses byte 512 completes in its second read."""
    client = raw()
    head = connect_line(verbose=False, pedantic=True) + f"SUB {subject}.> 1\r\n".encode()
    line = f"PUB {subject}.* 600\r\n".encode()
    assert len(head) + len(line) < 512
    payload = b"p" * 600
    client.send(head + line + payload + b"\r\n" + PING)
    client.expect(INVALID_PUB + INVALID_PUB + msg(f"{subject}.*", 1, payload) + PONG)


# ---------------------------------------------------------------- 3. argument separators


@pytest.mark.parametrize("odd", [b"\x0b", b"\x0c"], ids=["vt", "ff"])
def test_vt_and_ff_are_subject_bytes(
    target: str, raw: RawFactory, subject: str, odd: bytes
) -> None:
    """Vertical tab and form feed do not separate arguments: ``PUB a<FF>b 2`` publishes to
    the subject ``a<FF>b``, which a SUB can name too (and a pedantic client may use)."""
    client = ready(raw, pedantic=True)
    s = subject.encode()
    weird = s + b".a" + odd + b"b"
    client.send(b"SUB " + s + b".> 1\r\nSUB " + weird + b" 2\r\n")
    assert client.barrier() == b""
    client.send(b"PUB " + weird + b" 2\r\nhi\r\n")
    got = client.barrier()
    one = b"MSG " + weird + b" 1 2\r\nhi\r\n"
    two = b"MSG " + weird + b" 2 2\r\nhi\r\n"
    assert got in (one + two, two + one)
    # In a sid it is part of the sid.
    client.send(b"SUB " + s + b"_x 3" + odd + b"4\r\n" + pub(f"{subject}_x", b"z"))
    assert client.barrier() == b"MSG " + s + b"_x 3" + odd + b"4 1\r\nz\r\n"


@pytest.mark.parametrize(
    "line, expected_sid, queue",
    [(b"SUB {s}\r 2\r\n", b"2", None), (b"SUB {s} 2\r3\r\n", b"3", b"2"),
     (b"SUB {s}\r\r2\r\n", b"2", None), (b"SUB\t{s}\t\t 2 \r\n", b"2", None)],
    ids=["cr-before-sid", "cr-splits-sid", "two-crs", "tabs-and-trailing-space"],
)
def test_cr_inside_sub_line_separates(
    target: str, raw: RawFactory, subject: str, line: bytes, expected_sid: bytes,
    queue: bytes | None
) -> None:
    """SUB and UNSUB split their arguments at ``\\r`` and ``\\n`` as well as space and tab
    (``SUB s 2\\r3`` is subject ``s``, queue ``2``, sid ``3``)."""
    client = ready(raw)
    client.send(line.replace(b"{s}", subject.encode()))
    assert client.barrier() == b""
    client.send(pub(subject, b"x"))
    assert client.barrier() == msg(subject, expected_sid.decode(), b"x")


def test_cr_inside_pub_line_is_subject_byte(target: str, raw: RawFactory, subject: str) -> None:
    """PUB splits at space and tab only: ``PUB s\\rx 2`` publishes to ``s\\rx``."""
    client = ready(raw)
    subscribe(client, ">", 1)
    s = subject.encode()
    client.send(b"PUB " + s + b"\rx 2\r\nhi\r\n")
    assert client.barrier() == b"MSG " + s + b"\rx 1 2\r\nhi\r\n"


def test_cr_inside_line_drops_its_last_byte(target: str, raw: RawFactory, subject: str) -> None:
    """A line holding a ``\\r`` loses its last byte, whatever it is: ``PUB s\\rx 2\\n`` (bare
    LF) becomes ``s\\rx`` plus a space - no size - and the connection closes silently."""
    client = ready(raw)
    client.send(f"PUB {subject}\rx 2\nhi\r\n".encode())
    client.assert_closed(expect_data=b"")


def test_argument_may_start_on_the_next_line(target: str, raw: RawFactory, subject: str) -> None:
    """The argument starts at the first byte after the op name's spaces, even a newline:
    ``PUB \\n<s> 2\\r\\n`` publishes to the subject ``\\n<s>``."""
    client = ready(raw)
    subscribe(client, ">", 1)
    s = subject.encode()
    client.send(b"PUB \n" + s + b" 2\r\nhi\r\n")
    assert client.barrier() == b"MSG \n" + s + b" 1 2\r\nhi\r\n"


def test_duplicate_sid_wins_over_invalid_subject(
    target: str, raw: RawFactory, subject: str
) -> None:
    """An existing sid makes a SUB a no-op before its subject is looked at: ``+OK``, not
    ``Invalid Subject``; with a fresh sid the same subject is refused."""
    client = ready(raw, verbose=True)
    client.send(f"SUB {subject} 1\r\nSUB a..b 1\r\nSUB a..b 2\r\n".encode())
    assert client.barrier() == OK + OK + INVALID_SUB


# ---------------------------------------------------------------- 4. header block sizes


@pytest.mark.parametrize(
    "header, payload, reply",
    [(b"", b"hi", None), (b"", b"", None), (b"", b"hi", "r.1")],
    ids=["empty-header", "empty-both", "empty-header-reply"],
)
def test_hpub_empty_header_block_is_msg(
    target: str, raw: RawFactory, subject: str, header: bytes, payload: bytes, reply: str | None
) -> None:
    """``HPUB s 0 n``: a header block of size zero is no header, delivered as ``MSG``."""
    client = ready(raw)
    subscribe(client, subject, 1)
    client.send(hpub_bytes(subject, header, payload, reply))
    assert client.barrier() == msg(subject, 1, payload, reply=reply)


def hpub_bytes(subject: str, header: bytes, payload: bytes, reply: str | None = None) -> bytes:
    parts = [b"HPUB", subject.encode()] + ([reply.encode()] if reply else [])
    parts += [str(len(header)).encode(), str(len(header) + len(payload)).encode()]
    return b" ".join(parts) + b"\r\n" + header + payload + b"\r\n"


@pytest.mark.parametrize(
    "header", [b"NATS/1.0\r\n\r\n", b"X", b"NATS/1.0\r\nA: b\r\n\r\n"],
    ids=["version-only", "one-byte", "one-header"],
)
def test_hpub_header_size_equals_total(
    target: str, raw: RawFactory, subject: str, header: bytes
) -> None:
    """Header size == total size: HMSG with an empty payload, the block as sent (not even
    checked to be a header)."""
    client = ready(raw)
    subscribe(client, subject, 1)
    client.send(hpub_bytes(subject, header, b""))
    assert client.barrier() == hmsg(subject, 1, header, b"")


@pytest.mark.parametrize(
    "sent, delivered",
    [(b"PUB {s} 007\r\n1234567\r\n", b"MSG {s} 1 007\r\n1234567\r\n"),
     (b"PUB {s} r 00\r\n\r\n", b"MSG {s} 1 r 00\r\n\r\n"),
     (b"HPUB {s} 012 014\r\nNATS/1.0\r\n\r\nhi\r\n",
      b"HMSG {s} 1 012 014\r\nNATS/1.0\r\n\r\nhi\r\n"),
     (b"HPUB {s} 00 02\r\nhi\r\n", b"MSG {s} 1 02\r\nhi\r\n")],
    ids=["pub", "pub-reply-empty", "hpub", "hpub-empty-header"],
)
def test_size_tokens_repeated_as_sent(
    target: str, raw: RawFactory, subject: str, sent: bytes, delivered: bytes
) -> None:
    """nats-server writes the publisher's own size tokens into MSG/HMSG, leading zeros
    included; a subscriber without headers gets a size computed for the payload alone."""
    s = subject.encode()
    client = ready(raw)
    plain = ready(raw, headers=False, no_responders=False)
    subscribe(client, subject, 1)
    subscribe(plain, subject, 1)
    client.send(sent.replace(b"{s}", s))
    assert client.barrier() == delivered.replace(b"{s}", s)
    if delivered.startswith(b"HMSG"):
        assert plain.barrier() == b"MSG " + s + b" 1 2\r\nhi\r\n"
    else:
        assert plain.barrier() == delivered.replace(b"{s}", s)


def test_client_hmsg_is_an_empty_message(target: str, raw: RawFactory, subject: str) -> None:
    """A client may send ``HMSG``: nats-server takes any arguments, wants ``\\r\\n`` right after
    the line, acknowledges it (verbose) and delivers nothing; other bytes there are an
    unknown op."""
    client = ready(raw, verbose=True)
    client.send(b"SUB > 1\r\n")
    assert client.barrier() == OK
    client.send(f"HMSG {subject} 1 2\r\n\r\n".encode())
    assert client.barrier() == OK
    client.send(f"HMSG {subject} 1 2\r\nhi\r\n".encode())
    client.assert_closed(expect_data=UNKNOWN_OP)


def test_client_hmsg_at_end_of_read(target: str, raw: RawFactory, subject: str) -> None:
    """An ``HMSG`` line that ends its read: nats-server re-reads it as an HPUB and fails."""
    client = ready(raw, verbose=True)
    client.send(f"HMSG {subject}\r\n".encode())
    client.assert_closed(expect_data=UNKNOWN_OP)


# ---------------------------------------------------------------- 5. CONNECT as Go decodes it


@pytest.mark.parametrize(
    "body",
    [b'{"VERBOSE":false}', b'{"Verbose":false}', b'{"vErBoSe":true,"verbose":false}',
     b'{"verbo\\u017fe":false}', b'{"verbose":true,"VERBOSE":false}'],
    ids=["upper", "title", "mixed-then-exact", "long-s", "last-wins"],
)
def test_connect_keys_case_insensitive(target: str, raw: RawFactory, body: bytes) -> None:
    """Keys match field names case-insensitively (Go's encoding/json); the last one wins."""
    client = raw()
    client.send(b"CONNECT " + body + b"\r\nPING\r\n")
    client.expect(PONG)
    assert client.barrier() == b""


@pytest.mark.parametrize(
    "body", [b"null", b'{"verbose":null}', b'{"verbose":null,"protocol":null,"name":null}',
             b'{"pedantic":null,"echo":null}'],
    ids=["null-body", "null-verbose", "null-fields", "null-pedantic-echo"],
)
def test_connect_null_keeps_defaults(
    target: str, raw: RawFactory, subject: str, body: bytes
) -> None:
    """``null`` (the whole body or a field) leaves the defaults: verbose, pedantic and echo
    stay on, the protocol stays 0 (no INFO after PONG)."""
    client = raw()
    s = subject.encode()
    client.send(b"CONNECT " + body + b"\r\nSUB " + s + b" 1\r\nPUB " + s + b".* 1\r\nx\r\n"
                + b"PUB " + s + b" 1\r\ny\r\nPING\r\n")
    client.expect(OK + OK + INVALID_PUB + OK + OK + b"MSG " + s + b" 1 1\r\ny\r\n" + PONG)
    assert client.barrier() == b""


#: For every CONNECT field, JSON values of the wrong type.
_BOOL_FIELDS = ["verbose", "pedantic", "echo", "tls_required", "headers", "no_responders",
                "new_account"]
_STRING_FIELDS = ["name", "lang", "version", "user", "pass", "auth_token", "nkey", "jwt", "sig",
                  "account", "remote_account", "proxy_sig"]
_MISTYPED = (
    [(f, v) for f in _BOOL_FIELDS for v in ('"yes"', "1", "0", "[]", "{}", '"true"')]
    + [(f, v) for f in _STRING_FIELDS for v in ("5", "true", "[]", "{}", '["a"]')]
    + [("protocol", v) for v in ('"1"', "1.0", "1e0", "true", "[]", "{}",
                                 "99999999999999999999", "-0.0")]
    + [(f, v) for f in ("import", "export")
       for v in ("[]", '"a"', "5", "true", '{"allow":"a"}', '{"deny":[1]}', '{"allow":{}}')]
)


@pytest.mark.parametrize("field", sorted({f for f, _ in _MISTYPED}))
def test_connect_mistyped_field_closes_silently(target: str, raw: RawFactory, field: str) -> None:
    """A CONNECT field with a value of the wrong JSON type (``"verbose":"yes"``,
    ``"name":5``, ``"protocol":"1"`` or ``1.0``, an out-of-range number) closes the
    connection without any -ERR; so for each field, each wrong type."""
    for f, value in _MISTYPED:
        if f != field:
            continue
        client = raw()
        client.send(b'CONNECT {"' + field.encode() + b'":' + value.encode() + b"}\r\nPING\r\n")
        try:
            client.assert_closed(expect_data=b"")
        except AssertionError as exc:
            raise AssertionError(f"{field}: {value}: {exc}") from None
        client.close()


@pytest.mark.parametrize(
    "body",
    [b'{"protocol":-0}', b'{"import":null,"export":{"allow":null,"deny":["a"],"x":5}}',
     b'{"IMPORT":{"Allow":["a"]}}', b'{"x":[1,{"y":null}],"z":1e999}',
     b'{"name":"\xff\xfe"}', b'{"name":"\\ud800"}', b'{"verbose\\u0000":true}',
     b' \t{}\t '],
    ids=["minus-zero", "permissions", "permissions-case", "unknown-any-value", "bad-utf8",
         "lone-surrogate", "nul-in-key", "json-whitespace"],
)
def test_connect_go_accepts(target: str, raw: RawFactory, body: bytes) -> None:
    """Values Go's decoder accepts: ``-0`` as an int, permission objects (unknown keys in
    them too), any JSON under an unknown key (``1e999`` included), invalid UTF-8 and lone
    surrogates in strings, a key that only looks like a field, JSON white space around."""
    client = raw()
    client.send(b"CONNECT " + body + b"\r\nPING\r\n")
    client.expect(OK + PONG)
    assert client.barrier() == b""


@pytest.mark.parametrize(
    "body",
    [b'{"x":NaN}', b'{"x":Infinity}', b"\xef\xbb\xbf{}", b"{}\x0c", b"{} x", b"{}\x00",
     b'{"x":"a\x01"}', b'{"x":"\\x"}', b"[]", b"5", b'"{}"', b"true", b"", b"{",
     b"{'a':1}", b'{"a":01}'],
    ids=["nan", "infinity", "bom", "form-feed", "trailing", "nul", "control-char",
         "bad-escape", "array", "number", "string", "bool", "empty", "unterminated",
         "single-quotes", "leading-zero"],
)
def test_connect_go_refuses(target: str, raw: RawFactory, body: bytes) -> None:
    """JSON Go refuses (or that is not an object) closes the connection silently."""
    client = raw()
    client.send(b"CONNECT " + body + b"\r\nPING\r\n")
    client.assert_closed(expect_data=b"")


def test_connect_deep_nesting(target: str, raw: RawFactory) -> None:
    """1,500 nested arrays under an unknown key are fine (Go allows 10,000 levels); 1,500
    unclosed ``[`` are a syntax error and a silent close - no traceback, no hang."""
    deep = b'{"x":' + b"[" * 1500 + b"]" * 1500 + b',"verbose":false}'
    client = raw()
    client.send(b"CONNECT " + deep + b"\r\nPING\r\n")
    client.expect(PONG)
    assert client.barrier() == b""
    broken = raw()
    broken.send(b"CONNECT " + b"[" * 1500 + b"\r\nPING\r\n")
    broken.assert_closed(expect_data=b"")


def test_connect_depth_limit(target: str, spawn: SpawnFn) -> None:
    """Go's decoder stops at 10,000 levels of nesting: 10,000 are accepted, 10,001 close the
    connection (with a control line long enough to carry them)."""
    ep = spawn(config="max_control_line: 65536\n")
    for depth, ok in ((10000, True), (10001, False)):
        with RawClient.connect(ep.host, ep.port) as client:
            body = b"[" * (depth - 1) + b"]" * (depth - 1)
            client.send(b'CONNECT {"x":' + body + b"}\r\nPING\r\n")
            if ok:
                client.expect(OK + PONG)
            else:
                client.assert_closed(expect_data=b"")


def test_second_connect_drops_subscriptions(target: str, raw: RawFactory, subject: str) -> None:
    """A second CONNECT removes every subscription of the connection (nats-server may move
    the client to another account); its sids are free again. SUBs before the first CONNECT
    stay."""
    client = raw()
    s = subject.encode()
    client.send(b"SUB " + s + b".early 1\r\n" + connect_line(verbose=False)
                + b"SUB " + s + b".late 2\r\n" + pub(f"{subject}.early", b"a")
                + pub(f"{subject}.late", b"b") + PING)
    client.expect(OK + msg(f"{subject}.early", 1, b"a") + msg(f"{subject}.late", 2, b"b") + PONG)
    client.send(connect_line(verbose=False) + pub(f"{subject}.early", b"c")
                + pub(f"{subject}.late", b"d") + b"SUB " + s + b".late 1\r\n"
                + pub(f"{subject}.late", b"e"))
    assert client.barrier() == msg(f"{subject}.late", 1, b"e")


@pytest.mark.parametrize("auth", ["user", "token"])
def test_connect_credentials_case_insensitive(target: str, spawn: SpawnFn, auth: str) -> None:
    """``"User"``/``"PASS"`` and ``"Auth_Token"`` log in like their lower-case names."""
    if auth == "user":
        ep = spawn(config='authorization { user: alice, password: s3cret }\n')
        body = b'{"User":"alice","PASS":"s3cret","verbose":false}'
        wrong = b'{"User":"alice","PASS":"nope","verbose":false}'
    else:
        ep = spawn(config='authorization { token: t0ken }\n')
        body = b'{"Auth_Token":"t0ken","verbose":false}'
        wrong = b'{"AUTH_TOKEN":"nope","verbose":false}'
    with RawClient.connect(ep.host, ep.port) as client:
        client.send(b"CONNECT " + body + b"\r\nPING\r\n")
        client.expect(PONG)
    with RawClient.connect(ep.host, ep.port) as client:
        client.send(b"CONNECT " + wrong + b"\r\nPING\r\n")
        client.assert_closed(expect_data=b"-ERR 'Authorization Violation'\r\n")


def test_connect_auth_checked_before_protocol(target: str, spawn: SpawnFn) -> None:
    """With bad credentials and a bad protocol, the answer is the authorization error."""
    ep = spawn(config='authorization { token: t0ken }\n')
    with RawClient.connect(ep.host, ep.port) as client:
        client.send(b'CONNECT {"auth_token":"nope","protocol":7}\r\n')
        client.assert_closed(expect_data=b"-ERR 'Authorization Violation'\r\n")


@pytest.mark.parametrize(
    "line, ok",
    [(b'CONNECT{"verbose":false}', True), (b'CONNECT\t{"verbose":false}', True),
     (b'CONNECT\n{"verbose":false}', True), (b"CONNECTX", False), (b"connectX {}", False),
     (b"CONNECT", False), (b"INFO {}", True), (b"INFOX", False), (b"INFO", False),
     (b'INFO {"port":"x"}', False), (b"INFO 5", False), (b'INFO {"connect_urls":"u"}', False),
     (b"INFO null", True), (b'INFO {"Port":4222,"unknown":[1]}', True),
     (b'INFO {"client_id":-0}', False), (b'INFO {"port":-0}', True)],
    ids=["connect-no-space", "connect-tab", "connect-newline", "connectx", "connectx-lower",
         "connect-bare", "info", "infox", "info-bare", "info-bad-port", "info-number",
         "info-bad-urls", "info-null", "info-ok", "info-unsigned-minus-zero",
         "info-signed-minus-zero"],
)
def test_connect_and_info_argument_forms(
    target: str, raw: RawFactory, line: bytes, ok: bool
) -> None:
    """CONNECT and INFO take their argument right after the name (``CONNECTX`` is CONNECT
    with the argument ``X``, a JSON error and a silent close); a client's INFO must decode
    into nats-server's INFO struct, or the connection is closed."""
    client = ready(raw, verbose=False)
    client.send(line + b"\r\nPING\r\n")
    if ok:
        client.expect(PONG)
        assert client.barrier() == b""
    else:
        client.assert_closed(expect_data=b"")


# ---------------------------------------------------------------- 6. the control-line limit


def _connect_of_size(arg_len: int) -> bytes:
    """A valid ``CONNECT`` whose argument is exactly ``arg_len`` bytes."""
    base = b'{"verbose":false,"x":""}'
    body = base[:-2] + b"a" * (arg_len - len(base)) + base[-2:]
    assert len(body) == arg_len and json.loads(body)
    return b"CONNECT " + body + b"\r\n"


@pytest.mark.parametrize("size, ok", [(4096, True), (4097, False), (5000, False)])
def test_complete_connect_over_limit(target: str, raw: RawFactory, size: int, ok: bool) -> None:
    """The limit applies to complete lines of every op: a CONNECT argument of 4096 bytes is
    fine, one byte more is ``maximum control line exceeded``."""
    client = raw()
    client.send(_connect_of_size(size) + PING)
    if ok:
        client.expect(PONG)
    else:
        client.assert_closed(expect_data=MAX_CONTROL_LINE)


@pytest.mark.parametrize(
    "line",
    [b"INFO {" + b" " * 4100 + b"}", b"-ERR '" + b"e" * 4100 + b"'", b"UNSUB " + b"1" * 4097,
     b"HPUB " + b"h" * 4100 + b" 0 0", b"HMSG " + b"m" * 4100, b"PUB " + b"p" * 4100 + b" 0"],
    ids=["info", "err", "unsub", "hpub", "hmsg", "pub"],
)
def test_complete_line_over_limit(target: str, raw: RawFactory, line: bytes) -> None:
    """Every op with an argument is held to the limit, checked before the argument is used."""
    client = ready(raw, headers=True)
    client.send(line + b"\r\n")
    client.assert_closed(expect_data=MAX_CONTROL_LINE)


@pytest.mark.parametrize("verb", [b"PING", b"PONG", b"+OK"])
def test_no_limit_on_ping_pong_ok(target: str, raw: RawFactory, verb: bytes) -> None:
    """PING, PONG and +OK ignore what follows them up to the newline, however much: 256 KiB
    after the name is no control-line violation."""
    client = ready(raw)
    client.send(verb + b"x" * 262144 + b"\r\n" + PING)
    client.expect(PONG if verb != b"PING" else PONG + PONG)
    assert client.barrier() == b""


def test_limit_is_only_for_the_control_line(target: str, raw: RawFactory, subject: str) -> None:
    """A PING followed by 256 KiB of payload bytes (a PUB) in the same write: PONG and the
    message; the limit never looks past the control line."""
    client = ready(raw)
    subscribe(client, subject, 1)
    payload = b"z" * 262144
    client.send(PING + pub(subject, payload))
    client.expect(PONG)
    assert client.barrier(timeout=10) == msg(subject, 1, payload)


@pytest.mark.parametrize("extra, err", [(0, False), (1, True)], ids=["at-limit", "over-limit"])
def test_partial_line_errors_past_limit(
    target: str, raw: RawFactory, subject: str, extra: int, err: bool
) -> None:
    """A line without its newline yet errors once its argument has more than 4096 bytes
    (4096 waits for the rest); the op name and the spaces after it do not count."""
    client = ready(raw, verbose=True)
    arg = subject.encode() + b"." + b"s" * (4094 - len(subject) - 1 + extra) + b" 1"
    assert len(arg) == 4096 + extra
    client.send(b"SUB      " + arg)
    if err:
        client.assert_closed(expect_data=MAX_CONTROL_LINE)
        return
    client.send(b"\r\n")
    client.expect(OK)
    assert client.barrier() == b""


def test_spaces_before_argument_are_unlimited(target: str, raw: RawFactory, subject: str) -> None:
    """Spaces and tabs between the op name and its argument never count: 10,000 of them."""
    client = ready(raw)
    subscribe(client, subject, 1)
    client.send(b"PUB" + b" \t" * 5000 + f"{subject} 1\r\nx\r\n".encode())
    assert client.barrier() == msg(subject, 1, b"x")


def test_unknown_op_detected_mid_line(target: str, raw: RawFactory) -> None:
    """A wrong op name byte is an error as soon as it arrives, before any newline."""
    client = ready(raw)
    client.send(b"PUX")
    client.assert_closed(expect_data=UNKNOWN_OP)

