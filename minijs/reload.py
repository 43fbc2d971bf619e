"""Reloading the configuration of a running server, as nats-server's ``Reload`` does it
(``SIGHUP``, ``--signal reload``, :meth:`minijs.server.Server.reload`).

The new configuration is read whole first (the config file again, then the command-line flags
over it); a file that does not parse, or a change of an option that cannot be reloaded, is
refused with nats-server's message (``config reload not supported for Port: old=4222,
new=4223``) and nothing changes: the server keeps serving with the configuration it had.
Otherwise each changed option is applied and announced as nats-server announces it
(``Reloaded: max_payload = 2000``), in the order of nats-server's options; the users and
accounts are always reloaded (``Reloaded: authorization users``, ``Reloaded: accounts``).

What a reload of users, permissions and accounts does to live clients, as nats-server does:
a client whose user is gone from the users list or moved to another account is closed
(without a word, as there); each other client logs in again with the CONNECT it sent, and one
no longer authorized gets ``-ERR 'Authorization Violation'`` and is closed; every other stays connected under its (possibly new) permissions and limits, and each
subscription those permissions no longer allow is removed with ``-ERR 'Permissions Violation
for Subscription to "<subject>" (sid "<sid>")'`` and logged (``Removed sub ... - not
authorized``).

Options register here (:func:`register`): the option's field in
:class:`~minijs.config.ServerConfig`, nats-server's name for it (its refusals and its order)
and how to apply a change (None: refused). A listener that can reload (TLS certificates)
registers its own option the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable

__all__ = ["ReloadError", "ReloadOption", "register", "reload", "OPTIONS"]


class ReloadError(Exception):
    """A reload refused: the text is nats-server's (or names the option and the fix)."""


#: ``apply(server, old_config, new_config)`` returns the ``Reloaded: ...`` lines to log.
Apply = Callable[[Any, Any, Any], list]
#: ``check(server, old_config, new_config)`` returns a refusal, or None when it may reload.
Check = Callable[[Any, Any, Any], "str | None"]


@dataclass
class ReloadOption:
    """One option of the reload table."""

    field: str  # the ServerConfig field
    go_name: str  # nats-server's Options field (its refusals name it)
    order: int  # nats-server's order of options
    apply: Apply | None = None  # None: nats-server refuses to reload it
    check: Check | None = None
    #: Refused by minijs though nats-server reloads it: how to get the change instead.
    minijs_refusal: str = ""


OPTIONS: dict[str, ReloadOption] = {}


def register(field: str, go_name: str, order: int, apply: Apply | None = None, *,
             check: Check | None = None, minijs_refusal: str = "") -> None:
    """Add (or replace) a reloadable option: ``apply`` runs when ``field`` changed and every
    changed option may reload; ``check`` may refuse the change first."""
    OPTIONS[field] = ReloadOption(field, go_name, order, apply, check, minijs_refusal)


# ----------------------------------------------------------------------------- the reload


def reload(server: Any, new: Any) -> list[str]:
    """Apply configuration ``new`` to ``server``: the lines logged (``Reloaded: ...``), or
    :class:`ReloadError` with nothing changed."""
    old = server.config
    if new.operator:
        from minijs.operatormode import expand

        new = expand(new, None)
    # A port of 0 or -1 (any free port) means the one bound, as nats-server keeps it.
    bound = server.port if old.port in (0, -1) else old.port
    if new.port in (0, -1, bound):
        new = new.with_overrides(port=old.port)
    elif old.port in (0, -1):
        raise ReloadError(f"config reload not supported for Port: old={bound}, new={new.port}")
    changed = [f.name for f in fields(old) if getattr(old, f.name) != getattr(new, f.name)]
    plan: list[ReloadOption] = []
    for name in changed:
        option = OPTIONS.get(name)
        if option is None:
            raise ReloadError(f"config reload not supported for {name}: "
                              f"old={_go_value(getattr(old, name))}, "
                              f"new={_go_value(getattr(new, name))}")
        old_value, new_value = getattr(old, name), getattr(new, name)
        if option.check is not None:
            refusal = option.check(server, old, new)
            if refusal:
                raise ReloadError(refusal)
        if option.apply is None:
            if option.minijs_refusal:
                raise ReloadError(option.minijs_refusal)
            raise ReloadError(f"config reload not supported for {option.go_name}: "
                              f"old={_go_value(old_value)}, new={_go_value(new_value)}")
        plan.append(option)
    for auth in ("users", "accounts"):  # nats-server reloads these every time
        if OPTIONS[auth] not in plan:
            plan.append(OPTIONS[auth])
    plan.sort(key=lambda o: o.order)
    server.config = new
    lines: list[str] = []
    applied: list[Apply] = []
    for option in plan:
        assert option.apply is not None
        if option.apply in applied:  # one applier for several fields: once
            continue
        applied.append(option.apply)
        lines.extend(option.apply(server, old, new))
    lines.extend(_recheck_clients(server))
    return lines


