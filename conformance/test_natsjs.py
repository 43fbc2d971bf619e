"""Cases driven by a second client library, nats.js v3 (``@nats-io/transport-node``,
``@nats-io/jetstream``, ``@nats-io/kv``, ``@nats-io/obj``, exact versions pinned in
``conformance/js/package.json`` and ``package-lock.json``).

nats.js takes paths nats-py does not: ordered consumers that reset themselves, ``consume()``
driven by idle heartbeats, KV watchers over history, object-store links, every
``Nats-Expected-*`` publish header, fetch bounded by ``expires`` / ``max_bytes``, batched and
multi-last direct gets. Each scenario is an ES module under ``conformance/js/`` run as
``node <script>.mjs <server url>``; it prints one JSON line (normalised so that it does not
depend on names, times or races) and exits 0. Each case runs its script against the target's
shared JetStream server and compares that line with what the scenario must produce — the same
expectation on every target. While a case runs on one target, the same scenario already runs
on the case's other targets (each against its own server), so the second target's result is
usually ready when its turn comes; this halves the suite's wall time, which is mostly spent
waiting for heartbeats and expiries.

The node dependencies are installed on first use (``npm ci`` in ``conformance/js`` when
``node_modules`` is missing or does not hold the pinned versions). Without ``node``/``npm``
(Node.js 18 or newer) every case here fails and says so.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.servers import Endpoint

JS_DIR = Path(__file__).resolve().parent / "js"
#: Wall-clock limit for one scenario process (each script has its own deadline below this).
SCENARIO_TIMEOUT = 25.0
INSTALL_TIMEOUT = 300.0
MIN_NODE_MAJOR = 18
INSTALL_HINT = (
    "install Node.js >= 18 with npm (e.g. `apt-get install nodejs npm`, or from nodejs.org) so "
    "that `node` and `npm` are on PATH; the cases install their npm packages themselves "
    "(or run `npm ci --no-audit --no-fund --prefix conformance/js` beforehand)"
)


@dataclass
class NodeEnv:
    """Where node is, or why the nats.js cases cannot run."""

    node: str | None = None
    error: str | None = None


def _pinned() -> dict[str, str]:
    return json.loads((JS_DIR / "package.json").read_text())["dependencies"]


def _installed_ok() -> bool:
    """node_modules holds every pinned package at its pinned version."""
    for name, version in _pinned().items():
        manifest = JS_DIR / "node_modules" / name / "package.json"
        try:
            if json.loads(manifest.read_text()).get("version") != version:
                return False
        except (OSError, ValueError):
            return False
    return True


def _prepare_node() -> NodeEnv:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = " and ".join(n for n, p in (("node", node), ("npm", npm)) if p is None)
        return NodeEnv(error=f"nats.js cases need Node.js: {missing} not found on PATH; "
                             f"{INSTALL_HINT}")
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return NodeEnv(error=f"`node --version` failed ({exc}); {INSTALL_HINT}")
    m = re.match(r"v(\d+)\.", version)
    if not m or int(m.group(1)) < MIN_NODE_MAJOR:
        return NodeEnv(error=f"nats.js v3 needs Node.js >= {MIN_NODE_MAJOR}, found "
                             f"{version or 'unknown'} at {node}; {INSTALL_HINT}")
    # One installer at a time (parallel pytest workers share the directory).
    with open(JS_DIR / ".npm-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed_ok():
            lockfile = (JS_DIR / "package-lock.json").exists()
            cmd = [npm, "ci" if lockfile else "install", "--no-audit", "--no-fund"]
            try:
                proc = subprocess.run(cmd, cwd=JS_DIR, capture_output=True, text=True,
                                      timeout=INSTALL_TIMEOUT)
            except (OSError, subprocess.SubprocessError) as exc:
                return NodeEnv(error=f"`{' '.join(cmd)}` in {JS_DIR} failed: {exc}")
            if proc.returncode != 0 or not _installed_ok():
                return NodeEnv(error=f"`{' '.join(cmd)}` in {JS_DIR} failed (exit "
                                     f"{proc.returncode}); needs the npm registry. Output:\n"
                                     f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return NodeEnv(node=node)


@dataclass
class Outcome:
    """How one scenario process ended."""

    returncode: int | None  # None: killed at SCENARIO_TIMEOUT
    stdout: str
    stderr: str


def _run_node(node: str, script: str, server: Endpoint) -> Outcome:
    cmd = [node, str(JS_DIR / script), server.url]
    try:
        proc = subprocess.run(cmd, cwd=JS_DIR, capture_output=True, text=True,
                              timeout=SCENARIO_TIMEOUT, env={**os.environ, "NATS_URL": server.url})
    except subprocess.TimeoutExpired as exc:
        def text(b: bytes | str | None) -> str:
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        return Outcome(None, text(exc.stdout), text(exc.stderr))
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


class ScenarioRunner:
    """Runs scenario processes, and runs a case's scenario for the case's other targets at
    the same time (each against its own target's server), so that ``test_x[nats-server]``
    finds its result ready when ``test_x[minijs]`` has run. Scenarios never share a server
    concurrently; the saving is the real time they spend waiting (heartbeats, expiries)."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="natsjs")
        self.ahead: dict[str, Future[Outcome]] = {}  # by the nodeid of the case it is for
        self.started: set[str] = set()  # nodeids whose scenario ran or is running
        self.lock = threading.Lock()

    def run(self, node: str, script: str, server: Endpoint, nodeid: str) -> Outcome:
        with self.lock:
            fut = self.ahead.pop(nodeid, None)
            if fut is None:
                fut = self.pool.submit(_run_node, node, script, server)
            self.started.add(nodeid)
        return fut.result()

    def run_ahead(self, node: str, script: str, server: Endpoint, nodeid: str) -> None:
        """Start the scenario of case ``nodeid`` now, unless it has already started."""
        with self.lock:
            if nodeid not in self.started:
                self.ahead[nodeid] = self.pool.submit(_run_node, node, script, server)
                self.started.add(nodeid)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="session")
