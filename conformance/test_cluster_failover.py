"""Failover on a 3-node JetStream cluster: what clients see when nodes go away.

Four scenarios, each run once per target and observed by several cases:

* **crash** (``kill -9``) of node X leading an R3 stream, its pull and push consumers, and
  holding an R1 stream: publishes get the 503 no-responders status until a new leader is
  elected (nats-server: 4-9 s of election timeout), a waiting pull request gets
  ``409 Leadership Change`` from the consumer's new leader, the push consumer resumes with the
  first unacknowledged message, acknowledged messages and the dedup window survive, the R1
  stream is unavailable (publish 503, info silent, listed as ``missing``) until X returns, and
  X catches up when it does;
* **shutdown** (SIGTERM) of X: leaders move off X at once; pull requests waiting on consumers X
  led get ``409 Server Shutdown`` with the pending counts (consumers configured with at most 1
  replica) and ``409 Leadership Change`` from the new leader (replicated ones); the R1 stream
  and consumer on X answer "offline" errors; X's clients are disconnected;
* **majority loss** (2 of 3 crashed): the surviving leader cannot commit, so publishes get no
  reply; after its quorum-lost interval (10 s) it steps down and publishes get 503; API
  requests that need the meta leader get no reply, then ``503 10008 JetStream system
  temporarily unavailable``; all acknowledged messages are there when the nodes return;
* **meta leader crash**: requests that need the meta leader get no reply until another is
  elected; streams led elsewhere keep working.

On nats-server the cases wait in real time; on minijs ``cluster.wait_until`` moves the virtual
clock, so the same case is instant there. Partitions are not covered: a nats-server cluster of
processes cannot be partitioned by the suite, and a case only one target can run is not
conformance.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from conformance.cluster import Cluster, ClusterClients, node_tags
from conformance.clusterjs import all_current, leader_of, peer_id, quick, stored
from conformance.jshelpers import TYPE_PREFIX, JsClient, Msg, api_error, parse_msg, unique_name
from conformance.rawclient import ConnectionClosed, RawClient

pytestmark = [pytest.mark.conformance, pytest.mark.cluster]

DUP_WINDOW = 60_000_000_000
EXPIRES = 120_000_000_000


def msg_id(value: str) -> bytes:
    return f"NATS/1.0\r\nNats-Msg-Id: {value}\r\n\r\n".encode()


def status_frame(reply: str, sid: str, header: bytes) -> bytes:
    return f"HMSG {reply} {sid} {len(header)} {len(header)}\r\n".encode() + header + b"\r\n"


LEADERSHIP_CHANGE = b"NATS/1.0 409 Leadership Change\r\n\r\n"


def server_shutdown(pending_msgs: int, pending_bytes: int = 0) -> bytes:
    return (b"NATS/1.0 409 Server Shutdown\r\n" +
            f"Nats-Pending-Messages: {pending_msgs}\r\nNats-Pending-Bytes: {pending_bytes}"
            "\r\n\r\n".encode())


class Inbox:
    """A raw connection subscribed to ``subject``; collects the frames that arrive. (A push
    consumer needs a subscription to its exact deliver subject: nats-server does not count a
    wildcard subscription as interest in it.)"""

    def __init__(self, cluster: Cluster, node: str, subject: str) -> None:
        n = cluster.node(node)
        self.raw = RawClient.connect(n.host, n.port)
        self.raw.handshake()
        self.subject = subject
        self.raw.send(f"SUB {subject} 1\r\n".encode())
        self.raw.barrier()
        self.frames: list[bytes] = []

    def visible_from(self, cluster: Cluster, *nodes: str) -> None:
        """Wait until the subscription is known on ``nodes`` (a marker published there
        arrives); interest crosses routes asynchronously."""
        for name in nodes:
            n = cluster.node(name)
            sender = RawClient.connect(n.host, n.port)
            sender.handshake()
            marker = self.subject.replace(">", "marker").encode()
            try:
                deadline = time.monotonic() + 10
                while True:
                    sender.send(b"PUB " + marker + b" 0\r\n\r\n")
                    sender.barrier()
                    got = self.raw.read_available(0.05)
                    if marker in got:
                        break
                    assert time.monotonic() < deadline, f"{self.subject} not known on {name}"
            finally:
                sender.close()
        self.raw.read_available(0.1)  # late markers

    def drain(self, wait: float = 0.02) -> list[bytes]:
        """Read what has arrived (INFO updates skipped); returns the frames read now."""
        new: list[bytes] = []
        while True:
            try:
                frame = self.raw.read_frame(timeout=wait)
            except (TimeoutError, ConnectionClosed):
                break
            if not frame.startswith(b"INFO "):
                new.append(frame)
        self.frames += new
        return new

    def close(self) -> None:
        self.raw.close()


def send(js: JsClient, subject: str, body: Any = None, headers: bytes | None = None) -> str:
    """Send a request without waiting; returns its reply subject (read with :func:`poll`)."""
    reply = js.new_reply()
    js.send(subject, body, headers, reply)
    return reply


def poll(js: JsClient, reply: str, wait: float = 0.05) -> Msg | None:
    try:
        return js.next_msg(reply, timeout=wait)
    except TimeoutError:
        return None


def publish_outcome(js: JsClient, subject: str, headers: bytes, timeout: float = 1.0) -> Any:
    """``"503"``, ``"timeout"`` or the decoded pub ack."""
    try:
        m = js.publish(subject, b"data", headers=headers, timeout=timeout)
    except TimeoutError:
        return "timeout"
    return m.status.split()[0] if m.status else m.json()


async def lead_on(cluster: Cluster, js: JsClient, info: str, stepdown: str, node: str) -> None:
    """Step the asset's leadership over to ``node`` (preferred placement) and wait for it."""
    async def there() -> bool:
        if not all_current(js, info):
            return False
        if leader_of(js, info) == node:
            return True
        js.api(stepdown, {"placement": {"preferred": node}}, timeout=quick(js))
        await cluster.sleep(0.3)
        return False
    await cluster.wait_until(there, timeout=30, what=f"{info} led by {node}")


