"""Differential fuzzing of ``$JS.API`` request bodies: generated bodies go to the same endpoints
of the target and of a reference nats-server (both fresh private servers holding the same
fixture), and the JSON replies must be equal once the values that legitimately differ
(timestamps, generated names, server names) are taken out.

The bodies are what a careless or hostile client could send: every JSON type at the top level
and in every known field, unknown and case-folded keys, duplicate keys, numbers at the limits
of Go's integer types and in float or exponent form, unicode and escapes, truncated JSON and
bytes that are not JSON at all; some requests carry an odd ``Nats-Required-Api-Level``.
Hypothesis generates them from a fixed seed (``derandomize``), without shrinking, so a run is
deterministic; every request is sent to both servers in the same order, so their states stay
in step. Against ``nats-server`` itself the case proves that the normalisation hides nothing
but per-server values.

Endpoints that would start real work on nats-server which no reply reflects are kept out of
reach: SNAPSHOT bodies never carry a ``deliver_subject`` and RESTORE only targets the existing
fixture stream (nats-server would otherwise begin a snapshot or a restore).
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from conformance.helpers import SpawnFn
from conformance.jshelpers import JsClient, Msg, header_block
from conformance.servers import ServerProcess, spawn_server

REFERENCE = "nats-server"
#: Placeholders for the fixture stream and a stream the cases may create. Each fixture reset
#: renames them (``FZ1``/``NW1``, ``FZ2``/``NW2``, …), so nothing left over from one case
#: (timers of deleted consumers, directories being removed) can touch the next.
STREAM = "@S"
NEW_STREAM = "@N"
MISSING = "NOPE"
#: A file stream that is never deleted. When the last stream of an account goes, nats-server
#: removes the account's ``streams`` directory in the background, and a stream created at
#: that moment fails with 500/10049 "error creating store for stream" (mkdir: no such file or
#: directory).
ANCHOR = "ANCHOR"
CONSUMER = "C"
#: ``MINIJS_FUZZ_EXAMPLES`` / ``MINIJS_FUZZ_SEED`` run it longer or on other inputs by hand
#: (``scripts/diff_fuzz.py``); CI runs the fixed default.
EXAMPLES = int(os.environ.get("MINIJS_FUZZ_EXAMPLES", "2000"))
SEED = os.environ.get("MINIJS_FUZZ_SEED")
_seeded: Any = seed(int(SEED)) if SEED else (lambda f: f)
#: Set to a file name to log every case and nats-server's answer (to see what is covered).
LOG = os.environ.get("CONFORMANCE_FUZZ_LOG")

# ---------------------------------------------------------------------- JSON fragments

#: Number texts: Go int/uint limits on both sides, floats, exponents, negative zero, durations.
NUMBERS = ["0", "1", "-1", "2", "3", "100", "1000", "-1000", "2147483647", "2147483648",
           "-2147483649", "4294967295", "4294967296", "9223372036854775807",
           "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
           "18446744073709551615", "18446744073709551616", "1e3", "1E3", "1e-3", "1.5",
           "-0", "1.0", "0.0", "-1.5e300", "99999999999999999999999", "1000000000",
           "30000000000", "5000000000", "120000000000"]
SMALL_INTS = ["0", "1", "2", "3", "5", "10", "100", "1024", "-1", "1000000000", "30000000000"]
#: Durations (ns). None is a limit that could expire a fixture message while a case runs.
DURATIONS = ["0", "1", "-1", "1000", "99999999", "120000000000", "3600000000000",
             "9223372036854775807", "9223372036854775808", "-9223372036854775808", "1e3", "1.5"]
#: Strings: enum values of every request, subjects (valid, wildcard, invalid), names, times,
#: unicode and escapes.
STRINGS = ["", "x", "fz.a", "fz.b", "fz.>", "fz.*", "*", ">", "n.>", "a b", "a..b", "é",
           "\u2028", "日本", "\U0001F600", "limits", "interest", "workqueue", "old", "new",
           "file", "memory", "none", "s2", "all", "last", "by_start_sequence", "by_start_time",
           "last_per_subject", "explicit", "instant", "original", "create", "update",
           "2000-01-01T00:00:00Z", "2999-01-01T00:00:00+01:00", "2020-13-01T00:00:00Z",
           "not-a-time", STREAM, CONSUMER, "D", NEW_STREAM, MISSING, "pinned_client",
           "overflow", "prioritized", "g", "100%", "$JS.API.>", "1s", "bogus", "dlv.x"]
SUBJECTS = ["fz.a", "fz.>", "fz.*", "fz.b", "n.>", "n.a", "*", ">", "a b", "", "a..b",
            "$JS.API.x", "n.*.b", "é", "fz.a.>"]
TIMES = ["2000-01-01T00:00:00Z", "2999-01-01T00:00:00+01:00", "2020-13-01T00:00:00Z",
         "1970-01-01T00:00:00.000000001Z", "not-a-time", ""]
ENUMS = {
    "retention": ["limits", "interest", "workqueue", "Limits"],
    "discard": ["old", "new", "OLD"],
    "storage": ["file", "memory", "mem"],
    "compression": ["none", "s2", ""],
    "deliver_policy": ["all", "last", "new", "by_start_sequence", "by_start_time",
                       "last_per_subject", "x"],
    "ack_policy": ["none", "all", "explicit", "flow_control", "x"],
    "replay_policy": ["instant", "original", "x"],
    "priority_policy": ["none", "overflow", "pinned_client", "prioritized", "x"],
    "action": ["", "create", "update", "x"],
}
BOOL, INT, UINT, DUR, STR, SUBJ, SUBJS, TIME, MAP, NAME = (
    "bool", "int", "uint", "dur", "str", "subj", "subjs", "time", "map", "name")
STREAM_TYPES = {
    "name": NAME, "subjects": SUBJS, "description": STR, "retention": "retention",
    "max_consumers": INT, "max_msgs": INT, "max_bytes": INT, "max_age": DUR,
    "max_msgs_per_subject": INT, "max_msg_size": INT, "discard": "discard",
    "storage": "storage", "num_replicas": INT, "no_ack": BOOL, "duplicate_window": DUR,
    "compression": "compression", "first_seq": UINT, "allow_direct": BOOL, "deny_delete": BOOL,
    "deny_purge": BOOL, "allow_rollup_hdrs": BOOL, "sealed": BOOL, "allow_msg_ttl": BOOL,
    "subject_delete_marker_ttl": DUR, "metadata": MAP, "consumer_limits": "consumer_limits",
    "republish": "republish", "subject_transform": "transform", "placement": "placement",
    "discard_new_per_subject": BOOL, "mirror_direct": BOOL, "pedantic": BOOL,
}
CONSUMER_TYPES = {
    "durable_name": NAME, "name": NAME, "description": STR, "deliver_policy": "deliver_policy",
    "opt_start_seq": UINT, "opt_start_time": TIME, "ack_policy": "ack_policy", "ack_wait": DUR,
    "max_deliver": INT, "backoff": "durs", "filter_subject": SUBJ, "filter_subjects": SUBJS,
    "replay_policy": "replay_policy", "sample_freq": STR, "max_waiting": INT,
    "max_ack_pending": INT, "headers_only": BOOL, "max_batch": INT, "max_expires": DUR,
    "max_bytes": INT, "inactive_threshold": DUR, "num_replicas": INT, "mem_storage": BOOL,
    "metadata": MAP, "pause_until": TIME, "priority_groups": "strs",
    "priority_policy": "priority_policy", "priority_timeout": DUR, "deliver_subject": "deliver",
    "rate_limit_bps": UINT,
}
STATE_TYPES = {
    "messages": UINT, "bytes": UINT, "first_seq": UINT, "first_ts": TIME, "last_seq": UINT,
    "last_ts": TIME, "num_subjects": INT, "subjects": "counts", "num_deleted": INT,
    "deleted": "uints", "lost": "lost", "consumer_count": INT,
}
#: Fields of the requests that take a flat body.
FLAT_TYPES = {
    "info": {"deleted_details": BOOL, "subjects_filter": SUBJ, "offset": INT},
    "purge": {"filter": SUBJ, "seq": UINT, "keep": UINT},
    "names": {"offset": INT, "subject": SUBJ},
    "msg_get": {"seq": UINT, "last_by_subj": SUBJ, "next_by_subj": SUBJ, "start_time": TIME,
                "batch": INT, "max_bytes": INT, "multi_last": SUBJS, "up_to_seq": UINT,
                "up_to_time": TIME},
    "msg_delete": {"seq": UINT, "no_erase": BOOL},
    "snapshot": {"no_consumers": BOOL, "chunk_size": INT, "window_size": INT, "jsck": BOOL},
    "consumers": {"offset": INT},
    "pause": {"pause_until": TIME},
    "unpin": {"group": STR},
    "reset": {"seq": UINT},
    "account": {"offset": INT},
}
#: Whole bodies that are not (or not only) one JSON value.
RAW_BODIES = [b"", b" ", b"\n\t ", b"\r\n", b"{}", b"{ }", b" {}\n", b"null", b"[]", b"[{}]",
              b"{}{}", b"{} {}", b"garbage", b"{", b"}", b'{"a":}', b'{"a"', b"\x0c{}", b"\x0b",
              b"\xff", b"\xef\xbb\xbf{}", b"\x00", b'"x"', b"1", b"-1", b"true", b"{}x",
              b'{"seq":1}{"seq":2}', b'{"seq":1} garbage', b'{"offset":1,}', b"[1,2",
              b'{"\\u0073eq":1}', b'{"seq":"\\ud800"}', b'{"seq":1,"seq":2}',
              b'{"config":{"name":"@N"},"config":{"subjects":["n.>"]}}']


def _str_text(s: str, ascii_only: bool) -> str:
    return json.dumps(s, ensure_ascii=ascii_only)


def _str(values: list[str]) -> st.SearchStrategy[str]:
    return st.builds(_str_text, st.sampled_from(values), st.booleans())


scalar_text = st.one_of(
    st.sampled_from(NUMBERS),
    _str(STRINGS),
    st.sampled_from(["true", "false", "null"]),
)


def _array(items: list[str]) -> str:
    return "[" + ",".join(items) + "]"


def _object(pairs: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in pairs) + "}"


any_text = st.recursive(
    scalar_text,
    lambda inner: st.one_of(
        st.builds(_array, st.lists(inner, max_size=3)),
        st.builds(_object, st.lists(st.tuples(st.sampled_from(STRINGS + ["seq", "a"]), inner),
                                    max_size=3)),
    ),
    max_leaves=6,
)


def obj_text(types: dict[str, Any], max_size: int = 4, wild: bool = True,
             first: list[tuple[str, str]] | None = None) -> st.SearchStrategy[str]:
    """An object (duplicate keys allowed) of known fields with values of their type. ``wild``
    adds upper-cased known fields (Go folds case), unknown fields and values of any type;
    ``first`` members (e.g. the right name) are put in front most of the time."""
    known = sorted(types)
    if wild:
        key = st.one_of(st.sampled_from(known), st.sampled_from(known),
                        st.sampled_from(known).map(str.upper),
                        st.sampled_from(["bogus", "", "Seq_", "é"]))
    else:
        key = st.one_of(st.sampled_from(known), st.sampled_from(known),
                        st.sampled_from(known).map(str.upper))
    pick = value_of if wild else typed
    member = key.flatmap(lambda k: st.tuples(st.just(k), pick(types.get(
        k if k in types else k.lower()), wild)))
    members = st.lists(member, max_size=max_size)
    if first:
        members = st.tuples(st.sampled_from([first, first, first, []]), members).map(
            lambda t: list(t[0]) + t[1])
    return st.builds(_object, members)


def typed(tag: Any, wild: bool = False) -> st.SearchStrategy[str]:
    """JSON text of a value that fits Go field type ``tag`` (nested structs ``wild`` or not)."""
    if isinstance(tag, dict):
        return obj_text(tag, 3, wild)
    if tag == BOOL:
        return st.sampled_from(["true", "false"])
    if tag == DUR:
        return st.sampled_from(DURATIONS)
    if tag in (INT, UINT):
        return st.one_of(st.sampled_from(SMALL_INTS), st.sampled_from(NUMBERS))
    if tag == STR:
        return _str(STRINGS)
    if tag == NAME:
        return _str([NEW_STREAM, STREAM, CONSUMER, "D", "x", "a.b", "a b", "", "é"])
    if tag == SUBJ:
        return _str(SUBJECTS)
    if tag == SUBJS:
        return st.builds(_array, st.lists(_str(SUBJECTS), max_size=2))
    if tag == "strs":
        return st.builds(_array, st.lists(_str(["g", "h", "", "a b", "g"]), max_size=2))
    if tag == TIME:
        return _str(TIMES)
    if tag == "durs":
        return st.builds(_array, st.lists(st.sampled_from(DURATIONS), max_size=3))
    if tag == "deliver":
        return _str(["dlv.x", "dlv.*", "fz.a", "n.>", "", "a b"])
    if tag == "uints":
        return st.builds(_array, st.lists(st.sampled_from(NUMBERS), max_size=3))
    if tag == MAP:
        return st.builds(_object, st.lists(st.tuples(st.sampled_from(["a", "_nats.x", ""]),
                                                     _str(STRINGS)), max_size=2))
    if tag == "counts":
        return st.builds(_object, st.lists(st.tuples(st.sampled_from(["fz.a", "x"]),
                                                     st.sampled_from(NUMBERS)), max_size=2))
    if tag == "lost":
        return typed({"msgs": "uints", "bytes": UINT})
    if tag == "consumer_limits":
        return typed({"inactive_threshold": DUR, "max_ack_pending": INT})
    if tag in ("republish", "transform"):
        return typed({"src": SUBJ, "dest": SUBJ, "headers_only": BOOL})
    if tag == "placement":
        return typed({"cluster": STR, "tags": "strs", "preferred": STR})
    if tag in ENUMS:
        return _str(ENUMS[tag])
    raise AssertionError(tag)


def value_of(tag: Any, wild: bool = True) -> st.SearchStrategy[str]:
    """Mostly a value of the field's type, sometimes any JSON value at all."""
    if tag is None:
        return any_text
    return st.one_of(typed(tag, wild), typed(tag, wild), typed(tag, wild), scalar_text,
                     any_text)


