"""Unit tests for minijs.jetstream.config.consumer (ConsumerConfig).

Every expected JSON text / error below was observed on the real nats-server v2.15.1 binary:
raw ``$JS.API.CONSUMER.CREATE…`` requests sent with nats-py to ``nats-server -js`` and the reply
recorded verbatim (config objects are the exact bytes of the reply's ``"config"`` value). No server
runs here: :class:`PlanStream` sends the requests through the create planner the API itself
calls (:func:`minijs.jetstream.consumers.create.plan_create`).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from minijs.jetstream.config import stream as SC
from minijs.jetstream.config import consumer as CC
from minijs.jetstream import errors as E
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.consumers.create import CreateLimits, plan_create

API = "$JS.API.CONSUMER.CREATE."


def make_stream(**kw) -> SC.StreamConfig:
    body = {"name": "S", "subjects": ["s.>"]}
    body.update(kw)
    cfg, ped = SC.parse_stream_config(json.dumps(body).encode())
    return SC.validate_and_default(cfg, create=True, pedantic=ped)


@dataclasses.dataclass
class Existing:
    """A consumer already on the stream, as the create planner reads it (its
    :class:`~minijs.jetstream.consumers.create.ExistingConsumer`)."""

    config: CC.ConsumerConfig
    #: a subscription exists on exactly its deliver subject
    active: bool = False

    @property
    def is_push(self) -> bool:
        return bool(self.config.deliver_subject)


class PlanStream:
    """One stream ``S`` on plain data: create requests go through the planner the API calls
    (:func:`~minijs.jetstream.consumers.create.plan_create`); a plan is applied by recording
    its config."""

    def __init__(self, limits: CreateLimits = CreateLimits(), **stream_kw) -> None:
        self.config = make_stream(**stream_kw)
        self.limits = limits
        self.consumers: dict[str, Existing] = {}

    def create(self, subject: str, body: dict | bytes) -> tuple[str, CC.ConsumerConfig]:
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        stream, plan = plan_create(subject, payload, limits=self.limits,
                                   lookup=lambda name: self if name == "S" else None)
        assert stream is self
        if plan.update:
            assert plan.name in self.consumers
            self.consumers[plan.name].config = plan.config
        else:
            assert plan.name not in self.consumers
            self.consumers[plan.name] = Existing(plan.config)
        return plan.name, plan.config

    def config_json(self, subject: str, body: dict | bytes) -> bytes:
        _, cfg = self.create(subject, body)
        return J.dumps(CC.to_json_dict(cfg, dynamic_metadata=True))

    def error(self, subject: str, body: dict | bytes) -> tuple[int, int, str]:
        with pytest.raises(E.ApiError) as ei:
            self.create(subject, body)
        e = ei.value
        return e.code, e.err_code, e.description


def req(cfg: dict | None = None, stream: str = "S", **extra) -> dict:
    body: dict = {"stream_name": stream}
    if cfg is not None:
        body["config"] = cfg
    body.update(extra)
    return body


MD0 = '"metadata":{"_nats.level":"5","_nats.req.level":"0","_nats.ver":"2.15.1"}'


# ------------------------------------------------------------------------------------------
# defaults and the exact config JSON (observed reply bytes)
# ------------------------------------------------------------------------------------------

DEFAULT_CASES = [
    # (stream kwargs, subject suffix, config, observed "config" bytes)
    (
        {}, "pull_durable", {"durable_name": "pull_durable"},
        '{"durable_name":"pull_durable","name":"pull_durable","deliver_policy":"all","ack_policy":"none",'
        '"max_deliver":-1,"replay_policy":"instant","max_waiting":512,"num_replicas":0,' + MD0 + "}",
    ),
    (
        {}, "named_eph", {},
        '{"name":"named_eph","deliver_policy":"all","ack_policy":"none","max_deliver":-1,"replay_policy":"instant",'
        '"max_waiting":512,"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}",
    ),
    (
        {}, None, {},  # legacy auto-named ephemeral: no "name" in the config
        '{"deliver_policy":"all","ack_policy":"none","max_deliver":-1,"replay_policy":"instant","max_waiting":512,'
        '"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}",
    ),
    (
        {}, "push_durable", {"durable_name": "push_durable", "deliver_subject": "dlv.push"},
        '{"durable_name":"push_durable","name":"push_durable","deliver_policy":"all","ack_policy":"none",'
        '"max_deliver":-1,"replay_policy":"instant","deliver_subject":"dlv.push","num_replicas":0,' + MD0 + "}",
    ),
    (
        {}, "explicit_pull", {"durable_name": "explicit_pull", "ack_policy": "explicit"},
        '{"durable_name":"explicit_pull","name":"explicit_pull","deliver_policy":"all","ack_policy":"explicit",'
        '"ack_wait":30000000000,"max_deliver":-1,"replay_policy":"instant","max_waiting":512,"max_ack_pending":1000,'
        '"num_replicas":0,' + MD0 + "}",
    ),
    (
        {}, "all_push", {"durable_name": "all_push", "ack_policy": "all", "deliver_subject": "dlv.all"},
        '{"durable_name":"all_push","name":"all_push","deliver_policy":"all","ack_policy":"all","ack_wait":30000000000,'
        '"max_deliver":-1,"replay_policy":"instant","max_ack_pending":1000,"deliver_subject":"dlv.all","num_replicas":0,'
        + MD0 + "}",
    ),
    (
        {"consumer_limits": {"max_ack_pending": 50, "inactive_threshold": 10000000000}},
        "lim_durable", {"durable_name": "lim_durable", "ack_policy": "explicit"},
        '{"durable_name":"lim_durable","name":"lim_durable","deliver_policy":"all","ack_policy":"explicit",'
        '"ack_wait":30000000000,"max_deliver":-1,"replay_policy":"instant","max_waiting":512,"max_ack_pending":50,'
        '"inactive_threshold":10000000000,"num_replicas":0,' + MD0 + "}",
    ),
    (
        # stream consumer limits apply even with ack_policy none (unlike the 1000 default)
        {"consumer_limits": {"max_ack_pending": 50, "inactive_threshold": 10000000000}}, "lim_none", {},
        '{"name":"lim_none","deliver_policy":"all","ack_policy":"none","max_deliver":-1,"replay_policy":"instant",'
        '"max_waiting":512,"max_ack_pending":50,"inactive_threshold":10000000000,"num_replicas":0,' + MD0 + "}",
    ),
    (
        {}, "pinned",
        {"durable_name": "pinned", "priority_policy": "pinned_client", "priority_groups": ["A", "B"],
         "pause_until": "2099-01-01T00:00:00+01:00"},
        ('{"durable_name":"pinned","name":"pinned","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
        '"replay_policy":"instant","max_waiting":512,"num_replicas":0,'
        '"metadata":{"_nats.level":"5","_nats.req.level":"1","_nats.ver":"2.15.1"},'
        '"pause_until":"2099-01-01T00:00:00+01:00","priority_groups":["A","B"],"priority_policy":"pinned_client",'
        '"priority_timeout":120000000000}'),
    ),
    (
        {}, "start_time",
        {"durable_name": "start_time", "deliver_policy": "by_start_time",
         "opt_start_time": "2026-01-02T03:04:05.123456789+01:00"},
        '{"durable_name":"start_time","name":"start_time","deliver_policy":"by_start_time",'
        '"opt_start_time":"2026-01-02T03:04:05.123456789+01:00","ack_policy":"none","max_deliver":-1,'
        '"replay_policy":"instant","max_waiting":512,"num_replicas":0,' + MD0 + "}",
    ),
    (
        {}, "undef", {"durable_name": "undef", "deliver_policy": "undefined"},
        '{"durable_name":"undef","name":"undef","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
        '"replay_policy":"instant","max_waiting":512,"num_replicas":0,' + MD0 + "}",
    ),
    (
        {}, "many",
        {"durable_name": "many", "description": "<d&>", "ack_policy": "explicit", "ack_wait": 2000000000,
         "max_deliver": 5, "backoff": [1000000000, 2000000000], "filter_subjects": ["a.>", "b"],
         "replay_policy": "original", "sample_freq": "50%", "max_waiting": 10, "max_ack_pending": -1,
         "headers_only": True, "max_batch": 3, "max_expires": 5000000, "max_bytes": 1000,
         "inactive_threshold": 7000000000, "num_replicas": 1, "mem_storage": True,
         "metadata": {"zz": "1", "aa": "2", "_nats.ver": "x"}, "priority_policy": "overflow",
         "priority_groups": ["G"], "priority_timeout": 5},
        ('{"durable_name":"many","name":"many","description":"\\u003cd\\u0026\\u003e","deliver_policy":"all",'
        '"ack_policy":"explicit","ack_wait":1000000000,"max_deliver":5,"backoff":[1000000000,2000000000],'
        '"filter_subjects":["a.\\u003e","b"],"replay_policy":"original","sample_freq":"50%","max_waiting":10,'
        '"max_ack_pending":-1,"headers_only":true,"max_batch":3,"max_expires":5000000,"max_bytes":1000,'
        '"inactive_threshold":7000000000,"num_replicas":1,"mem_storage":true,'
        '"metadata":{"_nats.level":"5","_nats.req.level":"1","_nats.ver":"2.15.1","aa":"2","zz":"1"},'
        '"priority_groups":["G"],"priority_policy":"overflow","priority_timeout":5}'),
    ),
    (
        {}, "push_many",
        {"durable_name": "push_many", "deliver_subject": "dq4", "flow_control": True, "idle_heartbeat": 5000000000,
         "rate_limit_bps": 800, "deliver_group": "q", "max_batch": 3, "max_expires": 5, "max_bytes": 4,
         "opt_start_seq": 7, "deliver_policy": "by_start_sequence", "filter_subject": "f.>", "direct": False},
        '{"durable_name":"push_many","name":"push_many","deliver_policy":"by_start_sequence","opt_start_seq":7,'
        '"ack_policy":"none","max_deliver":-1,"filter_subject":"f.\\u003e","replay_policy":"instant",'
        '"rate_limit_bps":800,"flow_control":true,"max_batch":3,"max_expires":5,"max_bytes":4,'
        '"deliver_subject":"dq4","deliver_group":"q","idle_heartbeat":5000000000,"num_replicas":0,' + MD0 + "}",
    ),
    (
        {}, "fc_ack", {"durable_name": "fc_ack", "ack_policy": "flow_control", "deliver_subject": "dfc"},
        ('{"durable_name":"fc_ack","name":"fc_ack","deliver_policy":"all","ack_policy":"flow_control",'
        '"max_deliver":-1,"replay_policy":"instant","max_ack_pending":1000,"flow_control":true,'
        '"deliver_subject":"dfc","idle_heartbeat":1000000000,"num_replicas":0,'
        '"metadata":{"_nats.level":"5","_nats.req.level":"4","_nats.ver":"2.15.1"}}'),
    ),
    (
        # negatives are clamped; _nats.req.level is computed *before* defaults (priority_timeout -5 → 1)
        {}, "negs",
        {"durable_name": "negs", "max_deliver": -5, "max_waiting": -5, "max_ack_pending": -5, "max_batch": -1,
         "max_expires": -1, "max_bytes": -1, "inactive_threshold": -1, "idle_heartbeat": -1, "priority_timeout": -5},
        ('{"durable_name":"negs","name":"negs","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
        '"replay_policy":"instant","max_waiting":512,"max_ack_pending":-1,"num_replicas":0,'
        '"metadata":{"_nats.level":"5","_nats.req.level":"1","_nats.ver":"2.15.1"}}'),
    ),
]


@pytest.mark.parametrize("stream_kw,suffix,cfg,expected", DEFAULT_CASES, ids=[c[1] or "auto" for c in DEFAULT_CASES])
def test_defaults_exact_json(stream_kw, suffix, cfg, expected):
    eng = PlanStream(**stream_kw)
    subject = API + "S" + ("." + suffix if suffix else "")
    assert eng.config_json(subject, req(cfg)).decode() == expected


def test_no_config_and_null_config_are_zero_configs():
    eng = PlanStream()
    a = eng.config_json(API + "S", req())
    b = eng.config_json(API + "S", b'{"stream_name":"S","config":null}')
    assert a == b
    assert eng.config_json(API + "S.x", req({}, action="")) == (
        b'{"name":"x","deliver_policy":"all","ack_policy":"none","max_deliver":-1,"replay_policy":"instant",'
        b'"max_waiting":512,"inactive_threshold":5000000000,"num_replicas":0,' + MD0.encode() + b"}"
    )


def test_list_entries_have_only_stored_metadata():
    eng = PlanStream()
    _, cfg = eng.create(API + "S.d", req({"durable_name": "d"}))
    assert cfg.metadata == {"_nats.req.level": "0"}
    assert CC.to_json_dict(cfg, dynamic_metadata=False)["metadata"] == {"_nats.req.level": "0"}


def test_auto_name_shape():
    eng = PlanStream()
    name, cfg = eng.create(API + "S", req({}))
    assert len(name) == 8 and name.isalnum() and cfg.name == ""


# ------------------------------------------------------------------------------------------
# strict decoding (400/10025)
# ------------------------------------------------------------------------------------------

DECODE_ERRORS = [
    (b'{"stream_name":"S","config":{"foo":1}}', 'invalid JSON: json: unknown field "foo"'),
    (b'{"stream_name":"S","bar":1}', 'invalid JSON: json: unknown field "bar"'),
    (b'{"stream_name":"S","action":"bad"}', 'invalid JSON: unknown consumer action: "bad"'),
    (b'{"stream_name":"S","action":null}', "invalid JSON: unknown consumer action: null"),
    (b'{"stream_name":"S","config":{"ack_policy":"Explicit"}}', 'invalid JSON: can not unmarshal "\\"Explicit\\""'),
    (b'{"stream_name":"S","config":{"priority_policy":"bad"}}', 'invalid JSON: unknown priority policy: "bad"'),
    (b'{"stream_name":"S","config":{"priority_policy":null}}', "invalid JSON: unknown priority policy: null"),
    (b'{"stream_name":"S","config":{"replay_policy":null}}', 'invalid JSON: can not unmarshal "null"'),
    (
        b'{"stream_name":"S","config":{"ack_wait":"1s"}}',
        ("invalid JSON: json: cannot unmarshal string into Go struct field CreateConsumerRequest.config.ack_wait "
        "of type time.Duration"),
    ),
    (
        b'{"stream_name":"S","config":{"opt_start_seq":-1}}',
        ("invalid JSON: json: cannot unmarshal number -1 into Go struct field "
        "CreateConsumerRequest.config.opt_start_seq of type uint64"),
    ),
    (
        b'{"stream_name":"S","config":{"opt_start_time":"nope"}}',
        'invalid JSON: parsing time "nope" as "2006-01-02T15:04:05Z07:00": cannot parse "nope" as "2006"',
    ),
    (
        b'{"stream_name":"S","config":{"backoff":[1,"x"]}}',
        ("invalid JSON: json: cannot unmarshal string into CreateConsumerRequest.config.backoff.1 of type "
        "time.Duration"),
    ),
    (
        b'{"stream_name":"S","pedantic":1}',
        "invalid JSON: json: cannot unmarshal number into Go struct field CreateConsumerRequest.pedantic of type bool",
    ),
]


@pytest.mark.parametrize("body,text", DECODE_ERRORS)
def test_decode_errors(body, text):
    with pytest.raises(E.ApiError) as ei:
        CC.parse_create_request(body)
    assert (ei.value.code, ei.value.err_code, ei.value.description) == (400, 10025, text)


def test_parse_request_values():
    cfg, action, pedantic, stream = CC.parse_create_request(
        b'{"stream_name":"S","action":"create","pedantic":true,"config":{"durable_name":"d",'
        b'"opt_start_time":"2026-01-02T03:04:05Z","backoff":[1,2],"metadata":{"a":"b"}}}'
    )
    assert (action, pedantic, stream) == ("create", True, "S")
    assert cfg.durable_name == "d" and cfg.backoff == [1, 2] and cfg.metadata == {"a": "b"}
    assert J.go_time(cfg.opt_start_time) == "2026-01-02T03:04:05Z"
    assert CC.parse_create_request(b"")[1:] == ("", False, "")
    assert CC.parse_create_request(b'{"action":"update"}')[1] == "update"


# ------------------------------------------------------------------------------------------
# subject forms
# ------------------------------------------------------------------------------------------


def test_parse_create_subject():
    assert CC.parse_create_subject("$JS.API.CONSUMER.CREATE.S") == CC.CreateSubject("legacy_ephemeral", "S", "", "", 5)
    assert CC.parse_create_subject("$JS.API.CONSUMER.CREATE.S.C") == CC.CreateSubject("named", "S", "C", "", 6)
    assert CC.parse_create_subject("$JS.API.CONSUMER.CREATE.S.C.a.*") == CC.CreateSubject("named", "S", "C", "a.*", 8)
    assert CC.parse_create_subject("$JS.API.CONSUMER.DURABLE.CREATE.S.C") == CC.CreateSubject(
        "legacy_durable", "S", "C", "", 7
    )
    assert CC.parse_create_subject("$JS.API.CONSUMER.CREATE") is None
    assert CC.parse_create_subject("$JS.API.STREAM.CREATE.S") is None


SUBJECT_ERRORS = [
    # (subject, body, observed (code, err_code, description))
    (API + "S.m1", req({}, stream="X"), (400, 10056, "stream name in subject does not match request")),
    (API + "S.m2", {"config": {}}, (400, 10056, "stream name in subject does not match request")),
    (API + "S.j13", b"", (400, 10056, "stream name in subject does not match request")),
    (API + "S.a/b", req({}, stream="X"), (400, 10056, "stream name in subject does not match request")),
    (API + "S.a/b", req({}), (400, 10127, "Consumer name can not contain path separators")),
    (API + "S.a\\b", req({"durable_name": "zz"}), (400, 10127, "Consumer name can not contain path separators")),
    (API + "S", req({"name": "m/6"}), (400, 10127, "Consumer name can not contain path separators")),
    (API + "S.m3", req({"durable_name": "other"}),
     (400, 10017, "consumer name in subject does not match durable name in request")),
    (API + "S.ab", req({"durable_name": "zz", "num_replicas": 3}),
     (400, 10017, "consumer name in subject does not match durable name in request")),
    (API + "S", req({"durable_name": "x", "num_replicas": 3}),
     (400, 10020, "consumer expected to be ephemeral but a durable name was set in request")),
    (API + "S.m10.s.a", req({"durable_name": "m10", "filter_subject": "s.b"}),
     (400, 10131, "Consumer create request did not match filtered subject from create subject")),
    (API + "S.m12.s.a", req({"durable_name": "m12"}),
     (400, 10131, "Consumer create request did not match filtered subject from create subject")),
    (API + "S.ab.s.x", req({"filter_subject": "q", "num_replicas": 3}),
     (400, 10131, "Consumer create request did not match filtered subject from create subject")),
    (API + "S.m11.s.a", req({"durable_name": "m11", "filter_subjects": ["s.a"]}),
     (400, 10137, "consumer with multiple subject filters cannot use subject based API")),
    (API + "S.ab.s.x", req({"filter_subjects": ["q"], "filter_subject": "q"}),
     (400, 10137, "consumer with multiple subject filters cannot use subject based API")),
    (API + "S.m13", req({"num_replicas": 3}), (500, 10074, "replicas > 1 not supported in non-clustered mode")),
    (API + "NOPE.m17", req({"num_replicas": 3}, stream="NOPE"),
     (500, 10074, "replicas > 1 not supported in non-clustered mode")),
    (API + "NOPE.m16", req({}, stream="NOPE"), (404, 10059, "stream not found")),
    ("$JS.API.CONSUMER.DURABLE.CREATE.S.dd2", req({}),
     (400, 10018, "consumer expected to be durable but a durable name was not set")),
    ("$JS.API.CONSUMER.DURABLE.CREATE.S.dd3", req({"durable_name": "zz"}),
     (400, 10017, "consumer name in subject does not match durable name in request")),
]


@pytest.mark.parametrize("subject,body,expected", SUBJECT_ERRORS)
def test_subject_errors(subject, body, expected):
    assert PlanStream().error(subject, body) == expected


def test_subject_name_wins_and_filter_form():
    eng = PlanStream()
    name, cfg = eng.create(API + "S.m7", req({"name": "zzz"}))
    assert (name, cfg.name) == ("m7", "m7")
    name, cfg = eng.create("$JS.API.CONSUMER.DURABLE.CREATE.S.dd4", req({"durable_name": "dd4", "name": "other"}))
    assert (name, cfg.name, cfg.durable_name) == ("dd4", "dd4", "dd4")
    name, cfg = eng.create(API + "S.m9.s.a", req({"durable_name": "m9", "filter_subject": "s.a"}))
    assert cfg.filter_subject == "s.a"
    name, cfg = eng.create(API + "S", req({"name": "m5"}))
    assert (name, cfg.name) == ("m5", "m5")
    with pytest.raises(E.ApiError) as ei:
        CC.apply_create_subject(CC.CreateSubject("legacy_durable", "S", "C", "", 8), CC.ConsumerConfig(), "S")
    assert ei.value.err_code == 10016


# ------------------------------------------------------------------------------------------
# validation (checkConsumerCfg and defaults), observed codes and texts
# ------------------------------------------------------------------------------------------

T = "2026-01-02T03:04:05.123456789+01:00"
INVALID_NAME = "consumer name can not contain '.', '*', '>', '\\', '/'"

VALIDATION_ERRORS = [
    # (stream kwargs, config, pedantic, observed (code, err_code, description))
    ({}, {"name": "m.6"}, False, (500, 10052, INVALID_NAME)),
    ({}, {"name": "m 6"}, False, (500, 10052, INVALID_NAME)),
    ({}, {"num_replicas": -1}, False, (400, 10133, "replicas count cannot be negative")),
    ({}, {"num_replicas": -1, "ack_wait": -1}, False, (400, 10133, "replicas count cannot be negative")),
    ({}, {"ack_wait": -1, "backoff": [-1]}, False, (400, 10184, "consumer backoff needs to be positive")),
    ({}, {"ack_policy": "explicit", "backoff": [1000000000, -2]}, False, (400, 10184, "consumer backoff needs to be positive")),
    ({}, {"ack_policy": "explicit", "ack_wait": -1}, False, (400, 10183, "consumer ack wait needs to be positive")),
    ({}, {"ack_policy": "flow_control"}, False, (400, 10218, "flow control ack policy requires a push based consumer")),
    ({}, {"ack_policy": "flow_control", "deliver_subject": "dfc7"}, True,
     (400, 10219, "flow control ack policy requires flow control")),
    ({}, {"ack_policy": "flow_control", "deliver_subject": "dfc3", "ack_wait": 5}, False,
     (400, 10221, "flow control ack policy requires unset ack wait")),
    ({}, {"ack_policy": "flow_control", "deliver_subject": "dfc5", "backoff": [5]}, False,
     (400, 10221, "flow control ack policy requires unset ack wait")),
    ({}, {"ack_policy": "flow_control", "deliver_subject": "dfc4", "max_deliver": 5}, False,
     (400, 10222, "flow control ack policy requires unset max deliver")),
    ({}, {"ack_policy": "flow_control", "deliver_subject": "dfc6", "max_ack_pending": -1}, False,
     (400, 10220, "flow control ack policy requires max ack pending")),
    ({}, {"ack_policy": "explicit", "backoff": [1000000000, 2000000000], "max_deliver": 1}, False,
     (400, 10116, "max deliver is required to be > length of backoff values")),
    ({}, {"description": "x" * 5000, "backoff": [1, 2], "max_deliver": 1}, False,
     (400, 10116, "max deliver is required to be > length of backoff values")),
    ({}, {"description": "x" * 4097}, False, (400, 10107, "consumer description is too long, maximum allowed is 4096")),
    # push
    ({}, {"deliver_subject": "a.*"}, False, (400, 10079, "consumer deliver subject has wildcards")),
    ({}, {"deliver_subject": "a.>"}, False, (400, 10079, "consumer deliver subject has wildcards")),
    ({}, {"deliver_subject": "d.*", "rate_limit_bps": 1, "max_waiting": 4}, False,
     (400, 10079, "consumer deliver subject has wildcards")),
    ({}, {"deliver_subject": "a..b"}, False, (400, 10112, "invalid push consumer deliver subject")),
    ({}, {"deliver_subject": "a b"}, False, (400, 10112, "invalid push consumer deliver subject")),
    ({}, {"deliver_subject": "s.x"}, False, (400, 10081, "consumer deliver subject forms a cycle")),
    ({}, {"deliver_subject": "dq", "max_waiting": 5}, False, (400, 10080, "consumer in push mode can not set max waiting")),
    ({}, {"deliver_subject": "dq", "max_ack_pending": 5}, False,
     (400, 10082, "consumer requires ack policy for max ack pending")),
    ({"consumer_limits": {"max_ack_pending": 50}}, {"deliver_subject": "dlv.x6"}, False,
     (400, 10082, "consumer requires ack policy for max ack pending")),
    ({}, {"deliver_subject": "dq", "idle_heartbeat": 50000000}, False,
     (400, 10083, "consumer idle heartbeat needs to be >= 100ms")),
    ({}, {"deliver_subject": "dq3", "flow_control": True}, False,
     (400, 10108, "consumer with flow control also needs heartbeats")),
    ({}, {"flow_control": True, "deliver_subject": "ee.d2", "direct": True}, False,
     (400, 10108, "consumer with flow control also needs heartbeats")),
    # pull
    ({"retention": "workqueue"}, {}, False,
     (400, 10084, "consumer in pull mode requires explicit ack policy on workqueue stream")),
    ({}, {"rate_limit_bps": 100}, False, (400, 10086, "consumer in pull mode can not have rate limit set")),
    ({}, {"idle_heartbeat": 1000000000}, False, (400, 10088, "consumer idle heartbeat requires a push based consumer")),
    ({}, {"flow_control": True, "idle_heartbeat": 1000000000}, False,
     (400, 10088, "consumer idle heartbeat requires a push based consumer")),
    ({}, {"flow_control": True}, False, (400, 10089, "consumer flow control requires a push based consumer")),
    ({}, {"max_batch": 7, "max_expires": 500000, "max_bytes": 1000}, False,
     (400, 10115, "consumer max request expires needs to be >= 1ms")),
    # limits from the stream
    ({"consumer_limits": {"max_ack_pending": 50}}, {"max_ack_pending": 51, "ack_policy": "explicit"}, False,
     (400, 10121, "consumer max ack pending exceeds system limit of 50")),
    ({"consumer_limits": {"inactive_threshold": 10000000000}}, {"inactive_threshold": 11000000000}, False,
     (400, 10153, "consumer inactive threshold exceeds system limit of 10s")),
    # direct
    ({}, {"direct": True}, False, (400, 10090, "consumer direct requires a push based consumer")),
    ({}, {"direct": True, "deliver_subject": "ddir", "durable_name": "c"}, False,
     (400, 10091, "consumer direct requires an ephemeral consumer")),
    # filters
    ({}, {"filter_subject": "s.a", "filter_subjects": ["s.b"]}, False,
     (400, 10136, "consumer cannot have both FilterSubject and FilterSubjects specified")),
    ({}, {"filter_subject": "s..a"}, False, (500, 10052, "invalid subject")),
    ({}, {"filter_subject": " "}, False, (500, 10052, "invalid subject")),
    ({}, {"deliver_policy": "by_start_sequence", "filter_subject": "a..b"}, False, (500, 10052, "invalid subject")),
    ({}, {"filter_subjects": [""]}, False, (400, 10139, "consumer filter in FilterSubjects cannot be empty")),
    ({}, {"filter_subjects": ["s.a", ""]}, False, (400, 10139, "consumer filter in FilterSubjects cannot be empty")),
    ({}, {"filter_subjects": ["s.a", "s.a"]}, False, (400, 10138, "consumer subject filters cannot overlap")),
    ({}, {"filter_subjects": ["s.a", "s.*"]}, False, (400, 10138, "consumer subject filters cannot overlap")),
    ({}, {"filter_subjects": ["s.a", "a b"]}, False, (500, 10052, "invalid subject")),
    # deliver policy options
    ({}, {"deliver_policy": "all", "opt_start_seq": 5}, False,
     (400, 10094, "consumer delivery policy is deliver all, but optional start sequence is also set")),
    ({}, {"deliver_policy": "all", "opt_start_time": T}, False,
     (400, 10094, "consumer delivery policy is deliver all, but optional start time is also set")),
    ({}, {"deliver_policy": "last", "opt_start_seq": 5}, False,
     (400, 10094, "consumer delivery policy is deliver last, but optional start sequence is also set")),
    ({}, {"deliver_policy": "last", "opt_start_time": T}, False,
     (400, 10094, "consumer delivery policy is deliver last, but optional start time is also set")),
    ({}, {"deliver_policy": "new", "opt_start_seq": 5}, False,
     (400, 10094, "consumer delivery policy is deliver new, but optional start sequence is also set")),
    ({}, {"deliver_policy": "new", "opt_start_time": T}, False,
     (400, 10094, "consumer delivery policy is deliver new, but optional start time is also set")),
    ({}, {"deliver_policy": "last_per_subject"}, False,
     (400, 10094, "consumer delivery policy is deliver last per subject, but optional filter subject is not set")),
    ({}, {"deliver_policy": "last_per_subject", "opt_start_seq": 1}, False,
     (400, 10094, "consumer delivery policy is deliver last per subject, but optional start sequence is also set")),
    ({}, {"deliver_policy": "last_per_subject", "opt_start_time": T}, False,
     (400, 10094, "consumer delivery policy is deliver last per subject, but optional start time is also set")),
    ({}, {"deliver_policy": "by_start_sequence"}, False,
     (400, 10094, "consumer delivery policy is deliver by start sequence, but optional start sequence is not set")),
    ({}, {"deliver_policy": "by_start_sequence", "sample_freq": "x"}, False,
     (400, 10094, "consumer delivery policy is deliver by start sequence, but optional start sequence is not set")),
    ({}, {"deliver_policy": "by_start_sequence", "opt_start_seq": 3, "opt_start_time": T}, False,
     (400, 10094, "consumer delivery policy is deliver by start sequence, but optional start time is also set")),
    ({}, {"deliver_policy": "by_start_time"}, False,
     (400, 10094, "consumer delivery policy is deliver by start time, but optional start time is not set")),
    ({}, {"deliver_policy": "by_start_time", "opt_start_time": T, "opt_start_seq": 2}, False,
     (400, 10094, "consumer delivery policy is deliver by start time, but optional start start sequence is also set")),
    # sampling
    ({}, {"sample_freq": "abc"}, False,
     (400, 10095, 'failed to parse consumer sampling configuration: strconv.Atoi: parsing "abc": invalid syntax')),
    ({}, {"sample_freq": "-5"}, False, (400, 10095, "failed to parse consumer sampling configuration: <nil>")),
    ({}, {"sample_freq": "%"}, False,
     (400, 10095, 'failed to parse consumer sampling configuration: strconv.Atoi: parsing "": invalid syntax')),
    ({}, {"sample_freq": "99999999999999999999%"}, False,
     (400, 10095, ('failed to parse consumer sampling configuration: strconv.Atoi: parsing "99999999999999999999": '
                  "value out of range"))),
    ({}, {"sample_freq": "5%%"}, False,
     (400, 10095, 'failed to parse consumer sampling configuration: strconv.Atoi: parsing "5%": invalid syntax')),
    ({}, {"sample_freq": " 5"}, False,
     (400, 10095, 'failed to parse consumer sampling configuration: strconv.Atoi: parsing " 5": invalid syntax')),
    ({}, {"sample_freq": "x", "flow_control": True, "deliver_subject": "ee.d"}, False,
     (400, 10095, 'failed to parse consumer sampling configuration: strconv.Atoi: parsing "x": invalid syntax')),
    # metadata: 128 KiB including the "_nats.req.level":"0" the server adds first
    ({}, {"metadata": {"a": "x" * (128 * 1024 - 16)}}, False,
     (400, 10135, "consumer metadata exceeds maximum size of 128KB")),
    ({}, {"metadata": {"a": "x" * 200000}, "priority_groups": ["A"]}, False,
     (400, 10135, "consumer metadata exceeds maximum size of 128KB")),
    # priority groups
    ({}, {"priority_policy": "overflow"}, False,
     (400, 10159, "Setting PriorityPolicy requires at least one PriorityGroup to be set")),
    ({}, {"priority_policy": "overflow", "priority_groups": [""]}, False,
     (400, 10161, "Group name cannot be an empty string")),
    ({}, {"priority_policy": "overflow", "priority_groups": ["a.b"]}, False,
     (400, 10162, "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters")),
    ({}, {"priority_policy": "overflow", "priority_groups": ["x" * 17]}, False,
     (400, 10162, "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters")),
    ({}, {"priority_policy": "overflow", "priority_groups": ["A"], "deliver_subject": "dpg"}, False,
     (400, 10178, "priority groups can not be used with push consumers")),
    ({}, {"priority_policy": "none", "priority_groups": ["A"]}, False,
     (400, 10196, "consumer can not have priority groups when policy is none")),
    ({}, {"priority_groups": ["A"]}, False, (400, 10196, "consumer can not have priority groups when policy is none")),
    ({}, {"priority_timeout": 5}, False, (400, 10197, "PinnedTTL cannot be set when PriorityPolicy is none")),
    # pedantic mode
    ({}, {"max_deliver": -5}, True, (400, 10157, "pedantic mode: max_deliver must be set to -1")),
    ({}, {"max_waiting": -5}, True, (400, 10157, "pedantic mode: max_waiting must not be negative")),
    ({}, {"max_ack_pending": -5}, True, (400, 10157, "pedantic mode: max_ack_pending must be set to -1")),
    ({}, {"max_batch": -5}, True, (400, 10157, "pedantic mode: max_batch must not be negative")),
    ({}, {"max_expires": -5}, True, (400, 10157, "pedantic mode: max_expires must not be negative")),
    ({}, {"max_bytes": -5}, True, (400, 10157, "pedantic mode: max_bytes must not be negative")),
    ({}, {"idle_heartbeat": -5}, True, (400, 10157, "pedantic mode: idle_heartbeat must not be negative")),
    ({}, {"inactive_threshold": -5}, True, (400, 10157, "pedantic mode: inactive_threshold must not be negative")),
    ({}, {"priority_timeout": -5}, True, (400, 10157, "pedantic mode: priority_timeout must not be negative")),
    ({}, {"ack_policy": "explicit", "backoff": [1000000000]}, True,
     (400, 10157, "pedantic mode: first backoff value has to equal batch AckWait")),
    ({"consumer_limits": {"max_ack_pending": 50}}, {}, True,
     (400, 10157, "pedantic mode: max_ack_pending must be set if it's configured in stream limits")),
    ({"consumer_limits": {"inactive_threshold": 10000000000}}, {}, True,
     (400, 10157, "pedantic mode: inactive_threshold must be set if it's configured in stream limits")),
    # work queue (new consumers)
    ({"retention": "workqueue"}, {"ack_policy": "all"}, False, (400, 10098, "workqueue stream requires explicit ack")),
    ({"retention": "workqueue"}, {"ack_policy": "none", "deliver_subject": "dw"}, False,
     (400, 10098, "workqueue stream requires explicit ack")),
    ({"retention": "workqueue"}, {"ack_policy": "explicit", "deliver_policy": "new"}, False,
     (400, 10101, "consumer must be deliver all on workqueue stream")),
    # lengths are in bytes
    ({}, {"description": "é" * 2049}, False, (400, 10107, "consumer description is too long, maximum allowed is 4096")),
    ({}, {"metadata": {"k": "é" * 65530}}, False, (400, 10135, "consumer metadata exceeds maximum size of 128KB")),
    ({}, {"sample_freq": "\u0663"}, False,
     (400, 10095, 'failed to parse consumer sampling configuration: strconv.Atoi: parsing "\u0663": invalid syntax')),
    ({}, {"priority_policy": "overflow", "priority_groups": ["A\n"]}, False,
     (400, 10162, "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters")),
]


@pytest.mark.parametrize("stream_kw,cfg,pedantic,expected", VALIDATION_ERRORS)
def test_validation_errors(stream_kw, cfg, pedantic, expected):
    eng = PlanStream(**stream_kw)
    body = req(cfg)
    if pedantic:
        body["pedantic"] = True
    subject = API + "S" + ("." + cfg["durable_name"] if "durable_name" in cfg else ".c")
    if "name" in cfg:
        subject = API + "S"
    assert eng.error(subject, body) == expected


ACCEPTED = [
    # configs the real server accepted (documented restrictions that do NOT exist in 2.15.1)
    # and the "config" of its reply (observed)
    # filter outside the stream's subjects
    ({}, {"filter_subject": "zz"},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"filter_subject":"zz","replay_policy":"instant","max_waiting":512,'
      '"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}")),
    # deliver_group on a pull consumer
    ({}, {"deliver_group": "g"},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","max_waiting":512,"deliver_group":"g",'
      '"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}")),
    # overlapping but neither a subset of the other
    ({}, {"filter_subjects": ["s.*.c", "s.b.*"]},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"filter_subjects":["s.*.c","s.b.*"],"replay_policy":"instant","max_waiting":512,'
      '"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}")),
    ({}, {"filter_subjects": ["s.>", "x.>"]},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"filter_subjects":["s.\\u003e","x.\\u003e"],"replay_policy":"instant","max_waiting":512,'
      '"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}")),
    # no upper bound
    ({}, {"sample_freq": "150"},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","sample_freq":"150","max_waiting":512,'
      '"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}")),
    ({}, {"sample_freq": "+5%"},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","sample_freq":"+5%","max_waiting":512,'
      '"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}")),
    # not inside "s.>"
    ({}, {"deliver_subject": "s"},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","deliver_subject":"s","inactive_threshold":5000000000,'
      '"num_replicas":0,' + MD0 + "}")),
    # clamped to 0 first
    ({}, {"deliver_subject": "dq", "max_waiting": -5},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","deliver_subject":"dq","inactive_threshold":5000000000,'
      '"num_replicas":0,' + MD0 + "}")),
    ({}, {"deliver_subject": "dq", "max_ack_pending": -1},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","max_ack_pending":-1,"deliver_subject":"dq",'
      '"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}")),
    ({}, {"max_expires": 1000000},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","max_waiting":512,"max_expires":1000000,'
      '"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}")),
    # pull-only limits ignored on push
    ({}, {"deliver_subject": "dq5", "max_expires": 5},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","max_expires":5,"deliver_subject":"dq5",'
      '"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}")),
    ({}, {"ack_policy": "none", "backoff": [3000000000]},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","ack_wait":3000000000,'
      '"max_deliver":-1,"backoff":[3000000000],"replay_policy":"instant","max_waiting":512,'
      '"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}")),
    ({}, {"max_deliver": 1, "ack_policy": "explicit", "backoff": [5]},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"explicit","ack_wait":5,'
      '"max_deliver":1,"backoff":[5],"replay_policy":"instant","max_waiting":512,'
      '"max_ack_pending":1000,"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}")),
    ({}, {"deliver_policy": "by_start_time", "opt_start_time": "0001-01-01T00:00:00Z"},
     ('{"name":"ok","deliver_policy":"by_start_time","opt_start_time":"0001-01-01T00:00:00Z",'
      '"ack_policy":"none","max_deliver":-1,"replay_policy":"instant","max_waiting":512,'
      '"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}")),
    ({}, {"sourcing": True},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","max_waiting":512,"inactive_threshold":5000000000,'
      '"num_replicas":0,"sourcing":true,' + MD0 + "}")),
    ({}, {"direct": True, "deliver_subject": "ddir2"},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","deliver_subject":"ddir2","inactive_threshold":5000000000,'
      '"num_replicas":0,"direct":true,' + MD0 + "}")),
    ({}, {"metadata": {"a": "x" * (128 * 1024 - 1 - 16)}},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","max_waiting":512,"inactive_threshold":5000000000,'
      '"num_replicas":0,"metadata":{"_nats.level":"5","_nats.req.level":"0",'
      '"_nats.ver":"2.15.1","a":"'
      + 'x' * 131055
      + '"}}')),
    ({"retention": "interest"}, {"num_replicas": 1},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","max_waiting":512,"inactive_threshold":5000000000,'
      '"num_replicas":1,' + MD0 + "}")),
    ({}, {"ack_policy": "flow_control", "deliver_subject": "dfc8", "flow_control": True,
          "idle_heartbeat": 1000000000},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"flow_control","max_deliver":-1,'
      '"replay_policy":"instant","max_ack_pending":1000,"flow_control":true,'
      '"deliver_subject":"dfc8","idle_heartbeat":1000000000,"inactive_threshold":5000000000,'
      '"num_replicas":0,"metadata":{"_nats.level":"5","_nats.req.level":"4",'
      '"_nats.ver":"2.15.1"}}')),
    ({}, {"description": "é" * 2048},
     ('{"name":"ok","description":"'
      + 'é' * 2048
      + '","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","max_waiting":512,"inactive_threshold":5000000000,'
      '"num_replicas":0,"metadata":{"_nats.level":"5","_nats.req.level":"0",'
      '"_nats.ver":"2.15.1"}}')),
    ({}, {"sample_freq": "007%"},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","sample_freq":"007%","max_waiting":512,'
      '"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}")),
    ({}, {"sample_freq": "-0"},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","sample_freq":"-0","max_waiting":512,'
      '"inactive_threshold":5000000000,"num_replicas":0,' + MD0 + "}")),
    ({}, {"priority_policy": "overflow", "priority_groups": ["a-b_c/d=e"]},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","max_waiting":512,"inactive_threshold":5000000000,'
      '"num_replicas":0,"metadata":{"_nats.level":"5","_nats.req.level":"1",'
      '"_nats.ver":"2.15.1"},"priority_groups":["a-b_c/d=e"],"priority_policy":"overflow"}')),
    ({}, {"priority_policy": "overflow", "priority_groups": ["A", "A"]},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","max_waiting":512,"inactive_threshold":5000000000,'
      '"num_replicas":0,"metadata":{"_nats.level":"5","_nats.req.level":"1",'
      '"_nats.ver":"2.15.1"},"priority_groups":["A","A"],"priority_policy":"overflow"}')),
    ({"consumer_limits": {"max_ack_pending": 50, "inactive_threshold": 10000000000}},
     {"max_ack_pending": 5, "inactive_threshold": 2000000000},
     ('{"name":"ok","deliver_policy":"all","ack_policy":"none","max_deliver":-1,'
      '"replay_policy":"instant","max_waiting":512,"max_ack_pending":5,'
      '"inactive_threshold":2000000000,"num_replicas":0,' + MD0 + "}")),
]


@pytest.mark.parametrize("stream_kw,cfg,expected", ACCEPTED)
def test_accepted(stream_kw, cfg, expected):
    assert PlanStream(**stream_kw).config_json(API + "S.ok", req(cfg)).decode() == expected


def test_flow_control_ack_heartbeat_must_be_1s():
    # pedantic keeps the given values, so a 2 s heartbeat reaches the 1 s check (observed)
    eng = PlanStream()
    cfg = {"ack_policy": "flow_control", "deliver_subject": "d", "flow_control": True, "idle_heartbeat": 2000000000}
    assert eng.error(API + "S.fc", req(cfg, pedantic=True)) == (
        500, 10052, "flow control ack policy heartbeat needs to be 1s")
    # not pedantic: overwritten with flow_control + 1 s (observed)
    _, out = eng.create(API + "S.fc", req(cfg))
    assert (out.flow_control, out.idle_heartbeat) == (True, 1_000_000_000)


def test_required_api_level():
    assert CC.required_api_level(CC.ConsumerConfig()) == 0
    assert CC.required_api_level(CC.ConsumerConfig(pause_until=5)) == 1
    assert CC.required_api_level(CC.ConsumerConfig(pause_until=0)) == 0
    assert CC.required_api_level(CC.ConsumerConfig(priority_timeout=-5)) == 1
    assert CC.required_api_level(CC.ConsumerConfig(ack_policy="flow_control", priority_policy="overflow")) == 4


# ------------------------------------------------------------------------------------------
# existing consumers: action create / update rules
# ------------------------------------------------------------------------------------------


def _explicit(**kw) -> dict:
    d = {"durable_name": "u1", "ack_policy": "explicit"}
    d.update(kw)
    return d


UPDATE_ERRORS = [
    (_explicit(deliver_policy="new"), (500, 10012, "deliver policy can not be updated")),
    (_explicit(mem_storage=True), (500, 10012, "storage type can not be updated")),
    (_explicit(deliver_policy="by_start_sequence", opt_start_seq=4), (500, 10012, "deliver policy can not be updated")),
    (_explicit(ack_policy="all"), (500, 10012, "ack policy can not be updated")),
    (_explicit(replay_policy="original"), (500, 10012, "replay policy can not be updated")),
    (_explicit(deliver_subject="dd.u1"), (500, 10012, "can not update pull consumer to push based")),
    (_explicit(max_waiting=9), (500, 10012, "max waiting can not be updated")),
    (_explicit(max_deliver=2, backoff=[1, 2, 3]), (400, 10116, "max deliver is required to be > length of backoff values")),
    (_explicit(direct=True), (400, 10090, "consumer direct requires a push based consumer")),  # validation first
    (_explicit(sourcing=True), (500, 10012, "sourcing can not be updated")),
    (_explicit(description="x"), (400, 10148, "consumer already exists"), "create"),
]


@pytest.mark.parametrize("case", UPDATE_ERRORS, ids=[str(i) for i in range(len(UPDATE_ERRORS))])
def test_update_errors(case):
    cfg, expected = case[0], case[1]
    eng = PlanStream()
    eng.create(API + "S.u1", req(_explicit()))
    body = req(cfg, action=case[2]) if len(case) > 2 else req(cfg)
    assert eng.error(API + "S.u1", body) == expected


def test_allowed_updates_and_idempotent_create():
    eng = PlanStream()
    _, first = eng.create(API + "S.u1", req(_explicit()))
    # the same config again (default action, then "create"): accepted, nothing changes
    assert eng.create(API + "S.u1", req(_explicit())) == ("u1", first)
    assert eng.create(API + "S.u1", req(_explicit(), action="create")) == ("u1", first)
    _, cfg = eng.create(API + "S.u1", req(_explicit(description="x"), action="update"))
    assert cfg.description == "x" and dataclasses.replace(cfg, description="") == first
    _, cfg = eng.create(API + "S.u1", req(_explicit(
        description="x", max_deliver=3, ack_wait=2000000000, backoff=[2000000000, 3000000000], filter_subject="s.q",
        sample_freq="10", max_ack_pending=7, headers_only=True, max_batch=3, max_expires=5000000, max_bytes=9,
        inactive_threshold=9000000000, metadata={"a": "b"})))
    assert (cfg.max_deliver, cfg.ack_wait, cfg.filter_subject, cfg.max_ack_pending) == (3, 2000000000, "s.q", 7)
    assert (cfg.backoff, cfg.sample_freq, cfg.headers_only, cfg.max_batch, cfg.max_expires, cfg.max_bytes,
            cfg.inactive_threshold, cfg.metadata["a"]) == (
        [2000000000, 3000000000], "10", True, 3, 5000000, 9, 9000000000, "b")
    # each update replaces the whole config (observed: the earlier update's fields are gone)
    _, cfg = eng.create(API + "S.u1", req(_explicit(priority_policy="overflow", priority_groups=["G"])))
    assert (cfg.priority_policy, cfg.priority_groups, cfg.description, cfg.max_deliver) == (
        "overflow", ["G"], "", -1)
    assert cfg.metadata["_nats.req.level"] == "1"
    _, cfg = eng.create(API + "S.u1", req(_explicit(num_replicas=1)))
    assert (cfg.num_replicas, cfg.priority_policy) == (1, "none")
    _, cfg = eng.create(API + "S.u1", req(_explicit(filter_subjects=["s.a", "s.b"])))
    assert (cfg.filter_subjects, cfg.num_replicas) == (["s.a", "s.b"], 0)
    # pause_until on an existing consumer is replaced by the stored one (ignored), also for "create"
    _, cfg = eng.create(API + "S.u1", req(_explicit(pause_until="2099-01-01T00:00:00Z")))
    assert cfg.pause_until is None and cfg == first
    _, cfg = eng.create(API + "S.u1", req(_explicit(pause_until="2099-01-01T00:00:00Z"), action="create"))
    assert cfg.pause_until is None and cfg == first


def test_start_time_compared_by_instant_but_create_needs_same_zone():
    eng = PlanStream()
    a = {"durable_name": "t1", "deliver_policy": "by_start_time", "opt_start_time": T}
    b = dict(a, opt_start_time="2026-01-02T02:04:05.123456789Z")  # same instant, other zone
    eng.create(API + "S.t1", req(a))
    _, cfg = eng.create(API + "S.t1", req(b))  # allowed update (Equal), zone now Z
    assert J.go_time(cfg.opt_start_time) == "2026-01-02T02:04:05.123456789Z"
    eng.create(API + "S.t1", req(b, action="create"))
    assert eng.error(API + "S.t1", req(a, action="create")) == (400, 10148, "consumer already exists")
    assert eng.error(API + "S.t1", req(dict(a, opt_start_time="2026-01-02T03:04:06Z"))) == (
        500, 10012, "start time can not be updated")


def test_push_updates():
    eng = PlanStream()
    base = {"durable_name": "p1", "deliver_subject": "dp1", "idle_heartbeat": 1000000000, "flow_control": True}
    eng.create(API + "S.p1", req(base))
    # nobody listens on dp1: the deliver subject may change
    _, cfg = eng.create(API + "S.p1", req(dict(base, deliver_subject="dp1b")))
    assert cfg.deliver_subject == "dp1b"
    base["deliver_subject"] = "dp1b"
    assert eng.error(API + "S.p1", req(dict(base, idle_heartbeat=2000000000))) == (
        500, 10012, "heart beats can not be updated")
    assert eng.error(API + "S.p1", req({k: v for k, v in base.items() if k != "flow_control"})) == (
        500, 10012, "flow control can not be updated")
    assert eng.error(API + "S.p1", req({k: v for k, v in base.items() if k != "deliver_subject"})) == (
        400, 10088, "consumer idle heartbeat requires a push based consumer")
    _, cfg = eng.create(API + "S.p1", req(dict(base, rate_limit_bps=1000, deliver_group="gg")))
    assert (cfg.rate_limit_bps, cfg.deliver_group, cfg.deliver_subject) == (1000, "gg", "dp1b")
    assert eng.error(API + "S.p1", req(dict(base, max_waiting=1))) == (
        400, 10080, "consumer in push mode can not set max waiting")
    # the old deliver subject still has a subscriber (observed with a live subscription)
    eng.consumers["p1"].active = True
    assert eng.error(API + "S.p1", req(dict(base, deliver_subject="other"))) == (
        400, 10013, "consumer name already in use")


def test_push_to_pull_text():
    old = CC.ConsumerConfig(durable_name="p", deliver_subject="d", max_deliver=-1)
    new = CC.ConsumerConfig(durable_name="p", max_deliver=-1)
    with pytest.raises(E.ApiError) as ei:
        CC.check_update(old, new)
    assert ei.value == E.consumer_create("can not update push consumer to pull based")


def test_ephemeral_threshold_restamped_from_the_stored_consumer():
    eng = PlanStream()
    eng.create(API + "S.e1", req({}))
    eng.create(API + "S.e1", req({}))
    # stored config has the 5 s stamp, the new one does not → "create" sees a difference
    assert eng.error(API + "S.e1", req({}, action="create")) == (400, 10148, "consumer already exists")
    eng.create(API + "S.e1", req({"inactive_threshold": 5000000000}, action="create"))
    _, cfg = eng.create(API + "S.e1", req({"inactive_threshold": 8000000000}))
    assert cfg.inactive_threshold == 8000000000
    _, cfg = eng.create(API + "S.e1", req({}))
    assert cfg.inactive_threshold == 5000000000
    # an ephemeral that gains durable_name keeps 5 s (observed)
    _, cfg = eng.create(API + "S.e1", req({"durable_name": "e1"}))
    assert (cfg.durable_name, cfg.inactive_threshold) == ("e1", 5000000000)
    # a durable re-created without durable_name gets no threshold (observed)
    eng.create(API + "S.d9", req({"durable_name": "d9"}))
    assert eng.config_json(API + "S.d9", req({})) == (
        b'{"name":"d9","deliver_policy":"all","ack_policy":"none","max_deliver":-1,"replay_policy":"instant",'
        b'"max_waiting":512,"num_replicas":0,' + MD0.encode() + b"}"
    )


def test_create_action_metadata_rules():
    eng = PlanStream()
    _, stored = eng.create(API + "S.kk", req({"durable_name": "kk", "metadata": {"_nats.req.level": "3"},
                                              "pause_until": "2099-01-01T00:00:00Z"}))
    assert stored.metadata == {"_nats.req.level": "1"}  # the server's own level replaces the given one
    # "create" of the same config: the server's metadata and the stored pause_until are not a
    # difference (observed: the reply shows the stored consumer, pause_until included)
    assert eng.create(API + "S.kk", req({"durable_name": "kk"}, action="create")) == ("kk", stored)
    assert eng.create(API + "S.kk", req({"durable_name": "kk", "metadata": {}}, action="create")) == ("kk", stored)
    assert eng.error(API + "S.kk", req({"durable_name": "kk", "metadata": {"x": "y"}}, action="create")) == (
        400, 10148, "consumer already exists")
    assert eng.error(API + "S.zz", req({}, action="update")) == (400, 10149, "consumer does not exist")


# ------------------------------------------------------------------------------------------
# live-state checks: max consumers, work queues, names
# ------------------------------------------------------------------------------------------


def test_max_consumers():
    eng = PlanStream(max_consumers=2)
    eng.create(API + "S.a", req({"durable_name": "a"}))
    eng.create(API + "S.b", req({"durable_name": "b"}))
    assert eng.error(API + "S.c", req({"durable_name": "c"})) == (400, 10026, "maximum consumers limit reached")
    # an update is not a new consumer: not refused at the limit
    assert eng.create(API + "S.a", req({"durable_name": "a", "description": "x"}))[1].description == "x"


def test_server_and_account_limits():
    """The jetstream limits (max_ack_pending, max_request_batch: a pull consumer's defaults and
    maxima) and the account's max_consumers, as conformance/test_js_limits.py and
    test_js_accounts.py observe them on both servers."""
    eng = PlanStream(CreateLimits(server_max_ack_pending=100, server_max_request_batch=50,
                                  account_max_consumers=3))
    _, cfg = eng.create(API + "S.C", req({"durable_name": "C", "ack_policy": "explicit"}))
    assert (cfg.max_ack_pending, cfg.max_batch) == (100, 50)
    assert eng.error(API + "S.P", req({"durable_name": "P", "ack_policy": "explicit", "max_ack_pending": 101})) == (
        400, 10121, "consumer max ack pending exceeds system limit of 100")
    assert eng.error(API + "S.B", req({"durable_name": "B", "ack_policy": "explicit", "max_batch": 51})) == (
        400, 10125, "consumer max request batch exceeds server limit of 50")
    eng.create(API + "S.D", req({"durable_name": "D"}))
    # a sourcing consumer (a mirror's or source's) does not count against the limit
    eng.create(API + "S.M", req({"durable_name": "M", "sourcing": True}))
    eng.create(API + "S.E", req({"durable_name": "E"}))
    assert eng.error(API + "S.F", req({"durable_name": "F"})) == (400, 10026, "maximum consumers limit reached")


def test_sourcing_and_direct_consumers_are_left_out():
    """Not counted against max_consumers: consumers made with ``sourcing``; not compared for
    work-queue overlap: ``sourcing`` and ``direct`` ones (observed; conformance
    test_js_consumer_limits_skip_sourcing_and_direct)."""
    eng = PlanStream(max_consumers=2)
    for name, extra in (("a", {}), ("m", {"sourcing": True}), ("b", {})):
        eng.create(API + "S." + name, req({"durable_name": name, **extra}))
    assert eng.error(API + "S.c", req({"durable_name": "c"})) == (400, 10026, "maximum consumers limit reached")
    eng = PlanStream(retention="workqueue")
    eng.create(API + "S.m", req({"durable_name": "m", "ack_policy": "explicit", "sourcing": True}))
    eng.create(API + "S.dd", req({"name": "dd", "ack_policy": "explicit", "direct": True, "deliver_subject": "dx"}))
    _, cfg = eng.create(API + "S.w", req({"durable_name": "w", "ack_policy": "explicit"}))
    assert CC.filters_of(cfg) == []
    assert eng.error(API + "S.w2", req({"durable_name": "w2", "ack_policy": "explicit"})) == (
        400, 10099, "multiple non-filtered consumers not allowed on workqueue stream")


def test_workqueue_rules():
    eng = PlanStream(retention="workqueue")
    w = lambda name, **kw: req(dict({"durable_name": name, "ack_policy": "explicit"}, **kw))
    not_unique = (400, 10100, "filtered consumer not unique on workqueue stream")
    eng.create(API + "S.w1", w("w1", filter_subject="s.a.*"))
    assert eng.error(API + "S.w2", w("w2", filter_subject="s.*.b")) == not_unique
    eng.create(API + "S.w3", w("w3", filter_subject="s.b.>"))
    assert eng.error(API + "S.w4", w("w4", filter_subjects=["s.c", "s.a.x"])) == not_unique
    assert eng.error(API + "S.w5", w("w5")) == (
        400, 10099, "multiple non-filtered consumers not allowed on workqueue stream")
    assert eng.error(API + "S.w1", w("w1", filter_subject="s.b.c")) == not_unique
    assert eng.create(API + "S.w1", w("w1", filter_subject="s.a.c"))[1].filter_subject == "s.a.c"
    # an existing consumer may become unfiltered (observed)
    _, cfg = eng.create(API + "S.w1", w("w1"))
    assert CC.filters_of(cfg) == []
    # existing consumer: overlap is checked before the update rules / WQ ack rules
    assert eng.error(API + "S.w3", w("w3", filter_subject="s.b.>", deliver_policy="new")) == not_unique
    assert eng.error(API + "S.w3", w("w3", filter_subject="s.b.>", ack_policy="all")) == not_unique
    assert eng.error(API + "S.w3", w("w3", filter_subject="s.b.>", ack_policy="none")) == (
        400, 10084, "consumer in pull mode requires explicit ack policy on workqueue stream")
    assert eng.error(API + "S.w6", w("w6", filter_subject="s.z", num_replicas=1)) == not_unique


def test_names():
    eng = PlanStream()
    eng.create(API + "S." + "n" * 255, req({"durable_name": "n" * 255}))
    too_long = (400, 10102, "consumer name is too long, maximum allowed is 255")
    assert eng.error(API + "S." + "n" * 256, req({"durable_name": "n" * 256})) == too_long
    assert eng.error(API + "S." + "ö" * 128, req({"durable_name": "ö" * 128})) == too_long  # bytes
    store = (500, 10012, "error creating store for consumer")
    assert eng.error(API + "S." + "m" * 256, req({})) == store
    assert eng.error(API + "S." + "é" * 128, req({})) == store
    eng.create(API + "S." + "ü" * 127, req({}))
    eng.create(API + "S." + "q" * 256, req({"mem_storage": True}))
    PlanStream(storage="memory").create(API + "S." + "q" * 256, req({}))
    assert CC.assign_name(CC.ConsumerConfig(), taken=()) != ""


# ------------------------------------------------------------------------------------------
# ConsumerInfo
# ------------------------------------------------------------------------------------------


def _t(s: str) -> int:
    return J.parse_go_time(s)


def test_consumer_info_pull_with_activity():
    cfg = CC.finalize_new(CC.validate_and_default(
        CC.ConsumerConfig(durable_name="f", name="f", ack_policy="explicit"), make_stream()))
    info = CC.consumer_info_dict(
        stream_name="INF", name="f", created=_t("2026-11-21T07:48:39.76421068Z"), config=cfg,
        delivered=CC.sequence_info_dict(2, 2, _t("2026-11-21T07:48:39.767987164Z")),
        ack_floor=CC.sequence_info_dict(1, 1, _t("2026-11-21T07:48:39.768999502Z")),
        num_ack_pending=1, num_redelivered=0, num_waiting=0, num_pending=1, ts=_t("2026-11-21T07:48:39.769551692Z"))
    body = {"type": "io.nats.jetstream.api.v1.consumer_info_response", **info}
    assert J.dumps(body) == (
        b'{"type":"io.nats.jetstream.api.v1.consumer_info_response","stream_name":"INF","name":"f",'
        b'"created":"2026-11-21T07:48:39.76421068Z","config":{"durable_name":"f","name":"f","deliver_policy":"all",'
        b'"ack_policy":"explicit","ack_wait":30000000000,"max_deliver":-1,"replay_policy":"instant","max_waiting":512,'
        b'"max_ack_pending":1000,"num_replicas":0,"metadata":{"_nats.level":"5","_nats.req.level":"0",'
        b'"_nats.ver":"2.15.1"}},"delivered":{"consumer_seq":2,"stream_seq":2,'
        b'"last_active":"2026-11-21T07:48:39.767987164Z"},"ack_floor":{"consumer_seq":1,"stream_seq":1,'
        b'"last_active":"2026-11-21T07:48:39.768999502Z"},"num_ack_pending":1,"num_redelivered":0,"num_waiting":0,'
        b'"num_pending":1,"ts":"2026-11-21T07:48:39.769551692Z"}'
    )


def test_consumer_info_push_bound():
    cfg = CC.validate_and_default(
        CC.ConsumerConfig(durable_name="p", name="p", deliver_subject="dinf.p", ack_policy="explicit"), make_stream())
    info = CC.consumer_info_dict(
        stream_name="INF", name="p", created=_t("2026-11-21T07:48:39.446364068Z"), config=cfg,
        delivered=CC.sequence_info_dict(0, 0), ack_floor=CC.sequence_info_dict(0, 0), num_ack_pending=0,
        num_redelivered=0, num_waiting=0, num_pending=3, push_bound=True, ts=_t("2026-11-21T07:48:39.447122793Z"))
    assert J.dumps({"type": "io.nats.jetstream.api.v1.consumer_create_response", **info}) == (
        b'{"type":"io.nats.jetstream.api.v1.consumer_create_response","stream_name":"INF","name":"p",'
        b'"created":"2026-11-21T07:48:39.446364068Z","config":{"durable_name":"p","name":"p","deliver_policy":"all",'
        b'"ack_policy":"explicit","ack_wait":30000000000,"max_deliver":-1,"replay_policy":"instant",'
        b'"max_ack_pending":1000,"deliver_subject":"dinf.p","num_replicas":0,"metadata":{"_nats.level":"5",'
        b'"_nats.req.level":"0","_nats.ver":"2.15.1"}},"delivered":{"consumer_seq":0,"stream_seq":0},'
        b'"ack_floor":{"consumer_seq":0,"stream_seq":0},"num_ack_pending":0,"num_redelivered":0,"num_waiting":0,'
        b'"num_pending":3,"push_bound":true,"ts":"2026-11-21T07:48:39.447122793Z"}'
    )


def test_consumer_info_paused_priority_first_group_only():
    cfg, _, _, _ = CC.parse_create_request(
        b'{"stream_name":"INF","config":{"durable_name":"pg","ack_policy":"explicit","priority_policy":"pinned_client",'
        b'"priority_groups":["A","B"],"pause_until":"2099-01-01T00:00:00+01:00"}}')
    cfg.name = "pg"
    cfg = CC.validate_and_default(cfg, make_stream())
    ts = _t("2026-11-21T07:48:39.756288934Z")
    info = CC.consumer_info_dict(
        stream_name="INF", name="pg", created=_t("2026-11-21T07:48:39.752702394Z"), config=cfg,
        delivered=CC.sequence_info_dict(0, 0), ack_floor=CC.sequence_info_dict(0, 0), num_ack_pending=0,
        num_redelivered=0, num_waiting=0, num_pending=3, ts=ts, dynamic_metadata=False)
    assert info["pause_remaining"] == _t("2099-01-01T00:00:00+01:00") - ts
    info["pause_remaining"] = 2275657880243710195  # the live value (taken a few µs later on the server)
    assert J.dumps(info) == (
        b'{"stream_name":"INF","name":"pg","created":"2026-11-21T07:48:39.752702394Z","config":{"durable_name":"pg",'
        b'"name":"pg","deliver_policy":"all","ack_policy":"explicit","ack_wait":30000000000,"max_deliver":-1,'
        b'"replay_policy":"instant","max_waiting":512,"max_ack_pending":1000,"num_replicas":0,'
        b'"metadata":{"_nats.req.level":"1"},"pause_until":"2099-01-01T00:00:00+01:00","priority_groups":["A","B"],'
        b'"priority_policy":"pinned_client","priority_timeout":120000000000},"delivered":{"consumer_seq":0,'
        b'"stream_seq":0},"ack_floor":{"consumer_seq":0,"stream_seq":0},"num_ack_pending":0,"num_redelivered":0,'
        b'"num_waiting":0,"num_pending":3,"paused":true,"pause_remaining":2275657880243710195,'
        b'"ts":"2026-11-21T07:48:39.756288934Z","priority_groups":[{"group":"A","pinned_ts":"0001-01-01T00:00:00Z"}]}'
    )


def test_consumer_info_max_deliver_one_hides_redeliveries_and_pin():
    cfg = CC.validate_and_default(
        CC.ConsumerConfig(durable_name="o", max_deliver=1, ack_policy="explicit", priority_policy="pinned_client",
                          priority_groups=["G"]), make_stream())
    info = CC.consumer_info_dict(
        stream_name="S", name="o", created=0, config=cfg, delivered=CC.sequence_info_dict(0, 0),
        ack_floor=CC.sequence_info_dict(0, 0), num_ack_pending=0, num_redelivered=4, num_waiting=1, num_pending=0,
        ts=5, pinned_client_id="PIN", pinned_ts=3_000_000_000)
    assert info["num_redelivered"] == 0
    assert info["priority_groups"] == [{"group": "G", "pinned_client_id": "PIN", "pinned_ts": "1970-01-01T00:00:03Z"}]
    assert "paused" not in info and "push_bound" not in info and "cluster" not in info
