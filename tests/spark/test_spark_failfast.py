"""Fail fast: an unreachable server, refused credentials and bad options end a read or a write
with an error that names the URL or the option and says what to do, and never hang.

No test here times anything: each one only requires that the error arrives (a streaming query
is awaited with a generous bound, so a hang fails the test instead of the run).
"""

from __future__ import annotations

import asyncio
import re
import socket
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from minijs.spark._nats import JetStreamSourceError, connect  # noqa: E402
from minijs.spark._options import (  # noqa: E402
    ConnectOptions,
    OptionError,
    SinkOptions,
    SourceOptions,
)

pytestmark = pytest.mark.spark

QUERY_TIMEOUT = 120  # seconds: only a bound on a hang, never an expectation
UNREACHABLE = r"cannot connect to NATS at nats://127\.0\.0\.1:\d+ \(.*fix the 'servers' option"


# ------------------------------------------------------------------------- no Spark, no server


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A loopback port that accepts TCP connections and never says a word (no NATS INFO)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(sock.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"nats://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for conn in accepted:
            conn.close()
        sock.close()


def _connect(conn: ConnectOptions) -> None:
    async def main() -> None:
        nc = await connect(conn)
        await nc.close()

    asyncio.run(main())


def test_connect_to_a_closed_port_gives_up_after_the_attempts(dead_url: Any) -> None:
    url = dead_url()
    with pytest.raises(JetStreamSourceError) as err:
        _connect(ConnectOptions(servers=url, connect_timeout=30, max_reconnect_attempts=2))
    text = str(err.value)
    assert f"cannot connect to NATS at {url} (3 attempts failed, maxReconnectAttempts 2;" in text
    assert "Connect call failed" in text
    assert "fix the 'servers' option" in text and "maxReconnectAttempts" in text


def test_connect_to_a_silent_port_ends_at_the_timeout(silent_url: str) -> None:
    with pytest.raises(JetStreamSourceError, match=r"within connectTimeout 0.5s \(1 attempt; last error: timed out\)"):
        _connect(ConnectOptions(servers=silent_url, connect_timeout=0.5, max_reconnect_attempts=100))


def test_connect_tries_every_server_in_the_list(dead_url: Any) -> None:
    first, second = dead_url(), dead_url()
    with pytest.raises(JetStreamSourceError) as err:
        _connect(ConnectOptions(servers=f"{first}, {second}", max_reconnect_attempts=0))
    assert f"at {first}, {second} (2 attempts failed" in str(err.value)


@pytest.mark.parametrize(
    "options, text",
    [
        ({"connectTimeout": "-1"}, "connectTimeout='-1': must be a positive number of seconds"),
        ({"connectTimeout": "0"}, "connectTimeout='0': must be a positive"),
        ({"connectTimeout": "soon"}, "connectTimeout='soon': expected a number of seconds"),
        ({"connectTimeout": "inf"}, "connectTimeout='inf': must be a positive"),
        ({"maxReconnectAttempts": "-1"}, "maxReconnectAttempts='-1': must be >= 0"),
        ({"maxReconnectAttempts": "2.5"}, "maxReconnectAttempts='2.5': expected an integer"),
        ({"servers": "http://127.0.0.1:4222"}, "servers=.*has scheme 'http'"),
        ({"servers": "nats://127.0.0.1:99999"}, "servers=.*is not a URL"),
        ({"servers": " , "}, "servers=.*no URL"),
        ({"password": "secret"}, "password is set without option user"),
        ({"user": "u", "token": "t"}, "token and user/password are exclusive"),
        ({"creds": "/nonexistent/user.creds"}, "creds='/nonexistent/user.creds': no such file"),
        ({"maxOffsetPerTrigger": "10"}, "unknown option 'maxOffsetPerTrigger'; did you mean maxOffsetsPerTrigger"),
        ({"msgIdColumn": "id"}, "option msgIdColumn only applies to writes, not to reads"),
        ({"minPartitions": "-2"}, "minPartitions='-2': must be >= 1"),
    ],
)
def test_bad_read_options_name_the_option(options: dict[str, str], text: str) -> None:
    with pytest.raises(OptionError, match=text):
        SourceOptions.parse({"stream": "S", **options}, streaming=True)


@pytest.mark.parametrize(
    "options, text",
    [
        ({"ackTimeout": "-5"}, "ackTimeout='-5': must be a positive number of seconds"),
        ({"maxPendingAcks": "many"}, "maxPendingAcks='many': expected an integer"),
        ({"startingOffsets": "earliest"}, "option startingOffsets only applies to reads, not to writes"),
        ({"acktimeuot": "5"}, "unknown option 'acktimeuot'; did you mean ackTimeout"),
        ({"connectTimeout": "-1"}, "connectTimeout='-1'"),
    ],
)
def test_bad_write_options_name_the_option(options: dict[str, str], text: str) -> None:
    with pytest.raises(OptionError, match=text):
        SinkOptions.parse(options)


def test_connection_defaults_are_bounded_and_secrets_stay_out_of_repr(tmp_path: Path) -> None:
    opts = SourceOptions.parse({"stream": "S", "checkpointLocation": "/tmp/x", "path": "p"}, streaming=True)
    assert 0 < opts.conn.connect_timeout <= 10 and 0 <= opts.conn.max_reconnect_attempts <= 5
    conn = ConnectOptions.parse({"user": "alice", "password": "s3cret"})
    assert "s3cret" not in repr(conn) and "alice" in repr(conn)
    assert "t0ken" not in repr(ConnectOptions.parse({"token": "t0ken"}))
    creds = tmp_path / "user.creds"
    creds.write_text("")
    assert ConnectOptions.parse({"creds": str(creds)}).creds == str(creds)
    assert ConnectOptions.parse({"servers": "a:1, nats://b:2"}).urls == ["nats://a:1", "nats://b:2"]


# ------------------------------------------------------------------------- credentials


@pytest.fixture(scope="module", params=["nats-server", "minijs"])
def auth_urls(request: pytest.FixtureRequest, serve_target: Any) -> Iterator[dict[str, str]]:
    """Two servers of one target: one wants user ``spark`` / password ``s3cret``, one the token
    ``t0ken``."""
    with serve_target(request.param, "--user", "spark", "--pass", "s3cret") as by_user:
        with serve_target(request.param, "--auth", "t0ken") as by_token:
            yield {"user": by_user, "token": by_token}


def test_credentials_are_used_and_a_refusal_names_the_options(auth_urls: dict[str, str]) -> None:
    _connect(ConnectOptions(servers=auth_urls["user"], user="spark", password="s3cret"))
    _connect(ConnectOptions(servers=auth_urls["token"], token="t0ken"))
    # A refused login is not retried: it fails at once, whatever the attempts allow.
    with pytest.raises(JetStreamSourceError, match=r"refused the credentials .*options user \('spark'\) and password"):
        _connect(ConnectOptions(servers=auth_urls["user"], user="spark", password="wrong", max_reconnect_attempts=1000))
    with pytest.raises(JetStreamSourceError, match="refused the credentials .*options token"):
        _connect(ConnectOptions(servers=auth_urls["token"], token="wrong", connect_timeout=60))
    with pytest.raises(JetStreamSourceError, match="server requires authentication"):
        _connect(ConnectOptions(servers=auth_urls["user"]))


def test_spark_reads_and_writes_with_credentials(spark: Any, auth_urls: dict[str, str]) -> None:
    url = auth_urls["user"]
    creds = {"user": "spark", "password": "s3cret"}
    stream = "AUTHED"
    async def setup() -> None:
        import nats

        nc = await nats.connect(url, user="spark", password="s3cret", allow_reconnect=False)
        try:
            await nc.jetstream().add_stream(name=stream, subjects=["authed.>"], allow_direct=True)
        except Exception:
            pass  # a second run against the same module-scoped server
        await nc.close()

    asyncio.run(setup())
    df = spark.createDataFrame([("authed.x", f"m{i}") for i in range(20)], "subject string, data string")
    writer = df.write.format("jetstream").mode("append").option("servers", url).option("stream", stream)
    for key, value in creds.items():
        writer = writer.option(key, value)
    writer.save()
    reader = spark.read.format("jetstream").option("servers", url).option("stream", stream)
    assert reader.option("user", "spark").option("password", "s3cret").load().count() >= 20
    with pytest.raises(Exception, match="refused the credentials"):
        reader.option("user", "spark").option("password", "nope").load().count()


def _operator_mode(directory: Path) -> tuple[Path, Path, Path]:
    """A decentralized-auth nats-server config (operator, app and system account JWTs preloaded)
    and two creds files: one for a user of the app account, one signed by an account the server
    does not know. Made with ``nkeys`` (the ``spark`` extra brings it), no ``nsc`` needed."""
    import base64
    import hashlib
    import json
    import os
    import time

    import nkeys

    def keys(prefix: int) -> Any:
        return nkeys.from_seed(nkeys.encode_seed(os.urandom(32), prefix))

    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    def jwt(issuer: Any, subject: Any, name: str, nats: dict[str, Any]) -> str:
        claims: dict[str, Any] = {
            "iat": int(time.time()),
            "iss": issuer.public_key.decode(),
            "name": name,
            "sub": subject.public_key.decode(),
            "nats": nats,
        }
        digest = hashlib.sha256(json.dumps(claims, sort_keys=True).encode()).digest()
        claims["jti"] = base64.b32encode(digest).decode().rstrip("=")
        signed = f"{b64(json.dumps({'typ': 'JWT', 'alg': 'ed25519-nkey'}).encode())}.{b64(json.dumps(claims).encode())}"
        return f"{signed}.{b64(issuer.sign(signed.encode()))}"

    def creds(path: Path, user_jwt: str, user: Any) -> Path:
        path.write_text(
            f"-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n"
            f"-----BEGIN USER NKEY SEED-----\n{user.seed.decode()}\n------END USER NKEY SEED------\n"
        )
        return path

    operator, app, system, stranger = (
        keys(nkeys.PREFIX_BYTE_OPERATOR),
        keys(nkeys.PREFIX_BYTE_ACCOUNT),
        keys(nkeys.PREFIX_BYTE_ACCOUNT),
        keys(nkeys.PREFIX_BYTE_ACCOUNT),
    )
    user, other = keys(nkeys.PREFIX_BYTE_USER), keys(nkeys.PREFIX_BYTE_USER)
    limits = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1, "wildcards": True, "conn": -1, "leaf": -1}
    js_limits = {**limits, "mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}
    user_claims = {"type": "user", "version": 2, "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1}
    sys_pub, app_pub = system.public_key.decode(), app.public_key.decode()
    conf = directory / "operator.conf"
    conf.write_text(
        f"operator: {jwt(operator, operator, 'OP', {'type': 'operator', 'version': 2, 'system_account': sys_pub})}\n"
        f"system_account: {sys_pub}\nresolver: MEMORY\nresolver_preload: {{\n"
        f"  {app_pub}: {jwt(operator, app, 'APP', {'type': 'account', 'version': 2, 'limits': js_limits})}\n"
        f"  {sys_pub}: {jwt(operator, system, 'SYS', {'type': 'account', 'version': 2, 'limits': limits})}\n}}\n"
    )
    good = creds(directory / "spark.creds", jwt(app, user, "spark", user_claims), user)
    bad = creds(directory / "stranger.creds", jwt(stranger, other, "stranger", user_claims), other)
    return conf, good, bad


def test_spark_reads_and_writes_with_a_creds_file(spark: Any, serve_target: Any, tmp_path: Path) -> None:
    """``creds`` against nats-server in operator (JWT) mode; minijs has no JWT accounts, so this
    case runs on nats-server only."""
    pytest.importorskip("nkeys", reason="creds need nkeys (the 'spark' extra)")
    conf, good, bad = _operator_mode(tmp_path)
    with serve_target("nats-server", "-c", str(conf)) as url:
        _connect(ConnectOptions(servers=url, creds=str(good)))
        with pytest.raises(JetStreamSourceError, match=f"refused the credentials .*options creds \\({bad}\\)"):
            _connect(ConnectOptions(servers=url, creds=str(bad)))

        async def setup() -> None:
            import nats

            nc = await nats.connect(url, user_credentials=str(good), allow_reconnect=False)
            await nc.jetstream().add_stream(name="JWT", subjects=["jwt.>"])
            await nc.close()

        asyncio.run(setup())
        df = spark.createDataFrame([("jwt.x", f"m{i}") for i in range(10)], "subject string, data string")
        df.write.format("jetstream").mode("append").option("servers", url).option("stream", "JWT").option(
            "creds", str(good)
        ).save()
        reader = spark.read.format("jetstream").option("servers", url).option("stream", "JWT")
        rows = reader.option("creds", str(good)).load().collect()
        assert sorted(r.data for r in rows) == sorted(f"m{i}".encode() for i in range(10))
        with pytest.raises(Exception, match="refused the credentials"):
            reader.option("creds", str(bad)).load().count()


# ------------------------------------------------------------------------- through Spark


def _reader(spark: Any, url: str, streaming: bool = False) -> Any:
    read = spark.readStream if streaming else spark.read
    return (
        read.format("jetstream")
        .option("servers", url)
        .option("stream", "ORDERS")
        .option("connectTimeout", "1")
        .option("maxReconnectAttempts", "1")
    )


def _await_failure(query: Any) -> str:
    """The query's error; a query that neither fails nor ends within the bound fails the test."""
    try:
        ended = query.awaitTermination(QUERY_TIMEOUT)
    except Exception as exc:  # StreamingQueryException carries the task's error
        return str(exc)
    finally:
        query.stop()
    assert ended, "the streaming query neither failed nor ended"
    assert query.exception() is not None, "the streaming query ended without an error"
    return str(query.exception())


def test_batch_read_of_an_unreachable_server_fails(spark: Any, dead_url: Any) -> None:
    with pytest.raises(Exception, match=UNREACHABLE):
        _reader(spark, dead_url()).load().count()


def test_batch_read_of_a_silent_server_fails_at_the_timeout(spark: Any, silent_url: str) -> None:
    with pytest.raises(Exception, match=r"within connectTimeout 1s \(.*timed out"):
        _reader(spark, silent_url).load().count()


def test_streaming_read_of_an_unreachable_server_fails(spark: Any, tmp_path: Path, dead_url: Any) -> None:
    query = (
        _reader(spark, dead_url(), streaming=True)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .start()
    )
    assert re.search(UNREACHABLE, _await_failure(query))


def _rows(spark: Any) -> Any:
    return spark.createDataFrame([("orders.eu", b"x")], "subject string, data binary")


def _writer(df: Any, url: str) -> Any:
    return (
        df.write.format("jetstream")
        .mode("append")
        .option("servers", url)
        .option("connectTimeout", "1")
        .option("maxReconnectAttempts", "1")
    )


def test_batch_write_to_an_unreachable_server_fails_before_any_task(spark: Any, dead_url: Any) -> None:
    with pytest.raises(Exception, match=UNREACHABLE):
        _writer(_rows(spark), dead_url()).save()
    with pytest.raises(Exception, match=UNREACHABLE):  # with the stream option too
        _writer(_rows(spark), dead_url()).option("stream", "ORDERS").save()


def test_streaming_write_to_an_unreachable_server_fails(spark: Any, tmp_path: Path, dead_url: Any) -> None:
    rows = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 5)
        .load()
        .selectExpr("'orders.eu' AS subject", "cast(value AS string) AS data")
    )
    url = dead_url()
    writer = (
        rows.writeStream.format("jetstream")
        .option("servers", url)
        .option("connectTimeout", "1")
        .option("maxReconnectAttempts", "1")
        .option("checkpointLocation", str(tmp_path / "cp"))
    )
    try:
        query = writer.start()
    except Exception as exc:  # refused when the query starts
        text = str(exc)
    else:
        text = _await_failure(query)
    assert re.search(UNREACHABLE, text), text[:2000]


def test_bad_options_fail_before_any_task(spark: Any, dead_url: Any) -> None:
    url = dead_url()  # never contacted: the options are refused first
    with pytest.raises(Exception, match="option connectTimeout='-3': must be a positive number"):
        _reader(spark, url).option("connectTimeout", "-3").load()
    with pytest.raises(Exception, match="(?i)unknown option 'minPartition'; did you mean minPartitions"):
        _reader(spark, url).option("minPartition", "4").load()
    with pytest.raises(Exception, match="maxReconnectAttempts='x': expected an integer"):
        _reader(spark, url, streaming=True).option("maxReconnectAttempts", "x").load()
    with pytest.raises(Exception, match="option endingOffsets only applies to batch reads"):
        _reader(spark, url, streaming=True).option("endingOffsets", "5").load().writeStream.format(
            "noop"
        ).start().awaitTermination(QUERY_TIMEOUT)
    with pytest.raises(Exception, match="option ackTimeout='-1': must be a positive number"):
        _writer(_rows(spark), url).option("ackTimeout", "-1").save()
    with pytest.raises(Exception, match="option startingOffsets only applies to reads"):
        _writer(_rows(spark), url).option("startingOffsets", "earliest").save()
