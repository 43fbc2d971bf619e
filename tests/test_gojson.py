"""CONNECT JSON decoded as Go's encoding/json decodes it into nats-server's ClientOpts."""
from __future__ import annotations

import pytest

from minijs.protocol import gojson
from minijs.protocol.gojson import CLIENT_OPTS, SERVER_INFO, unmarshal

DEFAULTS = {"verbose": True, "pedantic": True, "echo": True}


def connect(body: bytes, current: dict | None = None) -> dict | None:
    return unmarshal(body, CLIENT_OPTS, dict(DEFAULTS if current is None else current))


def test_plain_fields():
    got = connect(b'{"verbose":false,"name":"n","protocol":1,"headers":true,'
                  b'"import":{"allow":["a"],"deny":null}}')
    assert got == {"verbose": False, "pedantic": True, "echo": True, "name": "n", "protocol": 1,
                   "headers": True, "import": {"allow": ["a"], "deny": None}}


@pytest.mark.parametrize("key", [b"VERBOSE", b"Verbose", b"vErBoSe", b"verbo\\u017fe",
                                 b"VERBO\xc5\xbfE"])
def test_keys_fold_case(key):
    assert connect(b'{"' + key + b'":false}')["verbose"] is False


def test_kelvin_sign_folds_to_k():
    assert connect(b'{"auth_to\\u212aen":"t"}')["auth_token"] == "t"


def test_other_non_ascii_never_matches():
    # Python would upper-case "ß" to "SS"; Go does not fold it to ASCII.
    assert "pass" not in connect('{"paß":"x"}'.encode())


def test_exact_match_then_in_order():
    assert connect(b'{"verbose":true,"VERBOSE":false}')["verbose"] is False
    assert connect(b'{"VERBOSE":false,"verbose":true}')["verbose"] is True


@pytest.mark.parametrize("body", [b"null", b'{"verbose":null}', b'{"protocol":null}',
                                  b'{"name":null}'])
def test_null_changes_nothing(body):
    assert connect(body) == DEFAULTS


def test_null_resets_pointers_and_slices():
    got = connect(b'{"import":null}', {**DEFAULTS, "import": {"allow": ["a"]}})
    assert got["import"] is None


def test_later_connect_keeps_earlier_fields():
    first = connect(b'{"verbose":false,"name":"a"}')
    assert connect(b'{"echo":false}', first) == {
        "verbose": False, "pedantic": True, "echo": False, "name": "a"}


@pytest.mark.parametrize("body", [
    b'{"verbose":"yes"}', b'{"verbose":1}', b'{"verbose":[]}', b'{"verbose":{}}',
    b'{"name":5}', b'{"name":true}', b'{"name":[]}', b'{"protocol":"1"}', b'{"protocol":1.0}',
    b'{"protocol":1e0}', b'{"protocol":true}', b'{"protocol":99999999999999999999}',
    b'{"import":[]}', b'{"import":"a"}', b'{"import":{"allow":"a"}}',
    b'{"import":{"allow":[1]}}', b'{"verbose":false,"verbose":"x"}'])
def test_type_errors(body):
    assert connect(body) is None


@pytest.mark.parametrize("body", [
    b"[]", b"5", b'"x"', b"true", b"", b"{", b"{}x", b"{} {}", b'{"x":NaN}',
    b'{"x":Infinity}', b'{"x":-Infinity}', b"\xef\xbb\xbf{}", b"{}\x0c", b"{}\x00",
    b'{"a":"\x01"}', b'{"a":"\\x"}', b"{'a':1}", b'{"a":01}', b'{"a":1.}', b'{"a":.5}',
    b'{"a":+1}', b'{"a":[1,]}', b'{"a":1,}'])
def test_refused(body):
    assert connect(body) is None


@pytest.mark.parametrize("body", [
    b' \t\r\n{}\n', b'{"x":1e999}', b'{"x":[1,{"y":[null,true,"\\u00e9"]}]}',
    b'{"name":"\xff"}', b'{"verbose\\u0000":false}', b'{"protocol":-0}'])
def test_accepted(body):
    assert connect(body) is not None


def test_invalid_utf8_and_lone_surrogates_become_replacement_chars():
    assert connect(b'{"name":"a\xffb\xe2\x82"}')["name"] == "a\ufffdb\ufffd\ufffd"
    assert connect(b'{"name":"\\ud800x"}')["name"] == "\ufffdx"
    assert connect(b'{"name":"\\ud83d\\ude00"}')["name"] == "\U0001F600"


def test_deep_nesting_without_recursion_error():
    ok = b'{"x":' + b"[" * 1500 + b"]" * 1500 + b',"verbose":false}'
    assert connect(ok)["verbose"] is False
    assert connect(b'{"x":' + b"[" * 1500) is None
    # Go's limit: 10000 levels counting the outer object.
    assert connect(b'{"x":' + b"[" * 9999 + b"]" * 9999 + b"}") is not None
    assert connect(b'{"x":' + b"[" * 10000 + b"]" * 10000 + b"}") is None


