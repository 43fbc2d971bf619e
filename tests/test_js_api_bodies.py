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
