"""The client protocol parser: bytes in, operations out, no sockets.

Feed it whatever chunks the transport delivers; it returns the complete operations those bytes
finish, keeping any partial line or payload for the next call. It never raises on bad input:
a protocol error is itself an operation (:data:`OP_CLOSE`) carrying the ``-ERR`` text the real
server sends (or ``None`` where nats-server closes silently), after which the parser is dead.

Operations are plain tuples, first item the op code, because they are made once per message on
the hot path:

=================  ==========================================================
``(OP_PUB, subject, reply, payload)``          ``reply`` is ``None`` when absent
``(OP_HPUB, subject, reply, header, payload)``  ``header`` is the raw block
``(OP_SUB, subject, queue, sid)``               ``queue`` is ``None`` when absent
``(OP_UNSUB, sid, max)``                        ``max`` is ``None`` when absent
``(OP_CONNECT, json_bytes)``
``(OP_PING,)`` ``(OP_PONG,)`` ``(OP_INFO, bytes)`` ``(OP_OK,)``
``(OP_ERR, text)``                              a client sent ``-ERR``
``(OP_CLOSE, err_text_or_None)``                protocol error: send ``-ERR`` if text, close
=================  ==========================================================

Subjects, replies, queues and sids are ``bytes``: they are echoed on the wire as they came.

The rules follow nats-server's parser: op names are case-insensitive, arguments are separated by
spaces or tabs, a control line ends at ``\\n`` with an optional ``\\r``, a payload must be
followed by exactly ``\\r\\n``, an op whose name does not match is ``Unknown Protocol
Operation``, an op with the wrong arguments closes the connection without an error, and the size
checks (control line, payload) come from the control line alone, before any payload is read.
"""
from __future__ import annotations

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

ERR_UNKNOWN_OP = "Unknown Protocol Operation"
ERR_MAX_CONTROL_LINE = "maximum control line exceeded"
ERR_MAX_PAYLOAD = "Maximum Payload Violation"
ERR_AUTH_VIOLATION = "Authorization Violation"

_WS = b" \t"

# Op names a client may send, lower-cased, with whether arguments must follow after a space.
# PING, PONG and +OK tolerate anything up to the newline, as nats-server does.
_PREFIX_OPS = {
    ord("p"): (b"pub", b"ping", b"pong"),
    ord("h"): (b"hpub",),
    ord("s"): (b"sub",),
    ord("u"): (b"unsub",),
    ord("c"): (b"connect",),
    ord("i"): (b"info",),
    ord("+"): (b"+ok",),
    ord("-"): (b"-err",),
}


def _parse_size(token: bytes) -> int:
    """A non-negative decimal, or -1 when it is not one (nats-server's parseSize)."""
    if not token or len(token) > 9 or not token.isdigit():
        return -1
    return int(token)