def ack_all(cluster_js: JsClient, inbox: Inbox, count: int) -> list[Msg]:
    """Wait for ``count`` deliveries on ``inbox`` and acknowledge each (with a reply, so the ack
    is processed before this returns)."""
    got: list[Msg] = []
    deadline = time.monotonic() + 10
    while len(got) < count:
        assert time.monotonic() < deadline, f"only {len(got)} of {count} deliveries"
        for frame in inbox.drain(0.05):
            got.append(parse_msg(frame))
    for m in got:
        assert m.reply, m.frame
        cluster_js.request(m.reply, b"+ACK", timeout=5)
    inbox.frames.clear()
    return got


# ---------------------------------------------------------------------- scenarios


@dataclass
class Observed:
    """What a scenario saw; the cases assert on it."""

    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    error: BaseException | None = None

    def __getitem__(self, key: str) -> Any:
        if self.error is not None:
            raise AssertionError(f"the scenario failed: {self.error!r}") from self.error
        return self.values[key]


_SCENARIOS: dict[tuple[str, str], Observed] = {}


async def run_once(kind: str, target: str, cluster: Cluster, cjs: ClusterClients,
                   scenario: Any) -> Observed:
    key = (target, kind)
    if key not in _SCENARIOS:
        seen = Observed()
        _SCENARIOS[key] = seen
        try:
            await scenario(cluster, cjs, seen)
        except Exception as exc:
            seen.error = exc
    return _SCENARIOS[key]


