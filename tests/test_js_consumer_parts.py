"""The consumer's parts and the interfaces between them (the map in the module docstring of
``minijs.jetstream.consumers.consumer``): each part declares what it needs of its consumer as a
Protocol, a live consumer satisfies every one of them, and no part's state is kept on the
consumer as well."""
from __future__ import annotations

from typing import Any

import pytest

from minijs import Server
from minijs.jetstream.config import consumer as C
from minijs.jetstream.config.stream import stream_config_from_dict
from minijs.jetstream.consumers.acks import AckHost, AckTracker
from minijs.jetstream.consumers.consumer import Consumer
from minijs.jetstream.consumers.create import ExistingConsumer, TargetStream
from minijs.jetstream.consumers.pending import CountHost
from minijs.jetstream.consumers.priority import PriorityHost, WaitQueue
from minijs.jetstream.consumers.pull import PullHost, RequestChooser
from minijs.jetstream.consumers.push import PushHost
from minijs.jetstream.consumers.state import StateHost


def _consumer(stream: Any, name: str, **spec: Any) -> Consumer:
    cfg = C.finalize_new(C.validate_and_default(
        C.consumer_config_from_dict({"durable_name": name, "ack_policy": "explicit", **spec}),
        stream.config))
    consumer = Consumer(stream, name, cfg)
    stream.consumers[name] = consumer
    consumer.start()
    return consumer


def _state(part: Any) -> set[str]:
    names = set(getattr(part, "__slots__", ())) | set(getattr(part, "__dict__", ()))
    return names - {"host", "chooser"}


@pytest.mark.parametrize("spec", [{}, {"deliver_subject": "dlv.p"}], ids=["pull", "push"])
async def test_consumer_satisfies_every_declared_interface(spec: dict, tmp_path: Any) -> None:
    async with Server(port=0, jetstream=True, store_dir=str(tmp_path)) as server:
        stream = server.jetstream.create_stream(stream_config_from_dict(
            {"name": "S", "subjects": ["s.>"], "storage": "file"}))
        consumer = _consumer(stream, "c", **spec)
        for proto in (CountHost, AckHost, PullHost, PriorityHost, StateHost, ExistingConsumer):
            assert isinstance(consumer, proto), proto.__name__
        assert isinstance(consumer, PushHost) and (consumer.push is not None) == bool(spec)
        assert isinstance(consumer.priority, RequestChooser)
        assert isinstance(consumer.pull, WaitQueue)
        assert isinstance(stream, TargetStream)
        assert isinstance(consumer.acks, AckTracker) and consumer.acks.host is consumer
        # the delivery loop of its kind, bound at creation
        loop = consumer.push.push if consumer.push is not None else consumer.pull.wake
        assert consumer.wake == loop
        assert consumer.changed == consumer.durable.changed
        consumer.stop()


async def test_each_part_keeps_its_own_state(tmp_path: Any) -> None:
    """A part's state lives in the part only: the consumer keeps none of it, and reaches it
    through the part (``consumer.pending`` is ``consumer.acks.pending``)."""
    async with Server(port=0, jetstream=True, store_dir=str(tmp_path)) as server:
        stream = server.jetstream.create_stream(stream_config_from_dict(
            {"name": "S", "subjects": ["s.>"], "storage": "file"}))
        pull = _consumer(stream, "p", priority_policy="pinned_client", priority_groups=["A"])
        push = _consumer(stream, "h", deliver_subject="dlv.h", flow_control=True,
                         idle_heartbeat=1_000_000_000)
        for consumer in (pull, push):
            own = _state(consumer)
            parts = [consumer.counts, consumer.acks, consumer.pull, consumer.priority,
                     consumer.durable] + ([consumer.push] if consumer.push is not None else [])
            for part in parts:
                shared = own & _state(part)
                assert not shared, (type(part).__name__, shared)
            assert consumer.pending is consumer.acks.pending
            assert consumer.rdc is consumer.acks.rdc
            consumer.stop()
