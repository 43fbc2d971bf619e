"""nats-server configuration files: the subset people write for tests, mapped to ServerConfig.

The file is read by :mod:`minijs.confsyntax` (nats-server's ``conf`` syntax); this module maps
its keys onto :class:`~minijs.config.ServerConfig`. Every key is checked: a key minijs does not
know, or knows but does not implement, is a :class:`ConfigError` naming the file, line, column
and key, because a silently ignored setting makes a test pass for the wrong reason.
"""
from __future__ import annotations

import hashlib
import os
import re
from typing import Any

from minijs.authconfig import (
    AccountConnLimits,
    Export,
    Import,
    Mapping,
    Permissions,
    ResponsePermission,
    User,
)
from minijs.config import (
    DEFAULT_PORT,
    GLOBAL_ACCOUNT,
    RANDOM_PORT,
    AccountLimits,
    JetStreamLimitOpts,
    ServerConfig,
)
from minijs.core.imports import check_imports
from minijs.core.transform import validate_mapping
from minijs.confsyntax import (
    ConfigError,
    Entry,
    MapNode,
    Node,
    go_type,
    parse_duration,
    parse_text,
    string_or_strings,
)

__all__ = ["ConfigError", "load_config", "parse_config", "parse_text"]


# ----------------------------------------------------------------------------- value checks


def _check_mapping(src: str, dests: list[tuple[str, int, str]]) -> str | None:
    """``AddWeightedMappings``'s refusals, in its order (None: the mapping is fine)."""
    seen: set[str] = set()
    total: dict[str, int] = {}
    for subject, weight, cluster in dests:
        if subject in seen:
            return f"duplicate entry for {_go_quote(subject)}"
        seen.add(subject)
        total[cluster] = total.get(cluster, 0) + weight
        if total[cluster] > 100:
            return "total weight needs to be <= 100"
        err = validate_mapping(src, subject)
        if err:
            return err
    return None


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _valid_publish_subject(subject: str) -> bool:
    """nats-server's ``IsValidPublishSubject``: literal tokens, none empty, no white space."""
    if not subject or any(ch in subject for ch in " \t\r\n\f"):
        return False
    return all(tok and tok not in ("*", ">") for tok in subject.split("."))


def _describe(node: Node) -> str:
    if node.kind in ("map", "array"):
        return f"a {node.kind}"
    return f"{node.kind} {node.value!r}"


#: Top-level keys that only map onto a ServerConfig field, the value read and coerced by the
#: named reader (nats-server's key and its aliases); the field None: accepted and checked, no
#: effect. The keys with rules of their own are :meth:`_Mapper.top`'s code.
_MAPPED_KEYS: dict[str, tuple[str | None, str]] = {
    "host": ("host", "str_"), "net": ("host", "str_"),
    "max_payload": ("max_payload", "int_"), "max_control_line": ("max_control_line", "int_"),
    "max_pending": ("max_pending", "int_"),
    "max_connections": ("max_connections", "int_"), "max_conn": ("max_connections", "int_"),
    "max_subscriptions": ("max_subscriptions", "int_"),
    "max_subs": ("max_subscriptions", "int_"),
    "ping_max": ("ping_max", "int_"),
    "ping_interval": ("ping_interval", "duration"),
    "write_deadline": ("write_deadline", "duration"),
    "debug": ("debug", "bool_"), "trace": ("trace", "bool_"), "trace_verbose": ("trace", "bool_"),
    # log lines always carry a local timestamp: accepted, no effect
    "logtime": (None, "bool_"), "logtime_utc": (None, "bool_"),
    "logfile": ("log_file", "str_"), "log_file": ("log_file", "str_"),
    "pidfile": ("pid_file", "str_"), "pid_file": ("pid_file", "str_"),
    "ports_file_dir": ("ports_file_dir", "str_"),
}

#: The same for the keys of the ``jetstream { }`` block (:meth:`_Mapper.jetstream_option`).
_MAPPED_JETSTREAM_KEYS: dict[str, tuple[str | None, str]] = {
    "max_memory_store": ("max_memory_store", "storage_size"),
    "max_mem_store": ("max_memory_store", "storage_size"),
    "max_mem": ("max_memory_store", "storage_size"),
    "max_file_store": ("max_file_store", "storage_size"),
    "max_file": ("max_file_store", "storage_size"),
    "strict": ("js_strict", "bool_"),
    "extension_hint": ("js_extension_hint", "str_"),
    "max_outstanding_catchup": ("js_max_outstanding_catchup", "storage_size"),
    "max_buffered_size": ("js_max_buffered_size", "storage_size"),
    # the clustered meta layer's: accepted, nothing to compact
    "meta_compact_sync": (None, "bool_"),
}


