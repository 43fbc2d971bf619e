"""Unit tests for minijs.jetstream.config.stream (StreamConfig).

Every expected JSON text / error description below was observed on the real nats-server v2.15.1
binary (raw STREAM.CREATE / STREAM.UPDATE requests sent with nats-py); no server runs here.
"""

from __future__ import annotations

import pytest

from minijs.jetstream.config import stream as C
from minijs.jetstream import errors as E
from minijs.jetstream import jsonfmt as J


def create(body: bytes) -> C.StreamConfig:
    cfg, pedantic = C.parse_stream_config(body)
    return C.validate_and_default(cfg, create=True, pedantic=pedantic)


def created_json(body: bytes) -> bytes:
    return J.dumps(C.to_json_dict(create(body), dynamic_metadata=True))


def create_error(body: bytes) -> dict:
    with pytest.raises(E.ApiError) as ei:
        create(body)
    return ei.value.to_json()


# ------------------------------------------------------------------------------------------
# defaults and the exact config JSON (field set and order)
# ------------------------------------------------------------------------------------------

DEFAULT_S1 = (
    b'{"name":"S1","subjects":["S1"],"retention":"limits","max_consumers":-1,"max_msgs":-1,'
    b'"max_bytes":-1,"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":-1,"discard":"old",'
    b'"storage":"file","num_replicas":1,"duplicate_window":120000000000,"compression":"none",'
    b'"allow_direct":false,"mirror_direct":false,"sealed":false,"deny_delete":false,"deny_purge":false,'
    b'"allow_rollup_hdrs":false,"consumer_limits":{},"allow_msg_ttl":false,'
    b'"metadata":{"_nats.level":"5","_nats.req.level":"0","_nats.ver":"2.15.1"}}'
)


def test_defaults_exact_json():
    assert created_json(b'{"name":"S1"}') == DEFAULT_S1
    # explicit zero values / empty collections give the same result
    assert created_json(
        b'{"name":"S1","subjects":[],"first_seq":0,"description":"","consumer_limits":{},"metadata":{},'
        b'"persist_mode":"default","allow_msg_counter":false,"placement":{},"num_replicas":0,"max_msgs":0}'
    ) == DEFAULT_S1


def test_defaults_values():
    cfg = create(b'{"name":"S1"}')
    assert cfg.subjects == ["S1"]
    assert (cfg.max_consumers, cfg.max_msgs, cfg.max_bytes, cfg.max_msgs_per_subject, cfg.max_msg_size) == (
        -1, -1, -1, -1, -1)
    assert (cfg.storage, cfg.retention, cfg.discard, cfg.compression) == ("file", "limits", "old", "none")
    assert cfg.num_replicas == 1 and cfg.duplicate_window == 120_000_000_000
    assert cfg.metadata == {"_nats.req.level": "0"}
    # LIST entries carry only the stored metadata
    assert C.to_json_dict(cfg, dynamic_metadata=False)["metadata"] == {"_nats.req.level": "0"}


def test_all_optional_fields_exact_json():
    body = (
        b'{"name":"O1","description":"d<&>","subjects":["o1.>"],"retention":"limits","max_consumers":5,'
        b'"max_msgs":10,"max_bytes":1000,"max_age":60000000000,"max_msgs_per_subject":2,"max_msg_size":100,'
        b'"discard":"new","storage":"memory","num_replicas":1,"no_ack":true,"duplicate_window":1000000000,'
        b'"compression":"none","first_seq":5,"subject_transform":{"src":"o1.>","dest":"o1x.>"},'
        b'"republish":{"src":"o1x.>","dest":"rp.>","headers_only":true},"allow_direct":true,'
        b'"discard_new_per_subject":true,"deny_delete":true,'
        b'"consumer_limits":{"inactive_threshold":5000000000,"max_ack_pending":10},"allow_msg_ttl":true,'
        b'"subject_delete_marker_ttl":2000000000,"metadata":{"zz":"1","aa":"2"}}'
    )
    expected = (
        b'{"name":"O1","description":"d\\u003c\\u0026\\u003e","subjects":["o1.\\u003e"],"retention":"limits",'
        b'"max_consumers":5,"max_msgs":10,"max_bytes":1000,"max_age":60000000000,"max_msgs_per_subject":2,'
        b'"max_msg_size":100,"discard":"new","storage":"memory","num_replicas":1,"no_ack":true,'
        b'"duplicate_window":1000000000,"compression":"none","first_seq":5,'
        b'"subject_transform":{"src":"o1.\\u003e","dest":"o1x.\\u003e"},'
        b'"republish":{"src":"o1x.\\u003e","dest":"rp.\\u003e","headers_only":true},"allow_direct":true,'
        b'"mirror_direct":false,"discard_new_per_subject":true,"sealed":false,"deny_delete":true,'
        b'"deny_purge":false,"allow_rollup_hdrs":true,'
        b'"consumer_limits":{"inactive_threshold":5000000000,"max_ack_pending":10},"allow_msg_ttl":true,'
        b'"subject_delete_marker_ttl":2000000000,'
        b'"metadata":{"_nats.level":"5","_nats.req.level":"1","_nats.ver":"2.15.1","aa":"2","zz":"1"}}'
    )
    assert created_json(body) == expected


