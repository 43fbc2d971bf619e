"""``$JS.API.STREAM.CREATE.<S>``: defaults, validation and error codes
(jetstream-api.md §3.1, §7)."""
from __future__ import annotations

import pytest

from conformance.jshelpers import (
    DYNAMIC_METADATA,
    TIMESTAMP,
    TYPE_PREFIX,
    JsClient,
    default_config,
    empty_state,
    error_reply,
    unique_name,
)

CREATE = "stream_create_response"


def create_error(code: int, err_code: int, description: str) -> dict:
    return error_reply(CREATE, code, err_code, description)


def test_js_create_defaults_echoed(target: str, js: JsClient, stream_name: str) -> None:
    """Creating with only a name: the whole reply (config defaults, empty state, no
    ``cluster``, ``did_create``), timestamps checked for format."""
    out = js.create(stream_name)
    assert list(out) == ["type", "config", "created", "state", "ts", "did_create"]
    assert out["type"] == TYPE_PREFIX + CREATE
    assert out["config"] == default_config(stream_name)
    assert list(out["config"]) == list(default_config(stream_name))
    assert out["state"] == empty_state()
    assert out["did_create"] is True
    assert TIMESTAMP.match(out["created"]) and TIMESTAMP.match(out["ts"]), out


def test_js_create_memory_storage(target: str, js: JsClient, stream_name: str) -> None:
    """``storage: memory`` is echoed; everything else keeps its default."""
    subj = [f"{stream_name.lower()}.>"]
    out = js.create(stream_name, subjects=subj, storage="memory")
    assert out["config"] == default_config(stream_name, subj, storage="memory")


def test_js_create_all_fields_echoed(target: str, js: JsClient, stream_name: str) -> None:
    """Explicit settings come back in Go struct order, with optional fields in place."""
    p = stream_name.lower()
    out = js.create(
        stream_name, description="a test stream", subjects=[f"{p}.a", f"{p}.b.*"],
        retention="interest", max_consumers=10, max_msgs=100, max_bytes=10000,
        max_age=3_600_000_000_000, max_msgs_per_subject=5, max_msg_size=512, discard="new",
        storage="memory", num_replicas=1, no_ack=False, duplicate_window=60_000_000_000,
        allow_direct=True, allow_rollup_hdrs=True, deny_delete=True,
        consumer_limits={"inactive_threshold": 5_000_000_000, "max_ack_pending": 20},
        metadata={"owner": "conformance"},
    )
    assert out["config"] == {
        "name": stream_name, "description": "a test stream",
        "subjects": [f"{p}.a", f"{p}.b.*"], "retention": "interest", "max_consumers": 10,
        "max_msgs": 100, "max_bytes": 10000, "max_age": 3_600_000_000_000,
        "max_msgs_per_subject": 5, "max_msg_size": 512, "discard": "new", "storage": "memory",
        "num_replicas": 1, "duplicate_window": 60_000_000_000, "compression": "none",
        "allow_direct": True, "mirror_direct": False, "sealed": False, "deny_delete": True,
        "deny_purge": False, "allow_rollup_hdrs": True,
        "consumer_limits": {"inactive_threshold": 5_000_000_000, "max_ack_pending": 20},
        "allow_msg_ttl": False,
        "metadata": {"owner": "conformance", **DYNAMIC_METADATA},
    }
    assert list(out["config"])[:3] == ["name", "description", "subjects"]


