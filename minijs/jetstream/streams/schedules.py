"""Message schedules (``allow_msg_schedules``), as nats-server 2.15 runs them.

A message published with ``Nats-Schedule`` is a *schedule*: it is stored on its own subject (with
``Nats-Rollup: sub`` added, so a newer message on that subject replaces it) and, when it falls
due, a new message is stored on its ``Nats-Schedule-Target`` with the schedule's headers and
payload (or those of the last message on ``Nats-Schedule-Source``), minus the scheduling headers
and anything that could stop it being stored (``Nats-Expected-*``, ``Nats-Msg-Id``,
``Nats-TTL``, ``Nats-Rollup``), plus ``Nats-Scheduler: <schedule subject>`` and
``Nats-Schedule-Next: <next time>`` (RFC 3339) or ``purge`` for a one-shot schedule, whose
message is then purged. ``Nats-Schedule-TTL`` and ``Nats-Schedule-Rollup`` become the produced
message's ``Nats-TTL`` and ``Nats-Rollup``.

Patterns (nats-server ``parseMsgSchedule``): ``@at <RFC 3339 time>``, ``@every <Go duration ≥
1s>``, six-field cron (seconds first; ``*``, ``?``, ranges, steps, lists, month and weekday
names) and ``@yearly``/``@annually``/``@monthly``/``@weekly``/``@daily``/``@midnight``/
``@hourly``; ``Nats-Schedule-Time-Zone`` (an IANA zone) applies to cron patterns only. A
repeating schedule that fell behind (a restart, a long clock advance) fires once and skips ahead.

Everything runs on the stream's clock: one timer armed at the earliest due schedule, so a
virtual-clock test sees the produced message the moment it advances past its time (nats-server
waits at least 250 ms between runs; minijs fires at the due time). A schedule whose message is
gone (deleted, purged, expired, replaced) is dropped when it falls due, as nats-server does.

The stream calls :func:`check_publish` for a client's message carrying any ``Nats-Schedul*``
header, and :meth:`MsgSchedules.stored` for every message it stores when schedules are on.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from minijs.core import subjects as _subjects
from minijs.jetstream import errors as E
from minijs.jetstream import headers as H
from minijs.jetstream import jsonfmt as J

SCHEDULE = "Nats-Schedule"
TIME_ZONE = "Nats-Schedule-Time-Zone"
SCHEDULE_TTL = "Nats-Schedule-TTL"
SCHEDULE_ROLLUP = "Nats-Schedule-Rollup"
TARGET = "Nats-Schedule-Target"
SOURCE = "Nats-Schedule-Source"
SCHEDULER = "Nats-Scheduler"
NEXT = "Nats-Schedule-Next"
NEXT_PURGE = "purge"

_NS = 1_000_000_000
_UTC = timezone.utc


class _Invalid(Exception):
    pass


# --------------------------------------------------------------------------------------------
# Patterns
# --------------------------------------------------------------------------------------------


def _round_second(ns: int) -> int:
    """Go ``Time.Round(time.Second)`` (halves away from zero)."""
    return (ns + _NS // 2) // _NS * _NS


def load_location(h: dict[str, str]) -> Any:
    """The zone of ``Nats-Schedule-Time-Zone`` (None when absent); raises 10223 when empty or
    unknown."""
    if TIME_ZONE not in h:
        return None
    name = h[TIME_ZONE]
    if not name:
        raise E.message_schedules_time_zone_invalid()
    if name == "UTC":
        return _UTC
    if name == "Local":  # Go's time.Local: the server's own zone
        return datetime.now().astimezone().tzinfo
    try:
        from zoneinfo import ZoneInfo
        return ZoneInfo(name)
    except Exception:
        raise E.message_schedules_time_zone_invalid() from None


def parse_schedule(pattern: str, loc: Any, ts: int, now: int) -> tuple[int, bool, bool]:
    """nats-server ``parseMsgSchedule``: ``(next fire time in ns, repeats, valid)`` for
    ``pattern`` after ``ts``; ``now`` is the clock (a repeating schedule never fires in the
    past). An empty pattern is valid and never fires (time 0)."""
    if not pattern:
        return 0, False, True
    if pattern.startswith("@at "):
        if loc is not None:
            return 0, False, False
        try:
            return J.parse_go_time(pattern[4:]), False, True
        except ValueError:
            return 0, False, False
    if pattern.startswith("@every "):
        if loc is not None:
            return 0, False, False
        from minijs.jetstream.headers import parse_go_duration
        dur = parse_go_duration(pattern[7:])
        if dur is None or dur < _NS:
            return 0, False, False
        nxt = _round_second(ts) + dur
        if nxt < now:
            nxt = _round_second(now) + dur
        return nxt, True, True
    pattern = _PREDEFINED.get(pattern, pattern)
    try:
        nxt = next_cron(pattern, loc, ts)
        if nxt < now:
            nxt = next_cron(pattern, loc, _round_second(now))
    except _Invalid:
        return 0, False, False
    return nxt, True, True


_PREDEFINED = {
    "@yearly": "0 0 0 1 1 *", "@annually": "0 0 0 1 1 *", "@monthly": "0 0 0 1 * *",
    "@weekly": "0 0 0 * * 0", "@daily": "0 0 0 * * *", "@midnight": "0 0 0 * * *",
    "@hourly": "0 0 * * * *",
}
_MONTHS = {n: i + 1 for i, n in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_DAYS = {n: i for i, n in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_STAR = 1 << 63
_BOUNDS = ((0, 59, None), (0, 59, None), (0, 23, None), (1, 31, None), (1, 12, _MONTHS),
           (0, 6, _DAYS))


def _atoi(text: str) -> int:
    """Go ``strconv.Atoi`` then a sign check (``mustParseInt``)."""
    t = text[1:] if text[:1] in "+-" else text
    if not t or not t.isascii() or not t.isdigit():
        raise _Invalid(text)
    n = int(text)
    if n < 0:
        raise _Invalid(text)
    return n


def _cron_range(expr: str, lo: int, hi: int, names: dict[str, int] | None) -> int:
    range_step = expr.split("/")
    low_high = range_step[0].split("-")
    extra = 0
    if low_high[0] in ("*", "?"):
        start, end, extra = lo, hi, _STAR
    else:
        def num(t: str) -> int:
            if names is not None and t.lower() in names:
                return names[t.lower()]
            return _atoi(t)
        start = num(low_high[0])
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = num(low_high[1])
        else:
            raise _Invalid(expr)
    if len(range_step) == 1:
        step = 1
    elif len(range_step) == 2:
        step = _atoi(range_step[1])
        if len(low_high) == 1:
            end = hi
        if step > 1:
            extra = 0
    else:
        raise _Invalid(expr)
    if start < lo or end > hi or start > end or step == 0:
        raise _Invalid(expr)
    bits = 0
    for i in range(start, end + 1, step):
        bits |= 1 << i
    return bits | extra


def _cron_fields(pattern: str) -> list[int]:
    fields = pattern.split()
    if len(fields) != 6:
        raise _Invalid(pattern)
    out = []
    for field, (lo, hi, names) in zip(fields, _BOUNDS):
        bits = 0
        for expr in (e for e in field.split(",") if e):
            bits |= _cron_range(expr, lo, hi, names)
        out.append(bits)
    return out


def _add(dt: datetime, **delta: int) -> datetime:
    """Absolute time arithmetic (Go ``Time.Add``) in ``dt``'s zone."""
    return (dt.astimezone(_UTC) + timedelta(**delta)).astimezone(dt.tzinfo)