def _go_value(value: Any) -> str:
    """A value as Go's ``%v`` shows it in nats-server's refusals."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (tuple, list)):
        return "[" + " ".join(_go_value(v) for v in value) + "]"
    return str(value)


def _go_duration(seconds: float) -> str:
    from minijs.protocol.gotime import go_duration

    return go_duration(round(seconds * 1e9))


def _friendly_bytes(n: int) -> str:
    """nats-server's ``friendlyBytes``: ``1.00 GB``."""
    import math

    if n < 1024:
        return f"{n} B"
    exp = int(math.log(n) / math.log(1024))
    return f"{n / 1024 ** exp:.2f} {'KMGTPE'[exp - 1]}B"


# ----------------------------------------------------------------------------- appliers


def _line(template: str) -> Apply:
    """An option whose new value the server reads from its config when it needs it: only the
    line to log (none for an empty template)."""
    def apply(server: Any, old: Any, new: Any) -> list[str]:
        return [template.format(new=new)] if template else []
    return apply


def _apply_log_level(server: Any, old: Any, new: Any) -> list[str]:
    out = []
    if old.trace != new.trace:
        server.log.trace_enabled = new.trace
        out.append(f"Reloaded: trace = {_go_value(new.trace)}")
    if old.debug != new.debug:
        server.log.debug_enabled = new.debug
        out.append(f"Reloaded: debug = {_go_value(new.debug)}")
    return out


