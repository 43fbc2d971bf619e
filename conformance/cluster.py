"""Cluster targets: a cluster of each target server, driven the same way by the cluster cases.

Two kinds of cluster, one interface (:class:`Cluster`):

* :class:`ProcessCluster`: one server process per node, joined by routes
  (``--cluster nats://127.0.0.1:P --cluster_name C --routes ... -n NAME``). This is how the
  suite runs a nats-server cluster (with ``-js`` for JetStream replicas) and how it runs core
  clustering over routes on both targets. A node is killed with SIGTERM, crashed with SIGKILL
  and restarted as the same command on the same ports and store directory. Time is real:
  :meth:`Cluster.wait_until` polls.
* :class:`InProcessCluster`: minijs's in-process cluster, one process
  (``minijs -js --cluster_size N ... --control --clock virtual``) whose nodes are killed,
  crashed and restarted over the control plane (``$MINIJS.CLUSTER.*``). Time is the server's
  virtual clock: :meth:`Cluster.wait_until` advances it (``$MINIJS.CLOCK.ADVANCE``) in steps
  between polls, so a case that waits for an election on nats-server is instant here.

Invariants a case can rely on:

* ``nodes`` are in node order; every node's ``name``, ``server_id`` and cluster ``name`` come
  from the INFO the node sends a client, never from what the harness asked for;
* ``node.up`` is what the harness last did to the node (kill/crash set it False, restart True);
* after :meth:`Cluster.settle` every node is up, sees all others (its INFO's ``connect_urls``
  lists every node), and with JetStream the cluster has a meta leader and every node reports
  itself healthy (nats-server ``/healthz``; minijs ``$MINIJS.CLUSTER.INFO``);
* control requests to minijs go to a node the request does not stop.

The suite never imports minijs: the in-process cluster is driven through its command line and
control plane as written in the cluster contract.
"""
from __future__ import annotations

import asyncio
import inspect
import json
import re
import signal
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conformance.jshelpers import JsClient
from conformance.rawclient import ConnectionClosed, RawClient
from conformance.servers import (
    URL_TARGET,
    Endpoint,
    ServerProcess,
    command_for,
    free_port,
    start_process,
)

#: The cluster name every cluster of the suite gets (both targets, so replies compare).
CLUSTER_NAME = "conf"
#: Why a cluster case cannot run against ``--url``.
URL_SKIP_REASON = ("needs a cluster the suite starts itself (3 server processes, or minijs "
                   "--cluster_size 3); a --url server is one server as it is")
#: Real seconds a node gets to start (JetStream recovery included).
NODE_START_TIMEOUT = 20.0
#: Virtual seconds the clock moves between two polls of ``wait_until`` on minijs.
CLOCK_STEP = 0.25
#: Real seconds a virtual-clock ``wait_until`` may take at most, whatever its timeout.
VIRTUAL_REAL_CAP = 60.0

_MONITOR_RE = re.compile(rb"Starting http monitor on (\S+):(\d+)")
_LISTEN_RE = re.compile(rb"Listening for client connections on (\S+):(\d+)")


def node_tags(index: int, name: str) -> list[str]:
    """The ``server_tags`` the suite gives node ``index`` (1-based) when a cluster has tags."""
    return [f"az:{index}", f"node:{name}"]


@dataclass
class Node(Endpoint):
    """One node of a cluster as a client sees it (an :class:`Endpoint` for the helpers)."""

    name: str = ""
    server_id: str = ""
    monitor_port: int | None = None
    up: bool = True

    @property
    def client_url(self) -> str:
        return self.url


#: What a node logs once it listens for routes (nats-server and minijs alike).
ROUTE_LISTENING = "Listening for route connections on"


def read_info(host: str, port: int, timeout: float = 5.0) -> dict[str, Any]:
    """The INFO a node sends a new client."""
    client = RawClient.connect(host, port, timeout=timeout)
    try:
        return client.info
    finally:
        client.close()


def http_get(port: int, path: str, timeout: float = 5.0) -> tuple[int, Any]:
    """GET a monitoring endpoint: (status, decoded JSON or text)."""
    url = f"http://127.0.0.1:{port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            status, body = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body.decode(errors="replace")


Check = Callable[[], Any]


