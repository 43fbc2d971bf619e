"""The snappy framing format (https://github.com/google/snappy/blob/main/framing_format.txt),
written with uncompressed chunks only.

nats-server compresses some payloads as snappy/s2 streams (``s2.WriterSnappyCompat``): message
trace events asked for with ``Accept-Encoding: snappy``, and stream snapshots, which the
clients' backup tools read through an s2 reader. Python's standard library has no snappy
compressor, so minijs writes the same framing with uncompressed chunks (type ``0x01``, each with
its masked CRC-32C), which every snappy and s2 stream reader accepts, and reads back only what it
wrote.
"""
from __future__ import annotations

#: The stream identifier chunk every framed stream starts with.
STREAM_ID = b"\xff\x06\x00\x00sNaPpY"
_MAX_CHUNK = 65536
_UNCOMPRESSED = 0x01


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _CRC32C
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(data: bytes) -> bytes:
    """``data`` as a framed stream of uncompressed chunks (at most 64 KiB each)."""
    out = bytearray(STREAM_ID)
    for i in range(0, len(data), _MAX_CHUNK):
        piece = data[i:i + _MAX_CHUNK]
        n = len(piece) + 4
        out += bytes((_UNCOMPRESSED, n & 0xFF, (n >> 8) & 0xFF, n >> 16))
        out += masked_crc32c(piece).to_bytes(4, "little")
        out += piece
    return bytes(out)


def first_payload_offset() -> int:
    """Where the data of the first chunk starts in a stream :func:`frame` wrote."""
    return len(STREAM_ID) + 8


def unframe(data: bytes) -> bytes:
    """The data of a framed stream of uncompressed chunks (what :func:`frame` writes); raises
    ``ValueError`` for anything else (a compressed chunk, a bad checksum, a truncated stream)."""
    if not data.startswith(STREAM_ID):
        raise ValueError("not a snappy stream")
    out = bytearray()
    i = len(STREAM_ID)
    while i < len(data):
        if i + 4 > len(data):
            raise ValueError("truncated snappy stream")
        kind = data[i]
        n = int.from_bytes(data[i + 1:i + 4], "little")
        body = data[i + 4:i + 4 + n]
        if len(body) != n:
            raise ValueError("truncated snappy stream")
        i += 4 + n
        if kind == _UNCOMPRESSED:
            piece = body[4:]
            if int.from_bytes(body[:4], "little") != masked_crc32c(piece):
                raise ValueError("snappy chunk checksum mismatch")
            out += piece
        elif kind == 0xFF or 0x80 <= kind <= 0xFE:
            continue  # stream identifier, padding, skippable chunks
        else:
            raise ValueError("compressed snappy chunk")
    return bytes(out)