@pytest.mark.parametrize(
    "body, fragment",
    [
        (b'{"name":"O5","persist_mode":"async"}', b'"allow_msg_ttl":false,"persist_mode":"async","metadata":'),
        (b'{"name":"O7","placement":{"cluster":"c1"}}',
         b'"duplicate_window":120000000000,"placement":{"cluster":"c1"},"compression":"none"'),
        (b'{"name":"O9","placement":{"tags":["a"]}}', b'"placement":{"tags":["a"]},"compression"'),
        (b'{"name":"R4","placement":{"tags":[]}}', b'"placement":{},"compression"'),
        (b'{"name":"R1","republish":{"dest":"rp.>"}}', b'"republish":{"src":"\\u003e","dest":"rp.\\u003e"},'),
        (b'{"name":"R3","subject_transform":{}}', b'"subject_transform":{"src":"","dest":""},'),
        (b'{"name":"R6","subjects":["r6"],"max_age":1000000000}',
         b'"max_age":1000000000,"max_msgs_per_subject":-1,"max_msg_size":-1,"discard":"old","storage":"file",'
         b'"num_replicas":1,"duplicate_window":1000000000,'),
        (b'{"name":"R7","subjects":["r7"],"max_age":120000000000}', b'"duplicate_window":120000000000,'),
        (b'{"name":"R13","subjects":["$JSC.x"],"no_ack":true}', b'"num_replicas":1,"no_ack":true,"duplicate_window"'),
        (b'{"name":"S","subjects":["$JS.EVENT.x"]}', b'"subjects":["$JS.EVENT.x"]'),
        (b'{"name":"S","subjects":["$SYS.ACCOUNT.x"]}', b'"subjects":["$SYS.ACCOUNT.x"]'),
        (b'{"name":"S","subjects":["\\u003e"],"no_ack":true}', b'"subjects":["\\u003e"]'),
        (b'{"name":"S","discard":"NEW"}', b'"discard":"new"'),
        (b'{"name":"S","max_consumers":-7,"max_msg_size":-9,"max_msgs":-3}',
         b'"max_consumers":-1,"max_msgs":-1,"max_bytes":-1,"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":-1'),
        (b'{"name":"S","metadata":{"a":"b","_nats.ver":"x","_nats.req.level":"9","_nats.level":"q"}}',
         b'"metadata":{"_nats.level":"5","_nats.req.level":"0","_nats.ver":"2.15.1","a":"b"}'),
    ],
)
def test_config_fragments(body, fragment):
    assert fragment in created_json(body)


@pytest.mark.parametrize(
    "body, level, forced",
    [
        (b'{"name":"S","allow_msg_ttl":true}', "1", {}),
        (b'{"name":"S","subject_delete_marker_ttl":1000000000}', "1",
         {"allow_msg_ttl": True, "allow_rollup_hdrs": True, "deny_purge": False}),
        (b'{"name":"S","subject_delete_marker_ttl":1000000000,"deny_purge":true}', "1",
         {"allow_rollup_hdrs": True, "deny_purge": False}),
        (b'{"name":"S","persist_mode":"async"}', "2", {}),
        (b'{"name":"S"}', "0", {}),
    ],
)
def test_req_level_and_forced_flags(body, level, forced):
    cfg = create(body)
    assert cfg.metadata[C.REQ_LEVEL_KEY] == level
    for k, v in forced.items():
        assert getattr(cfg, k) == v