def natsjs_env() -> NodeEnv:
    """Node.js with the pinned nats.js packages installed in conformance/js (once a session)."""
    return _prepare_node()


@pytest.fixture(scope="session")
def natsjs_runner() -> Iterator[ScenarioRunner]:
    runner = ScenarioRunner()
    yield runner
    runner.close()


#: ``natsjs("script.mjs")`` -> the scenario's JSON result on this case's target.
ScenarioFn = Callable[[str], dict[str, Any]]


@pytest.fixture
def natsjs(request: pytest.FixtureRequest, target: str, js_server: Endpoint,
           natsjs_env: NodeEnv, natsjs_runner: ScenarioRunner) -> ScenarioFn:
    """Runs a scenario against this target's shared JetStream server and returns its result
    line; fails the case with the script's stderr when it does not end with one."""
    def run(script: str) -> dict[str, Any]:
        if natsjs_env.error is not None:
            pytest.fail(natsjs_env.error, pytrace=False)
        node = natsjs_env.node
        assert node is not None
        me = request.node
        base = me.nodeid.split("[", 1)[0]
        for item in request.session.items:  # the same case on the other selected targets
            other = getattr(item, "callspec", None)
            other_target = other.params.get("target") if other is not None else None
            if (item is me or other_target in (None, target) or item.nodeid in natsjs_runner.started
                    or item.nodeid.split("[", 1)[0] != base):
                continue
            try:
                pool = request.getfixturevalue("js_server_pool")
                natsjs_runner.run_ahead(node, script, pool.get(other_target), item.nodeid)
            except Exception:
                pass  # that case reports its own server trouble when it runs
        out = natsjs_runner.run(node, script, js_server, me.nodeid)
        if out.returncode is None:
            pytest.fail(f"{script} still running after {SCENARIO_TIMEOUT:.0f}s on {target}; "
                        f"stderr:\n{out.stderr.strip()}", pytrace=False)
        if out.returncode != 0:
            pytest.fail(f"{script} exited {out.returncode} on {target}; stderr:\n"
                        f"{out.stderr.strip()}\nstdout:\n{out.stdout.strip()}", pytrace=False)
        lines = [line for line in out.stdout.splitlines() if line.strip()]
        assert len(lines) == 1, f"{script} must print one JSON line, printed: {out.stdout!r}"
        return json.loads(lines[0])

    return run