def next_cron(pattern: str, loc: Any, ts: int) -> int:
    """nats-server ``parseCron`` (robfig/cron): the first matching second after ``ts``, in ns."""
    second, minute, hour, dom, month, dow = _cron_fields(pattern)
    if not (second and minute and hour and month and (dom or dow)):
        raise _Invalid(pattern)  # an empty field never matches: Go searches five years to say so
    tz = loc or _UTC
    nxt = datetime.fromtimestamp(ts // _NS, tz) + timedelta(seconds=1)
    truncated = False
    year_limit = nxt.year + 5

    def day_matches(t: datetime) -> bool:
        dm = (1 << t.day) & dom > 0
        wm = (1 << ((t.weekday() + 1) % 7)) & dow > 0
        if dom & _STAR or dow & _STAR:
            return dm and wm
        return dm or wm

    while True:  # WRAP
        if nxt.year > year_limit:
            raise _Invalid(pattern)
        wrapped = False
        while not (1 << nxt.month) & month:
            if not truncated:
                truncated = True
                nxt = datetime(nxt.year, nxt.month, 1, tzinfo=tz)
            y, m = (nxt.year + 1, 1) if nxt.month == 12 else (nxt.year, nxt.month + 1)
            nxt = datetime(y, m, 1, tzinfo=tz)
            if nxt.month == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not day_matches(nxt):
            if not truncated:
                truncated = True
                nxt = datetime(nxt.year, nxt.month, nxt.day, tzinfo=tz)
            d = nxt.date() + timedelta(days=1)
            nxt = datetime(d.year, d.month, d.day, nxt.hour, nxt.minute, nxt.second, tzinfo=tz)
            if nxt.day == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << nxt.hour) & hour:
            if not truncated:
                truncated = True
                nxt = datetime(nxt.year, nxt.month, nxt.day, nxt.hour, tzinfo=tz)
            nxt = _add(nxt, hours=1)
            if nxt.hour == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << nxt.minute) & minute:
            if not truncated:
                truncated = True
                nxt = nxt.replace(second=0, microsecond=0)
            nxt = _add(nxt, minutes=1)
            if nxt.minute == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << nxt.second) & second:
            if not truncated:
                truncated = True
                nxt = nxt.replace(microsecond=0)
            nxt = _add(nxt, seconds=1)
            if nxt.second == 0:
                wrapped = True
                break
        if wrapped:
            continue
        return int(nxt.timestamp()) * _NS