async def prepare_leader(cluster: Cluster, cjs: ClusterClients, seen: Observed) -> dict[str, Any]:
    """Node X (not the meta leader) leads stream S (R3), its consumers ``pull`` (R3 by
    inheritance), ``pull3`` (R3 configured), ``push`` (R3) and holds stream ONE (R1, placed
    with X's tag) and consumer ``one`` (R1); five messages were published with ids and
    acknowledged on both consumers; a pull request waits on ``pull``, ``pull3`` and ``one``."""
    meta = cluster.meta_leader()
    x = next(n.name for n in cluster.nodes if n.name != meta)
    y = next(n.name for n in cluster.nodes if n.name != x)
    seen.names.update(x=x, y=y, meta=meta or "")
    js = cjs(y)
    s, one = unique_name(), unique_name()
    p = s.lower()
    js.create(s, subjects=[f"{p}.>"], num_replicas=3, duplicate_window=DUP_WINDOW)
    x_index = cluster.names.index(x) + 1
    js.create(one, subjects=[one.lower()], placement={"tags": [node_tags(x_index, x)[1]]})
    consumers = {"pull": {}, "pull3": {"num_replicas": 3}, "one": {"num_replicas": 1},
                 "push": {"deliver_subject": f"dlv.{p}.push"}}
    for cname, extra in consumers.items():
        out = js.api(f"CONSUMER.CREATE.{s}.{cname}", {"stream_name": s, "config": {
            "durable_name": cname, "ack_policy": "explicit", **extra}})
        assert "error" not in out, out
    await lead_on(cluster, js, f"STREAM.INFO.{s}", f"STREAM.LEADER.STEPDOWN.{s}", x)
    for cname in ("pull", "pull3", "push"):
        await lead_on(cluster, js, f"CONSUMER.INFO.{s}.{cname}",
                      f"CONSUMER.LEADER.STEPDOWN.{s}.{cname}", x)
    one_consumer = js.api(f"CONSUMER.INFO.{s}.one")["cluster"]["leader"]
    push = Inbox(cluster, y, f"dlv.{p}.push")
    pulls = Inbox(cluster, y, f"pin.{p}.>")
    push.visible_from(cluster, *cluster.names)
    pulls.visible_from(cluster, *cluster.names)
    for i in range(5):
        await stored(cluster, js, f"{p}.m", b"m%d" % i, msg_id(f"id{i}"))
    await stored(cluster, js, one.lower(), b"kept", msg_id("kept"))
    ack_all(js, push, 5)
    for cname in ("pull", "pull3", "one"):
        js.send(f"$JS.API.CONSUMER.MSG.NEXT.{s}.{cname}", {"batch": 5},
                reply=f"pin.{p}.first.{cname}")
        ack_all(js, pulls, 5)

    def acked() -> bool:
        return all(js.api(f"CONSUMER.INFO.{s}.{c}")["ack_floor"]["stream_seq"] == 5
                   for c in consumers if c != "one") and all_current(
                       js, f"STREAM.INFO.{s}") is not None
    await cluster.wait_until(acked)
    for cname in ("pull", "pull3", "one"):
        js.send(f"$JS.API.CONSUMER.MSG.NEXT.{s}.{cname}", {"batch": 10, "expires": EXPIRES},
                reply=f"pin.{p}.wait.{cname}")
    await cluster.sleep(0.3)  # the waiting requests reach the consumers' leaders
    assert pulls.drain(0.1) == []
    seen.values["one_consumer_leader"] = one_consumer
    return {"js": js, "s": s, "p": p, "one": one, "push": push, "pulls": pulls, "x": x, "y": y}