def test_js_create_wire_bytes_prefix(target: str, js: JsClient, stream_name: str) -> None:
    """The reply is compact Go JSON: exact bytes up to the ``created`` timestamp, with
    ``>`` escaped as ``\\u003e``."""
    subj = f"{stream_name.lower()}.>"
    m = js.api_msg(f"STREAM.CREATE.{stream_name}", {"name": stream_name, "subjects": [subj]})
    js.created.append(stream_name)
    escaped = subj.replace(">", "\\u003e")
    prefix = (
        '{"type":"io.nats.jetstream.api.v1.stream_create_response","config":{"name":"%s",'
        '"subjects":["%s"],"retention":"limits","max_consumers":-1,"max_msgs":-1,'
        '"max_bytes":-1,"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":-1,'
        '"discard":"old","storage":"file","num_replicas":1,"duplicate_window":120000000000,'
        '"compression":"none","allow_direct":false,"mirror_direct":false,"sealed":false,'
        '"deny_delete":false,"deny_purge":false,"allow_rollup_hdrs":false,'
        '"consumer_limits":{},"allow_msg_ttl":false,"metadata":{"_nats.level":"5",'
        '"_nats.req.level":"0","_nats.ver":"2.15.1"}},"created":"' % (stream_name, escaped)
    ).encode()
    assert m.data[: len(prefix)] == prefix
    assert m.data.endswith(b',"did_create":true}')
    assert b'"state":{"messages":0,"bytes":0,"first_seq":0,"first_ts":"0001-01-01T00:00:00Z",' \
        b'"last_seq":0,"last_ts":"0001-01-01T00:00:00Z","consumer_count":0},"ts":"' in m.data


def test_js_create_subjects_default_to_name(target: str, js: JsClient, stream_name: str) -> None:
    """Without subjects the stream listens on its own name; ``subjects: []`` is the same."""
    out = js.create(stream_name, subjects=[])
    assert out["config"]["subjects"] == [stream_name]
    ack = js.pub(stream_name, b"x")
    assert ack == {"stream": stream_name, "seq": 1}


