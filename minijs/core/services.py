"""Requests nats-server answers in every account on its own: ``$SYS.REQ.USER.INFO``.

nats-server imports its user-info service into every account, so any client may ask who it
is logged in as (nats.js's ``nc.context()``). The reply is a system message: the ``server``
object every system message carries, then ``data``:

* ``user``: the user name (``[REDACTED]`` for a token; ``""`` with no authentication;
  ``no_auth_user``'s name for a client that logged in as it),
* ``account`` and ``account_name``: the client's account,
* ``permissions``, only for a user that has some (its own, or ``default_permissions``):
  ``publish`` and ``subscribe`` always, each with its non-empty ``allow``/``deny`` lists, and
  ``responses`` (``max``, ``ttl`` in ns) with ``allow_responses``. nats-server keeps the lists
  in sets, so their order is not the configured one there; minijs keeps the configured order.

Invariants:

* One internal subscription per account sublist (:func:`install`), on the exact subject; a
  request without a reply subject is ignored, as there.
* The answer goes back in the requester's account, JSON as Go encodes it (``<``, ``>`` and
  ``&`` escaped).
"""
from __future__ import annotations

from typing import Any

from minijs.core.sublist import Subscription

USER_INFO = b"$SYS.REQ.USER.INFO"
#: What nats-server shows for a client that authenticated with a token.
REDACTED = "[REDACTED]"


def install(router: Any, sublist: Any) -> None:
    """Answer ``$SYS.REQ.USER.INFO`` in the account whose subscription index is ``sublist``."""

    def on_user_info(sub: Subscription, subject: bytes, reply: bytes | None,
                     header: bytes | None, payload: bytes, origin: Any) -> None:
        if not reply or origin is None:
            return
        from minijs.core.msgtrace import go_json  # (its first use loads it)

        body = go_json({"server": router.trace_server_info(),
                                 "data": user_info(origin, router.config)})
        router.publish(reply, None, None, body, sublist=sublist)

    sublist.insert(Subscription.internal(USER_INFO, on_user_info))


def user_info(conn: Any, config: Any) -> dict[str, Any]:
    """The ``data`` of a user-info reply for the client ``conn``."""
    if conn.user is not None:
        user = conn.user
    elif config.token:
        user = REDACTED
    else:
        user = ""
    out: dict[str, Any] = {"user": user, "account": conn.account,
                           "account_name": conn.account}
    perms = conn.permissions
    if perms is not None:
        out["permissions"] = permissions_json(perms)
    return out


def permissions_json(perms: Any) -> dict[str, Any]:
    """nats-server's ``Permissions`` as JSON: ``publish`` and ``subscribe`` objects, then
    ``responses`` when set."""
    out: dict[str, Any] = {"publish": _lists(perms.pub_allow, perms.pub_deny),
                           "subscribe": _lists(perms.sub_allow, perms.sub_deny)}
    if perms.responses is not None:
        out["responses"] = {"max": perms.responses.max_msgs,
                            "ttl": round(perms.responses.expires * 1_000_000_000)}
    return out


def _lists(allow: tuple[str, ...] | None, deny: tuple[str, ...] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if allow:
        out["allow"] = list(allow)
    if deny:
        out["deny"] = list(deny)
    return out
