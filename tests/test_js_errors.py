"""Unit tests for minijs.jetstream.errors and minijs.jetstream.jsonfmt.

Expected texts were observed on the real nats-server v2.15.1 binary (raw requests sent with
nats-py to ``$JS.API.STREAM.CREATE.S``); nothing here starts a server.
"""

from __future__ import annotations

import re

import pytest

from minijs.jetstream import errors as E
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.config.stream import parse_stream_config

# ------------------------------------------------------------------------------------------
# errors
# ------------------------------------------------------------------------------------------


def test_api_error_json_and_equality():
    e = E.stream_not_found()
    assert isinstance(e, Exception)
    assert e.to_json() == {"code": 404, "err_code": 10059, "description": "stream not found"}
    assert list(e.to_json()) == ["code", "err_code", "description"]
    assert str(e) == "stream not found"
    assert e == E.ApiError(404, 10059, "stream not found")
    assert e != E.stream_mismatch()
    assert e.is_(E.ErrCode.STREAM_NOT_FOUND)
    assert E.stream_not_found() is not E.stream_not_found()  # fresh instances


@pytest.mark.parametrize(
    "err, code, err_code, desc",
    [
        (E.invalid_json("json: unknown field \"x\""), 400, 10025, 'invalid JSON: json: unknown field "x"'),
        (E.stream_config_invalid("max age needs to be >= 100ms"), 500, 10052, "max age needs to be >= 100ms"),
        (E.sequence_not_found(7), 400, 10043, "sequence 7 not found"),
        (E.stream_mismatch(), 400, 10056, "stream name in subject does not match request"),
        (E.stream_name_exist(), 400, 10058, "stream name already in use with a different configuration"),
        (E.stream_subject_overlap(), 400, 10065, "subjects overlap with an existing stream"),
        (E.stream_replicas_not_supported(), 500, 10074, "replicas > 1 not supported in non-clustered mode"),
        (E.replicas_count_cannot_be_negative(), 400, 10133, "replicas count cannot be negative"),
        (E.stream_name_contains_path_separators(), 400, 10128, "Stream name can not contain path separators"),
        (E.not_empty_request(), 400, 10038, "expected an empty request payload"),
        (E.no_message_found(), 404, 10037, "no message found"),
        (E.consumer_not_found(), 404, 10014, "consumer not found"),
        (E.bad_request(), 400, 10003, "bad request"),
        (E.cluster_required(), 503, 10010, "JetStream clustering support required"),
        (E.required_api_level(), 412, 10185, "JetStream minimum api level required"),
        (E.pedantic_error("max_msgs must be set to -1"), 400, 10157, "pedantic mode: max_msgs must be set to -1"),
        (E.mirror_with_subjects(), 400, 10034, "stream mirrors can not contain subjects"),
        (E.mirror_with_first_seq(), 400, 10143, "stream mirrors can not have first sequence configured"),
        (E.stream_sealed(), 400, 10109, "invalid operation on sealed stream"),
        (E.consumer_name_too_long(255), 400, 10102, "consumer name is too long, maximum allowed is 255"),
        (
            E.stream_external_api_overlap(prefix="$JS.API.x", subject="$JS.API"),
            400,
            10021,
            "stream external api prefix $JS.API.x must not overlap with $JS.API",
        ),
        (
            E.restore_subscribe_failed(subject="s", err="boom"),
            500,
            10042,
            "JetStream unable to subscribe to restore snapshot s: boom",
        ),
    ],
)
def test_factories(err, code, err_code, desc):
    assert (err.code, err.err_code, err.description) == (code, err_code, desc)