class _Mapper:
    """Turns a parsed file into ServerConfig changes, checking every key and type."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.changes: dict[str, Any] = {}
        self.no_auth_entry: Entry | None = None
        self.system_entry: Entry | None = None
        self.accounts_entry: Entry | None = None
        self.account_js_entries: list[tuple[str, Entry]] = []

    def fail(self, where: Entry | Node, message: str) -> ConfigError:
        return ConfigError(message, self.path, where.line, where.col)

    @staticmethod
    def check_tls_files(options: Any) -> None:
        """Load a ``tls { }`` block's certificate, key and CA as the server will (the TLS
        listener's floor, which the block's options module stands below)."""
        from minijs.core.tls import check_files

        check_files(options)

    def int_(self, e: Entry) -> int:
        n = e.node
        if n.kind != "int":
            raise self.fail(n, f"{e.key}: expected an integer, got {_describe(n)}")
        return n.value

    def str_(self, e: Entry) -> str:
        n = e.node
        if n.kind != "string":
            raise self.fail(n, f"{e.key}: expected a string, got {_describe(n)}")
        return n.value

    def name_(self, e: Entry) -> str:
        """A string; nats-server also takes a bare number or boolean as its text here."""
        n = e.node
        if n.kind == "string":
            return n.value
        if n.kind in ("int", "float"):
            return str(n.value)
        raise self.fail(n, f"{e.key}: expected a string, got {_describe(n)}")

    def bool_(self, e: Entry) -> bool:
        n = e.node
        if n.kind != "bool":
            raise self.fail(n, f"{e.key}: expected a boolean, got {_describe(n)}")
        return n.value

    def seconds(self, e: Entry) -> float:
        """A timeout in (possibly fractional) seconds, as nats-server's auth timeout."""
        n = e.node
        if n.kind in ("int", "float"):
            return float(n.value)
        raise self.fail(n, f"{e.key}: expected a number of seconds, got {_describe(n)}")

    def duration(self, e: Entry) -> float:
        """A Go duration string ("2m", "500ms", "1h30m") or, as nats-server allows, seconds."""
        n = e.node
        if n.kind == "int":
            return float(n.value)
        if n.kind == "string":
            try:
                return parse_duration(n.value)
            except ValueError as exc:
                raise self.fail(n, f"error parsing {e.key}: {exc}") from None
        raise self.fail(n, f"{e.key}: expected a duration such as \"2m\" or \"500ms\", "
                           f"got {_describe(n)}")

    def storage_size(self, e: Entry) -> int:
        """JetStream limits: an integer (size suffixes allowed) or a "10G" style string."""
        n = e.node
        if n.kind == "int":
            return n.value
        if n.kind == "string":
            s = n.value
            if s == "":
                return 0
            mult = {"K": 10, "M": 20, "G": 30, "T": 40}.get(s[-1:])
            if mult is None or not re.fullmatch(r"-?[0-9]+", s[:-1]):
                raise self.fail(n, f"{e.key}: sizes defined as strings must end in K, M, G, T "
                                   f"(got {s!r})")
            return int(s[:-1]) << mult
        raise self.fail(n, f"{e.key}: expected a size, got {_describe(n)}")

    def map_(self, e: Entry) -> MapNode:
        if e.node.kind != "map":
            raise self.fail(e.node, f"{e.key}: expected a map {{ ... }}, got {_describe(e.node)}")
        return e.node.value

    def unknown(self, e: Entry, context: str = "") -> ConfigError:
        lowered = e.key.lower()
        known = _UNSUPPORTED.get(context, set())
        if lowered in known:
            return self.fail(e, f'field "{e.key}"{" in " + context if context else ""} is a '
                                
                                "nats-server setting that minijs does not support")
        return self.fail(e, f'unknown field "{e.key}"' + (f" in {context}" if context else ""))

    # -- the mapping

    def top(self, root: MapNode) -> None:
        c = self.changes
        for e in root.entries.values():
            k = e.key.lower()
            mapped = _MAPPED_KEYS.get(k)
            if mapped is not None:
                name, read = mapped
                value = getattr(self, read)(e)
                if name:
                    c[name] = value
            elif k == "listen":
                host, port = self.host_port(e)
                if host:
                    c["host"] = host
                c["port"] = _client_port(self.port_range(e, port))
            elif k == "port":
                c["port"] = _client_port(self.port_range(e, self.int_(e)))
            elif k == "server_name":
                name = self.name_(e)
                if " " in name:
                    raise self.fail(e, "server name cannot contain spaces")
                c["server_name"] = name
            elif k == "http":
                host, port = self.host_port(e)
                if host:
                    c["http_host"] = host
                c["http_port"] = _http_port(self.port_range(e, port))
            elif k in ("http_port", "monitor_port"):
                c["http_port"] = _http_port(self.port_range(e, self.int_(e)))
            elif k == "lame_duck_duration":
                dur = self.duration(e)
                if dur < 30:
                    from minijs.protocol.gotime import go_duration

                    raise self.fail(e.node, f"invalid lame_duck_duration of "
                                            f"{go_duration(round(dur * 1e9))}, minimum is 30 seconds")
                c[k] = dur
            elif k == "lame_duck_grace_period":
                dur = self.duration(e)
                if dur < 0:
                    raise self.fail(e.node, "invalid lame_duck_grace_period, needs to be positive")
                c[k] = dur
            elif k in ("authorization", "authentication"):
                self.authorization(e)
            elif k == "accounts":
                self.accounts_entry = e
                self.accounts(e)
            elif k in ("mappings", "maps"):
                self.account_mappings(e, GLOBAL_ACCOUNT)
            elif k == "no_auth_user":
                c["no_auth_user"] = self.name_(e)
                self.no_auth_entry = e
            elif k in ("system_account", "system"):
                c["system_account"] = self.name_(e)
                self.system_entry = e
            elif k in ("operator", "operators", "roots", "root", "root_operators",
                       "root_operator", "resolver", "account_resolver", "accounts_resolver",
                       "resolver_preload"):
                from minijs.confauth import operator_option

                operator_option(self, k, e)
            elif k == "jetstream":
                self.jetstream(e)
            elif k in ("store_dir", "storedir"):
                self.store_dir(e)
            elif k == "server_tags":
                c["tags"] = self.server_tags(e)
            elif k in ("tls", "allow_non_tls", "websocket", "ws"):
                from minijs import listenconf  # only configs with these blocks load it

                listenconf.take(self, e)
            elif k == "cluster":
                from minijs.routeconfig import cluster_block

                cluster_block(self, e)
            elif e.used:
                continue  # a variable definition that a later value referenced
            else:
                raise self.unknown(e)

    def server_tags(self, e: Entry) -> tuple[str, ...]:
        """``server_tags``: a string or a list of strings, each trimmed and lower-cased, the
        repeats dropped (nats-server's ``TagList.Add``), with its refusals of other types."""
        n = e.node
        items = string_or_strings(
            n, lambda _: self.fail(e, "error parsing tags: unsupported type *conf.token where "
                                      "string is expected"),
            lambda: self.fail(e, f"error parsing tags: unsupported type {go_type(n)}"))
        tags: list[str] = []
        for text in items:
            tag = text.strip().lower()
            if tag not in tags:
                tags.append(tag)
        return tuple(tags)

    def host_port(self, e: Entry) -> tuple[str, int]:
        n = e.node
        if n.kind == "int":
            return "", n.value
        if n.kind == "string":
            s = n.value
            if s.startswith("["):
                host, sep, port = s[1:].partition("]:")
            else:
                host, sep, port = s.rpartition(":")
            if sep and re.fullmatch(r"-?[0-9]+", port):
                return host, int(port)
        raise self.fail(e, f"could not parse address string {_describe(n)}")

    def port_range(self, e: Entry, port: int) -> int:
        if port > 65535:
            raise self.fail(e, f"{e.key}: port {port} is out of range")
        return port

    def authorization(self, e: Entry) -> None:
        c = self.changes
        users: list[Entry] | None = None
        default: Permissions | None = None
        for sub in self.map_(e).entries.values():
            k = sub.key.lower()
            if k in ("user", "username"):
                c["user"] = self.name_(sub)
            elif k in ("pass", "password"):
                c["password"] = self.name_(sub)
            elif k == "token":
                c["token"] = self.name_(sub)
            elif k == "timeout":
                c["auth_timeout"] = self.seconds(sub)
            elif k == "users":
                users = self.users_array(sub)
            elif k in ("default_permission", "default_permissions", "permissions"):
                default = self.permissions(sub)
            elif not sub.used:
                raise self.unknown(sub, "authorization")
        if c.get("token") and c.get("user"):
            raise self.fail(e, "can not have a token and a user/password in authorization")
        if users is not None or self.changes.get("users"):
            if c.get("user"):
                raise self.fail(e, "Can not have a single user/pass and a users array")
            if c.get("token"):
                raise self.fail(e, "Can not have a token and a users array")
        if users is not None:
            self.add_users(users, GLOBAL_ACCOUNT, default)

    def accounts(self, e: Entry) -> None:
        names = list(self.changes.get("accounts", ()))
        n = e.node
        if n.kind == "array":  # a plain list of account names
            for item in n.value:
                if item.kind != "string":
                    raise self.fail(item, "accounts: expected an account name, got "
                                          f"{_describe(item)}")
                self.account_name(item, item.value, names)
            self.changes["accounts"] = tuple(names)
            return
        for acc in self.map_(e).entries.values():
            if acc.used:
                continue
            if acc.node.kind != "map":
                raise self.fail(acc.node, "Expected map entries for accounts")
            self.account_name(acc, acc.key, names)
            users: list[Entry] | None = None
            default: Permissions | None = None
            for sub in acc.node.value.entries.values():
                k = sub.key.lower()
                if k == "users":
                    users = self.users_array(sub)
                elif k == "default_permissions":
                    default = self.permissions(sub)
                elif k == "jetstream":
                    self.account_js_entries.append((acc.key, sub))
                elif k in ("msg_trace", "trace_dest"):
                    self.account_msg_trace(sub, acc.key)
                elif k == "limits":
                    self.account_conn_limits(sub, acc.key)
                elif k == "exports":
                    self.account_exports(sub, acc.key)
                elif k == "imports":
                    self.account_imports(sub, acc.key)
                elif k in ("mappings", "maps"):
                    self.account_mappings(sub, acc.key)
                elif sub.used:
                    continue
                elif k in ("nkey",):
                    raise self.fail(sub, f'field "{sub.key}" in account {acc.key!r} is a '
                                         "nats-server setting that minijs does not support")
                else:
                    raise self.fail(sub, f'unknown field "{sub.key}" in account {acc.key!r}')
            if users is not None:
                self.add_users(users, acc.key, default)
        self.changes["accounts"] = tuple(names)

    def account_conn_limits(self, e: Entry, account: str) -> None:
        """nats-server's ``parseAccountLimits``: ``limits { max_connections (max_conn),
        max_subscriptions (max_subs), max_payload (max_pay), max_leafnodes (max_leafs) }``."""
        n = e.node
        if n.kind != "map":
            raise self.fail(n, "Expected account limits to be a map/struct, got "
                               f"{_describe(n)}")
        names = {"max_connections": "max_connections", "max_conn": "max_connections",
                 "max_subscriptions": "max_subscriptions", "max_subs": "max_subscriptions",
                 "max_payload": "max_payload", "max_pay": "max_payload",
                 "max_leafnodes": "max_leafnodes", "max_leafs": "max_leafnodes"}
        values: dict[str, int] = {}
        for sub in n.value.entries.values():
            name = names.get(sub.key.lower())
            if name is None:
                if sub.used:
                    continue
                raise self.fail(sub, f'Unknown field "{sub.key}" parsing account limits')
            if sub.node.kind != "int":
                raise self.fail(sub, f'account limits: "{sub.key}" expects an integer, got '
                                     f"{_describe(sub.node)}")
            values[name] = sub.node.value
        limits = dict(self.changes.get("account_limits", ()))
        limits[account] = AccountConnLimits(**values)
        self.changes["account_limits"] = tuple(limits.items())

    # -- exports, imports, mappings (opts.go parseAccountExports/Imports/Mappings)

    def account_exports(self, e: Entry, account: str) -> None:
        n = e.node
        if n.kind != "array":
            raise self.fail(e, f"Exports should be an array, got {go_type(n)}")
        exports = list(self.changes.get("exports", ()))
        for item in n.value:
            exports.append(self.export_item(item, account))
        self.changes["exports"] = tuple(exports)

    def export_item(self, item: Node, account: str) -> Export:
        """``parseExportStreamOrService``: ``{stream|service: subject, accounts, response_type,
        response_threshold}``."""
        if item.kind != "map":
            raise self.fail(item, "Export Items should be a map with type entry, got "
                                  f"{go_type(item)}")
        subject = kind = None
        accounts: tuple[str, ...] | None = None
        rt: str | None = None
        rt_entry: Entry | None = None
        threshold: float | None = None
        token_position = 0
        allow_trace = False
        trace_entry: Entry | None = None
        for p in item.value.entries.values():
            k = p.key.lower()
            v = p.node
            if k in ("stream", "service"):
                if kind is not None and kind != k:
                    raise self.fail(p, f"Detected {k} {_go_quote(str(v.value))} but already saw "
                                       f"a {kind}")
                if k == "stream" and rt_entry is not None:
                    raise self.fail(rt_entry, "Detected response directive on non-service")
                if k == "stream" and trace_entry is not None:
                    raise self.fail(trace_entry, "Detected allow_trace directive on non-service")
                if v.kind != "string":
                    raise self.fail(p, f"Expected {k} name to be string, got {go_type(v)}")
                kind, subject = k, v.value
            elif k in ("response", "response_type"):
                if rt is not None:
                    raise self.fail(p, "Duplicate response type definition")
                if v.kind != "string":
                    raise self.fail(p, f"Expected response type to be string, got {go_type(v)}")
                rt = {"single": "Singleton", "singleton": "Singleton", "stream": "Stream",
                      "chunk": "Chunked", "chunked": "Chunked"}.get(v.value.lower())
                if rt is None:
                    raise self.fail(p, f"Unknown response type: {_go_quote(v.value)}")
                rt_entry = p
                if kind == "stream":
                    raise self.fail(p, "Detected response directive on non-service")
            elif k in ("threshold", "response_threshold", "response_max_time", "response_time"):
                if threshold is not None:
                    raise self.fail(p, "Duplicate response threshold detected")
                if v.kind != "string":
                    raise self.fail(p, "Expected response threshold to be a parseable time "
                                       f"duration, got {go_type(v)}")
                try:
                    threshold = parse_duration(v.value)
                except ValueError:
                    raise self.fail(p, "Expected response threshold to be a parseable time "
                                       f"duration, got {_go_quote(v.value)}") from None
                rt_entry = rt_entry or p
                if kind == "stream":
                    raise self.fail(p, "Detected response directive on non-service")
            elif k == "accounts":
                if v.kind != "array" or any(a.kind != "string" for a in v.value):
                    raise self.fail(p, "accounts: expected an array of account names")
                accounts = tuple(a.value for a in v.value)
            elif k == "account_token_position":
                token_position = self.int_(p)
            elif k == "allow_trace":
                allow_trace = self.bool_(p)
                trace_entry = p
                if kind == "stream":
                    raise self.fail(p, "Detected allow_trace directive on non-service")
            elif k == "latency":
                raise self.fail(p, f'field "{p.key}" in exports is a nats-server setting that '
                                   "minijs does not support")
            elif not p.used:
                raise self.fail(p, f'unknown field "{p.key}"')
        if kind is None:
            # nats-server silently ignores an entry with neither; so does minijs.
            return Export(account, "", False)
        if kind == "stream":
            return Export(account, subject or "", False, accounts, token_position=token_position)
        extra: dict[str, Any] = {"token_position": token_position, "allow_trace": allow_trace}
        if rt is not None:
            extra["response_type"] = rt
        if threshold is not None:
            extra["response_threshold"] = threshold
        return Export(account, subject or "", True, accounts, **extra)

    def account_imports(self, e: Entry, account: str) -> None:
        n = e.node
        if n.kind != "array":
            raise self.fail(e, f"Imports should be an array, got {go_type(n)}")
        imports = list(self.changes.get("imports", ()))
        services: dict[str, list[Import]] = {}
        for item in n.value:
            imp = self.import_item(item, account)
            if imp is None:
                continue
            if imp.service:
                for dup in services.get(imp.to, ()):
                    if dup.source == imp.source:
                        raise self.fail(item, f"Duplicate service import subject "
                                              f"{_go_quote(imp.to)}, previously used in import "
                                              f"for account {_go_quote(dup.source)}, subject "
                                              f"{_go_quote(dup.subject)}")
                services.setdefault(imp.to, []).append(imp)
            imports.append(imp)
        self.changes["imports"] = tuple(imports)

    def import_item(self, item: Node, account: str) -> Import | None:
        """``parseImportStreamOrService``: ``{stream|service: {account, subject}, prefix|to}``."""
        if item.kind != "map":
            raise self.fail(item, "Import Items should be a map with type entry, got "
                                  f"{go_type(item)}")
        kind = source = subject = None
        prefix = to = ""
        share = allow_trace = False
        trace_entry: Entry | None = None
        for p in item.value.entries.values():
            k = p.key.lower()
            v = p.node
            if k in ("stream", "service"):
                if kind is not None and kind != k:
                    raise self.fail(p, f"Detected {k} but already saw a {kind}")
                if v.kind != "map":
                    raise self.fail(p, f"{k.capitalize()} entry should be an account map, got "
                                       f"{go_type(v)}")
                source = subject = ""
                for a in v.value.entries.values():
                    ak = a.key.lower()
                    if ak == "account":
                        source = self.name_(a)
                    elif ak == "subject":
                        subject = self.name_(a)
                    elif not a.used:
                        raise self.fail(a, f'unknown field "{a.key}"')
                if not source or not subject:
                    raise self.fail(p, "Expect an account name and a subject")
                if k == "service" and trace_entry is not None:
                    raise self.fail(trace_entry, "Detected allow_trace directive on a non-stream")
                kind = k
            elif k == "prefix":
                prefix = self.name_(p)
            elif k == "to":
                to = self.name_(p)
            elif k == "share":
                share = self.bool_(p)
            elif k == "allow_trace":
                if kind == "service":
                    raise self.fail(p, "Detected allow_trace directive on a non-stream")
                allow_trace = self.bool_(p)
                trace_entry = p
            elif not p.used:
                raise self.fail(p, f'unknown field "{p.key}"')
        if kind is None:
            return None  # neither stream nor service: nats-server ignores the entry
        if kind == "stream":
            if prefix and to:
                raise self.fail(item, "Stream import can not have a 'prefix' and a 'to' property")
            return Import(account, False, source or "", subject or "", to, prefix,
                          allow_trace=allow_trace)
        return Import(account, True, source or "", subject or "", to or subject or "",
                      share=share)

    def account_mappings(self, e: Entry, account: str) -> None:
        """``parseAccountMappings``: ``{src: dest}``, ``{src: {destination, weight}}`` or
        ``{src: [{destination, weight}, ...]}``, checked as ``AddWeightedMappings`` does."""
        mappings = [m for m in self.changes.get("mappings", ()) if m.account != account]
        for p in self.map_(e).entries.values():
            if p.used:
                continue
            src = p.key
            if not _valid_subject(src):
                raise self.fail(e, f"Subject {_go_quote(src)} is not a valid subject")
            v = p.node
            if v.kind == "string":
                dests = [(v.value, 100, "")]
            elif v.kind in ("map", "array"):
                dests = [self.map_dest(d) for d in (v.value if v.kind == "array" else [v])]
            else:
                raise self.fail(p, f"Unknown type {go_type(v)} for mapping destination")
            err = _check_mapping(src, dests)
            if err:
                if v.kind == "string":
                    raise self.fail(p, f"Error adding mapping for {_go_quote(src)} to "
                                       f"{_go_quote(v.value)} : {err}")
                raise self.fail(p, f"Error adding mapping for {_go_quote(src)} : {err}")
            mappings.append(Mapping(account, src, tuple((d, w) for d, w, c in dests if not c)))
        self.changes["mappings"] = tuple(mappings)

    def map_dest(self, n: Node) -> tuple[str, int, str]:
        if n.kind != "map":
            raise self.fail(n, "Expected an entry for the mapping destination")
        subject, weight, cluster = "", None, ""
        for p in n.value.entries.values():
            k = p.key.lower()
            v = p.node
            if k in ("dest", "destination"):
                subject = self.name_(p)
            elif k == "weight":
                if v.kind == "string":
                    text = v.value[:-1] if v.value.endswith("%") else v.value
                    if not re.fullmatch(r"[+-]?[0-9]+", text):
                        raise self.fail(p, f"Invalid weight {_go_quote(text)} for mapping "
                                           "destination")
                    weight = int(text)
                elif v.kind == "int":
                    weight = v.value
                else:
                    raise self.fail(p, f"Unknown entry type for weight of {v.value}\n")
                if weight > 100 or weight < 0:
                    raise self.fail(p, f"Invalid weight {weight} for mapping destination")
            elif k == "cluster":
                cluster = self.name_(p)
            else:
                raise self.fail(p, f"Unknown field {_go_quote(p.key)} for mapping destination")
        if weight is None:
            raise self.fail(n, f"Missing weight for mapping destination {_go_quote(subject)}")
        return subject, weight, cluster

    def check_imports(self) -> None:
        """What nats-server checks once every account is read: export and import accounts
        exist, imports are authorized by an export, service imports form no cycle."""
        exports = self.changes.get("exports", ())
        imports = self.changes.get("imports", ())
        if not exports and not imports:
            return
        e = self.accounts_entry
        line, col = (e.line, e.col if e.line > 1 else 0) if e is not None else (1, 0)
        err = check_imports(self.changes.get("accounts", ()), exports, imports)
        if err:
            raise ConfigError(err, self.path, line, col)

    def account_msg_trace(self, e: Entry, account: str) -> None:
        """nats-server's ``parseAccountMsgTrace``: a destination, or ``{dest, sampling}``
        (sampling 1..100, a number or a percentage; 100 when only a destination is given).
        What a ``traceparent`` header of the account's clients is traced to."""
        dest = ""
        sampling = 0

        def take_dest(node: Node) -> str:
            if node.kind != "string":
                raise self.fail(node, f'Field "{e.key}" should be a string, got {_describe(node)}')
            if not _valid_publish_subject(node.value):
                raise self.fail(node, f"Trace destination {_go_quote(node.value)} is not valid")
            return node.value

        n = e.node
        if n.kind == "map":
            for sub in n.value.entries.values():
                k = sub.key.lower()
                if k == "dest":
                    dest = take_dest(sub.node)
                elif k == "sampling":
                    v = sub.node
                    if v.kind == "int":
                        num = v.value
                    elif v.kind == "string":
                        text = v.value[:-1] if v.value.endswith("%") else v.value
                        if not re.fullmatch(r"[+-]?[0-9]+", text):
                            raise self.fail(v, "Invalid trace destination sampling value "
                                               f"{_go_quote(v.value)}")
                        num = int(text)
                    else:
                        raise self.fail(v, f'Trace destination sampling field "{sub.key}" should '
                                           "be an integer or a percentage")
                    if num <= 0 or num > 100:
                        raise self.fail(v, f"Ttrace destination sampling value {num} is invalid, "
                                           "needs to be [1..100]")
                    sampling = num
                else:
                    raise self.fail(sub, f'Unknown field "{sub.key}" parsing account message '
                                         f'trace map/struct "{e.key}"')
        else:
            dest = take_dest(n)
        if dest and not sampling:
            sampling = 100
        traces = {a: (d, p) for a, d, p in self.changes.get("account_traces", ())}
        if dest:
            traces[account] = (dest, sampling)
        else:
            traces.pop(account, None)
        self.changes["account_traces"] = tuple((a, d, p) for a, (d, p) in traces.items())

    def account_name(self, where: Entry | Node, name: str, names: list[str]) -> None:
        if name in (GLOBAL_ACCOUNT, "$SYS"):
            raise self.fail(where, f"{name!r} is a Reserved Account".replace("'", '"'))
        if name in names:
            raise self.fail(where, f"Duplicate Account Entry: {name}")
        names.append(name)

    def users_array(self, e: Entry) -> list[Entry]:
        """``users = [ {user, password, permissions}, ... ]``: the entries, checked."""
        n = e.node
        if n.kind != "array":
            raise self.fail(n, f"Expected users field to be an array, got {_describe(n)}")
        out = []
        for item in n.value:
            if item.kind != "map":
                raise self.fail(item, "Expected user entry to be a map/struct, got "
                                      f"{_describe(item)}")
            out.append(Entry("user", item.line, item.col, item))
        return out

    def add_users(self, entries: list[Entry], account: str, default: Permissions | None
                  ) -> None:
        users = list(self.changes.get("users", ()))
        for e in entries:
            name = password = nkey = None
            perms: Permissions | None = None
            conn_types: tuple[str, ...] | None = None
            last: Entry | None = None
            for sub in e.node.value.entries.values():
                k = sub.key.lower()
                last = sub
                if k in ("user", "username"):
                    name = self.name_(sub)
                elif k in ("pass", "password"):
                    password = self.name_(sub)
                elif k in ("permission", "permissions", "authorization"):
                    perms = self.permissions(sub)
                elif k == "nkey":
                    nkey = self.name_(sub)
                elif k in ("allowed_connection_types", "connection_types", "clients"):
                    from minijs.confauth import connection_types

                    conn_types = connection_types(self, sub)
                elif sub.used:
                    continue
                elif k == "proxy_required":
                    raise self.fail(sub, f'field "{sub.key}" in users is a nats-server setting '
                                         "that minijs does not support")
                else:
                    raise self.fail(sub, f'unknown field "{sub.key}"')
            if nkey is not None:
                from minijs.confauth import check_nkey_user

                check_nkey_user(self, last or e.node, nkey, name, password)
                if any(u.user == nkey for u in users):
                    raise ConfigError(f'Duplicate nkey "{nkey}" detected', self.path,
                                      e.node.line, 0)
                users.append(User(nkey, "", perms if perms is not None else default, account,
                                  nkey=True, connection_types=conn_types))
                continue
            if not name:
                raise self.fail(e.node, "User entry requires a user")
            if any(u.user == name for u in users):
                raise self.fail(e.node, f'Duplicate user "{name}" detected')
            users.append(User(name, password or "", perms if perms is not None else default,
                              account, connection_types=conn_types))
        self.changes["users"] = tuple(users)

    def permissions(self, e: Entry) -> Permissions:
        """nats-server's ``permissions`` block (parseUserPermissions)."""
        n = e.node
        if n.kind != "map":
            raise self.fail(n, f"Expected permissions to be a map/struct, got {_describe(n)}")
        pub: tuple[tuple[str, ...] | None, tuple[str, ...] | None] | None = None
        sub_: tuple[tuple[str, ...] | None, tuple[str, ...] | None] | None = None
        responses: ResponsePermission | None = None
        for p in n.value.entries.values():
            k = p.key.lower()
            if k in ("pub", "publish", "import"):
                pub = self.subject_permission(p, allow_queue=False)
            elif k in ("sub", "subscribe", "export"):
                sub_ = self.subject_permission(p, allow_queue=True)
            elif k in ("publish_allow_responses", "allow_responses"):
                responses = self.allow_responses(p)
            elif not p.used:
                raise self.fail(p, f'Unknown field "{p.key}" parsing permissions')
        pub_allow, pub_deny = pub if pub is not None else (None, None)
        sub_allow, sub_deny = sub_ if sub_ is not None else (None, None)
        if responses is not None and pub_allow is None:
            pub_allow = ()  # allow_responses turns off the blanket publish allow
        return Permissions(pub_allow, pub_deny or None, sub_allow or None, sub_deny or None,
                           responses)

    def subject_permission(self, e: Entry, allow_queue: bool
                           ) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None] | None:
        n = e.node
        if n.kind != "map":
            return self.perm_subjects(n, allow_queue), None  # the short form: allow only
        if not n.value.entries:
            return None
        allow = deny = None
        for p in n.value.entries.values():
            k = p.key.lower()
            if k == "allow":
                allow = self.perm_subjects(p.node, allow_queue)
            elif k == "deny":
                deny = self.perm_subjects(p.node, allow_queue)
            elif not p.used:
                raise self.fail(p, f'Unknown field name "{p.key}" parsing subject permissions, '
                                   "only 'allow' or 'deny' are permitted")
        return allow, deny

    def perm_subjects(self, n: Node, allow_queue: bool) -> tuple[str, ...] | None:
        if n.kind == "string":
            subjects = [n.value]
        elif n.kind == "array":
            subjects = []
            for item in n.value:
                if item.kind != "string":
                    raise self.fail(item, "Subject in permissions array cannot be cast to string")
                subjects.append(item.value)
        else:
            kind = {"int": "int64", "float": "float64", "bool": "bool", "map": "map"}[n.kind]
            raise self.fail(n, "Expected subject permissions to be a subject, or array of "
                               f"subjects, got {kind}")
        if not subjects:
            return None  # "publish = []" is no list at all, as in nats-server
        for s in subjects:
            if _valid_subject(s):
                continue
            parts = s.split()
            if not allow_queue or len(parts) != 2:
                raise self.fail(n, f'subject "{s}" is not a valid subject')
            if not _valid_subject(parts[0]):
                raise self.fail(n, f'subject "{parts[0]}" is not a valid subject')
            if not _valid_subject(parts[1]):
                raise self.fail(n, f'queue "{parts[1]}" is not a valid queue')
        return tuple(subjects)

    def allow_responses(self, e: Entry) -> ResponsePermission | None:
        n = e.node
        if n.kind == "bool":
            return ResponsePermission() if n.value else None
        if n.kind != "map":
            raise self.fail(n, "error parsing response permissions, expected a boolean or a map")
        max_msgs, expires = ResponsePermission().max_msgs, ResponsePermission().expires
        for p in n.value.entries.values():
            k = p.key.lower()
            if k in ("max", "max_msgs", "max_messages", "max_responses"):
                value = self.int_(p)
                if value != 0:
                    max_msgs = value
            elif k in ("expires", "expiration", "ttl"):
                if p.node.kind != "string":
                    raise self.fail(p.node, "error parsing expires, not a duration string")
                try:
                    ttl = parse_duration(p.node.value)
                except ValueError as exc:
                    raise self.fail(p.node, f"error parsing expires: {exc}") from None
                if ttl != 0:
                    expires = ttl
            elif not p.used:
                raise self.fail(p, f'Unknown field "{p.key}" parsing permissions')
        return ResponsePermission(max_msgs, expires)

    def check_auth(self) -> None:
        """Cross-checks nats-server makes once the whole file is read."""
        c = self.changes
        if c.get("operator") or c.get("resolver") or c.get("resolver_preload"):
            from minijs.confauth import check_operator_mode

            check_operator_mode(self)
            return
        users = c.get("users", ())
        accounts = c.get("accounts", ())
        if users and (c.get("user") or c.get("token")):
            what = "a single user/pass" if c.get("user") else "a token"
            raise ConfigError(f"Can not have {what} and accounts", self.path)
        name = c.get("no_auth_user")
        if name:
            e = self.no_auth_entry
            assert e is not None  # set together with changes["no_auth_user"]
            if not users:
                raise self.fail(e, f'no_auth_user: "{name}" present, but users/nkeys are '
                                   "not defined")
            if not any(u.user == name for u in users):
                raise self.fail(e, f'no_auth_user: "{name}" not present as user or nkey in '
                                   "authorization block or account configuration")
        system = c.get("system_account")
        if system and system != "$SYS" and system not in accounts:
            assert self.system_entry is not None  # set together with changes["system_account"]
            raise self.fail(self.system_entry, "system account not a valid account")
        enabled = []
        for account, e in self.account_js_entries:
            limits = self.account_jetstream(e)
            if limits is not None:
                enabled.append((account, limits))
        if self.account_js_entries:
            c["account_jetstream"] = tuple(enabled)

    def jetstream(self, e: Entry) -> None:
        c = self.changes
        n = e.node
        if n.kind == "bool":
            c["jetstream"] = n.value
            return
        if n.kind == "string":
            word = n.value.lower()
            if word in ("enabled", "enable"):
                c["jetstream"] = True
            elif word in ("disabled", "disable"):
                c["jetstream"] = False
            else:
                raise self.fail(n, "expected 'enabled' or 'disabled' for jetstream, "
                                   f"got {n.value!r}")
            return
        enable = True
        for sub in self.map_(e).entries.values():
            k = sub.key.lower()
            if k in ("store", "store_dir", "storedir"):
                self.store_dir(sub)
            elif k in ("enable", "enabled"):
                enable = self.bool_(sub)
            elif not self.jetstream_option(k, sub) and not sub.used:
                raise self.unknown(sub, "jetstream")
        c["jetstream"] = enable

    # -- jetstream { } options (nats-server's parseJetStream); kept together for merging

    def jetstream_option(self, k: str, sub: Entry) -> bool:
        """One key of the ``jetstream { }`` map besides enable/store; False if unknown."""
        c = self.changes
        mapped = _MAPPED_JETSTREAM_KEYS.get(k)
        if mapped is not None:
            name, read = mapped
            value = getattr(self, read)(sub)
            if name:
                c[name] = value
        elif k in ("sync", "sync_interval"):
            n = sub.node
            if n.kind == "string" and n.value.lower() == "always":
                c["js_sync_interval"] = 120.0
                c["js_sync_always"] = True
            elif n.kind != "string":
                raise self.fail(sub, f'invalid use of field "{sub.key}": {sub.key} should be '
                                     "converted to a duration")
            else:
                c["js_sync_interval"] = self.duration(sub)
        elif k == "domain":
            domain = self.str_(sub)
            # nats-server's validateJetStreamOptions, at startup (no file position)
            if domain and (re.search(r"[\s]", domain) or not domain.strip(".")):
                raise ConfigError(f'invalid domain name: derived "$JS.{domain}.API.>" is not '
                                  "a valid subject")
            if re.search(r"[.*>\s\\/]", domain):
                raise ConfigError("invalid domain name: may not contain ., * or >")
            c["js_domain"] = domain
        elif k == "unique_tag":
            c["js_unique_tag"] = self.str_(sub).strip().lower()
        elif k in ("max_buffered_msgs", "request_queue_limit", "info_queue_limit"):
            if sub.node.kind != "int":
                raise self.fail(sub, f'Expected a parseable size for "{sub.key}", '
                                     f"got {sub.node.value}")
            c["js_" + k] = sub.node.value
        elif k in ("meta_compact", "max_concurrent_io"):
            n = sub.node
            lo, hi = (0, 1 << 63) if k == "meta_compact" else (4, 8192)
            if n.kind != "int" or not lo <= n.value <= hi:
                extra = "" if k == "meta_compact" else " between 4 and 8192"
                raise self.fail(sub, f'Expected an absolute size for "{sub.key}"{extra}, '
                                     f"got {n.value}")
        elif k == "meta_compact_size":
            if self.storage_size(sub) < 0:
                raise self.fail(sub, f'Expected an absolute size for "{sub.key}", '
                                     f"got {sub.node.value}")
        elif k == "limits":
            c["js_limits"] = self.jetstream_limits(sub)
        else:
            return False
        return True

    def jetstream_limits(self, e: Entry) -> Any:
        """``jetstream { limits { max_ack_pending, max_ha_assets, max_request_batch,
        duplicate_window, batch { ... } } }`` (nats-server's parseJetStreamLimits)."""
        values: dict[str, int] = {}
        for sub in self.map_(e).entries.values():
            k = sub.key.lower()
            if k in ("max_ack_pending", "max_ha_assets", "max_request_batch"):
                values[k] = self.int_(sub)
            elif k == "duplicate_window":
                values["duplicate_window"] = self.go_duration_ns(sub)
            elif k == "batch":
                for b in self.map_(sub).entries.values():
                    bk = b.key.lower()
                    if bk in ("max_inflight_per_stream", "max_inflight_total", "max_msgs"):
                        values["batch_" + bk] = self.int_(b)
                    elif bk == "timeout":
                        values["batch_timeout"] = self.go_duration_ns(b)
                    elif not b.used:
                        raise self.fail(b, f'unknown field "{b.key}"')
            elif not sub.used:
                raise self.fail(sub, f'unknown field "{sub.key}"')
        return JetStreamLimitOpts(**values)

    def go_duration_ns(self, e: Entry) -> int:
        """A Go ``time.ParseDuration`` string (no bare numbers), in nanoseconds."""
        n = e.node
        if n.kind != "string":
            raise self.fail(n, f"{e.key}: expected a duration such as \"2m\", got {_describe(n)}")
        try:
            return round(parse_duration(n.value) * 1_000_000_000)
        except ValueError as exc:
            raise self.fail(n, str(exc)) from None

    def account_jetstream(self, e: Entry) -> AccountLimits | None:
        """An account's ``jetstream`` value (nats-server's parseJetStreamForAccount): ``None``
        when disabled, else its limits (-1 / ``False`` for what is not set). For the accounts
        block: ``accounts { A: { jetstream: { max_mem: 1G, max_streams: 10 } } }``."""
        n = e.node
        if n.kind == "bool":
            return AccountLimits() if n.value else None
        if n.kind == "string":
            word = n.value.lower()
            if word in ("enabled", "enable"):
                return AccountLimits()
            if word in ("disabled", "disable"):
                return None
            raise self.fail(n, "Expected 'enabled' or 'disabled' for string value, "
                               f"got '{n.value}'")
        if n.kind != "map":
            raise self.fail(n, "Expected map, bool or string to define JetStream, got "
                               f"{_describe(n)}")
        values: dict[str, Any] = {}
        for sub in n.value.entries.values():
            k = sub.key.lower()
            name = _ACCOUNT_JS_KEYS.get(k)
            if name == "max_bytes_required":
                if sub.node.kind != "bool":
                    raise self.fail(sub, f'Expected a parseable bool for "{sub.key}", '
                                         f"got {sub.node.value}")
                values[name] = sub.node.value
            elif name is not None:
                if sub.node.kind != "int":
                    raise self.fail(sub, f'Expected a parseable size for "{sub.key}", '
                                         f"got {sub.node.value}")
                values[name] = sub.node.value
            elif k == "cluster_traffic":
                if sub.node.kind != "string" or sub.node.value not in ("system", "owner", ""):
                    raise self.fail(sub, "Expected 'system' or 'owner' string value for "
                                         f'"{sub.key}", got {sub.node.value}')
            elif not sub.used:
                raise self.fail(sub, f'unknown field "{sub.key}"')
        return AccountLimits(**values)

    # -- end of the jetstream { } options

    def store_dir(self, e: Entry) -> None:
        if "store_dir" in self.changes:
            raise self.fail(e, "duplicate 'store_dir' configuration")
        self.changes["store_dir"] = self.str_(e)


