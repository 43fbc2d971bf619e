"""The client protocol parser: bytes in, operations out, no sockets.

Invariants:

* sans-IO: no sockets, no clock, no logging; :meth:`Parser.feed` takes bytes and returns
  operations, nothing else;
* it never raises on bad input: a protocol error is itself an operation (:data:`OP_CLOSE`)
  carrying the ``-ERR`` text nats-server sends (or ``None`` where it closes silently), always
  the last operation, after which the parser is dead;
* every answer is nats-server's, including the ones that depend on how its read loop cut the
  input: :meth:`Parser.reads` cuts a received chunk where nats-server's reads would have ended
  (512 bytes at first, then growing and shrinking as it does), and :meth:`Parser.feed` takes
  exactly one such read;
* the hot path (a plain ``PUB`` or ``HPUB`` whose payload is in the same read) is one
  regular-expression match and a slice or two per message; the PUBs after it that repeat its
  control line (an async publisher's burst) cost a comparison and a slice each, and come as
  one operation, as do the acks after an ack (one pattern match for the run).

Operations are plain tuples, first item the op code, because they are made once per message on
the hot path:

==============================================  ========================================
``(OP_PUB, subject, reply, payload)``           ``reply`` is ``None`` when absent; also an
                                                ``HPUB`` with an empty header block
``(OP_PUB_RUN, subject, reply, payloads)``      PUBs in a row that repeat one control line
                                                (at least two): one per payload, in order
``(OP_HPUB, subject, reply, header, payload)``  ``header`` is the raw block (never empty)
``(OP_HMSG,)``                                  a client's ``HMSG``: an empty message with
                                                no subject, which reaches no one
``(OP_SUB, subject, queue, sid)``               ``queue`` is ``None`` when absent
``(OP_UNSUB, sid, max)``                        ``max`` is ``None`` when absent
``(OP_CONNECT, options, json_bytes)``           every CONNECT option so far, decoded as
                                                nats-server decodes them (:mod:`.gojson`)
``(OP_PING,)`` ``(OP_PONG,)`` ``(OP_OK,)``
``(OP_INFO, json_bytes)``                       a client's INFO (decoded, then ignored)
``(OP_ERR, text)``                              a client sent ``-ERR``: nats-server closes,
                                                but routes the rest of that read's publishes
``(OP_SEND_ERR, text)``                         send ``-ERR 'text'`` and carry on
``(OP_CLOSE, err_text_or_None)``                protocol error: send ``-ERR`` if text, close
==============================================  ========================================

Subjects, replies, queues and sids are ``bytes``: they are echoed on the wire as they came.

The rules are nats-server's parser, byte for byte:

* an op name is matched case-insensitively, one byte at a time; the first byte that cannot
  continue a client op is ``Unknown Protocol Operation``, whether or not the line is complete;
* ``PUB``, ``HPUB``, ``HMSG``, ``SUB``, ``UNSUB`` and ``-ERR`` need a space or tab after the
  name; ``CONNECT`` and ``INFO`` take their argument right after the name (``CONNECTX`` is
  CONNECT with the argument ``X``); ``PING``, ``PONG`` and ``+OK`` ignore everything up to ``\\n``;
* the argument starts at the first byte after the spaces and tabs that follow the name - even
  a ``\\r`` or ``\\n`` - and ends at the next ``\\n``; if a ``\\r`` occurred after its first byte,
  the argument's last byte is dropped (normally that ``\\r``). When a read ends inside an
  argument, what has arrived is kept (with that rule) and the ``\\r`` bytes of later reads are
  left out;
* ``PUB``/``HPUB`` arguments are split at spaces and tabs only, ``SUB``/``UNSUB`` at spaces,
  tabs, ``\\r`` and ``\\n``; the wrong number of arguments or a bad size closes the connection
  without an error;
* an argument longer than ``max_control_line`` is ``maximum control line exceeded``, checked
  when its line ends and at the end of every read that ends inside it (never for PING/PONG/+OK,
  nor for the spaces before an argument);
* sizes are checked from the control line alone, before any payload; a payload must be
  followed by exactly ``\\r\\n``;
* ``HPUB`` from a client that did not declare headers closes the connection at once;
* a pedantic client publishing to a subject that is not a valid literal gets
  ``Invalid Publish Subject`` when the control line is read - and once more if the payload does
  not complete in the same read, because nats-server then re-reads the control line;
* CONNECT and INFO arguments are JSON decoded into nats-server's structs; any error closes the
  connection without a word.
"""
from __future__ import annotations

