"""ConsumerConfig: strict decoding, defaulting, validation, update rules and JSON form.

Behaviour follows nats-server v2.15.1 (``jsConsumerCreateRequest``, ``setConsumerConfigDefaults``,
``checkConsumerCfg``, ``addConsumerWithAssignment``, ``checkNewConsumerConfig``,
``setStaticConsumerMetadata``); every text was verified against the real binary where reachable
on a single server (minijs's own test suite pins each one).

How the API layer is expected to use this module for ``CONSUMER.CREATE`` /
``CONSUMER.DURABLE.CREATE`` (each step raises :class:`~minijs.jetstream.errors.ApiError`; the
first failure is the reply)::

    form = parse_create_subject(subject)          # None → no reply at all
    cfg, action, pedantic, stream = parse_create_request(body)              # 400/10025
    # (Nats-Required-Api-Level header → 412/10185 comes before the subject checks)
    cfg = apply_create_subject(form, cfg, stream)
    #   → 10016, 10056, 10127, 10018, 10017, 10020, 10137, 10131, then 500/10074 (replicas > 1)
    mset = lookup(form.stream) or raise errors.stream_not_found()          # 404/10059
    key = consumer_key(cfg)                         # "" for an auto-named legacy ephemeral
    old = mset.consumers.get(key) if key else None
    cfg = validate_and_default(cfg, mset.config, pedantic=pedantic,
                               existing=old.config if old else None)
    #   → static metadata, defaults (10157 pedantic), then checkConsumerCfg (10052, 10126, …)
    others = [(name, filters_of(c.config)) for name, c in non-direct, non-sourcing consumers]
    if old:
        check_create_action(cfg, old.config, action)                         # 400/10148
        if workqueue: check_workqueue_overlap(key, filters_of(cfg), others)  # 400/10100
        cfg = check_update(old.config, cfg, old_deliver_has_interest=…)      # 500/10012, 10013, 10116
        apply the changes; reply with consumer_info_dict(…)
    else:
        if action == "update": raise errors.consumer_does_not_exist()        # 400/10149
        check_max_consumers(mset.config.max_consumers, number of non-sourcing consumers)  # 10026
        check_workqueue_new(cfg, mset.config, others)                        # 10098, 10101, 10099, 10100
        name = assign_name(cfg, taken, file_storage=…)                       # 10102, 10103, 10012
        cfg = finalize_new(cfg)          # ephemerals get inactive_threshold 5 s
        store; reply with consumer_info_dict(…) (its config via to_json_dict(cfg, dynamic_metadata=True))

Config values: durations are ints (ns), times are ns ints (:class:`~minijs.jetstream.jsonfmt.GoTime`
when a client sent them, so the zone is echoed), ``None`` is a Go nil pointer/slice/map, enums
are their JSON strings: ``deliver_policy`` ``"all"|"last"|"new"|"by_start_sequence"|
"by_start_time"|"last_per_subject"``, ``ack_policy`` ``"none"|"all"|"explicit"|"flow_control"``,
``replay_policy`` ``"instant"|"original"``, ``priority_policy`` ``"none"|"overflow"|
"pinned_client"|"prioritized"``. Create actions are ``""`` (create or update), ``"create"``,
``"update"``.

Pure module: no I/O, stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from minijs.core import subjects as _subj
from minijs.jetstream import errors as E
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.config.stream import (
    LEVEL_KEY,
    MAX_DESCRIPTION_LEN,
    MAX_METADATA_LEN,
    MAX_NAME_LEN,
    REQ_LEVEL_KEY,
    VERSION_KEY,
    StreamConfig,
    clone_config,
    is_valid_asset_name,
    reply_metadata,
    static_metadata,
)
from minijs.protocol.gojson import OMITEMPTY, RAW, go_field, go_struct, struct_of

__all__ = [
    "ACTION_CREATE",
    "ACTION_CREATE_OR_UPDATE",
    "ACTION_UPDATE",
    "CONSUMER_CONFIG_TYPE",
    "CREATE_CONSUMER_REQUEST_TYPE",
    "DEFAULT_ACK_WAIT",
    "DEFAULT_INACTIVE_THRESHOLD",
    "DEFAULT_MAX_ACK_PENDING",
    "DEFAULT_MAX_WAITING",
    "DEFAULT_PINNED_TTL",
    "FLOW_CONTROL_HEARTBEAT",
    "ConsumerConfig",
    "CreateSubject",
    "apply_create_subject",
    "apply_defaults",
    "assign_name",
    "check_consumer_config",
    "check_create_action",
    "check_max_consumers",
    "check_update",
    "check_workqueue_new",
    "check_workqueue_overlap",
    "consumer_config_from_dict",
    "consumer_info_dict",
    "consumer_key",
    "filters_of",
    "finalize_new",
    "generate_consumer_name",
    "is_durable",
    "is_pull",
    "parse_create_request",
    "parse_create_subject",
    "required_api_level",
    "same_config",
    "sequence_info_dict",
    "set_static_metadata",
    "to_json_dict",
    "validate_and_default",
]

_SECOND = 1_000_000_000
_MS = 1_000_000

DEFAULT_ACK_WAIT = 30 * _SECOND
"""``ack_wait`` given to ``explicit``/``all`` consumers that do not set one."""
DEFAULT_MAX_ACK_PENDING = 1000
"""``max_ack_pending`` given to acking consumers when neither they nor the stream set one."""
DEFAULT_MAX_WAITING = 512
"""``max_waiting`` given to pull consumers that do not set one."""
DEFAULT_INACTIVE_THRESHOLD = 5 * _SECOND
"""``inactive_threshold`` stamped on ephemerals without one (the real timer adds jitter)."""
DEFAULT_PINNED_TTL = 2 * 60 * _SECOND
"""``priority_timeout`` given to ``pinned_client`` consumers that do not set one."""
FLOW_CONTROL_HEARTBEAT = _SECOND
"""Heartbeat forced on / required for ``ack_policy: flow_control`` consumers."""
MIN_HEARTBEAT = 100 * _MS
MIN_MAX_EXPIRES = _MS

ACTION_CREATE_OR_UPDATE = ""
ACTION_CREATE = "create"
ACTION_UPDATE = "update"

_GROUP_NAME_RE = re.compile(r"[a-zA-Z0-9/_=-]{1,16}")
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


# --------------------------------------------------------------------------------------------
# Go types of the request (for the strict decoder)
# --------------------------------------------------------------------------------------------


def _enum(go_name: str, values: dict[bytes, str], zero: str, error_prefix: str) -> J.Custom:
    """``UnmarshalJSON`` that compares the raw JSON bytes (escapes and case matter).

    ``error_prefix`` reproduces the Go error: ``can not unmarshal`` + ``%q`` of the bytes for the
    policy enums, ``unknown … :`` + the raw bytes for actions / priority policies."""

    def unmarshal(raw: bytes, node: tuple) -> str:
        v = values.get(raw)
        if v is None:
            if error_prefix == "can not unmarshal":
                raise J.JSONError("can not unmarshal " + J.go_quote(raw))
            raise J.JSONError(error_prefix + " " + raw.decode("utf-8", "replace"))
        return v

    return J.Custom(go_name, unmarshal, zero)


DELIVER_POLICY_TYPE = _enum(
    "server.DeliverPolicy",
    {
        b'"all"': "all",
        b'"undefined"': "all",
        b'"last"': "last",
        b'"new"': "new",
        b'"by_start_sequence"': "by_start_sequence",
        b'"by_start_time"': "by_start_time",
        b'"last_per_subject"': "last_per_subject",
    },
    "all",
    "can not unmarshal",
)
ACK_POLICY_TYPE = _enum(
    "server.AckPolicy",
    {b'"none"': "none", b'"all"': "all", b'"explicit"': "explicit", b'"flow_control"': "flow_control"},
    "none",
    "can not unmarshal",
)
REPLAY_POLICY_TYPE = _enum(
    "server.ReplayPolicy", {b'"instant"': "instant", b'"original"': "original"}, "instant", "can not unmarshal"
)
PRIORITY_POLICY_TYPE = _enum(
    "server.PriorityPolicy",
    {
        b'"none"': "none",
        b'"overflow"': "overflow",
        b'"pinned_client"': "pinned_client",
        b'"prioritized"': "prioritized",
    },
    "none",
    "unknown priority policy:",
)
CONSUMER_ACTION_TYPE = _enum(
    "server.ConsumerAction",
    {b'""': ACTION_CREATE_OR_UPDATE, b'"create"': ACTION_CREATE, b'"update"': ACTION_UPDATE},
    ACTION_CREATE_OR_UPDATE,
    "unknown consumer action:",
)


# --------------------------------------------------------------------------------------------
# The dataclass: the field table of server.ConsumerConfig
# --------------------------------------------------------------------------------------------


@dataclass
class ConsumerConfig:
    """Every field nats-server 2.15.1 accepts in a ConsumerConfig, in Go struct (= JSON) order,
    each declared by its Go type and ``omitempty`` tag (:func:`~minijs.protocol.gojson.go_field`):
    the strict decoder (:data:`CONSUMER_CONFIG_TYPE`), :func:`consumer_config_from_dict`, the
    JSON form (:func:`to_json_dict`) and the comparison (:func:`same_config`) are derived from
    this table.

    Defaults are Go zero values (what an omitted field decodes to), not the server defaults:
    :func:`validate_and_default` turns e.g. ``max_deliver=0`` into ``-1``.
    """

    durable_name: str = go_field(J.STRING, OMITEMPTY)
    name: str = go_field(J.STRING, OMITEMPTY)
    description: str = go_field(J.STRING, OMITEMPTY)
    deliver_policy: str = go_field(DELIVER_POLICY_TYPE)
    opt_start_seq: int = go_field(J.UINT64, OMITEMPTY)
    opt_start_time: int | None = go_field(J.Ptr(J.TIME), OMITEMPTY)
    ack_policy: str = go_field(ACK_POLICY_TYPE)
    ack_wait: int = go_field(J.DURATION, OMITEMPTY)
    max_deliver: int = go_field(J.INT, OMITEMPTY)
    backoff: list[int] | None = go_field(J.Slice(J.DURATION), OMITEMPTY)
    filter_subject: str = go_field(J.STRING, OMITEMPTY)
    filter_subjects: list[str] | None = go_field(J.Slice(J.STRING), OMITEMPTY)
    replay_policy: str = go_field(REPLAY_POLICY_TYPE)
    rate_limit_bps: int = go_field(J.UINT64, OMITEMPTY)
    sample_freq: str = go_field(J.STRING, OMITEMPTY)
    max_waiting: int = go_field(J.INT, OMITEMPTY)
    max_ack_pending: int = go_field(J.INT, OMITEMPTY)
    flow_control: bool = go_field(J.BOOL, OMITEMPTY)
    headers_only: bool = go_field(J.BOOL, OMITEMPTY)
    max_batch: int = go_field(J.INT, OMITEMPTY)
    max_expires: int = go_field(J.DURATION, OMITEMPTY)
    max_bytes: int = go_field(J.INT, OMITEMPTY)
    deliver_subject: str = go_field(J.STRING, OMITEMPTY)
    deliver_group: str = go_field(J.STRING, OMITEMPTY)
    idle_heartbeat: int = go_field(J.DURATION, OMITEMPTY)
    inactive_threshold: int = go_field(J.DURATION, OMITEMPTY)
    num_replicas: int = go_field(J.INT)
    mem_storage: bool = go_field(J.BOOL, OMITEMPTY)
    direct: bool = go_field(J.BOOL, OMITEMPTY)
    sourcing: bool = go_field(J.BOOL, OMITEMPTY)
    metadata: dict[str, str] | None = go_field(J.Map(J.STRING), OMITEMPTY)
    pause_until: int | None = go_field(J.Ptr(J.TIME), OMITEMPTY)
    priority_groups: list[str] | None = go_field(J.Slice(J.STRING), OMITEMPTY)
    priority_policy: str = go_field(PRIORITY_POLICY_TYPE, OMITEMPTY)
    priority_timeout: int = go_field(J.DURATION, OMITEMPTY)

    def copy(self) -> ConsumerConfig:
        return clone_config(self)


CONSUMER_CONFIG_TYPE = struct_of(ConsumerConfig, "ConsumerConfig")
"""``server.ConsumerConfig``."""

CREATE_CONSUMER_REQUEST_TYPE = J.Struct(
    "CreateConsumerRequest",
    {
        "stream_name": J.STRING,
        "config": CONSUMER_CONFIG_TYPE,
        "action": CONSUMER_ACTION_TYPE,
        "pedantic": J.BOOL,
    },
)
"""``server.CreateConsumerRequest`` (body of every consumer create subject)."""

SEQUENCE_INFO_TYPE = go_struct(
    "SequenceInfo",
    ("consumer_seq", J.UINT64),
    ("stream_seq", J.UINT64),
    ("last_active", J.Ptr(J.TIME), OMITEMPTY),
)
PRIORITY_GROUP_STATE_TYPE = go_struct(
    "PriorityGroupState",
    ("group", J.STRING),
    ("pinned_client_id", J.STRING, OMITEMPTY),
    ("pinned_ts", J.TIME, OMITEMPTY),  # a time.Time: omitempty never omits it
)
CONSUMER_INFO_TYPE = go_struct(
    "ConsumerInfo",
    ("stream_name", J.STRING),
    ("name", J.STRING),
    ("created", J.TIME),
    ("config", J.Ptr(CONSUMER_CONFIG_TYPE), OMITEMPTY),
    ("delivered", SEQUENCE_INFO_TYPE),
    ("ack_floor", SEQUENCE_INFO_TYPE),
    ("num_ack_pending", J.INT),
    ("num_redelivered", J.INT),
    ("num_waiting", J.INT),
    ("num_pending", J.UINT64),
    ("cluster", J.Ptr(RAW), OMITEMPTY),
    ("push_bound", J.BOOL, OMITEMPTY),
    ("paused", J.BOOL, OMITEMPTY),
    ("pause_remaining", J.DURATION, OMITEMPTY),
    ("ts", J.TIME),
    ("priority_groups", J.Slice(PRIORITY_GROUP_STATE_TYPE), OMITEMPTY),
)
"""``server.ConsumerInfo`` (``cluster`` is passed marshalled; a standalone server has none)."""


def consumer_config_from_dict(d: dict) -> ConsumerConfig:
    """Build a :class:`ConsumerConfig` from a decoded dict (JSON names; unknown keys ignored;
    lists and maps copied)."""
    fields = CONSUMER_CONFIG_TYPE.fields
    return ConsumerConfig(**{k: fields[k].complete(v) for k, v in d.items() if k in fields})


def parse_create_request(payload: bytes) -> tuple[ConsumerConfig, str, bool, str]:
    """Strictly decode a consumer create body (``CreateConsumerRequest``).

    Returns ``(config, action, pedantic, stream_name)``; ``action`` is ``""``, ``"create"`` or
    ``"update"``. An empty body gives an all-zero config and ``stream_name ""`` (which then fails
    the 10056 check). Raises ``ApiError`` 400/10025 with Go's decoder text, e.g. ``invalid JSON:
    json: unknown field "foo"`` or ``invalid JSON: unknown consumer action: "bad"``.
    """
    d = J.decode_strict(payload, CREATE_CONSUMER_REQUEST_TYPE)
    cfg = consumer_config_from_dict(d.get("config") or {})
    return cfg, d.get("action", ACTION_CREATE_OR_UPDATE), bool(d.get("pedantic", False)), d.get("stream_name", "")


# --------------------------------------------------------------------------------------------
# Create subjects
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CreateSubject:
    """What a create subject says. ``kind`` is ``"legacy_ephemeral"``
    (``$JS.API.CONSUMER.CREATE.<S>``), ``"named"`` (``…CREATE.<S>.<C>[.<filter…>]``) or
    ``"legacy_durable"`` (``$JS.API.CONSUMER.DURABLE.CREATE.<S>.<C>``)."""

    kind: str
    stream: str
    consumer: str = ""
    filter: str = ""
    num_tokens: int = 0


def parse_create_subject(subject: str) -> CreateSubject | None:
    """Classify a consumer create subject; ``None`` when the server would not answer at all
    (fewer than 5 tokens, or not a consumer create subject)."""
    toks = subject.split(".")
    n = len(toks)
    if n < 5 or toks[0] != "$JS" or toks[1] != "API" or toks[2] != "CONSUMER":
        return None
    if n == 5:
        if toks[3] != "CREATE":
            return None
        return CreateSubject("legacy_ephemeral", toks[4], "", "", n)
    if toks[3] == "DURABLE":
        if n < 5 or toks[4] != "CREATE":
            return None
        return CreateSubject("legacy_durable", toks[5] if n > 5 else "", toks[6] if n > 6 else "", "", n)
    if toks[3] != "CREATE":
        return None
    return CreateSubject("named", toks[4], toks[5], ".".join(toks[6:]) if n > 6 else "", n)


def apply_create_subject(form: CreateSubject, cfg: ConsumerConfig, request_stream: str, *,
                         clustered: bool = False) -> ConsumerConfig:
    """The request checks of ``jsConsumerCreateRequest`` that need only the subject and the
    body; returns a copy of ``cfg`` whose ``name`` is set from the subject (named and legacy
    durable forms).

    Order: 400/10016 (durable form without exactly 7 tokens), 400/10056 (``stream_name`` ≠
    subject stream), 400/10127 (consumer name with ``\\`` or ``/``), legacy durable: 400/10018
    (no ``durable_name``), 400/10017 (``durable_name`` ≠ subject name); named form: 400/10017
    (``durable_name`` set and ≠ subject name); legacy ephemeral: 400/10020 (``durable_name``
    set); 400/10137 (filter in the subject and ``filter_subjects``); 400/10131 (subject filter ≠
    ``filter_subject``); finally 500/10074 for ``num_replicas > 1`` (single server, not
    ``clustered``).
    """
    cfg = cfg.copy()
    if form.kind == "legacy_durable" and form.num_tokens != 7:
        raise E.consumer_durable_name_not_in_subject()
    consumer_name = form.consumer if form.kind != "legacy_ephemeral" else cfg.name
    if form.stream != request_stream:
        raise E.stream_mismatch()
    if consumer_name and ("\\" in consumer_name or "/" in consumer_name):
        raise E.consumer_name_contains_path_separators()
    if form.kind == "legacy_durable":
        if cfg.durable_name == "":
            raise E.consumer_durable_name_not_set()
        if consumer_name != cfg.durable_name:
            raise E.consumer_durable_name_not_match_subject()
        cfg.name = consumer_name
    elif form.kind == "named":
        if cfg.durable_name and consumer_name != cfg.durable_name:
            raise E.consumer_durable_name_not_match_subject()
        cfg.name = consumer_name
    elif cfg.durable_name:
        raise E.consumer_ephemeral_with_durable_name()
    if form.filter and cfg.filter_subjects:
        raise E.consumer_multiple_filters_not_allowed()
    if form.filter and cfg.filter_subject != form.filter:
        raise E.consumer_create_filter_subject_mismatch()
    if cfg.num_replicas > 1 and not clustered:
        raise E.stream_replicas_not_supported()
    return cfg


def consumer_key(cfg: ConsumerConfig) -> str:
    """The name under which an existing consumer is looked up: the durable name, else the
    (subject-given) name; ``""`` for an auto-named legacy ephemeral (never exists)."""
    return cfg.durable_name or cfg.name


# --------------------------------------------------------------------------------------------
# Metadata
# --------------------------------------------------------------------------------------------


def required_api_level(cfg: ConsumerConfig) -> int:
    """The ``_nats.req.level`` nats-server computes: 1 for a non-zero ``pause_until`` or any
    priority setting, 4 for ``ack_policy: flow_control``, else 0."""
    level = 0
    if cfg.pause_until is not None and cfg.pause_until != J.ZERO_TIME:
        level = max(level, 1)
    if cfg.priority_policy != "none" or cfg.priority_timeout != 0 or cfg.priority_groups:
        level = max(level, 1)
    if cfg.ack_policy == "flow_control":
        level = max(level, 4)
    return level


def set_static_metadata(cfg: ConsumerConfig) -> ConsumerConfig:
    """In place: drop the dynamic keys a client may echo back and set ``_nats.req.level``.
    (Runs before validation on the server, so the key counts toward the metadata size.)"""
    cfg.metadata = static_metadata(cfg.metadata, required_api_level(cfg))
    return cfg


# --------------------------------------------------------------------------------------------
# Defaults and validation
# --------------------------------------------------------------------------------------------


def is_durable(cfg: ConsumerConfig) -> bool:
    return cfg.durable_name != ""


def is_pull(cfg: ConsumerConfig) -> bool:
    return cfg.deliver_subject == ""


def filters_of(cfg: ConsumerConfig) -> list[str]:
    """``filter_subjects`` plus ``filter_subject`` (Go ``gatherSubjectFilters``)."""
    out = list(cfg.filter_subjects or [])
    if cfg.filter_subject:
        out.append(cfg.filter_subject)
    return out


def _limit(stream_config: StreamConfig, key: str) -> int:
    return int((stream_config.consumer_limits or {}).get(key, 0) or 0)


def apply_defaults(
    cfg: ConsumerConfig,
    stream_config: StreamConfig,
    *,
    pedantic: bool = False,
    server_max_ack_pending: int = 0,
    server_max_request_batch: int = 0,
    account_max_ack_pending: int = 0,
) -> ConsumerConfig:
    """In place: ``setConsumerConfigDefaults``. Negative values are clamped (or rejected with
    400/10157 ``pedantic mode: …`` in pedantic mode), then the defaults are filled in:
    ``max_deliver`` -1, pull ``max_waiting`` 512, ``ack_wait`` 30 s (explicit/all) or
    ``backoff[0]``, ``max_ack_pending``/``inactive_threshold`` from the stream's
    ``consumer_limits`` (for every ack policy), ``max_ack_pending`` 1000 for acking consumers,
    ``priority_timeout`` 2 min for ``pinned_client``, and ``flow_control``+1 s heartbeat for the
    ``flow_control`` ack policy (not in pedantic mode)."""

    def clamp(name: str, bad: bool, to: int, text: str) -> None:
        if bad:
            if pedantic:
                raise E.pedantic(text)
            setattr(cfg, name, to)

    if cfg.max_deliver == 0 or cfg.max_deliver < -1:
        if pedantic and cfg.max_deliver < -1:
            raise E.pedantic("max_deliver must be set to -1")
        cfg.max_deliver = -1
    clamp("max_waiting", cfg.max_waiting < 0, 0, "max_waiting must not be negative")
    clamp("max_ack_pending", cfg.max_ack_pending < -1, -1, "max_ack_pending must be set to -1")
    clamp("max_batch", cfg.max_batch < 0, 0, "max_batch must not be negative")
    clamp("max_expires", cfg.max_expires < 0, 0, "max_expires must not be negative")
    clamp("max_bytes", cfg.max_bytes < 0, 0, "max_bytes must not be negative")
    clamp("idle_heartbeat", cfg.idle_heartbeat < 0, 0, "idle_heartbeat must not be negative")
    clamp("inactive_threshold", cfg.inactive_threshold < 0, 0, "inactive_threshold must not be negative")
    clamp("priority_timeout", cfg.priority_timeout < 0, 0, "priority_timeout must not be negative")

    if cfg.deliver_subject == "" and cfg.max_waiting == 0:
        cfg.max_waiting = DEFAULT_MAX_WAITING
    if cfg.ack_wait == 0 and cfg.ack_policy in ("explicit", "all"):
        cfg.ack_wait = DEFAULT_ACK_WAIT
    if cfg.backoff:
        if pedantic and cfg.ack_wait != cfg.backoff[0]:
            raise E.pedantic("first backoff value has to equal batch AckWait")
        cfg.ack_wait = cfg.backoff[0]
    stream_map = _limit(stream_config, "max_ack_pending")
    stream_it = _limit(stream_config, "inactive_threshold")
    if cfg.max_ack_pending == 0:
        if pedantic and stream_map > 0:
            raise E.pedantic("max_ack_pending must be set if it's configured in stream limits")
        cfg.max_ack_pending = stream_map
    if cfg.inactive_threshold == 0:
        if pedantic and stream_it > 0:
            raise E.pedantic("inactive_threshold must be set if it's configured in stream limits")
        cfg.inactive_threshold = stream_it
    if cfg.max_ack_pending == 0 and cfg.ack_policy != "none":
        pending = DEFAULT_MAX_ACK_PENDING
        if 0 < server_max_ack_pending < pending:
            pending = server_max_ack_pending
        if 0 < account_max_ack_pending < pending:
            pending = account_max_ack_pending
        cfg.max_ack_pending = pending
    if cfg.deliver_subject == "" and cfg.max_batch == 0 and server_max_request_batch > 0:
        if pedantic:
            raise E.pedantic("max_request_batch must be set if it's JetStream limits are set")
        cfg.max_batch = server_max_request_batch
    if cfg.priority_policy == "pinned_client" and cfg.priority_timeout == 0:
        cfg.priority_timeout = DEFAULT_PINNED_TTL
    if cfg.ack_policy == "flow_control" and not pedantic:
        cfg.flow_control = True
        cfg.idle_heartbeat = FLOW_CONTROL_HEARTBEAT
    return cfg


def _is_literal(s: str) -> bool:
    return not any(t in ("*", ">") for t in s.split("."))


def _parse_sample_freq(s: str) -> str | None:
    """Go ``strconv.Atoi(strings.TrimSuffix(s, "%"))`` plus the ``< 0`` check: ``None`` when
    valid, else the text that follows ``failed to parse consumer sampling configuration: ``."""
    body = s.removesuffix("%")
    digits = body[1:] if body[:1] in ("+", "-") else body
    if digits == "" or not digits.isascii() or not digits.isdigit():
        return f"strconv.Atoi: parsing {J.go_quote(body)}: invalid syntax"
    v = int(body)
    if not -(1 << 63) <= v < (1 << 63):
        return f"strconv.Atoi: parsing {J.go_quote(body)}: value out of range"
    if v < 0:
        return "<nil>"  # Go formats the nil error of a successful Atoi
    return None


def check_consumer_config(
    cfg: ConsumerConfig,
    stream_config: StreamConfig,
    *,
    server_max_ack_pending: int = 0,
    server_max_request_batch: int = 0,
    account_max_ack_pending: int = 0,
) -> None:
    """``checkConsumerCfg`` on a defaulted config; raises the first failing check's error.

    Order (codes): name / durable name characters 500/10052; replicas 10126, 10133, 10134;
    backoff < 0 10184; ack_wait < 0 10183; ``flow_control`` ack policy 10218, 10219, 10052
    (heartbeat ≠ 1 s), 10220, 10221, 10222; backoff longer than max_deliver 10116;
    description 10107; push: 10079, 10112, 10081, 10080, 10082, 10083 — pull: 10084 (ack none
    on a work queue), 10086, 10087, 10088, 10089, 10114, 10115, 10125; max_ack_pending above a
    limit 10121; inactive_threshold above the stream limit 10153; direct 10090, 10091; filters
    10136, 10052 (bad filter_subject), 10139, 10052/10138 (each filter / overlap); deliver
    policy options 10094; sample_freq 10095; flow control without heartbeat 10108; durable ≠
    name 10132; metadata size 10135; priority groups 10178, 10159, 10161, 10162, 10196, 10197;
    preferred placement 10052.
    """
    if cfg.name and not is_valid_asset_name(cfg.name):
        raise E.stream_invalid_config("consumer name can not contain '.', '*', '>', '\\', '/'")
    if cfg.durable_name and not is_valid_asset_name(cfg.durable_name):
        raise E.stream_invalid_config("consumer durable name can not contain '.', '*', '>', '\\', '/'")

    if cfg.num_replicas > 0 and cfg.num_replicas > stream_config.num_replicas:
        raise E.consumer_replicas_exceeds_stream()
    if cfg.num_replicas < 0:
        raise E.replicas_count_cannot_be_negative()
    if (
        stream_config.retention in ("interest", "workqueue")
        and cfg.num_replicas != 0
        and cfg.num_replicas != stream_config.num_replicas
    ):
        raise E.consumer_replicas_should_match_stream()

    if cfg.ack_policy not in ("none", "all", "explicit", "flow_control"):
        raise E.consumer_ack_policy_invalid()
    if cfg.replay_policy not in ("instant", "original"):
        raise E.consumer_replay_policy_invalid()

    if any(b < 0 for b in cfg.backoff or []):
        raise E.consumer_back_off_negative()
    if cfg.ack_wait < 0:
        raise E.consumer_ack_wait_negative()

    if cfg.ack_policy == "flow_control":
        if cfg.deliver_subject == "":
            raise E.consumer_ack_fc_requires_push()
        if not cfg.flow_control:
            raise E.consumer_ack_fc_requires_fc()
        if cfg.idle_heartbeat != FLOW_CONTROL_HEARTBEAT:
            raise E.stream_invalid_config("flow control ack policy heartbeat needs to be 1s")
        if cfg.max_ack_pending <= 0:
            raise E.consumer_ack_fc_requires_max_ack_pending()
        if cfg.ack_wait != 0 or cfg.backoff:
            raise E.consumer_ack_fc_requires_no_ack_wait()
        if cfg.max_deliver > 0:
            raise E.consumer_ack_fc_requires_no_max_deliver()

    if cfg.backoff and cfg.max_deliver != -1 and len(cfg.backoff) > cfg.max_deliver:
        raise E.consumer_max_deliver_backoff()

    if len(cfg.description.encode()) > MAX_DESCRIPTION_LEN:
        raise E.consumer_description_too_long(MAX_DESCRIPTION_LEN)

    if cfg.deliver_subject:
        ds = cfg.deliver_subject
        if not _is_literal(ds):
            raise E.consumer_deliver_to_wildcards()
        if not _subj.is_valid_subject(ds):
            raise E.consumer_invalid_deliver_subject()
        if any(_subj.is_subset(ds, s) for s in stream_config.subjects or []):
            raise E.consumer_deliver_cycle()
        if cfg.max_waiting != 0:
            raise E.consumer_push_max_waiting()
        if cfg.max_ack_pending > 0 and cfg.ack_policy == "none":
            raise E.consumer_max_pending_ack_policy_required()
        if 0 < cfg.idle_heartbeat < MIN_HEARTBEAT:
            raise E.consumer_small_heartbeat()
    else:
        if cfg.ack_policy == "none" and stream_config.retention == "workqueue":
            raise E.consumer_pull_requires_ack()
        if cfg.rate_limit_bps > 0:
            raise E.consumer_pull_with_rate_limit()
        if cfg.max_waiting < 0:
            raise E.consumer_max_waiting_negative()
        if cfg.idle_heartbeat > 0:
            raise E.consumer_hb_requires_push()
        if cfg.flow_control:
            raise E.consumer_fc_requires_push()
        if cfg.max_batch < 0:
            raise E.consumer_max_request_batch_negative()
        if cfg.max_expires != 0 and cfg.max_expires < MIN_MAX_EXPIRES:
            raise E.consumer_max_request_expires_too_small()
        if server_max_request_batch > 0 and cfg.max_batch > server_max_request_batch:
            raise E.consumer_max_request_batch_exceeded(server_max_request_batch)
    if server_max_ack_pending > 0 and cfg.max_ack_pending > server_max_ack_pending:
        raise E.consumer_max_pending_ack_excess(server_max_ack_pending)
    if account_max_ack_pending > 0 and cfg.max_ack_pending > account_max_ack_pending:
        raise E.consumer_max_pending_ack_excess(account_max_ack_pending)
    stream_map = _limit(stream_config, "max_ack_pending")
    if stream_map > 0 and cfg.max_ack_pending > stream_map:
        raise E.consumer_max_pending_ack_excess(stream_map)
    stream_it = _limit(stream_config, "inactive_threshold")
    if stream_it > 0 and cfg.inactive_threshold > stream_it:
        raise E.consumer_inactive_threshold_excess(J.go_duration(stream_it))

    if cfg.direct:
        if cfg.deliver_subject == "":
            raise E.consumer_direct_requires_push()
        if is_durable(cfg):
            raise E.consumer_direct_requires_ephemeral()

    if cfg.filter_subject and cfg.filter_subjects:
        raise E.consumer_duplicate_filter_subjects()
    if cfg.filter_subject and not _subj.is_valid_subject(cfg.filter_subject):
        raise E.stream_invalid_config("invalid subject")
    if any(f == "" for f in cfg.filter_subjects or []):
        raise E.consumer_empty_filter()
    filters = filters_of(cfg)
    for i, f in enumerate(filters):
        if not _subj.is_valid_subject(f):
            raise E.stream_invalid_config("invalid subject")
        for j, g in enumerate(filters):
            if i != j and _subj.is_subset(f, g):
                raise E.consumer_overlapping_subject_filters()

    _check_deliver_policy(cfg)

    if cfg.sample_freq:
        err = _parse_sample_freq(cfg.sample_freq)
        if err is not None:
            raise E.consumer_invalid_sampling(err)

    if cfg.flow_control and cfg.idle_heartbeat == 0:
        raise E.consumer_with_flow_control_needs_heartbeats()

    if cfg.durable_name and cfg.name and cfg.name != cfg.durable_name:
        raise E.consumer_create_durable_and_name_mismatch()

    md_len = sum(len(k.encode()) + len(v.encode()) for k, v in (cfg.metadata or {}).items())
    if md_len > MAX_METADATA_LEN:
        raise E.consumer_metadata_length(f"{MAX_METADATA_LEN // 1024}KB")

    if cfg.priority_policy != "none":
        if cfg.deliver_subject:
            raise E.consumer_push_with_priority_group()
        if not cfg.priority_groups:
            raise E.consumer_priority_policy_without_group()
        for g in cfg.priority_groups:
            if g == "":
                raise E.consumer_empty_group_name()
            if not _GROUP_NAME_RE.fullmatch(g):
                raise E.consumer_invalid_group_name()
    else:
        if cfg.priority_groups:
            raise E.consumer_priority_group_with_policy_none()
        if cfg.priority_timeout > 0:
            raise E.consumer_pinned_ttl_without_priority_policy_none()

    if stream_config.placement is not None and (stream_config.placement or {}).get("preferred"):
        raise E.stream_invalid_config("preferred server not permitted in placement")


def _check_deliver_policy(cfg: ConsumerConfig) -> None:
    """400/10094 start-position conflicts (texts as the server words them)."""

    def also_set(dp: str, what: str) -> E.ApiError:
        return E.consumer_invalid_policy(
            f"consumer delivery policy is deliver {dp}, but optional start {what} is also set"
        )

    def not_set(dp: str, what: str) -> E.ApiError:
        return E.consumer_invalid_policy(
            f"consumer delivery policy is deliver {dp}, but optional {what} is not set"
        )

    dp = cfg.deliver_policy
    has_seq = cfg.opt_start_seq > 0
    has_time = cfg.opt_start_time is not None
    words = {"all": "all", "last": "last", "last_per_subject": "last per subject", "new": "new"}
    if dp in words:
        if has_seq:
            raise also_set(words[dp], "sequence")
        if has_time:
            raise also_set(words[dp], "time")
        if dp == "last_per_subject" and not filters_of(cfg):
            raise not_set("last per subject", "filter subject")
    elif dp == "by_start_sequence":
        if not has_seq:
            raise not_set("by start sequence", "start sequence")
        if has_time:
            raise also_set("by start sequence", "time")
    elif dp == "by_start_time":
        if not has_time:
            raise not_set("by start time", "start time")
        if has_seq:
            raise also_set("by start time", "start sequence")


def validate_and_default(
    cfg: ConsumerConfig,
    stream_config: StreamConfig,
    *,
    pedantic: bool = False,
    existing: ConsumerConfig | None = None,
    server_max_ack_pending: int = 0,
    server_max_request_batch: int = 0,
    account_max_ack_pending: int = 0,
) -> ConsumerConfig:
    """Return the defaulted, validated config (the input is not modified) or raise ``ApiError``.

    Call after :func:`apply_create_subject` and the stream lookup. ``existing`` is the stored
    config of the consumer with the same name, if any: its ``pause_until`` replaces the
    request's (a create never changes the pause; use CONSUMER.PAUSE). Then, like the server:
    static metadata (``_nats.req.level``, dynamic keys dropped), :func:`apply_defaults`,
    :func:`check_consumer_config`. The ephemeral ``inactive_threshold`` of 5 s is *not* set here
    (the server stamps it when the consumer object is built, see :func:`finalize_new` and
    :func:`check_update`).
    """
    out = cfg.copy()
    if existing is not None:
        out.pause_until = existing.pause_until
    set_static_metadata(out)
    apply_defaults(
        out,
        stream_config,
        pedantic=pedantic,
        server_max_ack_pending=server_max_ack_pending,
        server_max_request_batch=server_max_request_batch,
        account_max_ack_pending=account_max_ack_pending,
    )
    check_consumer_config(
        out,
        stream_config,
        server_max_ack_pending=server_max_ack_pending,
        server_max_request_batch=server_max_request_batch,
        account_max_ack_pending=account_max_ack_pending,
    )
    return out


# --------------------------------------------------------------------------------------------
# Existing consumers: action "create", update rules
# --------------------------------------------------------------------------------------------


def _time_eq(a: int | None, b: int | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return int(a) == int(b)


def _go_equal(a: ConsumerConfig, b: ConsumerConfig) -> bool:
    """``reflect.DeepEqual`` of two configs: pointer times compare by instant *and* zone,
    nil vs empty slices/maps differ."""
    return CONSUMER_CONFIG_TYPE.equal(a.__dict__, b.__dict__)


def same_config(new: ConsumerConfig, old: ConsumerConfig) -> bool:
    """Would an ``action: "create"`` of ``new`` (validated) on existing ``old`` succeed?

    Like ``copyConsumerMetadata`` + ``reflect.DeepEqual``: dynamic metadata keys are ignored and
    ``_nats.req.level`` is taken from ``old``; everything else must be equal — including
    ``inactive_threshold``, which the server stamped to 5 s on an ephemeral (so re-creating an
    ephemeral with ``action: "create"`` and no threshold fails with 10148, as on the server).
    """
    a = new.copy()
    md = dict(a.metadata) if a.metadata is not None else None
    if md is not None:
        md.pop(VERSION_KEY, None)
        md.pop(LEVEL_KEY, None)
    if old.metadata is not None and REQ_LEVEL_KEY in old.metadata:
        if md is None:
            md = {}
        md[REQ_LEVEL_KEY] = old.metadata[REQ_LEVEL_KEY]
    elif md is not None:
        md.pop(REQ_LEVEL_KEY, None)
        if not md:
            md = None
    a.metadata = md
    return _go_equal(a, old)


def check_create_action(new: ConsumerConfig, old: ConsumerConfig, action: str) -> None:
    """``action: "create"`` on an existing consumer with a different config → 400/10148
    ``consumer already exists`` (identical config = idempotent success)."""
    if action == ACTION_CREATE and not same_config(new, old):
        raise E.consumer_already_exists()


def check_update(
    old: ConsumerConfig, new: ConsumerConfig, *, old_deliver_has_interest: bool = False
) -> ConsumerConfig:
    """``checkNewConsumerConfig`` for re-creating existing consumer ``old`` with ``new`` (a
    config that went through :func:`validate_and_default` with ``existing=old``); returns the
    config to store (ephemerals keep the 5 s ``inactive_threshold`` stamp).

    Identical configs are a no-op. Otherwise 500/10012 with, in this order: ``deliver policy
    can not be updated``, ``storage type can not be updated`` (mem_storage), ``direct can not be
    updated``, ``sourcing can not be updated``, ``start sequence can not be updated``, ``start
    time can not be updated``, ``ack policy can not be updated``, ``replay policy can not be
    updated``, ``heart beats can not be updated``, ``flow control can not be updated``, ``can
    not update pull consumer to push based``, ``can not update push consumer to pull based``,
    then 400/10013 ``consumer name already in use`` when the deliver subject changes while the
    old one has interest (``old_deliver_has_interest``), 500/10012 ``max waiting can not be
    updated``, 400/10116 backoff vs max_deliver. Everything else may change.
    """
    if not _go_equal(old, new):
        def fail(text: str) -> E.ApiError:
            return E.consumer_create(text)

        if old.deliver_policy != new.deliver_policy:
            raise fail("deliver policy can not be updated")
        if old.mem_storage != new.mem_storage:
            raise fail("storage type can not be updated")
        if old.direct != new.direct:
            raise fail("direct can not be updated")
        if old.sourcing != new.sourcing:
            raise fail("sourcing can not be updated")
        if old.opt_start_seq != new.opt_start_seq:
            raise fail("start sequence can not be updated")
        if not _time_eq(old.opt_start_time, new.opt_start_time):
            raise fail("start time can not be updated")
        if old.ack_policy != new.ack_policy:
            raise fail("ack policy can not be updated")
        if old.replay_policy != new.replay_policy:
            raise fail("replay policy can not be updated")
        if old.idle_heartbeat != new.idle_heartbeat:
            raise fail("heart beats can not be updated")
        if old.flow_control != new.flow_control:
            raise fail("flow control can not be updated")
        if old.deliver_subject != new.deliver_subject:
            if old.deliver_subject == "":
                raise fail("can not update pull consumer to push based")
            if new.deliver_subject == "":
                raise fail("can not update push consumer to pull based")
            if old_deliver_has_interest:
                raise E.consumer_name_exist()
        if old.max_waiting != new.max_waiting:
            raise fail("max waiting can not be updated")
        if new.backoff and new.max_deliver != -1 and len(new.backoff) > new.max_deliver:
            raise E.consumer_max_deliver_backoff()
    out = new.copy()
    # The server re-stamps the 5 s default when the *stored* consumer is an ephemeral (it asks
    # the live consumer, not the new config): a durable re-created without durable_name keeps
    # no threshold, an ephemeral that gains a durable_name keeps 5 s.
    if not is_durable(old) and out.inactive_threshold <= 0:
        out.inactive_threshold = DEFAULT_INACTIVE_THRESHOLD
    return out


# --------------------------------------------------------------------------------------------
# New consumers: checks needing live state (plain data in, errors out)
# --------------------------------------------------------------------------------------------


def check_max_consumers(stream_max_consumers: int, num_consumers: int, account_max_consumers: int = 0) -> None:
    """400/10026 when the stream (or a stricter account) consumer limit is reached.
    ``num_consumers`` counts the stream's consumers that are not sourcing consumers."""
    maxc = stream_max_consumers
    if maxc <= 0 or (0 < account_max_consumers < maxc):
        maxc = account_max_consumers
    if maxc > 0 and num_consumers >= maxc:
        raise E.maximum_consumers_limit()


