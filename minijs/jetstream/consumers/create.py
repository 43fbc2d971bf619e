"""The create sequence of ``$JS.API.CONSUMER.CREATE…`` / ``CONSUMER.DURABLE.CREATE…``: every
check of nats-server's ``jsConsumerCreateRequest`` and ``addConsumerWithAssignment``, in its
order, ending in what to do — update an existing consumer or create a new one, with the
validated config.

The order is observable (the first refusal is the one a client sees), so it is written once,
here, and both the API endpoint and the tests call :func:`plan_create`:

1. the body is decoded strictly (400/10025) before anything else;
2. the API level the request requires (the caller's ``check_api_level``);
3. the subject's form against the body (names, filter, replicas);
4. the stream (404/10059);
5. the config is validated and given its defaults (against the consumer of the same name,
   when there is one, and the server's and account's limits);
6. for an existing consumer: the create action, work-queue overlap, then the update rules;
   for a new one: the ``update`` action (10149), the consumer limits, the work-queue rules,
   the name.

Nothing is changed by planning: the caller applies the plan.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable, Mapping, Protocol, TypeVar, runtime_checkable

from minijs.jetstream import errors as E
from minijs.jetstream.config import consumer as C
from minijs.jetstream.config.stream import StreamConfig

if TYPE_CHECKING:
    from minijs.randomness import RandomSource


@runtime_checkable
class ExistingConsumer(Protocol):
    """What planning reads of a consumer already on the stream."""

    @property
    def config(self) -> C.ConsumerConfig: ...

    @property
    def is_push(self) -> bool: ...

    @property
    def active(self) -> bool:
        """A subscription exists on exactly its deliver subject."""


@runtime_checkable
class TargetStream(Protocol):
    """What planning reads of the stream the consumer is for."""

    @property
    def config(self) -> StreamConfig: ...

    @property
    def consumers(self) -> Mapping[str, ExistingConsumer]: ...


StreamT = TypeVar("StreamT", bound=TargetStream)


@dataclasses.dataclass(frozen=True)
class CreateLimits:
    """The server's and the account's limits a new config is checked against (0: none)."""

    server_max_ack_pending: int = 0
    server_max_request_batch: int = 0
    account_max_ack_pending: int = 0
    account_max_consumers: int = 0


@dataclasses.dataclass(frozen=True)
class CreatePlan:
    """What a create request asks for, checked: ``config`` for the consumer ``name``, which
    exists (``update``: apply it to that consumer) or is to be created."""

    name: str
    config: C.ConsumerConfig
    update: bool


def plan_create(subject: str, payload: bytes, *, lookup: Callable[[str], StreamT | None],
                check_api_level: Callable[[], None] = lambda: None,
                limits: CreateLimits = CreateLimits(), clustered: bool = False,
                randomness: "RandomSource | None" = None) -> tuple[StreamT, CreatePlan]:
    """Check a create request on ``subject`` (a create subject
    :func:`~minijs.jetstream.config.consumer.parse_create_subject` accepts) with body
    ``payload``: the stream ``lookup`` finds and the plan, or the :class:`ApiError` the
    server answers. ``clustered``: the server is a cluster's node (replicas are allowed). An
    unnamed consumer's name is drawn from ``randomness`` (the server's seeded source)."""
    form = C.parse_create_subject(subject)
    if form is None:
        raise ValueError(f"not a consumer create subject: {subject!r}")
    cfg, action, pedantic, req_stream = C.parse_create_request(payload)
    check_api_level()
    cfg = C.apply_create_subject(form, cfg, req_stream, clustered=clustered)
    stream = lookup(form.stream)
    if stream is None:
        raise E.stream_not_found()
    consumers = stream.consumers
    scfg = stream.config
    key = C.consumer_key(cfg)
    old = consumers.get(key) if key else None
    cfg = C.validate_and_default(cfg, scfg, pedantic=pedantic,
                                 existing=old.config if old is not None else None,
                                 server_max_ack_pending=limits.server_max_ack_pending,
                                 server_max_request_batch=limits.server_max_request_batch,
                                 account_max_ack_pending=limits.account_max_ack_pending)
    others = [(name, C.filters_of(c.config)) for name, c in consumers.items()
              if not c.config.direct and not c.config.sourcing]
    workqueue = scfg.retention == "workqueue"
    if old is not None:
        C.check_create_action(cfg, old.config, action)
        if workqueue:
            C.check_workqueue_overlap(key, C.filters_of(cfg), others)
        cfg = C.check_update(old.config, cfg,
                             old_deliver_has_interest=old.is_push and old.active)
        return stream, CreatePlan(key, cfg, update=True)
    if action == C.ACTION_UPDATE:
        raise E.consumer_does_not_exist()
    C.check_max_consumers(scfg.max_consumers,
                          sum(1 for c in consumers.values() if not c.config.sourcing),
                          limits.account_max_consumers)
    C.check_workqueue_new(cfg, scfg, others)
    name = C.assign_name(cfg, consumers.keys(),
                         file_storage=scfg.storage == "file" and not cfg.mem_storage,
                         randomness=randomness)
    return stream, CreatePlan(name, C.finalize_new(cfg), update=False)
