"""The methods ``@dataclass`` would compile for the classes of :mod:`minijs.config`, written out.

GENERATED from the fields of those classes: do not edit. ``minijs.config`` declares the
classes with its own ``@dataclass``, which :func:`install` gives these methods, after checking
the class's fields are the ones they were generated for. Each behaves as its ``@dataclass``
counterpart of Python 3.11: the same ``__init__`` signature (defaults and annotations included,
a ``default_factory`` shown as ``<factory>``), ``repr``, equality (a tuple of the fields, only
between instances of the same class), and for frozen classes the hash of that tuple and a
``FrozenInstanceError`` on assignment or deletion.
"""

# Written by scripts/gen_config_methods.py in the minijs repository, which a test runs to check
# this file is what the classes generate now; after changing a class's fields, run it again.
from __future__ import annotations

import reprlib
from typing import Any, Callable

_object_setattr = object.__setattr__


def _frozen_error(text: str) -> Exception:
    from dataclasses import FrozenInstanceError

    return FrozenInstanceError(text)


class _Factory:
    """The default of a parameter whose field has a ``default_factory``."""

    def __repr__(self) -> str:
        return "<factory>"


_HAS_DEFAULT_FACTORY: Any = _Factory()


def _account_limits_methods(cls: Any, factories: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    def __init__(self, max_memory, max_storage, max_streams, max_consumers, max_ack_pending,
                 memory_max_stream_bytes, storage_max_stream_bytes, max_bytes_required):
        _object_setattr(self, 'max_memory', max_memory)
        _object_setattr(self, 'max_storage', max_storage)
        _object_setattr(self, 'max_streams', max_streams)
        _object_setattr(self, 'max_consumers', max_consumers)
        _object_setattr(self, 'max_ack_pending', max_ack_pending)
        _object_setattr(self, 'memory_max_stream_bytes', memory_max_stream_bytes)
        _object_setattr(self, 'storage_max_stream_bytes', storage_max_stream_bytes)
        _object_setattr(self, 'max_bytes_required', max_bytes_required)

    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        return (f"{self.__class__.__qualname__}("
                f"max_memory={self.max_memory!r}, "
                f"max_storage={self.max_storage!r}, "
                f"max_streams={self.max_streams!r}, "
                f"max_consumers={self.max_consumers!r}, "
                f"max_ack_pending={self.max_ack_pending!r}, "
                f"memory_max_stream_bytes={self.memory_max_stream_bytes!r}, "
                f"storage_max_stream_bytes={self.storage_max_stream_bytes!r}, "
                f"max_bytes_required={self.max_bytes_required!r})"
                )

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return (
                (self.max_memory, self.max_storage, self.max_streams, self.max_consumers,
                 self.max_ack_pending, self.memory_max_stream_bytes, self.storage_max_stream_bytes,
                 self.max_bytes_required,) ==
                (other.max_memory, other.max_storage, other.max_streams, other.max_consumers,
                 other.max_ack_pending, other.memory_max_stream_bytes,
                 other.storage_max_stream_bytes, other.max_bytes_required,))
        return NotImplemented

    field_names = frozenset(('max_memory', 'max_storage', 'max_streams', 'max_consumers',
                             'max_ack_pending', 'memory_max_stream_bytes',
                             'storage_max_stream_bytes', 'max_bytes_required',))

    def __hash__(self: Any) -> int:
        return hash((self.max_memory, self.max_storage, self.max_streams, self.max_consumers,
                    self.max_ack_pending, self.memory_max_stream_bytes,
                    self.storage_max_stream_bytes, self.max_bytes_required,))

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in field_names:
            raise _frozen_error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in field_names:
            raise _frozen_error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return {"__init__": __init__, "__repr__": __repr__, "__eq__": __eq__,
            "__hash__": __hash__, "__setattr__": __setattr__,
            "__delattr__": __delattr__}


def _jet_stream_limit_opts_methods(cls: Any, factories: dict[str, Callable[[], Any]]) -> dict[str,
                                   Any]:
    def __init__(self, max_request_batch, max_ack_pending, max_ha_assets, duplicate_window,
                 batch_max_inflight_per_stream, batch_max_inflight_total, batch_max_msgs,
                 batch_timeout):
        _object_setattr(self, 'max_request_batch', max_request_batch)
        _object_setattr(self, 'max_ack_pending', max_ack_pending)
        _object_setattr(self, 'max_ha_assets', max_ha_assets)
        _object_setattr(self, 'duplicate_window', duplicate_window)
        _object_setattr(self, 'batch_max_inflight_per_stream', batch_max_inflight_per_stream)
        _object_setattr(self, 'batch_max_inflight_total', batch_max_inflight_total)
        _object_setattr(self, 'batch_max_msgs', batch_max_msgs)
        _object_setattr(self, 'batch_timeout', batch_timeout)

    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        return (f"{self.__class__.__qualname__}("
                f"max_request_batch={self.max_request_batch!r}, "
                f"max_ack_pending={self.max_ack_pending!r}, "
                f"max_ha_assets={self.max_ha_assets!r}, "
                f"duplicate_window={self.duplicate_window!r}, "
                f"batch_max_inflight_per_stream={self.batch_max_inflight_per_stream!r}, "
                f"batch_max_inflight_total={self.batch_max_inflight_total!r}, "
                f"batch_max_msgs={self.batch_max_msgs!r}, "
                f"batch_timeout={self.batch_timeout!r})"
                )

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return (
                (self.max_request_batch, self.max_ack_pending, self.max_ha_assets,
                 self.duplicate_window, self.batch_max_inflight_per_stream,
                 self.batch_max_inflight_total, self.batch_max_msgs, self.batch_timeout,) ==
                (other.max_request_batch, other.max_ack_pending, other.max_ha_assets,
                 other.duplicate_window, other.batch_max_inflight_per_stream,
                 other.batch_max_inflight_total, other.batch_max_msgs, other.batch_timeout,))
        return NotImplemented

    field_names = frozenset(('max_request_batch', 'max_ack_pending', 'max_ha_assets',
                             'duplicate_window', 'batch_max_inflight_per_stream',
                             'batch_max_inflight_total', 'batch_max_msgs', 'batch_timeout',))

    def __hash__(self: Any) -> int:
        return hash((self.max_request_batch, self.max_ack_pending, self.max_ha_assets,
                    self.duplicate_window, self.batch_max_inflight_per_stream,
                    self.batch_max_inflight_total, self.batch_max_msgs, self.batch_timeout,))

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in field_names:
            raise _frozen_error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in field_names:
            raise _frozen_error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return {"__init__": __init__, "__repr__": __repr__, "__eq__": __eq__,
            "__hash__": __hash__, "__setattr__": __setattr__,
            "__delattr__": __delattr__}


def _server_config_methods(cls: Any, factories: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    factory_js_limits = factories['js_limits']
    factory_js_account_limits = factories['js_account_limits']
    factory_cluster_tags = factories['cluster_tags']
    factory_extra = factories['extra']

    def __init__(self, host, port, server_name, jetstream, store_dir, max_memory_store,
                 max_file_store, js_domain, js_strict, js_sync_interval, js_sync_always,
                 js_unique_tag, js_max_outstanding_catchup, js_max_buffered_size,
                 js_max_buffered_msgs, js_request_queue_limit, js_info_queue_limit,
                 js_extension_hint, js_limits, js_account_limits, http_host, http_port, user,
                 password, token, users, accounts, account_jetstream, account_limits,
                 account_traces, exports, imports, mappings, no_auth_user, operator, resolver,
                 resolver_preload, system_account, auth_timeout, max_payload, max_control_line,
                 max_pending, write_deadline, ping_interval, lame_duck_duration,
                 lame_duck_grace_period, ping_max, max_connections, max_subscriptions, debug,
                 trace, log_file, pid_file, ports_file_dir, tags, tls, allow_non_tls, websocket,
                 control, cluster_size, cluster_name, cluster_tags, route_options, control_user,
                 preload, extra):
        self.host = host
        self.port = port
        self.server_name = server_name
        self.jetstream = jetstream
        self.store_dir = store_dir
        self.max_memory_store = max_memory_store
        self.max_file_store = max_file_store
        self.js_domain = js_domain
        self.js_strict = js_strict
        self.js_sync_interval = js_sync_interval
        self.js_sync_always = js_sync_always
        self.js_unique_tag = js_unique_tag
        self.js_max_outstanding_catchup = js_max_outstanding_catchup
        self.js_max_buffered_size = js_max_buffered_size
        self.js_max_buffered_msgs = js_max_buffered_msgs
        self.js_request_queue_limit = js_request_queue_limit
        self.js_info_queue_limit = js_info_queue_limit
        self.js_extension_hint = js_extension_hint
        self.js_limits = (factory_js_limits() if js_limits is _HAS_DEFAULT_FACTORY else js_limits)
        self.js_account_limits = (factory_js_account_limits() if js_account_limits is
                                 _HAS_DEFAULT_FACTORY else js_account_limits)
        self.http_host = http_host
        self.http_port = http_port
        self.user = user
        self.password = password
        self.token = token
        self.users = users
        self.accounts = accounts
        self.account_jetstream = account_jetstream
        self.account_limits = account_limits
        self.account_traces = account_traces
        self.exports = exports
        self.imports = imports
        self.mappings = mappings
        self.no_auth_user = no_auth_user
        self.operator = operator
        self.resolver = resolver
        self.resolver_preload = resolver_preload
        self.system_account = system_account
        self.auth_timeout = auth_timeout
        self.max_payload = max_payload
        self.max_control_line = max_control_line
        self.max_pending = max_pending
        self.write_deadline = write_deadline
        self.ping_interval = ping_interval
        self.lame_duck_duration = lame_duck_duration
        self.lame_duck_grace_period = lame_duck_grace_period
        self.ping_max = ping_max
        self.max_connections = max_connections
        self.max_subscriptions = max_subscriptions
        self.debug = debug
        self.trace = trace
        self.log_file = log_file
        self.pid_file = pid_file
        self.ports_file_dir = ports_file_dir
        self.tags = tags
        self.tls = tls
        self.allow_non_tls = allow_non_tls
        self.websocket = websocket
        self.control = control
        self.cluster_size = cluster_size
        self.cluster_name = cluster_name
        self.cluster_tags = (factory_cluster_tags() if cluster_tags is _HAS_DEFAULT_FACTORY else
                            cluster_tags)
        self.route_options = route_options
        self.control_user = control_user
        self.preload = preload
        self.extra = (factory_extra() if extra is _HAS_DEFAULT_FACTORY else extra)

    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        return (f"{self.__class__.__qualname__}("
                f"host={self.host!r}, "
                f"port={self.port!r}, "
                f"server_name={self.server_name!r}, "
                f"jetstream={self.jetstream!r}, "
                f"store_dir={self.store_dir!r}, "
                f"max_memory_store={self.max_memory_store!r}, "
                f"max_file_store={self.max_file_store!r}, "
                f"js_domain={self.js_domain!r}, "
                f"js_strict={self.js_strict!r}, "
                f"js_sync_interval={self.js_sync_interval!r}, "
                f"js_sync_always={self.js_sync_always!r}, "
                f"js_unique_tag={self.js_unique_tag!r}, "
                f"js_max_outstanding_catchup={self.js_max_outstanding_catchup!r}, "
                f"js_max_buffered_size={self.js_max_buffered_size!r}, "
                f"js_max_buffered_msgs={self.js_max_buffered_msgs!r}, "
                f"js_request_queue_limit={self.js_request_queue_limit!r}, "
                f"js_info_queue_limit={self.js_info_queue_limit!r}, "
                f"js_extension_hint={self.js_extension_hint!r}, "
                f"js_limits={self.js_limits!r}, "
                f"js_account_limits={self.js_account_limits!r}, "
                f"http_host={self.http_host!r}, "
                f"http_port={self.http_port!r}, "
                f"user={self.user!r}, "
                f"password={self.password!r}, "
                f"token={self.token!r}, "
                f"users={self.users!r}, "
                f"accounts={self.accounts!r}, "
                f"account_jetstream={self.account_jetstream!r}, "
                f"account_limits={self.account_limits!r}, "
                f"account_traces={self.account_traces!r}, "
                f"exports={self.exports!r}, "
                f"imports={self.imports!r}, "
                f"mappings={self.mappings!r}, "
                f"no_auth_user={self.no_auth_user!r}, "
                f"operator={self.operator!r}, "
                f"resolver={self.resolver!r}, "
                f"resolver_preload={self.resolver_preload!r}, "
                f"system_account={self.system_account!r}, "
                f"auth_timeout={self.auth_timeout!r}, "
                f"max_payload={self.max_payload!r}, "
                f"max_control_line={self.max_control_line!r}, "
                f"max_pending={self.max_pending!r}, "
                f"write_deadline={self.write_deadline!r}, "
                f"ping_interval={self.ping_interval!r}, "
                f"lame_duck_duration={self.lame_duck_duration!r}, "
                f"lame_duck_grace_period={self.lame_duck_grace_period!r}, "
                f"ping_max={self.ping_max!r}, "
                f"max_connections={self.max_connections!r}, "
                f"max_subscriptions={self.max_subscriptions!r}, "
                f"debug={self.debug!r}, "
                f"trace={self.trace!r}, "
                f"log_file={self.log_file!r}, "
                f"pid_file={self.pid_file!r}, "
                f"ports_file_dir={self.ports_file_dir!r}, "
                f"tags={self.tags!r}, "
                f"tls={self.tls!r}, "
                f"allow_non_tls={self.allow_non_tls!r}, "
                f"websocket={self.websocket!r}, "
                f"control={self.control!r}, "
                f"cluster_size={self.cluster_size!r}, "
                f"cluster_name={self.cluster_name!r}, "
                f"cluster_tags={self.cluster_tags!r}, "
                f"route_options={self.route_options!r}, "
                f"control_user={self.control_user!r}, "
                f"preload={self.preload!r}, "
                f"extra={self.extra!r})"
                )

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return (
                (self.host, self.port, self.server_name, self.jetstream, self.store_dir,
                 self.max_memory_store, self.max_file_store, self.js_domain, self.js_strict,
                 self.js_sync_interval, self.js_sync_always, self.js_unique_tag,
                 self.js_max_outstanding_catchup, self.js_max_buffered_size,
                 self.js_max_buffered_msgs, self.js_request_queue_limit, self.js_info_queue_limit,
                 self.js_extension_hint, self.js_limits, self.js_account_limits, self.http_host,
                 self.http_port, self.user, self.password, self.token, self.users, self.accounts,
                 self.account_jetstream, self.account_limits, self.account_traces, self.exports,
                 self.imports, self.mappings, self.no_auth_user, self.operator, self.resolver,
                 self.resolver_preload, self.system_account, self.auth_timeout, self.max_payload,
                 self.max_control_line, self.max_pending, self.write_deadline, self.ping_interval,
                 self.lame_duck_duration, self.lame_duck_grace_period, self.ping_max,
                 self.max_connections, self.max_subscriptions, self.debug, self.trace,
                 self.log_file, self.pid_file, self.ports_file_dir, self.tags, self.tls,
                 self.allow_non_tls, self.websocket, self.control, self.cluster_size,
                 self.cluster_name, self.cluster_tags, self.route_options, self.control_user,
                 self.preload, self.extra,) ==
                (other.host, other.port, other.server_name, other.jetstream, other.store_dir,
                 other.max_memory_store, other.max_file_store, other.js_domain, other.js_strict,
                 other.js_sync_interval, other.js_sync_always, other.js_unique_tag,
                 other.js_max_outstanding_catchup, other.js_max_buffered_size,
                 other.js_max_buffered_msgs, other.js_request_queue_limit,
                 other.js_info_queue_limit, other.js_extension_hint, other.js_limits,
                 other.js_account_limits, other.http_host, other.http_port, other.user,
                 other.password, other.token, other.users, other.accounts, other.account_jetstream,
                 other.account_limits, other.account_traces, other.exports, other.imports,
                 other.mappings, other.no_auth_user, other.operator, other.resolver,
                 other.resolver_preload, other.system_account, other.auth_timeout,
                 other.max_payload, other.max_control_line, other.max_pending,
                 other.write_deadline, other.ping_interval, other.lame_duck_duration,
                 other.lame_duck_grace_period, other.ping_max, other.max_connections,
                 other.max_subscriptions, other.debug, other.trace, other.log_file, other.pid_file,
                 other.ports_file_dir, other.tags, other.tls, other.allow_non_tls, other.websocket,
                 other.control, other.cluster_size, other.cluster_name, other.cluster_tags,
                 other.route_options, other.control_user, other.preload, other.extra,))
        return NotImplemented

    # eq without frozen: unhashable, as @dataclass makes it
    return {"__init__": __init__, "__repr__": __repr__, "__eq__": __eq__,
            "__hash__": None}


#: class name -> (frozen, ((field, default kind), ...), method maker)
_CLASSES: dict[str, tuple[bool, tuple[tuple[str, str], ...], Any]] = {
    'AccountLimits': (True, (
        ('max_memory', 'default'),
        ('max_storage', 'default'),
        ('max_streams', 'default'),
        ('max_consumers', 'default'),
        ('max_ack_pending', 'default'),
        ('memory_max_stream_bytes', 'default'),
        ('storage_max_stream_bytes', 'default'),
        ('max_bytes_required', 'default'),
    ), _account_limits_methods),
    'JetStreamLimitOpts': (True, (
        ('max_request_batch', 'default'),
        ('max_ack_pending', 'default'),
        ('max_ha_assets', 'default'),
        ('duplicate_window', 'default'),
        ('batch_max_inflight_per_stream', 'default'),
        ('batch_max_inflight_total', 'default'),
        ('batch_max_msgs', 'default'),
        ('batch_timeout', 'default'),
    ), _jet_stream_limit_opts_methods),
    'ServerConfig': (False, (
        ('host', 'default'),
        ('port', 'default'),
        ('server_name', 'default'),
        ('jetstream', 'default'),
        ('store_dir', 'default'),
        ('max_memory_store', 'default'),
        ('max_file_store', 'default'),
        ('js_domain', 'default'),
        ('js_strict', 'default'),
        ('js_sync_interval', 'default'),
        ('js_sync_always', 'default'),
        ('js_unique_tag', 'default'),
        ('js_max_outstanding_catchup', 'default'),
        ('js_max_buffered_size', 'default'),
        ('js_max_buffered_msgs', 'default'),
        ('js_request_queue_limit', 'default'),
        ('js_info_queue_limit', 'default'),
        ('js_extension_hint', 'default'),
        ('js_limits', 'factory'),
        ('js_account_limits', 'factory'),
        ('http_host', 'default'),
        ('http_port', 'default'),
        ('user', 'default'),
        ('password', 'default'),
        ('token', 'default'),
        ('users', 'default'),
        ('accounts', 'default'),
        ('account_jetstream', 'default'),
        ('account_limits', 'default'),
        ('account_traces', 'default'),
        ('exports', 'default'),
        ('imports', 'default'),
        ('mappings', 'default'),
        ('no_auth_user', 'default'),
        ('operator', 'default'),
        ('resolver', 'default'),
        ('resolver_preload', 'default'),
        ('system_account', 'default'),
        ('auth_timeout', 'default'),
        ('max_payload', 'default'),
        ('max_control_line', 'default'),
        ('max_pending', 'default'),
        ('write_deadline', 'default'),
        ('ping_interval', 'default'),
        ('lame_duck_duration', 'default'),
        ('lame_duck_grace_period', 'default'),
        ('ping_max', 'default'),
        ('max_connections', 'default'),
        ('max_subscriptions', 'default'),
        ('debug', 'default'),
        ('trace', 'default'),
        ('log_file', 'default'),
        ('pid_file', 'default'),
        ('ports_file_dir', 'default'),
        ('tags', 'default'),
        ('tls', 'default'),
        ('allow_non_tls', 'default'),
        ('websocket', 'default'),
        ('control', 'default'),
        ('cluster_size', 'default'),
        ('cluster_name', 'default'),
        ('cluster_tags', 'factory'),
        ('route_options', 'default'),
        ('control_user', 'default'),
        ('preload', 'default'),
        ('extra', 'factory'),
    ), _server_config_methods),
}


def install(cls: type, frozen: bool, declared: list[tuple[str, Any, str, Any]]) -> None:
    """Set the generated methods on ``cls``, whose fields are ``declared``: ``(name,
    annotation, kind, value)`` in order, the kind ``"required"``, ``"default"`` (the value is
    the default) or ``"factory"`` (the value is the factory). ImportError if they are not the
    fields the methods were generated for."""
    entry = _CLASSES.get(cls.__qualname__)
    shape = tuple((name, kind) for name, _, kind, _ in declared)
    if entry is None or entry[0] != frozen or entry[1] != shape:
        raise ImportError(
            f"minijs.config_methods was not generated for the fields of {cls.__qualname__}: "
            "run python scripts/gen_config_methods.py")
    methods = entry[2](cls, {name: value for name, _, kind, value in declared
                             if kind == "factory"})
    init = methods["__init__"]
    init.__defaults__ = tuple(_HAS_DEFAULT_FACTORY if kind == "factory" else value
                              for _, _, kind, value in declared if kind != "required") or None
    init.__annotations__ = {**{name: t for name, t, _, _ in declared}, "return": None}
    for name, method in methods.items():
        if method is not None:
            method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, name, method)
