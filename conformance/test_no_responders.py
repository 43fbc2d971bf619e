"""No-responders 503 status messages."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.helpers import RawFactory, ready, subscribe
from conformance.rawclient import msg, pub


def no_responders(reply: str, sid: int | str, subject: str) -> bytes:
    """The exact 503 status message the server synthesises."""
    header = f"NATS/1.0 503\r\nNats-Subject: {subject}\r\n\r\n".encode()
    assert len(header) == 32 + len(subject.encode())
    return f"HMSG {reply} {sid} {len(header)} {len(header)}\r\n".encode() + header + b"\r\n"


def test_no_responders_exact_bytes(target: str, raw: RawFactory, subject: str) -> None:
    """A request nobody receives yields the 503 HMSG on the requester's reply subscription."""
    client = ready(raw, headers=True, no_responders=True)
    inbox = f"_INBOX.{subject}"
    subscribe(client, inbox, 9)
    client.send(pub(f"{subject}.nobody.here", b"", reply=inbox))
    assert client.barrier() == no_responders(inbox, 9, f"{subject}.nobody.here")


def test_no_responders_wildcard_inbox(target: str, raw: RawFactory, subject: str) -> None:
    """The 503 is delivered through a wildcard reply subscription (``_INBOX.y.*``)."""
    client = ready(raw, headers=True, no_responders=True)
    subscribe(client, f"_INBOX.{subject}.*", "w")
    reply = f"_INBOX.{subject}.abc"
    client.send(pub(f"{subject}.req", b"question", reply=reply))
    assert client.barrier() == no_responders(reply, "w", f"{subject}.req")


def test_no_responders_for_hpub(target: str, raw: RawFactory, subject: str) -> None:
    """A request published with headers also gets the 503."""
    client = ready(raw, headers=True, no_responders=True)
    inbox = f"_INBOX.{subject}"
    subscribe(client, inbox, 1)
    header = b"NATS/1.0\r\nA: b\r\n\r\n"
    client.send(
        f"HPUB {subject}.svc {inbox} {len(header)} {len(header) + 1}\r\n".encode()
        + header + b"x\r\n"
    )
    assert client.barrier() == no_responders(inbox, 1, f"{subject}.svc")


@pytest.mark.parametrize(
    "options",
    [{"headers": True, "no_responders": False}, {"headers": False, "no_responders": False}],
    ids=["not-requested", "headers-false"],
)
def test_no_503_unless_requested(
    target: str, raw: RawFactory, subject: str, options: dict[str, Any]
) -> None:
    """Without ``no_responders: true`` there is no 503, just silence."""
    client = ready(raw, **options)
    inbox = f"_INBOX.{subject}"
    subscribe(client, inbox, 1)
    client.send(pub(f"{subject}.nobody", b"", reply=inbox))
    assert client.barrier() == b""


def test_no_503_when_someone_receives(target: str, raw: RawFactory, subject: str) -> None:
    """If any subscription (here a queue member on another connection) gets the request,
    there is no 503."""
    requester, service = ready(raw), ready(raw)
    inbox = f"_INBOX.{subject}"
    subscribe(requester, inbox, 1)
    subscribe(service, f"{subject}.svc", 5, queue="svc")
    requester.send(pub(f"{subject}.svc", b"q", reply=inbox))
    assert requester.barrier() == b""
    assert service.barrier() == msg(f"{subject}.svc", 5, b"q", reply=inbox)


def test_no_503_without_reply_interest(target: str, raw: RawFactory, subject: str) -> None:
    """No 503 unless the requester itself has a subscription matching the reply subject."""
    client = ready(raw)
    client.send(pub(f"{subject}.nobody", b"", reply=f"_INBOX.{subject}"))
    assert client.barrier() == b""


def test_no_503_without_reply_subject(target: str, raw: RawFactory, subject: str) -> None:
    """A plain publish (no reply) to nobody yields nothing."""
    client = ready(raw)
    subscribe(client, f"_INBOX.{subject}.>", 1)
    client.send(pub(f"{subject}.nobody", b"x"))
    assert client.barrier() == b""