def body_for(types: dict[str, Any], max_size: int = 4,
             first: list[tuple[str, str]] | None = None) -> st.SearchStrategy[bytes]:
    """Bodies for a request of these fields: raw oddities, any JSON value, wild objects and
    (most often) well-typed objects that get past the decoder to the semantic checks."""
    tame = obj_text(types, max_size, wild=False, first=first).map(str.encode)
    return st.one_of(
        st.sampled_from(RAW_BODIES),
        any_text.map(str.encode),
        obj_text(types, max_size, wild=True, first=first).map(str.encode),
        tame, tame, tame,
    )


def flat(kind: str) -> st.SearchStrategy[bytes]:
    return body_for(FLAT_TYPES[kind])


def stream_config(name: str, **drop: bool) -> st.SearchStrategy[bytes]:
    types = {k: v for k, v in STREAM_TYPES.items() if k not in drop}
    return body_for(types, 5, first=[("name", json.dumps(name))])


def consumer_request(durable: str | None = None) -> st.SearchStrategy[bytes]:
    config: dict[str, Any] = dict(CONSUMER_TYPES)
    first = [("stream_name", json.dumps(STREAM))]
    types = {"stream_name": NAME, "config": config, "action": "action", "pedantic": BOOL}
    if durable:
        # Most requests name the consumer of the subject in the config as well.
        return st.one_of(
            body_for(types, 3, first=first),
            body_for(types, 2, first=first + [("config", f'{{"durable_name":"{durable}"}}')]),
        )
    return body_for(types, 3, first=first)


