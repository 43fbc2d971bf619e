"""Server configuration: one dataclass shared by the in-process API, the CLI and config files."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar, dataclass_transform

from minijs import config_methods
from minijs.configerror import ConfigError as ConfigError  # (raised by the config floor)

if TYPE_CHECKING:
    from minijs.authconfig import AccountConnLimits, Export, Import, Mapping, User
    from minijs.tlsconfig import TlsOptions
    from minijs.wsconfig import WebsocketOptions
    from minijs.routeconfig import RouteOptions

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

#: The account of clients when no accounts are configured (and of users outside any account).
GLOBAL_ACCOUNT = "$G"


#: The types (and defaults) of the ``authorization`` and ``accounts`` blocks live in
#: :mod:`minijs.authconfig`, a floor below this one that is loaded when first asked for:
#: ``from minijs.config import User`` works, and a server configured without users or accounts
#: never makes these seven dataclasses (about 3 ms of a spawned ``minijs -js``).
_AUTH_TYPES = frozenset({"AccountConnLimits", "Export", "Import", "Mapping", "Permissions",
                         "ResponsePermission", "User", "DEFAULT_RESPONSE_MAX_MSGS",
                         "DEFAULT_RESPONSE_EXPIRES", "DEFAULT_RESPONSE_THRESHOLD"})


def __getattr__(name: str) -> Any:
    if name not in _AUTH_TYPES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from minijs import authconfig

    value = getattr(authconfig, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | _AUTH_TYPES)


_T = TypeVar("_T")


class _FactoryField:
    """What :func:`field` declares: a field whose default each instance makes anew."""

    __slots__ = ("default_factory",)

    def __init__(self, default_factory: Callable[[], Any]) -> None:
        self.default_factory = default_factory


def field(*, default_factory: Callable[[], _T]) -> _T:
    """A field whose default ``default_factory()`` makes for each instance, as
    ``dataclasses.field(default_factory=...)`` declares one."""
    return _FactoryField(default_factory)  # type: ignore[return-value]


def _declared_fields(cls: type) -> list[tuple[str, Any, str, Any]]:
    """The fields a class body declares, as ``@dataclass`` reads them: each annotated name in
    order, with its annotation and ``"required"``, ``"default"`` (and the value) or
    ``"factory"`` (and the factory)."""
    out: list[tuple[str, Any, str, Any]] = []
    absent = object()
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        value = cls.__dict__.get(name, absent)
        if value is absent:
            out.append((name, annotation, "required", None))
        elif isinstance(value, _FactoryField):
            out.append((name, annotation, "factory", value.default_factory))
        else:
            out.append((name, annotation, "default", value))
    return out


class _DataclassInfo:
    """``__dataclass_fields__`` or ``__dataclass_params__`` of a class made by
    :func:`_dataclass`, until it is first read (by ``dataclasses.fields``, ``replace``,
    ``asdict``, ``is_dataclass``): then both become what ``@dataclass`` makes of the class's
    declared fields. They are made on a twin holding only the fields and set on the class one
    after the other, so two threads asking at once each find a whole answer."""

    def __init__(self, name: str, declared: list[tuple[str, Any, str, Any]]) -> None:
        self.name = name
        self.declared = declared

    def __get__(self, instance: Any, owner: type) -> Any:
        if isinstance(owner.__dict__.get(self.name), _DataclassInfo):
            import dataclasses

            body: dict[str, Any] = {"__annotations__": {n: t for n, t, _, _ in self.declared}}
            for name, _, kind, value in self.declared:
                if kind != "required":
                    body[name] = (dataclasses.field(default_factory=value) if kind == "factory"
                                  else value)
            twin: Any = dataclasses.dataclass(type(owner.__name__, (), body), init=False,
                                              repr=False, eq=False)
            setattr(owner, "__dataclass_params__", twin.__dataclass_params__)
            setattr(owner, "__dataclass_fields__", twin.__dataclass_fields__)
        return owner.__dict__[self.name]


@dataclass_transform(field_specifiers=(field,))
def _dataclass(*, frozen: bool = False) -> Callable[[type[_T]], type[_T]]:
    """``@dataclass`` / ``@dataclass(frozen=True)`` without the ``dataclasses`` module at
    import. The methods ``@dataclass`` would compile from source at every import
    (``__init__``, ``__repr__``, ``__eq__``; frozen, also ``__hash__``, ``__setattr__``,
    ``__delattr__``) come from :mod:`minijs.config_methods`, where they are written out once and
    their bytecode is cached, and ``__match_args__`` is set here; the rest of what makes a
    dataclass (``__dataclass_fields__``, so ``dataclasses.fields``, ``replace``, ``asdict``)
    is made by ``@dataclass`` itself when first asked for. A started server asks for none of
    it: compiling the methods was about 9 ms of a spawned ``minijs -js`` on a loaded 2-core
    machine, and importing and running ``dataclasses`` about 2 ms more."""

    def wrap(cls: type[_T]) -> type[_T]:
        declared = _declared_fields(cls)
        for name, _, kind, _ in declared:
            if kind == "factory":
                delattr(cls, name)  # as @dataclass leaves it: the instance holds the value
        config_methods.install(cls, frozen, declared)
        setattr(cls, "__match_args__", tuple(name for name, *_ in declared))
        setattr(cls, "__dataclass_fields__", _DataclassInfo("__dataclass_fields__", declared))
        setattr(cls, "__dataclass_params__", _DataclassInfo("__dataclass_params__", declared))
        return cls

    return wrap


# ----------------------------------------------------------------------------- JetStream options
# (kept apart from the rest of the file: the jetstream { } block and the account limits)


@_dataclass(frozen=True)
class AccountLimits:
    """JetStream limits of one account (nats-server's ``JetStreamAccountLimits``); -1 and
    ``False`` are "no limit". The server-wide config leaves them unlimited for ``$G``;
    an ``accounts { A: { jetstream { ... } } }`` block fills them per account."""

    max_memory: int = -1
    max_storage: int = -1
    max_streams: int = -1
    max_consumers: int = -1
    max_ack_pending: int = -1
    memory_max_stream_bytes: int = -1
    storage_max_stream_bytes: int = -1
    max_bytes_required: bool = False

    def to_json(self) -> dict[str, Any]:
        """The ``limits`` object of ``$JS.API.INFO``, in nats-server's field order."""
        return {
            "max_memory": self.max_memory, "max_storage": self.max_storage,
            "max_streams": self.max_streams, "max_consumers": self.max_consumers,
            "max_ack_pending": self.max_ack_pending,
            "memory_max_stream_bytes": self.memory_max_stream_bytes,
            "storage_max_stream_bytes": self.storage_max_stream_bytes,
            "max_bytes_required": self.max_bytes_required,
        }


@_dataclass(frozen=True)
class JetStreamLimitOpts:
    """``jetstream { limits { ... } }``: server-wide limits (nats-server's ``JSLimitOpts``);
    0 is "not set". ``duplicate_window`` and ``batch_timeout`` are nanoseconds."""

    max_request_batch: int = 0
    max_ack_pending: int = 0
    max_ha_assets: int = 0
    duplicate_window: int = 0
    batch_max_inflight_per_stream: int = 0
    batch_max_inflight_total: int = 0
    batch_max_msgs: int = 0
    batch_timeout: int = 0

    def to_json(self) -> dict[str, Any]:
        """The ``limits`` of /varz ``jetstream`` and /jsz (Go's omitempty fields)."""
        out: dict[str, Any] = {}
        for key, value in (("max_request_batch", self.max_request_batch),
                           ("max_ack_pending", self.max_ack_pending),
                           ("max_ha_assets", self.max_ha_assets),
                           ("max_duplicate_window", self.duplicate_window),
                           ("max_batch_inflight_per_stream", self.batch_max_inflight_per_stream),
                           ("max_batch_inflight_total", self.batch_max_inflight_total),
                           ("max_batch_size", self.batch_max_msgs),
                           ("max_batch_timeout", self.batch_timeout)):
            if value:
                out[key] = value
        out["default_max_consumers"] = 1000
        return out


# ----------------------------------------------------------------------------- the server


@_dataclass()
class ServerConfig:
    """Everything that shapes a server. Defaults are nats-server's unless noted."""

    host: str = "127.0.0.1"  # minijs extension: the in-process default binds loopback only
    port: int = DEFAULT_PORT  # 0 or -1: a free port chosen by the OS
    server_name: str | None = None  # defaults to the server id, as in nats-server
    jetstream: bool = False
    store_dir: str | None = None  # None: memory only; file streams live in a temp dir
    max_memory_store: int = -1
    max_file_store: int = -1
    # -- the rest of the jetstream { } block (see confparse.py); applied where a client sees it
    js_domain: str = ""  # $JS.<domain>.API.>, "domain" in pub acks, infos and advisories
    js_strict: bool = True
    js_sync_interval: float = 120.0  # seconds; shown in /varz, LMDB commits are durable anyway
    js_sync_always: bool = False
    js_unique_tag: str = ""
    js_max_outstanding_catchup: int = 0  # cluster catch-up: accepted, no effect on one server
    js_max_buffered_size: int = 0  # stream ingest queue bounds: accepted, minijs has no queue
    js_max_buffered_msgs: int = 0
    js_request_queue_limit: int = 0
    js_info_queue_limit: int = 0
    js_extension_hint: str = ""
    js_limits: JetStreamLimitOpts = field(default_factory=JetStreamLimitOpts)
    js_account_limits: AccountLimits = field(default_factory=AccountLimits)
    # -- end of the jetstream options
    http_host: str | None = None  # monitoring host; defaults to `host`
    http_port: int | None = None  # None: no monitoring endpoint
    user: str | None = None
    password: str | None = None
    token: str | None = None
    users: tuple[User, ...] = ()  # authorization/account users (with permissions)
    accounts: tuple[str, ...] = ()  # configured account names (besides $G)
    #: The accounts whose ``jetstream`` is enabled, with their limits (in config order).
    account_jetstream: tuple[tuple[str, AccountLimits], ...] = ()
    #: Accounts' ``limits { }`` (connections, subscriptions, payload per account).
    account_limits: tuple[tuple[str, AccountConnLimits], ...] = ()
    #: Accounts' ``msg_trace``: (account, destination, sampling percent) for ``traceparent``.
    account_traces: tuple[tuple[str, str, int], ...] = ()
    #: Accounts' ``exports``, ``imports`` and ``mappings`` (top-level ``mappings``: ``$G``).
    exports: tuple[Export, ...] = ()
    imports: tuple[Import, ...] = ()
    mappings: tuple[Mapping, ...] = ()
    no_auth_user: str | None = None  # the user a client without credentials becomes
    #: Operator mode (minijs.operatormode): the trusted operators' JWTs, the account
    #: resolver (``MEMORY``) and its preloaded account JWTs as (public key, JWT).
    operator: tuple[str, ...] = ()
    resolver: str = ""
    resolver_preload: tuple[tuple[str, str], ...] = ()
    system_account: str | None = None
    auth_timeout: float = 2.0
    max_payload: int = 1024 * 1024
    max_control_line: int = 4096
    max_pending: int = 64 * 1024 * 1024  # outbound bytes before a slow consumer is cut
    write_deadline: float = 10.0
    ping_interval: float = 120.0
    #: Lame duck mode (``SIGUSR2``): clients are closed over this many seconds, after the
    #: grace period (nats-server's ``lame_duck_duration`` / ``lame_duck_grace_period``).
    lame_duck_duration: float = 120.0
    lame_duck_grace_period: float = 10.0
    ping_max: int = 2
    max_connections: int = 65536
    max_subscriptions: int = 0  # 0 = unlimited
    debug: bool = False
    trace: bool = False
    log_file: str | None = None
    pid_file: str | None = None
    ports_file_dir: str | None = None  # write <exe>_<pid>.ports there, as nats-server does
    #: ``server_tags`` (lower-cased, no repeats): shown in ``/varz`` as ``tags``; a single
    #: server does not match stream placement tags against them, nor does nats-server
    tags: tuple[str, ...] = ()
    #: ``tls { }`` or ``--tls``: TLS for client connections (minijs.tlsconfig.TlsOptions)
    tls: TlsOptions | None = None
    #: ``allow_non_tls``: with TLS configured, clients may also connect in plain text
    allow_non_tls: bool = False
    #: ``websocket { }``: a websocket listener (minijs.wsconfig.WebsocketOptions)
    websocket: WebsocketOptions | None = None
    control: bool = False  # minijs extension: serve the $MINIJS.> control plane
    #: minijs extension: this many nodes in one process (1: one server; 2 to 5: an in-process
    #: cluster, see :mod:`minijs.cluster`).
    cluster_size: int = 1
    #: The cluster's name (nats-server's ``cluster { name }``, ``--cluster_name``).
    cluster_name: str | None = None
    #: minijs extension: each in-process node's ``server_tags`` by node name (nodes not
    #: named take ``tags``), for placement by tags.
    cluster_tags: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: Routes to other server processes (nats-server's ``cluster { listen routes ... }``,
    #: ``--cluster``/``--routes``; see :mod:`minijs.routeconfig`); None: no route listener.
    route_options: RouteOptions | None = None
    control_user: str | None = None  # with auth configured, the only user the plane answers
    #: minijs extension: streams, buckets, consumers and messages created at start, before
    #: ``Server is ready`` (a JSON file's path, or the same document as a dict; minijs.preload)
    preload: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def auth_required(self) -> bool:
        return bool(self.token or self.user or self.users or self.operator)

    def with_overrides(self, **overrides: Any) -> "ServerConfig":
        """A copy with keyword overrides; unknown names are a TypeError, not silently kept."""
        names = self.__match_args__  # every field, in order (as dataclasses.replace copies them)
        unknown = set(overrides).difference(names)
        if unknown:
            raise TypeError(f"unknown server option(s): {', '.join(sorted(unknown))}")
        values: dict[str, Any] = {name: getattr(self, name) for name in names}
        values.update(overrides)
        return type(self)(**values)