@pytest.mark.parametrize(
    "err, code, err_code, desc",
    [
        # pub-ack errors (jetstream-behavior.md §2; verified on v2.15.1)
        (E.expected_stream_mismatch(), 400, 10060, "expected stream does not match"),
        (E.wrong_last_sequence(3), 400, 10071, "wrong last sequence: 3"),
        (E.wrong_last_msg_id(""), 400, 10070, "wrong last msg ID: "),
        (E.wrong_last_msg_id("a"), 400, 10070, "wrong last msg ID: a"),
        (E.message_size_exceeds_maximum(), 400, 10054, "message size exceeds maximum allowed"),
        (E.max_msgs_exceeded(), 503, 10077, "maximum messages exceeded"),
        (E.max_bytes_exceeded(), 503, 10077, "maximum bytes exceeded"),
        (E.max_msgs_per_subject_exceeded(), 503, 10077, "maximum messages per subject exceeded"),
        (E.message_too_large(), 503, 10077, "message too large"),
        (E.rollup_not_permitted(), 500, 10111, "rollup not permitted"),
        (E.rollup_value_invalid("bad"), 500, 10111, 'rollup value invalid: "bad"'),
        (E.ttl_invalid(), 400, 10165, "invalid per-message TTL"),
        (E.ttl_disabled(), 400, 10166, "per-message TTL is disabled"),
        (E.message_incr_disabled(), 400, 10168, "message counters is disabled"),
        (E.stream_expected_last_seq_per_subject_invalid(), 400, 10193,
         "missing sequence for expected last sequence per subject"),
        (E.message_source_hdr_not_allowed(), 400, 10227, "message stream source header is not allowed"),
        (E.stream_too_many_requests(), 429, 10167, "too many requests"),
        (E.stream_header_exceeds_maximum(), 400, 10097, "header size exceeds maximum allowed of 64k"),
        # other {err} renderings
        (E.message_delete_not_permitted(), 500, 10057, "message delete not permitted"),
        (E.purge_not_permitted(), 500, 10110, "stream purge not permitted"),
        (E.consumer_limits_violation(["a", "b"]), 500, 10069, "change to limits violates consumers: a, b"),
        (E.unsupported_feature("stream mirrors (mirror)"), 500, 10052, "minijs does not support stream mirrors (mirror)"),
    ],
)
def test_concrete_texts(err, code, err_code, desc):
    assert (err.code, err.err_code, err.description) == (code, err_code, desc)


def test_table_is_complete_and_consistent():
    codes = sorted(E.ERRORS)
    assert codes[0] == 10002 and codes[-1] == 10227
    for ec, spec in E.ERRORS.items():
        assert spec.code in (400, 404, 409, 412, 429, 500, 503)
        assert E.ErrCode(ec).value == ec
        # every entry has a factory named after its ErrCode member
        factory = getattr(E, E.ErrCode(ec).name.lower())
        args = {name: "X" for name in re.findall(r"\{(\w+)\}", spec.template)}
        err = factory(**args)
        assert err.err_code == ec and err.code == spec.code
        assert not re.search(r"\{\w+\}", err.description)