def test_js_create_wildcard_subjects_capture(target: str, js: JsClient, stream_name: str) -> None:
    """``*`` and ``>`` subjects store what matches, and only that."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.one.*", f"{p}.two.>"])
    assert js.pub_ok(f"{p}.one.x") == 1
    assert js.pub_ok(f"{p}.two.a.b.c") == 2
    m = js.publish(f"{p}.one.x.y")  # not covered: nobody answers
    assert m.status == "503"
    assert js.state(stream_name)["messages"] == 2


@pytest.mark.parametrize("bad", ["A*", "A>", "*", ">"])
def test_js_create_invalid_name_chars(target: str, js: JsClient, bad: str) -> None:
    """A name token with a wildcard character is refused with 500/10052."""
    out = js.api(f"STREAM.CREATE.{bad}", {"name": bad})
    assert out == create_error(
        500, 10052, "stream name is required and can not contain '.', '*', '>', '\\', '/'")


@pytest.mark.parametrize("bad", ["A.B", "A B", ""])
def test_js_create_name_not_a_single_token(target: str, js: JsClient, bad: str) -> None:
    """A body name that cannot be the subject token never matches it: 400/10056."""
    out = js.api("STREAM.CREATE.GOOD", {"name": bad})
    assert out == create_error(400, 10056, "stream name in subject does not match request")


def test_js_create_name_too_long(target: str, js: JsClient) -> None:
    """256 characters is one too many; 255 is fine."""
    name = "N" * 256
    assert js.api(f"STREAM.CREATE.{name}", {"name": name}) == create_error(
        500, 10052, "stream name is too long, maximum allowed is 255")
    ok = "M" + unique_name()[:10] + "N" * 244
    assert len(ok) == 255
    js.create(ok)


def test_js_create_name_with_path_separator(target: str, js: JsClient) -> None:
    """A ``/`` or ``\\`` in the name is refused with 400/10128."""
    for name in ("A/B", "A\\B"):
        assert js.api(f"STREAM.CREATE.{name}", {"name": name}) == create_error(
            400, 10128, "Stream name can not contain path separators")


def test_js_create_name_mismatch_and_empty_body(target: str, js: JsClient,
                                                stream_name: str) -> None:
    """Body name different from the subject token, or no body at all: 400/10056."""
    expected = create_error(400, 10056, "stream name in subject does not match request")
    assert js.api(f"STREAM.CREATE.{stream_name}", {"name": "OTHER"}) == expected
    assert js.api(f"STREAM.CREATE.{stream_name}") == expected
    assert js.info(stream_name)["error"]["err_code"] == 10059


def test_js_create_unknown_field_strict(target: str, js: JsClient, stream_name: str) -> None:
    """Unknown JSON fields are rejected (strict decoding): 400/10025 naming the field."""
    out = js.api(f"STREAM.CREATE.{stream_name}", {"name": stream_name, "rollup_hdrs": True})
    assert out == create_error(400, 10025, 'invalid JSON: json: unknown field "rollup_hdrs"')


@pytest.mark.parametrize(
    ("field", "value", "text"),
    [
        ("storage", "disk", 'invalid JSON: can not unmarshal "\\"disk\\""'),
        ("retention", "forever", 'invalid JSON: can not unmarshal "\\"forever\\""'),
        ("compression", "zip", "invalid JSON: unknown compression algorithm"),
    ],
)
def test_js_create_bad_enum(target: str, js: JsClient, stream_name: str, field: str,
                            value: str, text: str) -> None:
    """Unknown enum strings are JSON errors 400/10025."""
    out = js.api(f"STREAM.CREATE.{stream_name}", {"name": stream_name, field: value})
    assert out == create_error(400, 10025, text)


def test_js_create_discard_case_insensitive(target: str, js: JsClient, stream_name: str) -> None:
    """``discard: "NEW"`` is accepted and echoed in lower case."""
    assert js.create(stream_name, discard="NEW")["config"]["discard"] == "new"


def test_js_create_max_age_too_small(target: str, js: JsClient, stream_name: str) -> None:
    """0 < max_age < 100 ms is refused; exactly 100 ms is fine and also sets the dedup window."""
    out = js.api(f"STREAM.CREATE.{stream_name}", {"name": stream_name, "max_age": 99_000_000})
    assert out == create_error(500, 10052, "max age needs to be >= 100ms")
    cfg = js.create(stream_name, max_age=100_000_000)["config"]
    assert (cfg["max_age"], cfg["duplicate_window"]) == (100_000_000, 100_000_000)


def test_js_create_duplicate_window_defaults(target: str, js: JsClient) -> None:
    """The dedup window follows max_age below 2 min, stays 2 min above."""
    a, b = unique_name(), unique_name()
    assert js.create(a, max_age=30_000_000_000)["config"]["duplicate_window"] == 30_000_000_000
    cfg = js.create(b, max_age=600_000_000_000)["config"]
    assert cfg["duplicate_window"] == 120_000_000_000


def test_js_create_duplicate_window_larger_than_max_age(target: str, js: JsClient,
                                                        stream_name: str) -> None:
    out = js.api(f"STREAM.CREATE.{stream_name}", {
        "name": stream_name, "max_age": 1_000_000_000, "duplicate_window": 2_000_000_000})
    assert out == create_error(500, 10052, "duplicates window can not be larger then max age")


def test_js_create_negative_limits_normalised(target: str, js: JsClient, stream_name: str) -> None:
    """0 and values below -1 for the count/size limits are echoed as -1."""
    cfg = js.create(stream_name, max_msgs=0, max_bytes=-5, max_msgs_per_subject=-7,
                    max_msg_size=0, max_consumers=-3)["config"]
    assert [cfg[k] for k in ("max_msgs", "max_bytes", "max_msgs_per_subject", "max_msg_size",
                             "max_consumers")] == [-1, -1, -1, -1, -1]


def test_js_create_idempotent(target: str, js: JsClient, stream_name: str) -> None:
    """Creating again with the same config succeeds (``did_create`` still true) and returns the
    existing stream with its messages; a different config is 400/10058."""
    first = js.create(stream_name, subjects=[f"{stream_name.lower()}.*"])
    js.pub_ok(f"{stream_name.lower()}.a", b"x")
    again = js.create(stream_name, subjects=[f"{stream_name.lower()}.*"])
    assert again["did_create"] is True
    assert again["created"] == first["created"]
    assert again["state"]["messages"] == 1
    other = js.api(f"STREAM.CREATE.{stream_name}", {
        "name": stream_name, "subjects": [f"{stream_name.lower()}.*"], "max_msgs": 5})
    assert other == create_error(
        400, 10058, "stream name already in use with a different configuration")


def test_js_create_idempotent_keeps_the_start_time_zone(target: str, js: JsClient) -> None:
    """A mirror's ``opt_start_time`` keeps the zone it was written in (and is echoed in it);
    creating again with the same instant in another zone is a different configuration
    (400/10058), with the same text it is the same stream."""
    origin, name = unique_name(), unique_name()
    js.create(origin, subjects=[f"{origin.lower()}.*"])
    local = {"name": name, "mirror": {"name": origin, "opt_start_time": "2024-01-01T01:00:00+01:00"}}
    utc = {"name": name, "mirror": {"name": origin, "opt_start_time": "2024-01-01T00:00:00Z"}}
    first = js.api(f"STREAM.CREATE.{name}", local)
    assert first["config"]["mirror"] == local["mirror"]
    assert js.api(f"STREAM.CREATE.{name}", utc) == create_error(
        400, 10058, "stream name already in use with a different configuration")
    again = js.api(f"STREAM.CREATE.{name}", local)
    assert again["created"] == first["created"]


def test_js_create_subjects_overlap_other_stream(target: str, js: JsClient) -> None:
    """A subject colliding with another stream's (wildcards included) is 400/10065."""
    a, b = unique_name(), unique_name()
    p = a.lower()
    js.create(a, subjects=[f"{p}.*"])
    expected = create_error(400, 10065, "subjects overlap with an existing stream")
    for subjects in ([f"{p}.x"], [f"{p}.>"], ["other", f"{p}.*"]):
        assert js.api(f"STREAM.CREATE.{b}", {"name": b, "subjects": subjects}) == expected
    js.create(b, subjects=[f"{p}.x.y"])  # two tokens after the prefix: no overlap