def _valid_subject(subject: str) -> bool:
    """nats-server's IsValidSubject: non-empty tokens, no white space, ``>`` only last."""
    if not subject or any(ch.isspace() for ch in subject):
        return False
    tokens = subject.split(".")
    for i, tok in enumerate(tokens):
        if not tok or (tok == ">" and i != len(tokens) - 1):
            return False
    return True


def _client_port(port: int) -> int:
    """nats-server reads port 0 as "the default" (4222) and -1 as "any free port"."""
    if port == 0:
        return DEFAULT_PORT
    return RANDOM_PORT if port < 0 else port


def _http_port(port: int) -> int | None:
    """Monitoring port 0 means "no monitoring" in nats-server; -1 means any free port."""
    if port == 0:
        return None
    return RANDOM_PORT if port < 0 else port


#: An account's ``jetstream { }`` keys (nats-server's parseJetStreamForAccount) to AccountLimits.
_ACCOUNT_JS_KEYS = {
    "max_memory": "max_memory", "max_mem": "max_memory", "mem": "max_memory",
    "memory": "max_memory",
    "max_store": "max_storage", "max_file": "max_storage", "max_disk": "max_storage",
    "store": "max_storage", "disk": "max_storage",
    "max_streams": "max_streams", "streams": "max_streams",
    "max_consumers": "max_consumers", "consumers": "max_consumers",
    "max_bytes_required": "max_bytes_required", "max_stream_bytes": "max_bytes_required",
    "max_bytes": "max_bytes_required",
    "mem_max_stream_bytes": "memory_max_stream_bytes",
    "memory_max_stream_bytes": "memory_max_stream_bytes",
    "disk_max_stream_bytes": "storage_max_stream_bytes",
    "store_max_stream_bytes": "storage_max_stream_bytes",
    "max_ack_pending": "max_ack_pending",
}