def test_catalogue_module_is_what_the_data_file_generates():
    """errors_catalogue.py is generated from errors.json; an edit to either alone fails here."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "gen_errors.py"
    spec = importlib.util.spec_from_file_location("gen_errors", path)
    gen_errors = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_errors)
    assert gen_errors.main(["--check"]) == 0


def test_data_file_keeps_nats_server_fields_and_every_entry():
    import json
    from pathlib import Path

    from minijs.jetstream import errors_catalogue

    path = Path(errors_catalogue.__file__).with_name("errors.json")
    entries = json.loads(path.read_text(encoding="utf-8"))
    fields = {"constant", "code", "error_code", "description", "comment", "help", "url", "deprecates"}
    assert all(set(e) == fields for e in entries)
    assert {e["error_code"]: (e["code"], e["constant"], e["description"]) for e in entries} == {
        ec: tuple(spec) for ec, spec in E.ERRORS.items()}


def test_make_and_wrap():
    assert E.make(10043, seq=12).description == "sequence 12 not found"
    inner = E.stream_not_found()
    assert E.wrap(E.stream_create, inner) is inner
    assert E.wrap(E.stream_create, ValueError("disk full")) == E.ApiError(500, 10049, "disk full")


# ------------------------------------------------------------------------------------------
# jsonfmt: times, quoting, encoding
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ns, text",
    [
        (0, "0001-01-01T00:00:00Z"),
        (1795240359095147241, "2026-11-21T05:52:39.095147241Z"),
        (1795240433218951380, "2026-11-21T05:53:53.21895138Z"),  # 9th digit 0 → 8 digits
        (1795240359000000000, "2026-11-21T05:52:39Z"),
        (1795240359100000000, "2026-11-21T05:52:39.1Z"),
        (1, "1970-01-01T00:00:00.000000001Z"),
        (-1_000_000_000, "1969-12-31T23:59:59Z"),
        (951782400 * 10**9, "2000-02-29T00:00:00Z"),
        (253402300799 * 10**9, "9999-12-31T23:59:59Z"),
    ],
)
def test_go_time(ns, text):
    assert J.go_time(ns) == text
    assert J.parse_go_time(text) == ns


def test_parse_go_time_offsets_and_fractions():
    base = J.parse_go_time("2026-11-21T05:52:39Z")
    assert J.parse_go_time("2026-11-21T06:52:39+01:00") == base
    assert J.parse_go_time("2026-11-21T00:22:39-05:30") == base
    assert J.parse_go_time("2026-11-21T05:52:39.5Z") == base + 500_000_000
    # more than 9 fractional digits are truncated
    assert J.parse_go_time("2026-11-21T05:52:39.1234567891Z") == base + 123_456_789
    assert J.parse_go_time("0001-01-01T00:00:00Z") == J.ZERO_TIME


@pytest.mark.parametrize(
    "text, err",
    [
        # all observed on v2.15.1 (StreamSource.opt_start_time values)
        ("x", 'parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"'),
        ("2026-13-01T00:00:00Z", 'parsing time "2026-13-01T00:00:00Z": month out of range'),
        ("2026-02-30T00:00:00Z", 'parsing time "2026-02-30T00:00:00Z": day out of range'),
        ("2026-01-01 00:00:00Z", 'parsing time "2026-01-01 00:00:00Z" as "2006-01-02T15:04:05Z07:00": '
                                 'cannot parse " 00:00:00Z" as "T"'),
        ("2026-01-01T00:00:00", 'parsing time "2026-01-01T00:00:00" as "2006-01-02T15:04:05Z07:00": '
                                'cannot parse "" as "Z07:00"'),
        ("2026-01-01T00:00:00+25:00", 'parsing time "2026-01-01T00:00:00+25:00": time zone offset hour out of range'),
        ("2026-01-01T00:00:00Zx", 'parsing time "2026-01-01T00:00:00Zx": extra text: "x"'),
    ],
)
def test_parse_go_time_errors(text, err):
    with pytest.raises(J.GoTimeError) as ei:
        J.parse_go_time(text)
    assert str(ei.value) == err


@pytest.mark.parametrize(
    "text, echoed",
    [
        # Go's time.Parse leniency and the echo of the client's offset, observed on v2.15.1
        ("2026-01-01T0:00:00Z", "2026-01-01T00:00:00Z"),
        ("2026-01-01T00:00:00,5Z", "2026-01-01T00:00:00.5Z"),
        ("2026-01-01T01:00:00.123456789123+01:00", "2026-01-01T01:00:00.123456789+01:00"),
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
        ("2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00Z"),
    ],
)
def test_parse_go_time_echo(text, echoed):
    t = J.parse_go_time_ex(text)
    assert J.go_time(t) == echoed
    assert J.parse_go_time(text) == J.parse_go_time(echoed)


def test_go_time_offset_rendering():
    t = J.parse_go_time_ex("2026-01-01T01:00:00+01:00")
    assert t == J.parse_go_time("2026-01-01T00:00:00Z") and t.offset == 3600
    assert J.go_time(int(t)) == "2026-01-01T00:00:00Z"
    assert J.go_time(int(t), -5400) == "2025-12-31T22:30:00-01:30"


def test_go_duration():
    assert [J.go_duration(x) for x in (0, 5 * 10**9, 60 * 10**9, 1_500_000_000, 100_000_000, 1500, 7)] == [
        "0s", "5s", "1m0s", "1.5s", "100ms", "1.5µs", "7ns"
    ]
    assert J.go_duration(3661 * 10**9) == "1h1m1s"
    assert J.go_duration(-2 * 10**9) == "-2s"


def test_go_quote():
    assert J.go_quote('fé😀\n"\\<') == '"fé😀\\n\\"\\\\<"'
    assert J.go_quote(b"\\\xc3") == '"\\\\\\xc3"'
    assert J.go_quote("\x01\x7f\u00a0\ufeff") == '"\\x01\\x7f\\u00a0\\ufeff"'
    assert J.go_quote_rune("'") == "'\\''"
    assert J.go_quote_rune('"') == "'\"'"
    assert J.go_quote_rune("é") == "'é'"


def test_dumps_go_escaping():
    assert J.dumps({"subjects": ["p.>"], "d": "<a&b>"}) == b'{"subjects":["p.\\u003e"],"d":"\\u003ca\\u0026b\\u003e"}'
    assert J.dumps("\u2028\u2029") == b'"\\u2028\\u2029"'
    assert J.dumps("\x00\x01\x1f\n\r\t\b\f") == b'"\\u0000\\u0001\\u001f\\n\\r\\t\\b\\f"'
    assert J.dumps('"\\') == b'"\\"\\\\"'
    assert J.dumps("é") == "\"é\"".encode()
    assert J.dumps("\x7f") == b'"\x7f"'


def test_dumps_shapes():
    assert J.dumps({"a": None, "b": True, "c": False, "d": [], "e": {}, "f": -1}) == (
        b'{"a":null,"b":true,"c":false,"d":[],"e":{},"f":-1}'
    )
    assert J.dumps({"data": b"two", "empty": b""}) == b'{"data":"dHdv","empty":""}'
    # struct order is insertion order; Go maps are sorted
    assert J.dumps({"z": 1, "a": 2}) == b'{"z":1,"a":2}'
    assert J.dumps(J.go_map({"zz": "1", "_nats.ver": "2", "aa": "3"})) == b'{"_nats.ver":"2","aa":"3","zz":"1"}'
    assert J.dumps(E.stream_not_found()) == b'{"code":404,"err_code":10059,"description":"stream not found"}'
    assert J.dumps([1.5, 1.0, 1e21, 1e-7]) == b"[1.5,1,1e+21,1e-07]"


# ------------------------------------------------------------------------------------------
# strict decoding: texts observed on v2.15.1 for $JS.API.STREAM.CREATE.S bodies
# ------------------------------------------------------------------------------------------

PREFIX = "invalid JSON: "

DECODE_CASES = [
    # ---- semantic errors ----
    (b'{"name":"S","max_msgs":"x"}',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.max_msgs of type int64'),
    (b'{"name":"S","consumer_limits":{"max_ack_pending":"x"}}',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.consumer_limits.max_ack_pending of type int'),
    (b'{"name":"S","subjects":[1]}',
     'json: cannot unmarshal number into StreamConfigRequest.subjects.0 of type string'),
    (b'{"name":"S","subjects":"a"}',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.subjects of type []string'),
    (b'{"name":"S","subjects":{}}',
     'json: cannot unmarshal object into Go struct field StreamConfigRequest.subjects of type []string'),
    (b'{"name":"S","subjects":[[1]]}',
     'json: cannot unmarshal array into StreamConfigRequest.subjects.0 of type string'),
    (b'{"name":"S","max_msgs":1.5}',
     'json: cannot unmarshal number 1.5 into Go struct field StreamConfigRequest.max_msgs of type int64'),
    (b'{"name":"S","max_msgs":1e3}',
     'json: cannot unmarshal number 1e3 into Go struct field StreamConfigRequest.max_msgs of type int64'),
    (b'{"name":"S","max_msgs":9223372036854775808}',
     'json: cannot unmarshal number 9223372036854775808 into Go struct field StreamConfigRequest.max_msgs of type int64'),
    (b'{"name":"S","max_msg_size":4294967296}',
     'json: cannot unmarshal number 4294967296 into Go struct field StreamConfigRequest.max_msg_size of type int32'),
    (b'{"name":"S","first_seq":-1}',
     'json: cannot unmarshal number -1 into Go struct field StreamConfigRequest.first_seq of type uint64'),
    (b'{"name":"S","max_age":"1s"}',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.max_age of type time.Duration'),
    (b'{"name":"S","placement":"x"}',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.placement of type server.Placement'),
    (b'{"name":"S","placement":{"tags":[1]}}',
     'json: cannot unmarshal number into StreamConfigRequest.placement.tags.0 of type string'),
    (b'{"name":"S","metadata":{"a":1}}',
     'json: cannot unmarshal number into Go struct field StreamConfigRequest.metadata.a of type string'),
    (b'{"name":"S","metadata":[1]}',
     'json: cannot unmarshal array into Go struct field StreamConfigRequest.metadata of type map[string]string'),
    (b'{"name":"S","sources":[1]}',
     'json: cannot unmarshal number into StreamConfigRequest.sources.0 of type server.StreamSource'),
    (b'{"name":"S","sources":[{"name":"x","opt_start_time":5}]}',
     'json: cannot unmarshal number into Go struct field StreamConfigRequest.sources.0.opt_start_time of type time.Time'),
    (b'{"name":"S","sources":[{"name":"x","opt_start_time":"x"}]}',
     'parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"'),
    (b'{"name":"S","sources":[{"name":"x","subject_transforms":[{"src":1}]}]}',
     'json: cannot unmarshal number into Go struct field StreamConfigRequest.sources.0.subject_transforms.0.src of type string'),
    (b'{"name":"S","sources":[{"name":"x","subject_transforms":[1]}]}',
     'json: cannot unmarshal number into StreamConfigRequest.sources.0.subject_transforms.0 of type server.SubjectTransformConfig'),
    (b'{"name":"S","mirror":{"name":"x","opt_start_seq":"x"}}',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.mirror.opt_start_seq of type uint64'),
    (b'{"name":"S","mirror":{"name":"x","external":{"api":1}}}',
     'json: cannot unmarshal number into Go struct field StreamConfigRequest.mirror.external.api of type string'),
    (b'{"name":"S","consumer_limits":"x"}',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.consumer_limits of type server.StreamConsumerLimits'),
    (b'{"name":"S","consumer_limits":[]}',
     'json: cannot unmarshal array into Go struct field StreamConfigRequest.consumer_limits of type server.StreamConsumerLimits'),
    (b'{"name":"S","consumer_limits":{"inactive_threshold":true}}',
     'json: cannot unmarshal bool into Go struct field StreamConfigRequest.consumer_limits.inactive_threshold of type time.Duration'),
    (b'{"name":"S","pedantic":"x"}',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.pedantic of type bool'),
    (b'{"name":"S","no_ack":1}',
     'json: cannot unmarshal number into Go struct field StreamConfigRequest.no_ack of type bool'),
    (b'{"name":1}', 'json: cannot unmarshal number into Go struct field StreamConfigRequest.name of type string'),
    (b"[1]", "json: cannot unmarshal array into Go value of type server.StreamConfigRequest"),
    (b'"x"', "json: cannot unmarshal string into Go value of type server.StreamConfigRequest"),
    (b"5", "json: cannot unmarshal number into Go value of type server.StreamConfigRequest"),
    (b"5x", "json: cannot unmarshal number into Go value of type server.StreamConfigRequest"),
    (b"true", "json: cannot unmarshal bool into Go value of type server.StreamConfigRequest"),
    # keys as written are used in paths; case-insensitive match incl. ſ → s
    (b'{"MAX_MSGS":"x"}', 'json: cannot unmarshal string into Go struct field StreamConfigRequest.MAX_MSGS of type int64'),
    (b'{"Max_Msgs":"x"}', 'json: cannot unmarshal string into Go struct field StreamConfigRequest.Max_Msgs of type int64'),
    ('{"max_mſgs":"x"}'.encode(),
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.max_mſgs of type int64'),
    (b'{"\\u006dax_msgs":"x"}',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.max_msgs of type int64'),
    (b'{"maxmsgs":"x"}', 'json: unknown field "maxmsgs"'),
    (b'{"max-msgs":"x"}', 'json: unknown field "max-msgs"'),
    (b'{"Foo":1}', 'json: unknown field "Foo"'),
    (b'{"rollup_hdrs":true}', 'json: unknown field "rollup_hdrs"'),
    (b'{"name":"S","consumer_limits":{"foo":true}}', 'json: unknown field "foo"'),
    (b'{"name":"S","mirror":{"name":"x","foo":1}}', 'json: unknown field "foo"'),
    (b'{"f\\u00e9\\ud83d\\ude00\\n\\"\\\\<":1}', 'json: unknown field "fé😀\\n\\"\\\\<"'),
    # first error in document order wins; whole value is syntax-checked first
    (b'{"foo":1,"retention":"x"}', 'json: unknown field "foo"'),
    (b'{"retention":"x","foo":1}', 'can not unmarshal "\\"x\\""'),
    (b'{"max_msgs":"x","foo":1}',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.max_msgs of type int64'),
    (b'{"name":"S","max_msgs":"x","max_bytes":"y"}',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.max_msgs of type int64'),
    (b'{"name":"S","max_msgs":1,"max_msgs":"x","max_msgs":"y"}',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.max_msgs of type int64'),
    (b'{"name":"S","max_msgs":"x"} x',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.max_msgs of type int64'),
    (b'{"name":"S","max_msgs":"x" x', "invalid character 'x' after object key:value pair at offset 28"),
    (b'{"name":"S"} {"foo":1}', 'json: unknown field "foo"'),
    (b'{"foo":1} garbage', 'json: unknown field "foo"'),
    (b'{"name":"S"\r\n,"max_msgs":\n5\n}\n\n{"max_msgs":"x"}',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.max_msgs of type int64'),
    (b'{"name":"S","max_msgs":1 , "max_bytes" : "x" }',
     'json: cannot unmarshal string into Go struct field StreamConfigRequest.max_bytes of type int64'),
    # enums: custom UnmarshalJSON on the raw bytes
    (b'{"storage":"disk","name":"S"}', 'can not unmarshal "\\"disk\\""'),
    (b'{"storage":"File","name":"S"}', 'can not unmarshal "\\"File\\""'),
    (b'{"storage":null,"name":"S"}', 'can not unmarshal "null"'),
    (b'{"retention":null,"name":"S"}', 'can not unmarshal "null"'),
    (b'{"retention":1,"name":"S"}', 'can not unmarshal "1"'),
    (b'{"name":"S","retention":"Limits"}', 'can not unmarshal "\\"Limits\\""'),
    (b'{"name":"S","retention":"lim\\u0069ts"}', 'can not unmarshal "\\"lim\\\\u0069ts\\""'),
    (b'{"name":"S","discard":"\\u006eew"}', 'can not unmarshal "\\"\\\\u006eew\\""'),
    (b'{"name":"S","discard":null}', 'can not unmarshal "null"'),
    (b'{"persist_mode":"x","name":"S"}', 'can not unmarshal "\\"x\\""'),
    (b'{"name":"S","persist_mode":null}', 'can not unmarshal "null"'),
    (b'{"compression":1,"name":"S"}', "json: cannot unmarshal number into Go value of type string"),
    (b'{"compression":null,"name":"S"}', "unknown compression algorithm"),
    (b'{"compression":"S2x","name":"S"}', "unknown compression algorithm"),
    # ---- syntax errors (offset = bytes read up to and including the bad character) ----
    (b"no", "invalid character 'o' in literal null (expecting 'u') at offset 2"),
    (b'{"name":"S"', "unexpected EOF"),
    (b"[", "unexpected EOF"),
    (b'{"name":"S"}"', "unexpected EOF"),
    (b'{"name":"S","max_msgs":1', "unexpected EOF"),
    (b'{"name":"S","max_msgs":1.', "unexpected EOF"),
    (b'{"name":"S","max_msgs":tr', "unexpected EOF"),
    (b'{"name":"S","max_msgs"', "unexpected EOF"),
    (b'{"name":"S","max_msgs":', "unexpected EOF"),
    (b'{"name":"S\\', "unexpected EOF"),
    (b'{"name":"S\\u12', "unexpected EOF"),
    (b'{"name":"S"}x', "invalid character 'x' looking for beginning of value at offset 13"),
    (b'{"name":"S"} x', "invalid character 'x' looking for beginning of value at offset 14"),
    (b'{"name":"S"}}', "invalid character '}' looking for beginning of value at offset 13"),
    (b'{"name":"S",}', "invalid character '}' looking for beginning of object key string at offset 13"),
    (b'{"name":"S" "x"}', "invalid character '\"' after object key:value pair at offset 13"),
    (b'{"name" "S"}', "invalid character '\"' after object key at offset 9"),
    (b'{ "a" : 1 , "b" }', "invalid character '}' after object key at offset 17"),
    (b'{name:"S"}', "invalid character 'n' looking for beginning of object key string at offset 2"),
    (b'{"name":"S","subjects":["a",]}', "invalid character ']' looking for beginning of value at offset 29"),
    (b'{"name":"S","subjects":[1,}', "invalid character '}' looking for beginning of value at offset 27"),
    (b'{"name":"S","subjects":[,1]}', "invalid character ',' looking for beginning of value at offset 25"),
    (b'{"name":"S","subjects":["a" "b"]}', "invalid character '\"' after array element at offset 29"),
    (b'{"name":"S","subjects":["a" 1]}', "invalid character '1' after array element at offset 29"),
    (b'{"name":"S","max_msgs":01}', "invalid character '1' after object key:value pair at offset 25"),
    (b'{"name":"S","max_msgs":-01}', "invalid character '1' after object key:value pair at offset 26"),
    (b'{"name":"S","max_msgs":1x}', "invalid character 'x' after object key:value pair at offset 25"),
    (b'{"name":"S","max_msgs":0x1}', "invalid character 'x' after object key:value pair at offset 25"),
    (b'{"name":"S","max_msgs":1.}', "invalid character '}' in numeric literal at offset 26"),
    (b'{"name":"S","max_msgs":1e}', "invalid character '}' in numeric literal at offset 26"),
    (b'{"name":"S","max_msgs":1ex}', "invalid character 'x' in numeric literal at offset 26"),
    (b'{"name":"S","max_msgs":1.5e}', "invalid character '}' in numeric literal at offset 28"),
    (b'{"name":"S","max_msgs":1.5e+}', "invalid character '}' in numeric literal at offset 29"),
    (b'{"name":"S","max_msgs":-}', "invalid character '}' in numeric literal at offset 25"),
    (b'{"name":"S","max_msgs":-a}', "invalid character 'a' in numeric literal at offset 25"),
    (b'{"name":"S","max_msgs":+1}', "invalid character '+' looking for beginning of value at offset 24"),
    (b'{"name":"S","max_msgs":.5}', "invalid character '.' looking for beginning of value at offset 24"),
    (b'{"name":"S","max_msgs":tru}', "invalid character '}' in literal true (expecting 'e') at offset 27"),
    (b'{"name":"S","max_msgs":fals}', "invalid character '}' in literal false (expecting 'e') at offset 28"),
    (b'{"name":"S","max_msgs":nulx}', "invalid character 'x' in literal null (expecting 'l') at offset 27"),
    (b'{"name":"S","max_msgs":truex}', "invalid character 'x' after object key:value pair at offset 28"),
    (b'{"name":"S\x01"}', "invalid character '\\x01' in string at offset 11"),
    (b'{"x\x1f":1}', "invalid character '\\x1f' in string at offset 4"),
    (b'{"name":"S\\q"}', "invalid escape sequence `\\q` in string at offset 12"),
    (b'{"name":"S\\u00zz"}', "invalid escape sequence `\\u00zz` in string at offset 16"),
    (b'{"name":"S\\u12"}', "invalid escape sequence `\\u12\"}` in string at offset 16"),
    (b'{"name":"S\\\xc3\xa9"}', 'invalid escape sequence "\\\\\\xc3" in string at offset 12'),
    (b'{"name":"S\\\xff"}', 'invalid escape sequence "\\\\\\xff" in string at offset 12'),
    (b"{\"name\":\"S\"}'", "invalid character '\\'' looking for beginning of value at offset 13"),
    (b'{"name":"S"}\xc3\xa9', "invalid character 'é' looking for beginning of value at offset 14"),
    (b'{"name":"S",\xc3\xa9}', "invalid character 'é' looking for beginning of object key string at offset 14"),
    (b'{"name":"S"}\x7f', "invalid character '\\x7f' looking for beginning of value at offset 13"),
    (b'{"name":"S"}\xc2\xa0', "invalid character '\\u00a0' looking for beginning of value at offset 14"),
    (b"\xef\xbb\xbf{\"name\":\"S\"}", "invalid character '\\ufeff' looking for beginning of value at offset 3"),
    (b"\xff", "invalid character '\\xff' looking for beginning of value at offset 1"),
    (b'{"name":"S","a"\t\n\xe2\x80\xa8:1}', "invalid character '\\u2028' after object key at offset 20"),
    (b'{"name":"S","metadata":' + b"[" * 10001 + b"]" * 10001 + b"}", "exceeded max depth at offset 10023"),
    (b'{"name":"S","x":' + b"[" * 10000 + b"]" * 10000 + b"}", "exceeded max depth at offset 10016"),
    (b'{"name":"S","x":' + b"[" * 9999 + b"]" * 9999 + b"}", 'json: unknown field "x"'),
]


@pytest.mark.parametrize("payload, text", DECODE_CASES)
def test_strict_decode_errors(payload, text):
    with pytest.raises(E.ApiError) as ei:
        parse_stream_config(payload)
    assert ei.value.to_json() == {"code": 400, "err_code": 10025, "description": PREFIX + text}


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"  \n ",
        b"{}",
        b"null",
        b'{"name":"S\xff"}',  # invalid UTF-8 is accepted (replaced by U+FFFD)
        b'{"name":"S\\ud800"}',  # lone surrogate escape accepted
        b'{"name":"S","subjects":[null]}',  # null element = ""
        b'{"name":"S","metadata":{"a":null}}',
        b'{"name":"S","consumer_limits":null,"placement":null}',
        b'{"name":"S","max_msgs":-0}',
        b'{"name":"S","discard":"NEW"}',  # discard is case-insensitive
        b'{"name":"S","compression":"\\u0073\\u0032"}',  # compression unquotes first
        b'{"name":"S","persist_mode":""}',
    ],
)
def test_strict_decode_accepts(payload):
    parse_stream_config(payload)


def test_decode_values_semantics():
    cfg, pedantic = parse_stream_config(b'{"name":"X"} {"name":"S","subjects":["multi"],"pedantic":true}')
    assert cfg.name == "S" and cfg.subjects == ["multi"] and pedantic is True
    cfg, _ = parse_stream_config(b'{"NAME":"S","Subjects":["ci"]}')
    assert cfg.name == "S" and cfg.subjects == ["ci"]
    cfg, _ = parse_stream_config(b'{"name":"S\xff","description":"a\\ud800b"}')
    assert cfg.name == "S\ufffd" and cfg.description == "a\ufffdb"
    cfg, _ = parse_stream_config(b'{"name":"S","discard":"NEW","compression":"\\u0073\\u0032"}')
    assert (cfg.discard, cfg.compression) == ("new", "s2")
    cfg, _ = parse_stream_config(b'{"name":"S","subjects":[null,"a"],"metadata":{"k":null}}')
    assert cfg.subjects == ["", "a"] and cfg.metadata == {"k": ""}
    # nested structs merge across duplicate keys, slices are replaced, null keeps scalars
    cfg, _ = parse_stream_config(
        b'{"consumer_limits":{"max_ack_pending":3},"consumer_limits":{"inactive_threshold":7},'
        b'"subjects":["a"],"subjects":["b"],"max_msgs":5,"max_msgs":null,"metadata":{"a":"1"},"metadata":{"b":"2"}}'
    )
    assert cfg.consumer_limits == {"inactive_threshold": 7, "max_ack_pending": 3}
    assert cfg.subjects == ["b"] and cfg.max_msgs == 5 and cfg.metadata == {"a": "1", "b": "2"}
    cfg, _ = parse_stream_config(b'{"subjects":["a"],"subjects":null,"metadata":{"a":"1"},"metadata":null}')
    assert cfg.subjects is None and cfg.metadata is None


def test_decode_generic_helpers():
    fields = {"seq": J.UINT64, "last_by_subj": str, "no_hdr": bool}
    assert J.decode_strict(b'{"seq":5}', fields, "JSApiMsgGetRequest") == {"seq": 5}
    with pytest.raises(E.ApiError) as ei:
        J.decode_strict(b'{"seq":"5"}', fields, "JSApiMsgGetRequest")
    assert ei.value.description == (
        "invalid JSON: json: cannot unmarshal string into Go struct field JSApiMsgGetRequest.seq of type uint64"
    )
    # lenient: unknown fields ignored, one value only
    assert J.decode_lenient(b'{"seq":5,"zzz":1}', fields, "R") == {"seq": 5}
    with pytest.raises(E.ApiError) as ei:
        J.decode_lenient(b'{"seq":5} x', fields, "R")
    # observed on CONSUMER.UNPIN (json.Unmarshal): no offsets, Unmarshal's EOF text
    assert ei.value.description == "invalid JSON: invalid character 'x' after top-level value"
    for body in (b"", b'{"seq":5'):
        with pytest.raises(E.ApiError) as ei:
            J.decode_lenient(body, fields, "R")
        assert ei.value.description == "invalid JSON: unexpected end of JSON input"
    with pytest.raises(E.ApiError) as ei:
        J.decode_lenient(b'{"group":5}', {"group": str}, "JSApiConsumerUnpinRequest")
    assert ei.value.description == (
        "invalid JSON: json: cannot unmarshal number into Go struct field JSApiConsumerUnpinRequest.group of type string"
    )
    assert J.parse_json(b'{"a":[1,2.5,"x",null,true],"a":{"b":1}}') == {"a": {"b": 1}}
    with pytest.raises(J.JSONError):
        J.parse_json(b"")


# ------------------------------------------------------------------------------------------
# properties: the scanner agrees with Python's json on valid documents
# ------------------------------------------------------------------------------------------

import json as _json  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(_json_values, st.booleans())
def test_parse_json_roundtrip(value, ascii_only):
    text = _json.dumps(value, ensure_ascii=ascii_only, separators=(", ", ": ") if ascii_only else (",", ":"))
    raw = text.encode("utf-8", "surrogatepass")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return  # lone surrogates in the Python text: not valid UTF-8 JSON
    assert J.parse_json(raw) == _json.loads(text)
    # and dumps output decodes to the same value with both parsers
    enc = J.dumps(value)
    assert J.parse_json(enc) == _json.loads(enc) == value