def check_workqueue_overlap(
    name: str, new_filters: Sequence[str], others: Iterable[tuple[str, Sequence[str] | None]]
) -> None:
    """400/10100 unless every filter of ``new_filters`` is disjoint from all filters of the
    other consumers. ``others`` yields ``(name, filters)`` of the stream's non-direct,
    non-sourcing consumers (``filters`` empty/None = unfiltered, which collides with anything);
    the entry named ``name`` (the consumer itself) is skipped."""
    others = [(n, list(f or [])) for n, f in others if n != name]
    for p in new_filters:
        for _, fs in others:
            if not fs:
                raise E.consumer_wq_consumer_not_unique()
            for f in fs:
                if _subj.subjects_overlap(p, f) or p == f:
                    raise E.consumer_wq_consumer_not_unique()


def check_workqueue_new(
    cfg: ConsumerConfig,
    stream_config: StreamConfig,
    others: Iterable[tuple[str, Sequence[str] | None]],
    *,
    name: str = "",
) -> None:
    """Work-queue rules for a *new* consumer (skipped for direct/sourcing consumers):
    400/10098 unless ack policy is explicit (or flow_control); 400/10101 unless deliver
    policy is all; with other consumers present: 400/10099 if this one is unfiltered, 400/10100
    if its filters collide with another's (see :func:`check_workqueue_overlap`)."""
    if stream_config.retention != "workqueue" or cfg.direct or cfg.sourcing:
        return
    if cfg.ack_policy not in ("explicit", "flow_control"):
        raise E.consumer_wq_requires_explicit_ack()
    if cfg.deliver_policy != "all":
        raise E.consumer_wq_consumer_not_deliver_all()
    others = list(others)
    if others:
        filters = filters_of(cfg)
        if not filters:
            raise E.consumer_wq_multiple_unfiltered()
        check_workqueue_overlap(name or consumer_key(cfg), filters, others)