import re
from typing import Callable

from minijs.protocol import gojson, wire

OP_CLOSE = 0
OP_PUB = 1
OP_HPUB = 2
OP_SUB = 3
OP_UNSUB = 4
OP_PING = 5
OP_PONG = 6
OP_CONNECT = 7
OP_INFO = 8
OP_OK = 9
OP_ERR = 10
OP_SEND_ERR = 11
OP_HMSG = 12
OP_PUB_RUN = 13

ERR_UNKNOWN_OP = "Unknown Protocol Operation"
ERR_MAX_CONTROL_LINE = "maximum control line exceeded"
ERR_MAX_PAYLOAD = "Maximum Payload Violation"
ERR_AUTH_VIOLATION = "Authorization Violation"
ERR_INVALID_PUB_SUBJECT = "Invalid Publish Subject"

#: nats-server's options before any CONNECT (verbose, pedantic and echo on).
DEFAULT_OPTIONS = {"verbose": True, "pedantic": True, "echo": True}

# How an op continues after its name.
_NEEDS_SPACE = 0   # a space or tab, then (after more of them) the argument
_ARG = 1           # optional spaces and tabs, then the argument
_TO_NEWLINE = 2    # anything up to the next newline

# First byte (lower case) -> (name, op, how it continues); names are matched lower-cased.
_NAMES: dict[int, tuple[tuple[bytes, int, int], ...]] = {
    ord("p"): ((b"pub", OP_PUB, _NEEDS_SPACE), (b"ping", OP_PING, _TO_NEWLINE),
               (b"pong", OP_PONG, _TO_NEWLINE)),
    ord("h"): ((b"hpub", OP_HPUB, _NEEDS_SPACE), (b"hmsg", OP_HMSG, _NEEDS_SPACE)),
    ord("s"): ((b"sub", OP_SUB, _NEEDS_SPACE),),
    ord("u"): ((b"unsub", OP_UNSUB, _NEEDS_SPACE),),
    ord("c"): ((b"connect", OP_CONNECT, _ARG),),
    ord("i"): ((b"info", OP_INFO, _ARG),),
    ord("+"): ((b"+ok", OP_OK, _TO_NEWLINE),),
    ord("-"): ((b"-err", OP_ERR, _NEEDS_SPACE),),
}

_HEAD_ERROR = -1
_HEAD_MORE = -2

# nats-server's read buffer: starts at 512 bytes, doubles after a full read up to 64 KiB,
# halves after more than two short reads in a row down to 64 bytes.
_READ_START = 512
_READ_MIN = 64
_READ_MAX = 65536
_SHORTS_TO_SHRINK = 2

#: ``PUB <subject> [<reply>] <size>\r\n`` (and the HPUB line) as every client writes it: upper
#: case, single spaces, plain decimal sizes, no byte the general path would treat specially.
_PLAIN_PUB = re.compile(rb"PUB ([^ \t\r\n]+) (?:([^ \t\r\n]+) )?(0|[1-9][0-9]{0,8})\r\n").match
_PLAIN_HPUB = re.compile(
    rb"HPUB ([^ \t\r\n]+) (?:([^ \t\r\n]+) )?(0|[1-9][0-9]{0,8}) (0|[1-9][0-9]{0,8})\r\n").match

def _run_form(payload: bytes) -> tuple[Callable[[bytes, int], "re.Match[bytes] | None"], bytes]:
    """A pattern matching a run of ``PUB <subject> <size>\r\n<payload>\r\n`` records (no
    reply subject), and the bytes between one record's subject and the next's: ``payload``
    has no space, CR or LF, so they occur nowhere else in the run."""
    record_end = b" %d\r\n%s\r\n" % (len(payload), payload)
    return (re.compile(rb"(?:PUB [^ \t\r\n]+" + re.escape(record_end) + rb")+").match,
            record_end + b"PUB ")


#: Runs of PUBs that carry an ack's body each (empty, as nats-py acks, or ``+ACK``, as the
#: Go and C clients do) and no reply subject are found in one step: by payload, its run form.
_RUN_FORMS = {payload: _run_form(payload) for payload in (b"", b"+ACK")}
_RUN_PAYLOAD_MAX = 4