# ---------------------------------------------------------------------- publish expectations


def ack(seq: int, duplicate: bool = False) -> dict[str, Any]:
    return {"ok": True, "value": {"stream": "<stream>", "seq": seq, "duplicate": duplicate}}


def api_error(message: str, err_code: int, status: int = 400) -> dict[str, Any]:
    return {"ok": False, "error": {"name": "JetStreamApiError", "message": message,
                                   "err_code": err_code, "status": status}}


def wrong_last_seq(seq: int) -> dict[str, Any]:
    return api_error(f"wrong last sequence: {seq}", 10071)


def test_natsjs_publish_expect(target: str, natsjs: ScenarioFn) -> None:
    """js.publish with expect {streamName, lastSequence, lastMsgID, lastSubjectSequence,
    lastSubjectSequenceSubject} and msgID: each success's PubAck and each failure's error."""
    assert natsjs("publish_expect.mjs") == {
        "first": ack(1),
        "dup": ack(1, duplicate=True),
        "last_seq_ok": ack(2),
        "last_seq_bad": wrong_last_seq(2),
        "last_msgid_ok": ack(3),
        "last_msgid_bad": api_error("wrong last msg ID: m3", 10070),
        "stream_ok": ack(4),
        "stream_bad": api_error("expected stream does not match", 10060),
        "subj_seq_ok": ack(5),
        "subj_seq_bad": wrong_last_seq(5),
        "subj_seq_zero_new": ack(6),
        "subj_seq_zero_bad": wrong_last_seq(6),
        "subj_seq_subject_ok": ack(7),
        "subj_seq_subject_bad": wrong_last_seq(7),
        "combined_ok": ack(8),
        "combined_bad_seq": wrong_last_seq(8),
        "after_failures": ack(9),
        "dup_of_stored": ack(8, duplicate=True),
        "state": {"messages": 9, "first_seq": 1, "last_seq": 9, "num_subjects": 5},
        "last_a": {"seq": 9, "data": "9", "msgid": "m9"},
    }


# ---------------------------------------------------------------------- pull fetch limits


def discard(msgs: int, nbytes: int) -> dict[str, Any]:
    return {"type": "discard", "messagesLeft": msgs, "bytesLeft": nbytes}


TIMEOUT_408 = {"type": "debug", "code": 408, "description": "request timeout"}
MAX_BYTES_409 = {"type": "exceeded_limits", "code": 409,
                 "description": "message size exceeds maxbytes"}
MAX_BYTES_ERROR = {"name": "JetStreamStatusError", "message": "message size exceeds maxbytes",
                   "code": 409}