def test_required_api_level_for_unsupported_features():
    # observed: counters/atomic/schedules → "2", allow_batched → "4"
    assert C.required_api_level(C.StreamConfig(name="S", allow_msg_counter=True)) == 2
    assert C.required_api_level(C.StreamConfig(name="S", allow_atomic=True)) == 2
    assert C.required_api_level(C.StreamConfig(name="S", allow_msg_schedules=True)) == 2
    assert C.required_api_level(C.StreamConfig(name="S", allow_batched=True, allow_msg_ttl=True)) == 4


def test_unsupported_options_field_order_in_json():
    # to_json_dict still knows where these go (observed order on v2.15.1)
    cfg = create(b'{"name":"S"}')
    cfg.allow_msg_counter = cfg.allow_atomic = cfg.allow_msg_schedules = cfg.allow_batched = True
    cfg.subject_delete_marker_ttl = 1
    keys = list(C.to_json_dict(cfg, dynamic_metadata=False))
    assert keys[-8:] == [
        "consumer_limits", "allow_msg_ttl", "subject_delete_marker_ttl", "allow_msg_counter", "allow_atomic",
        "allow_msg_schedules", "allow_batched", "metadata",
    ]
    cfg.mirror = {"name": "O1", "opt_start_seq": 0, "opt_start_time": J.parse_go_time_ex("2026-01-01T01:00:00+01:00"),
                  "filter_subject": "", "subject_transforms": None, "external": None, "consumer": None}
    d = C.to_json_dict(cfg, dynamic_metadata=False)
    assert d["mirror"] == {"name": "O1", "opt_start_time": "2026-01-01T01:00:00+01:00"}
    keys = list(d)
    assert keys[keys.index("num_replicas") : keys.index("compression") + 1] == [
        "num_replicas", "duplicate_window", "mirror", "compression"]


# ------------------------------------------------------------------------------------------
# validation texts
# ------------------------------------------------------------------------------------------

V52 = (500, 10052)