def test_js_create_subjects_overlap_within_list(target: str, js: JsClient,
                                                stream_name: str) -> None:
    """Overlapping or duplicate entries in the list are 500/10052 naming both."""
    p = stream_name.lower()
    out = js.api(f"STREAM.CREATE.{stream_name}",
                 {"name": stream_name, "subjects": [f"{p}.>", f"{p}.b"]})
    assert out == create_error(500, 10052, f'subject "{p}.>" overlaps with "{p}.b"')
    out = js.api(f"STREAM.CREATE.{stream_name}",
                 {"name": stream_name, "subjects": [f"{p}.x", f"{p}.x"]})
    assert out == create_error(500, 10052, f'subject "{p}.x" overlaps with "{p}.x"')


def test_js_create_invalid_subject(target: str, js: JsClient, stream_name: str) -> None:
    out = js.api(f"STREAM.CREATE.{stream_name}",
                 {"name": stream_name, "subjects": ["a..b"]})
    assert out == create_error(500, 10052, "invalid subject")


def test_js_create_capture_all_requires_no_ack(target: str, js: JsClient,
                                               stream_name: str) -> None:
    """``>`` and subjects in ``$JS.API`` need ``no_ack``."""
    out = js.api(f"STREAM.CREATE.{stream_name}", {"name": stream_name, "subjects": [">"]})
    assert out == create_error(500, 10052, "capturing all subjects requires no-ack to be true")
    out = js.api(f"STREAM.CREATE.{stream_name}",
                 {"name": stream_name, "subjects": ["$JS.API.>"]})
    assert out == create_error(
        500, 10052, "subjects that overlap with jetstream api require no-ack to be true")


def test_js_create_replicas(target: str, js: JsClient, stream_name: str) -> None:
    """num_replicas 0 becomes 1; >1 on a standalone server 500/10074; negative 400/10133;
    >5 500/10052."""
    base = f"STREAM.CREATE.{stream_name}"
    assert js.api(base, {"name": stream_name, "num_replicas": 3}) == create_error(
        500, 10074, "replicas > 1 not supported in non-clustered mode")
    assert js.api(base, {"name": stream_name, "num_replicas": -1}) == create_error(
        400, 10133, "replicas count cannot be negative")
    assert js.api(base, {"name": stream_name, "num_replicas": 6}) == create_error(
        500, 10052, "maximum replicas is 5")
    assert js.create(stream_name, num_replicas=0)["config"]["num_replicas"] == 1


def test_js_create_sealed_refused(target: str, js: JsClient, stream_name: str) -> None:
    out = js.api(f"STREAM.CREATE.{stream_name}", {"name": stream_name, "sealed": True})
    assert out == create_error(500, 10052, "stream configuration for create can not be sealed")


