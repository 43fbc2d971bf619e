"""The KV cache serves a value until the bucket's TTL (2 s) has passed, then recomputes it.

Time moves with ``minijs_server.clock.advance``: at once on minijs, by waiting on nats-server.
The checks stay half a second away from the expiry instant, so they hold on a real server too.
"""
import asyncio
from collections import Counter

import pytest

from .app import Cache

pytestmark = pytest.mark.minijs(clock="virtual")

TTL = 2.0


class PriceService:
    """The slow source of truth the cache protects: counts how often it is asked."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    async def price(self, sku: str) -> bytes:
        self.calls[sku] += 1
        return f"{sku}:v{self.calls[sku]}".encode()


@pytest.fixture
async def service_and_cache(js):
    service = PriceService()
    cache = await Cache.open(js, "prices", service.price, ttl=TTL)
    return service, cache


async def test_value_is_served_until_the_ttl_passes_then_recomputed(minijs_server,
                                                                      service_and_cache):
    service, cache = service_and_cache

    assert await cache.get("sku-1") == b"sku-1:v1"          # miss: computed and stored
    assert await cache.get("sku-1") == b"sku-1:v1"          # hit
    await minijs_server.clock.advance_async(1.5)
    assert await cache.get("sku-1") == b"sku-1:v1"          # 1.5 s old: still served
    assert service.calls["sku-1"] == 1

    await minijs_server.clock.advance_async(1.0)            # 2.5 s old: expired
    assert await cache.get("sku-1") == b"sku-1:v2"          # recomputed
    assert await cache.get("sku-1") == b"sku-1:v2"
    assert service.calls["sku-1"] == 2
    assert (cache.hits, cache.misses) == (3, 2)

    await minijs_server.clock.advance_async(1.5)            # the new value has its own TTL
    assert await cache.get("sku-1") == b"sku-1:v2"
    assert service.calls["sku-1"] == 2


async def test_each_entry_expires_on_its_own_age(minijs_server, service_and_cache):
    service, cache = service_and_cache

    await cache.get("a")                                    # stored at t=0
    await minijs_server.clock.advance_async(1.0)
    await cache.get("b")                                    # stored at t=1
    await minijs_server.clock.advance_async(1.5)            # t=2.5: a is 2.5 s old, b 1.5 s

    assert await cache.get("a") == b"a:v2"
    assert await cache.get("b") == b"b:v1"

    await minijs_server.clock.advance_async(1.0)            # t=3.5: b is 2.5 s old
    assert await cache.get("b") == b"b:v2"
    assert await cache.get("a") == b"a:v2"                  # a was refreshed at t=2.5
    assert service.calls == {"a": 2, "b": 2}


async def test_invalidate_drops_a_value_before_its_ttl(service_and_cache):
    service, cache = service_and_cache

    assert await cache.get("sku-9") == b"sku-9:v1"
    await cache.invalidate("sku-9")
    assert await cache.get("sku-9") == b"sku-9:v2"
    assert service.calls["sku-9"] == 2


async def test_concurrent_misses_compute_once(service_and_cache):
    service, cache = service_and_cache

    values = await asyncio.gather(*(cache.get("hot") for _ in range(10)))

    assert values == [b"hot:v1"] * 10
    assert service.calls["hot"] == 1
