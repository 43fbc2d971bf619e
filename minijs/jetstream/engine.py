"""The JetStream engine of one account: streams, API counters, recovery.

Attached to the server when it starts with ``jetstream=True`` (``-js``): one engine for the
global account ``$G``, or, with an ``accounts`` block, one per account whose ``jetstream`` is
enabled (each on that account's view of the message bus). The engines of one server share a
:class:`JetStreamGroup` (nats-server's server-wide JetStream): the writes buffered this turn
and the server's memory and storage totals its limits are checked against. An engine owns its
streams;
each stream owns its store and its consumers. Mirrors and sources are links between its
streams, kept by its :class:`~minijs.jetstream.mirrors.Replicator`. It is given the server's message bus
(:class:`~minijs.jetstream.bus.MessageBus`) and knows nothing else of the server; the API layer
(:mod:`minijs.jetstream.api.dispatch`), a floor above, translates requests into calls on this object.

Storage: memory streams live in the process. File streams are LMDB environments under
``<store_dir>/jetstream/<account>/streams/<name>`` (nats-server's layout). With no store directory
configured, file streams go to a private temporary directory removed at shutdown, so the
embedded default leaves nothing behind.
"""
from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any, Callable, cast

from minijs.config import AccountLimits, JetStreamLimitOpts, ServerConfig
from minijs.jetstream.advisory import Advisories
from minijs.jetstream.bus import AccountMessageBus, MessageBus
from minijs.jetstream.store import stream_store_path
from minijs.jetstream.storedir import StoreDirError, check_store_dir

if TYPE_CHECKING:  # imported when the first stream is created or recovered (a fast start)
    from pathlib import Path

    from minijs.jetstream.config.stream import StreamConfig
    from minijs.jetstream.mirrors import Replicator
    from minijs.jetstream.streams.stream import Stream

__all__ = ["JetStream", "StoreDirError", "check_store_dir"]


