"""Server.reload() in process: applied changes, refusals that change nothing, the table's
extension point."""
from __future__ import annotations

import asyncio
import io

import pytest

from minijs import Server
from minijs.authconfig import Permissions, User
from minijs.log import Logger
from minijs.reload import OPTIONS, ReloadError, register


async def _client(port: int, user: str):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    await reader.readline()
    writer.write(f'CONNECT {{"user":"{user}","pass":"{user}","verbose":false}}\r\n'
                 "SUB a.1 1\r\nSUB b.1 2\r\nPING\r\n".encode())
    assert await reader.readline() == b"PONG\r\n"
    return reader, writer


async def test_reload_removes_subscriptions_no_longer_allowed():
    log = io.StringIO()
    users = (User("u", "u", Permissions(sub_allow=(">",))),)
    async with Server(port=0, users=users, logger=Logger(log)) as server:
        reader, writer = await _client(server.port, "u")
        new = server.config.with_overrides(
            users=(User("u", "u", Permissions(sub_allow=("b.>",))),), max_payload=2048)
        server.reload(new)
        assert await reader.readline() == \
            b"-ERR 'Permissions Violation for Subscription to \"a.1\" (sid \"1\")'\r\n"
        conn = next(iter(server.connections.values()))
        assert list(conn.subs) == [b"2"] and not conn.closed
        text = log.getvalue()
        assert "Reloaded: max_payload = 2048" in text
        assert 'Removed sub "a.1" (sid "1") for User "u" - not authorized' in text
        assert text.rstrip().endswith("Reloaded server configuration")
        writer.close()


async def test_refused_reload_changes_nothing():
    log = io.StringIO()
    async with Server(port=0, server_name="one", logger=Logger(log)) as server:
        before = server.config
        with pytest.raises(ReloadError, match="config reload not supported for ServerName: "
                                              "old=one, new=two"):
            server.reload(before.with_overrides(server_name="two", max_payload=5))
        assert server.config is before
        assert "[ERR] Failed to reload server configuration: config reload not supported" \
            in log.getvalue()
        with pytest.raises(ReloadError, match="can only reload config when a file is "
                                              "provided"):
            server.reload()


async def test_reload_from_the_config_file(tmp_path):
    path = tmp_path / "s.conf"
    path.write_text("max_payload: 1000\n")
    from minijs.confparse import load_config

    async with Server(load_config(path)) as server:
        server.config_file = str(path)
        path.write_text("max_payload: 3000\nfoo: 1\n")
        with pytest.raises(ReloadError, match='unknown field "foo"'):
            server.reload()
        assert server.config.max_payload == 1000
        path.write_text("max_payload: 3000\n")
        server.reload()
        assert server.config.max_payload == 3000


async def test_options_register_their_own_reload():
    """A listener's option (TLS certificates, say) registers how it reloads."""
    seen = []
    saved = OPTIONS["tags"]
    register("tags", "Tags", saved.order, lambda s, old, new: seen.append(new.tags) or
             ["Reloaded: tags (custom)"])
    try:
        async with Server(port=0) as server:
            server.reload(server.config.with_overrides(tags=("x",)))
        assert seen == [("x",)]
    finally:
        OPTIONS["tags"] = saved


async def test_jetstream_limits_reload(tmp_path):
    log = io.StringIO()
    async with Server(port=0, jetstream=True, max_memory_store=1 << 20,
                      max_file_store=1 << 20, store_dir=str(tmp_path),
                      logger=Logger(log)) as server:
        server.reload(server.config.with_overrides(max_memory_store=2 << 20))
        assert server.jetstream_group.max_memory == 2 << 20
        assert "Reloaded: JetStream max_mem_store = 2.00 MB" in log.getvalue()
        with pytest.raises(ReloadError, match="decreasing jetstream max memory and store"):
            server.reload(server.config.with_overrides(max_file_store=1 << 10))
        assert server.config.max_file_store == 1 << 20


async def test_no_auth_user_goes_only_with_its_user():
    users = (User("a", "a"), User("b", "b"))
    async with Server(port=0, users=users, no_auth_user="a") as server:
        with pytest.raises(ReloadError, match="NoAuthUser: old=a, new="):
            server.reload(server.config.with_overrides(no_auth_user=None))
        server.reload(server.config.with_overrides(no_auth_user=None, users=users[1:]))
        assert server.config.no_auth_user is None