async def crash_scenario(cluster: Cluster, cjs: ClusterClients, seen: Observed) -> None:
    env = await prepare_leader(cluster, cjs, seen)
    js, s, p, one, push, pulls, x = (env[k] for k in ("js", "s", "p", "one", "push", "pulls",
                                                      "x"))
    await cluster.crash(x)
    v = seen.values
    v["one_publish"] = publish_outcome(js, one.lower(), msg_id("one-during"))
    v["one_info"] = poll(js, send(js, f"$JS.API.STREAM.INFO.{one}"), wait=1.0)
    v["names"] = js.api("STREAM.NAMES", {"subject": one.lower()})
    list_reply = send(js, "$JS.API.STREAM.LIST", {"subject": one.lower()})
    outcomes: list[Any] = []

    def published() -> Any:
        out = publish_outcome(js, f"{p}.after", msg_id("after"), timeout=quick(js))
        outcomes.append(out)
        return out if isinstance(out, dict) else None
    v["after_ack"] = await cluster.wait_until(published, timeout=30, what="publish accepted")
    v["outcomes"] = outcomes

    def pull_released() -> bool:
        pulls.drain()
        return any(b".wait.pull " in f for f in pulls.frames) and any(
            b".wait.pull3 " in f for f in pulls.frames)
    await cluster.wait_until(pull_released, timeout=30, what="409 to the waiting pulls")

    def pushed() -> bool:
        return bool(push.drain())
    await cluster.wait_until(pushed, timeout=30, what="push delivery resumes")
    await cluster.sleep(0.3)
    v["push"] = list(push.frames)
    v["pull_frames"] = list(pulls.frames)
    v["list"] = await cluster.wait_until(lambda: poll(js, list_reply), timeout=30,
                                         what="STREAM.LIST reply")
    base = len(pulls.frames)
    js.send(f"$JS.API.CONSUMER.MSG.NEXT.{s}.pull", {"batch": 1}, reply=f"pin.{p}.again")

    def delivered() -> bool:
        pulls.drain()
        return len(pulls.frames) > base
    await cluster.wait_until(delivered, timeout=10, what="pull after the election")
    v["pull_after"] = pulls.frames[base:]
    v["dedup"] = js.pub(f"{p}.m", b"again", headers=msg_id("id1"))
    v["state"] = js.state(s)
    v["msg3"] = js.msg_get(s, {"seq": 3})
    v["new_leader"] = leader_of(js, f"STREAM.INFO.{s}")

    await cluster.restart(x, settle=False)

    def one_back() -> Any:
        out = publish_outcome(js, one.lower(), msg_id("one-after"), timeout=quick(js))
        return out if isinstance(out, dict) else None
    v["one_after"] = await cluster.wait_until(one_back, timeout=30, what="R1 stream back")
    await lead_on(cluster, js, f"STREAM.INFO.{s}", f"STREAM.LEADER.STEPDOWN.{s}", x)
    v["caught_up_state"] = js.state(s)
    v["caught_up_msg"] = js.msg_get(s, {"seq": 6})
    push.close()
    pulls.close()


@pytest.fixture
async def leader_crash(target: str, cluster: Cluster, cjs: ClusterClients) -> Observed:
    return await run_once("crash", target, cluster, cjs, crash_scenario)


async def test_cluster_crash_publishes_get_503_until_a_new_leader(
        target: str, leader_crash: Observed) -> None:
    """While the stream has no leader a publish gets the 503 no-responders status (at once,
    not a timeout); the first accepted publish gets the next sequence."""
    outcomes = leader_crash["outcomes"]
    assert outcomes[0] == "503"
    assert all(o in ("503", "timeout") for o in outcomes[:-1]), outcomes
    ack = leader_crash["after_ack"]
    assert (ack["stream"], ack["seq"]) == (ack["stream"], 6)
    assert leader_crash["new_leader"] not in (None, leader_crash.names["x"])


async def test_cluster_crash_waiting_pull_gets_leadership_change(
        target: str, leader_crash: Observed) -> None:
    """A pull request waiting on a replicated consumer whose leader crashed gets, from the new
    leader, exactly ``409 Leadership Change`` with no other header; the next request gets the
    first unacknowledged message."""
    msgs = [parse_msg(f) for f in leader_crash["pull_frames"]]
    status = [m for m in msgs if m.status]
    assert sorted(m.subject.rsplit(".", 1)[1] for m in status) == ["pull", "pull3"], msgs
    for m in status:
        assert m.frame == status_frame(m.subject, "1", LEADERSHIP_CHANGE), m.frame
    # Data can only have gone to the R1 consumer's request, if its node is alive.
    assert all(m.reply and ".one." in m.reply for m in msgs if not m.status), msgs
    after = [parse_msg(f) for f in leader_crash["pull_after"]]
    data = [m for m in after if not m.status]
    assert [m.data for m in data] == [b"data"], after
    # $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>...: a first delivery
    assert data[0].reply and data[0].reply.split(".")[4:7] == ["1", "6", "6"], data[0].reply


