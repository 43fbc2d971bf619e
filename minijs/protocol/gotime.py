"""Go's ``time`` formats: RFC 3339 times, durations, and their parsers, with Go's error texts.

What nats-server prints and parses through Go's ``time`` package, for every floor that speaks
it (the JetStream API, the monitoring endpoints, config files, the command line):

* times are integer nanoseconds since the Unix epoch; ``0`` stands for Go's zero ``time.Time``
  (``"0001-01-01T00:00:00Z"``) in :func:`go_time`. A time a client sent is parsed with Go's
  lenient ``time.Parse(time.RFC3339, …)`` (:func:`parse_go_time_ex`) and remembers its UTC
  offset (:class:`GoTime`), because Go re-emits a parsed time in its own zone;
* durations are integer nanoseconds: :func:`go_duration` is ``time.Duration.String()``,
  :func:`parse_duration` is ``time.ParseDuration`` (its error texts, its int64 range, and its
  float arithmetic for fractions);
* :func:`time_quote` is the quoting of the ``time`` package's error texts.

Pure module: no I/O, stdlib only.
"""

from __future__ import annotations

ZERO_TIME = 0
"""Nanosecond value that stands for Go's zero ``time.Time``."""

_NS = 1_000_000_000
_SECS_PER_DAY = 86400


def time_quote(s: str) -> str:
    """Go's ``time.quote``: the text in double quotes, ``"`` and ``\\`` escaped, and each byte
    of a control or non-ASCII character written as ``\\xNN``."""
    out = ['"']
    for ch in s:
        if ch < " " or ch > "\x7f":
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
        elif ch in '"\\':
            out.append("\\" + ch)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


# --------------------------------------------------------------------------------------------
# Time
# --------------------------------------------------------------------------------------------


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of the proleptic Gregorian date (works for year 0 and earlier)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return y + (m <= 2), m, d


def _is_leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def _days_in(m: int, y: int) -> int:
    if m == 2:
        return 29 if _is_leap(y) else 28
    return 30 if m in (4, 6, 9, 11) else 31


class GoTime(int):
    """Nanoseconds since the Unix epoch (UTC) that remember the UTC ``offset`` (seconds) they were
    written with: Go keeps a parsed time's zone and re-emits it (``"…+01:00"``), so a
    client-supplied time is echoed with its offset. Compares and hashes as the plain int."""

    offset: int

    def __new__(cls, ns: int, offset: int = 0) -> "GoTime":
        obj = super().__new__(cls, ns)
        obj.offset = int(offset)
        return obj

    def __repr__(self) -> str:
        return "GoTime(%d, offset=%d)" % (int(self), self.offset)

    def __reduce__(self):  # keep the offset through copy/pickle
        return (GoTime, (int(self), self.offset))


def go_time(ns: int, offset: int | None = None) -> str:
    """Go's ``time.Time`` JSON form of ``ns`` (nanoseconds since the Unix epoch).

    RFC 3339 with up to 9 fractional digits, trailing zeros trimmed (no ``.`` when the
    fraction is zero). The zone is ``Z`` unless ``offset`` (seconds east of UTC; default: the
    ``offset`` of a :class:`GoTime`, else 0) is non-zero, then ``±hh:mm``. ``0``
    (:data:`ZERO_TIME`) renders Go's zero time ``"0001-01-01T00:00:00Z"``.
    """
    if offset is None:
        offset = getattr(ns, "offset", 0)
    if ns == ZERO_TIME and not offset:
        return "0001-01-01T00:00:00Z"
    return rfc3339_nano(ns, offset)