VALIDATION_CASES = [
    (b'{"name":"V1","subjects":["x","x"]}', V52, 'subject "x" overlaps with "x"'),
    (b'{"name":"V1","subjects":["a.>","a.b"]}', V52, 'subject "a.>" overlaps with "a.b"'),
    (b'{"name":"V1","subjects":["a.b","a.*"]}', V52, 'subject "a.b" overlaps with "a.*"'),
    (b'{"name":"V1","subjects":["a..b"]}', V52, "invalid subject"),
    (b'{"name":"V1","subjects":[""]}', V52, "invalid subject"),
    (b'{"name":"V1","subjects":[null]}', V52, "invalid subject"),
    (b'{"name":"V1","subjects":["a b"]}', V52, "invalid subject"),
    (b'{"name":"V1","subjects":[">"]}', V52, "capturing all subjects requires no-ack to be true"),
    (b'{"name":"V1","subjects":["$JS.API.>"]}', V52, "subjects that overlap with jetstream api require no-ack to be true"),
    (b'{"name":"V1","subjects":["*.x"]}', V52, "subjects that overlap with jetstream api require no-ack to be true"),
    (b'{"name":"V1","subjects":["$SYS.x"]}', V52, "subjects that overlap with system api require no-ack to be true"),
    (b'{"name":"V1","max_age":-1}', V52, "max age can not be negative"),
    (b'{"name":"V1","max_age":99999999}', V52, "max age needs to be >= 100ms"),
    (b'{"name":"V1","duplicate_window":-1}', V52, "duplicates window can not be negative"),
    (b'{"name":"V1","duplicate_window":5}', V52, "duplicates window needs to be >= 100ms"),
    (b'{"name":"V1","duplicate_window":5000000000,"max_age":1000000000}', V52,
     "duplicates window can not be larger then max age"),
    (b'{"name":"V1","num_replicas":-1}', (400, 10133), "replicas count cannot be negative"),
    (b'{"name":"V1","num_replicas":6}', V52, "maximum replicas is 5"),
    (b'{"name":"V1","num_replicas":3}', (500, 10074), "replicas > 1 not supported in non-clustered mode"),
    (b'{"name":"V1","sealed":true}', V52, "stream configuration for create can not be sealed"),
    (b'{"name":"V1","mirror_direct":true}', V52, "stream has no mirror but does have mirror direct"),
    (b'{"name":"V1","deny_purge":true,"allow_rollup_hdrs":true}', V52, "roll-ups require the purge permission"),
    (b'{"name":"V1","discard_new_per_subject":true}', V52,
     "discard new per subject requires discard new policy to be set"),
    (b'{"name":"V1","discard_new_per_subject":true,"discard":"new"}', V52,
     "discard new per subject requires max msgs per subject > 0"),
    (b'{"name":"V1","subject_delete_marker_ttl":5}', V52, "subject delete marker TTL must be at least 1 second"),
    (b'{"name":"V1","subject_delete_marker_ttl":-5}', V52, "subject delete marker TTL must not be negative"),
    (b'{"name":"V1","subject_delete_marker_ttl":1000000000,"pedantic":true}', V52,
     "subject delete marker cannot be set if message TTLs are disabled"),
    (b'{"name":"V1","subject_delete_marker_ttl":1000000000,"allow_msg_ttl":true,"pedantic":true}', V52,
     "subject delete marker cannot be set if roll-ups are disabled"),
    (b'{"name":"V1","max_msgs":-5,"pedantic":true}', (400, 10157), "pedantic mode: max_msgs must be set to -1"),
    (b'{"name":"R10","subjects":["r10"],"max_consumers":-7,"pedantic":true}', (400, 10157),
     "pedantic mode: max_consumers must be set to -1"),
    (b'{"name":"V1","max_age":1000000000,"pedantic":true}', (400, 10157),
     "pedantic mode: duplicate window cannot be bigger than max age"),
    (b'{"name":"R2","republish":{"dest":"rp2.>"},"pedantic":true}', (400, 10157),
     "pedantic mode: republish source can not be empty"),
    (b'{"name":"V/1"}', (400, 10128), "Stream name can not contain path separators"),
    (b'{"name":"V\\\\1"}', (400, 10128), "Stream name can not contain path separators"),
    (b'{"name":"V*1"}', V52, "stream name is required and can not contain '.', '*', '>', '\\', '/'"),
    (b'{"name":"V>1"}', V52, "stream name is required and can not contain '.', '*', '>', '\\', '/'"),
    (b'{"name":"' + b"N" * 256 + b'"}', V52, "stream name is too long, maximum allowed is 255"),
    (b'{"name":"D1","description":"' + b"d" * 4097 + b'"}', V52,
     "stream description is too long, maximum allowed is 4096"),
    # 131072 bytes of user metadata + the "_nats.req.level":"0" the server adds first
    (b'{"name":"D4","metadata":{"k":"' + b"m" * (128 * 1024 - 16) + b'"}}', V52,
     "stream metadata exceeds maximum size of 131072 bytes"),
    (b'{"name":"V1","mirror":{"name":"O1"},"subjects":["q"]}', (400, 10034), "stream mirrors can not contain subjects"),
    (b'{"name":"V1","mirror":{"name":"O1"},"first_seq":3}', (400, 10143),
     "stream mirrors can not have first sequence configured"),
    (b'{"name":"V1","sources":[{"name":"O1"}],"mirror":{"name":"O1"}}', (400, 10031),
     "stream mirrors can not also contain other sources"),
    (b'{"name":"R13","mirror":{"name":""}}', (400, 10142), "mirrored stream name is invalid"),
    (b'{"name":"R13","sources":[{"name":"a"},{"name":"a"}]}', (400, 10140), "duplicate source configuration detected"),
    (b'{"name":"R13","sources":[null]}', (400, 10141), "sourced stream name is invalid"),
    (b'{"name":"V1","republish":{"dest":"V1"}}', V52, "stream configuration for republish destination forms a cycle"),
    (b'{"name":"V1","republish":{"src":"x","dest":"y.*"}}', V52,
     "stream configuration for republish with transform from 'x' to 'y.*' not valid"),
    (b'{"name":"R10","subjects":["r10"],"republish":{"src":"r10.*","dest":"a.{{wildcard(2)}}"}}', V52,
     "stream configuration for republish with transform from 'r10.*' to 'a.{{wildcard(2)}}' not valid"),
    (b'{"name":"R9","subjects":["r9.*"],"subject_transform":{"src":"r9.*","dest":"x.{{wildcard(1)}}"},'
     b'"republish":{"src":">","dest":">"}}', V52,
     "stream configuration for republish with transform from 'x.{{wildcard(1)}}' to 'x.{{wildcard(1)}}' not valid"),
    (b'{"name":"V1","subject_transform":{"src":"a..","dest":"b"}}', (400, 10155),
     "stream transform source: invalid subject a.."),
    (b'{"name":"V1","subject_transform":{"src":"a.*","dest":"b.{{wildcard(3)}}"}}', (400, 10156),
     "stream transform: invalid mapping destination: wildcard index out of range in {{wildcard(3)}}: [3]"),
    (b'{"name":"R10","subject_transform":{"src":"r10","dest":"{{foo(1)}}"}}', (400, 10156),
     "stream transform: invalid mapping destination: unknown function in {{foo(1)}}"),
    (b'{"name":"R10","subject_transform":{"src":"r10.*","dest":"a.$2"}}', (400, 10156),
     "stream transform: invalid mapping destination: wildcard index out of range in $2: [2]"),
    (b'{"name":"R10","subject_transform":{"src":"r10","dest":"a.*"}}', (400, 10156), "stream transform: invalid subject"),
    (b'{"name":"R10","subject_transform":{"src":"r10.*","dest":"a.{{partition(x)}}"}}', (400, 10156),
     "stream transform: invalid mapping destination: function argument is invalid or in the wrong format "
     "in {{partition(x)}}"),
    (b'{"name":"R10","subject_transform":{"src":"r10","dest":"a..b"}}', (400, 10156),
     "stream transform: invalid mapping destination: invalid transform"),
    (b'{"name":"R10","subject_transform":{"src":"r10.>","dest":"a.b"}}', (400, 10156), "stream transform: invalid subject"),
    (b'{"name":"V1","placement":{"preferred":"x"}}', V52, "preferred server not permitted in placement"),
    (b'{"name":"V1","allow_msg_counter":true,"discard":"new"}', V52, "counter stream cannot use discard new"),
    (b'{"name":"V1","persist_mode":"async","storage":"memory"}', V52,
     "async persist mode is only supported on file storage"),
    (b'{"name":"V1","allow_msg_schedules":true,"discard":"new"}', V52, "message scheduling cannot use discard new"),
    # ordering: request checks (sealed) come before validation (max_age) and replicas
    (b'{"name":"R14","subjects":["r14"],"max_age":-1,"num_replicas":3,"sealed":true}', V52,
     "stream configuration for create can not be sealed"),
    (b'{"name":"R14","max_age":-1,"num_replicas":3}', V52, "max age can not be negative"),
]