class JetStreamGroup:
    """What the engines of one server share: the streams with writes buffered this turn
    (committed together at the end of it, so the router has one thing to flush) and the
    server-wide usage and reservations ``max_memory_store`` / ``max_file_store`` bound."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        #: account name -> its engine
        self.engines: dict[str, JetStream] = {}
        self._dirty: dict[int, Stream] = {}
        self._flush_scheduled = False
        self.store_dir: str | None = config.store_dir
        self.max_memory = config.max_memory_store if config.max_memory_store is not None else -1
        self.max_storage = config.max_file_store if config.max_file_store is not None else -1
        self.domain: str = config.js_domain
        self.js_limits: JetStreamLimitOpts = config.js_limits
        self.sync_interval = float(config.js_sync_interval)
        self._server_limits: tuple[int, int] | None = None

    def mark_dirty(self, stream: Stream) -> None:
        """A stream has buffered writes (and maybe acks waiting): commit at the end of this turn."""
        self._dirty[id(stream)] = stream
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    @property
    def has_dirty(self) -> bool:
        return bool(self._dirty)

    def flush_dirty(self) -> None:
        """Commit every stream with buffered writes and send the acks that waited for it."""
        self._flush()

    def _flush(self) -> None:
        self._flush_scheduled = False
        dirty = self._dirty
        self._dirty = {}
        for stream in dirty.values():
            if not stream.closed:
                try:
                    stream.flush()
                except Exception as exc:
                    stream.engine.log.error(
                        f"JetStream store flush failed for '{stream.name}': {exc}")

    def forget(self, stream: Stream) -> None:
        self._dirty.pop(id(stream), None)

    def forget_engine(self, engine: JetStream) -> None:
        """Drop the buffered writes of ``engine``'s streams (a reset, crash or stop)."""
        for key, stream in list(self._dirty.items()):
            if stream.engine is engine:
                del self._dirty[key]

    def usage(self) -> tuple[int, int]:
        mem = sto = 0
        for engine in self.engines.values():
            m, s = engine.usage()
            mem += m
            sto += s
        return mem, sto

    def reserved(self) -> tuple[int, int]:
        mem = sto = 0
        for engine in self.engines.values():
            m, s = engine.reserved()
            mem += m
            sto += s
        return mem, sto

    def server_limits(self) -> tuple[int, int]:
        """(max memory, max storage) of this server, as nats-server sets them at start: the
        configured ``max_memory_store`` / ``max_file_store``, else 75% of the physical memory
        and 75% of the disk space available to the store directory (the temporary directory
        without one)."""
        if self._server_limits is None:
            mem = self.max_memory if self.max_memory >= 0 else _three_quarters_of_memory()
            sto = self.max_storage if self.max_storage >= 0 else _three_quarters_of_disk(
                self.store_dir or _temp_root())
            self._server_limits = (mem, sto)
        return self._server_limits

    def log_banner(self, log: Any) -> None:
        where = self.store_dir or "(memory only; file streams use a temporary directory)"
        log.info("Starting JetStream")
        log.info(f"  Storage directory:  {where}")
        log.info("  API level:          5")

    def check_account_limits(self, limits: list[AccountLimits]) -> None:
        """nats-server's ``sufficientResources`` as the configured accounts are enabled:
        their ``max_memory`` / ``max_storage`` together within the server's; raises the
        10028 / 10047 API error otherwise."""
        from minijs.jetstream import errors as E

        max_mem, max_sto = self.server_limits()
        mem = sum(lim.max_memory for lim in limits if lim.max_memory > 0)
        sto = sum(lim.max_storage for lim in limits if lim.max_storage > 0)
        if mem > max_mem:
            raise E.memory_resources_exceeded()
        if sto > max_sto:
            raise E.storage_resources_exceeded()

    def store_root(self) -> Path | None:
        """``<store>/jetstream``: the directory holding each account's streams (the private
        temporary directory's without a store directory; None before one exists)."""
        from pathlib import Path

        base = self.store_dir or next((e.temp_dir for e in self.engines.values() if e.temp_dir),
                                      None)
        return Path(base) / "jetstream" if base else None

    def account_dirs(self) -> list[str]:
        """The account directories in the store, sorted (nats-server's staging one skipped)."""
        root = self.store_root()
        try:
            return sorted(p.name for p in root.iterdir()
                          if p.is_dir() and p.name != ".snap-staging") if root else []
        except OSError:
            return []

    def stream_dirs(self, account: str) -> list[str]:
        """The stream directories of ``account`` in the store, sorted."""
        root = self.store_root()
        if root is None:
            return []
        try:
            return sorted(p.name for p in (root / account / "streams").iterdir() if p.is_dir())
        except OSError:
            return []

    def api_counts(self) -> tuple[int, int]:
        """(requests, errors) of every account's API."""
        return (sum(e.api_total for e in self.engines.values()),
                sum(e.api_errors for e in self.engines.values()))

    def varz(self) -> dict:
        """The ``jetstream`` section of ``/varz`` (every account summed)."""
        mem, sto = self.usage()
        res_mem, res_sto = self.reserved()
        max_mem, max_sto = self.server_limits()
        total, errors = self.api_counts()
        config: dict[str, Any] = {"max_memory": max_mem, "max_storage": max_sto}
        if self.store_dir:
            # nats-server keeps its streams (and reports its store) under <store_dir>/jetstream
            from pathlib import Path

            config["store_dir"] = str(Path(self.store_dir) / "jetstream")
        config.update(self.config_extras())
        return {
            "config": config,
            "stats": {
                "memory": mem,
                "storage": sto,
                "reserved_memory": res_mem,
                "reserved_storage": res_sto,
                "accounts": len(self.engines),
                "ha_assets": 0,
                "api": {"level": 5, "total": total, "errors": errors},
            },
            "limits": self.js_limits.to_json(),
        }

    def config_extras(self) -> dict[str, Any]:
        """The omitempty tail of nats-server's ``JetStreamConfig`` after ``store_dir``."""
        config = self.config
        out: dict[str, Any] = {"sync_interval": round(self.sync_interval * 1_000_000_000)}
        if config.js_sync_always:
            out["sync_always"] = True
        if self.domain:
            out["domain"] = self.domain
        if config.js_unique_tag:
            out["unique_tag"] = config.js_unique_tag
        if config.js_strict:
            out["strict"] = True
        return out


