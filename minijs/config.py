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
#: The feature flags nats-server 2.15.1 reports by default (``ServerInfo.feature_flags`` of its
#: system messages, e.g. message trace events), and its capability flags with JetStream on
#: (JetStream enabled | binary stream snapshot | account NRG).
FEATURE_FLAGS = {"js_ack_fc_v2": False, "js_api_reply_v2": False, "js_raft_delete_range": True,
                 "js_snapshot_sources": False}
SERVER_FLAGS_JETSTREAM = 7

DEFAULT_PORT = 4222
RANDOM_PORT = -1


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
        return bool(self.token or self.user)

    def with_overrides(self, **overrides: Any) -> "ServerConfig":
        """A copy with keyword overrides; unknown names are a TypeError, not silently kept."""
        known = {f.name for f in fields(self)}
        unknown = set(overrides) - known
        if unknown:
            raise TypeError(f"unknown server option(s): {', '.join(sorted(unknown))}")
        return replace(self, **overrides)
