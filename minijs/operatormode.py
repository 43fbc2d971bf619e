"""Operator mode: trusted operators, account JWTs from a memory resolver, user JWTs.

``operator`` (a JWT, inline or in a file) makes the server trust that operator's key and its
signing keys; ``resolver: MEMORY`` with ``resolver_preload`` hands it the account JWTs. Each
account JWT signed by a trusted key becomes a configured account, named by its public key, in
the server's one accounts machinery: its ``limits`` (``conn``, ``subs``, ``payload``, ``leaf``)
are the account's connection limits, its JetStream limits (``mem_storage``, ``disk_storage``,
``streams``, ``consumer``, ...) its JetStream account limits, its ``exports``, ``imports`` and
``mappings`` the account's (:mod:`minijs.core.imports`). :func:`expand` does this on the
server's config before anything is built from it.

A client logs in with a user JWT (CONNECT ``jwt``) and the INFO nonce signed by the user's key
(``sig``; none for a ``bearer_token`` user). :meth:`Operator.authenticate` checks what
nats-server's ``processClientOrLeafAuthentication`` checks, in its order, and fails each with
its debug line: the JWT's signature and times, the account (known, trusted, not expired), the
issuer (the account or one of its signing keys, a scoped key's template replacing the user's
permissions), bearer tokens the account allows, the connection type, the signature, the
account's revocations. The client then has the JWT's permissions (the account's
``default_permissions`` when it has none) and the smaller of its own and its account's
subscription and payload limits; its connection closes with ``User Authentication Expired``
when the JWT's ``exp`` passes (server clock).

The system account answers ``$SYS.REQ.ACCOUNT.<key>.CLAIMS.UPDATE`` (and the older
``$SYS.ACCOUNT.<key>.CLAIMS.UPDATE``) as a memory resolver does: a newer JWT of a known account
replaces it; live clients of that account are checked against its revocations
(``User Authentication Revoked``), connection limit and default permissions.
"""
from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

from minijs.auth import jwt as jwtlib
from minijs.auth import nkeys
from minijs.confsyntax import ConfigError

#: What an inline operator JWT starts with (a header ``{"typ":"JWT"...``, base64url).
_JWT_PREFIX = "eyJ"
#: nats-io/jwt's ``UserPermissionLimits`` fields: what a scoped signing key's template sets
#: and what a user it signs must leave empty.
_USER_PERMISSION_LIMITS = ("pub", "sub", "resp", "src", "times", "times_location", "subs",
                           "data", "payload", "bearer_token", "proxy_required",
                           "allowed_connection_types")
CLAIMS_UPDATE_SUBJECTS = ("$SYS.REQ.ACCOUNT.*.CLAIMS.UPDATE", "$SYS.ACCOUNT.*.CLAIMS.UPDATE")
ERR_EXPIRED = "User Authentication Expired"
ERR_ACCOUNT_EXPIRED = "Account Authentication Expired"
ERR_REVOKED = "User Authentication Revoked"
CLOSE_EXPIRED = "Authentication Expired"
CLOSE_REVOKED = "Credentials Revoked"


# ----------------------------------------------------------------------------- config


def read_operator(value: str) -> str:
    """An ``operator`` setting: a file holding the JWT (possibly decorated, as nsc writes
    it), or the JWT itself; raises ValueError with nats-server's reason."""
    try:
        with open(value, encoding="utf-8") as f:
            contents = f.read()
    except OSError as exc:
        if not value.startswith(_JWT_PREFIX):
            raise ValueError(f"open {value}: {(exc.strerror or str(exc)).lower()}") from None
        contents = value
    token = _undecorate(contents)
    jwtlib.decode(token, "operator")
    return token


