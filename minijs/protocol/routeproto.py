"""The route protocol between servers: bytes in, operations out, and the lines a server sends.

nats-server's servers of one cluster talk over route connections with this protocol
(``INFO``/``CONNECT`` handshake, ``RS+``/``RS-`` interest, ``RMSG``/``HMSG`` messages,
``PING``/``PONG``, ``-ERR``); minijs processes joined by routes speak it too
(:mod:`minijs.core.route_transport`).

Invariants:

* sans-IO: no sockets, clock or logging; :meth:`RouteParser.feed` takes bytes and returns
  operations;
* it never raises on bad input: a protocol error is itself an operation (:data:`OP_CLOSE`,
  with the ``-ERR`` text to send or None), always the last one, after which the parser is dead;
* a connection pinned to an account (nats-server's dedicated route, e.g. for the system
  account) omits the account from ``RS+``, ``RS-``, ``RMSG`` and ``HMSG``: the parser given
  ``account`` puts it back, the encoders given ``pinned=True`` leave it out;
* the argument grammar is nats-server's (``processRoutedMsgArgs``,
  ``processRoutedHeaderMsgArgs``, ``processRemoteSub``): arguments split at spaces, tabs and
  ``\\r``; with queue names a one-byte indicator follows the subject: ``+ reply`` or ``|``.

Operations (tuples, first item the op code):

================================================================  =============================
``(OP_INFO, json_bytes)`` ``(OP_CONNECT, json_bytes)``            decoded by the connection
``(OP_PING,)`` ``(OP_PONG,)`` ``(OP_OK,)``
``(OP_ERR, text)``                                                the peer sent ``-ERR``
``(OP_SUB, account, subject, queue, weight)``                     ``RS+``; ``queue`` None, or
                                                                  with its member count
``(OP_UNSUB, account, subject, queue)``                           ``RS-``
``(OP_MSG, account, subject, reply, queues, header, payload)``    ``RMSG`` (``header`` None)
                                                                  or ``HMSG``
``(OP_CLOSE, err_text_or_None)``                                  protocol error
================================================================  =============================
"""
from __future__ import annotations

import json
import re
from typing import Any

OP_CLOSE = 0
OP_INFO = 1
OP_CONNECT = 2
OP_PING = 3
OP_PONG = 4
OP_OK = 5
OP_ERR = 6
OP_SUB = 7
OP_UNSUB = 8
OP_MSG = 9

ERR_UNKNOWN_OP = "Unknown Protocol Operation"
ERR_MAX_CONTROL_LINE = "maximum control line exceeded"

#: A route's control lines carry INFO and CONNECT JSON (with every node's client URLs), so they
#: may be longer than a client's ``max_control_line``; this bounds what one peer can make the
#: parser buffer before it sees a line end.
MAX_ROUTE_LINE = 1 << 20

_WS = b" \t\r"
#: ``RMSG account subject [reply] size``: the hot path's line (anything else takes the slow one).
_RMSG = re.compile(rb"RMSG ([^ \t\r\n]+) ([^ \t\r\n]+)(?: ([^ \t\r\n]+))? (\d+)\r\n").match


def _split(arg: bytes) -> list[bytes]:
    return arg.replace(b"\t", b" ").replace(b"\r", b" ").split()