def generate_consumer_name(randomness: Any) -> str:
    """A random 8-character base62 name (auto-named legacy ephemerals), drawn from the
    server's seeded source (:mod:`minijs.randomness`)."""
    return randomness.child("names").text(_BASE62, 8)


def assign_name(cfg: ConsumerConfig, taken: Iterable[str] = (), *, file_storage: bool = True,
                randomness: Any = None) -> str:
    """The new consumer's name: durable name (400/10102 if longer than 255 bytes), else ``name``,
    else a fresh random name not in ``taken``; a name that is not a valid asset name → 400/10103.

    A non-durable name longer than 255 bytes is accepted by the server, but its file store
    cannot create a directory that long: with ``file_storage`` (file stream and no
    ``mem_storage``) the create fails with 500/10012 ``error creating store for consumer``."""
    if is_durable(cfg):
        if len(cfg.durable_name.encode()) > MAX_NAME_LEN:
            raise E.consumer_name_too_long(MAX_NAME_LEN)
        name = cfg.durable_name
    elif cfg.name:
        name = cfg.name
    else:
        taken = set(taken)
        if randomness is None:
            from minijs.randomness import RandomSource

            randomness = RandomSource()
        name = generate_consumer_name(randomness)
        while name in taken:
            name = generate_consumer_name(randomness)
    if not is_valid_asset_name(name):
        raise E.consumer_bad_durable_name()
    if file_storage and len(name.encode()) > MAX_NAME_LEN:
        raise E.consumer_create("error creating store for consumer")
    return name


