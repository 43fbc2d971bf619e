"""Unit tests for minijs.core.transform (applying subject mappings).

Expectations come from nats-server's own transform tests, and every row of ``REAL`` was
observed on the real nats-server v2.15.1 binary: a memory stream with ``subject_transform``
{src, dest} capturing the subject, one publish, and the stored subject read back with
``$JS.API.STREAM.MSG.GET`` (a non-matching subject is stored unchanged — ``None`` here).
"""

from __future__ import annotations

import pytest

from minijs.core.transform import SubjectTransform, fnv1a32

# (src, dest, subject, expected result of apply)
REAL = [
    # plain wildcards and ">"
    ("", "prefix.>", "foo", "prefix.foo"),
    ("foo", "bar", "foo", "bar"),
    ("foo.*.bar.*.baz", "req.$2.$1", "foo.A.bar.B.baz", "req.B.A"),
    ("foo.*.bar.*.baz", "req.{{wildcard(2)}}.{{wildcard(1)}}", "foo.A.bar.B.baz", "req.B.A"),
    ("baz.>", "my.pre.>", "baz.1.2.3", "my.pre.1.2.3"),
    ("*", "foo.bar.$1", "foo", "foo.bar.foo"),
    ("foo.>", ">", "foo.w.e", "w.e"),
    ("foo.*.>", "$1.>", "foo.w.e.r", "w.e.r"),
    # indexes that name no "*" refer to the first token; "$+1" parses; "$foo" is literal
    ("foo.*", "a.$0.$1", "foo.x", "a.foo.x"),
    ("foo.*", "a.$-1.{{wildcard(0)}}", "foo.x", "a.foo.foo"),
    ("foo.*", "a.$+1", "foo.x", "a.x"),
    ("foo.*", "a.$foo.$1", "foo.x", "a.$foo.x"),
    ("foo.*", "a.{{left(0,2)}}.{{left(1,2)}}", "foo.xyz", "a.fo.xy"),
    (">", "a.$0.>", "q.w.e", "a.q.q.w.e"),
    # split / slice
    ("*", "{{splitfromleft(1,3)}}", "12345", "123.45"),
    ("*", "{{SplitFromRight(1,3)}}", "12345", "12.345"),
    ("*", "{{SliceFromLeft(1,3)}}", "1234567890", "123.456.789.0"),
    ("*", "{{SliceFromRight(1,3)}}", "1234567890", "1.234.567.890"),
    ("*", "{{SliceFromLeft(1,3)}}", "123456", "123.456"),
    ("*", "{{SliceFromRight(1,3)}}", "123456", "123.456"),
    ("*", "x.{{splitfromleft(1,0)}}", "1234", "x.1234"),
    ("*", "x.{{splitfromright(1,4)}}", "1234", "x.1234"),
    ("*", "{{split(1,-)}}", "-abc-def--ghi-", "abc.def.ghi"),
    ("*", "{{split(1,-)}}", "abc-def--ghi-", "abc.def.ghi"),
    ("*", "x.{{split(1,-)}}", "--a", "x..a"),  # Go quirk: leading run keeps one "."
    ("*", "x.{{split(1,-)}}", "a--", "x.a"),
    ("*", "x.{{split(1,-)}}.y", "---a---b", "x..a.b.y"),
    ("*", "x.{{split(1,ab)}}", "1ab2abab3", "x.1.2.3"),
    ("*", "x.{{split(1,)}}", "abc", "x.a.b.c"),  # empty delimiter: one token per character
    ("*.*", "{{split(2,-)}}.{{splitfromleft(1,2)}}", "foo.-abc-def--ghij-", "abc.def.ghij.fo.o"),
    # left / right
    ("*", "{{right(1,1)}}", "1234", "4"),
    ("*", "{{right(1,3)}}", "1234", "234"),
    ("*", "{{right(1,6)}}", "1234", "1234"),
    ("*", "x.{{right(1,4)}}", "1234", "x.1234"),
    ("*", "{{left(1,1)}}", "1234", "1"),
    ("*", "{{left(1,3)}}", "1234", "123"),
    ("*", "{{left(1,6)}}", "1234", "1234"),
    ("*", "x.{{left(1,0)}}", "1234", "x.1234"),
    ("*", "x.{{left(1,-2)}}", "1234", "x.1234"),
    # partition: FNV-1a 32, tokens concatenated without separator, whole subject by default
    ("*", "bar.{{partition(0)}}", "baz", "bar.0"),
    ("*", "bar.{{partition(10, 0)}}", "foo", "bar.3"),
    ("*.*", "bar.{{partition(10)}}", "foo.bar", "bar.6"),
    ("*", "bar.{{partition(10)}}", "foo", "bar.3"),
    ("*", "bar.{{partition(10)}}", "baz", "bar.0"),
    ("*", "bar.{{partition(10)}}", "qux", "bar.9"),
    ("foo.bar", "baz.{{partition(10)}}", "foo.bar", "baz.6"),
    ("foo.baz", "qux.{{partition(10)}}", "foo.baz", "qux.4"),
    ("test.subject", "result.{{partition(5)}}", "test.subject", "result.0"),
    ("foo.bar", "x.{{partition(1000,1)}}", "foo.bar", "x.196"),  # literal src: indexes ignored
    ("*.*", "p.{{partition(1000,1,2)}}", "ab.c", "p.331"),
    ("*.*", "p.{{partition(1000,1,2)}}", "a.bc", "p.331"),
    ("*.*", "p.{{partition(1000,2,1)}}", "a.bc", "p.697"),
    ("*.*", "p.{{partition(1000)}}", "a.bc", "p.53"),
    ("*.*", "p.{{ Partition (1000, 2) }}", "a.bc", "p.946"),
    ("*.*", "p.{{partition(-7,1)}}", "hello.x", "p.1335831723"),  # int32 → uint32 modulo
    ("*.*", "p.{{partition(-4294967297,1)}}", "hello.x", "p.1335831723"),  # wraps to -1
    ("*.*", "p.{{partition(-2147483648,1)}}", "hello.x", "p.1335831723"),
    ("foo.*", "a.{{partition(100,0)}}", "foo.xyz", "a.23"),
    (">", "a.{{partition(9)}}.>", "q.w.e", "a.2.q.w.e"),
    ("*.>", "{{partition(5,1)}}.>", "q.w.e", "4.w.e"),
    ("*", "bar.{{random(0)}}", "qux", "bar.0"),
    # non-ASCII: functions work on UTF-8 bytes
    ("*", "{{left(1,2)}}", "éa", "é"),
    ("*", "{{left(1,3)}}", "éa", "éa"),
    ("*", "{{slicefromleft(1,2)}}", "ééé", "é.é.é"),
    ("*", "{{split(1,é)}}", "aébéc", "a.b.c"),
    ("*", "{{split(1,)}}", "aéb", "a.é.b"),
    ("*", "p.{{partition(1000)}}", "日本語", "p.351"),
    ("*", "p.{{partition(1000,1)}}", "日本語", "p.351"),
    # no match
    ("foo.*", "bar.$1", "foo.x.y", None),
    ("foo.*", "bar.$1", "fox.x", None),
    ("foo.>", "bar.>", "foo", None),
]