restore_body = body_for({"config": STREAM_TYPES, "state": STATE_TYPES}, 2)

#: (API subject suffix, body strategy, mutates the fixture).
ENDPOINTS: list[tuple[str, st.SearchStrategy[bytes], bool]] = [
    ("INFO", flat("account"), False),
    (f"STREAM.CREATE.{NEW_STREAM}", stream_config(NEW_STREAM), True),
    (f"STREAM.CREATE.{STREAM}", stream_config(STREAM), True),
    # No max_age on the fixture: a short one would expire its messages while the reply is made.
    (f"STREAM.UPDATE.{STREAM}", stream_config(STREAM, max_age=True), True),
    (f"STREAM.UPDATE.{MISSING}", stream_config(MISSING), False),
    (f"STREAM.INFO.{STREAM}", flat("info"), False),
    (f"STREAM.INFO.{MISSING}", flat("info"), False),
    (f"STREAM.DELETE.{STREAM}", flat("info"), True),
    (f"STREAM.DELETE.{MISSING}", flat("info"), False),
    (f"STREAM.PURGE.{STREAM}", flat("purge"), True),
    (f"STREAM.PURGE.{MISSING}", flat("purge"), False),
    ("STREAM.NAMES", flat("names"), False),
    ("STREAM.LIST", flat("names"), False),
    (f"STREAM.MSG.GET.{STREAM}", flat("msg_get"), False),
    (f"STREAM.MSG.GET.{MISSING}", flat("msg_get"), False),
    (f"STREAM.MSG.DELETE.{STREAM}", flat("msg_delete"), True),
    (f"STREAM.MSG.DELETE.{MISSING}", flat("msg_delete"), False),
    (f"STREAM.SNAPSHOT.{STREAM}", flat("snapshot"), False),
    (f"STREAM.SNAPSHOT.{MISSING}", flat("snapshot"), False),
    (f"STREAM.RESTORE.{STREAM}", restore_body, False),
    (f"STREAM.LEADER.STEPDOWN.{STREAM}", flat("names"), False),
    (f"CONSUMER.CREATE.{STREAM}", consumer_request(), True),
    (f"CONSUMER.CREATE.{STREAM}.D", consumer_request("D"), True),
    (f"CONSUMER.CREATE.{STREAM}.{CONSUMER}", consumer_request(CONSUMER), True),
    (f"CONSUMER.DURABLE.CREATE.{STREAM}.D", consumer_request("D"), True),
    (f"CONSUMER.CREATE.{MISSING}", consumer_request(), False),
    (f"CONSUMER.NAMES.{STREAM}", flat("consumers"), False),
    (f"CONSUMER.LIST.{STREAM}", flat("consumers"), False),
    (f"CONSUMER.NAMES.{MISSING}", flat("consumers"), False),
    (f"CONSUMER.INFO.{STREAM}.{CONSUMER}", flat("consumers"), False),
    (f"CONSUMER.INFO.{STREAM}.D", flat("consumers"), False),
    (f"CONSUMER.DELETE.{STREAM}.{CONSUMER}", flat("consumers"), True),
    (f"CONSUMER.DELETE.{MISSING}.{CONSUMER}", flat("consumers"), False),
    (f"CONSUMER.PAUSE.{STREAM}.{CONSUMER}", flat("pause"), True),
    (f"CONSUMER.PAUSE.{MISSING}.{CONSUMER}", flat("pause"), False),
    (f"CONSUMER.UNPIN.{STREAM}.{CONSUMER}", flat("unpin"), False),
    (f"CONSUMER.RESET.{STREAM}.{CONSUMER}", flat("reset"), True),
    (f"DIRECT.GET.{STREAM}", flat("msg_get"), False),
    (f"DIRECT.GET.{STREAM}.fz.a", flat("msg_get"), False),
]