def rfc3339_nano(ns: int, offset: int = 0) -> str:
    """Go's ``time.RFC3339Nano`` of ``ns`` (nanoseconds since the Unix epoch) in the zone
    ``offset`` seconds east of UTC (``Z`` for 0): what :func:`go_time` prints, without its
    zero-time convention (``0`` is ``1970-01-01T00:00:00Z`` here)."""
    secs, frac = divmod(int(ns), _NS)
    secs += offset
    days, sod = divmod(secs, _SECS_PER_DAY)
    y, m, d = _civil_from_days(days)
    hh, rem = divmod(sod, 3600)
    mm, ss = divmod(rem, 60)
    ystr = "%04d" % y if y >= 0 else "-%04d" % -y
    out = "%s-%02d-%02dT%02d:%02d:%02d" % (ystr, m, d, hh, mm, ss)
    if frac:
        out += "." + ("%09d" % frac).rstrip("0")
    if not offset:
        return out + "Z"
    sign = "+" if offset > 0 else "-"
    oh, om = divmod(abs(offset) // 60, 60)
    return out + "%s%02d:%02d" % (sign, oh, om)


class GoTimeError(ValueError):
    """A time string Go's ``time.Parse(time.RFC3339, …)`` rejects; ``str()`` is Go's text."""


_RFC3339 = "2006-01-02T15:04:05Z07:00"


def _parse_error(value: str, layout_elem: str, value_elem: str, message: str = "") -> GoTimeError:
    if message:
        return GoTimeError("parsing time " + time_quote(value) + message)
    return GoTimeError(
        "parsing time %s as %s: cannot parse %s as %s"
        % (time_quote(value), time_quote(_RFC3339), time_quote(value_elem), time_quote(layout_elem))
    )


def _getnum(s: str, fixed: bool) -> tuple[int, str] | None:
    if not s or not "0" <= s[0] <= "9":
        return None
    if len(s) < 2 or not "0" <= s[1] <= "9":
        if fixed:
            return None
        return int(s[0]), s[1:]
    return int(s[:2]), s[2:]


def parse_go_time_ex(s: str) -> GoTime:
    """Parse like Go's ``time.Parse(time.RFC3339, s)`` (what nats-server 2.15.1 does for a JSON
    time) and return a :class:`GoTime` that remembers the offset.

    Go's parser is more lenient than RFC 3339: a one-digit hour (``T1:00:00Z``), ``,`` as the
    fraction separator and any number of fraction digits (truncated to ns) are accepted;
    offsets up to ``±24:60``. Go's zero time returns :data:`ZERO_TIME`. Raises
    :class:`GoTimeError` with Go's text, e.g. ``parsing time "x" as
    "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"`` or ``parsing time "…": month out of
    range`` (all verified on the real server).
    """
    value = s
    # stdLongYear
    if len(value) < 4 or not all("0" <= c <= "9" for c in value[:4]):
        raise _parse_error(s, "2006", value)
    year, value = int(value[:4]), value[4:]
    nums: list[int] = []
    for lit, elem, fixed, lo, hi, name in (
        ("-", "01", True, 1, 12, "month"),
        ("-", "02", True, 0, 99, "day"),  # validated after parsing
        ("T", "15", False, 0, 23, "hour"),
        (":", "04", True, 0, 59, "minute"),
        (":", "05", True, 0, 59, "second"),
    ):
        if not value.startswith(lit):
            raise _parse_error(s, lit, value)
        value = value[1:]
        hold = value
        got = _getnum(value, fixed)
        if got is None:
            raise _parse_error(s, elem, hold)
        num, value = got
        if not lo <= num <= hi:
            raise _parse_error(s, elem, value, ": %s out of range" % name)
        nums.append(num)
    month, day, hour, minute, sec = nums
    nsec = 0
    if len(value) >= 2 and value[0] in ".," and "0" <= value[1] <= "9":
        n = 2
        while n < len(value) and "0" <= value[n] <= "9":
            n += 1
        nsec = int((value[1:n] + "000000000")[:9])
        value = value[n:]
    # stdISO8601ColonTZ
    hold = value
    offset = 0
    if value.startswith("Z"):
        value = value[1:]
    else:
        if len(value) < 6 or value[3] != ":":
            raise _parse_error(s, "Z07:00", hold)
        sign, hh, mm, value = value[0], value[1:3], value[4:6], value[6:]
        h = _getnum(hh, True)
        m = _getnum(mm, True) if h is not None else None
        if h is None or m is None:
            raise _parse_error(s, "Z07:00", hold)
        if h[0] > 24:
            raise _parse_error(s, "Z07:00", value, ": time zone offset hour out of range")
        if m[0] > 60:
            raise _parse_error(s, "Z07:00", value, ": time zone offset minute out of range")
        if sign not in "+-":
            raise _parse_error(s, "Z07:00", hold)
        offset = (h[0] * 60 + m[0]) * 60 * (1 if sign == "+" else -1)
    if value:
        raise _parse_error(s, "", value, ": extra text: " + time_quote(value))
    if day < 1 or day > _days_in(month, year):
        raise _parse_error(s, "", value, ": day out of range")
    secs = _days_from_civil(year, month, day) * _SECS_PER_DAY + hour * 3600 + minute * 60 + sec - offset
    ns = secs * _NS + nsec
    if ns == _GO_ZERO_NS and offset == 0:
        return GoTime(ZERO_TIME)
    return GoTime(ns, offset)


_GO_ZERO_NS = _days_from_civil(1, 1, 1) * _SECS_PER_DAY * _NS


def parse_go_time(s: str) -> int:
    """Parse an RFC 3339 time like Go (see :func:`parse_go_time_ex`) and return nanoseconds since
    the Unix epoch normalised to UTC (a plain ``int``; Go's zero time → :data:`ZERO_TIME`)."""
    return int(parse_go_time_ex(s))


def go_duration(ns: int) -> str:
    """Go's ``time.Duration.String()`` (``"5s"``, ``"1m0s"``, ``"1.5s"``, ``"100ms"``, ``"0s"``)."""
    ns = int(ns)
    if ns == 0:
        return "0s"
    neg = ns < 0
    u = -ns if neg else ns
    if u < _NS:
        if u < 1000:
            out = "%dns" % u
        elif u < 1_000_000:
            out = _frac_str(u, 3) + "µs"
        else:
            out = _frac_str(u, 6) + "ms"
    else:
        secs, frac = divmod(u, _NS)
        s_part = str(secs % 60) + (("." + ("%09d" % frac).rstrip("0")) if frac else "") + "s"
        mins = secs // 60
        if mins == 0:
            out = s_part
        else:
            hours, mins = divmod(mins, 60)
            out = ("%dh" % hours if hours else "") + "%dm" % mins + s_part
    return "-" + out if neg else out


def _frac_str(v: int, prec: int) -> str:
    whole, frac = divmod(v, 10**prec)
    if frac == 0:
        return str(whole)
    return str(whole) + "." + ("%0*d" % (prec, frac)).rstrip("0")


# --------------------------------------------------------------------------------------------
# Durations: time.ParseDuration
# --------------------------------------------------------------------------------------------

#: Go's ``time`` unit names, in nanoseconds.
_UNITS_NS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
             "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}
_MAX_INT64 = (1 << 63) - 1
_LIMIT = 1 << 63  # ParseDuration works in uint64 up to 1<<63, then applies the sign


def parse_duration(text: str) -> int:
    """Go's ``time.ParseDuration`` ("1h30m", "500ms", "1.5s"), in nanoseconds, with its error texts
    (``time: invalid duration "x"``, ``time: missing unit in duration "1"``,
    ``time: unknown unit "x" in duration "1x"``) and its int64 nanosecond range."""
    orig = text
    s = text
    neg = False
    if s and s[0] in "-+":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(f"time: invalid duration {time_quote(orig)}")
    total = 0
    i, n = 0, len(s)
    while i < n:
        if not (s[i] == "." or "0" <= s[i] <= "9"):
            raise ValueError(f"time: invalid duration {time_quote(orig)}")
        j = i
        while j < n and "0" <= s[j] <= "9":
            j += 1
        whole = int(s[i:j]) if j > i else 0
        if whole > _LIMIT:  # Go's leadingInt overflow
            raise ValueError(f"time: invalid duration {time_quote(orig)}")
        pre = j > i
        frac, scale, post = 0, 1.0, False
        if j < n and s[j] == ".":
            j += 1
            k = j
            while k < n and "0" <= s[k] <= "9":
                k += 1
            digits = s[j:k]
            post = k > j
            # Go's leadingFraction keeps digits while they fit; the rest only end the number.
            for d in digits:
                if frac > _MAX_INT64 // 10:
                    break
                longer = frac * 10 + int(d)
                if longer > _LIMIT:
                    break
                frac = longer
                scale *= 10.0
            j = k
        if not pre and not post:
            raise ValueError(f"time: invalid duration {time_quote(orig)}")
        k = j
        while k < n and s[k] != "." and not ("0" <= s[k] <= "9"):
            k += 1
        if k == j:
            raise ValueError(f"time: missing unit in duration {time_quote(orig)}")
        unit_text = s[j:k]
        unit = _UNITS_NS.get(unit_text)
        if unit is None:
            raise ValueError(f"time: unknown unit {time_quote(unit_text)} in duration "
                             f"{time_quote(orig)}")
        if whole > _LIMIT // unit:
            raise ValueError(f"time: invalid duration {time_quote(orig)}")
        value = whole * unit
        if frac:
            value += int(float(frac) * (unit / scale))  # float64 arithmetic, as in Go
        total += value
        if total > _LIMIT:
            raise ValueError(f"time: invalid duration {time_quote(orig)}")
        i = k
    if neg:
        total = -total
    elif total > _MAX_INT64:
        raise ValueError(f"time: invalid duration {time_quote(orig)}")
    return total