@pytest.mark.parametrize("src,dest,subject,expected", REAL)
def test_apply_matches_real_server(src: str, dest: str, subject: str, expected: str | None) -> None:
    assert SubjectTransform(src, dest).apply(subject) == expected


@pytest.mark.parametrize(
    "src,dest,subject,expected",
    [
        ("foo.*", "bar.$1", "foo", None),
        ("foo.*", "bar.$1", "bar.x", None),
        ("foo.*.baz", "bar.$1", "foo.x.bar", None),
        ("foo", "bar", "foo.x", None),
        ("foo", "bar", "fo", None),
        ("*.>", "x.>", "a", None),
        ("*.>", "x.$1.>", "a.b", "x.a.b"),
        # not a valid literal subject
        ("foo.*", "bar.$1", "foo.*", None),
        ("foo.*", "bar.$1", "foo.>", None),
        ("foo.*", "bar.$1", "foo.", None),
        ("foo.>", "bar.>", "foo..x", None),
        ("foo.>", "bar.>", "foo.x.>", None),
        ("foo.>", "bar.>", "foo.*.x", None),
        (">", "x.>", "", None),
        # tokens that merely contain * or > are literal
        ("foo.*", "bar.$1", "foo.a*", "bar.a*"),
        ("foo.>", "bar.>", "foo.>b.*c", "bar.>b.*c"),
        # literal destination tokens with braces are not format fields
        ("foo.*", "{x}.$1.{", "foo.a", "{x}.a.{"),
        ("foo.*.*", "a.$2.$2.$1", "foo.x.y", "a.y.y.x"),
    ],
)
def test_match_rules(src: str, dest: str, subject: str, expected: str | None) -> None:
    assert SubjectTransform(src, dest).apply(subject) == expected


def test_identity_transforms() -> None:
    for src, dest in ((">", ">"), ("", ">"), ("", ""), ("foo", ""), ("foo.*", "")):
        tr = SubjectTransform(src, dest)
        # like nats-server: no checks at all, not even subject validity
        for subject in ("a", "a.b.c", "foo..x", "foo.*"):
            assert tr.apply(subject) == subject
            assert tr.matches(subject)
    assert SubjectTransform("", "x.>").src == ">"


def test_matches() -> None:
    tr = SubjectTransform("a.*", "b.$1")
    assert tr.matches("a.x") and not tr.matches("a.x.y")


def test_random() -> None:
    tr = SubjectTransform("*", "bar.{{random(6)}}")
    seen = {tr.apply("qux") for _ in range(300)}
    assert seen == {"bar.%d" % i for i in range(6)}
    assert SubjectTransform("foo", "bar.{{random(3)}}").apply("foo") in {"bar.0", "bar.1", "bar.2"}
    assert SubjectTransform("foo", "bar.{{random(0)}}").apply("foo") == "bar.0"
    assert SubjectTransform("foo", "bar.{{random(3)}}").apply("fo") is None
    assert {SubjectTransform("*", "{{random(-2)}}").apply("a") for _ in range(100)} == {"0", "1"}