class Cluster:
    """What every cluster target gives the cases. Subclasses implement the node operations."""

    wait_routes: bool = True
    #: Real seconds a check waits for a reply that, if the server answers at all, comes at
    #: once (longer on real clusters under load; short on the virtual clock, where a reply
    #: that is not there yet needs the clock to move anyway).
    reply_timeout: float = 1.0

    target: str
    name: str
    nodes: list[Node]
    jetstream: bool
    virtual_clock: bool = False

    # ------------------------------------------------------------------ nodes

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"no node {name!r} in {[n.name for n in self.nodes]}")

    @property
    def names(self) -> list[str]:
        return [n.name for n in self.nodes]

    def up_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.up]

    def others(self, *names: str) -> list[Node]:
        """The nodes that are up and not named."""
        return [n for n in self.nodes if n.up and n.name not in names]

    async def kill(self, name: str) -> None:
        """Stop node ``name`` as a clean shutdown does (its clients are disconnected)."""
        raise NotImplementedError

    async def crash(self, name: str) -> None:
        """Stop node ``name`` as ``kill -9`` does."""
        raise NotImplementedError

    async def restart(self, name: str, settle: bool = True) -> None:
        """Start a stopped node again on the same ports and store; with ``settle``, wait until
        the cluster is whole again (:meth:`settle`)."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop every node and remove the stores."""
        raise NotImplementedError

    # ------------------------------------------------------------------ time

    async def advance(self, seconds: float) -> None:
        """Move the server clock (virtual-clock targets only)."""
        raise NotImplementedError

    async def sleep(self, seconds: float) -> None:
        """Let ``seconds`` of server time pass: a real sleep, or a clock advance."""
        if self.virtual_clock:
            await self.advance(seconds)
            await asyncio.sleep(0.01)
        else:
            await asyncio.sleep(seconds)

    async def wait_until(self, check: Check, timeout: float = 30.0, interval: float = 0.05,
                         what: str = "") -> Any:
        """Poll ``check()`` (sync or async) until it returns a truthy value, which is returned.

        On a real-time cluster it polls every ``interval`` seconds for up to ``timeout``
        seconds; on a virtual-clock cluster it moves the clock :data:`CLOCK_STEP` seconds
        between polls, up to ``timeout`` seconds of server time. An exception raised by
        ``check`` counts as "not yet" (an API request timing out during an election); the last
        one is shown if time runs out.
        """
        start = time.monotonic()
        real_cap = start + (VIRTUAL_REAL_CAP if self.virtual_clock else timeout)
        waited = 0.0
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                value = check()
                if inspect.isawaitable(value):
                    value = await value
                error = None
            except Exception as exc:  # not yet: an election, a restarting node
                value, error = None, exc
            if value:
                return value
            if waited >= timeout or time.monotonic() >= real_cap:
                label = what or getattr(check, "__name__", "condition")
                detail = f"last error: {error!r}" if error is not None else f"last: {value!r}"
                clock = "server-clock" if self.virtual_clock else "real"
                raise AssertionError(f"{label} not met within {timeout}s ({clock}); {detail}")
            if self.virtual_clock:
                await self.advance(CLOCK_STEP)
                waited += CLOCK_STEP
                await asyncio.sleep(0.005)
            else:
                await asyncio.sleep(interval)
                waited = time.monotonic() - start

    # ------------------------------------------------------------------ health

    def meta_leader(self) -> str | None:
        """The JetStream meta leader's name, as the cluster reports it (None: no leader)."""
        raise NotImplementedError

    def node_settled(self, node: Node) -> bool:
        """Whether ``node`` is up, sees every other up node, and (JetStream) is current."""
        raise NotImplementedError

    def routes_complete(self, node: Node) -> bool:
        """Whether ``node`` advertises every up node's client URL to a new client."""
        try:
            info = read_info(node.host, node.port, timeout=2.0)
        except OSError:
            return False
        urls = set(info.get("connect_urls") or [])
        return all(f"{n.host}:{n.port}" in urls for n in self.up_nodes())

    async def settle(self, timeout: float = 30.0) -> None:
        """Restart any node that is down, then wait until every node is settled."""
        for n in self.nodes:
            if not n.up:
                await self.restart(n.name, settle=False)

        def settled() -> bool:
            return all(self.node_settled(n) for n in self.nodes)

        await self.wait_until(settled, timeout=timeout, what=f"{self.target} cluster settled")

    def monitor(self, name: str, path: str) -> tuple[int, Any]:
        """GET ``path`` on node ``name``'s monitoring port: (status, JSON or text)."""
        port = self.node(name).monitor_port
        if port is None:
            raise AssertionError(f"node {name} has no monitoring port")
        return http_get(port, path)

    def js(self, name: str, **connect: Any) -> JsClient:
        """A raw JetStream client connected to node ``name`` (``reply_timeout`` set to the
        cluster's, for checks polled by ``wait_until``)."""
        client = JsClient.connect(self.node(name), **connect)
        client.reply_timeout = self.reply_timeout  # type: ignore[attr-defined]
        return client


