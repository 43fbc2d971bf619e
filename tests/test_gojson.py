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