async def test_cluster_crash_push_consumer_resumes(target: str, leader_crash: Observed) -> None:
    """A push consumer whose leader crashed delivers nothing during the election, then the
    first message it had not had acknowledged, as a first delivery; nothing acknowledged is
    delivered again."""
    msgs = [parse_msg(f) for f in leader_crash["push"]]
    assert [m.status for m in msgs] == [""] * len(msgs)
    assert [m.data for m in msgs] == [b"data"]
    tokens = msgs[0].reply.split(".") if msgs[0].reply else []
    assert tokens[4:7] == ["1", "6", "6"], msgs[0].reply


async def test_cluster_crash_keeps_acked_messages_and_dedup(target: str,
                                                            leader_crash: Observed) -> None:
    """Every acknowledged message is there after the leader's crash, and a message id published
    before the crash is still a duplicate after it."""
    state = leader_crash["state"]
    assert (state["messages"], state["first_seq"], state["last_seq"]) == (6, 1, 6)
    dedup = leader_crash["dedup"]
    assert (dedup["seq"], dedup.get("duplicate")) == (2, True)
    msg3 = leader_crash["msg3"]["message"]
    assert (msg3["seq"], msg3["data"]) == (3, "bTI=")  # b"m2"


async def test_cluster_crash_r1_stream_unavailable_until_node_returns(
        target: str, leader_crash: Observed) -> None:
    """An R1 stream whose node crashed: publishes get 503, STREAM.INFO gets no reply, it is
    still listed by name, STREAM.LIST reports it ``missing``; when the node is back it takes
    publishes again with its messages kept."""
    assert leader_crash["one_publish"] == "503"
    assert leader_crash["one_info"] is None
    names = leader_crash["names"]
    assert names["streams"] is not None and len(names["streams"]) == 1
    listed = leader_crash["list"].json()
    assert listed["missing"] == names["streams"]
    assert list(listed) == ["type", "total", "offset", "limit", "streams", "missing"]
    assert listed["total"] == 1
    assert [st["config"]["name"] for st in listed["streams"]] == []
    ack = leader_crash["one_after"]
    assert (ack["seq"], ack.get("duplicate")) == (2, None)


async def test_cluster_crash_node_catches_up_on_return(target: str,
                                                       leader_crash: Observed) -> None:
    """The crashed node, back, catches up on what was published while it was down: led by it,
    the stream has every message."""
    state = leader_crash["caught_up_state"]
    assert (state["messages"], state["last_seq"]) == (6, 6)
    msg = leader_crash["caught_up_msg"]["message"]
    assert (msg["seq"], msg["data"]) == (6, "ZGF0YQ==")  # b"data"


# ---------------------------------------------------------------------- shutdown