# ---------------------------------------------------------------------- processes


@dataclass
class _Proc:
    """How to (re)start one node process."""

    name: str
    index: int
    port: int
    cluster_port: int
    monitor_port: int
    cmd: list[str] = field(default_factory=list)
    server: ServerProcess | None = None


class ProcessCluster(Cluster):
    """``size`` server processes of ``target`` joined by routes on loopback.

    Each node gets fixed client, route and monitoring ports (so a restarted node comes back
    where clients and the other nodes look for it) and, with ``jetstream``, its own store
    directory. ``config`` is configuration text every node also loads (accounts, limits);
    ``tags`` gives each node ``server_tags`` (see :func:`node_tags`). ``route_flags=False``
    writes the ``cluster { }`` block into the config file instead of passing the flags.
    ``seed_only`` gives every node but the first only the first one's route (the rest of the
    mesh forms by gossip).
    """

    def __init__(self, target: str, size: int = 3, jetstream: bool = False,
                 config: str = "", tags: bool = False, route_flags: bool = True,
                 cluster_name: str = CLUSTER_NAME, extra_args: list[str] | None = None,
                 cluster_block: str = "", route_auth: str = "",
                 extra_routes: list[str] | None = None, wait_routes: bool = True,
                 name_prefix: str = "n", seed_only: bool = False) -> None:
        self.target = target
        self.jetstream = jetstream
        self.size = size
        self.dir = tempfile.TemporaryDirectory(prefix=f"conformance-cluster-{target}-")
        root = Path(self.dir.name)
        self.procs: list[_Proc] = []
        for i in range(1, size + 1):
            self.procs.append(_Proc(name=f"{name_prefix}{i}", index=i, port=free_port(),
                                    cluster_port=free_port(), monitor_port=free_port()))
        creds = f"{route_auth}@" if route_auth else ""
        route_urls = {p.name: f"nats://{creds}127.0.0.1:{p.cluster_port}" for p in self.procs}
        self.wait_routes = wait_routes
        seed = self.procs[0].name
        for p in self.procs:
            if seed_only:  # every node but the first is given the first one's route only
                mine = [route_urls[seed]] if p.name != seed else []
            else:
                mine = [u for n, u in route_urls.items() if n != p.name]
            mine += list(extra_routes or [])
            routes = ",".join(mine)
            text = config
            if tags:
                text += "server_tags: " + json.dumps(node_tags(p.index, p.name)) + "\n"
            args = ["-a", "127.0.0.1", "-p", str(p.port), "-m", str(p.monitor_port),
                    "-n", p.name]
            if route_flags:
                args += ["--cluster", f"nats://127.0.0.1:{p.cluster_port}",
                         "--cluster_name", cluster_name]
                if routes:
                    args += ["--routes", routes]
            else:
                route_list = ", ".join(json.dumps(u) for u in mine)
                text += (f"cluster {{\n  name: {cluster_name}\n"
                         f"  listen: 127.0.0.1:{p.cluster_port}\n"
                         f"  routes: [{route_list}]\n{cluster_block}}}\n")
            if jetstream:
                args += ["-js", "-sd", str(root / p.name)]
            if text:
                conf = root / f"{p.name}.conf"
                conf.write_text(text)
                args += ["-c", str(conf)]
            p.cmd = command_for(target) + args + list(extra_args or [])
        self.nodes = []
        self.name = cluster_name
        try:
            for p in self.procs:
                p.server = self._start(p)
            for p in self.procs:
                info = self._first_info(p)
                self.nodes.append(Node(target=target, host="127.0.0.1", port=p.port,
                                       name=info["server_name"], server_id=info["server_id"],
                                       monitor_port=p.monitor_port))
            self.name = self._cluster_name_from_info()
        except Exception:
            self.stop()
            raise

    @staticmethod
    def _first_info(p: _Proc) -> dict[str, Any]:
        """The node's INFO."""
        return read_info("127.0.0.1", p.port)

    def _start(self, p: _Proc) -> ServerProcess:
        """Start a node and wait for its route listener too. A node logs ``Server is ready``
        before it listens for routes (nats-server opens the route listener after the client
        one), and exits when its route port was taken meanwhile: that is a RuntimeError
        with the node's log, which says "address already in use" (``start_cluster`` then
        starts again on fresh ports)."""
        server = start_process(self.target, p.cmd, cwd=self.dir.name, timeout=NODE_START_TIMEOUT)
        deadline = time.monotonic() + NODE_START_TIMEOUT
        while ROUTE_LISTENING not in server.log:
            if server.proc is not None and server.proc.poll() is not None:
                settle = time.monotonic() + 2  # its last lines, still being read
                while "address already in use" not in server.log and time.monotonic() < settle:
                    time.sleep(0.05)
                log = server.log
                server.stop()
                raise RuntimeError(f"{self.target} node {p.name} exited after starting; "
                                   f"stderr:\n{log}")
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"{self.target} node {p.name} did not log "
                                   f"{ROUTE_LISTENING!r} within {NODE_START_TIMEOUT:.0f}s; "
                                   f"stderr:\n{server.log}")
            time.sleep(0.01)
        return server

    def _cluster_name_from_info(self) -> str:
        info = read_info(self.nodes[0].host, self.nodes[0].port)
        return str(info.get("cluster", ""))

    def _proc(self, name: str) -> _Proc:
        for p, n in zip(self.procs, self.nodes):
            if n.name == name:
                return p
        raise KeyError(f"no node {name!r} in {self.names}")

    def route_url(self, name: str) -> str:
        """Where node ``name`` listens for routes."""
        return f"nats://127.0.0.1:{self._proc(name).cluster_port}"

    def process(self, name: str) -> ServerProcess:
        server = self._proc(name).server
        assert server is not None, f"node {name} is not running"
        return server

    async def _stop_node(self, name: str, sig: signal.Signals) -> None:
        node, p = self.node(name), self._proc(name)
        server = p.server
        if server is not None and server.proc is not None and server.proc.poll() is None:
            server.proc.send_signal(sig)
            await asyncio.to_thread(server.proc.wait, 30)
        if server is not None:
            server.stop()
        p.server = None
        node.up = False

    async def kill(self, name: str) -> None:
        await self._stop_node(name, signal.SIGTERM)

    async def crash(self, name: str) -> None:
        await self._stop_node(name, signal.SIGKILL)

    async def restart(self, name: str, settle: bool = True) -> None:
        node, p = self.node(name), self._proc(name)
        assert not node.up, f"node {name} is up"
        p.server = await asyncio.to_thread(self._start, p)
        info = read_info(node.host, node.port)
        node.server_id, node.up = info["server_id"], True
        if settle:
            await self.settle()

    def stop(self) -> None:
        for p in self.procs:
            if p.server is not None:
                p.server.stop()
                p.server = None
        for n in self.nodes:
            n.up = False
        self.dir.cleanup()

    async def advance(self, seconds: float) -> None:
        raise AssertionError("a process cluster runs on real time; use sleep()")

    def meta_leader(self) -> str | None:
        for n in self.up_nodes():
            try:
                status, jsz = self.monitor(n.name, "/jsz")
            except OSError:
                continue
            if status == 200 and isinstance(jsz, dict):
                leader = (jsz.get("meta_cluster") or {}).get("leader")
                return leader or None
        return None

    def node_settled(self, node: Node) -> bool:
        if not node.up:
            return False
        if self.wait_routes and not self.routes_complete(node):
            return False
        if not self.jetstream:
            return True
        try:
            status, body = self.monitor(node.name, "/healthz")
        except OSError:
            return False
        return status == 200 and self.meta_leader() is not None