# ---------------------------------------------------------------------- normalisation

#: Values that differ between any two servers: wall-clock times, server identities.
VOLATILE_KEYS = {"created", "ts", "time", "first_ts", "last_ts", "last_active", "leader",
                 "pause_remaining", "server_name"}
#: A server-generated consumer name.
GENERATED_NAME = re.compile(r"^[A-Za-z0-9]{8}$")
VOLATILE_HEADERS = {"Nats-Time-Stamp"}


def normalise(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in VOLATILE_KEYS:
                out[k] = "<volatile>"
            elif k in ("name", "durable_name") and isinstance(v, str) \
                    and GENERATED_NAME.match(v):
                out[k] = "<generated>"
            else:
                out[k] = normalise(v)
        return out
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


def reply_form(m: Msg | None) -> Any:
    """What is compared of one reply: status line, headers (minus volatile ones), payload
    (decoded and normalised when it is JSON)."""
    if m is None:
        return "<no reply>"
    try:
        payload: Any = normalise(json.loads(m.data)) if m.data[:1] == b"{" else m.data
    except ValueError:
        payload = m.data
    headers = [(k, v) for k, v in m.header_pairs if k not in VOLATILE_HEADERS]
    return (m.status, headers, payload)


# ---------------------------------------------------------------------- the fixture


class Pair:
    """One JsClient per server; every request goes to both, in the same order."""

    def __init__(self, target: JsClient, reference: JsClient) -> None:
        self.clients = (target, reference)
        self.generation = 0

    def names(self, data: bytes) -> bytes:
        """The placeholders replaced by this generation's stream names."""
        g = str(self.generation).encode()
        return data.replace(STREAM.encode(), b"FZ" + g).replace(NEW_STREAM.encode(), b"NW" + g)

    def both(self, suffix: str, body: bytes, headers: bytes | None = None,
             wait: float = 5.0) -> tuple[Any, Any]:
        subject = self.names(f"$JS.API.{suffix}".encode()).decode()
        body = self.names(body)
        out = []
        for c in self.clients:
            try:
                out.append(reply_form(c.request(subject, body, headers, timeout=wait)))
            except TimeoutError:
                out.append(reply_form(None))
        return out[0], out[1]

    def reset(self) -> None:
        """Every stream but the anchor deleted, then the fixture under new names: stream FZ<n>
        (``fz.>``, direct gets) with three messages, the second deleted, and the durable pull
        consumer C (priority group ``g``, pinned client)."""
        self.generation += 1
        stream = self.names(STREAM.encode()).decode()
        for c in self.clients:
            names = c.api("STREAM.NAMES").get("streams") or []
            if ANCHOR not in names:
                c.create(ANCHOR, subjects=["anchor"])
            for name in names:
                if name != ANCHOR:
                    assert c.api(f"STREAM.DELETE.{name}").get("success"), name
            c.create(stream, subjects=["fz.>"], allow_direct=True)
            for subj in ("fz.a", "fz.b", "fz.a"):
                c.pub_ok(subj, b"x")
            assert c.api(f"STREAM.MSG.DELETE.{stream}", {"seq": 2}).get("success")
            out = c.api(f"CONSUMER.CREATE.{stream}.{CONSUMER}", {
                "stream_name": stream,
                "config": {"durable_name": CONSUMER, "ack_policy": "explicit",
                           "priority_groups": ["g"], "priority_policy": "pinned_client"}})
            assert "error" not in out, out


@pytest.fixture
def pair(target: str, spawn: SpawnFn) -> Iterator[Pair]:
    reference: ServerProcess = spawn_server(REFERENCE, jetstream=True)
    clients: list[JsClient] = []
    try:
        clients = [JsClient.connect(spawn(jetstream=True)), JsClient.connect(reference)]
        yield Pair(clients[0], clients[1])
    finally:
        for c in clients:
            c.close()
        reference.stop()


#: ``Nats-Required-Api-Level`` values (sent with a few of the requests).
API_LEVELS = ["", "0", "5", " 5", "+5", "5 ", "6", "-1", "abc", "\u0665",
              "-9223372036854775809", "99999999999999999999"]
api_level_header = st.one_of(
    st.none(), st.none(), st.none(), st.none(), st.none(), st.none(),
    st.sampled_from(API_LEVELS).map(lambda v: header_block(("Nats-Required-Api-Level", v))),
)
endpoint_and_body = st.sampled_from(range(len(ENDPOINTS))).flatmap(
    lambda i: st.tuples(st.just(i), ENDPOINTS[i][1], api_level_header))


def test_js_api_fuzz_bodies(target: str, pair: Pair) -> None:
    """A fixed, generated sequence of requests gets equal (normalised) replies from the target
    and from nats-server."""
    mismatches: list[str] = []
    state = {"dirty": True, "n": 0}

    @settings(max_examples=EXAMPLES, derandomize=SEED is None, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(endpoint_and_body)
    @_seeded
    def run(case: tuple[int, bytes, bytes | None]) -> None:
        index, body, headers = case
        suffix, _, mutates = ENDPOINTS[index]
        if state["dirty"]:
            pair.reset()
            state["dirty"] = False
        got, want = pair.both(suffix, body, headers)
        state["n"] += 1
        if LOG:
            with open(LOG, "a") as f:
                f.write(f"{suffix} {body!r} {headers!r} -> {want!r}\n")
        if got != want:
            mismatches.append(f"{suffix} {body!r} {headers!r}\n  {target}: {got!r}\n"
                              f"  {REFERENCE}: {want!r}")
            state["dirty"] = True  # start the next case from a known state
        elif mutates:
            state["dirty"] = True

    run()
    assert state["n"] == EXAMPLES
    assert not mismatches, f"{len(mismatches)} mismatches:\n" + "\n".join(mismatches[:20])
