"""minijs.protocol.gotime: Go's time.ParseDuration and RFC 3339 printing, the one home every
floor uses (config files, Nats-TTL and NAK delays, the monitor, the JetStream API)."""
from __future__ import annotations

import pytest

from minijs.jetstream.headers import parse_go_duration
from minijs.protocol.gotime import go_duration, go_time, parse_duration, rfc3339_nano


@pytest.mark.parametrize("text, ns", [
    ("0", 0), ("+0", 0), ("-0", 0), ("1s", 1_000_000_000), ("1.5s", 1_500_000_000),
    ("1h30m", 5_400_000_000_000), ("300ms", 300_000_000), ("1.s", 1_000_000_000),
    (".5s", 500_000_000), ("1us", 1_000), ("1\u00b5s", 1_000), ("1\u03bcs", 1_000),
    # Go adds a fraction as int(float64(f) * (float64(unit) / scale)): exact for these, where
    # multiplying the decimal as a float would land one nanosecond short.
    ("0.3s", 300_000_000), ("2.070s", 2_070_000_000), ("32.3m", 1_938_000_000_000),
    ("2.425h", 8_730_000_000_000),
    # the int64 range: Go works in uint64 up to 1<<63 and then applies the sign
    ("9223372036854775807ns", (1 << 63) - 1), ("-9223372036854775808ns", -(1 << 63)),
    ("2562047h", 2562047 * 3_600_000_000_000),
])
def test_parse_duration_values(text, ns):
    assert parse_duration(text) == ns
    assert parse_go_duration(text) == ns


@pytest.mark.parametrize("text, message", [
    ("", 'time: invalid duration ""'),
    ("1", 'time: missing unit in duration "1"'),
    ("1x", 'time: unknown unit "x" in duration "1x"'),
    (".s", 'time: invalid duration ".s"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("-9223372036854775809ns", 'time: invalid duration "-9223372036854775809ns"'),
    ("2562048h", 'time: invalid duration "2562048h"'),
    ("1\u00e9s", 'time: unknown unit "\\xc3\\xa9s" in duration "1\\xc3\\xa9s"'),
])
def test_parse_duration_errors(text, message):
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    assert str(info.value) == message
    assert parse_go_duration(text) is None


def test_rfc3339_nano_has_no_zero_time_convention():
    assert go_time(0) == "0001-01-01T00:00:00Z"
    assert rfc3339_nano(0) == "1970-01-01T00:00:00Z"
    assert rfc3339_nano(1_500_000_000) == go_time(1_500_000_000) == "1970-01-01T00:00:01.5Z"
    assert rfc3339_nano(0, 3600) == "1970-01-01T01:00:00+01:00"


@pytest.mark.parametrize("ns, text", [
    (0, "0s"), (350, "350ns"), (12_500, "12.5\u00b5s"), (1_401_133, "1.401133ms"),
    (1_500_000_000, "1.5s"), (120_000_000_000, "2m0s"), (3_723_500_000_000, "1h2m3.5s"),
    (-2_500_000_000, "-2.5s"),
])
def test_go_duration(ns, text):
    assert go_duration(ns) == text
