"""The config-file pieces of nkey and operator authentication, as nats-server reads them
(``parseUsers``, ``parseAllowedConnectionTypes``, the operator and resolver keys), with its
error texts. Called by :mod:`minijs.confparse`, which hands itself in as ``mapper`` (its
``fail(where, message)`` makes a ``file:line:col:`` error)."""
from __future__ import annotations

from typing import Any

from minijs.auth import nkeys
from minijs.authconfig import CONNECTION_TYPES
from minijs.confsyntax import ConfigError, go_type, string_or_strings


def fail_at_key(mapper: Any, e: Any, message: str) -> ConfigError:
    """An error placed where nats-server places errors of a map entry: at its key, counting
    columns from 0."""
    return ConfigError(message, mapper.path, e.line, max(e.col - 1, 0))

def connection_types(mapper: Any, e: Any) -> tuple[str, ...]:
    """``allowed_connection_types``: a string or strings, upper-cased; an unknown one is
    nats-server's ``invalid connection types [...]``."""
    n = e.node
    items = string_or_strings(
        n, lambda item: mapper.fail(item, "error parsing allowed connection types: "
                                          "unsupported type in array"),
        lambda: fail_at_key(mapper, e, "error parsing allowed connection types: unsupported "
                                       f"type {go_type(n)}"))
    bad = [t for t in items if t.upper() not in CONNECTION_TYPES]
    if bad:
        shown = " ".join(f'"{t}"' for t in bad)
        raise fail_at_key(mapper, e, f"invalid connection types [{shown}]")
    out: list[str] = []
    for t in items:
        if t.upper() not in out:
            out.append(t.upper())
    return tuple(out)


def check_nkey_user(mapper: Any, where: Any, nkey: str, name: str | None,
                    password: str | None) -> None:
    """An nkey user entry: a valid public user key, without a user name or password."""
    if not nkeys.is_user_key(nkey):
        raise fail_at_key(mapper, where, "Not a valid public nkey for a user")
    if name or password:
        raise fail_at_key(mapper, where, "Nkey users do not take usernames or passwords")


# ----------------------------------------------------------------------------- operator mode


def operator_option(mapper: Any, key: str, e: Any) -> None:
    """``operator`` (a JWT or a file, or a list of them), ``resolver`` (``MEMORY``) and
    ``resolver_preload`` (``{ACCOUNT_KEY: JWT}``), as nats-server reads them."""
    from minijs.auth import jwt as jwtlib
    from minijs.operatormode import read_operator

    c = mapper.changes
    n = e.node
    if key == "resolver_preload":
        if n.kind != "map":
            raise mapper.fail(e, "preload should be a map of account_public_key:account_jwt")
        preload = []
        for entry in n.value.entries.values():
            if entry.node.kind != "string":
                raise mapper.fail(entry.node, "preload map value should be a string JWT")
            try:
                jwtlib.decode(entry.node.value, "account")
            except (jwtlib.JwtError, nkeys.NkeyError):
                raise mapper.fail(entry.node, "invalid account JWT") from None
            except nkeys.MissingCryptoError as exc:
                raise mapper.fail(entry.node, str(exc)) from None
            preload.append((entry.key, entry.node.value))
        c["resolver_preload"] = tuple(preload)
        mapper.resolver_preload_entry = e
        return
    if key in ("resolver", "account_resolver", "accounts_resolver"):
        import re

        if n.kind == "string" and re.match(r"(?i)(MEM|MEMORY)\s*", n.value):
            c["resolver"] = "MEMORY"
            return
        raise mapper.fail(e, f'field "{e.key}": minijs supports the MEMORY account resolver '
                             "only (resolver: MEMORY with resolver_preload); the URL and full/"
                             "cache (directory) resolvers are nats-server settings minijs "
                             "does not support")
    # operator
    names = string_or_strings(
        n, lambda _: mapper.fail(e, "error parsing operators: unsupported type *conf.token "
                                    "where string is expected"),
        lambda: mapper.fail(e, f"error parsing operators: unsupported type {go_type(n)}"))
    tokens = []
    for name in names:
        try:
            tokens.append(read_operator(name))
        except nkeys.MissingCryptoError as exc:
            raise mapper.fail(e, str(exc)) from None
        except (ValueError, jwtlib.JwtError) as exc:
            raise mapper.fail(e, f"error parsing operator JWT: {exc}") from None
    c["operator"] = tuple(tokens)
    mapper.operator_entry = e


def check_operator_mode(mapper: Any) -> None:
    """nats-server's ``validateTrustedOperators`` (and ``validateNoAuthUser``'s operator
    rule), with its messages."""
    from minijs.auth import jwt as jwtlib

    c = mapper.changes
    path = mapper.path

    def error(message: str) -> ConfigError:
        return ConfigError(message)  # nats-server's option checks name no file or line

    if not c.get("operator"):
        return  # a resolver without an operator: nats-server ignores it
    if c.get("no_auth_user"):
        raise error("no_auth_user not compatible with Trusted Operator")
    if not c.get("resolver"):
        # nats-server then resolves through the operator's account server URL
        urls = [jwtlib.decode(t, "operator").nats.get("account_server_url") or ""
                for t in c["operator"]]
        if len(urls) == 1 and urls[0]:
            raise error(f"the operator's account_server_url ({urls[0]}) asks for a URL account "
                        "resolver, which minijs does not support: add resolver: MEMORY and "
                        "resolver_preload with the account JWTs")
        if len(urls) == 1:
            raise error('could not fetch <"/accounts/">: Get "/accounts/": unsupported '
                        'protocol scheme ""')
        raise error("operators require an account resolver to be configured")
    if c.get("accounts"):
        raise error("operators do not allow Accounts to be configured directly")
    if c.get("users") or c.get("user") or c.get("token"):
        raise error("operators do not allow users to be configured directly")
    system = c.get("system_account")
    if system:
        found = [jwtlib.decode(t, "operator").nats.get("system_account") or ""
                 for t in c["operator"]]
        if any(found) and system not in found:
            raise error("system_account in config and operator JWT must be identical")