async def shutdown_scenario(cluster: Cluster, cjs: ClusterClients, seen: Observed) -> None:
    env = await prepare_leader(cluster, cjs, seen)
    js, s, p, one, push, pulls, x = (env[k] for k in ("js", "s", "p", "one", "push", "pulls",
                                                      "x"))
    victim = RawClient.connect(cluster.node(x).host, cluster.node(x).port)
    victim.handshake()
    await cluster.kill(x)
    v = seen.values
    try:
        v["victim_rest"] = victim.read_until_closed(timeout=5)
    finally:
        victim.close()
    outcomes: list[Any] = []

    def published() -> Any:
        out = publish_outcome(js, f"{p}.after", msg_id("after"), timeout=quick(js))
        outcomes.append(out)
        return out if isinstance(out, dict) else None
    v["after_ack"] = await cluster.wait_until(published, timeout=30)
    v["outcomes"] = outcomes

    one_on_x = seen.values["one_consumer_leader"] == x

    def released() -> bool:
        pulls.drain()
        got = b"".join(pulls.frames)
        return (b".wait.pull " in got and b".wait.pull3 " in got and
                (b".wait.one " in got or not one_on_x)
                and got.count(b"Leadership Change") >= 2)
    await cluster.wait_until(released, timeout=30, what="the waiting pulls released")
    await cluster.sleep(0.3)
    pulls.drain()
    v["pull_frames"] = list(pulls.frames)

    def offline(suffix: str) -> Any:
        def check() -> Any:
            out = js.api(suffix, timeout=quick(js))
            return out if "error" in out else None
        return check
    v["one_info"] = await cluster.wait_until(offline(f"STREAM.INFO.{one}"), timeout=30)
    v["one_consumer_info"] = (
        await cluster.wait_until(offline(f"CONSUMER.INFO.{s}.one"), timeout=30)
        if seen.values["one_consumer_leader"] == x else None)
    v["one_publish"] = publish_outcome(js, one.lower(), msg_id("one-during"))
    v["list"] = js.api("STREAM.LIST", {"subject": one.lower()}, timeout=10.0)
    push.close()
    pulls.close()


@pytest.fixture
async def leader_shutdown(target: str, cluster: Cluster, cjs: ClusterClients) -> Observed:
    return await run_once("shutdown", target, cluster, cjs, shutdown_scenario)


async def test_cluster_shutdown_moves_leaders_at_once(target: str,
                                                      leader_shutdown: Observed) -> None:
    """A node that shuts down hands its leaderships over: publishes are accepted (at most a 503
    while the new leader takes over) with the next sequence; its clients are disconnected
    without an error."""
    outcomes = leader_shutdown["outcomes"]
    assert all(o == "503" for o in outcomes[:-1]), outcomes
    assert leader_shutdown["after_ack"]["seq"] == 6
    assert leader_shutdown["victim_rest"] == b""


async def test_cluster_shutdown_releases_waiting_pulls(target: str,
                                                       leader_shutdown: Observed) -> None:
    """Pull requests waiting on consumers the node led: consumers configured with at most one
    replica (``num_replicas`` 0 or 1) get ``409 Server Shutdown`` with the request's pending
    counts; replicated ones get ``409 Leadership Change`` from their new leader (``pull`` has
    replicas by inheritance so gets both)."""
    msgs = [parse_msg(f) for f in leader_shutdown["pull_frames"]]
    by_reply: dict[str, list[bytes]] = {}
    for m in msgs:
        if m.status:
            assert m.frame == status_frame(m.subject, "1", m.header)
            by_reply.setdefault(m.subject.rsplit(".", 1)[1], []).append(m.header)
        else:  # data only to the R1 consumer's request, if its node is alive
            assert m.reply and ".one." in m.reply, m.frame
    assert sorted(by_reply["pull"]) == sorted([server_shutdown(10), LEADERSHIP_CHANGE])
    assert by_reply["pull3"] == [LEADERSHIP_CHANGE]
    if leader_shutdown["one_consumer_leader"] == leader_shutdown.names["x"]:
        assert by_reply["one"] == [server_shutdown(10)]
    else:
        assert "one" not in by_reply