# SUB/UNSUB split at \r and \n too, never at VT or FF.
_SUB_SEPARATORS = bytes.maketrans(b"\t\r\n", b"   ")
_VT_FF = re.compile(rb"[\x0b\x0c]").search


def _parse_size(token: bytes) -> int:
    """A non-negative decimal of at most 9 digits, or -1 (nats-server's parseSize)."""
    if len(token) > 9 or not token.isdigit():
        return -1
    return int(token)


def is_pedantic_literal(subject: bytes) -> bool:
    """What a pedantic client may publish to (nats-server's IsValidLiteralSubject): no empty
    token and no token that is exactly ``*`` or ``>``; any other byte, white space included,
    is fine."""
    if not subject or subject[0] == 46 or subject[-1] == 46 or subject.partition(b"..")[1]:
        return False
    if 42 not in subject and 62 not in subject:  # "*", ">" (as integers: far cheaper)
        return True
    for tok in subject.split(b"."):
        if tok == b"*" or tok == b">":
            return False
    return True


def _split_pub(arg: bytes) -> list[bytes]:
    if arg.find(b"\t") >= 0:
        arg = arg.replace(b"\t", b" ")
    args = arg.split(b" ")
    if b"" in args:
        args = [a for a in args if a]
    return args


def _split_sub(arg: bytes) -> list[bytes]:
    if _VT_FF(arg) is None:
        return arg.split()  # Python's white space less VT and FF: exactly these separators
    return [a for a in arg.translate(_SUB_SEPARATORS).split(b" ") if a]


