"""StreamConfig: strict decoding, defaulting, validation, update rules and JSON form.

Behaviour follows nats-server v2.15.1 (``checkStreamCfg``, ``configUpdateCheck``,
``jsStreamCreateRequest``/``jsStreamUpdateRequest``, ``setStaticStreamMetadata``), with every
text verified against the real binary where reachable on a single server (pinned by
minijs's own test suite).

How the API layer is expected to use this module::

    # STREAM.CREATE.<S>
    cfg, pedantic = parse_stream_config(body)              # 400/10025
    if cfg.name != S: raise errors.stream_mismatch()      # 400/10056
    cfg = validate_and_default(cfg, create=True, pedantic=pedantic, unsupported=False)
    #   → 10128 path separators, sealed / mirror_direct on create, all 10052 validation,
    #     10074 replicas > 1; sets metadata "_nats.req.level"
    if S exists: same_config(cfg, existing.config) ? return existing : raise stream_name_exist()
    # then the server's resource limits (10028/10047), subject overlap (10065), and last
    check_unsupported(cfg)  # what nats-server would accept but minijs does not implement

    # STREAM.UPDATE.<S>
    cfg, pedantic = parse_stream_config(body)
    cfg = validate_and_default(cfg, create=False, pedantic=pedantic,   # validation first!
                               unsupported=False)
    if cfg.name != S: raise errors.stream_mismatch()
    old = lookup(S) or raise errors.stream_not_found()
    cfg = check_update(old, cfg, pedantic=pedantic, unsupported=False)  # immutables, sealing
    # resource limits (10028/10047)
    check_consumer_limits(old, cfg, consumers)            # 500/10069
    # then subject overlap with other streams → 10065, and last check_unsupported(cfg)

Config values: durations and ``first_seq`` are ints (ns), enums are their JSON strings
(``retention`` ``"limits"|"interest"|"workqueue"``, ``discard`` ``"old"|"new"``, ``storage``
``"file"|"memory"``, ``compression`` ``"none"|"s2"``, ``persist_mode`` ``"default"|"async"``).
Each Go struct is one field table (name, Go type, zero value, omitempty): :class:`StreamConfig`
itself and :data:`PLACEMENT_TYPE`, :data:`STREAM_SOURCE_TYPE` … for the nested ones, which are
plain dicts with all their fields present; ``None`` is a Go nil pointer/slice/map.

Pure module: no I/O, stdlib only.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from minijs.core import subjects as _subj
from minijs.core.transform import _transform_creatable, validate_mapping
from minijs.jetstream import errors as E
from minijs.jetstream import jsonfmt as J
from minijs.protocol.gojson import OMITEMPTY, go_field, go_struct, struct_of

__all__ = [
    "StreamConfig",
    "SERVER_VERSION",
    "API_LEVEL",
    "REQ_LEVEL_KEY",
    "VERSION_KEY",
    "LEVEL_KEY",
    "MAX_NAME_LEN",
    "MAX_DESCRIPTION_LEN",
    "MAX_METADATA_LEN",
    "MAX_REPLICAS",
    "DEFAULT_DUPLICATE_WINDOW",
    "UNSUPPORTED_FIELDS",
    "STREAM_CONFIG_REQUEST_TYPE",
    "STREAM_CONFIG_TYPE",
    "parse_stream_config",
    "stream_config_from_dict",
    "validate_and_default",
    "check_restore_config",
    "is_valid_publish_subject",
    "STREAM_STATE_TYPE",
    "check_unsupported",
    "required_api_level",
    "set_static_metadata",
    "same_config",
    "check_update",
    "check_consumer_limits",
    "to_json_dict",
    "validate_mapping",
    "is_valid_asset_name",
]

SERVER_VERSION = "2.15.1"
API_LEVEL = 5
REQ_LEVEL_KEY = "_nats.req.level"
VERSION_KEY = "_nats.ver"
LEVEL_KEY = "_nats.level"

MAX_NAME_LEN = 255
MAX_DESCRIPTION_LEN = 4 * 1024
MAX_METADATA_LEN = 128 * 1024
MAX_REPLICAS = 5
DEFAULT_DUPLICATE_WINDOW = 2 * 60 * 1_000_000_000
_MS100 = 100_000_000
_SECOND = 1_000_000_000


# --------------------------------------------------------------------------------------------
# Go types: the field tables of the nested structs and the enums
# --------------------------------------------------------------------------------------------


def _exact_enum(go_name: str, values: dict[bytes, str], zero: str) -> J.Custom:
    """``UnmarshalJSON`` comparing the raw JSON bytes (escapes and case matter)."""

    def unmarshal(raw: bytes, node: tuple) -> str:
        v = values.get(raw)
        if v is None:
            raise J.JSONError("can not unmarshal " + J.go_quote(raw))
        return v

    return J.Custom(go_name, unmarshal, zero)


def _discard_unmarshal(raw: bytes, node: tuple) -> str:
    low = raw.decode("utf-8", "replace").lower()  # strings.ToLower(string(data))
    if low == '"old"':
        return "old"
    if low == '"new"':
        return "new"
    raise J.JSONError("can not unmarshal " + J.go_quote(raw))


def _compression_unmarshal(raw: bytes, node: tuple) -> str:
    # json.Unmarshal(b, &str), then a switch on the string.
    if node[0] == "s":
        s = node[1]
    elif node[0] == "z":
        s = ""
    else:
        kind = {"o": "object", "a": "array", "n": "number", "t": "bool", "f": "bool"}[node[0]]
        raise J.JSONError("json: cannot unmarshal %s into Go value of type string" % kind)
    if s == "s2":
        return "s2"
    if s == "none":
        return "none"
    raise J.JSONError("unknown compression algorithm")


RETENTION_TYPE = _exact_enum(
    "server.RetentionPolicy",
    {b'"limits"': "limits", b'"interest"': "interest", b'"workqueue"': "workqueue"},
    "limits",
)
DISCARD_TYPE = J.Custom("server.DiscardPolicy", _discard_unmarshal, "old")
STORAGE_TYPE = _exact_enum("server.StorageType", {b'"file"': "file", b'"memory"': "memory"}, "file")
COMPRESSION_TYPE = J.Custom("server.StoreCompression", _compression_unmarshal, "none")
PERSIST_MODE_TYPE = _exact_enum(
    "server.PersistModeType", {b'"default"': "default", b'""': "default", b'"async"': "async"}, "default"
)

SUBJECT_TRANSFORM_TYPE = go_struct("SubjectTransformConfig", ("src", J.STRING), ("dest", J.STRING))
PLACEMENT_TYPE = go_struct(
    "Placement",
    ("cluster", J.STRING, OMITEMPTY),
    ("tags", J.Slice(J.STRING), OMITEMPTY),
    ("preferred", J.STRING, OMITEMPTY),
)
REPUBLISH_TYPE = go_struct(
    "RePublish", ("src", J.STRING, OMITEMPTY), ("dest", J.STRING), ("headers_only", J.BOOL, OMITEMPTY)
)
CONSUMER_LIMITS_TYPE = go_struct(
    "StreamConsumerLimits",
    ("inactive_threshold", J.DURATION, OMITEMPTY),
    ("max_ack_pending", J.INT, OMITEMPTY),
)
EXTERNAL_STREAM_TYPE = go_struct("ExternalStream", ("api", J.STRING), ("deliver", J.STRING))
STREAM_CONSUMER_SOURCE_TYPE = go_struct(
    "StreamConsumerSource", ("name", J.STRING, OMITEMPTY), ("deliver_subject", J.STRING, OMITEMPTY)
)
STREAM_SOURCE_TYPE = go_struct(
    "StreamSource",
    ("name", J.STRING),
    ("opt_start_seq", J.UINT64, OMITEMPTY),
    ("opt_start_time", J.Ptr(J.TIME), OMITEMPTY),
    ("filter_subject", J.STRING, OMITEMPTY),
    ("subject_transforms", J.Slice(SUBJECT_TRANSFORM_TYPE), OMITEMPTY),
    ("external", J.Ptr(EXTERNAL_STREAM_TYPE), OMITEMPTY),
    ("consumer", J.Ptr(STREAM_CONSUMER_SOURCE_TYPE), OMITEMPTY),
)
LOST_STREAM_DATA_TYPE = go_struct("LostStreamData", ("msgs", J.Slice(J.UINT64)), ("bytes", J.UINT64))
STREAM_STATE_TYPE = go_struct(
    "StreamState",
    ("messages", J.UINT64),
    ("bytes", J.UINT64),
    ("first_seq", J.UINT64),
    ("first_ts", J.TIME),
    ("last_seq", J.UINT64),
    ("last_ts", J.TIME),
    ("num_subjects", J.INT, OMITEMPTY),
    ("subjects", J.Map(J.UINT64), OMITEMPTY),
    ("num_deleted", J.INT, OMITEMPTY),
    ("deleted", J.Slice(J.UINT64), OMITEMPTY),
    ("lost", J.Ptr(LOST_STREAM_DATA_TYPE), OMITEMPTY),
    ("consumer_count", J.INT),
)
"""``server.StreamState`` (the ``state`` of a restore request)."""


# --------------------------------------------------------------------------------------------
# The dataclass: the field table of server.StreamConfig
# --------------------------------------------------------------------------------------------


@dataclass
class StreamConfig:
    """Every field nats-server 2.15.1 accepts in a StreamConfig, in Go struct (= JSON) order,
    each declared by its Go type and ``omitempty`` tag (:func:`~minijs.protocol.gojson.go_field`):
    the strict decoder (:data:`STREAM_CONFIG_TYPE`), the complete nested structs
    (:func:`stream_config_from_dict`), the JSON form (:func:`to_json_dict`) and the comparison
    (:func:`same_config`) are all derived from this table.

    Defaults are Go zero values (what an omitted field decodes to), not the server defaults:
    :func:`validate_and_default` turns e.g. ``max_msgs=0`` into ``-1``. Nested structs are
    dicts with every field of their type.
    """

    name: str = go_field(J.STRING)
    description: str = go_field(J.STRING, OMITEMPTY)
    subjects: list[str] | None = go_field(J.Slice(J.STRING), OMITEMPTY)
    retention: str = go_field(RETENTION_TYPE)
    max_consumers: int = go_field(J.INT)
    max_msgs: int = go_field(J.INT64)
    max_bytes: int = go_field(J.INT64)
    max_age: int = go_field(J.DURATION)
    max_msgs_per_subject: int = go_field(J.INT64)
    max_msg_size: int = go_field(J.INT32, OMITEMPTY)
    discard: str = go_field(DISCARD_TYPE)
    storage: str = go_field(STORAGE_TYPE)
    num_replicas: int = go_field(J.INT)
    no_ack: bool = go_field(J.BOOL, OMITEMPTY)
    duplicate_window: int = go_field(J.DURATION, OMITEMPTY)
    placement: dict | None = go_field(J.Ptr(PLACEMENT_TYPE), OMITEMPTY)
    mirror: dict | None = go_field(J.Ptr(STREAM_SOURCE_TYPE), OMITEMPTY)
    sources: list | None = go_field(J.Slice(J.Ptr(STREAM_SOURCE_TYPE)), OMITEMPTY)
    compression: str = go_field(COMPRESSION_TYPE)
    first_seq: int = go_field(J.UINT64, OMITEMPTY)
    subject_transform: dict | None = go_field(J.Ptr(SUBJECT_TRANSFORM_TYPE), OMITEMPTY)
    republish: dict | None = go_field(J.Ptr(REPUBLISH_TYPE), OMITEMPTY)
    allow_direct: bool = go_field(J.BOOL)
    mirror_direct: bool = go_field(J.BOOL)
    discard_new_per_subject: bool = go_field(J.BOOL, OMITEMPTY)
    sealed: bool = go_field(J.BOOL)
    deny_delete: bool = go_field(J.BOOL)
    deny_purge: bool = go_field(J.BOOL)
    allow_rollup_hdrs: bool = go_field(J.BOOL)
    consumer_limits: dict = go_field(CONSUMER_LIMITS_TYPE)
    allow_msg_ttl: bool = go_field(J.BOOL)
    subject_delete_marker_ttl: int = go_field(J.DURATION, OMITEMPTY)
    allow_msg_counter: bool = go_field(J.BOOL, OMITEMPTY)
    allow_atomic: bool = go_field(J.BOOL, OMITEMPTY)
    allow_msg_schedules: bool = go_field(J.BOOL, OMITEMPTY)
    persist_mode: str = go_field(PERSIST_MODE_TYPE, OMITEMPTY)
    allow_batched: bool = go_field(J.BOOL, OMITEMPTY)
    metadata: dict[str, str] | None = go_field(J.Map(J.STRING), OMITEMPTY)

    def copy(self) -> "StreamConfig":
        return clone_config(self)


STREAM_CONFIG_TYPE = struct_of(StreamConfig, "StreamConfig")
"""``server.StreamConfig`` (e.g. the ``config`` of a restore request)."""

STORED_STREAM_TYPE = go_struct("storedStream", ("config", STREAM_CONFIG_TYPE), ("created", J.INT64))
"""The document a file stream keeps in its store (``Stream.save_config``): the config as its
reply shows it and the creation time (ns). Decoded with the config's Go types, so what the
reply wrote as text (a source's ``opt_start_time``) comes back as the value it was."""

STREAM_CONFIG_REQUEST_TYPE = J.Struct(
    "StreamConfigRequest", {**STREAM_CONFIG_TYPE.fields, "pedantic": J.BOOL}
)
"""``server.StreamConfigRequest`` = StreamConfig + request-scoped ``pedantic``."""

_SCALARS = frozenset((str, int, float, bool, type(None), bytes))


def _clone(value: Any) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {k: _clone(v) for k, v in value.items()}
    if kind is list:
        return [_clone(v) for v in value]
    return copy.deepcopy(value)


def clone_config(cfg: Any) -> Any:
    """A deep copy of a config dataclass (what ``copy.deepcopy`` gives, without its generic
    machinery: the values are JSON-shaped, so dicts and lists are rebuilt, scalars shared)."""
    new = object.__new__(type(cfg))
    new.__dict__.update({k: _clone(v) for k, v in cfg.__dict__.items()})
    return new


def stream_config_from_dict(d: dict) -> StreamConfig:
    """Build a :class:`StreamConfig` from a decoded dict, or from :func:`to_json_dict`'s form
    (JSON names; unknown keys ignored; times given as text are read back, zone included).
    Nested structs are completed to dicts with all their fields."""
    fields = STREAM_CONFIG_TYPE.fields
    return StreamConfig(**{k: fields[k].complete(v) for k, v in d.items() if k in fields})


def parse_stream_config(payload: bytes) -> tuple[StreamConfig, bool]:
    """Strictly decode a STREAM.CREATE/UPDATE body (``StreamConfigRequest``).

    Returns ``(config, pedantic)``. An empty or whitespace-only body (or ``null``/``{}``)
    yields an all-zero config (whose empty name then fails the 10056 name check). Raises
    ``ApiError`` 400/10025 with Go's decoder text.
    """
    d = J.decode_strict(payload, STREAM_CONFIG_REQUEST_TYPE)
    return stream_config_from_dict(d), bool(d.get("pedantic", False))


# --------------------------------------------------------------------------------------------
# Metadata
# --------------------------------------------------------------------------------------------


def required_api_level(cfg: StreamConfig) -> int:
    """The ``_nats.req.level`` nats-server computes (``setStaticStreamMetadata``):
    1 for per-message TTLs / subject delete markers, 2 for counters, atomic batches, message
    schedules and async persistence, 4 for fast batch publishing, else 0."""
    level = 0
    if cfg.allow_msg_ttl or cfg.subject_delete_marker_ttl > 0:
        level = max(level, 1)
    if cfg.allow_msg_counter or cfg.allow_atomic or cfg.allow_msg_schedules or cfg.persist_mode == "async":
        level = max(level, 2)
    if cfg.allow_batched:
        level = max(level, 4)
    return level


def static_metadata(metadata: dict[str, str] | None, level: int) -> dict[str, str]:
    """An asset's stored metadata: without the dynamic keys (``_nats.ver``, ``_nats.level``)
    a client may echo back, with ``_nats.req.level`` set to ``level``. Streams and consumers
    share this rule."""
    md = dict(metadata) if metadata is not None else {}
    md.pop(VERSION_KEY, None)
    md.pop(LEVEL_KEY, None)
    md[REQ_LEVEL_KEY] = str(level)
    return md


def set_static_metadata(cfg: StreamConfig) -> StreamConfig:
    """In place: :func:`static_metadata` for a stream. Returns ``cfg``."""
    cfg.metadata = static_metadata(cfg.metadata, required_api_level(cfg))
    return cfg


# --------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------


def is_valid_asset_name(name: str) -> bool:
    """Stream/consumer name: non-empty, none of white space ``.`` ``*`` ``>`` ``\\`` ``/``."""
    return bool(name) and not any(c in name for c in " \t\r\n\f.*>\\/")


def _valid_subject(s: str) -> bool:
    return _subj.is_valid_subject(s)


def _collide(a: str, b: str) -> bool:
    return a == b or _subj.subjects_overlap(a, b)


def _subset(sub: str, sup: str) -> bool:
    return _subj.is_subset(sub, sup)


def _is_literal(s: str) -> bool:
    # subjectIsLiteral: a '*' or '>' that forms a whole token
    return not any(t in ("*", ">") for t in s.split("."))


def _valid_publish_subject(s: str) -> bool:
    return _valid_subject(s) and _is_literal(s)


def is_valid_publish_subject(s: str) -> bool:
    """Go ``IsValidPublishSubject``: a valid subject without wildcard tokens."""
    return _valid_publish_subject(s)


# --------------------------------------------------------------------------------------------
# Unsupported options
# --------------------------------------------------------------------------------------------

UNSUPPORTED_FIELDS: dict[str, str] = {}
"""StreamConfig options nats-server 2.15.1 accepts but minijs does not implement, with the
wording used in the error. Only a *set* option is rejected (``null``/``false``/``[]`` are
fine), so configs echoed back by clients keep working."""


UNSUPPORTED_SOURCE_FIELDS: dict[str, str] = {}
"""Fields of a ``mirror`` or ``sources`` entry that minijs refuses (none now: ``external``
reaches the accounts of this server)."""


def check_unsupported(cfg: StreamConfig, lookup: "StreamLookup | None" = None) -> None:
    """Raise 500/10052 ``minijs does not support <feature>`` for a set unsupported option."""
    for name, what in UNSUPPORTED_FIELDS.items():
        v = getattr(cfg, name)
        if v:
            raise E.unsupported_feature(what)
    for src in ([cfg.mirror] if cfg.mirror is not None else []) + list(cfg.sources or []):
        if src is None:
            continue
        for name, what in UNSUPPORTED_SOURCE_FIELDS.items():
            if src.get(name) is not None:
                raise E.unsupported_feature(what)


# --------------------------------------------------------------------------------------------
# Defaulting and validation (checkStreamCfg)
# --------------------------------------------------------------------------------------------


StreamLookup = Callable[[str], "StreamConfig | None"]
"""``lookup(name)``: the config of the stream called ``name`` on this server, or None."""


def _subjects_overlap_filter(subjects: list[str] | None, filter_subject: str) -> bool:
    if filter_subject == "":
        return True
    return any(_collide(s, filter_subject) for s in subjects or [])


def _check_cycles(cfg: StreamConfig, lookup: StreamLookup) -> None:
    """checkStreamCfg's cycle check: a breadth-first walk over sources and mirrors; a stream
    seen again is a cycle when its subjects meet the source's filter (always for mirrors)."""
    to_visit = [cfg]
    visited: set[str] = set()
    while to_visit:
        c = to_visit.pop(0)
        visited.add(c.name)
        for src in c.sources or []:
            if src is None or src.get("external") is not None:
                continue
            if src["name"] in visited:
                if _subjects_overlap_filter(c.subjects, src.get("filter_subject") or ""):
                    raise E.stream_invalid_config("detected cycle")
            else:
                other = lookup(src["name"])
                if other is not None:
                    to_visit.append(other)
        m = c.mirror
        if m is not None and m.get("external") is None:
            if m["name"] in visited:
                raise E.stream_invalid_config("detected cycle")
            other = lookup(m["name"])
            if other is not None:
                to_visit.append(other)


def _check_mirror_and_sources(cfg: StreamConfig, pedantic: bool = False,
                              lookup: StreamLookup | None = None) -> None:
    """checkStreamCfg's mirror/source checks, in its order. With ``lookup`` the checks that
    need the other streams run too: message size against an existing origin, ``mirror_direct``
    inherited from the origin's ``allow_direct``, and the cycle check."""
    m = cfg.mirror
    if m is not None:
        if cfg.first_seq > 0:
            raise E.mirror_with_first_seq()
        if cfg.subjects:
            raise E.mirror_with_subjects()
        if cfg.sources:
            raise E.mirror_with_sources()
        if cfg.allow_msg_counter:
            raise E.mirror_with_counters()
        if cfg.allow_atomic:
            raise E.mirror_with_atomic_publish()
        if cfg.allow_batched:
            raise E.mirror_with_batch_publish()
        if cfg.allow_msg_schedules:
            raise E.mirror_with_msg_schedules()
        c = m["consumer"]
        if c is not None:
            if (
                not is_valid_asset_name(c["name"])
                or not _is_literal(c["deliver_subject"])
                or not _valid_subject(c["deliver_subject"])
                or m["opt_start_seq"] != 0
                or m["opt_start_time"] is not None
                or m["filter_subject"] != ""
            ):
                raise E.mirror_durable_consumer_cfg_invalid()
        trs = m["subject_transforms"] or []
        if m["filter_subject"] != "" and trs:
            raise E.mirror_multiple_filters_not_allowed()
        if cfg.subject_delete_marker_ttl > 0:
            raise E.stream_invalid_config("subject delete markers forbidden on mirrors")
        for i, tr in enumerate(trs):
            if tr["src"] != "" and not _valid_subject(tr["src"]):
                raise E.mirror_invalid_subject_filter("invalid subject " + tr["src"])
            err = validate_mapping(tr["src"], tr["dest"])
            if err:
                raise E.mirror_invalid_transform_destination(err)
            for j, other in enumerate(trs):
                if i != j and _collide(tr["src"], other["src"]):
                    raise E.mirror_overlapping_subject_filters()
        if m["external"] is None:
            if not is_valid_asset_name(m["name"]):
                raise E.mirror_invalid_stream_name()
            origin = lookup(m["name"]) if lookup is not None else None
            if origin is not None:
                if 0 < origin.max_msg_size and 0 < cfg.max_msg_size < origin.max_msg_size:
                    raise E.mirror_max_message_size_too_big()
                if pedantic and cfg.mirror_direct != origin.allow_direct:
                    raise E.pedantic("origin stream has direct get set, mirror has it disabled")
                cfg.mirror_direct = origin.allow_direct
    if cfg.sources and cfg.allow_msg_schedules:
        raise E.source_with_msg_schedules()
    seen: set = set()
    seen_consumers: set = set()
    for src in cfg.sources or []:
        if src is None or not is_valid_asset_name(src["name"]):
            raise E.source_invalid_stream_name()
        trs = src["subject_transforms"] or []
        iname = (
            src["name"],
            src["external"]["api"] if src["external"] else None,
            src["consumer"]["name"] if src["consumer"] else None,
            (src["filter_subject"] or ">") if not trs else tuple((t["src"] or ">", t["dest"] or ">") for t in trs),
        )
        if iname in seen:
            raise E.source_duplicate_detected()
        seen.add(iname)
        if src["filter_subject"] != "" and trs:
            raise E.source_multiple_filters_not_allowed()
        for tr in trs:
            if tr["src"] != "" and not _valid_subject(tr["src"]):
                raise E.source_invalid_subject_filter("invalid subject " + tr["src"])
            err = validate_mapping(tr["src"], tr["dest"])
            if err:
                raise E.source_invalid_transform_destination(err)
        for i, tr in enumerate(trs):
            for j, other in enumerate(trs):
                if i != j and _subset(tr["src"] or ">", other["src"] or ">"):
                    raise E.source_overlapping_subject_filters()
        c = src["consumer"]
        if c is not None:
            if (
                not is_valid_asset_name(c["name"])
                or not _is_literal(c["deliver_subject"])
                or not _valid_subject(c["deliver_subject"])
                or src["opt_start_seq"] != 0
                or src["opt_start_time"] is not None
                or src["filter_subject"] != ""
            ):
                raise E.source_durable_consumer_cfg_invalid()
            ckey = (src["name"], src["external"]["api"] if src["external"] else None, c["name"])
            if ckey in seen_consumers:
                raise E.source_durable_consumer_duplicate_detected()
            seen_consumers.add(ckey)
        if src["external"] is None and lookup is not None:
            origin = lookup(src["name"])
            if origin is not None and 0 < origin.max_msg_size and 0 < cfg.max_msg_size < origin.max_msg_size:
                raise E.source_max_message_size_too_big()
    externals = [x["external"] for x in ([m] if m else []) + list(cfg.sources or []) if x and x["external"]]
    for ext in externals:
        pfx = ext["deliver"]
        if pfx and not _valid_publish_subject(pfx):
            raise E.stream_invalid_external_delivery_subj(pfx)
    for ext in externals:
        api = ext["api"]
        if api:
            if not _valid_publish_subject(api):
                raise E.stream_invalid_config(
                    "stream external api prefix %s must be a valid subject without wildcards" % J.go_quote(api)
                )
            if _collide(api, "$JS.API"):
                raise E.stream_external_api_overlap(prefix=api, subject="$JS.API")
    if lookup is not None:
        _check_cycles(cfg, lookup)


def _check_stream_cfg(config: StreamConfig, pedantic: bool,
                      lookup: StreamLookup | None = None,
                      max_duplicate_window: int = 0) -> StreamConfig:
    """Port of ``checkStreamCfgLocked`` for a single server; ``max_duplicate_window`` is the
    server's ``jetstream { limits { duplicate_window } }`` in nanoseconds (0: none)."""
    if not is_valid_asset_name(config.name):
        raise E.stream_invalid_config("stream name is required and can not contain '.', '*', '>', '\\', '/'")
    if len(config.name.encode()) > MAX_NAME_LEN:
        raise E.stream_invalid_config("stream name is too long, maximum allowed is %d" % MAX_NAME_LEN)
    if len(config.description.encode()) > MAX_DESCRIPTION_LEN:
        raise E.stream_invalid_config("stream description is too long, maximum allowed is %d" % MAX_DESCRIPTION_LEN)
    md_len = sum(len(k.encode()) + len(v.encode()) for k, v in (config.metadata or {}).items())
    if md_len > MAX_METADATA_LEN:
        raise E.stream_invalid_config("stream metadata exceeds maximum size of %d bytes" % MAX_METADATA_LEN)

    cfg = config.copy()
    if cfg.num_replicas == 0:
        cfg.num_replicas = 1
    if cfg.num_replicas > MAX_REPLICAS:
        raise E.stream_invalid_config("maximum replicas is %d" % MAX_REPLICAS)
    if cfg.num_replicas < 0:
        raise E.replicas_count_cannot_be_negative()
    for attr in ("max_msgs", "max_msgs_per_subject", "max_bytes", "max_msg_size", "max_consumers"):
        v = getattr(cfg, attr)
        if v == 0 or v < -1:
            if pedantic and v < -1:
                raise E.pedantic("%s must be set to -1" % attr)
            setattr(cfg, attr, -1)
    if cfg.max_age < 0:
        raise E.stream_invalid_config("max age can not be negative")
    if cfg.max_age != 0 and cfg.max_age < _MS100:
        raise E.stream_invalid_config("max age needs to be >= 100ms")

    if cfg.duplicate_window == 0 and cfg.mirror is None and not cfg.sources:
        window = DEFAULT_DUPLICATE_WINDOW
        if 0 < max_duplicate_window < window:
            if pedantic:
                raise E.pedantic("duplicate window limits are higher than current limits")
            window = max_duplicate_window
        if cfg.max_age != 0 and cfg.max_age < window:
            if pedantic:
                raise E.pedantic("duplicate window cannot be bigger than max age")
            cfg.duplicate_window = cfg.max_age
        else:
            cfg.duplicate_window = window
    if cfg.duplicate_window < 0:
        raise E.stream_invalid_config("duplicates window can not be negative")
    if cfg.max_age != 0 and cfg.duplicate_window > cfg.max_age:
        raise E.stream_invalid_config("duplicates window can not be larger then max age")
    if max_duplicate_window > 0 and cfg.duplicate_window > max_duplicate_window:
        raise E.stream_invalid_config("duplicates window can not be larger then server limit "
                                      "of " + J.go_duration(max_duplicate_window))
    if 0 < cfg.duplicate_window < _MS100:
        raise E.stream_invalid_config("duplicates window needs to be >= 100ms")

    if cfg.deny_purge and cfg.allow_rollup_hdrs:
        raise E.stream_invalid_config("roll-ups require the purge permission")

    if cfg.allow_msg_counter:
        if cfg.discard == "new":
            raise E.stream_invalid_config("counter stream cannot use discard new")
        if cfg.allow_msg_ttl:
            raise E.stream_invalid_config("counter stream cannot use message TTLs")
        if cfg.allow_msg_schedules:
            raise E.stream_invalid_config("counter stream cannot use message schedules")
        if cfg.retention != "limits":
            raise E.stream_invalid_config("counter stream can only use limits retention")

    if cfg.discard_new_per_subject:
        if cfg.discard != "new":
            raise E.stream_invalid_config("discard new per subject requires discard new policy to be set")
        if cfg.max_msgs_per_subject <= 0:
            raise E.stream_invalid_config("discard new per subject requires max msgs per subject > 0")

    if cfg.subject_delete_marker_ttl > 0:
        if cfg.subject_delete_marker_ttl < _SECOND:
            raise E.stream_invalid_config("subject delete marker TTL must be at least 1 second")
        if not cfg.allow_msg_ttl:
            if pedantic:
                raise E.stream_invalid_config("subject delete marker cannot be set if message TTLs are disabled")
            cfg.allow_msg_ttl = True
        if not cfg.allow_rollup_hdrs:
            if pedantic:
                raise E.stream_invalid_config("subject delete marker cannot be set if roll-ups are disabled")
            cfg.allow_rollup_hdrs, cfg.deny_purge = True, False
    elif cfg.subject_delete_marker_ttl < 0:
        raise E.stream_invalid_config("subject delete marker TTL must not be negative")

    if cfg.allow_msg_schedules:
        if cfg.discard == "new":
            raise E.stream_invalid_config("message scheduling cannot use discard new")
        if not cfg.allow_rollup_hdrs:
            if pedantic:
                raise E.stream_invalid_config("message scheduling cannot be set if roll-ups are disabled")
            cfg.allow_rollup_hdrs, cfg.deny_purge = True, False

    if cfg.persist_mode == "async":
        if cfg.storage != "file":
            raise E.stream_invalid_config("async persist mode is only supported on file storage")
        if cfg.num_replicas > 1:
            raise E.stream_invalid_config("async persist mode is not supported on replicated streams")
        if cfg.allow_atomic:
            raise E.stream_invalid_config("async persist mode is not supported with atomic batch publish")

    _check_mirror_and_sources(cfg, pedantic, lookup)

    if not cfg.subjects:
        if cfg.mirror is None and not cfg.sources:
            cfg.subjects = (cfg.subjects or []) + [cfg.name]
    else:
        if cfg.mirror is not None:
            raise E.mirror_with_subjects()
        seen: set[str] = set()
        for i, subj in enumerate(cfg.subjects):
            if not _valid_subject(subj):
                raise E.stream_invalid_config("invalid subject")
            if subj in seen:
                raise E.stream_invalid_config("duplicate subjects detected")
            if subj == ">":
                if not cfg.no_ack:
                    raise E.stream_invalid_config("capturing all subjects requires no-ack to be true")
                if cfg.num_replicas != 1:
                    raise E.stream_invalid_config("capturing all subjects requires replicas of 1")
            if not cfg.no_ack:
                for ns in ("$JS.>", "$JSC.>", "$NRG.>"):
                    if _collide(subj, ns) and not _subset(subj, "$JS.EVENT.>"):
                        raise E.stream_invalid_config("subjects that overlap with jetstream api require no-ack to be true")
                if _collide(subj, "$SYS.>") and not _subset(subj, "$SYS.ACCOUNT.>"):
                    raise E.stream_invalid_config("subjects that overlap with system api require no-ack to be true")
            for other in cfg.subjects[i + 1 :]:
                if _collide(other, subj):
                    raise E.stream_invalid_config(
                        "subject %s overlaps with %s" % (J.go_quote(subj), J.go_quote(other))
                    )
            seen.add(subj)

    if not cfg.subjects and not cfg.sources and cfg.mirror is None:
        raise E.stream_invalid_config("stream needs at least one configured subject or be a source/mirror")

    st = cfg.subject_transform
    if st is not None:
        if st["src"] != "" and not _valid_subject(st["src"]):
            raise E.stream_transform_invalid_source("invalid subject " + st["src"])
        err = validate_mapping(st["src"], st["dest"])
        if err:
            raise E.stream_transform_invalid_destination(err)

    rp = cfg.republish
    if rp is not None:
        if rp["src"] == "":
            if pedantic:
                raise E.pedantic("republish source can not be empty")
            rp["src"] = ">"
        if (
            rp["dest"] == ">"
            and rp["src"] == ">"
            and st is not None
            and cfg.subjects is not None
            and len(cfg.subjects) == 1
            and st["src"] == cfg.subjects[0]
        ):
            if pedantic:
                raise E.pedantic("implicit republish based on subject transform")
            rp["src"], rp["dest"] = st["dest"], st["dest"]
        if any(_collide(rp["dest"], s) for s in cfg.subjects or []):
            raise E.stream_invalid_config("stream configuration for republish destination forms a cycle")
        if not _transform_creatable(rp["src"], rp["dest"]):
            raise E.stream_invalid_config(
                "stream configuration for republish with transform from '%s' to '%s' not valid"
                % (rp["src"], rp["dest"])
            )

    pl = cfg.placement
    if pl is not None and pl["cluster"] == "" and pl["tags"] is None and pl["preferred"] == "":
        cfg.placement = None
    elif pl is not None and pl["preferred"] != "":
        raise E.stream_invalid_config("preferred server not permitted in placement")
    return cfg


def validate_and_default(cfg: StreamConfig, *, create: bool, pedantic: bool = False,
                         lookup: StreamLookup | None = None,
                         unsupported: bool = True,
                         max_duplicate_window: int = 0,
                         clustered: bool = False) -> StreamConfig:
    """Return the defaulted, validated config (the input is not modified) or raise ``ApiError``.

    Covers, in nats-server's order: for ``create`` the request checks (400/10128 ``Stream name
    can not contain path separators``, 500/10052 ``stream configuration for create can not be
    sealed``, ``stream has no mirror but does have mirror direct``); then all of
    ``checkStreamCfg`` (names, description/metadata sizes, replicas 10133/10052, -1 limits,
    max_age / duplicate_window, rollup/purge, discard-new-per-subject, subject delete marker TTL
    and its forced ``allow_msg_ttl``/``allow_rollup_hdrs``, schedules, persist mode, mirror and
    source shape checks, subjects, subject transform 10155/10156, republish, placement); then
    for ``create`` 500/10074 for ``num_replicas > 1`` (unless ``clustered``); then unsupported options
    (:data:`UNSUPPORTED_FIELDS`). Metadata gets ``_nats.req.level`` and loses echoed dynamic keys.

    The name-in-subject check (10056) is the caller's: before this call for create, after it
    for update (the real server validates an update body before comparing names).
    """
    if create:
        if "\\" in cfg.name or "/" in cfg.name:
            raise E.stream_name_contains_path_separators()
        if cfg.sealed:
            raise E.stream_invalid_config("stream configuration for create can not be sealed")
        if cfg.mirror_direct and cfg.mirror is None:
            raise E.stream_invalid_config("stream has no mirror but does have mirror direct")
        # setStaticStreamMetadata runs before validation on create (its key counts toward the
        # metadata size limit).
        cfg = set_static_metadata(cfg.copy())
    out = _check_stream_cfg(cfg, pedantic, lookup, max_duplicate_window)
    if create and out.num_replicas > 1 and not clustered:
        raise E.stream_replicas_not_supported()
    if unsupported:
        check_unsupported(out, lookup)
    return set_static_metadata(out)


def check_restore_config(cfg: StreamConfig) -> StreamConfig:
    """The config checks of a STREAM.RESTORE request (``checkStreamCfg`` without pedantic
    mode): none of the create-only checks (a restored stream may be sealed), no unsupported
    option check (minijs refuses every restore after these checks anyway)."""
    return _check_stream_cfg(cfg, False)


# --------------------------------------------------------------------------------------------
# Existing streams: idempotent create, update rules
# --------------------------------------------------------------------------------------------


def same_config(new: StreamConfig, old: StreamConfig) -> bool:
    """Would STREAM.CREATE of ``new`` (validated) on existing ``old`` be an idempotent success?

    Like ``copyStreamMetadata`` + ``reflect.DeepEqual``: dynamic metadata keys are ignored and
    ``_nats.req.level`` is taken from ``old``; everything else must be equal (nil vs empty
    slices differ, and a mirror's or source's ``opt_start_time`` written with another zone
    differs, as in Go).
    """
    a = new.copy()
    md = dict(a.metadata) if a.metadata is not None else None
    if md is not None:
        md.pop(VERSION_KEY, None)
        md.pop(LEVEL_KEY, None)
    old_md = old.metadata
    if old_md is not None and REQ_LEVEL_KEY in old_md:
        if md is None:
            md = {}
        md[REQ_LEVEL_KEY] = old_md[REQ_LEVEL_KEY]
    elif md is not None:
        md.pop(REQ_LEVEL_KEY, None)
    a.metadata = md
    return STREAM_CONFIG_TYPE.equal(a.__dict__, old.__dict__)


def check_update(old: StreamConfig, new: StreamConfig, *, pedantic: bool = False,
                 lookup: StreamLookup | None = None,
                 unsupported: bool = True, clustered: bool = False) -> StreamConfig:
    """Apply ``configUpdateCheck`` to an update of ``old`` to ``new`` (a config that already went
    through :func:`validate_and_default` with ``create=False``) and return the config to store.

    Raises ``ApiError``: 500/10074 ``replicas > 1 not supported in non-clustered mode``, 400/10055
    for a changed mirror, and 500/10052 ``stream configuration name must match original``,
    ``stream configuration update can not change storage type``, ``… can not change retention
    policy to/from workqueue``, ``… can not unseal a sealed stream``, ``… can not cancel deny
    message deletes``, ``… can not cancel deny purge``, ``message TTL status can not be
    disabled``, ``… can not change message counter setting``, ``message schedules can not be
    disabled``, ``… can not change persist mode``. Sealing forces ``max_age`` 0, ``discard``
    new, ``deny_delete``/``deny_purge`` true and ``allow_rollup_hdrs`` false. Everything else
    (description, subjects, limits, discard, duplicate_window, no_ack, allow_direct,
    compression, first_seq, placement, transforms, republish, consumer_limits, metadata,
    limits↔interest, subject_delete_marker_ttl, …) may change.
    """
    cfg = _check_stream_cfg(new, pedantic, lookup)
    if cfg.name != old.name:
        raise E.stream_invalid_config("stream configuration name must match original")
    if cfg.num_replicas > 1 and not clustered:
        raise E.stream_replicas_not_supported()
    if cfg.storage != old.storage:
        raise E.stream_invalid_config("stream configuration update can not change storage type")
    if cfg.retention != old.retention and "workqueue" in (cfg.retention, old.retention):
        raise E.stream_invalid_config("stream configuration update can not change retention policy to/from workqueue")
    if old.sealed and not cfg.sealed:
        raise E.stream_invalid_config("stream configuration update can not unseal a sealed stream")
    if old.deny_delete and not cfg.deny_delete:
        raise E.stream_invalid_config("stream configuration update can not cancel deny message deletes")
    if old.deny_purge and not cfg.deny_purge:
        raise E.stream_invalid_config("stream configuration update can not cancel deny purge")
    if cfg.mirror is not None and cfg.mirror != old.mirror:
        raise E.stream_mirror_not_updatable()
    if cfg.discard_new_per_subject:
        if cfg.discard != "new":
            raise E.stream_invalid_config("discard new per subject requires discard new policy to be set")
        if cfg.max_msgs_per_subject <= 0:
            raise E.stream_invalid_config("discard new per subject requires max msgs per subject > 0")
    if old.allow_msg_ttl and not cfg.allow_msg_ttl:
        raise E.stream_invalid_config("message TTL status can not be disabled")
    if cfg.allow_msg_counter != old.allow_msg_counter:
        raise E.stream_invalid_config("stream configuration update can not change message counter setting")
    if old.allow_msg_schedules and not cfg.allow_msg_schedules:
        raise E.stream_invalid_config("message schedules can not be disabled")
    if old.persist_mode != cfg.persist_mode:
        raise E.stream_invalid_config("stream configuration update can not change persist mode")
    if cfg.sealed:
        cfg.max_age = 0
        cfg.discard = "new"
        cfg.deny_delete, cfg.deny_purge = True, True
        cfg.allow_rollup_hdrs = False
    if unsupported:
        check_unsupported(cfg, lookup)
    if cfg.republish is not None and not cfg.republish["dest"]:
        # Applying the update (not validating it) fills an empty republish destination with
        # ">"; nats-server stores and reports that (no cycle check any more).
        cfg.republish = dict(cfg.republish, dest=">")
    return set_static_metadata(cfg)


def check_consumer_limits(
    old: StreamConfig, new: StreamConfig, consumers: Iterable[tuple[str, int, int]]
) -> None:
    """Stream update vs existing consumers: ``consumers`` yields ``(name, inactive_threshold,
    max_ack_pending)``. When a positive ``consumer_limits`` value changed and some consumer
    exceeds it → 500/10069 ``change to limits violates consumers: a, b`` (names in the given
    order)."""
    new_it = new.consumer_limits.get("inactive_threshold", 0)
    old_it = old.consumer_limits.get("inactive_threshold", 0)
    new_map = new.consumer_limits.get("max_ack_pending", 0)
    old_map = old.consumer_limits.get("max_ack_pending", 0)
    changed = (new_it > 0 and new_it != old_it) or (new_map > 0 and new_map != old_map)
    if not changed:
        return
    bad = [
        name
        for name, it, map_ in consumers
        if (new_it > 0 and it > new_it) or (new_map > 0 and map_ > new_map)
    ]
    if bad:
        raise E.consumer_limits_violation(bad)


# --------------------------------------------------------------------------------------------
# JSON form
# --------------------------------------------------------------------------------------------


def to_json_dict(cfg: StreamConfig, *, dynamic_metadata: bool) -> dict:
    """The ``config`` object exactly as nats-server 2.15.1 emits it, marshalled by the field
    table of :class:`StreamConfig`: Go struct order, ``omitempty`` fields only when set, times
    in RFC 3339, ``metadata`` a sorted map; ``dynamic_metadata`` adds ``_nats.ver`` and
    ``_nats.level`` (create/update/info replies, not LIST). Encode with
    :func:`~minijs.protocol.gomarshal.dumps`.
    """
    return STREAM_CONFIG_TYPE.encode(cfg.__dict__, {"metadata": reply_metadata(cfg.metadata, dynamic_metadata)})


def reply_metadata(metadata: dict[str, str] | None, dynamic: bool) -> dict[str, str]:
    """The ``metadata`` an asset's config shows: its stored metadata plus, with ``dynamic``,
    the server's ``_nats.ver`` and ``_nats.level``. Streams and consumers share this rule."""
    md = dict(metadata or {})
    if dynamic:
        md[VERSION_KEY] = SERVER_VERSION
        md[LEVEL_KEY] = str(API_LEVEL)
    return md
