"""Server configuration: one dataclass shared by the in-process API, the CLI and config files."""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

#: The nats-server release whose externally visible behaviour minijs matches. Clients switch
#: features on the advertised version (nats-py needs >= 2.9 for the named consumer API).
NATS_SERVER_VERSION = "2.15.1"
GO_VERSION = "go1.27.2"
GIT_COMMIT = "b2fd3ef"
#: JetStream API level reported by nats-server 2.15.x.
API_LEVEL = 5

DEFAULT_PORT = 4222
RANDOM_PORT = -1

#: The account of clients when no accounts are configured (and of users outside any account).
GLOBAL_ACCOUNT = "$G"
#: nats-server's defaults for ``allow_responses: true``: one response, within two minutes.
DEFAULT_RESPONSE_MAX_MSGS = 1
DEFAULT_RESPONSE_EXPIRES = 120.0


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
    """One entry of ``users = [...]`` (in ``authorization`` or in an account)."""

    user: str
    password: str = ""  # plain text, or a bcrypt hash ("$2a$...")
    permissions: Permissions | None = None
    account: str = GLOBAL_ACCOUNT


@dataclass
class ServerConfig:
    """Everything that shapes a server. Defaults are nats-server's unless noted."""

    host: str = "127.0.0.1"  # minijs extension: the in-process default binds loopback only
    port: int = DEFAULT_PORT  # 0 or -1: a free port chosen by the OS
    server_name: str | None = None  # defaults to the server id, as in nats-server
    jetstream: bool = False
    store_dir: str | None = None  # None: memory only; file streams live in a temp dir
    max_memory_store: int = -1
    max_file_store: int = -1
    http_host: str | None = None  # monitoring host; defaults to `host`
    http_port: int | None = None  # None: no monitoring endpoint
    user: str | None = None
    password: str | None = None
    token: str | None = None
    users: tuple[User, ...] = ()  # authorization/account users (with permissions)
    accounts: tuple[str, ...] = ()  # configured account names (besides $G)
    no_auth_user: str | None = None  # the user a client without credentials becomes
    system_account: str | None = None
    auth_timeout: float = 2.0
    max_payload: int = 1024 * 1024
    max_control_line: int = 4096
    max_pending: int = 64 * 1024 * 1024  # outbound bytes before a slow consumer is cut
    write_deadline: float = 10.0
    ping_interval: float = 120.0
    ping_max: int = 2
    max_connections: int = 65536
    max_subscriptions: int = 0  # 0 = unlimited
    debug: bool = False
    trace: bool = False
    log_file: str | None = None
    pid_file: str | None = None
    ports_file_dir: str | None = None  # write <exe>_<pid>.ports there, as nats-server does
    control: bool = False  # minijs extension: serve the $MINIJS.> control plane
    control_user: str | None = None  # with auth configured, the only user the plane answers
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def auth_required(self) -> bool:
        return bool(self.token or self.user or self.users)

    def with_overrides(self, **overrides: Any) -> "ServerConfig":
        """A copy with keyword overrides; unknown names are a TypeError, not silently kept."""
        known = {f.name for f in fields(self)}
        unknown = set(overrides) - known
        if unknown:
            raise TypeError(f"unknown server option(s): {', '.join(sorted(unknown))}")
        return replace(self, **overrides)
