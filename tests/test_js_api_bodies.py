"""nats-server's request body predicates (``isEmptyRequest``, ``isJSONObjectOrArray``) as
:mod:`minijs.jetstream.jsonfmt` implements them; the wire behaviour is proven by
``conformance/test_js_api_edges.py``."""
from __future__ import annotations

import pytest

from minijs.jetstream import jsonfmt as J


@pytest.mark.parametrize("body", [b"", b"{}", b"{ }", b" {}\n", b"\t{\r\n}\r\n"])
def test_empty_requests(body: bytes) -> None:
    assert J.is_empty_request(body)


@pytest.mark.parametrize("body", [b" ", b"\n\t ", b"null", b"[]", b"{}{}", b"{} {}", b'{"a":1}',
                                  b"\x0c{}", b"{}\x0b", b"\xef\xbb\xbf{}", b"{", b"garbage"])
def test_non_empty_requests(body: bytes) -> None:
    assert not J.is_empty_request(body)


@pytest.mark.parametrize("body,expected", [
    (b"", False), (b" \t\r\n", False), (b"{", True), (b" [1]", True), (b"\r\n{}", True),
    (b"null", False), (b'"x"', False), (b"7", False), (b"\x0c{}", False), (b"\x0b[]", False),
    (b"\xc2\xa0{}", False), (b"garbage", False),
])
def test_object_or_array(body: bytes, expected: bool) -> None:
    assert J.is_object_or_array(body) is expected


def test_unsigned_minus_zero_is_refused() -> None:
    """strconv.ParseUint takes no sign: ``-0`` fits int64 but not uint64."""
    assert J.decode_strict(b'{"n":-0}', {"n": J.INT64}, "R") == {"n": 0}
    with pytest.raises(Exception) as info:
        J.decode_strict(b'{"n":-0}', {"n": J.UINT64}, "R")
    assert str(info.value) == ("invalid JSON: json: cannot unmarshal number -0 into Go struct "
                               "field R.n of type uint64")


def test_update_fills_empty_republish_destination() -> None:
    from minijs.jetstream.config import stream as C
    old, _ = C.parse_stream_config(b'{"name":"S","subjects":["s.>"]}')
    old = C.validate_and_default(old, create=True)
    new, _ = C.parse_stream_config(b'{"name":"S","subjects":["s.>"],"republish":{}}')
    cfg = C.check_update(old, new)
    assert (cfg.republish["src"], cfg.republish["dest"]) == (">", ">")