def test_natsjs_fetch_expires_and_max_bytes(target: str, natsjs: ScenarioFn) -> None:
    """fetch with expires (partial, empty, full batches), max_bytes (what fits, then 409; a
    message bigger than max_bytes), next() on nothing; the 408/409 statuses with their
    Nats-Pending-Messages / Nats-Pending-Bytes as nats.js reports them."""
    def info(delivered: int, pending: int) -> dict[str, int]:
        return {"delivered": delivered, "num_pending": pending, "num_ack_pending": 0,
                "num_waiting": 0}

    assert natsjs("fetch_limits.mjs") == {
        "partial": {"seqs": [1, 2, 3], "when": "at_expiry", "error": None,
                    "statuses": [discard(7, 0), TIMEOUT_408]},
        "empty": {"seqs": [], "when": "at_expiry", "error": None,
                  "statuses": [discard(5, 0), TIMEOUT_408]},
        "full": {"seqs": [4, 5, 6, 7, 8], "when": "early", "error": None, "statuses": []},
        "max_bytes": {"seqs": [9, 10], "when": "early", "error": MAX_BYTES_ERROR,
                      "statuses": [discard(98, 147), MAX_BYTES_409]},
        "too_big": {"seqs": [], "when": "early", "error": MAX_BYTES_ERROR,
                    "statuses": [discard(100, 500), MAX_BYTES_409]},
        "next_empty": {"ok": True, "value": None, "when": "at_expiry"},
        "max_bytes_rest": {"seqs": [11, 12, 13, 14], "when": "at_expiry", "error": None,
                           "statuses": [discard(96, 8892), TIMEOUT_408]},
        "info": {"a": info(3, 0), "b": info(14, 0), "c": info(0, 1), "n": info(0, 0)},
    }


# ---------------------------------------------------------------------- consume()


def test_natsjs_consume_heartbeats_across_pause(target: str, natsjs: ScenarioFn) -> None:
    """consume() with idle_heartbeat 500ms / expires 1s: 5 messages, a 1.8 s pause with
    heartbeats (Nats-Last-Consumer/-Stream 5) and an expired pull, 10 more messages."""
    messages = [{"seq": i, "data": f"before {i - 1}", "redelivered": False, "delivery": i}
                for i in range(1, 6)]
    messages += [{"seq": i, "data": f"after {i - 6}", "redelivered": False, "delivery": i}
                 for i in range(6, 16)]
    assert natsjs("consume_heartbeats.mjs") == {
        "messages": messages,
        "heartbeats_in_pause_ge_2": True,
        "heartbeat_in_pause": {"consumer": 5, "stream": 5},
        "heartbeats_missed": 0,
        "other_statuses": ["debug 408 request timeout"],
        "info": {"delivered": 15, "ack_floor": 15, "num_pending": 0, "num_redelivered": 0},
    }


def test_natsjs_ack_kinds_and_redelivery(target: str, natsjs: ScenarioFn) -> None:
    """ack, nak, nak(300ms), term, working, no ack (ack_wait 1s, max_deliver 2), ackAck twice."""
    assert natsjs("ack_redelivery.mjs") == {
        "deliveries": {"ack": ["1"], "nak": ["1", "2r"], "nak_delay": ["1", "2r"],
                       "term": ["1"], "working": ["1"], "none": ["1", "2r"], "ackack": ["1"]},
        "nak_delay": "after delay",
        "ackack": {"first": {"ok": True, "value": True},
                   "second": {"ok": True, "value": False}},
        "info": {"delivered": {"consumer_seq": 10, "stream_seq": 7}, "num_ack_pending": 0,
                 "num_redelivered": 1, "num_pending": 0},
        "elapsed_lt_5s": True,
    }


# ---------------------------------------------------------------------- ordered consumers


def test_natsjs_ordered_consume_survives_consumer_delete(target: str, natsjs: ScenarioFn) -> None:
    """Ordered consume() over 3000 messages; its consumer is deleted after message 1000: the
    next pull finds no responders, heartbeats go missing, consumer info says not found, the
    client resets and recreates from the next sequence; all 3000 arrive in order."""
    assert natsjs("ordered_reset.mjs") == {
        "read_up_to": 3000,
        "out_of_order": 0,
        "deleted": ["oc_N"],
        "new_consumer": {"starts_after_cut": True, "pending_is_rest": True,
                         "delivers_rest": True},
        "kinds": ["no_responders", "heartbeats_missed", "consumer_not_found", "reset",
                  "ordered_consumer_recreated"],
        "recreated": 1,
        "consumers_left": 1,
    }


