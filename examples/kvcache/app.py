"""A read-through cache on a JetStream Key-Value bucket whose entries expire (bucket ``ttl``).

``Cache.get(key)`` serves the stored value while it is younger than the bucket's TTL; once the
server has expired it, the next ``get`` recomputes it with the application's ``compute(key)``
and stores the fresh value (which lives for another TTL). Concurrent misses for one key in
this process wait for one computation (a lock per key, and a second read once it is theirs).
Every process that opens the same bucket shares the cached values.
"""
from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

from nats.js.api import StorageType
from nats.js.errors import KeyNotFoundError

Compute = Callable[[str], Awaitable[bytes]]


class Cache:
    def __init__(self, kv, compute: Compute) -> None:
        self.kv = kv
        self.compute = compute
        self.hits = 0
        self.misses = 0
        self._locks: dict[str, asyncio.Lock] = {}

    @classmethod
    async def open(cls, js, bucket: str, compute: Compute, *, ttl: float) -> "Cache":
        """Open (creating if needed) ``bucket`` with entries living ``ttl`` seconds."""
        kv = await js.create_key_value(bucket=bucket, ttl=ttl, storage=StorageType.MEMORY)
        return cls(kv, compute)

    async def get(self, key: str) -> bytes:
        value = await self._read(key)
        if value is not None:
            self.hits += 1
            return value
        # A miss: one computation per key at a time. Whoever waited for the lock reads again
        # first, so a value stored meanwhile (by this process or another) is served.
        lock = self._locks.setdefault(key, asyncio.Lock())
        try:
            async with lock:
                value = await self._read(key)
                if value is not None:
                    self.hits += 1
                    return value
                value = await self.compute(key)
                await self.kv.put(key, value)
                self.misses += 1
                return value
        finally:
            if not lock.locked() and self._locks.get(key) is lock:
                del self._locks[key]  # a later miss gets a new lock (and reads first)

    async def _read(self, key: str) -> bytes | None:
        try:
            return (await self.kv.get(key)).value
        except KeyNotFoundError:  # never stored, deleted, or expired
            return None

    async def invalidate(self, key: str) -> None:
        """Drop a value before its TTL (e.g. the source changed)."""
        await self.kv.delete(key)