@pytest.mark.parametrize("body, code, text", VALIDATION_CASES)
def test_validation_texts(body, code, text):
    assert create_error(body) == {"code": code[0], "err_code": code[1], "description": text}


def test_validation_accepts_boundaries():
    """Values at their limits are accepted and kept as given (nats-server's checks are
    inclusive at each of these limits)."""
    assert create(b'{"name":"V1","max_age":100000000}').max_age == 100_000_000
    assert create(b'{"name":"' + b"N" * 255 + b'"}').name == "N" * 255
    assert create(b'{"name":"D","description":"' + b"d" * 4096 + b'"}').description == "d" * 4096
    big = create(b'{"name":"D1","metadata":{"k":"' + b"m" * (128 * 1024 - 17) + b'"}}')
    assert big.metadata["k"] == "m" * (128 * 1024 - 17)
    # echoed dynamic keys are dropped before the size check counts the metadata
    echoed = create(b'{"name":"D5","metadata":{"k":"' + b"m" * (128 * 1024 - 22)
                    + b'","_nats.ver":"12345"}}')
    assert echoed.metadata["k"] == "m" * (128 * 1024 - 22) and "_nats.ver" not in echoed.metadata
    r8 = create(b'{"name":"R8","subjects":["r8"],"max_age":110000000000,'
                b'"duplicate_window":110000000000}')
    assert (r8.max_age, r8.duplicate_window) == (110_000_000_000, 110_000_000_000)
    assert create(b'{"name":"S","subjects":["a.b","a.c","b.>"]}').subjects == ["a.b", "a.c", "b.>"]
    dest = "x.{{wildcard(2)}}.$1.{{partition(3,1,2)}}"
    tr = create(b'{"name":"S","subject_transform":{"src":"a.*.*","dest":"' + dest.encode() + b'"}}')
    assert tr.subject_transform == {"src": "a.*.*", "dest": dest}
    tr = create(b'{"name":"S","subject_transform":{"src":"a","dest":"x.{{random(5)}}.{{partition(2)}}"}}')
    assert tr.subject_transform == {"src": "a", "dest": "x.{{random(5)}}.{{partition(2)}}"}