def test_natsjs_ordered_fetch_survives_consumer_delete(target: str, natsjs: ScenarioFn) -> None:
    """Ordered fetch batches from sequence 101 of 2000; the consumer is deleted between two
    batches: that fetch fails with 503 no responders, the next ones recreate the consumer and
    go on from 1101 (nats.js resets twice: of_3, then of_5 after its own delivery-sequence
    check, and its batch accounting gives one 501-message batch — on every server)."""
    def batch(name: str, count: int, first: int, last: int, dfirst: int,
              dlast: int) -> dict[str, Any]:
        return {"name": name, "count": count, "first": first, "last": last,
                "dseq_first": dfirst, "dseq_last": dlast, "dseq_contiguous": True}

    assert natsjs("ordered_fetch.mjs") == {
        "batches": [
            batch("of_1", 500, 101, 600, 1, 500),
            batch("of_1", 500, 601, 1100, 501, 1000),
            {"name": "of_1", "error": {"name": "JetStreamStatusError",
                                       "message": "no responders", "code": 503}},
            batch("of_3", 501, 1101, 1601, 1, 501),
            batch("of_5", 399, 1602, 2000, 1, 399),
        ],
        "deleted_name": "of_1",
        "deleted": True,
        "in_order": True,
        "count": 1900,
    }


def test_natsjs_ordered_push_sequence_gap(target: str, natsjs: ScenarioFn) -> None:
    """Ordered push consumer (flow control, 30 s heartbeats): after 1000 messages its consumer
    is replaced by one with the same name and deliver subject restarting at delivery 1; the
    client sees the gap, deletes it, recreates op_2 from 1001 and gets the next 1000 in order."""
    assert natsjs("ordered_push_gap.mjs") == {
        "config": {"ack_policy": "none", "flow_control": True, "idle_heartbeat": 30_000_000_000,
                   "max_deliver": 1, "name": "op_1", "push": True},
        "consumers_after_reset": ["op_2"],
        "count": 2000,
        "in_order": True,
        "payloads_ok": True,
        "delivery_seqs": {"first": 1, "at_1000": 1000, "at_1001": 1, "last": 1000},
        "statuses": [{"type": "ordered_consumer_recreated", "name": "op_2"}],
    }


# ---------------------------------------------------------------------- KV


def kv(key: str, op: str, value: str, rev: int, delta: int = 0,
       update: bool | None = True) -> dict[str, Any]:
    return {"key": key, "op": op, "value": value, "rev": rev, "delta": delta, "update": update}


def test_natsjs_kv_watchers(target: str, natsjs: ScenarioFn) -> None:
    """KV (history 5): watchers with include history / last values / updates only / one key
    ignoring deletes see the exact initial entries (with deltas) then the same live puts,
    deletes and purges; create/update revision checks, get by revision, history, keys."""
    live = [kv("b", "PUT", "b2", 7), kv("a", "DEL", "", 8), kv("c.x", "PUT", "c2", 9),
            kv("c.x", "PURGE", "", 10), kv("a", "PUT", "a4", 11)]
    assert natsjs("kv_watch.mjs") == {
        "initial": {
            "history": [kv("a", "PUT", "a1", 1, 5, False), kv("a", "PUT", "a2", 2, 4, False),
                        kv("b", "PUT", "b1", 3, 3, False), kv("c.x", "PUT", "c1", 4, 2, False),
                        kv("b", "DEL", "", 5, 1, False), kv("a", "PUT", "a3", 6, 0, True)],
            "last": [kv("c.x", "PUT", "c1", 4, 2, False), kv("b", "DEL", "", 5, 1, False),
                     kv("a", "PUT", "a3", 6, 0, True)],
            "filtered": [kv("a", "PUT", "a3", 6, 0, True)],
            "updates": 0,
        },
        "live": {"history": live, "last": live, "updates": live,
                 "filtered": [kv("a", "PUT", "a4", 11)]},
        "create_existing": wrong_last_seq(11),
        "create_deleted": {"ok": True, "value": 13},
        "update_wrong": wrong_last_seq(11),
        "update_right": {"ok": True, "value": 14},
        "get_old_revision": kv("a", "PUT", "a2", 2, 0, None),
        "history_a": [kv("a", "PUT", "a2", 2, 4, False), kv("a", "PUT", "a3", 6, 3, False),
                      kv("a", "DEL", "", 8, 2, False), kv("a", "PUT", "a4", 11, 1, False),
                      kv("a", "PUT", "a5", 14, 0, False)],
        "keys": ["a", "b"],
        "status": {"values": 11, "history": 5, "bucket_ok": True},
    }