# ---------------------------------------------------------------------- minijs in process


class ControlError(AssertionError):
    """A control plane request was refused."""


class InProcessCluster(Cluster):
    """minijs's in-process cluster: ``minijs -js --cluster_size N`` on the virtual clock,
    driven over the control plane (see the cluster contract)."""

    virtual_clock = True
    reply_timeout = 0.25

    def __init__(self, size: int = 3, jetstream: bool = True, config: str = "",
                 tags: bool = False, cluster_name: str = CLUSTER_NAME,
                 extra_args: list[str] | None = None) -> None:
        # With users configured the control plane answers only its control user: the harness
        # connects anonymously, as the no_auth_user of the suite's configs.
        self.target = "minijs"
        self.jetstream = jetstream
        self.size = size
        self.dir = tempfile.TemporaryDirectory(prefix="conformance-cluster-minijs-")
        root = Path(self.dir.name)
        cmd = command_for("minijs") + [
            "--cluster_size", str(size), "--cluster_name", cluster_name,
            "-a", "127.0.0.1", "-p", "-1", "-m", "-1", "--control", "--clock", "virtual"]
        if jetstream:
            cmd += ["-js", "-sd", str(root / "store")]
        if tags:
            # Contract addition (proposed): per-node server_tags, by node name.
            cmd += ["--cluster_tags", json.dumps(
                {f"n{i}": node_tags(i, f"n{i}") for i in range(1, size + 1)})]
        if config:
            conf = root / "cluster.conf"
            conf.write_text(config)
            cmd += ["-c", str(conf)]
            if "no_auth_user" in config:
                no_auth = re.search(r"no_auth_user:\s*(\S+)", config)
                assert no_auth is not None
                cmd += ["--control_user", no_auth.group(1)]
        cmd += list(extra_args or [])
        self.server = start_process("minijs", cmd, cwd=self.dir.name, tempdir=self.dir,
                                    timeout=NODE_START_TIMEOUT)
        self._control_client: JsClient | None = None
        self._control_node = ""
        self.nodes = []
        self.name = cluster_name
        try:
            listens = [m for line in self.server.stderr_lines
                       if (m := _LISTEN_RE.search(line))]
            monitors = [int(m.group(2)) for line in self.server.stderr_lines
                        if (m := _MONITOR_RE.search(line))]
            if len(listens) != size:
                raise RuntimeError(f"minijs --cluster_size {size} logged {len(listens)} client "
                                   f"listeners; stderr:\n{self.server.log}")
            for i, m in enumerate(listens):
                port = int(m.group(2))
                info = read_info("127.0.0.1", port)
                self.nodes.append(Node(target="minijs", host="127.0.0.1", port=port,
                                       name=info["server_name"], server_id=info["server_id"],
                                       monitor_port=monitors[i] if i < len(monitors) else None))
            self.name = str(read_info("127.0.0.1", self.nodes[0].port).get("cluster", ""))
        except Exception:
            self.stop()
            raise

    # ------------------------------------------------------------------ control plane

    def control(self, subject: str, body: Any = None, avoid: str | None = None) -> Any:
        """One control plane request (``$MINIJS.<subject>``) to a live node other than
        ``avoid``; returns the decoded reply, raises ControlError on an error reply. The
        connection is kept while its node is up; a node that went away is replaced."""
        for attempt in (1, 2):
            client = self._control_client
            usable = (client is not None and not client.raw.closed
                      and self._control_node not in ("", avoid)
                      and self.node(self._control_node).up)
            if not usable:
                if client is not None:
                    client.close()
                candidates = self.others(avoid) if avoid else self.up_nodes()
                if not candidates:
                    raise AssertionError("no live node to send a control request to")
                client = JsClient.connect(candidates[0])
                self._control_client, self._control_node = client, candidates[0].name
            assert client is not None
            try:
                reply = client.request(f"$MINIJS.{subject}", body if body is not None else {},
                                       timeout=10.0)
                break
            except (ConnectionClosed, OSError):
                self._control_node = ""
                if attempt == 2:
                    raise
        out = reply.json() if reply.data else {}
        if reply.status or (isinstance(out, dict) and "error" in out):
            raise ControlError(f"$MINIJS.{subject} {body!r}: {reply.status or out['error']}")
        return out

    def cluster_info(self) -> dict[str, Any]:
        return dict(self.control("CLUSTER.INFO"))

    async def _node_op(self, op: str, name: str, up: bool) -> None:
        node = self.node(name)
        await asyncio.to_thread(self.control, f"CLUSTER.{op}", {"node": name}, name)
        node.up = up

    async def kill(self, name: str) -> None:
        await self._node_op("KILL", name, up=False)

    async def crash(self, name: str) -> None:
        await self._node_op("CRASH", name, up=False)

    async def restart(self, name: str, settle: bool = True) -> None:
        await self._node_op("RESTART", name, up=True)
        node = self.node(name)
        info = await self.wait_until(lambda: read_info(node.host, node.port, timeout=1.0),
                                     timeout=10, what=f"node {name} listening again")
        node.server_id = info["server_id"]
        if settle:
            await self.settle()

    async def partition(self, *groups: list[str]) -> None:
        await asyncio.to_thread(self.control, "CLUSTER.PARTITION", {"groups": list(groups)})

    async def heal(self) -> None:
        await asyncio.to_thread(self.control, "CLUSTER.HEAL", {})

    async def advance(self, seconds: float) -> None:
        await asyncio.to_thread(self.control, "CLOCK.ADVANCE", {"seconds": seconds})

    def stop(self) -> None:
        if self._control_client is not None:
            self._control_client.close()
            self._control_client = None
        self.server.stop()
        for n in self.nodes:
            n.up = False

    # ------------------------------------------------------------------ health

    def meta_leader(self) -> str | None:
        leader = self.cluster_info().get("meta_leader")
        return str(leader) if leader else None

    def node_settled(self, node: Node) -> bool:
        if not node.up or not self.routes_complete(node):
            return False
        if not self.jetstream:
            return True
        info = self.cluster_info()
        states = {n["name"]: n for n in info.get("nodes", [])}
        if not states.get(node.name, {}).get("up") or not info.get("meta_leader"):
            return False
        for group in list(info.get("streams", [])) + list(info.get("consumers", [])):
            if group.get("leader") is None:
                return False
            if any(not r.get("current") for r in group.get("replicas", [])):
                return False
        return True


