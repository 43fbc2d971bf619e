"""Operator mode: an operator JWT, account JWTs in a memory resolver, user JWTs.

Every key and JWT is made by the suite (``conformance/natskeys.py``: the ``nkeys`` package and
an encoder of nats-io/jwt v2's format). Clients log in with a user JWT and the INFO nonce
signed by the user's seed, raw or through nats-py's ``.creds`` support."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import nats
import pytest

from conformance.helpers import SpawnFn, connect_line, refused_start
from conformance.natskeys import Keys, OperatorSetup, account_jwt, creds, operator_jwt, user_jwt
from conformance.rawclient import OK, PONG, RawClient, msg, pub
from conformance.servers import Endpoint

AUTH_VIOLATION = b"-ERR 'Authorization Violation'\r\n"


def login(ep: Endpoint, jwt: str, signer: Keys | None, verbose: bool = True,
          **fields: Any) -> RawClient:
    """Connect with a user JWT, signing the nonce with ``signer`` (none: no ``sig``)."""
    client = RawClient.connect(ep.host, ep.port)
    if signer is not None:
        fields.setdefault("sig", signer.sign_nonce(client.info["nonce"]))
    client.send(connect_line(verbose=verbose, pedantic=False, protocol=1, jwt=jwt, **fields)
                + b"PING\r\n")
    return client


def logged_in(ep: Endpoint, jwt: str, signer: Keys | None) -> tuple[RawClient, dict[str, Any]]:
    client = login(ep, jwt, signer, verbose=False)
    client.expect(PONG)
    return client, json.loads(client.read_line()[5:])


def wait_log(ep: Any, needle: str, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in ep.log:
            return
        time.sleep(0.02)
    raise AssertionError(f"{needle!r} not logged:\n{ep.log}")


def test_operator_mode_info_and_login(target: str, spawn: SpawnFn, subject: str) -> None:
    """INFO asks for auth and carries a nonce; a user JWT with the signed nonce logs in to
    its account (``remote_account`` is the account's public key); the startup log shows the
    trusted operator."""
    s = OperatorSetup()
    ep = spawn(config=s.config())
    with login(ep, s.user_jwt(), s.user) as client:
        assert client.info["auth_required"] is True and len(client.info["nonce"]) == 15
        client.expect(OK + PONG)
        info = json.loads(client.read_line()[5:])
        assert info["remote_account"] == s.acc.public and "acc_is_sys" not in info
        client.send(f"SUB {subject} 1\r\n".encode() + pub(subject, b"x"))
        assert client.barrier() == OK + OK + msg(subject, 1, b"x")
    for line in ("[INF] Trusted Operators", '[INF]   System  : ""',
                 '[INF]   Operator: "OP"', "[INF]   Expires : Never"):
        assert line in ep.log


def test_system_account_user(target: str, spawn: SpawnFn) -> None:
    """A user of the system account: ``acc_is_sys`` in the INFO after CONNECT."""
    s = OperatorSetup()
    ep = spawn(config=s.config())
    client, info = logged_in(ep, user_jwt(s.user, s.sys), s.user)
    with client:
        assert info["remote_account"] == s.sys.public and info["acc_is_sys"] is True


def _refusals(s: OperatorSetup) -> dict[str, tuple[str, Keys | None]]:
    now = int(time.time())
    stranger = Keys("account")
    return {
        "expired": (s.user_jwt(exp=now - 10), s.user),
        "not-yet-valid": (s.user_jwt(nbf=now + 3600), s.user),
        "nonce-signed-by-other-key": (s.user_jwt(), Keys("user")),
        "no-signature": (s.user_jwt(), None),
        "unknown-account": (user_jwt(s.user, stranger), s.user),
        "signed-by-operator": (user_jwt(s.user, s.op), s.user),
        "not-a-jwt": ("abc.def.ghi", s.user),
        "account-jwt-as-user": (s.accounts[s.acc.public], s.user),
        "tampered": (s.user_jwt()[:-4] + "AAAA", s.user),
        "websocket-only": (s.user_jwt(connection_types=["WEBSOCKET"]), s.user),
        "unknown-signing-key": (user_jwt(s.user, Keys("account"),
                                         issuer_account=s.acc.public), s.user),
    }


@pytest.mark.parametrize("case", list(_refusals(OperatorSetup())))
def test_user_jwt_refusals(target: str, spawn: SpawnFn, case: str) -> None:
    """Expired or not yet valid JWTs, a nonce signed by another key or not at all, an
    account the resolver does not have, a JWT not signed by an account key, a tampered one,
    a connection type it does not allow: ``Authorization Violation``, logged as
    ``authentication error``."""
    s = OperatorSetup()
    ep = spawn(config=s.config())
    jwt, signer = _refusals(s)[case]
    with login(ep, jwt, signer) as client:
        client.assert_closed(expect_data=AUTH_VIOLATION)
    wait_log(ep, "[ERR] 127.0.0.1:")
    assert "authentication error\n" in ep.log


def test_expired_jwt_debug_line(target: str, spawn: SpawnFn) -> None:
    """With ``-D``, the reason: ``User JWT no longer valid: &{Issues:[claim is expired]}``."""
    s = OperatorSetup()
    ep = spawn(config=s.config(), args=["-D"])
    with login(ep, s.user_jwt(exp=int(time.time()) - 5), s.user) as client:
        client.assert_closed(expect_data=AUTH_VIOLATION)
    wait_log(ep, "User JWT no longer valid: &{Issues:[claim is expired]}")


def test_bearer_token(target: str, spawn: SpawnFn) -> None:
    """A ``bearer_token`` user needs no signature, unless its account disallows bearers."""
    s = OperatorSetup()
    ep = spawn(config=s.config())
    client, info = logged_in(ep, s.user_jwt(bearer=True), None)
    client.close()
    other = Keys("account")
    s.accounts[other.public] = account_jwt(other, s.op, name="NB",
                                           limits={"disallow_bearer": True})
    ep2 = spawn(config=s.config())
    with login(ep2, user_jwt(s.user, other, bearer=True), None) as refused:
        refused.assert_closed(expect_data=AUTH_VIOLATION)


def test_user_permissions_from_jwt(target: str, spawn: SpawnFn, subject: str) -> None:
    """The JWT's ``pub``/``sub`` allow and deny lists apply; violations are logged with the
    account's key and name and the user's key (``"A.../A/jwt:U..."``)."""
    s = OperatorSetup()
    ep = spawn(config=s.config())
    jwt = s.user_jwt(pub={"allow": [f"{subject}.ok"]}, sub={"deny": [f"{subject}.no"]})
    client, _ = logged_in(ep, jwt, s.user)
    with client:
        client.send(pub(f"{subject}.no", b"x") + f"SUB {subject}.no 1\r\n".encode()
                    + f"SUB {subject}.ok 2\r\n".encode() + pub(f"{subject}.ok", b"y"))
        assert client.barrier() == (
            f"-ERR 'Permissions Violation for Publish to \"{subject}.no\"'\r\n"
            f"-ERR 'Permissions Violation for Subscription to \"{subject}.no\"'\r\n"
        ).encode() + msg(f"{subject}.ok", 2, b"y")
    wait_log(ep, f'"{s.acc.public}/A/jwt:{s.user.public}" - Publish Violation - '
                 f'Subject "{subject}.no"')


def test_account_default_permissions(target: str, spawn: SpawnFn, subject: str) -> None:
    """A user without permissions of its own gets the account's ``default_permissions``."""
    s = OperatorSetup()
    s.accounts[s.acc.public] = account_jwt(s.acc, s.op, name="A", default_permissions={
        "pub": {"deny": [f"{subject}.no"]}, "sub": {}})
    ep = spawn(config=s.config())
    client, _ = logged_in(ep, s.user_jwt(), s.user)
    with client:
        client.send(pub(f"{subject}.no", b"x"))
        assert client.barrier() == \
            f"-ERR 'Permissions Violation for Publish to \"{subject}.no\"'\r\n".encode()


def test_signing_keys(target: str, spawn: SpawnFn, subject: str) -> None:
    """An operator signing key may sign accounts; an account signing key may sign users
    (``issuer_account`` names the account); a scoped signing key's template gives the user
    its permissions, and a user it signs may set none of its own."""
    s = OperatorSetup()
    op_sk, acc_sk, scoped = Keys("operator"), Keys("account"), Keys("account")
    s.operator = operator_jwt(s.op, signing_keys=[op_sk.public], system_account=s.sys.public)
    s.accounts[s.acc.public] = account_jwt(s.acc, op_sk, name="A", signing_keys=[
        acc_sk.public,
        {"kind": "user_scope", "key": scoped.public, "role": "r", "description": "",
         "template": {"pub": {"allow": [f"{subject}.scoped"]}, "sub": {},
                      "subs": -1, "data": -1, "payload": -1}}])
    ep = spawn(config=s.config())
    client, info = logged_in(ep, user_jwt(s.user, acc_sk, issuer_account=s.acc.public),
                             s.user)
    client.close()
    assert info["remote_account"] == s.acc.public
    with login(ep, user_jwt(s.user, scoped, issuer_account=s.acc.public,
                            pub={"allow": [f"{subject}.own"]}), s.user) as refused:
        refused.assert_closed(expect_data=AUTH_VIOLATION)  # a scoped user sets nothing itself
    client, _ = logged_in(ep, user_jwt(s.user, scoped, issuer_account=s.acc.public,
                                       scoped=True), s.user)
    with client:
        client.send(pub(f"{subject}.own", b"x") + pub(f"{subject}.scoped", b"y"))
        assert client.barrier() == \
            f"-ERR 'Permissions Violation for Publish to \"{subject}.own\"'\r\n".encode()


def test_account_connection_limits(target: str, spawn: SpawnFn, subject: str) -> None:
    """The account's ``conn``, ``subs`` and ``payload`` limits."""
    s = OperatorSetup()
    s.accounts[s.acc.public] = account_jwt(s.acc, s.op, name="A",
                                           limits={"conn": 1, "subs": 1, "payload": 100})
    ep = spawn(config=s.config())
    first, info = logged_in(ep, s.user_jwt(), s.user)
    with first:
        assert info["max_payload"] == 100
        with login(ep, s.user_jwt(), s.user) as second:
            second.assert_closed(
                expect_data=b"-ERR 'maximum account active connections exceeded'\r\n")
        first.send(f"SUB {subject}.a 1\r\nSUB {subject}.b 2\r\n".encode())
        assert first.barrier() == b"-ERR 'maximum subscriptions exceeded'\r\n"


def test_user_limits(target: str, spawn: SpawnFn, subject: str) -> None:
    """A user's own ``subs`` and ``payload`` limits, below its account's."""
    s = OperatorSetup()
    ep = spawn(config=s.config())
    client, info = logged_in(ep, s.user_jwt(limits={"subs": 1, "payload": 64}), s.user)
    with client:
        assert info["max_payload"] == 64
        client.send(f"SUB {subject}.a 1\r\nSUB {subject}.b 2\r\n".encode())
        assert client.barrier() == b"-ERR 'maximum subscriptions exceeded'\r\n"


def test_exports_and_imports(target: str, spawn: SpawnFn, subject: str) -> None:
    """A stream and a service exported by one account JWT, imported by another's."""
    s = OperatorSetup()
    b, ub = Keys("account"), Keys("user")
    s.accounts[s.acc.public] = account_jwt(s.acc, s.op, name="A", exports=[
        {"name": "s", "subject": f"{subject}.stream.>", "type": "stream"},
        {"name": "v", "subject": f"{subject}.svc", "type": "service"}])
    s.accounts[b.public] = account_jwt(b, s.op, name="B", imports=[
        {"name": "s", "subject": f"{subject}.stream.>", "account": s.acc.public,
         "type": "stream"},
        {"name": "v", "subject": f"{subject}.svc", "account": s.acc.public,
         "local_subject": f"{subject}.asked", "type": "service"}])
    ep = spawn(config=s.config())
    ca, _ = logged_in(ep, s.user_jwt(), s.user)
    cb, _ = logged_in(ep, user_jwt(ub, b), ub)
    with ca, cb:
        cb.send(f"SUB {subject}.stream.> 1\r\nSUB reply 2\r\n".encode())
        ca.send(f"SUB {subject}.svc 9\r\n".encode())
        cb.barrier()
        ca.barrier()
        ca.send(pub(f"{subject}.stream.x", b"streamed"))
        ca.barrier()
        assert cb.barrier() == msg(f"{subject}.stream.x", 1, b"streamed")
        cb.send(pub(f"{subject}.asked", b"q", reply="reply"))
        frame = ca.read_frame()
        assert frame.startswith(f"MSG {subject}.svc 9 _R_.".encode()), frame
        reply = frame.split(b" ")[3]
        ca.send(pub(reply.decode(), b"answer"))
        assert cb.read_frame() == msg("reply", 2, b"answer")


def test_jetstream_limits_from_account_jwt(target: str, spawn: SpawnFn) -> None:
    """An account JWT's JetStream limits enable JetStream for it, with those limits;
    an account without them has none (``$JS.API.INFO``: 503/10039)."""
    s = OperatorSetup()
    b, ub = Keys("account"), Keys("user")
    s.accounts[s.acc.public] = account_jwt(s.acc, s.op, name="A", limits={
        "mem_storage": 1048576, "disk_storage": 2097152, "streams": 3, "consumer": 4})
    s.accounts[b.public] = account_jwt(b, s.op, name="B")
    ep = spawn(config=s.config(), jetstream=True)
    for jwt, signer, enabled in ((s.user_jwt(), s.user, True), (user_jwt(ub, b), ub, False)):
        client, _ = logged_in(ep, jwt, signer)
        with client:
            client.send(b"SUB r 1\r\nPUB $JS.API.INFO r 0\r\n\r\n")
            frame = client.read_frame()
            body = json.loads(frame.split(b"\r\n", 1)[1][:-2])
            if enabled:
                assert body["limits"]["max_memory"] == 1048576, body
                assert body["limits"]["max_storage"] == 2097152
                assert body["limits"]["max_streams"] == 3
                assert body["limits"]["max_consumers"] == 4
            else:
                assert body["error"]["err_code"] == 10039, body


async def test_natspy_creds_file(target: str, spawn: SpawnFn, subject: str,
                                 tmp_path: Path) -> None:
    """nats-py logs in with a ``.creds`` file (``user_credentials``) as nsc writes it."""
    s = OperatorSetup()
    ep = spawn(config=s.config())
    path = tmp_path / "user.creds"
    path.write_text(creds(s.user_jwt(), s.user.seed))
    nc = await nats.connect(ep.url, user_credentials=str(path))
    try:
        sub = await nc.subscribe(subject)
        await nc.flush()
        await nc.publish(subject, b"with creds")
        assert (await sub.next_msg(2)).data == b"with creds"
    finally:
        await nc.close()


def test_user_jwt_expires_while_connected(target: str, spawn: SpawnFn) -> None:
    """When a connected user's JWT expires: ``-ERR 'User Authentication Expired'`` and
    close."""
    s = OperatorSetup()
    ep = spawn(config=s.config())
    client, _ = logged_in(ep, s.user_jwt(exp=int(time.time()) + 2), s.user)
    with client:
        client.assert_closed(timeout=6, expect_data=b"-ERR 'User Authentication Expired'\r\n")


def claims_update(ep: Endpoint, s: OperatorSetup, account: str, body: str,
                  old_subject: bool = False) -> dict[str, Any]:
    """Send an account JWT to the system account's claims-update subject; the reply."""
    user = Keys("user")  # a user of the account logs in first: it is in use then
    logged_in(ep, user_jwt(user, s.acc), user)[0].close()
    sys_user = Keys("user")
    client, _ = logged_in(ep, user_jwt(sys_user, s.sys), sys_user)
    with client:
        subject = (f"$SYS.ACCOUNT.{account}.CLAIMS.UPDATE" if old_subject
                   else f"$SYS.REQ.ACCOUNT.{account}.CLAIMS.UPDATE")
        client.send(b"SUB _reply 1\r\n" + pub(subject, body.encode(), reply="_reply"))
        frame = client.read_frame()
        reply = json.loads(frame.split(b"\r\n", 1)[1][:-2])
    assert set(reply) in ({"server", "data"}, {"server", "error"}), reply
    return reply.get("data") or reply["error"]


def test_claims_update_revokes_live_user(target: str, spawn: SpawnFn) -> None:
    """A newer account JWT revoking a user: the connected user gets ``-ERR 'User
    Authentication Revoked'`` and is closed; the user cannot log in again; the reply says
    ``jwt updated``."""
    s = OperatorSetup()
    ep = spawn(config=s.config())
    victim, _ = logged_in(ep, s.user_jwt(), s.user)
    with victim:
        update = account_jwt(s.acc, s.op, name="A",
                             revocations={s.user.public: int(time.time()) + 5})
        assert claims_update(ep, s, s.acc.public, update) == {
            "account": s.acc.public, "code": 200, "message": "jwt updated"}
        victim.assert_closed(expect_data=b"-ERR 'User Authentication Revoked'\r\n")
    with login(ep, s.user_jwt(), s.user) as again:
        again.assert_closed(expect_data=AUTH_VIOLATION)


def test_claims_update_older_subject_and_limits(target: str, spawn: SpawnFn) -> None:
    """``$SYS.ACCOUNT.<key>.CLAIMS.UPDATE`` works too; a lower connection limit closes the
    newest clients above it."""
    s = OperatorSetup()
    ep = spawn(config=s.config())
    first, _ = logged_in(ep, s.user_jwt(), s.user)
    second, _ = logged_in(ep, s.user_jwt(), s.user)
    with first, second:
        update = account_jwt(s.acc, s.op, name="A", limits={"conn": 1})
        assert claims_update(ep, s, s.acc.public, update, old_subject=True)["code"] == 200
        second.assert_closed(
            expect_data=b"-ERR 'maximum account active connections exceeded'\r\n")
        first.send(b"PING\r\n")
        first.expect(PONG)


def test_claims_update_errors(target: str, spawn: SpawnFn) -> None:
    """The memory resolver's refusals, as nats-server words them."""
    s = OperatorSetup()
    ep = spawn(config=s.config())
    acc = s.acc.public
    unknown = Keys("account")
    cases = [
        (acc, "", "jwt update error - request body is empty"),
        (acc, "xyz", "jwt update resulted in error - expected 3 chunks"),
        (acc, account_jwt(unknown, s.op), "jwt update resulted in error - subject does not "
                                          "match jwt content"),
        (acc, account_jwt(s.acc, Keys("operator")), "jwt update resulted in error - account "
                                                    "validation failed"),
    ]
    for account, body, description in cases:
        assert claims_update(ep, s, account, body) == {
            "account": account, "code": 500, "description": description}
    assert claims_update(ep, s, unknown.public, account_jwt(unknown, s.op)) == {
        "account": unknown.public, "code": 200, "message": "jwt update skipped"}


def test_claims_update_of_account_not_in_use(target: str, spawn: SpawnFn) -> None:
    """A preloaded account no client has used yet is not loaded: its update is skipped and
    its preloaded JWT stays in force."""
    s = OperatorSetup()
    b, ub = Keys("account"), Keys("user")
    s.accounts[b.public] = account_jwt(b, s.op, name="B")
    ep = spawn(config=s.config())
    update = account_jwt(b, s.op, name="B", revocations={ub.public: int(time.time()) + 5})
    assert claims_update(ep, s, b.public, update) == {
        "account": b.public, "code": 200, "message": "jwt update skipped"}
    client, info = logged_in(ep, user_jwt(ub, b), ub)
    client.close()
    assert info["remote_account"] == b.public


def test_operator_from_file(target: str, spawn: SpawnFn, tmp_path: Path) -> None:
    """``operator`` may name a file holding the JWT."""
    s = OperatorSetup()
    ep = spawn(config=s.config(operator="op.jwt"), files={"op.jwt": s.operator + "\n"})
    client, info = logged_in(ep, s.user_jwt(), s.user)
    client.close()
    assert info["remote_account"] == s.acc.public


@pytest.mark.parametrize("case", ["accounts", "users", "no-resolver", "system-mismatch",
                                  "bad-preload", "no-auth-user", "missing-file"])
def test_operator_config_errors(target: str, tmp_path: Path, case: str) -> None:
    """nats-server's refusals of an operator-mode config, word for word."""
    s = OperatorSetup()
    text, error = {
        "accounts": (s.config("accounts { X: {} }\n"),
                     "operators do not allow Accounts to be configured directly"),
        "users": (s.config("authorization { users = [ {user: a, password: b} ] }\n"),
                  "operators do not allow users to be configured directly"),
        "no-resolver": (f"operator: {s.operator}\n",
                        'could not fetch <"/accounts/">: Get "/accounts/": unsupported '
                        'protocol scheme ""'),
        "system-mismatch": (s.config().replace(f"system_account: {s.sys.public}",
                                               f"system_account: {s.acc.public}"),
                            "system_account in config and operator JWT must be identical"),
        "bad-preload": (s.config().replace(s.accounts[s.acc.public], "notajwt"),
                        "invalid account JWT"),
        "no-auth-user": (s.config("no_auth_user: x\n"),
                         "no_auth_user not compatible with Trusted Operator"),
        "missing-file": (s.config(operator="missing.jwt"),
                         "error parsing operator JWT: open missing.jwt: no such file or "
                         "directory"),
    }[case]
    stderr = refused_start(target, tmp_path, text)
    assert error in stderr, stderr