async def test_cluster_shutdown_r1_assets_offline(target: str,
                                                  leader_shutdown: Observed) -> None:
    """The R1 stream and R1 consumer of a node that shut down answer 500 "offline" errors;
    publishes to the stream get 503; STREAM.LIST answers at once, listing the stream as
    ``missing`` and with an entry built from its assignment."""
    assert leader_shutdown["one_info"] == {
        "type": TYPE_PREFIX + "stream_info_response",
        "error": api_error(500, 10118, "stream is offline"), "total": 0, "offset": 0,
        "limit": 0}
    ci = leader_shutdown["one_consumer_info"]
    if ci is not None:
        assert ci == {"type": TYPE_PREFIX + "consumer_info_response",
                      "error": api_error(500, 10119, "consumer is offline")}
    assert leader_shutdown["one_publish"] == "503"
    # Listed from its assignment: no state, no leader, its one peer offline.
    listed = leader_shutdown["list"]
    assert (listed["total"], listed["missing"]) == (1, [listed["streams"][0]["config"]["name"]])
    assert list(listed)[-2:] == ["streams", "missing"]
    entry = listed["streams"][0]
    assert entry["state"]["messages"] == 0 and entry["state"]["last_seq"] == 0
    ci = entry["cluster"]
    assert list(ci) == ["name", "raft_group", "replicas"]
    assert re.match(r"^S-R1F-[A-Za-z0-9]{8}$", ci["raft_group"])
    assert ci["replicas"] == [{"name": leader_shutdown.names["x"], "current": False,
                               "offline": True, "active": 0,
                               "peer": peer_id(leader_shutdown.names["x"])}]


# ---------------------------------------------------------------------- majority loss


async def majority_scenario(cluster: Cluster, cjs: ClusterClients, seen: Observed) -> None:
    survivor = cluster.meta_leader() or cluster.names[0]
    others = [n for n in cluster.names if n != survivor]
    seen.names["survivor"] = survivor
    js = cjs(survivor)
    s = unique_name()
    p = s.lower()
    js.create(s, subjects=[f"{p}.>"], num_replicas=3)
    await lead_on(cluster, js, f"STREAM.INFO.{s}", f"STREAM.LEADER.STEPDOWN.{s}", survivor)
    for i in range(4):
        await stored(cluster, js, f"{p}.m", b"m%d" % i, msg_id(f"id{i}"))
    await cluster.wait_until(lambda: all_current(js, f"STREAM.INFO.{s}"))
    for name in others:
        await cluster.crash(name)
    v = seen.values
    v["first_publish"] = publish_outcome(js, f"{p}.m", msg_id("lost"), timeout=quick(js))
    v["info_during"] = js.api(f"STREAM.INFO.{s}", timeout=2.0)
    v["account_at_once"] = poll(js, send(js, "$JS.API.INFO"), wait=0.5)

    def unavailable(suffix: str, body: Any = None) -> Any:
        def check() -> Any:  # a new request each time: one sent earlier gets no reply at all
            out = js.api(suffix, body, timeout=quick(js))
            return out if out.get("error", {}).get("err_code") == 10008 else None
        return check
    v["account"] = await cluster.wait_until(unavailable("INFO"), timeout=30,
                                            what="account info 10008")
    v["create"] = await cluster.wait_until(
        unavailable(f"STREAM.CREATE.{s}X", {"name": f"{s}X", "subjects": [f"{p}x"]}),
        timeout=30, what="stream create 10008")

    def stepped_down() -> Any:
        out = publish_outcome(js, f"{p}.m", msg_id("lost"), timeout=quick(js))
        return out if out == "503" else None
    v["later_publish"] = await cluster.wait_until(stepped_down, timeout=40,
                                                  what="publish gets 503")
    v["info_leaderless"] = js.api(f"STREAM.INFO.{s}", timeout=2.0)
    for name in others:
        await cluster.restart(name, settle=False)
    await cluster.settle(timeout=60)

    def writable() -> Any:
        out = publish_outcome(js, f"{p}.m", msg_id("back"), timeout=quick(js))
        return out if isinstance(out, dict) else None
    v["back"] = await cluster.wait_until(writable, timeout=30)
    v["state"] = js.state(s)


@pytest.fixture
async def majority_loss(target: str, cluster: Cluster, cjs: ClusterClients) -> Observed:
    return await run_once("majority", target, cluster, cjs, majority_scenario)