class Parser:
    """Incremental parser for one client connection.

    ``require_connect``: when true the next operation must be ``CONNECT``; any other first byte
    yields ``(OP_CLOSE, 'Authorization Violation')`` as the real server answers a client that
    skips authentication. The connection clears it once a CONNECT has been accepted.
    """

    __slots__ = ("_buf", "_pending", "max_control_line", "max_payload", "require_connect", "dead")

    def __init__(self, max_control_line: int = 4096, max_payload: int = 1024 * 1024,
                 require_connect: bool = False) -> None:
        self._buf = bytearray()
        # While a payload is awaited: (op, subject, reply, header_size, total_size).
        self._pending: tuple | None = None
        self.max_control_line = max_control_line
        self.max_payload = max_payload
        self.require_connect = require_connect
        self.dead = False

    def feed(self, data: bytes) -> list[tuple]:
        """Consume ``data``; return the operations it completes, in order."""
        if self.dead:
            return []
        buf: bytes | bytearray
        if not self._buf and type(data) is bytes:
            buf = data  # nothing carried over: read the chunk itself, slices are bytes at once
        else:
            buf = self._buf
            buf += data
        ops: list[tuple] = []
        pos = 0
        end = len(buf)
        while pos < end:
            pending = self._pending
            if pending is not None:
                size = pending[4]
                stop = pos + size
                if end < stop + 2:
                    # A byte already present where the terminator must be, wrong: fail early.
                    if end > stop and buf[stop] != 13:
                        return self._die(ops, ERR_UNKNOWN_OP)
                    break
                if buf[stop] != 13 or buf[stop + 1] != 10:
                    return self._die(ops, ERR_UNKNOWN_OP)
                if pending[0] == OP_PUB:
                    ops.append((OP_PUB, pending[1], pending[2], bytes(buf[pos:stop])))
                else:
                    split = pos + pending[3]
                    ops.append((OP_HPUB, pending[1], pending[2], bytes(buf[pos:split]),
                                bytes(buf[split:stop])))
                self._pending = None
                pos = stop + 2
                continue

            if self.require_connect and (buf[pos] | 0x20) != 0x63:  # 'c'
                return self._die(ops, ERR_AUTH_VIOLATION)
            nl = buf.find(b"\n", pos)
            if nl < 0:
                err = self._check_partial(buf, pos, end)
                if err:
                    return self._die(ops, err)
                break
            line_end = nl - 1 if nl > pos and buf[nl - 1] == 13 else nl
            if buf.startswith(b"PUB ", pos):
                # Fast path: a well-formed PUB whose payload has arrived, in one step. Anything
                # unusual (bad arguments, limits, a payload still to come) takes the general
                # path below, which answers it exactly as before.
                args = bytes(buf[pos + 4:line_end]).split()
                nargs = len(args)
                if (nargs == 2 or nargs == 3) and line_end - pos - 4 <= self.max_control_line:
                    token = args[-1]
                    if len(token) <= 9 and token.isdigit():
                        start = nl + 1
                        stop = start + int(token)
                        if (stop - start <= self.max_payload and stop + 2 <= end
                                and buf[stop] == 13 and buf[stop + 1] == 10):
                            ops.append((OP_PUB, args[0], args[1] if nargs == 3 else None,
                                        bytes(buf[start:stop])))
                            pos = stop + 2
                            continue
            line = bytes(buf[pos:line_end])
            pos = nl + 1
            op = self._parse_line(line)
            if op is None:
                continue
            if op[0] == OP_CLOSE:
                return self._die(ops, op[1])
            ops.append(op)
            if op[0] == OP_CONNECT:
                # Auth gating is re-armed by the connection if CONNECT is rejected.
                self.require_connect = False
        if buf is self._buf:
            if pos:
                del buf[:pos]
        elif pos < end:
            self._buf = bytearray(buf[pos:])
        return ops

    def _die(self, ops: list[tuple], err: str | None) -> list[tuple]:
        self.dead = True
        self._buf = bytearray()
        self._pending = None
        ops.append((OP_CLOSE, err))
        return ops

    def _check_partial(self, buf: bytearray, pos: int, end: int) -> str | None:
        """Errors nats-server reports before a control line is complete."""
        # An op name that cannot become a valid op fails at its first wrong byte.
        head = bytes(buf[pos:min(end, pos + 8)]).lower()
        err = _name_error(head, partial=True)
        if err:
            return err
        if end - pos > self.max_control_line + 8:
            return ERR_MAX_CONTROL_LINE
        return None

    def _parse_line(self, line: bytes) -> tuple | None:
        if not line:
            return (OP_CLOSE, ERR_UNKNOWN_OP)
        first = line[0] | 0x20
        if first == 0x70 and len(line) > 3 and (line[1] | 0x20) == 0x75:  # "pu": PUB fast path
            return self._parse_pub(line)
        lower = line[:8].lower()
        err = _name_error(lower, partial=False)
        if err:
            return (OP_CLOSE, err)
        if lower.startswith(b"ping"):
            return (OP_PING,)
        if lower.startswith(b"pong"):
            return (OP_PONG,)
        if lower.startswith(b"+ok"):
            return (OP_OK,)
        if first == 0x68:  # hpub
            return self._parse_hpub(line)
        if first == 0x73:  # sub
            return self._parse_sub(line[4:])
        if first == 0x75:  # unsub
            return self._parse_unsub(line[6:])
        if first == 0x63:  # connect
            return (OP_CONNECT, line[7:].strip(_WS))
        if first == 0x69:  # info
            return (OP_INFO, line[4:].strip(_WS))
        if first == 0x2D:  # -err
            return (OP_ERR, line[4:].strip(_WS).decode("utf-8", "replace"))
        return (OP_CLOSE, ERR_UNKNOWN_OP)

    def _arg_too_long(self, arg: bytes) -> bool:
        return len(arg) > self.max_control_line

    def _parse_pub(self, line: bytes) -> tuple | None:
        if len(line) < 4 or (line[2] | 0x20) != 0x62 or line[3] not in _WS:
            return (OP_CLOSE, ERR_UNKNOWN_OP)
        arg = line[4:]
        if self._arg_too_long(arg):
            return (OP_CLOSE, ERR_MAX_CONTROL_LINE)
        args = arg.split()
        if len(args) == 2:
            subject, reply, size_token = args[0], None, args[1]
        elif len(args) == 3:
            subject, reply, size_token = args
        else:
            return (OP_CLOSE, None)
        size = _parse_size(size_token)
        if size < 0:
            return (OP_CLOSE, None)
        if size > self.max_payload:
            return (OP_CLOSE, ERR_MAX_PAYLOAD)
        self._pending = (OP_PUB, subject, reply, 0, size)
        return None

    def _parse_hpub(self, line: bytes) -> tuple | None:
        arg = line[5:]
        if self._arg_too_long(arg):
            return (OP_CLOSE, ERR_MAX_CONTROL_LINE)
        args = arg.split()
        if len(args) == 3:
            subject, reply, hdr_token, size_token = args[0], None, args[1], args[2]
        elif len(args) == 4:
            subject, reply, hdr_token, size_token = args
        else:
            return (OP_CLOSE, None)
        hdr = _parse_size(hdr_token)
        size = _parse_size(size_token)
        if hdr < 0 or size < 0 or hdr > size:
            return (OP_CLOSE, None)
        if size > self.max_payload:
            return (OP_CLOSE, ERR_MAX_PAYLOAD)
        self._pending = (OP_HPUB, subject, reply, hdr, size)
        return None

    def _parse_sub(self, arg: bytes) -> tuple:
        if self._arg_too_long(arg):
            return (OP_CLOSE, ERR_MAX_CONTROL_LINE)
        args = arg.split()
        if len(args) == 2:
            return (OP_SUB, args[0], None, args[1])
        if len(args) == 3:
            return (OP_SUB, args[0], args[1], args[2])
        return (OP_CLOSE, None)

    def _parse_unsub(self, arg: bytes) -> tuple:
        if self._arg_too_long(arg):
            return (OP_CLOSE, ERR_MAX_CONTROL_LINE)
        args = arg.split()
        if len(args) == 1:
            return (OP_UNSUB, args[0], None)
        if len(args) == 2:
            # nats-server treats a max that is not a positive number as "no max".
            limit = _parse_size(args[1])
            return (OP_UNSUB, args[0], limit if limit > 0 else None)
        return (OP_CLOSE, None)


def _name_error(lower: bytes, partial: bool) -> str | None:
    """``Unknown Protocol Operation`` when ``lower`` cannot start a client op.

    ``lower`` is the lower-cased start of a line (complete or not). An op that takes arguments
    must be followed by a space or tab; PING/PONG/+OK may be followed by anything.
    """
    if not lower:
        return None if partial else ERR_UNKNOWN_OP
    names = _PREFIX_OPS.get(lower[0])
    if names is None:
        return ERR_UNKNOWN_OP
    for name in names:
        n = len(name)
        head = lower[:n]
        if len(head) < n:
            # The line (or what has arrived of it) is shorter than the name.
            if name.startswith(head) and partial:
                return None
            continue
        if head != name:
            continue
        if name in (b"ping", b"pong", b"+ok"):
            return None
        if len(lower) == n:
            # "connect" may stand alone; the others need an argument separator.
            return None if (partial or name == b"connect") else ERR_UNKNOWN_OP
        if lower[n] in _WS:
            return None
        return ERR_UNKNOWN_OP
    return ERR_UNKNOWN_OP