def start_cluster(target: str, size: int = 3, jetstream: bool = True, config: str = "",
                  tags: bool = False, processes: bool = False, **kwargs: Any) -> Cluster:
    """A cluster of ``target``: for minijs with JetStream the in-process cluster (unless
    ``processes``), otherwise ``size`` processes joined by routes. The ports of a process
    cluster are chosen free before the start; if another program takes one meanwhile (the
    node reports the address in use) the cluster is started again on fresh ports."""
    if target == "minijs" and jetstream and not processes:
        return InProcessCluster(size=size, jetstream=True, config=config, tags=tags, **kwargs)
    for attempt in range(3):
        try:
            return ProcessCluster(target, size=size, jetstream=jetstream, config=config,
                                  tags=tags, **kwargs)
        except RuntimeError as exc:
            if "address already in use" not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------- fixtures

#: The session-wide clusters, by kind: what each is started with.
SESSION_KINDS: dict[str, dict[str, Any]] = {
    # JetStream, 3 nodes, each with server_tags az:<i> and node:<name>.
    "js": {"size": 3, "jetstream": True, "tags": True},
    # Core NATS over routes, 3 processes, no JetStream (both targets run processes).
    "core": {"size": 3, "jetstream": False, "processes": True},
    # JetStream, 3 nodes, with a system account (user sys/sys) for the meta-level API;
    # anonymous clients are the user app in the global account.
    "sys": {"size": 3, "jetstream": True, "tags": True, "config": None},
}