def finalize_new(cfg: ConsumerConfig) -> ConsumerConfig:
    """The config a new consumer stores: ephemerals without a threshold get 5 s. The name of an
    auto-named legacy ephemeral is *not* written into it (its config has no ``name``)."""
    out = cfg.copy()
    if not is_durable(out) and out.inactive_threshold <= 0:
        out.inactive_threshold = DEFAULT_INACTIVE_THRESHOLD
    return out


# --------------------------------------------------------------------------------------------
# JSON form
# --------------------------------------------------------------------------------------------


def to_json_dict(cfg: ConsumerConfig, *, dynamic_metadata: bool) -> dict:
    """The ``config`` object exactly as nats-server 2.15.1 emits it, marshalled by the field
    table of :class:`ConsumerConfig`: Go struct order; always ``deliver_policy``,
    ``ack_policy``, ``replay_policy``, ``num_replicas``; every other field only when non-zero
    (``max_deliver``/``max_ack_pending`` -1 are emitted, ``priority_policy`` ``"none"`` is not);
    times in RFC 3339, ``metadata`` a sorted map; ``dynamic_metadata`` adds
    ``_nats.ver``/``_nats.level`` (create/info replies, not LIST). Encode with
    :func:`~minijs.protocol.gomarshal.dumps`.
    """
    return CONSUMER_CONFIG_TYPE.encode(cfg.__dict__, {"metadata": reply_metadata(cfg.metadata, dynamic_metadata)})