def test_external_sources_are_accepted():
    # reached through the accounts of this server (see the replication module)
    m = create(b'{"name":"R12","mirror":{"name":"O1","external":{"api":"$JS.x.API"}}}')
    assert m.mirror["external"] == {"api": "$JS.x.API", "deliver": ""}
    create(b'{"name":"O10","sources":[{"name":"O1","external":{"api":"$JS.x.API"}}]}')


def test_unsupported_options_unset_are_fine():
    create(b'{"name":"S","mirror":null,"sources":[],"allow_msg_counter":false,"allow_atomic":false,'
           b'"allow_msg_schedules":false,"allow_batched":false}')
    assert set(C.UNSUPPORTED_FIELDS) == set()
    assert set(C.UNSUPPORTED_SOURCE_FIELDS) == set()


def test_mirrors_and_sources_are_accepted():
    m = create(b'{"name":"M1","mirror":{"name":"O1","filter_subject":"a.>"}}')
    assert m.mirror["filter_subject"] == "a.>" and m.subjects is None
    s = create(b'{"name":"S1","sources":[{"name":"O1"},{"name":"O2","opt_start_seq":3}]}')
    assert [x["name"] for x in s.sources] == ["O1", "O2"] and s.duplicate_window == 0


# ------------------------------------------------------------------------------------------
# idempotent create
# ------------------------------------------------------------------------------------------


def test_same_config():
    old = create(b'{"name":"U3","metadata":{"a":"b"}}')
    # echoed dynamic keys and a different _nats.req.level do not matter
    assert C.same_config(create(b'{"name":"U3","metadata":{"_nats.ver":"x","_nats.level":"q","a":"b"}}'), old)
    assert C.same_config(create(b'{"name":"U3","metadata":{"a":"b","_nats.req.level":"9"}}'), old)
    # observed: adding allow_msg_ttl → 10058
    assert not C.same_config(create(b'{"name":"U3","metadata":{"a":"b"},"allow_msg_ttl":true}'), old)
    assert not C.same_config(create(b'{"name":"U3"}'), old)
    assert C.same_config(create(b'{"name":"S","max_msgs":0}'), create(b'{"name":"S","max_msgs":-1}'))


# ------------------------------------------------------------------------------------------
# update rules
# ------------------------------------------------------------------------------------------

U1 = b'{"name":"U1","deny_delete":true,"deny_purge":true,"allow_msg_ttl":true,"subjects":["u1"]'


def update(old: C.StreamConfig, body: bytes) -> C.StreamConfig:
    cfg, pedantic = C.parse_stream_config(body)
    cfg = C.validate_and_default(cfg, create=False, pedantic=pedantic)
    return C.check_update(old, cfg, pedantic=pedantic)


