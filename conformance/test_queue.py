"""Queue groups."""
from __future__ import annotations

from conformance.helpers import RawFactory, ready, subscribe
from conformance.rawclient import pub, split_frames

N = 100


def payloads_of(data: bytes) -> list[bytes]:
    """The payloads of the MSG frames in ``data``."""
    out = []
    for frame in split_frames(data):
        assert frame.startswith(b"MSG "), frame
        out.append(frame.split(b"\r\n", 1)[1][:-2])
    return out


def test_queue_group_exactly_one_member(target: str, raw: RawFactory, subject: str) -> None:
    """Across N messages, each goes to exactly one member of the group (members on
    different connections); over 100 messages both members are used."""
    a, b, pubc = ready(raw), ready(raw), ready(raw)
    subscribe(a, subject, 1, queue="workers")
    subscribe(b, subject, 1, queue="workers")
    pubc.send(b"".join(pub(subject, str(i).encode()) for i in range(N)))
    assert pubc.barrier() == b""
    got_a, got_b = payloads_of(a.barrier()), payloads_of(b.barrier())
    assert sorted(got_a + got_b, key=int) == [str(i).encode() for i in range(N)]
    assert got_a and got_b, f"one member got everything: a={len(got_a)} b={len(got_b)}"


def test_queue_group_members_on_one_connection(target: str, raw: RawFactory, subject: str) -> None:
    """Two members of the same group on one connection: still one copy per message."""
    client = ready(raw)
    client.send(f"SUB {subject} g 1\r\nSUB {subject} g 2\r\n".encode())
    assert client.barrier() == b""
    client.send(b"".join(pub(subject, str(i).encode()) for i in range(20)))
    frames = split_frames(client.barrier())
    assert len(frames) == 20, frames
    assert sorted(payloads_of(b"".join(frames)), key=int) == [str(i).encode() for i in range(20)]


def test_queue_groups_independent_and_plain(target: str, raw: RawFactory, subject: str) -> None:
    """Each queue group gets one copy and a plain subscriber gets its own copy."""
    plain, g1a, g1b, g2, pubc = (ready(raw) for _ in range(5))
    subscribe(plain, subject, 1)
    subscribe(g1a, subject, 1, queue="one")
    subscribe(g1b, subject, 1, queue="one")
    subscribe(g2, subject, 1, queue="two")
    pubc.send(b"".join(pub(subject, str(i).encode()) for i in range(20)))
    assert pubc.barrier() == b""
    expected = [str(i).encode() for i in range(20)]
    assert payloads_of(plain.barrier()) == expected
    assert sorted(payloads_of(g1a.barrier()) + payloads_of(g1b.barrier()), key=int) == expected
    assert payloads_of(g2.barrier()) == expected


def test_queue_unsub_member(target: str, raw: RawFactory, subject: str) -> None:
    """After one member unsubscribes, the remaining member gets every message."""
    a, b, pubc = ready(raw), ready(raw), ready(raw)
    subscribe(a, subject, 1, queue="q")
    subscribe(b, subject, 1, queue="q")
    a.send(b"UNSUB 1\r\n")
    assert a.barrier() == b""
    pubc.send(b"".join(pub(subject, str(i).encode()) for i in range(10)))
    assert pubc.barrier() == b""
    assert a.barrier() == b""
    assert payloads_of(b.barrier()) == [str(i).encode() for i in range(10)]


def test_queue_message_frame_exact(target: str, raw: RawFactory, subject: str) -> None:
    """The MSG to a queue member carries the member's sid and the reply, like any MSG."""
    client, pubc = ready(raw), ready(raw)
    subscribe(client, subject, "qsid", queue="grp")
    pubc.send(pub(subject, b"hello", reply=f"{subject}.r"))
    assert pubc.barrier() == b""
    assert client.barrier() == f"MSG {subject} qsid {subject}.r 5\r\nhello\r\n".encode()