def next_schedule(h: dict[str, str], ts: int, now: int) -> int:
    """nats-server ``nextMessageSchedule``: when the schedule in headers ``h`` fires after
    ``ts`` (0: no schedule); raises 10223 / 10189."""
    loc = load_location(h)
    when, _, ok = parse_schedule(h.get(SCHEDULE, ""), loc, ts, now)
    if not ok:
        raise E.message_schedules_pattern_invalid()
    return when


def _ttl_ok(value: str) -> bool:
    from minijs.jetstream.headers import parse_msg_ttl
    try:
        parse_msg_ttl(value)
    except E.ApiError:
        return False
    return True


def _collides(cfg: Any, subject: str) -> bool:
    return any(_subjects.subjects_overlap(s, subject) for s in cfg.subjects or ())


def _publishable(subject: str) -> bool:
    return _subjects.is_valid_literal_subject(subject)


# --------------------------------------------------------------------------------------------
# The publish-time checks
# --------------------------------------------------------------------------------------------


def check_publish(stream: Any, subject: str, hdr: bytes, h: dict[str, str]) -> bytes:
    """nats-server's schedule checks on a client's message (after the expected-sequence checks,
    before dedup). Returns the header block to store (a schedule gets ``Nats-Rollup: sub``);
    raises ``ApiError`` (10188 disabled, 10189 pattern, 10190 target, 10191 TTL, 10192 rollup,
    10203 source, 10212 scheduler, 10223 time zone, 10166 TTL disabled)."""
    cfg = stream.config
    allowed = cfg.allow_msg_schedules
    try:
        when = next_schedule(h, stream.clock.time_ns(), stream.clock.time_ns())
    except E.ApiError:
        if not allowed:
            raise E.message_schedules_disabled() from None
        raise
    if when:
        if not allowed:
            raise E.message_schedules_disabled()
        ttl = h.get(SCHEDULE_TTL, "")
        if ttl and not _ttl_ok(ttl):
            raise E.message_schedules_ttl_invalid()
        rollup = h.get(SCHEDULE_ROLLUP, "")
        if rollup and rollup != "sub":
            raise E.message_schedules_rollup_invalid()
        if ttl and not cfg.allow_msg_ttl:
            raise E.ttl_disabled()
        target = h.get(TARGET, "")
        if not target or not _publishable(target) or target == subject:
            raise E.message_schedules_target_invalid()
        source = h.get(SOURCE, "")
        if source and (source == target or source == subject or not _publishable(source)):
            raise E.message_schedules_source_invalid()
        if not _collides(cfg, target):
            raise E.message_schedules_target_invalid()
        if source and not _collides(cfg, source):
            raise E.message_schedules_source_invalid()
        msg_rollup = h.get(H.ROLLUP, "")
        if not msg_rollup:
            hdr = H.append(hdr, [(H.ROLLUP, "sub")])
        elif msg_rollup.lower() != "sub":
            raise E.message_schedules_rollup_invalid()
    nxt = h.get(NEXT, "")
    if nxt:
        if nxt != NEXT_PURGE:
            raise E.message_schedules_scheduler_invalid()
        scheduler = h.get(SCHEDULER, "")
        if not scheduler or scheduler == subject or not _publishable(scheduler):
            raise E.message_schedules_scheduler_invalid()
        if not allowed:
            raise E.message_schedules_disabled()
        last = stream.store.load_last(scheduler)
        if last is not None and not H.parse(last.hdr).get(SCHEDULE):
            raise E.message_schedules_scheduler_invalid()
    elif h.get(SCHEDULER):
        raise E.message_schedules_scheduler_invalid()
    return hdr