class JetStream:
    """JetStream for one account of a server."""

    def __init__(self, bus: MessageBus, *, temp_dir: str | None = None,
                 account: str = "$G", group: JetStreamGroup | None = None,
                 limits: AccountLimits | None = None, owns_temp_dir: bool = True) -> None:
        #: The message bus of the account this engine serves (the router, or its view of it).
        self.bus = bus
        self.clock = bus.clock
        self.log = bus.log
        self.streams: dict[str, Stream] = {}
        self.api_total = 0
        self.api_errors = 0
        config = bus.config
        #: File streams' private directory when no store directory is configured (kept across
        #: a restart of the same server, removed at its shutdown).
        self._temp_dir: str | None = temp_dir
        self.store_dir: str | None = config.store_dir
        self.max_memory = config.max_memory_store if config.max_memory_store is not None else -1
        self.max_storage = config.max_file_store if config.max_file_store is not None else -1
        if group is None:
            group = JetStreamGroup(bus.config)
        self.group = group
        group.engines[account] = self
        self.mark_dirty = group.mark_dirty  # type: ignore[method-assign]  # (per publish)
        #: Whether this engine removes the private temporary directory when it stops (the
        #: engines of several accounts share one, which the server removes).
        self._owns_temp_dir = owns_temp_dir
        self._sync_timer: Any = None
        self.advisories = Advisories(bus, config.js_domain)
        self._replicator: Replicator | None = None
        self.started = False
        #: The jetstream { } block's other settings (see ServerConfig.js_*).
        self.domain: str = config.js_domain
        self.js_limits: JetStreamLimitOpts = config.js_limits
        self.sync_interval = float(config.js_sync_interval)
        self.account_limits = AccountLimits()
        if limits is None:
            limits = config.js_account_limits
        self.set_account_limits(limits)
        self._limit_logged: dict[str, float] = {}
        #: The account this engine serves, as log lines and store paths name it.
        self.account_name = account
        self.max_buffered_size: int = config.js_max_buffered_size
        #: In a cluster: this node's :class:`~minijs.jetstream.cluster.meta.JetStreamCluster`
        #: (the meta group and the replicas); None on a server of its own.
        self.cluster: Any = None

    @property
    def replicator(self) -> "Replicator":
        """Mirrors' and sources' links (made, and its module imported, on first use)."""
        if self._replicator is None:
            from minijs.jetstream.mirrors import Replicator

            self._replicator = Replicator(self)
        return self._replicator

    def _stop_links(self) -> None:
        if self._replicator is not None:
            self._replicator.stop_all()

    # ------------------------------------------------------------------ lifecycle

    def start(self, *, banner: bool = True, recover: bool = True) -> None:
        """Recover the file streams and start; ``banner``: log the server's JetStream start
        lines (once per server: the engines of several accounts share them). A cluster's
        node does not ``recover``: its streams come back through the meta group."""
        if self.store_dir:
            os.makedirs(self.store_dir, exist_ok=True)
            if recover:
                self._recover()
        elif self._temp_dir is not None and recover:
            self._recover()
        self.server_limits()  # measured once, at start, as nats-server does
        self.started = True
        if banner:
            self.group.log_banner(self.log)
        self._sync_timer = self.clock.call_later(self.sync_interval, self._periodic_sync,
                                                housekeeping=True)

    def signal_shutdown(self) -> None:
        """The server is going down: waiting pull requests are told (409 Server Shutdown)."""
        for stream in self.streams.values():
            for consumer in stream.consumers.values():
                consumer.signal_shutdown()

    def stop(self, *, keep_files: bool = False) -> None:
        """Close every stream and consumer (state kept on disk for file streams). The private
        temporary directory of file streams is removed unless ``keep_files`` (a restart); its
        stores are then released without the final disk sync, since nothing will read them."""
        self._cancel_sync()
        self._stop_links()
        discard = self._temp_dir is not None and not keep_files and not self.store_dir
        for stream in list(self.streams.values()):
            for consumer in list(stream.consumers.values()):
                consumer.stop()
            try:
                if discard:
                    stream.flush()  # committed writes still get their acks
                    stream.abandon()
                else:
                    stream.close()
            except Exception as exc:  # keep closing the others
                self.log.error(f"closing stream {stream.name}: {exc}")
        self._finish(keep_files)

    def abandon(self) -> None:
        """Stop as a killed process would: nothing buffered is committed, no ack is sent, the
        files stay as they are (a simulated crash)."""
        self._cancel_sync()
        self.group.forget_engine(self)
        self._stop_links()
        for stream in list(self.streams.values()):
            for consumer in list(stream.consumers.values()):
                consumer.stop()
            try:
                stream.abandon()
            except Exception as exc:
                self.log.error(f"abandoning stream {stream.name}: {exc}")
        self._finish(True)

    def reset(self) -> None:
        """Delete every stream (with its consumers and files) and zero the API counters,
        without advisories: the empty engine of a fresh start."""
        self._cancel_sync()
        self.group.forget_engine(self)
        self._stop_links()
        for stream in list(self.streams.values()):
            for consumer in list(stream.consumers.values()):
                consumer.delete()
            stream.consumers.clear()
            stream.delete()
        self.streams.clear()
        self.api_total = 0
        self.api_errors = 0
        self._sync_timer = self.clock.call_later(self.sync_interval, self._periodic_sync,
                                                housekeeping=True)

    @property
    def temp_dir(self) -> str | None:
        """The private directory of file streams when no store directory is configured."""
        return self._temp_dir

    def _cancel_sync(self) -> None:
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None

    def _finish(self, keep_files: bool) -> None:
        self.streams.clear()
        if self._temp_dir is not None and not keep_files and self._owns_temp_dir:
            import shutil

            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None
        self.started = False

    def _periodic_sync(self) -> None:
        for stream in self.streams.values():
            sync = getattr(stream.store, "sync", None)
            if sync is not None:
                sync()
        self._sync_timer = self.clock.call_later(self.sync_interval, self._periodic_sync,
                                                housekeeping=True)

    def stream_dirs(self) -> list[str]:
        """The stream directories in the store, sorted (what a single nats-server's health
        check walks): every file stream, and any left behind that could not be recovered."""
        root = self._streams_dir()
        try:
            return sorted(p.name for p in root.iterdir() if p.is_dir())
        except OSError:
            return []

    def _streams_dir(self) -> Path:
        if self.store_dir:
            return stream_store_path(self.store_dir, "x", self.account_name).parent
        if self._temp_dir is None:
            import tempfile

            self._temp_dir = tempfile.mkdtemp(prefix="minijs-js-")
        return stream_store_path(self._temp_dir, "x", self.account_name).parent

    def _recover(self) -> None:
        """Reopen every file stream found under the store directory, then its consumers."""
        # A store without streams yet is found so without pathlib (not imported before it is
        # needed); the layout is stream_store_path's.
        base = self.store_dir or self._temp_dir
        if base is None or not os.path.isdir(os.path.join(base, "jetstream", self.account_name,
                                                          "streams")):
            return
        root = self._streams_dir()
        if not root.is_dir():
            return
        from minijs.jetstream import jsonfmt as J
        from minijs.jetstream.config.stream import STORED_STREAM_TYPE, stream_config_from_dict
        from minijs.jetstream.consumers.consumer import recover_consumers
        from minijs.jetstream.store import open_store
        from minijs.jetstream.streams.stream import Stream

        for path in sorted(root.iterdir()):
            if not path.is_dir():
                continue
            try:
                store = open_store("file", path, sync=False)
            except Exception as exc:
                self.log.error(f"Error recovering stream in {path}: {exc}")
                continue
            raw = store.get_meta("stream")
            if raw is None:
                store.close()
                continue
            doc = J.unmarshal_exact(raw, STORED_STREAM_TYPE)
            cfg = stream_config_from_dict(doc["config"])
            stream = Stream(self, cfg, int(doc["created"]), store)
            self.streams[cfg.name] = stream
            stream.start()
            st = store.state()
            self.log.info(f"  Restored {st.msgs} messages for stream '{self.account_name} > {cfg.name}'")
            recover_consumers(stream)
        for stream in self.streams.values():
            self.replicator.attach(stream)

    # ------------------------------------------------------------------ streams

    def create_stream(self, cfg: StreamConfig) -> Stream:
        from minijs.jetstream.store import open_store
        from minijs.jetstream.streams.stream import Stream

        if cfg.storage == "file":
            path = self._streams_dir() / cfg.name
            if path.exists():
                import shutil

                shutil.rmtree(path, ignore_errors=True)
            store = open_store("file", path, sync=False)
        else:
            store = open_store("memory")
        if cfg.first_seq > 0:
            # Even first_seq 1 marks the store as started: nats-server reports
            # first_seq 1 (not 0) for the empty stream.
            store.compact(cfg.first_seq)
        stream = Stream(self, cfg, self.clock.time_ns(), store)
        self.streams[cfg.name] = stream
        stream.save_config()
        stream.start()
        self.flush_now(stream)
        self.replicator.attach(stream)
        return stream

    def update_stream(self, stream: Stream, cfg: StreamConfig) -> None:
        """Apply a validated config change; mirror promotion and added or removed sources
        change the stream's links."""
        old = stream.config
        stream.update(cfg)
        if old.mirror != cfg.mirror or old.sources != cfg.sources:
            self.replicator.reconfigure(stream, old)

    def delete_stream(self, stream: Stream) -> None:
        self.streams.pop(stream.name, None)
        self.group.forget(stream)
        self.replicator.detach(stream, deleted=True)
        self.delete_consumers(stream)
        stream.delete()

    def lookup(self, name: str) -> Stream | None:
        return self.streams.get(name)

    def _external_account(self, api: str) -> str | None:
        """The account whose ``$JS.API.>`` this account reaches under the prefix ``api``
        (through a service import), or None."""
        resolve = getattr(self.bus, "resolve_service", None)
        found = resolve(f"{api.rstrip('.')}.STREAM.INFO.X".encode()) if resolve else None
        if found is None or found[1] != b"$JS.API.STREAM.INFO.X":
            return None
        return found[0] if found[0] in self.group.engines else None

    def _external_returns(self, account: str, deliver: str) -> bool:
        """Do deliveries on the ``deliver`` prefix in ``account`` come back here?"""
        # (asked once _external_account found the account: the bus is an account's view)
        bus = cast(AccountMessageBus, self.bus)
        return bool(deliver) and bus.receives_stream(account, f"{deliver}.x".encode())

    def lookup_external(self, api: str, deliver: str, name: str) -> Stream | None:
        """``external`` mirrors and sources: the stream ``name`` of the account whose
        JetStream API this account reaches under the prefix ``api`` (a service import of its
        ``$JS.API.>``), with deliveries on ``deliver`` coming back (a stream import); None
        when the stream is not there (:meth:`check_external` refused the rest)."""
        account = self._external_account(api)
        if account is None or not self._external_returns(account, deliver):
            return None
        return self.group.engines[account].lookup(name)

    def check_external(self, cfg: StreamConfig) -> None:
        """500/10052 for an ``external`` that does not lead to an account of this server with
        JetStream (another server's domain: nats-server would wait for it, minijs cannot
        reach it), or whose deliveries could not come back (no ``deliver`` prefix, or one
        this account does not import: nats-server connects such a link, which then receives
        nothing)."""
        from minijs.jetstream import errors as E

        for src in ([cfg.mirror] if cfg.mirror else []) + list(cfg.sources or []):
            ext = (src or {}).get("external")
            if not ext:
                continue
            account = self._external_account(ext.get("api") or "")
            if account is None:
                raise E.unsupported_feature(
                    "external mirrors and sources of another JetStream domain (the api prefix "
                    "leads to no account of this server: import that account's $JS.API.> "
                    "under it)")
            if not self._external_returns(account, ext.get("deliver") or ""):
                raise E.unsupported_feature(
                    "external mirrors and sources whose deliveries cannot come back (give a "
                    "deliver prefix this account imports as a stream from the origin's "
                    "account)")

    def lookup_config(self, name: str) -> StreamConfig | None:
        """The config of stream ``name`` (validation of mirrors and sources looks origins up)."""
        stream = self.streams.get(name)
        return stream.config if stream is not None else None

    # ------------------------------------------------------------------ for the replicator

    def count_api(self, error: bool) -> None:
        """An internal API request (a mirror's or source's consumer create or delete)."""
        self.api_total += 1
        if error:
            self.api_errors += 1

    def soon(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the next loop turn."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.clock.call_later(0, callback)
            return
        loop.call_soon(callback)

    # ------------------------------------------------------------------ durability

    def mark_dirty(self, stream: Stream) -> None:
        """A stream has buffered writes (and maybe acks waiting): commit at the end of this turn
        (with the other accounts' writes: see :class:`JetStreamGroup`)."""
        self.group.mark_dirty(stream)

    @property
    def has_dirty(self) -> bool:
        return self.group.has_dirty

    def flush_dirty(self) -> None:
        """Commit every stream with buffered writes and send the acks that waited for it."""
        self.group.flush_dirty()

    def flush_now(self, stream: Stream) -> None:
        self.group.forget(stream)
        stream.flush()

    # ------------------------------------------------------------------ consumers

    def delete_consumers(self, stream: Stream) -> None:
        """A stream is going away: each consumer stops and is announced deleted (nats-server
        sends a CONSUMER.DELETED advisory per consumer before STREAM.DELETED)."""
        for consumer in list(stream.consumers.values()):
            consumer.delete()
            self.advisories.consumer_action(stream.name, consumer.name, "delete")
        stream.consumers.clear()

    # ------------------------------------------------------------------ resource limits

    def server_limits(self) -> tuple[int, int]:
        """(max memory, max storage) of the server (see :meth:`JetStreamGroup.server_limits`)."""
        return self.group.server_limits()

    def reserved(self, exclude: str = "") -> tuple[int, int]:
        """(memory, storage) bytes reserved by the ``max_bytes`` of the streams (but
        ``exclude``)."""
        mem = sto = 0
        for s in self.streams.values():
            if s.config.max_bytes > 0 and s.name != exclude:
                if s.config.storage == "memory":
                    mem += s.config.max_bytes
                else:
                    sto += s.config.max_bytes
        return mem, sto

    def set_account_limits(self, limits: AccountLimits) -> None:
        """The JetStream limits of this engine's account (``$G``: unlimited unless an accounts
        block says otherwise). Applied to new requests and publishes from now on."""
        self.account_limits = limits
        # Publishes pay for the usage sums only when a bound was configured: the defaults
        # (75% of memory and disk) are out of a test's reach.
        self.publish_limits = (self.max_memory >= 0 or self.max_storage >= 0
                               or limits.max_memory >= 0 or limits.max_storage >= 0)

    def check_stream_count(self, name: str) -> None:
        """400/10027 when a new stream would pass the account's ``max_streams``."""
        from minijs.jetstream import errors as E

        max_streams = self.account_limits.max_streams
        if max_streams > 0 and name not in self.streams and len(self.streams) >= max_streams:
            raise E.maximum_streams_limit()

    def check_max_bytes_limits(self, cfg: StreamConfig) -> None:
        """checkStreamCfg's account part: 400/10113 without ``max_bytes`` when the account
        requires it, 400/10122 above its ``memory_``/``storage_max_stream_bytes``."""
        from minijs.jetstream import errors as E

        acc = self.account_limits
        limit = (acc.memory_max_stream_bytes if cfg.storage == "memory"
                 else acc.storage_max_stream_bytes)
        if acc.max_bytes_required and cfg.max_bytes <= 0:
            raise E.stream_max_bytes_required()
        if limit > 0 and cfg.max_bytes > limit:
            raise E.stream_max_stream_bytes_exceeded()

    def check_stream_resources(self, cfg: StreamConfig, old: StreamConfig | None = None) -> None:
        """nats-server's ``checkLimits``: the stream's ``max_consumers`` within the account's
        (400/10026), then ``checkBytesLimits``: a new stream adds its ``max_bytes`` (1 without
        one), an update the growth of it, to what the other streams reserve; more than the
        account, then the server, allows is 500/10028 (memory) or 500/10047 (file)."""
        from minijs.jetstream import errors as E

        acc = self.account_limits
        if 0 < acc.max_consumers < cfg.max_consumers:
            raise E.maximum_consumers_limit()
        if old is None:
            add = cfg.max_bytes if cfg.max_bytes >= 0 else 1
        else:
            add = max(max(cfg.max_bytes, 0) - max(old.max_bytes, 0), 0)
        max_mem, max_sto = self.server_limits()
        mem, sto = self.group.reserved()  # every account's streams count against the server
        if old is not None:  # the account check counts this stream's own current reservation
            acc_mem, acc_sto = self.reserved()
        else:
            acc_mem, acc_sto = self.reserved(exclude=cfg.name)
        if cfg.storage == "memory":
            if acc.max_memory >= 0 and (acc_mem > acc.max_memory or add > acc.max_memory - acc_mem):
                raise E.memory_resources_exceeded()
            if mem > max_mem or add > max_mem - mem:
                raise E.memory_resources_exceeded()
        else:
            if acc.max_storage >= 0 and (acc_sto > acc.max_storage
                                         or add > acc.max_storage - acc_sto):
                raise E.storage_resources_exceeded()
            if sto > max_sto or add > max_sto - sto:
                raise E.storage_resources_exceeded()

    def check_server_room(self, storage: str) -> None:
        """A publish into a full server (its usage already above ``max_memory_store`` /
        ``max_file_store``) is 503/10023, logged at most every 10 s, as nats-server's
        ``limitsExceeded``: the store may pass its limit by the message that filled it."""
        max_mem, max_sto = self.server_limits()
        mem, sto = self.group.usage()
        if (mem > max_mem) if storage == "memory" else (sto > max_sto):
            self.log_limit("server", f"JetStream {storage} resource limits exceeded for server",
                            error=True)
            from minijs.jetstream import errors as E

            raise E.insufficient_resources()

    def check_account_room(self, storage: str, size: int) -> None:
        """The account's usage plus this message above its ``max_memory`` / ``max_storage``
        is 400/10002 (nats-server's ``jsAccount.wouldExceedLimits``)."""
        acc = self.account_limits
        limit = acc.max_memory if storage == "memory" else acc.max_storage
        if limit < 0:
            return
        mem, sto = self.usage()
        if (mem if storage == "memory" else sto) + size > limit:
            self.log_limit("account", f"JetStream {storage} resource limits exceeded for "
                            f'account: "{self.account_name}"', error=False)
            from minijs.jetstream import errors as E

            raise E.account_resources_exceeded()

    def log_limit(self, key: str, text: str, *, error: bool) -> None:
        now = self.clock.monotonic()
        last = self._limit_logged.get(key)
        if last is not None and now - last <= 10.0:
            return
        self._limit_logged[key] = now
        (self.log.error if error else self.log.warn)(text)

    # ------------------------------------------------------------------ reports

    def usage(self) -> tuple[int, int]:
        """(memory bytes, storage bytes) used by all streams."""
        mem = sto = 0
        for s in self.streams.values():
            if s.config.storage == "memory":
                mem += s.store.bytes
            else:
                sto += s.store.bytes
        return mem, sto

    def num_consumers(self) -> int:
        """Consumers of all streams, with the internal ones mirrors and sources use."""
        links = self._replicator.num_consumers() if self._replicator is not None else 0
        return sum(len(s.consumers) for s in self.streams.values()) + links

    def account_info(self) -> dict:
        mem, sto = self.usage()
        res_mem, res_sto = self.reserved()
        return {
            "memory": mem,
            "storage": sto,
            "reserved_memory": res_mem,
            "reserved_storage": res_sto,
            "streams": len(self.streams),
            "consumers": self.num_consumers(),
            "limits": self.account_limits.to_json(),
            **({"domain": self.domain} if self.domain else {}),
            "api": {"level": 5, "total": self.api_total, "errors": self.api_errors},
        }


def _three_quarters_of_memory() -> int:
    """75% of the physical memory (Go's ``sysMem / 4 * 3``); 256 MiB if unknown."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 0
    return total // 4 * 3 if total > 0 else 256 * 1024 * 1024


def _temp_root() -> str:
    """The system's temporary directory (``tempfile`` is imported only by servers that use it)."""
    import tempfile

    return tempfile.gettempdir()


def _three_quarters_of_disk(path: str) -> int:
    """75% of the space available at ``path`` (Go's ``Bavail * Bsize / 4 * 3``); 1 TiB if
    unknown."""
    try:
        st = os.statvfs(path)
    except (OSError, AttributeError):
        return 1 << 40
    return st.f_bavail * st.f_bsize // 4 * 3