def test_natsjs_kv_and_message_ttl(target: str, natsjs: ScenarioFn) -> None:
    """KV with markerTTL 1s: kv.create with a 1 s TTL expires into a MaxAge marker (seen as
    PURGE by a watcher) that expires a second later; a stream with allow_msg_ttl: Nats-TTL
    stored, expiry, invalid TTL, TTL on a stream without allow_msg_ttl."""
    assert natsjs("kv_ttl.mjs") == {
        "config": {"allow_msg_ttl": True, "subject_delete_marker_ttl": 1_000_000_000,
                   "markerTTL": 1000},
        "create_ttl": {"ok": True, "value": 1},
        "ttl_header": "1s",
        "bad_ttl": api_error("invalid per-message TTL", 10165),
        "ttl_not_allowed": api_error("per-message TTL is disabled", 10166),
        "after_ttl": {"messages": 1, "first_seq": 2, "last_seq": 2},
        "short_marker": {"op": "PURGE", "rev": 3},
        "marker_headers": {"Nats-Marker-Reason": "MaxAge", "Nats-Rollup": "sub",
                           "Nats-TTL": "1s"},
        "keep_after": "k1",
        "watched": ["short:PUT:1", "keep:PUT:2", "short:PURGE:3"],
        "kv_state": {"messages": 1, "first_seq": 2, "last_seq": 3},
    }


# ---------------------------------------------------------------------- object store

BIG_SHA = "SHA-256=G7GC9kmnif2hdBKkg56dXdULQGgIm8M0ZV945tt5c3A="
SMALL_SHA = "SHA-256=MHnjd1pFRfZ8uSZXzRJWxXJbTuhHX025G48tnnh_BHw="
EMPTY_SHA = "SHA-256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU="


def obj(name: str, bucket: str, size: int, chunks: int, digest: str, *, chunk: int = 131072,
        description: str | None = "", metadata: dict[str, str] | None = None,
        deleted: bool = False, link: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "bucket": bucket, "size": size, "chunks": chunks, "digest": digest,
            "deleted": deleted, "link": link, "max_chunk_size": chunk,
            "description": description, "metadata": {} if metadata is None else metadata}


def obj_link(name: str, bucket: str, to_bucket: str, to_name: str, *,
             listed: bool = False) -> dict[str, Any]:
    return {"name": name, "bucket": bucket, "deleted": False,
            "link": {"bucket": to_bucket, "name": to_name}, "max_chunk_size": None,
            "description": None if listed else "", "metadata": None if listed else {}}