# --------------------------------------------------------------------------------------------
# The scheduler of one stream
# --------------------------------------------------------------------------------------------


def _strip(block: bytes | None) -> bytes | None:
    """Drop the scheduling headers and those that could stop the produced message from being
    stored (nats-server ``removeHeaderIfPrefixPresent`` / ``removeHeaderIfPresent``)."""
    if not block:
        return None
    lines = block.split(b"\r\n")
    drop_prefix = (b"Nats-Schedule", b"Nats-Expected-")
    drop_exact = (H.MSG_ID.encode() + b":", H.TTL.encode() + b":", H.ROLLUP.encode() + b":")
    kept = [lines[0]] + [ln for ln in lines[1:] if ln and not ln.startswith(drop_prefix)
                         and not ln.startswith(drop_exact)]
    if len(kept) == 1:
        return None
    return b"\r\n".join(kept) + b"\r\n\r\n"


class MsgSchedules:
    """The schedules of one stream: schedule subject → ``[seq, due ns]``, and one clock timer
    at the earliest due time."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.clock = stream.clock
        self.schedules: dict[str, list[int]] = {}
        self._inflight: set[str] = set()
        self._timer: Any = None
        self._timer_at = 0
        self._running = False

    # ---------------------------------------------------------------- tracking

    def recover(self) -> None:
        """Rebuild from the store (after a restart): replay every stored message in order."""
        store = self.stream.store
        if not store.msgs:
            return
        seq = store.first_seq
        self._running = True  # one timer at the end
        try:
            while True:
                sm = store.load_next(seq)
                if sm is None:
                    break
                self.stored(sm.seq, sm.subject, sm.hdr, sm.ts, purge=False)
                seq = sm.seq + 1
        finally:
            self._running = False
        self._arm()

    def stored(self, seq: int, subject: str, hdr: bytes | None, ts: int, purge: bool = True) -> None:
        """A message was stored (memstore/filestore ``storeRawMsg``): track or replace a
        schedule, forget one overwritten by a plain message, move a repeating schedule to the
        time its produced message announces; a one-shot's produced message (``Nats-Schedule-Next:
        purge``) purges the schedule's subject."""
        if not hdr:
            self._remove(subject)
            return
        h = H.parse(hdr)
        try:
            when = next_schedule(h, ts, self.clock.time_ns())
        except E.ApiError:
            when = 0
        scheduler = h.get(SCHEDULER, "")
        if when:
            self.schedules[subject] = [seq, when]
            self._inflight.discard(subject)
            self._arm()
        elif not scheduler:
            self._remove(subject)
        nxt = h.get(NEXT, "")
        if nxt and scheduler:
            if nxt == NEXT_PURGE:
                if purge:
                    cfg = self.stream.config
                    if cfg.allow_rollup_hdrs and not cfg.deny_purge:
                        self.stream.purge(scheduler, 0, 0)
            else:
                try:
                    due = J.parse_go_time(nxt)
                except ValueError:
                    return
                entry = self.schedules.get(scheduler)
                if entry is not None:
                    entry[1] = due
                    self._inflight.discard(scheduler)
                    self._arm()

    def _remove(self, subject: str) -> None:
        if self.schedules.pop(subject, None) is not None:
            self._inflight.discard(subject)

    # ---------------------------------------------------------------- the timer

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self) -> None:
        if self._running or self.stream.closed:
            return
        pending = [e[1] for s, e in self.schedules.items() if s not in self._inflight]
        if not pending:
            self.stop()
            return
        when = min(pending)
        if self._timer is not None:
            if self._timer_at <= when:
                return
            self._timer.cancel()
        delay = (when - self.clock.time_ns()) / 1e9
        if not getattr(self.clock, "virtual", False):
            delay = max(0.001, delay + 1e-6)  # a loop timer may fire a hair early
        self._timer_at = when
        self._timer = self.clock.call_later(max(delay, 0.0), self._run)

    def _run(self) -> None:
        """Store the produced message of every due schedule, in schedule sequence order."""
        self._timer = None
        stream = self.stream
        if stream.closed:
            return
        now = self.clock.time_ns()
        due = sorted((e[0], s, e[1]) for s, e in self.schedules.items()
                     if e[1] <= now and s not in self._inflight)
        self._running = True
        try:
            for seq, subject, when in due:
                self._fire(seq, subject, when, now)
        finally:
            self._running = False
        self._arm()

    def _fire(self, seq: int, subject: str, when: int, now: int) -> None:
        stream = self.stream
        sm = stream.store.load(seq)
        if sm is None or self.schedules.get(subject, [0])[0] != seq:
            self._remove(subject)
            return
        h = H.parse(sm.hdr)
        pattern = h.get(SCHEDULE, "")
        try:
            loc = load_location(h)
        except E.ApiError:
            loc, pattern = None, ""
        nxt, repeat, ok = parse_schedule(pattern, loc, when, now) if pattern else (0, False, False)
        ttl = h.get(SCHEDULE_TTL, "")
        target = h.get(TARGET, "")
        if not ok or (ttl and not _ttl_ok(ttl)) or not target:
            self._remove(subject)
            return
        rollup = h.get(SCHEDULE_ROLLUP, "")
        source = h.get(SOURCE, "")
        hdr, data = sm.hdr, sm.data
        if source:
            last = stream.store.load_last(source)
            if last is not None:
                hdr, data = last.hdr, last.data
        pairs = [(SCHEDULER, subject),
                 (NEXT, J.go_time(nxt, _offset(nxt, loc)) if repeat else NEXT_PURGE)]
        if ttl:
            pairs.append((H.TTL, ttl))
        if rollup:
            pairs.append((H.ROLLUP, rollup))
        out = H.append(_strip(hdr), pairs)
        self._inflight.add(subject)
        try:
            stored = stream.store_sourced(target, out, data)
        except E.ApiError as exc:
            stream.engine.log.warn(f"JetStream stream '{stream.name}' message schedule "
                                   f"'{subject}' could not store its message: {exc}")
            return  # stays in flight, as in nats-server: it does not fire again
        if stored and stream.store.load(stored) is not None:
            self.stored(stored, target, out, self.clock.time_ns())
        # else (no interest on an interest stream: a skipped sequence) the schedule stays in
        # flight and never fires again, as in nats-server, whose store never sees the message


def _offset(ns: int, loc: Any) -> int:
    """Seconds east of UTC of ``loc`` at ``ns`` (0 without a zone)."""
    if loc is None:
        return 0
    off = datetime.fromtimestamp(ns // _NS, loc).utcoffset()
    return int(off.total_seconds()) if off else 0