def test_js_create_first_seq(target: str, js: JsClient, stream_name: str) -> None:
    """``first_seq`` is echoed; the empty stream reports last_seq = first_seq - 1 and the first
    publish gets that sequence."""
    out = js.create(stream_name, first_seq=100)
    assert out["config"]["first_seq"] == 100
    assert list(out["config"]).index("first_seq") == list(out["config"]).index("compression") + 1
    assert out["state"] == empty_state(first_seq=100, last_seq=99)
    assert js.pub(stream_name, b"x") == {"stream": stream_name, "seq": 100}


def test_js_create_metadata_user_and_reserved(target: str, js: JsClient,
                                              stream_name: str) -> None:
    """User metadata is kept; ``_nats.*`` keys are server-managed (the supplied dynamic ones
    are replaced by the real values)."""
    out = js.create(stream_name, metadata={"a": "1", "_nats.ver": "9.9.9", "_nats.level": "77"})
    assert out["config"]["metadata"] == {"a": "1", **DYNAMIC_METADATA}


def test_js_create_description_too_long(target: str, js: JsClient, stream_name: str) -> None:
    out = js.api(f"STREAM.CREATE.{stream_name}", {"name": stream_name, "description": "d" * 4097})
    assert out == create_error(500, 10052, "stream description is too long, maximum allowed is 4096")
    assert js.create(stream_name, description="d" * 4096)["config"]["description"] == "d" * 4096


def test_js_create_subject_delete_marker_ttl_forces_flags(target: str, js: JsClient,
                                                          stream_name: str) -> None:
    """``subject_delete_marker_ttl`` turns on ``allow_msg_ttl`` and ``allow_rollup_hdrs`` and
    raises the required API level to 1; below 1 s it is refused."""
    base = f"STREAM.CREATE.{stream_name}"
    assert js.api(base, {"name": stream_name, "subject_delete_marker_ttl": 500_000_000}) == \
        create_error(500, 10052, "subject delete marker TTL must be at least 1 second")
    cfg = js.create(stream_name, subject_delete_marker_ttl=5_000_000_000)["config"]
    assert cfg["allow_msg_ttl"] is True and cfg["allow_rollup_hdrs"] is True
    assert cfg["subject_delete_marker_ttl"] == 5_000_000_000
    assert cfg["metadata"]["_nats.req.level"] == "1"


def test_js_create_allow_msg_ttl_level(target: str, js: JsClient, stream_name: str) -> None:
    """``allow_msg_ttl`` raises ``_nats.req.level`` to 1."""
    cfg = js.create(stream_name, allow_msg_ttl=True)["config"]
    assert cfg["allow_msg_ttl"] is True
    assert cfg["metadata"] == {"_nats.level": "5", "_nats.req.level": "1", "_nats.ver": "2.15.1"}


def test_js_create_discard_new_per_subject_rules(target: str, js: JsClient,
                                                 stream_name: str) -> None:
    """``discard_new_per_subject`` needs ``discard: new`` and a per-subject limit."""
    base = f"STREAM.CREATE.{stream_name}"
    out = js.api(base, {"name": stream_name, "discard_new_per_subject": True,
                        "max_msgs_per_subject": 1})
    assert out == create_error(
        500, 10052, "discard new per subject requires discard new policy to be set")
    out = js.api(base, {"name": stream_name, "discard_new_per_subject": True, "discard": "new"})
    assert out == create_error(
        500, 10052, "discard new per subject requires max msgs per subject > 0")
    cfg = js.create(stream_name, discard="new", max_msgs_per_subject=1,
                    discard_new_per_subject=True)["config"]
    keys = list(cfg)
    assert cfg["discard_new_per_subject"] is True
    assert keys.index("discard_new_per_subject") == keys.index("allow_direct") + 2


def test_js_create_rollup_needs_purge(target: str, js: JsClient, stream_name: str) -> None:
    out = js.api(f"STREAM.CREATE.{stream_name}",
                 {"name": stream_name, "allow_rollup_hdrs": True, "deny_purge": True})
    assert out == create_error(500, 10052, "roll-ups require the purge permission")


def test_js_create_bad_json(target: str, js: JsClient, stream_name: str) -> None:
    out = js.api(f"STREAM.CREATE.{stream_name}", b"{nope")
    assert out["type"] == TYPE_PREFIX + CREATE
    assert out["error"]["code"] == 400 and out["error"]["err_code"] == 10025
    assert out["error"]["description"].startswith("invalid JSON: ")
