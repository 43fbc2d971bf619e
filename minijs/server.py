"""The server: a router with a lifecycle, JetStream and monitoring attached.

``Server`` is what users start (``await Server(port=0).start()`` or ``async with``);
``ServerThread`` runs one on a background thread for synchronous tests. The floors below never
import this module: the router (:mod:`minijs.core.router`) is what they are given.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Any

from minijs.clock import Clock
from minijs.config import GIT_COMMIT, NATS_SERVER_VERSION, ServerConfig
from minijs.core.router import Router
from minijs.jetstream.api import JetStreamApi
from minijs.jetstream.engine import JetStream
from minijs.log import Logger
from minijs.monitor import Monitor


class Server(Router):
    """A NATS server in this process's event loop.

    ``Server(port=0)`` picks a free port; ``await server.start()`` binds and returns once
    clients can connect; ``client_url`` says where. ``async with Server() as s:`` does both ends.
    """

    def __init__(self, config: ServerConfig | None = None, *, clock: Clock | None = None,
                 logger: Logger | None = None, **overrides: Any) -> None:
        super().__init__(config, clock=clock, logger=logger, **overrides)
        self.monitor: Monitor | None = None
        self.jetstream_api: JetStreamApi | None = None

    # ----------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Bind the client port (and the monitor, if configured); log as nats-server does."""
        if self.running:
            return
        config = self.config
        log = self.log
        self._stopped = asyncio.Event()
        self.start_time = self.clock.time()
        log.info("Starting nats-server")
        log.info(f"  Version:  {NATS_SERVER_VERSION} (minijs)")
        log.info(f"  Git:      [{GIT_COMMIT}]")
        log.info(f"  Name:     {self.server_name}")
        log.info(f"  ID:       {self.server_id}")
        await self.listen()
        self.running = True
        if config.http_port is not None:
            self.monitor = Monitor(self)
            await self.monitor.start()
        if config.jetstream and self.jetstream is None:
            self._start_jetstream()
        log.info(f"Listening for client connections on {_host_port(config.host, self.port)}")
        log.info("Server is ready")

    async def stop(self) -> None:
        """Graceful shutdown: stop accepting, flush what clients are owed, close them."""
        if not self.running:
            return
        self.running = False
        self.log.info("Initiating Shutdown...")
        self.stop_listening()
        if self.monitor is not None:
            await self.monitor.stop()
        self._stop_jetstream()
        conns = list(self.connections.values())
        for conn in conns:
            conn.flush()
            conn.close()
        await self.listener_closed()
        # Give transports a turn to hand their buffers to the kernel.
        await asyncio.sleep(0)
        self.log.info("Server Exiting..")
        assert self._stopped is not None
        self._stopped.set()

    def _start_jetstream(self) -> None:
        """Attach the JetStream engine (recovering file streams) and serve its API."""
        engine = JetStream(self)
        engine.start()
        self.jetstream = engine
        self.jetstream_api = JetStreamApi(engine)
        self.jetstream_api.start()

    def _stop_jetstream(self) -> None:
        """Waiting pulls hear of the shutdown, the API stops answering, then the engine closes
        its streams and consumers."""
        engine = self.jetstream
        if engine is None:
            return
        engine.signal_shutdown()
        if self.jetstream_api is not None:
            self.jetstream_api.stop()
            self.jetstream_api = None
        engine.stop()
        self.jetstream = None

    async def serve_forever(self) -> None:
        """Wait until :meth:`stop` is called."""
        assert self._stopped is not None, "start() first"
        await self._stopped.wait()

    async def __aenter__(self) -> "Server":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class ServerThread:
    """A server on a background thread, for synchronous tests (unittest, Django, plain pytest).

    ``with ServerThread(port=0) as srv: connect(srv.client_url)``. The server's state stays
    owned by that thread's event loop; this object only starts and stops it.
    """

    def __init__(self, config: ServerConfig | None = None, **overrides: Any) -> None:
        if config is None:
            overrides.setdefault("port", 0)  # a thread-run test server wants a free port
        self._config = config
        self._overrides = overrides
        self.server: Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def start(self) -> "ServerThread":
        self._thread = threading.Thread(target=self._run, name="minijs-server", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            self.server = Server(self._config, **self._overrides)
            loop.run_until_complete(self.server.start())
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_until_complete(self.server.serve_forever())
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def stop(self) -> None:
        if self._loop is None or self.server is None or self._thread is None:
            return
        if self._thread.is_alive():
            future = asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop)
            future.result(timeout=10)
            self._thread.join(timeout=10)

    @property
    def client_url(self) -> str:
        assert self.server is not None, "start() first"
        return self.server.client_url

    @property
    def port(self) -> int:
        assert self.server is not None, "start() first"
        return self.server.port

    def __enter__(self) -> "ServerThread":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