#: nats-server settings minijs knows of but does not implement, per block: a clear error
#: ("not supported") rather than "unknown field", and never a silent no-op.
_UNSUPPORTED: dict[str, set[str]] = {
    "": {
        "gateway", "leafnodes", "leaf", "mqtt",
        "no_system_account", "no_sys_acc",
        "trusted", "trusted_keys", "resolver_tls",
        "resolver_pinned_accounts", "https", "https_port", "http_base_path",
        "syslog", "remote_syslog", "prof_port", "client_advertise",
        "max_traced_msg_len",
        "disable_sublist_cache", "no_sublist_cache", "connect_error_reports",
        "reconnect_error_reports", "default_js_domain", "logfile_size_limit",
        "log_size_limit", "logfile_max_num", "log_max_files", "max_closed_clients", "ocsp",
        "ocsp_cache", "max_subscription_tokens",
        "subject_mappings", "no_header_support", "disable_short_first_ping", "proxies",
        "write_timeout", "nkeys", "users", "tls_timeout", "jetstream_max_memory",
        "jetstream_max_storage", "max_outstanding_catchup", "system_account_name",
        "authorization_callout",
        # the rest of nats-server 2.15.1's top-level keys (probed with nats-server -t)
        "default_sentinel", "feature_flags", "log_max_num", "max_sub_tokens",
        "no_fast_producer_stall", "no_system", "prof_block_rate", "proxy_protocol",
        "server_metadata", "trace_headers",
    },
    "authorization": {"nkeys", "auth_callout", "auth_hook", "accounts", "proxy_required"},
    # Encryption at rest (and its TPM key source) is the one jetstream { } feature minijs
    # does not have: refused by name rather than storing in clear what was meant encrypted.
    "jetstream": {"key", "ek", "encryption_key", "prev_key", "prev_ek", "prev_encryption_key",
                  "cipher", "tpm"},
}


def parse_config(text: str, base: ServerConfig | None = None, *, path: str | None = None
                 ) -> ServerConfig:
    """Apply config-file text to ``base`` (default: a fresh ServerConfig) and return the copy."""
    base = base or ServerConfig()
    mapper = _Mapper(path)
    mapper.top(parse_text(text, path))
    mapper.check_auth()
    mapper.check_imports()
    if "tls" in mapper.changes or "websocket" in mapper.changes:
        from minijs import listenconf

        listenconf.finish(mapper)
    return base.with_overrides(**mapper.changes)


def load_config(path: str | os.PathLike[str], base: ServerConfig | None = None) -> ServerConfig:
    """Read a nats-server config file; settings in it override ``base``.

    Port values keep nats-server's meaning: ``0`` is the default (4222, or no monitoring for
    ``http_port``) and ``-1`` is any free port.
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ConfigError(f"error opening config file: {exc.strerror or exc}: {path}") from None
    return parse_config(text, base, path=path)


def config_digest(path: str | os.PathLike[str]) -> str:
    """``sha256:<hex>`` of a file, as nats-server prints for ``-t``."""
    with open(path, "rb") as f:
        return "sha256:" + hashlib.sha256(f.read()).hexdigest()
