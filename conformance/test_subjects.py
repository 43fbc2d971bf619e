"""Subject validation and wildcard matching."""
from __future__ import annotations

import pytest

from conformance.helpers import RawFactory, ready, subscribe
from conformance.rawclient import OK, msg, pub, split_frames


def test_star_matches_exactly_one_token(target: str, raw: RawFactory, subject: str) -> None:
    """``foo.*`` matches ``foo.bar`` but neither ``foo`` nor ``foo.bar.baz``."""
    client = ready(raw)
    subscribe(client, f"{subject}.*", 1)
    subscribe(client, f"{subject}.*.end", 2)
    client.send(
        pub(subject, b"0") + pub(f"{subject}.one", b"1") + pub(f"{subject}.one.two", b"2")
        + pub(f"{subject}.x.end", b"3")
    )
    assert client.barrier() == msg(f"{subject}.one", 1, b"1") + msg(f"{subject}.x.end", 2, b"3")


def test_gt_matches_one_or_more_not_zero(target: str, raw: RawFactory, subject: str) -> None:
    """``foo.>`` matches ``foo.a`` and ``foo.a.b.c`` but not ``foo`` itself."""
    client = ready(raw)
    subscribe(client, f"{subject}.>", 1)
    client.send(pub(subject, b"0") + pub(f"{subject}.a", b"1") + pub(f"{subject}.a.b.c", b"2"))
    assert client.barrier() == msg(f"{subject}.a", 1, b"1") + msg(f"{subject}.a.b.c", 1, b"2")


def test_full_wildcard_alone(target: str, raw: RawFactory, subject: str) -> None:
    """``SUB > sid`` is valid and receives everything."""
    client = ready(raw, verbose=True)
    client.send(b"SUB > 1\r\n")
    client.expect(OK)
    client.send(pub(f"{subject}.x.y", b"any"))
    got = split_frames(client.barrier())
    assert OK in got and msg(f"{subject}.x.y", 1, b"any") in got, got


def test_partial_wildcard_tokens_are_literal(target: str, raw: RawFactory, subject: str) -> None:
    """Tokens that merely contain ``*`` or ``>`` (``a*b``, ``a>b``) are literals."""
    client = ready(raw)
    subscribe(client, f"{subject}.a*b", 1)
    subscribe(client, f"{subject}.a>b", 2)
    client.send(
        pub(f"{subject}.axb", b"0") + pub(f"{subject}.a*b", b"1") + pub(f"{subject}.a>b", b"2")
        + pub(f"{subject}.ab", b"3")
    )
    assert client.barrier() == msg(f"{subject}.a*b", 1, b"1") + msg(f"{subject}.a>b", 2, b"2")


def test_publish_wildcard_subject_routed_as_literal(
    target: str, raw: RawFactory, subject: str
) -> None:
    """Non-pedantic: a publish to ``x.*`` / ``x.>`` is routed (no error) and matched as a
    literal token: wildcard subscriptions get it, ``x.abc`` does not."""
    client = ready(raw, verbose=True)
    client.send(f"SUB {subject}.abc 1\r\nSUB {subject}.* 2\r\nSUB {subject}.> 3\r\n".encode())
    client.expect(OK + OK + OK)
    client.send(pub(f"{subject}.*", b"s"))
    got = split_frames(client.barrier())
    assert got[0] == OK, got
    assert sorted(got[1:]) == sorted([msg(f"{subject}.*", 2, b"s"), msg(f"{subject}.*", 3, b"s")])
    client.send(pub(f"{subject}.>", b"g"))
    got = split_frames(client.barrier())
    assert got[0] == OK, got
    assert sorted(got[1:]) == sorted([msg(f"{subject}.>", 2, b"g"), msg(f"{subject}.>", 3, b"g")])