#: Configuration of clusters with a system account: ``sys``/``sys`` is in the system account
#: ``SYS``, everyone else is ``app`` in the global account (``no_auth_user``).
SYSTEM_ACCOUNT_CONFIG = """authorization { users: [{user: app, password: app}] }
accounts { SYS { users: [{user: sys, password: sys}] } }
system_account: SYS
no_auth_user: app
"""
SESSION_KINDS["sys"]["config"] = SYSTEM_ACCOUNT_CONFIG
#: CONNECT options of the system account user.
SYSTEM_USER = {"user": "sys", "pass": "sys"}


class ClusterPool:
    """Session-wide clusters, one per (target, kind), started on first use and stopped at the
    end of the session. A start failure is remembered, so every later case fails at once with
    the same message instead of waiting for the start timeout again."""

    def __init__(self) -> None:
        self.clusters: dict[tuple[str, str], Cluster] = {}
        self.errors: dict[tuple[str, str], str] = {}

    def get(self, target: str, kind: str) -> Cluster:
        key = (target, kind)
        if key in self.errors:
            raise RuntimeError(self.errors[key])
        if key not in self.clusters:
            try:
                self.clusters[key] = start_cluster(target, **SESSION_KINDS[kind])
            except Exception as exc:
                self.errors[key] = f"{target} {kind} cluster did not start: {exc}"
                raise
        return self.clusters[key]

    def stop(self) -> None:
        for cluster in self.clusters.values():
            cluster.stop()
        self.clusters.clear()