def test_fast_path_agrees_with_the_syntax_layer():
    """unmarshal reads with Python's C decoder; the API decoder's own parser (also the fallback
    for deep nesting) must accept and refuse the same texts and give the same values."""
    samples = ['{"a":[1,{"b":[true,false,null,"x\\n"]}],"c":{}}', "[]", "[ ]", "{ }", '"s"',
               "1.5e3", "[1,]", '{"a":1,}', '{"a" 1}', "[1 2]", "{,}", "tru", "[", "",
               ' { "k" : [ 1 , 2 ] } ', '{"a":"\\ud800"}', '{"a":"\\ud800\\u0041"}', "NaN",
               "-Infinity", "01", "1.", "-", '"\\q"', '"\t"', "\ufeff{}", "{}x", " \f{}",
               '{"a":1,"a":{"b":2}}', '"\\ud83d\\ude00"']
    for text in samples:
        data = text.encode("utf-8", "surrogatepass")
        try:
            fast = gojson._parse_fast(data)
        except (ValueError, gojson.JSONError):
            fast = "error"
        try:
            exact = gojson._parse_single(data)
        except gojson.JSONError:
            exact = "error"
        if "error" in (fast, exact):
            assert fast == exact, text
        else:
            assert gojson._node_to_py(fast) == gojson._node_to_py(exact), text
    for raw in (b'{"a":"\xff\xfe"}', b'"\xc3"', b"{\xff}"):
        try:
            fast = gojson._node_to_py(gojson._parse_fast(raw))
        except (ValueError, gojson.JSONError):
            fast = "error"
        try:
            exact = gojson._node_to_py(gojson._parse_single(raw))
        except gojson.JSONError:
            exact = "error"
        assert fast == exact, raw


def test_server_info_types():
    assert unmarshal(b'{"port":4222,"connect_urls":["a"],"gateway_cmd_payload":"QQ=="}',
                     SERVER_INFO, {}) is not None
    for body in (b'{"port":"x"}', b'{"connect_urls":"u"}', b'{"max_payload":2147483648}',
                 b'{"client_id":-1}', b'{"client_id":-0}', b'{"gossip_mode":256}', b'{"gateway_cmd_payload":"QQ"}',
                 b"5"):
        assert unmarshal(body, SERVER_INFO, {}) is None, body


# ------------------------------------------------------------------------------------------
# Field tables: one declaration per Go struct, everything else derived
# ------------------------------------------------------------------------------------------

INNER = gojson.go_struct("Inner", ("a", gojson.STRING), ("b", gojson.INT, gojson.OMITEMPTY))
OUTER = gojson.go_struct(
    "Outer",
    ("name", gojson.STRING),
    ("note", gojson.STRING, gojson.OMITEMPTY),
    ("when", gojson.Ptr(gojson.TIME), gojson.OMITEMPTY),
    ("inner", INNER),
    ("opt", gojson.Ptr(INNER), gojson.OMITEMPTY),
    ("list", gojson.Slice(INNER), gojson.OMITEMPTY),
    ("tags", gojson.Slice(gojson.STRING)),
    ("meta", gojson.Map(gojson.STRING), gojson.OMITEMPTY),
)


def test_table_zero_and_complete():
    assert OUTER.go_zero() == {"name": "", "note": "", "when": None, "inner": {"a": "", "b": 0},
                               "opt": None, "list": None, "tags": None, "meta": None}
    got = OUTER.complete({"name": "x", "opt": {"b": 2, "junk": 1}, "list": [None, {"a": "y"}],
                          "unknown": True})
    assert got["opt"] == {"a": "", "b": 2}
    assert got["list"] == [{"a": "", "b": 0}, {"a": "y", "b": 0}]
    assert got["inner"] == {"a": "", "b": 0} and got["when"] is None and "unknown" not in got


def test_table_encode_applies_omitempty_in_field_order():
    from minijs.protocol.gomarshal import dumps
    from minijs.protocol.gotime import GoTime

    value = OUTER.complete({"name": "x", "when": GoTime(1_500_000_000, 3600),
                            "meta": {"z": "1", "a": "2"}, "tags": []})
    assert dumps(OUTER.encode(value)) == (
        b'{"name":"x","when":"1970-01-01T01:00:01.5+01:00","inner":{"a":""},"tags":[],'
        b'"meta":{"a":"2","z":"1"}}')
    # a nil slice is null when not omitempty; overrides replace a field before omitempty
    assert OUTER.encode(OUTER.go_zero(), {"meta": {}}) == {"name": "", "inner": {"a": ""},
                                                           "tags": None}


def test_table_equal_is_deep_equal():
    from minijs.protocol.gotime import GoTime

    a = OUTER.complete({"when": GoTime(0, 3600), "tags": []})
    assert OUTER.equal(a, OUTER.complete({"when": GoTime(0, 3600), "tags": []}))
    assert not OUTER.equal(a, OUTER.complete({"when": GoTime(0), "tags": []}))  # another zone
    assert not OUTER.equal(a, OUTER.complete({"when": GoTime(0, 3600), "tags": None}))  # nil
    assert not OUTER.equal(a, OUTER.complete({"when": GoTime(0, 3600), "tags": [],
                                              "inner": {"b": 1}}))


def test_dataclass_table_and_bad_rows():
    import dataclasses

    @dataclasses.dataclass
    class Conf:
        name: str = gojson.go_field(gojson.STRING)
        limits: dict = gojson.go_field(INNER)
        tags: list | None = gojson.go_field(gojson.Slice(gojson.STRING), gojson.OMITEMPTY)

    st = gojson.struct_of(Conf, "Conf")
    assert list(st.fields) == ["name", "limits", "tags"] and st.omitempty == {"tags"}
    c = Conf()
    assert c.limits == {"a": "", "b": 0} and c.limits is not Conf().limits
    assert st.encode(c.__dict__) == {"name": "", "limits": {"a": ""}}
    with pytest.raises(ValueError):
        gojson.go_struct("Bad", ("a", gojson.STRING, "omitzero"))
    with pytest.raises(ValueError):
        gojson.go_field(gojson.STRING, "omitzero")
