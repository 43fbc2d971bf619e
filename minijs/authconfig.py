"""The settings of a configuration's ``authorization`` and ``accounts`` blocks: users and
their permissions, accounts' exports, imports, subject mappings and connection limits.

A floor below :mod:`minijs.config`, which re-exports these names (``from minijs.config import
User`` works) and loads this module only when one is first asked for: a server configured
without users or accounts (the ``minijs -js`` of a test harness) does not pay for making these
seven dataclasses (about 3 ms of its start-up).
"""
from __future__ import annotations

from dataclasses import dataclass

#: nats-server's defaults for ``allow_responses: true``: one response, within two minutes.
DEFAULT_RESPONSE_MAX_MSGS = 1
DEFAULT_RESPONSE_EXPIRES = 120.0
#: nats-server's default response threshold of a service export (two minutes).
DEFAULT_RESPONSE_THRESHOLD = 120.0
#: ``minijs.config.GLOBAL_ACCOUNT`` (that module sits above this one), the account of a user
#: configured outside any account.
_GLOBAL_ACCOUNT = "$G"
#: The connection types nats-server knows (``allowed_connection_types``, of a user in a config
#: file or in its JWT).
CONNECTION_TYPES = ("STANDARD", "WEBSOCKET", "LEAFNODE", "LEAFNODE_WS", "MQTT", "MQTT_WS",
                    "IN_PROCESS")


@dataclass(frozen=True)
class ResponsePermission:
    """``allow_responses``: publish to a reply subject received, ``max_msgs`` times (< 0: no
    limit) within ``expires`` seconds (<= 0: no limit)."""

    max_msgs: int = DEFAULT_RESPONSE_MAX_MSGS
    expires: float = DEFAULT_RESPONSE_EXPIRES


@dataclass(frozen=True)
class Permissions:
    """A user's publish/subscribe permissions, as nats-server's ``permissions`` block.

    ``None`` means "no list" (everything allowed by that list); an empty tuple of allows means
    nothing allowed. Subscribe entries may carry a queue group: ``"subject queue"``.
    """

    pub_allow: tuple[str, ...] | None = None
    pub_deny: tuple[str, ...] | None = None
    sub_allow: tuple[str, ...] | None = None
    sub_deny: tuple[str, ...] | None = None
    responses: ResponsePermission | None = None


@dataclass(frozen=True)
class User:
    """One entry of ``users = [...]`` (in ``authorization`` or in an account).

    An nkey user (``nkey``) is named by its public key (``U...``) in ``user`` and has no
    password: it proves itself by signing the INFO nonce."""

    user: str
    password: str = ""  # plain text, or a bcrypt hash ("$2a$...")
    permissions: Permissions | None = None
    account: str = _GLOBAL_ACCOUNT
    nkey: bool = False
    #: ``allowed_connection_types`` (upper case: STANDARD, WEBSOCKET, ...); None: any.
    connection_types: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Export:
    """One entry of an account's ``exports``: a stream or a service other accounts may import.

    ``accounts`` None: public; ``response_type`` ``"Singleton"``, ``"Stream"`` or ``"Chunked"``
    (services only), ``response_threshold`` in seconds."""

    account: str
    subject: str
    service: bool
    accounts: tuple[str, ...] | None = None
    response_type: str = "Singleton"
    response_threshold: float = DEFAULT_RESPONSE_THRESHOLD
    #: ``account_token_position``: the 1-based token of an import's subject that must be the
    #: importing account's name (0: none).
    token_position: int = 0
    allow_trace: bool = False  # a service: traced requests stay traced in this account


@dataclass(frozen=True)
class Import:
    """One entry of an account's ``imports``: ``subject`` of account ``source`` appears in
    ``account`` as ``to`` (a service: requests to ``to`` go to ``subject``; a stream:
    messages on ``subject`` arrive as ``to``, or as ``prefix.subject``)."""

    account: str
    service: bool
    source: str
    subject: str
    to: str = ""
    prefix: str = ""
    share: bool = False  # a service import: requests carry the requester's details
    allow_trace: bool = False  # a stream import: traced messages stay traced here


@dataclass(frozen=True)
class Mapping:
    """One subject mapping of an account (``mappings``): ``source`` becomes one of
    ``dests`` (subject, weight 0..100), picked by weight."""

    account: str
    source: str
    dests: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class AccountConnLimits:
    """An account's ``limits { max_connections max_subscriptions max_payload max_leafnodes }``
    (nats-server's account limits of a config file); -1 is "no limit"."""

    max_connections: int = -1
    max_subscriptions: int = -1
    max_payload: int = -1
    max_leafnodes: int = -1