def _undecorate(contents: str) -> str:
    """The JWT of a file that may wrap it in ``-----BEGIN ... JWT-----`` lines."""
    lines = [line.strip() for line in contents.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.startswith("---") and "BEGIN" in line and "JWT" in line and i + 1 < len(lines):
            return lines[i + 1]
    return contents.strip()


def expand(config: Any, log: Any = None, now: float | None = None) -> Any:
    """``config`` with the accounts of its operator mode filled in: each preloaded account
    JWT a trusted operator key signed becomes an account (named by its public key) with its
    limits, JetStream limits, exports, imports and mappings; others are left out (logged, as
    is an account whose JWT has expired at ``now``, the server's clock in seconds)."""
    from minijs.authconfig import AccountConnLimits
    from minijs.config import AccountLimits

    # In process, one operator may be given alone, as a file, and the preload as a dict.
    operators = (config.operator,) if isinstance(config.operator, str) else config.operator
    preload = config.resolver_preload
    if isinstance(preload, dict):
        preload = tuple(preload.items())
    try:
        operators = tuple(read_operator(o) for o in operators)
    except (ValueError, jwtlib.JwtError) as exc:
        raise ConfigError(f"error parsing operator JWT: {exc}") from None
    config = replace(config, operator=operators, resolver_preload=tuple(preload))
    trusted = trusted_keys(config.operator)
    accounts: list[str] = []
    conn_limits: list[tuple[str, Any]] = []
    js: list[tuple[str, Any]] = []
    exports: list[Any] = []
    imports: list[Any] = []
    mappings: list[Any] = []
    if now is None:
        now = time.time()  # (a reload's check, outside any server)
    for key, token in config.resolver_preload:
        try:
            claims = jwtlib.decode(token, "account")
        except (jwtlib.JwtError, nkeys.NkeyError) as exc:
            if log is not None:
                log.warn(f"Account JWT for {key} not valid: {exc}")
            continue
        if claims.subject != key or claims.issuer not in trusted:
            if log is not None:
                log.warn(f"Account JWT for {key} not signed by a trusted operator")
            continue
        if claims.expired(now) and log is not None:
            log.warn(f"Account JWT for {key} has expired")
        accounts.append(key)
        limits = claims.nats.get("limits") or {}
        conn_limits.append((key, AccountConnLimits(
            max_connections=_limit(limits, "conn"), max_subscriptions=_limit(limits, "subs"),
            max_payload=_limit(limits, "payload"), max_leafnodes=_limit(limits, "leaf"))))
        if _limit(limits, "mem_storage", 0) or _limit(limits, "disk_storage", 0):
            js.append((key, AccountLimits(
                max_memory=_limit(limits, "mem_storage", 0),
                max_storage=_limit(limits, "disk_storage", 0),
                max_streams=_limit(limits, "streams"), max_consumers=_limit(limits, "consumer"),
                max_ack_pending=_limit(limits, "max_ack_pending"),
                memory_max_stream_bytes=_limit(limits, "mem_max_stream_bytes", -1) or -1,
                storage_max_stream_bytes=_limit(limits, "disk_max_stream_bytes", -1) or -1,
                max_bytes_required=bool(limits.get("max_bytes_required")))))
        exports.extend(_exports(key, claims))
        imports.extend(_imports(key, claims))
        mappings.extend(_mappings(key, claims))
    system = config.system_account
    if not system:
        for token in config.operator:
            system = jwtlib.decode(token, "operator").nats.get("system_account") or None
            if system:
                break
    if system and system not in accounts:
        accounts.append(system)
    from minijs.core.imports import check_imports

    kept = []
    for imp in imports:
        if imp.source in accounts and not check_imports(tuple(accounts), tuple(exports), (imp,)):
            kept.append(imp)
        elif log is not None:
            log.warn(f"Import of {imp.subject!r} from {imp.source} into {imp.account} not "
                     "authorized by an export: left out")
    return replace(config, accounts=tuple(accounts), account_limits=tuple(conn_limits),
                   account_jetstream=tuple(js), exports=tuple(exports), imports=tuple(kept),
                   mappings=tuple(mappings), system_account=system)


def trusted_keys(operators: tuple[str, ...]) -> set[str]:
    keys: set[str] = set()
    for token in operators:
        claims = jwtlib.decode(token, "operator")
        keys.add(claims.subject)
        keys.update(k for k in claims.nats.get("signing_keys") or () if isinstance(k, str))
    return keys


def _limit(limits: dict[str, Any], key: str, default: int = -1) -> int:
    value = limits.get(key, default)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else default


def _exports(account: str, claims: jwtlib.Claims) -> list[Any]:
    from minijs.authconfig import Export

    out = []
    for e in claims.nats.get("exports") or ():
        if not isinstance(e, dict) or not e.get("subject"):
            continue
        service = e.get("type") == "service"
        threshold = e.get("response_threshold") or 0
        out.append(Export(
            account, str(e["subject"]), service,
            accounts=() if e.get("token_req") else None,
            response_type=str(e.get("response_type") or "Singleton"),
            response_threshold=threshold / 1e9 if threshold else 120.0,
            token_position=int(e.get("account_token_position") or 0),
            allow_trace=bool(e.get("allow_trace"))))
    return out


def _imports(account: str, claims: jwtlib.Claims) -> list[Any]:
    from minijs.authconfig import Import

    out = []
    for i in claims.nats.get("imports") or ():
        if not isinstance(i, dict) or not i.get("subject") or not i.get("account"):
            continue
        subject = str(i["subject"])
        local = str(i.get("local_subject") or "")
        to = str(i.get("to") or "")
        if i.get("type") == "service":
            out.append(Import(account, True, str(i["account"]), subject, to=local or to,
                              share=bool(i.get("share"))))
        else:
            out.append(Import(account, False, str(i["account"]), subject, to=local,
                              prefix="" if local else to, allow_trace=bool(i.get("allow_trace"))))
    return out


def _mappings(account: str, claims: jwtlib.Claims) -> list[Any]:
    from minijs.authconfig import Mapping

    out = []
    for src, dests in (claims.nats.get("mappings") or {}).items():
        pairs = tuple((str(d.get("subject")), int(d.get("weight") or 100))
                      for d in dests or () if isinstance(d, dict))
        if pairs:
            out.append(Mapping(account, src, pairs))
    return out


# ----------------------------------------------------------------------------- the runtime


def _permissions(perms: dict[str, Any]) -> Any:
    """nats-server's ``buildPermissionsFromJwt``: None when the claims set none."""
    from minijs.authconfig import Permissions, ResponsePermission

    pub = perms.get("pub") or {}
    sub = perms.get("sub") or {}
    resp = perms.get("resp")
    if not (pub.get("allow") or pub.get("deny") or sub.get("allow") or sub.get("deny")
            or resp is not None):
        return None
    responses = None
    if isinstance(resp, dict):
        max_msgs = int(resp.get("max") or 0) or 1
        ttl = (resp.get("ttl") or 0) / 1e9 or 120.0
        responses = ResponsePermission(max_msgs, ttl)
    pub_allow = tuple(pub.get("allow") or ()) or None
    if responses is not None and pub_allow is None:
        pub_allow = ()
    return Permissions(pub_allow, tuple(pub.get("deny") or ()) or None,
                       tuple(sub.get("allow") or ()) or None,
                       tuple(sub.get("deny") or ()) or None, responses)


def _revoked(revocations: dict[str, Any], subject: str, issued_at: int) -> bool:
    """nats-server's ``isRevoked``: the user's own entry, or ``*``, at or after ``iat``."""
    for key in (subject, "*"):
        t = revocations.get(key)
        if isinstance(t, (int, float)) and t >= issued_at:
            return True
    return False


class Operator:
    """Operator mode of a running server (``router.operator``)."""

    def __init__(self, router: Any) -> None:
        self.router = router
        config = router.config
        self.trusted = trusted_keys(config.operator)
        #: Account claims by public key (the memory resolver), only trusted, valid ones.
        self.accounts: dict[str, jwtlib.Claims] = {}
        for key, token in config.resolver_preload:
            try:
                claims = jwtlib.decode(token, "account")
            except (jwtlib.JwtError, nkeys.NkeyError):
                continue
            if claims.subject == key and claims.issuer in self.trusted:
                self.accounts[key] = claims
        #: The accounts in use (see :meth:`load`): the system account from the start.
        self.loaded: set[str] = set()
        if config.system_account:
            self.load(config.system_account)
        #: Expiry timers of connected JWT users, by connection.
        self._timers: dict[Any, Any] = {}
        self._subs: list[Any] = []

    @property
    def now(self) -> float:
        return self.router.clock.time()

    def log_startup(self, log: Any) -> None:
        """nats-server's ``Trusted Operators`` lines."""
        from datetime import datetime

        log.info("Trusted Operators")
        for token in self.router.config.operator:
            claims = jwtlib.decode(token, "operator")
            log.info('  System  : ""')
            log.info(f"  Operator: {json.dumps(claims.name)}")
            log.info(f"  Issued  : {_go_local_time(datetime, claims.issued_at)}")
            log.info("  Expires : Never" if not claims.expires else
                     f"  Expires : {_go_local_time(datetime, claims.expires)}")
        if not self.router.config.system_account:
            log.warn("Trusted Operators should utilize a System Account")

    def start(self) -> None:
        """Serve the memory resolver's claim updates in the system account."""
        from minijs.core.sublist import Subscription

        system = self.router.config.system_account
        if not system:
            return
        sublist = self.router.account_sublist(system)
        for subject in CLAIMS_UPDATE_SUBJECTS:
            sub = Subscription.internal(subject.encode(), self._on_claims_update)
            sublist.insert(sub)
            self._subs.append((sublist, sub))

    def stop(self) -> None:
        for sublist, sub in self._subs:
            sub.closed = True
            sublist.remove(sub)
        self._subs = []
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    # -- authentication

    def authenticate(self, conn: Any, opts: dict[str, Any]) -> bool:
        log = self.router.log
        prefix = f"{conn.host}:{conn.port} - cid:{conn.cid} - "

        def fail(reason: str) -> bool:
            log.debug(prefix + reason)
            return False

        token = opts.get("jwt") or ""
        try:
            user = jwtlib.decode(token, "user") if token else None
        except (jwtlib.JwtError, nkeys.NkeyError):
            user = None
        if user is None:
            return fail("Authentication requires a user JWT")
        issue = jwtlib.validity_issue(user, self.now)
        if issue is not None:
            return fail(f"User JWT no longer valid: &{{Issues:[{issue}]}}")
        nats = user.nats
        account_key = nats.get("issuer_account") or user.issuer
        account = self.accounts.get(account_key)
        if account is None:
            log.debug(f"Account [{account_key}] fetch took 0s")
            log.warn("Account fetch failed: account missing")
            return fail("Account JWT lookup error: account missing")
        self.load(account_key)
        signing = _signing_keys(account)
        if user.issuer != account.subject:
            if user.issuer not in signing:
                return fail("User JWT issuer is not known")
            scope = signing[user.issuer]
            if scope is not None:
                # nats-io/jwt's ValidateScopedSigner: the template replaces the user's own
                # permissions and limits, which must be empty
                if any(nats.get(k) for k in _USER_PERMISSION_LIMITS):
                    return fail("User JWT is not valid: scoped users require no permissions "
                                "or limits set")
                template = scope.get("template") or {}
                nats = {**nats, **{k: v for k, v in template.items()
                                   if k in _USER_PERMISSION_LIMITS}}
        permissions = _permissions(nats)
        if account.expired(self.now):
            return fail("Account JWT has expired")
        limits = account.nats.get("limits") or {}
        if nats.get("bearer_token") and limits.get("disallow_bearer"):
            return fail("Account does not allow bearer tokens")
        types = [str(t).upper() for t in nats.get("allowed_connection_types") or ()]
        if types:
            from minijs.authconfig import CONNECTION_TYPES

            known = [t for t in types if t in CONNECTION_TYPES]
            if len(known) != len(types):
                unknown = [t for t in types if t not in CONNECTION_TYPES]
                log.debug(prefix + f"unknown connection types {unknown}")
                if not known:
                    return False
            if conn.connection_type not in known:
                return fail("Connection type not allowed")
        if not nats.get("bearer_token"):
            from minijs.auth.users import check_signature

            if not check_signature(conn, user.subject, opts.get("sig") or ""):
                return False
        if _revoked(account.nats.get("revocations") or {}, user.subject, user.issued_at):
            return fail("User authentication revoked")
        if permissions is None:
            permissions = _permissions(account.nats.get("default_permissions") or {})
        self._login(conn, user, account, permissions, nats)
        return True

    def load(self, key: str) -> None:
        """Account ``key`` is in use (nats-server registers an account at its first lookup,
        with the accounts it imports from): claim updates apply to it from now on; those of
        accounts not yet in use are skipped, as a memory resolver skips them."""
        todo = [key]
        while todo:
            name = todo.pop()
            if name in self.loaded or name not in self.accounts:
                continue
            self.loaded.add(name)
            for imp in self.accounts[name].nats.get("imports") or ():
                if isinstance(imp, dict) and isinstance(imp.get("account"), str):
                    todo.append(imp["account"])

    def _login(self, conn: Any, user: jwtlib.Claims, account: jwtlib.Claims,
               permissions: Any, nats: dict[str, Any]) -> None:
        from minijs.authconfig import User

        conn.jwt_user = user.subject
        conn.jwt_claims = user
        conn._login(User(user.subject, permissions=permissions, account=account.subject,
                         nkey=True))
        tag = account.name
        conn.user_label = f"{tag}/jwt:{user.subject}" if tag else f"jwt:{user.subject}"
        subs, payload = _limit(nats, "subs"), _limit(nats, "payload")
        if subs > 0:
            conn.max_subscriptions = (min(subs, conn.max_subscriptions)
                                      if conn.max_subscriptions else subs)
        if payload > 0:
            conn.parser.max_payload = min(payload, conn.parser.max_payload)
        self._schedule_expiry(conn, user)

    def _schedule_expiry(self, conn: Any, user: jwtlib.Claims) -> None:
        old = self._timers.pop(conn, None)
        if old is not None:
            old.cancel()
        if not user.expires:
            return
        delay = max(user.expires - self.now, 0.0)
        self._timers[conn] = self.router.clock.call_later(delay, self._expired, conn)

    def _expired(self, conn: Any) -> None:
        self._timers.pop(conn, None)
        if not conn.closed:
            self._cut(conn, ERR_EXPIRED, CLOSE_EXPIRED)

    def _cut(self, conn: Any, error: str, reason: str) -> None:
        from minijs.protocol import wire

        conn.send(wire.err(error))
        self.router.log.debug(f"{conn.host}:{conn.port} - cid:{conn.cid} - {error}")
        conn.closing(reason)
        conn.flush()
        conn.close()
        self.router.flush_soon()

    def forget(self, conn: Any) -> None:
        """A connection closed: drop its expiry timer."""
        timer = self._timers.pop(conn, None)
        if timer is not None:
            timer.cancel()

    # -- the memory resolver's updates

    def _on_claims_update(self, sub: Any, subject: bytes, reply: bytes | None,
                          header: bytes | None, payload: bytes, origin: Any) -> None:
        tokens = subject.decode(errors="replace").split(".")
        key = tokens[3] if tokens[1] == "REQ" else tokens[2]
        message, error = self.update_account(key, payload.decode(errors="replace"))
        log = self.router.log
        if error is None:
            log.debug(f"{message} - {key}")
        else:
            log.error(f"{message} - {key} - {error}")
        if not reply:
            return
        from minijs.core import msgtrace

        if error is None:
            body: dict[str, Any] = {"server": self.router.trace_server_info(),
                                    "data": {"account": key, "code": 200, "message": message}}
        else:
            body = {"server": self.router.trace_server_info(),
                    "error": {"account": key, "code": 500,
                              "description": f"{message} - {error}"}}
        system = self.router.account_sublist(self.router.config.system_account)
        self.router.publish(reply, None, None, msgtrace.go_json(body), sublist=system)

    def update_account(self, key: str, token: str) -> tuple[str, str | None]:
        """Replace the JWT of account ``key`` (nats-server's ``accountClaimUpdate``): the
        reply's message and error (None: done)."""
        if not token:
            return "jwt update error", "request body is empty"
        try:
            claims = jwtlib.decode(token, "account")
        except (jwtlib.JwtError, nkeys.NkeyError) as exc:
            return "jwt update resulted in error", str(exc)
        if claims.subject != key:
            return "jwt update resulted in error", "subject does not match jwt content"
        if key not in self.loaded:
            return "jwt update skipped", None
        if claims.issuer not in self.trusted:
            return "jwt update resulted in error", "account validation failed"
        self.accounts[key] = claims
        self._apply(key, claims)
        return "jwt updated", None

    def _apply(self, key: str, claims: jwtlib.Claims) -> None:
        """Live clients of account ``key`` meet its new claims: revocations, bearer tokens,
        the connection limit (the newest are closed), connection limits."""
        from minijs.authconfig import AccountConnLimits

        router = self.router
        limits = claims.nats.get("limits") or {}
        conn_limits = AccountConnLimits(
            max_connections=_limit(limits, "conn"), max_subscriptions=_limit(limits, "subs"),
            max_payload=_limit(limits, "payload"), max_leafnodes=_limit(limits, "leaf"))
        router.account_conn_limits[key] = conn_limits
        revocations = claims.nats.get("revocations") or {}
        clients = sorted((c for c in router.connections.values()
                          if c.connected and c.account == key and not c.closed),
                         key=lambda c: c.cid)
        count = 0
        for conn in clients:
            if conn_limits.max_connections >= 0 and count >= conn_limits.max_connections:
                from minijs.core.connection import ERR_MAX_ACCOUNT_CONNECTIONS

                conn.fail(ERR_MAX_ACCOUNT_CONNECTIONS)
                continue
            count += 1
            user = getattr(conn, "jwt_claims", None)
            if user is None:
                continue
            if user.nats.get("bearer_token") and limits.get("disallow_bearer"):
                conn.fail("Authorization Violation")
                continue
            if _revoked(revocations, user.subject, user.issued_at):
                self._cut(conn, ERR_REVOKED, CLOSE_REVOKED)
        router.flush_soon()


def _signing_keys(account: jwtlib.Claims) -> dict[str, dict[str, Any] | None]:
    """An account's signing keys: plain (None) or scoped (their scope object)."""
    out: dict[str, dict[str, Any] | None] = {}
    for entry in account.nats.get("signing_keys") or ():
        if isinstance(entry, str):
            out[entry] = None
        elif isinstance(entry, dict) and isinstance(entry.get("key"), str):
            out[entry["key"]] = entry
    return out


def _go_local_time(datetime: Any, seconds: int) -> str:
    """Go's ``time.Unix(s, 0).String()`` in local time: ``2006-01-02 15:04:05 -0700 MST``."""
    moment = datetime.fromtimestamp(seconds).astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S %z ") + (moment.tzname() or "")


class OperatorModeOf:
    """Operator mode as a router is given it (``minijs.core.router.OperatorMode``)."""

    @staticmethod
    def expand(config: Any, log: Any, now: float) -> Any:
        return expand(config, log, now)

    @staticmethod
    def start(router: Any) -> Operator:
        return Operator(router)


#: What the server hands its router when an ``operator`` is configured.
OPERATOR_MODE = OperatorModeOf()