def test_natsjs_object_store_links(target: str, natsjs: ScenarioFn) -> None:
    """Object store: a 3-chunk and a 4-chunk object, links within a bucket and across
    buckets, get/getBlob through links, a store link, rejected link-of-link and link to a
    deleted object, delete, dangling link."""
    big = obj("big.bin", "A", 300000, 3, BIG_SHA, description="three chunks",
              metadata={"k": "v"})
    small = obj("dir/small.bin", "B", 1000, 4, SMALL_SHA, chunk=256)
    empty = obj("empty", "B", 0, 0, EMPTY_SHA)
    store_link = obj("b.store", "A", 0, 0, EMPTY_SHA, link={"bucket": "B", "name": None})

    def read(info: dict[str, Any], size: int, sha: str) -> dict[str, Any]:
        return {"info": info, "size": size, "sha": sha, "error": None}

    assert natsjs("obj_links.mjs") == {
        "put_big": big,
        "put_small": small,
        "expected": {"big": BIG_SHA, "small": SMALL_SHA},
        "get_big": read(big, 300000, BIG_SHA),
        "get_small": read(small, 1000, SMALL_SHA),
        "link_same": obj_link("big.link", "A", "A", "big.bin"),
        "link_other": obj_link("small.link", "B", "B", "dir/small.bin"),
        "get_link_same": read(big, 300000, BIG_SHA),
        "get_link_other": read(small, 1000, SMALL_SHA),
        "link_store": store_link,
        "link_of_link": {"ok": False, "error": {"name": "Error",
                                                "message": "src object is a link"}},
        "list_a": [{**store_link, "metadata": None}, big,
                   obj_link("big.link", "A", "A", "big.bin", listed=True),
                   obj_link("small.link", "B", "B", "dir/small.bin", listed=True)],
        "blob_through_link": SMALL_SHA,
        "empty": empty,
        "get_empty": read(empty, 0, EMPTY_SHA),
        "missing": None,
        "delete_small": True,
        "info_deleted": obj("dir/small.bin", "B", 0, 0, "", chunk=256, deleted=True),
        "get_deleted": {"ok": True, "value": None},
        "get_dangling_link": {"ok": True, "value": None},
        "link_to_deleted": {"ok": False, "error": {"name": "Error",
                                                   "message": "src object is deleted"}},
        "status_a": {"sealed": False, "backingStore": "JetStream", "size": 301419},
    }


# ---------------------------------------------------------------------- direct get


def stored(subject: str, seq: int, pending: int | None = None,
           last: int | None = None) -> dict[str, Any]:
    return {"subject": subject, "seq": seq, "data": f"v{seq}", "pending": pending,
            "lastSequence": last, "stream_ok": True, "hdr": f"h{seq}"}


def test_natsjs_direct_get(target: str, natsjs: ScenarioFn) -> None:
    """jsm.direct: by seq, last_by_subj, next_by_subj (also wildcard), missing; batches (all,
    filtered, max_bytes) and multi_last (also up_to_seq) with Nats-Num-Pending and
    Nats-Last-Sequence; STREAM.MSG.GET / MSG.DELETE; info with subjects_filter and deleted."""
    assert natsjs("direct_get.mjs") == {
        "by_seq": stored("c", 4),
        "last_by_subj": stored("b", 5),
        "next_by_subj": stored("a", 6),
        "next_wild": stored("c.x", 7),
        "missing_seq": {"ok": True, "value": None},
        "missing_subj": {"ok": True, "value": None},
        "batch_all": [stored("b", 2, 6, 0), stored("a", 3, 5, 2), stored("c", 4, 4, 3)],
        "batch_filtered": [stored("a", 3, 2, 0), stored("a", 6, 1, 3), stored("a", 8, 0, 6)],
        "batch_max_bytes": [stored("a", 1, 7, 0), stored("b", 2, 6, 1)],
        "multi_last": [stored("b", 5, 2, 0), stored("c.x", 7, 1, 5), stored("a", 8, 0, 7)],
        "multi_last_wild": [stored("c", 4, 3, 0), stored("b", 5, 2, 4), stored("c.x", 7, 1, 5),
                            stored("a", 8, 0, 7)],
        "multi_last_up_to": [stored("b", 2, 1, 0), stored("a", 3, 0, 2)],
        "multi_last_none": {"ok": True, "value": []},
        "msg_get": {"seq": 8, "subject": "a", "data": "v8", "hdr": "h8"},
        "delete_msg": True,
        "delete_again": api_error("sequence 6 not found", 10043),
        "after_delete": stored("a", 8),
        "get_deleted": {"ok": True, "value": None},
        "msg_get_deleted": {"ok": True, "value": None},
        "info": {"messages": 7, "num_deleted": 1, "deleted": [6],
                 "subjects": {"a": 3, "b": 2, "c": 1, "c.x": 1}},
    }