class RouteParser:
    """Parses what one route connection receives (see the module docstring)."""

    def __init__(self, account: bytes | None = None) -> None:
        #: The account this connection is pinned to (its name is left out of the lines).
        self.account = account
        self._buf = b""
        #: (op, account, subject, reply, queues, header size, total size) of a message whose
        #: payload is still arriving.
        self._pending: tuple | None = None
        self.dead = False
        #: The last :meth:`feed` stopped after an INFO with input left: call ``feed(b"")``.
        self.paused = False
        #: Account names seen, decoded once.
        self._names: dict[bytes, str] = {}

    def feed(self, data: bytes) -> list[tuple]:
        """The operations in ``data`` (after what was left over). It stops after an INFO
        (setting :attr:`paused` when input is left), so that the caller can pin the
        connection to the account that INFO names before the next lines are read."""
        self.paused = False
        if self.dead:
            return []
        buf = self._buf + data if self._buf else data
        ops: list[tuple] = []
        append = ops.append
        pos = 0
        end = len(buf)
        fast = self.account is None
        names = self._names
        while pos < end:
            pending = self._pending
            if pending is None and fast:
                # The hot path: a plain RMSG whose payload is in this read.
                m = _RMSG(buf, pos)
                if m is not None:
                    start = m.end()
                    stop = start + int(m.group(4))
                    if stop + 2 <= end and buf[stop:stop + 2] == b"\r\n":
                        acc = m.group(1)
                        account = names.get(acc)
                        if account is None:
                            account = names[acc] = acc.decode()
                        append((OP_MSG, account, m.group(2), m.group(3), (), None,
                                buf[start:stop]))
                        pos = stop + 2
                        continue
            if pending is not None:
                total = pending[6]
                if end - pos < total + 2:
                    break
                body = buf[pos:pos + total]
                if buf[pos + total:pos + total + 2] != b"\r\n":
                    return self._die(ops, None)
                pos += total + 2
                hsize = pending[5]
                if hsize < 0:
                    ops.append((OP_MSG, pending[1], pending[2], pending[3], pending[4], None,
                                body))
                else:
                    ops.append((OP_MSG, pending[1], pending[2], pending[3], pending[4],
                                body[:hsize], body[hsize:]))
                self._pending = None
                continue
            nl = buf.find(b"\n", pos)
            if nl < 0:
                if end - pos > MAX_ROUTE_LINE:
                    return self._die(ops, ERR_MAX_CONTROL_LINE)
                break
            line = buf[pos:nl]
            pos = nl + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            op = self._line(line)
            if op is None:
                continue
            if op[0] == OP_CLOSE:
                return self._die(ops, op[1])
            ops.append(op)
            if op[0] == OP_INFO and pos < end:
                self.paused = True
                break
        self._buf = buf[pos:]
        return ops

    def _die(self, ops: list[tuple], text: str | None) -> list[tuple]:
        self.dead = True
        self._buf = b""
        ops.append((OP_CLOSE, text))
        return ops

    def _line(self, line: bytes) -> tuple | None:
        if not line:
            return None
        name, _, arg = line.partition(b" ")
        if b"\t" in name:
            name, _, rest = name.partition(b"\t")
            arg = rest + (b" " + arg if arg else b"")
        name = name.upper()
        arg = arg.strip(_WS)
        if name in (b"RMSG", b"HMSG"):
            return self._msg(name == b"HMSG", arg)
        if name == b"RS+":
            return self._sub(arg)
        if name == b"RS-":
            return self._unsub(arg)
        if name == b"PING":
            return (OP_PING,)
        if name == b"PONG":
            return (OP_PONG,)
        if name == b"INFO":
            return (OP_INFO, arg)
        if name == b"CONNECT":
            return (OP_CONNECT, arg)
        if name == b"+OK":
            return (OP_OK,)
        if name == b"-ERR":
            text = arg
            if len(text) >= 2 and text[:1] == b"'" and text[-1:] == b"'":
                text = text[1:-1]
            return (OP_ERR, text.decode(errors="replace"))
        return (OP_CLOSE, ERR_UNKNOWN_OP)

    def _args(self, arg: bytes) -> list[bytes]:
        args = _split(arg)
        if self.account is not None:
            args.insert(0, self.account)
        return args

    def _msg(self, with_header: bool, arg: bytes) -> tuple | None:
        args = self._args(arg)
        n = len(args)
        fixed = 4 if with_header else 3  # account subject [hdr] size
        reply: bytes | None = None
        queues: tuple[bytes, ...] = ()
        if n < fixed:
            return (OP_CLOSE, None)
        if n == fixed + 1:
            reply = args[2]
        elif n > fixed + 1:
            indicator = args[2]
            if indicator == b"+":
                reply = args[3]
                queues = tuple(args[4:n - fixed + 2])
            elif indicator == b"|":
                queues = tuple(args[3:n - fixed + 2])
            else:
                return (OP_CLOSE, None)
        try:
            size = int(args[-1])
            hsize = int(args[-2]) if with_header else -1
        except ValueError:
            return (OP_CLOSE, None)
        if size < 0 or (with_header and not 0 <= hsize <= size):
            return (OP_CLOSE, None)
        self._pending = (OP_MSG, args[0].decode(), args[1], reply, queues, hsize, size)
        return None  # the payload follows

    def _sub(self, arg: bytes) -> tuple:
        args = self._args(arg)
        if len(args) == 2:
            return (OP_SUB, args[0].decode(), args[1], None, 0)
        if len(args) in (3, 4):
            weight = 1
            if len(args) == 4:
                try:
                    weight = int(args[3])
                except ValueError:
                    return (OP_CLOSE, None)
            return (OP_SUB, args[0].decode(), args[1], args[2], weight)
        return (OP_CLOSE, None)

    def _unsub(self, arg: bytes) -> tuple:
        args = self._args(arg)
        if len(args) == 2:
            return (OP_UNSUB, args[0].decode(), args[1], None)
        if len(args) == 3:
            return (OP_UNSUB, args[0].decode(), args[1], args[2])
        return (OP_CLOSE, None)