def test_byte_cut_inside_a_character() -> None:
    # nats-server emits the lone byte 0xC3 (shown as U+FFFD in JSON); we keep it as a surrogate
    out = SubjectTransform("b.*", "c.{{left(1,1)}}").apply("b.é")
    assert out == "c.\udcc3"
    assert out.encode("utf-8", "surrogateescape") == b"c.\xc3"
    assert SubjectTransform("*", "{{right(1,1)}}").apply("é") == "\udca9"
    assert SubjectTransform("*", "{{splitfromleft(1,1)}}").apply("é") == "\udcc3.\udca9"
    # surrogateescape'd input bytes round-trip
    raw = b"\xff\xfeab".decode("utf-8", "surrogateescape")
    assert SubjectTransform("*", "{{slicefromright(1,2)}}").apply(raw) == "\udcff\udcfe.ab"


def test_fnv1a32() -> None:
    assert fnv1a32(b"") == 0x811C9DC5
    assert fnv1a32(b"a") == 0xE40C292C
    assert fnv1a32(b"foobar") == 0xBF9CF968


@pytest.mark.parametrize(
    "src,dest,error",
    [
        ("foo..", "bar", "invalid subject"),
        ("foo.*", "bar.*", "invalid subject"),
        ("foo.*", "bar.$1.>", "invalid subject"),
        ("foo.>", "bar.baz", "invalid subject"),
        ("foo.*", "bar.>", "invalid subject"),
        ("foo.*", "bar.$2", "wildcard index out of range"),
        ("foo.*", "foo.{{wildcard(2)}}", "wildcard index out of range"),
        ("foo.*", "foo.{{unimplemented(1)}}", "unknown function"),
        ("foo.*", "foo.{{partition()}}", "function argument is invalid"),
        ("foo.*", "foo.{{random()}}", "function argument is invalid"),
        ("foo.*", "foo.{{wildcard(foo)}}", "function argument is invalid"),
        ("foo.*", "foo.{{wildcard()}}", "not enough arguments"),
        ("foo.*", "foo.{{wildcard(1,2)}}", "too many arguments"),
        ("foo.*", "foo.{{splitLeft(2,2}}", "unknown function"),
        ("foo", "bla.{{wildcard(1)}}", "wildcard index out of range"),
        ("foo", "bla.{{left(1,1)}}", "wildcard index out of range"),
        ("foo.*", "foo.{{partition(2147483648)}}", "function argument is invalid"),
        ("foo.*", "foo.{{random(2147483648)}}", "function argument is invalid"),
        ("*.*", "p.{{partition(4294967296,1)}}", "function argument is invalid"),
        ("*", "{{split(1,a b)}}", "function argument is invalid"),
        ("*", "{{left(1)}}", "not enough arguments"),
        ("*", "{{left(1,2,3)}}", "too many arguments"),
        ("*", "{{left(1,2147483648)}}", "function argument is invalid"),
    ],
)
def test_invalid_mappings_raise(src: str, dest: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        SubjectTransform(src, dest)


@pytest.mark.parametrize(
    "src,dest",
    [
        ("foo.*.*", "bar.$2"),
        ("foo.*.*", "bar.{{wildcard(1)}}"),
        ("foo.*.*", "bar.{{partition(1)}}"),
        ("foo.*.*", "bar.{{random(5)}}"),
        ("foo.*.bar.*.baz", "req.$2.$1"),
        ("*", "{{splitfromleft(1,1)}}"),
        ("*.*", "{{partition(10,1,2)}}"),
        ("foo.*.*", "foo.{{wildcard(1)}}.{{wildcard(2)}}.{{partition(5,1,2)}}"),
        ("foo.*", "foo.{{partition(2147483647)}}"),
        ("foo.*", "foo.{{random(2147483647)}}"),
        ("foo.bar", "foo.{{random(2147483647)}}"),
    ],
)
def test_valid_mappings(src: str, dest: str) -> None:
    """A valid mapping maps every subject its source matches, to a subject without empty
    tokens and, unless a split function adds tokens, with as many tokens as the destination
    has (each other function or ``$n`` makes one)."""
    tr = SubjectTransform(src, dest)
    subject = ".".join(f"t{i}" if tok == "*" else tok for i, tok in enumerate(src.split(".")))
    out = tr.apply(subject)
    assert isinstance(out, str), (subject, out)
    assert all(out.split(".")), out
    if "split" not in dest:
        assert len(out.split(".")) == len(dest.split(".")), out


def test_combined_functions() -> None:
    tr = SubjectTransform("orders.*.*.>", "o.{{partition(4,1,2)}}.{{left(2,3)}}.$1.{{splitfromright(2,2)}}.>")
    key = fnv1a32(b"eu" + b"123456") % 4
    assert tr.apply("orders.eu.123456.a.b") == "o.%d.123.eu.1234.56.a.b" % key
    assert tr.apply("orders.eu.123456") is None
    assert repr(tr).startswith("SubjectTransform(")