class ClusterClients:
    """Raw JetStream clients on a cluster's nodes for one case. Streams any of them created are
    deleted at the end through a node that is up (after the cluster has settled)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.clients: list[JsClient] = []

    def __call__(self, name: str | None = None, **connect: Any) -> JsClient:
        node = self.cluster.node(name) if name else self.cluster.up_nodes()[0]
        client = self.cluster.js(node.name, **connect)
        self.clients.append(client)
        return client

    def cleanup(self) -> None:
        created = list(dict.fromkeys(s for c in self.clients for s in c.created))
        for c in self.clients:
            c.close()
        self.clients.clear()
        if created and self.cluster.up_nodes():
            client = JsClient.connect(self.cluster.up_nodes()[0])
            client.created = created
            client.cleanup()
            client.close()


def _skip_url(target: str) -> None:
    if target == URL_TARGET:
        pytest.skip(URL_SKIP_REASON)


@pytest.fixture(scope="session")
def cluster_pool() -> Iterator[ClusterPool]:
    pool = ClusterPool()
    yield pool
    pool.stop()


@pytest.fixture
async def cluster(target: str, cluster_pool: ClusterPool) -> AsyncIterator[Cluster]:
    """The session's 3-node JetStream cluster of this target (nats-server: three processes;
    minijs: ``--cluster_size 3`` on the virtual clock), settled (every node up, a meta leader).
    Nodes a case stops are restarted, and the cluster settled, after it."""
    _skip_url(target)
    c = cluster_pool.get(target, "js")
    await c.settle()
    yield c
    await c.settle()


@pytest.fixture
async def core_cluster(target: str, cluster_pool: ClusterPool) -> AsyncIterator[Cluster]:
    """The session's 3 server processes of this target joined by routes (no JetStream)."""
    _skip_url(target)
    c = cluster_pool.get(target, "core")
    await c.settle()
    yield c
    await c.settle()


@pytest.fixture
async def sys_cluster(target: str, cluster_pool: ClusterPool) -> AsyncIterator[Cluster]:
    """The session's 3-node JetStream cluster with a system account (:data:`SYSTEM_USER`)."""
    _skip_url(target)
    c = cluster_pool.get(target, "sys")
    await c.settle()
    yield c
    await c.settle()


@pytest.fixture
async def make_cluster(target: str) -> AsyncIterator[Callable[..., Cluster]]:
    """Factory for a cluster of the case's own (``make_cluster(size=5, config=...)``, the
    arguments of :func:`start_cluster`), stopped after the case."""
    _skip_url(target)
    started: list[Cluster] = []

    def _make(**kwargs: Any) -> Cluster:
        c = start_cluster(target, **kwargs)
        started.append(c)
        return c

    yield _make
    for c in started:
        c.stop()


@pytest.fixture
async def cjs(cluster: Cluster) -> AsyncIterator[ClusterClients]:
    """``cjs(node_name=None, **connect)``: a raw JetStream client on a node of the session
    cluster; the streams created through it are deleted after the case."""
    clients = ClusterClients(cluster)
    yield clients
    await cluster.settle()
    clients.cleanup()