# ---------------------------------------------------------------------- management


def test_natsjs_stream_and_consumer_admin(target: str, natsjs: ScenarioFn) -> None:
    """jsm: purge by filter / seq / keep, find and names by subject, update (and a refused
    storage change), consumer pause (nothing delivered) and resume, reset to a sequence;
    unknown consumer / stream errors (a reset of an unknown consumer gets no reply)."""
    assert natsjs("stream_admin.mjs") == {
        "purge_filter": 4,
        "after_filter": {"messages": 8, "first_seq": 1, "last_seq": 12},
        "purge_seq": 4,
        "after_seq": {"messages": 4, "first_seq": 7, "last_seq": 12},
        "purge_keep": 1,
        "after_keep": {"messages": 3, "first_seq": 9, "last_seq": 12},
        "find": True,
        "names": ["<stream>"],
        "update": {"description": "updated", "max_msgs_per_subject": 3},
        "update_bad": api_error("stream configuration update can not change storage type",
                                10052, 500),
        "pause": {"paused": True, "until_ok": True},
        "paused_info": {"paused": True, "pause_remaining_gt_50s": True},
        "reset_unknown": {"ok": False, "error": {"name": "TimeoutError", "message": "timeout"}},
        "fetch_while_paused": [],
        "resume": {"paused": False, "has_until": True},
        "fetch_after_resume": [9, 12],
        "reset": {"ok": True, "value": {"reset_seq": 9, "delivered": 8, "ack_floor": 8,
                                        "num_pending": 2}},
        "fetch_after_reset": [9, 12],
        "pause_unknown": {"ok": False, "error": {"name": "ConsumerNotFoundError",
                                                 "message": "consumer not found",
                                                 "err_code": 10014, "status": 404}},
        "purge_unknown": {"ok": False, "error": {"name": "StreamNotFoundError",
                                                 "message": "stream not found",
                                                 "err_code": 10059, "status": 404}},
    }


def test_natsjs_priority_groups(target: str, natsjs: ScenarioFn) -> None:
    """pinned_client: the first puller is pinned (Nats-Pin-Id), the other one's request
    expires, unpin lets it in; no / unknown group refused with 400; overflow min_pending."""
    def pulled(*seqs: int, pin: bool = True) -> dict[str, Any]:
        return {"got": [{"seq": s, "pin": pin} for s in seqs], "error": None,
                "statuses": ["consumer_pinned"] if pin else []}

    def bad_request(message: str) -> dict[str, Any]:
        return {"got": [], "statuses": [], "error": {"name": "JetStreamStatusError",
                                                     "message": message, "code": 400}}

    expired = {"got": [], "error": None, "statuses": ["408 request timeout"]}
    assert natsjs("priority_pinned.mjs") == {
        "config": {"policy": "pinned_client", "groups": ["g"], "timeout": 2_000_000_000},
        "a1": pulled(1, 2),
        "b1": expired,
        "ovf_high": expired,
        "a2": pulled(3, 4),
        "pinned_info": [{"group": "g", "pinned": True}],
        "b2": pulled(5, 6),
        "no_group": bad_request("bad request - priority group missing"),
        "bad_group": bad_request("bad request - invalid priority group"),
        "ovf_low": pulled(1, 2, pin=False),
    }


def test_natsjs_fast_ingest(target: str, natsjs: ScenarioFn) -> None:
    """startFastIngest (allow_batched): 25 messages paced by the server's flow acks and
    committed with last(), a batch ended with end(); the BatchAck of each."""
    assert natsjs("fast_ingest.mjs") == {
        "last": {"stream": "<stream>", "seq": 25, "batch": True, "count": 25},
        "end": {"stream": "<stream>", "seq": 27, "batch": True, "count": 2},
        "state": {"messages": 27, "last_seq": 27, "num_subjects": 3},
        "last_b": {"seq": 25, "data": "m25"},
    }