# ------------------------------------------------------------------------------ encoders

PING = b"PING\r\n"
PONG = b"PONG\r\n"


def info(fields: dict[str, Any]) -> bytes:
    """``INFO {json} \\r\\n`` (with the space nats-server writes before the line end)."""
    return b"INFO " + _json(fields) + b" \r\n"


def connect(fields: dict[str, Any]) -> bytes:
    """``CONNECT {json}\\r\\n``."""
    return b"CONNECT " + _json(fields) + b"\r\n"


def err(text: str) -> bytes:
    return b"-ERR '" + text.encode() + b"'\r\n"


def _json(fields: dict[str, Any]) -> bytes:
    text = json.dumps(fields, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def sub(account: str, subject: bytes, queue: bytes | None, weight: int = 1,
        pinned: bool = False) -> bytes:
    """``RS+ [account] subject [queue weight]``."""
    head = b"RS+ " if pinned else b"RS+ " + account.encode() + b" "
    if queue is None:
        return head + subject + b"\r\n"
    return head + subject + b" " + queue + b" %d\r\n" % weight


def unsub(account: str, subject: bytes, queue: bytes | None, pinned: bool = False) -> bytes:
    """``RS- [account] subject [queue]``."""
    head = b"RS- " if pinned else b"RS- " + account.encode() + b" "
    if queue is None:
        return head + subject + b"\r\n"
    return head + subject + b" " + queue + b"\r\n"


def msg(account: str, subject: bytes, reply: bytes | None, queues: tuple[bytes, ...] | list,
        header: bytes | None, payload: bytes, pinned: bool = False) -> bytes:
    """``RMSG`` (or ``HMSG`` with a header block) for a peer: the reply and the names of the
    queue groups whose member the peer was picked as."""
    if not queues and not header and not pinned:  # the common case, in one format
        if reply:
            return b"RMSG %b %b %b %d\r\n%b\r\n" % (_account_bytes(account), subject, reply,
                                                    len(payload), payload)
        return b"RMSG %b %b %d\r\n%b\r\n" % (_account_bytes(account), subject, len(payload),
                                             payload)
    parts = [b"HMSG" if header else b"RMSG"]
    if not pinned:
        parts.append(account.encode())
    parts.append(subject)
    if queues:
        if reply:
            parts += [b"+", reply]
        else:
            parts.append(b"|")
        parts += list(queues)
    elif reply:
        parts.append(reply)
    if header:
        parts.append(b"%d" % len(header))
        parts.append(b"%d" % (len(header) + len(payload)))
        return b" ".join(parts) + b"\r\n" + header + payload + b"\r\n"
    parts.append(b"%d" % len(payload))
    return b" ".join(parts) + b"\r\n" + payload + b"\r\n"


_ACCOUNT_BYTES: dict[str, bytes] = {}


def _account_bytes(account: str) -> bytes:
    out = _ACCOUNT_BYTES.get(account)
    if out is None:
        out = account.encode()
        if len(_ACCOUNT_BYTES) < 4096:
            _ACCOUNT_BYTES[account] = out
    return out


#: A JetStream ack reply (``$JS.ACK.<stream>.<consumer>...``) routed with a delivery: the
#: message's own subject rides after an ``@`` (nats-server's ``jsAckDeliverIdx``), because the
#: routed subject is the deliver subject the peer matches its subscribers on.
_JS_ACK = b"$JS.ACK."


def ack_deliver_index(reply: bytes) -> int:
    """Where the ``@<subject>`` of a routed JetStream delivery starts in ``reply`` (-1: none):
    an ``@`` after at least eight dots of a ``$JS.ACK.`` reply."""
    if not reply.startswith(_JS_ACK):
        return -1
    dots = 0
    for i, b in enumerate(reply):
        if b == 0x2E:
            dots += 1
        elif b == 0x40 and dots >= 8:
            return i
    return -1


def is_js_ack(reply: bytes | None) -> bool:
    return bool(reply) and reply.startswith(_JS_ACK)  # type: ignore[union-attr]