def _check_log_file(server: Any, old: Any, new: Any) -> str | None:
    if new.log_file:
        try:
            with open(new.log_file, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            return f"error opening log file {new.log_file}: {exc.strerror or exc}"
    return None


def _apply_log_file(server: Any, old: Any, new: Any) -> list[str]:
    use_file = getattr(server.log, "use_file", None)
    if use_file is not None:
        use_file(new.log_file)
    return [f"Reloaded: log_file = {new.log_file or ''}"]


def _apply_max_payload(server: Any, old: Any, new: Any) -> list[str]:
    return [f"Reloaded: max_payload = {new.max_payload}"]


def _apply_accounts(server: Any, old: Any, new: Any) -> list[str]:
    """Users, nkey users, accounts, their limits, exports, imports and mappings: the router's
    state made again from ``new`` (live clients are checked afterwards)."""
    from minijs.core import imports

    router = server
    router._users = {u.user: u for u in new.users if not u.nkey}
    router.nkey_users = {u.user: u for u in new.users if u.nkey}
    router.auth_nonce = bool(router.nkey_users) or router.operator is not None
    for name in new.accounts:
        router.account_sublist(name)
    router.account_conn_limits = dict(new.account_limits)
    router.account_traces = {acc: (dest, sampling)
                             for acc, dest, sampling in new.account_traces}
    if (old.exports, old.imports, old.mappings) != (new.exports, new.imports, new.mappings):
        for sublist in router.account_sublists.values():
            sublist.links = None
            sublist.mappings = None
            sublist.stream_imports = []
        router.account_links = (imports.install(router, new)
                                if new.imports or new.mappings else {})
    return []


def _apply_users(server: Any, old: Any, new: Any) -> list[str]:
    """nats-server logs ``Reloaded: authorization users`` at every reload."""
    out = []
    if [u for u in old.users if u.nkey] != [u for u in new.users if u.nkey]:
        out.append("Reloaded: authorization nkey users")
    return out + ["Reloaded: authorization users"]


def _apply_accounts_line(server: Any, old: Any, new: Any) -> list[str]:
    _apply_accounts(server, old, new)
    return ["Reloaded: accounts"]


def _check_js_limits(server: Any, old_config: Any, new_config: Any) -> str | None:
    if server.jetstream_group is None:
        return None
    for field in ("max_memory_store", "max_file_store"):
        old, new = getattr(old_config, field), getattr(new_config, field)
        if old == new:
            continue
        if old == -1:
            return "config reload not supported for jetstream dynamic max memory and store"
        if new != -1 and new < old:
            return "config reload not supported for decreasing jetstream max memory and store"
        if new == -1:
            return ("config reload of an unset jetstream max_memory_store/max_file_store is "
                    "not supported by minijs: restart the server to go back to the default")
    return None


def _apply_js_limits(server: Any, old: Any, new: Any) -> list[str]:
    group = server.jetstream_group
    out: list[str] = []
    if group is None:
        return out
    engines = list(group.engines.values()) + [group]
    if new.max_memory_store != old.max_memory_store:
        for e in engines:
            e.max_memory = new.max_memory_store
        out.append(f"Reloaded: JetStream max_mem_store = {_friendly_bytes(new.max_memory_store)}")
    if new.max_file_store != old.max_file_store:
        for e in engines:
            e.max_storage = new.max_file_store
        out.append(f"Reloaded: JetStream max_file_store = {_friendly_bytes(new.max_file_store)}")
    return out


def _check_store_dir(server: Any, old: Any, new: Any) -> str | None:
    if server.jetstream_group is not None and new.store_dir:
        return "config reload not supported for jetstream storage directory"
    return None


def _check_no_auth_user(server: Any, old_config: Any, new_config: Any) -> str | None:
    old, new = old_config.no_auth_user, new_config.no_auth_user
    if old and not new and not any(u.user == old for u in new_config.users):
        return None  # nats-server lets it go only together with its user
    return f"config reload not supported for NoAuthUser: old={old or ''}, new={new or ''}"


def _check_system_account(server: Any, old_config: Any, new_config: Any) -> str | None:
    return (f"config reload not supported for SystemAccount: "
            f"old={old_config.system_account or ''}, new={new_config.system_account or ''}")


_RESTART = "restart the server to change it"


def _listener(name: str) -> Any:
    """An apply or check of :mod:`minijs.core.tlsreload`, loaded at its first use."""
    def call(server: Any, old: Any, new: Any) -> Any:
        from minijs.core import tlsreload

        return getattr(tlsreload, name)(server, old, new)
    return call


def _defaults() -> None:
    """The table: nats-server's reloadable options (its ``diffOptions``), in its order."""
    order = iter(range(1000))
    for field, go, apply, check, refusal in (
        ("server_name", "ServerName", None, None, ""),
        ("host", "Host", None, None, ""),
        ("port", "Port", None, None, ""),
        ("trace", "Trace", _apply_log_level, None, ""),
        ("debug", "Debug", _apply_log_level, None, ""),
        ("max_connections", "MaxConn", _line("Reloaded: max_connections = {new.max_connections}"),
         None, ""),
        ("max_subscriptions", "MaxSubs", None, None, ""),
        ("users", "Users", _apply_users, None, ""),
        ("accounts", "Accounts", _apply_accounts_line, None, ""),
        ("account_jetstream", "Accounts", None, None,
         "config reload of accounts' jetstream settings is not supported by minijs: "
         + _RESTART),
        ("account_limits", "Accounts", _apply_accounts_line, None, ""),
        ("account_traces", "Accounts", _apply_accounts_line, None, ""),
        ("exports", "Accounts", _apply_accounts_line, None, ""),
        ("imports", "Accounts", _apply_accounts_line, None, ""),
        ("mappings", "Accounts", _apply_accounts_line, None, ""),
        ("no_auth_user", "NoAuthUser", _line(""), _check_no_auth_user, ""),
        ("system_account", "SystemAccount", None, _check_system_account, ""),
        ("user", "Username", _line("Reloaded: authorization username"), None, ""),
        ("password", "Password", _line("Reloaded: authorization password"), None, ""),
        ("token", "Authorization", _line("Reloaded: authorization token"), None, ""),
        ("ping_interval", "PingInterval", None, None, ""),
        ("ping_max", "MaxPingsOut", _line("Reloaded: ping_max = {new.ping_max}"), None, ""),
        ("http_host", "HTTPHost", None, None, ""),
        ("http_port", "HTTPPort", None, None, ""),
        ("auth_timeout", "AuthTimeout", None, None, ""),
        ("max_control_line", "MaxControlLine",
         _line("Reloaded: max_control_line = {new.max_control_line}"), None, ""),
        ("max_payload", "MaxPayload", _apply_max_payload, None, ""),
        ("max_pending", "MaxPending", None, None, ""),
        ("jetstream", "JetStream", None, None,
         "config reload of jetstream (enabling or disabling it) is not supported by minijs: "
         + _RESTART),
        ("js_strict", "NoJetStreamStrict", None, None, ""),
        ("max_memory_store", "JetStreamMaxMemory", _apply_js_limits, _check_js_limits, ""),
        ("max_file_store", "JetStreamMaxStore", _apply_js_limits, _check_js_limits, ""),
        ("js_domain", "JetStreamDomain", None, None, ""),
        ("js_extension_hint", "JetStreamExtHint", None, None, ""),
        ("js_unique_tag", "JetStreamUniqueTag", None, None, ""),
        ("js_limits", "JetStreamLimits", None, None, ""),
        ("js_account_limits", "JetStreamLimits", None, None, ""),
        ("js_max_outstanding_catchup", "JetStreamMaxCatchup", None, None, ""),
        ("js_request_queue_limit", "JetStreamRequestQueueLimit", None, None, ""),
        ("js_info_queue_limit", "JetStreamInfoQueueLimit", None, None, ""),
        ("js_max_buffered_msgs", "StreamMaxBufferedMsgs", None, None, ""),
        ("js_max_buffered_size", "StreamMaxBufferedSize", None, None, ""),
        ("store_dir", "StoreDir", _line(""), _check_store_dir, ""),
        ("js_sync_interval", "SyncInterval", None, None, ""),
        ("js_sync_always", "SyncAlways", None, None, ""),
        ("pid_file", "PidFile", _line("Reloaded: pid_file = {new.pid_file}"), None, ""),
        ("ports_file_dir", "PortsFileDir", None, None,
         "config reload of ports_file_dir is not supported by minijs: " + _RESTART),
        ("log_file", "LogFile", _apply_log_file, _check_log_file, ""),
        ("write_deadline", "WriteDeadline", None, None, ""),
        ("lame_duck_duration", "LameDuckDuration", None, None, ""),
        ("lame_duck_grace_period", "LameDuckGracePeriod", None, None, ""),
        ("operator", "TrustedOperators", None, None, ""),
        ("resolver", "AccountResolver", None, None,
         "config reload does not support moving to or from an account resolver"),
        ("resolver_preload", "AccountResolver", None, None,
         "config reload of resolver_preload is not supported by minijs: send the new account "
         "JWT to $SYS.REQ.ACCOUNT.<account>.CLAIMS.UPDATE instead"),
        ("tags", "Tags", _line("Reloaded: tags"), None, ""),
        # TLS certificates and options reload for new connections (minijs.core.tlsreload)
        ("tls", "TLSConfig", _listener("apply_tls"), _listener("check_tls"), ""),
        ("allow_non_tls", "AllowNonTLS", None, None, ""),
        ("websocket", "Websocket", _listener("apply_websocket"),
         _listener("check_websocket"), ""),
        ("control", "control", None, None,
         "config reload of control is not supported by minijs: " + _RESTART),
        ("control_user", "control_user", None, None,
         "config reload of control_user is not supported by minijs: " + _RESTART),
        ("route_options", "Cluster", None, None,
         "config reload of the cluster block (route listener, routes) is not supported by "
         "minijs: " + _RESTART),
    ):
        register(field, go, next(order), apply, check=check, minijs_refusal=refusal)
    # nats-server reloads these three; minijs applies them through the config they are read
    # from at each use, and logs them as nats-server does.
    register("ping_interval", "PingInterval", OPTIONS["ping_interval"].order,
             lambda s, o, n: [f"Reloaded: ping_interval = {_go_duration(n.ping_interval)}"])
    register("write_deadline", "WriteDeadline", OPTIONS["write_deadline"].order,
             lambda s, o, n: [f"Reloaded: write_deadline = {_go_duration(n.write_deadline)}"])
    register("auth_timeout", "AuthTimeout", OPTIONS["auth_timeout"].order,
             lambda s, o, n: [f"Reloaded: authorization timeout = "
                              f"{_go_value(n.auth_timeout)}"])


_defaults()


# ----------------------------------------------------------------------------- live clients


def _recheck_clients(server: Any) -> list[str]:
    """Every connected client logs in again with its CONNECT; see the module docstring."""
    from minijs.core.connection import ERR_AUTH_VIOLATION
    from minijs.protocol import wire

    lines: list[str] = []
    for conn in sorted(server.connections.values(), key=lambda c: c.cid):
        if not conn.connected or conn.closed:
            continue
        opts = dict(conn.parser.options)
        account, sublist = conn.account, conn.sublist
        if _moved(server, conn, opts):
            conn.closing("Client Closed")  # nats-server closes it without a word
            conn.close()
            continue
        if server.config.auth_required:
            if not conn._authenticate(opts):
                server.log.error(f"{conn._log_prefix()}authentication error - "
                                 f"{_auth_user(conn)}")
                conn.fail(ERR_AUTH_VIOLATION)
                continue
        else:
            conn.perms = conn.permissions = None
        if conn.account != account:
            conn.account, conn.sublist = account, sublist  # its subscriptions live there
            conn.closing("Client Closed")
            conn.close()
            continue
        perms = conn.perms
        if perms is None:
            continue
        who = _auth_user(conn)
        for sub in sorted(conn.subs.values(), key=lambda s: _sid_key(s.sid)):
            if perms.can_subscribe(sub.subject, sub.queue):
                continue
            subject, sid = sub.subject.decode(errors="replace"), sub.sid.decode(errors="replace")
            queue = f' using queue "{sub.queue.decode(errors="replace")}"' if sub.queue else ""
            conn.send(wire.err(f'Permissions Violation for Subscription to "{subject}"{queue} '
                               f'(sid "{sid}")'))
            lines.append(f'Removed sub "{subject}"{queue} (sid "{sid}") for {who} - '
                         "not authorized")
            conn.remove_subscription(sub)
    server.flush_soon()
    return lines


def _moved(server: Any, conn: Any, opts: dict[str, Any]) -> bool:
    """nats-server's ``clientHasMovedToDifferentAccount``: the client's user (or nkey) is
    gone from the users list, or now belongs to another account."""
    if conn.jwt_user:
        return False
    nkey = opts.get("nkey") or (conn.user if conn.user_label.startswith("nkey:") else "")
    if nkey:
        user = server.nkey_users.get(nkey)
    else:
        name = opts.get("user") or (conn.user if conn.user_label.startswith("user:") else "")
        if not name or (not server._users and server.config.user):
            return False  # no user name, or the single user of authorization { user }
        user = server._users.get(name)
    return user is None or user.account != conn.account


def _sid_key(sid: bytes) -> tuple[int, bytes]:
    return (0, b"%020d" % int(sid)) if sid.isdigit() else (1, sid)


def _auth_user(conn: Any) -> str:
    """nats-server's ``getAuthUser``."""
    label = conn.user_label or ""
    if label.startswith("nkey:"):
        return f'Nkey "{conn.user}"'
    if conn.jwt_user:
        return f'JWT User "{conn.jwt_user}"'
    if conn.user:
        return f'User "{conn.user}"'
    return 'User "N/A"'