@pytest.mark.parametrize(
    "bad",
    ["a..b", "foo.>.bar", ".a", "a.", "..", ">.a"],
    ids=["empty-token", "gt-not-last", "leading-dot", "trailing-dot", "dots", "gt-first"],
)
def test_invalid_sub_subject(target: str, raw: RawFactory, subject: str, bad: str) -> None:
    """SUB with an invalid subject gets ``-ERR 'Invalid Subject'`` (no +OK); the connection
    stays open and the sid is not used."""
    client = ready(raw, verbose=True)
    client.send(f"SUB {subject}.{bad} 1\r\n".encode() if not bad.startswith((".", ">"))
                else f"SUB {bad} 1\r\n".encode())
    assert client.barrier() == b"-ERR 'Invalid Subject'\r\n"
    # Still usable, and sid 1 is free for a valid subscription.
    client.send(f"SUB {subject}.ok 1\r\n".encode() + pub(f"{subject}.ok", b"x"))
    assert client.barrier() == OK + OK + msg(f"{subject}.ok", 1, b"x")


def test_pedantic_invalid_publish_subject(target: str, raw: RawFactory, subject: str) -> None:
    """Pedantic: a non-literal publish subject gets ``-ERR 'Invalid Publish Subject'`` then
    ``+OK``; the message is still routed and the connection stays open."""
    client = ready(raw, verbose=True, pedantic=True)
    client.send(f"SUB {subject}.* 1\r\n".encode())
    client.expect(OK)
    client.send(pub(f"{subject}.*", b"x"))
    assert client.barrier() == (
        b"-ERR 'Invalid Publish Subject'\r\n" + OK + msg(f"{subject}.*", 1, b"x")
    )


@pytest.mark.parametrize(
    "bad", ["{s}.>", "{s}..b", ".{s}", "{s}."], ids=["gt", "empty-token", "leading", "trailing"]
)
def test_pedantic_rejects_non_literal(target: str, raw: RawFactory, subject: str, bad: str) -> None:
    """Pedantic, non-verbose: each invalid publish subject gets exactly one error."""
    client = ready(raw, pedantic=True)
    client.send(pub(bad.format(s=subject), b"x"))
    assert client.barrier() == b"-ERR 'Invalid Publish Subject'\r\n"


def test_pedantic_accepts_partial_wildcard_literal(
    target: str, raw: RawFactory, subject: str
) -> None:
    """Pedantic: ``a*b`` is a valid literal publish subject."""
    client = ready(raw, pedantic=True)
    subscribe(client, f"{subject}.a*b", 1)
    client.send(pub(f"{subject}.a*b", b"x"))
    assert client.barrier() == msg(f"{subject}.a*b", 1, b"x")


def test_reserved_nrg_publish(target: str, raw: RawFactory, subject: str) -> None:
    """Publishing to ``$NRG.>`` is a permissions violation; the message is dropped and the
    connection stays open."""
    client = ready(raw)
    subscribe(client, "$NRG.>", 1)
    client.send(pub("$NRG.x", b"x"))
    assert client.barrier() == b"-ERR 'Permissions Violation for Publish to \"$NRG.x\"'\r\n"
    client.send(pub(f"{subject}.still.ok", b"y"))
    assert client.barrier() == b""


@pytest.mark.parametrize("reply", ["_R_.abc", "$JS.ACK.s.c.1.1.1.1.0"], ids=["_R_", "js-ack"])
def test_reserved_reply_prefix(target: str, raw: RawFactory, subject: str, reply: str) -> None:
    """A reply subject in the server's reserved namespaces is a permissions violation; the
    message is not delivered."""
    client = ready(raw)
    subscribe(client, subject, 1)
    client.send(pub(subject, b"x", reply=reply))
    assert client.barrier() == (
        f"-ERR 'Permissions Violation for Publish with Reply of \"{reply}\"'\r\n".encode()
    )
    client.send(pub(subject, b"ok"))
    assert client.barrier() == msg(subject, 1, b"ok")


def test_reserved_sys_queue_group(target: str, raw: RawFactory, subject: str) -> None:
    """Queue group ``_sys_`` is rejected for clients; the connection stays open."""
    client = ready(raw, verbose=True)
    client.send(f"SUB {subject} _sys_ 1\r\n".encode())
    assert client.barrier() == (
        f"-ERR 'Permissions Violation for Subscription to \"{subject}\" using queue \"_sys_\"'"
        "\r\n".encode()
    )
    client.send(pub(subject, b"x"))
    assert client.barrier() == OK