def sequence_info_dict(consumer_seq: int, stream_seq: int, last_active: int | None = None) -> dict:
    """A ``SequenceInfo`` value for :func:`consumer_info_dict`: ``consumer_seq``,
    ``stream_seq`` and ``last_active`` (ns, or ``None``: then omitted from the JSON)."""
    return {"consumer_seq": consumer_seq, "stream_seq": stream_seq, "last_active": last_active}


def consumer_info_dict(
    *,
    stream_name: str,
    name: str,
    created: int,
    config: ConsumerConfig | None,
    delivered: dict,
    ack_floor: dict,
    num_ack_pending: int,
    num_redelivered: int,
    num_waiting: int,
    num_pending: int,
    ts: int,
    cluster: dict | None = None,
    push_bound: bool = False,
    pinned_client_id: str = "",
    pinned_ts: int = 0,
    dynamic_metadata: bool = True,
) -> dict:
    """``ConsumerInfo`` marshalled by its field table, without the ``type`` envelope (the API
    layer puts ``{"type": …}`` first and merges this in).

    ``delivered``/``ack_floor`` come from :func:`sequence_info_dict`; times are ns; ``ts`` is
    the time the info is taken; ``cluster`` is already marshalled. Derived like the server does:

    * ``paused``/``pause_remaining`` (ns) from ``config.pause_until`` when it is after ``ts``;
    * ``num_redelivered`` reported as 0 when ``max_deliver`` is 1;
    * ``priority_groups`` lists only the *first* configured group (a 2.15.1 quirk):
      ``[{"group", "pinned_client_id"?, "pinned_ts"}]``, ``pinned_ts`` always present (zero
      time when nothing is pinned).

    ``cluster`` and a false ``push_bound`` are omitted (standalone server); ``dynamic_metadata``
    is False for CONSUMER.LIST entries.
    """
    paused, pause_remaining, groups, config_value = False, 0, None, None
    if config is not None:
        config_value = {**config.__dict__,
                        "metadata": reply_metadata(config.metadata, dynamic_metadata)}
        if config.max_deliver == 1:
            num_redelivered = 0
        if config.pause_until is not None and int(config.pause_until) > ts:
            paused, pause_remaining = True, int(config.pause_until) - ts
        if config.priority_groups:
            groups = [{"group": config.priority_groups[0], "pinned_client_id": pinned_client_id,
                       "pinned_ts": pinned_ts}]
    return CONSUMER_INFO_TYPE.encode({
        "stream_name": stream_name, "name": name, "created": created, "config": config_value,
        "delivered": delivered, "ack_floor": ack_floor, "num_ack_pending": num_ack_pending,
        "num_redelivered": num_redelivered, "num_waiting": num_waiting,
        "num_pending": num_pending, "cluster": cluster or None, "push_bound": push_bound,
        "paused": paused, "pause_remaining": pause_remaining, "ts": ts,
        "priority_groups": groups,
    })