@pytest.mark.parametrize(
    "extra, code, text",
    [
        (b',"storage":"memory"}', V52, "stream configuration update can not change storage type"),
        (b',"retention":"workqueue"}', V52, "stream configuration update can not change retention policy to/from workqueue"),
        (b',"deny_delete":false}', V52, "stream configuration update can not cancel deny message deletes"),
        (b',"deny_purge":false}', V52, "stream configuration update can not cancel deny purge"),
        (b',"allow_msg_ttl":false}', V52, "message TTL status can not be disabled"),
        (b',"num_replicas":3}', (500, 10074), "replicas > 1 not supported in non-clustered mode"),
    ],
)
def test_update_rejections(extra, code, text):
    old = create(U1 + b"}")
    body = U1 + extra
    # later keys win in Go's decoder, so the override applies
    with pytest.raises(E.ApiError) as ei:
        update(old, body)
    assert ei.value.to_json() == {"code": code[0], "err_code": code[1], "description": text}


def test_update_rejections_internal_rules():
    old = create(b'{"name":"U2","subjects":["u2"],"persist_mode":"async"}')
    with pytest.raises(E.ApiError) as ei:
        update(old, b'{"name":"U2","subjects":["u2"]}')
    assert ei.value.description == "stream configuration update can not change persist mode"
    sealed = update(create(U1 + b"}"), U1 + b',"sealed":true}')
    with pytest.raises(E.ApiError) as ei:
        update(sealed, U1 + b',"sealed":false}')
    assert ei.value.description == "stream configuration update can not unseal a sealed stream"
    # rules on unsupported features, checked directly on configs
    a = C.StreamConfig(name="X", subjects=["x"], allow_msg_schedules=True)
    b = C.StreamConfig(name="X", subjects=["x"])
    with pytest.raises(E.ApiError) as ei:
        C.check_update(a, b)
    assert ei.value.description == "message schedules can not be disabled"
    with pytest.raises(E.ApiError) as ei:
        C.check_update(C.StreamConfig(name="X", subjects=["x"], allow_msg_counter=True), b)
    assert ei.value.description == "stream configuration update can not change message counter setting"
    with pytest.raises(E.ApiError) as ei:
        C.check_update(C.StreamConfig(name="Y"), b)
    assert ei.value.description == "stream configuration name must match original"


def test_update_allowed_changes():
    old = create(U1 + b"}")
    new = update(
        old,
        U1 + b',"compression":"s2","placement":{"cluster":"x"},"description":"x","max_age":5000000000,'
        b'"metadata":{"k":"v","_nats.ver":"1.0.0","_nats.level":"9","_nats.req.level":"7"},'
        b'"retention":"interest","allow_direct":true,"no_ack":true,"duplicate_window":1000000000,'
        b'"consumer_limits":{"max_ack_pending":5},"first_seq":10}',
    )
    js = J.dumps(C.to_json_dict(new, dynamic_metadata=True))
    assert js == (
        b'{"name":"U1","description":"x","subjects":["u1"],"retention":"interest","max_consumers":-1,'
        b'"max_msgs":-1,"max_bytes":-1,"max_age":5000000000,"max_msgs_per_subject":-1,"max_msg_size":-1,'
        b'"discard":"old","storage":"file","num_replicas":1,"no_ack":true,"duplicate_window":1000000000,'
        b'"placement":{"cluster":"x"},"compression":"s2","first_seq":10,"allow_direct":true,"mirror_direct":false,'
        b'"sealed":false,"deny_delete":true,"deny_purge":true,"allow_rollup_hdrs":false,'
        b'"consumer_limits":{"max_ack_pending":5},"allow_msg_ttl":true,'
        b'"metadata":{"_nats.level":"5","_nats.req.level":"1","_nats.ver":"2.15.1","k":"v"}}'
    )


def test_update_sealing_adjustments():
    old = create(U1 + b"}")
    new = update(old, U1 + b',"sealed":true,"max_age":5000000000,"allow_rollup_hdrs":false}')
    d = C.to_json_dict(new, dynamic_metadata=False)
    # observed: max_age zeroed, but the duplicate window derived from it stays
    assert (d["max_age"], d["discard"], d["duplicate_window"], d["sealed"]) == (0, "new", 5000000000, True)
    assert (d["deny_delete"], d["deny_purge"], d["allow_rollup_hdrs"]) == (True, True, False)