async def test_cluster_majority_loss_stops_writes(target: str, majority_loss: Observed) -> None:
    """With 2 of 3 nodes down the leader cannot commit: a publish gets no reply; once the
    leader has noticed it lost quorum it steps down and publishes get 503."""
    assert majority_loss["first_publish"] == "timeout"
    assert majority_loss["later_publish"] == "503"
    during = majority_loss["info_during"]["cluster"]
    assert during["leader"] == majority_loss.names["survivor"]
    after = majority_loss["info_leaderless"]["cluster"]
    assert "leader" not in after
    names = [r["name"] for r in after["replicas"]]
    assert names == sorted(names) and len(names) == 3  # every peer, none current
    assert all(r["current"] is False for r in after["replicas"])


async def test_cluster_majority_loss_api_unavailable(target: str,
                                                     majority_loss: Observed) -> None:
    """The surviving meta leader answers until it notices it lost its quorum (10 s); then
    requests that need the meta leader get ``503 10008 JetStream system temporarily
    unavailable``."""
    # The meta leader (the surviving node) answers until it notices it lost its quorum.
    first = majority_loss["account_at_once"]
    assert first is not None and "error" not in first.json()
    assert majority_loss["account"]["error"] == api_error(
        503, 10008, "JetStream system temporarily unavailable")
    assert majority_loss["create"] == {
        "type": TYPE_PREFIX + "stream_create_response",
        "error": api_error(503, 10008, "JetStream system temporarily unavailable")}


async def test_cluster_majority_loss_recovers(target: str, majority_loss: Observed) -> None:
    """When the nodes return, writes resume after the acknowledged messages; nothing that got
    no acknowledgement was stored twice."""
    back = majority_loss["back"]
    state = majority_loss["state"]
    assert back["seq"] in (5, 6)  # the unacknowledged "lost" message may have been committed
    assert state["last_seq"] == back["seq"] and state["messages"] == back["seq"]


# ---------------------------------------------------------------------- meta leader


async def meta_scenario(cluster: Cluster, cjs: ClusterClients, seen: Observed) -> None:
    meta = cluster.meta_leader()
    assert meta is not None
    other = next(n for n in cluster.names if n != meta)
    seen.names.update(meta=meta, other=other)
    js = cjs(other)
    s = unique_name()
    js.create(s, subjects=[s.lower()], num_replicas=3)
    await lead_on(cluster, js, f"STREAM.INFO.{s}", f"STREAM.LEADER.STEPDOWN.{s}", other)
    await cluster.crash(meta)
    v = seen.values
    v["create_at_once"] = poll(js, send(js, f"$JS.API.STREAM.CREATE.{s}N", {
        "name": f"{s}N", "subjects": [f"{s.lower()}n"]}), wait=0.5)
    v["info"] = js.api(f"STREAM.INFO.{s}", timeout=2.0)
    v["publish"] = publish_outcome(js, s.lower(), msg_id("during"), timeout=2.0)

    def created() -> Any:
        name = unique_name()
        out = js.api(f"STREAM.CREATE.{name}", {"name": name, "subjects": [name.lower()]},
                     timeout=quick(js))
        if "error" in out:
            return None
        js.created.append(name)
        return out
    v["created"] = await cluster.wait_until(created, timeout=30, what="a new meta leader")
    v["new_meta"] = cluster.meta_leader()


@pytest.fixture
async def meta_crash(target: str, cluster: Cluster, cjs: ClusterClients) -> Observed:
    return await run_once("meta", target, cluster, cjs, meta_scenario)


async def test_cluster_meta_leader_crash(target: str, meta_crash: Observed) -> None:
    """Without a meta leader, creating a stream gets no reply; a stream led by a live node
    still answers info and takes publishes; once another meta leader is elected creates work."""
    assert meta_crash["create_at_once"] is None
    assert meta_crash["info"]["cluster"]["leader"] == meta_crash.names["other"]
    assert meta_crash["publish"]["seq"] == 1
    assert "error" not in meta_crash["created"]
    assert meta_crash["new_meta"] not in (None, meta_crash.names["meta"])