def _head(buf: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """Match the op name at ``pos``: ``(op, how, index)`` where index is where the argument
    starts (for :data:`_TO_NEWLINE` ops: just after the name), or ``(_HEAD_ERROR, 0, 0)``, or
    ``(_HEAD_MORE, op_or_0, keep)`` when the read ends before it is decided (``keep``: how many
    bytes of the line to keep for the next read)."""
    head = buf[pos:pos + 8].lower()
    names = _NAMES.get(head[0])
    if names is None:
        return _HEAD_ERROR, 0, 0
    for name, op, how in names:
        n = len(name)
        if head[:n] != name:
            if len(head) < n and name.startswith(head):
                return _HEAD_MORE, 0, len(head)
            continue
        i = pos + n
        if how == _TO_NEWLINE:
            return op, how, i
        if how == _NEEDS_SPACE:
            if i >= end:
                return _HEAD_MORE, op, n
            if buf[i] != 32 and buf[i] != 9:
                return _HEAD_ERROR, 0, 0
            i += 1
        while i < end and (buf[i] == 32 or buf[i] == 9):
            i += 1
        if i >= end:
            # Name (and its separator) complete; the spaces need not be kept.
            return _HEAD_MORE, op, n + (1 if how == _NEEDS_SPACE else 0)
        return op, how, i
    return _HEAD_ERROR, 0, 0


class Parser:
    """Incremental parser for one client connection.

    ``require_connect``: when true the next operation must be ``CONNECT``; any other first byte
    yields ``(OP_CLOSE, 'Authorization Violation')`` as the real server answers a client that
    skips authentication. A CONNECT that decodes clears it.

    The parser keeps the CONNECT options it has decoded (``options``), because some answers
    depend on them before the connection has acted on the CONNECT: ``headers`` (may the client
    send HPUB) and ``pedantic`` (is a publish subject checked).
    """

    __slots__ = ("_buf", "_pending", "_arg", "_arg_op", "_skip", "max_control_line",
                 "max_payload", "require_connect", "dead", "options", "headers", "pedantic",
                 "read_size", "_short_reads")

    def __init__(self, max_control_line: int = 4096, max_payload: int = 1024 * 1024,
                 require_connect: bool = False) -> None:
        # Bytes carried to the next read: the start of a control line (its name, before any
        # argument byte; bytes), or the part of a payload that has arrived (a bytearray).
        self._buf: bytes | bytearray = b""
        # While a payload is awaited: (op, subject, reply, header_size, total_size, bad_subject,
        # the client's size tokens when they are not plain decimals, else None).
        self._pending: tuple | None = None
        # While a read ended inside an argument: what nats-server has kept of it.
        self._arg: bytearray | None = None
        self._arg_op = 0
        # While PING/PONG/+OK waits for its newline: that op.
        self._skip = 0
        self.max_control_line = max_control_line
        self.max_payload = max_payload
        self.require_connect = require_connect
        self.dead = False
        self.options: dict = dict(DEFAULT_OPTIONS)
        self.headers = False
        self.pedantic = True
        self.read_size = _READ_START
        self._short_reads = 0

    # ----------------------------------------------------------------- reads

    def reads(self, data: bytes) -> tuple[bytes, ...] | list[bytes]:
        """Cut a received chunk into the reads nats-server would have made of it (its read
        buffer's size at the time), and account for them; feed each to :meth:`feed`."""
        size = self.read_size
        n = len(data)
        if n < size:
            if n < size // 2:
                self._short_reads += 1
            if size > _READ_MIN and self._short_reads > _SHORTS_TO_SHRINK:
                self.read_size = size // 2
            return (data,)
        out = []
        pos = 0
        while pos < n:
            size = self.read_size
            piece = data[pos:pos + size]
            pos += len(piece)
            out.append(piece)
            got = len(piece)
            if got >= size:
                self._short_reads = 0
                if size < _READ_MAX:
                    self.read_size = size * 2
            else:
                if got < size // 2:
                    self._short_reads += 1
                if size > _READ_MIN and self._short_reads > _SHORTS_TO_SHRINK:
                    self.read_size = size // 2
        return out

    # ----------------------------------------------------------------- parsing

    def feed(self, data: bytes) -> list[tuple]:
        """Consume one read; return the operations it completes, in order."""
        if self.dead:
            return []
        if type(data) is not bytes:
            data = bytes(data)
        ops: list[tuple] = []
        pos = 0
        buf = data
        if self._pending is not None:
            # A payload from an earlier read.
            carried = self._buf
            pending = self._pending
            size = pending[4]
            need = size + 2 - len(carried)
            if len(data) < need:
                carried += data
                self._buf = carried
                if len(carried) > size and carried[size] != 13:
                    return self._die(ops, ERR_UNKNOWN_OP)
                return ops
            carried += data[:need]
            if carried[size] != 13 or carried[size + 1] != 10:
                return self._die(ops, ERR_UNKNOWN_OP)
            self._buf = b""
            self._pending = None
            self._emit(ops, pending, carried, 0, size)
            pos = need
        elif self._arg is not None:
            nl = data.find(b"\n")
            if nl < 0:
                self._arg += data.replace(b"\r", b"")
                if len(self._arg) > self.max_control_line:
                    return self._die(ops, ERR_MAX_CONTROL_LINE)
                return ops
            arg = bytes(self._arg) + data[:nl].replace(b"\r", b"")
            self._arg = None
            pos = nl + 1
            if not self._line(self._arg_op, arg, ops):
                return ops
        elif self._skip:
            nl = data.find(b"\n")
            if nl < 0:
                return ops
            ops.append((self._skip,))
            self._skip = 0
            pos = nl + 1
        elif self._buf:
            # _buf is bytes here (a bytearray only while a payload is pending: the first branch)
            buf = self._buf + data  # type: ignore[assignment]
            self._buf = b""
        return self._run(buf, pos, ops)

    def _run(self, buf: bytes, pos: int, ops: list[tuple]) -> list[tuple]:
        end = len(buf)
        max_control_line = self.max_control_line
        max_payload = self.max_payload
        while True:
            pending = self._pending
            if pending is not None:
                size = pending[4]
                stop = pos + size
                if stop + 2 <= end:
                    if buf[stop] != 13 or buf[stop + 1] != 10:
                        return self._die(ops, ERR_UNKNOWN_OP)
                    self._pending = None
                    self._emit(ops, pending, buf, pos, stop)
                    pos = stop + 2
                    continue
                if stop < end and buf[stop] != 13:
                    return self._die(ops, ERR_UNKNOWN_OP)
                # The payload ends in a later read: nats-server reprocesses the control line now.
                if pending[0] == OP_HMSG:
                    return self._die(ops, ERR_UNKNOWN_OP)
                if pending[5]:
                    ops.append((OP_SEND_ERR, ERR_INVALID_PUB_SUBJECT))
                self._buf = bytearray(buf[pos:end])
                return ops
            if pos >= end:
                return ops

            if self.require_connect and buf[pos] != 67 and buf[pos] != 99:  # C, c
                return self._die(ops, ERR_AUTH_VIOLATION)
            m = _PLAIN_PUB(buf, pos)
            if m is not None:
                # Fast path: a plain PUB line whose payload is in this read, in one step.
                # Anything unusual takes the general path below.
                start = m.end()
                subject, reply, token = m.groups()
                stop = start + int(token)
                if (start - pos - 6 <= max_control_line and stop - start <= max_payload
                        and stop + 2 <= end and buf[stop] == 13 and buf[stop + 1] == 10
                        and (not self.pedantic or is_pedantic_literal(subject))):
                    payload = buf[start:stop]
                    ops.append((OP_PUB, subject, reply, payload))
                    line = buf[pos:start]
                    pos = stop + 2
                    if buf.startswith(line, pos):
                        # More PUBs with this very control line follow (an async publisher's
                        # burst): each is its line, then its payload, then CRLF.
                        size = stop - start
                        skip = len(line)
                        payloads = [payload]
                        while (buf.startswith(line, pos)
                               and (stop := pos + skip + size) + 2 <= end
                               and buf[stop] == 13 and buf[stop + 1] == 10):
                            payloads.append(buf[pos + skip:stop])
                            pos = stop + 2
                        if len(payloads) > 1:
                            ops[-1] = (OP_PUB_RUN, subject, reply, payloads)
                        continue
                    if (reply is None and stop - start <= _RUN_PAYLOAD_MAX and not self.pedantic
                            and (form := _RUN_FORMS.get(payload)) is not None
                            and (run := form[0](buf, pos)) is not None):
                        # More PUBs like it follow (a client's acks): taken together.
                        stop = run.end()
                        gap = form[1]
                        subjects = buf[pos + 4:stop + 4 - len(gap)].split(gap)
                        if max(map(len, subjects)) + len(token) + 1 <= max_control_line:
                            ops += [(OP_PUB, subject, None, payload) for subject in subjects]
                            pos = stop
                    continue
            elif buf[pos] == 72 and self.headers:  # "H": the same for a plain HPUB
                m = _PLAIN_HPUB(buf, pos)
                if m is not None:
                    start = m.end()
                    subject, reply, hdr_token, token = m.groups()
                    split = start + int(hdr_token)
                    stop = start + int(token)
                    if (start < split <= stop and start - pos - 7 <= max_control_line
                            and stop - start <= max_payload
                            and stop + 2 <= end and buf[stop] == 13 and buf[stop + 1] == 10
                            and (not self.pedantic or is_pedantic_literal(subject))):
                        ops.append((OP_HPUB, subject, reply, buf[start:split], buf[split:stop]))
                        pos = stop + 2
                        continue

            op, how, at = _head(buf, pos, end)
            if op == _HEAD_ERROR:
                return self._die(ops, ERR_UNKNOWN_OP)
            if op == _HEAD_MORE:
                # Keep the name (and its separator, not the run of spaces) for the next read.
                self._buf = buf[pos:pos + at]
                return ops
            if how == _TO_NEWLINE:
                nl = buf.find(b"\n", at)
                if nl < 0:
                    self._skip = op
                    return ops
                ops.append((op,))
                pos = nl + 1
                continue
            # The argument starts at `at` (whatever that byte is) and ends at the next newline.
            nl = buf.find(b"\n", at + 1)
            if nl < 0:
                dropped = buf.find(b"\r", at + 1) >= 0
                arg = buf[at:end - 1] if dropped else buf[at:end]
                if len(arg) > max_control_line:
                    return self._die(ops, ERR_MAX_CONTROL_LINE)
                self._arg = bytearray(arg)
                self._arg_op = op
                return ops
            if buf.find(b"\r", at + 1, nl) >= 0:
                arg = buf[at:nl - 1]
            else:
                arg = buf[at:nl]
            pos = nl + 1
            if not self._line(op, arg, ops):
                return ops

    def _emit(self, ops: list[tuple], pending: tuple, buf: bytes | bytearray, start: int,
              stop: int) -> None:
        op = pending[0]
        tokens = pending[6]
        if op == OP_PUB:
            payload = bytes(buf[start:stop])
            if tokens is not None:
                payload = wire.sized(payload, None, tokens[1])
            ops.append((OP_PUB, pending[1], pending[2], payload))
        elif op == OP_HPUB:
            split = start + pending[3]
            payload = bytes(buf[split:stop])
            if tokens is not None:
                payload = wire.sized(payload, tokens[0], tokens[1])
            ops.append((OP_HPUB, pending[1], pending[2], bytes(buf[start:split]), payload))
        else:
            ops.append((OP_HMSG,))

    def _line(self, op: int, arg: bytes, ops: list[tuple]) -> bool:
        """Act on a complete control line; False once the parser is dead."""
        if len(arg) > self.max_control_line:
            self._die(ops, ERR_MAX_CONTROL_LINE)
            return False
        if op == OP_PUB or op == OP_HPUB:
            if op == OP_HPUB and not self.headers:
                self._die(ops, None)
                return False
            args = _split_pub(arg)
            nargs = len(args)
            if op == OP_PUB:
                if nargs != 2 and nargs != 3:
                    self._die(ops, None)
                    return False
                hdr = 0
                size = _parse_size(args[-1])
            else:
                if nargs != 3 and nargs != 4:
                    self._die(ops, None)
                    return False
                hdr = _parse_size(args[-2])
                size = _parse_size(args[-1])
                if hdr < 0 or hdr > size:
                    size = -1
            if size < 0:
                self._die(ops, None)
                return False
            if size > self.max_payload:
                self._die(ops, ERR_MAX_PAYLOAD)
                return False
            subject = args[0]
            reply = args[1] if nargs == (3 if op == OP_PUB else 4) else None
            bad = self.pedantic and not is_pedantic_literal(subject)
            if bad:
                ops.append((OP_SEND_ERR, ERR_INVALID_PUB_SUBJECT))
            # nats-server repeats the client's size tokens in MSG lines, leading zeros included.
            size_token = args[-1]
            hdr_token = args[-2] if op == OP_HPUB else b"0"
            tokens = None
            if (size_token[0] == 48 and len(size_token) > 1) or (
                    hdr and hdr_token[0] == 48 and len(hdr_token) > 1):
                tokens = (hdr_token, size_token)
            if op == OP_HPUB and hdr == 0:
                op = OP_PUB  # an empty header block is no header: delivered as MSG
            self._pending = (op, subject, reply, hdr, size, bad, tokens)
        elif op == OP_SUB:
            args = _split_sub(arg)
            if len(args) == 2:
                ops.append((OP_SUB, args[0], None, args[1]))
            elif len(args) == 3:
                ops.append((OP_SUB, args[0], args[1], args[2]))
            else:
                self._die(ops, None)
                return False
        elif op == OP_UNSUB:
            args = _split_sub(arg)
            if len(args) == 1:
                ops.append((OP_UNSUB, args[0], None))
            elif len(args) == 2:
                # nats-server treats a max that is not a positive number as "no max".
                limit = _parse_size(args[1])
                ops.append((OP_UNSUB, args[0], limit if limit > 0 else None))
            else:
                self._die(ops, None)
                return False
        elif op == OP_CONNECT:
            options = gojson.unmarshal(arg, gojson.CLIENT_OPTS, self.options)
            if options is None:
                self._die(ops, None)
                return False
            self.options = options
            self.headers = bool(options.get("headers"))
            self.pedantic = bool(options.get("pedantic"))
            self.require_connect = False
            ops.append((OP_CONNECT, options, arg))
        elif op == OP_INFO:
            if gojson.unmarshal(arg, gojson.SERVER_INFO, {}) is None:
                self._die(ops, None)
                return False
            ops.append((OP_INFO, arg))
        elif op == OP_HMSG:
            # A client's HMSG: nats-server expects an empty message right after the line.
            self._pending = (OP_HMSG, None, None, 0, 0, False, None)
        else:  # OP_ERR
            ops.append((OP_ERR, arg.decode("utf-8", "replace")))
        return True

    def _die(self, ops: list[tuple], err: str | None) -> list[tuple]:
        self.dead = True
        self._buf = b""
        self._pending = None
        self._arg = None
        self._skip = 0
        ops.append((OP_CLOSE, err))
        return ops