def test_update_subject_delete_marker_forces_ttl():
    old = create(b'{"name":"U2","subjects":["u2"]}')
    new = update(old, b'{"name":"U2","subjects":["u2"],"subject_delete_marker_ttl":1000000000,"allow_msg_ttl":false}')
    assert new.allow_msg_ttl and new.allow_rollup_hdrs and new.subject_delete_marker_ttl == 1_000_000_000
    assert new.metadata == {"_nats.req.level": "1"}


def test_update_validation_before_name_check():
    # observed: STREAM.UPDATE.NOPE {"name":"X","max_age":-1} → 10052 (validation first)
    cfg, _ = C.parse_stream_config(b'{"name":"X","max_age":-1}')
    with pytest.raises(E.ApiError) as ei:
        C.validate_and_default(cfg, create=False)
    assert ei.value.description == "max age can not be negative"
    # sealed / replicas are not create-time checks on update
    cfg, _ = C.parse_stream_config(b'{"name":"NOPE","sealed":true,"num_replicas":3}')
    C.validate_and_default(cfg, create=False)


def test_check_consumer_limits():
    old = create(b'{"name":"S"}')
    new = create(b'{"name":"S","consumer_limits":{"max_ack_pending":5,"inactive_threshold":2000000000}}')
    C.check_consumer_limits(old, new, [("ok", 1_000_000_000, 5)])
    with pytest.raises(E.ApiError) as ei:
        C.check_consumer_limits(old, new, [("a", 0, 10), ("ok", 0, 1), ("b", 3_000_000_000, 0)])
    assert ei.value.to_json() == {"code": 500, "err_code": 10069, "description": "change to limits violates consumers: a, b"}
    # unchanged limits are not re-checked
    C.check_consumer_limits(new, new, [("a", 0, 10)])


# ------------------------------------------------------------------------------------------
# misc helpers
# ------------------------------------------------------------------------------------------


def test_validate_mapping():
    assert C.validate_mapping("a.*", "b.$1") is None
    assert C.validate_mapping("a", "") is None
    assert C.validate_mapping("a.*", "b.{{split(1,-)}}") is None
    assert C.validate_mapping("a.*", "b.{{split(1)}}") == (
        "invalid mapping destination: not enough arguments passed to the function in {{split(1)}}")
    assert C.validate_mapping("a.*", "b.{{wildcard(1,2)}}") == (
        "invalid mapping destination: too many arguments passed to the function in {{wildcard(1,2)}}")
    assert C.validate_mapping("a", "b.>.c") == "invalid mapping destination: invalid transform in c"


def test_is_valid_asset_name():
    assert C.is_valid_asset_name("ORDERS-1_x")
    for bad in ("", "a.b", "a*", "a>", "a b", "a\tb", "a/b", "a\\b"):
        assert not C.is_valid_asset_name(bad)


def test_parse_returns_pedantic_and_does_not_mutate():
    cfg, pedantic = C.parse_stream_config(b'{"name":"S","pedantic":true}')
    assert pedantic is True
    before = cfg.copy()
    C.validate_and_default(cfg, create=True)
    assert cfg == before
    cfg, pedantic = C.parse_stream_config(b"")
    assert cfg == C.StreamConfig() and pedantic is False


def test_config_round_trips_through_its_json_form():
    """What a config marshals to builds the same config again (the cluster's assignments and
    a file stream's stored config travel in that form): a source's or mirror's start time
    comes back as a time, with its zone."""
    body = (b'{"name":"M","sources":[{"name":"O","opt_start_time":"2024-01-01T01:00:00+01:00"},'
            b'{"name":"P","opt_start_seq":3,"subject_transforms":[{"src":"a.>","dest":"b.>"}]}],'
            b'"placement":{"tags":["t"]},"metadata":{"k":"v"}}')
    cfg = C.validate_and_default(C.parse_stream_config(body)[0], create=True)
    again = C.stream_config_from_dict(C.to_json_dict(cfg, dynamic_metadata=False))
    assert again == cfg and C.same_config(again, cfg)
    assert again.sources[0]["opt_start_time"].offset == 3600
    assert C.to_json_dict(again, dynamic_metadata=True) == C.to_json_dict(cfg, dynamic_metadata=True)
