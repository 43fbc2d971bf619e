"""The control plane: test control over the NATS connection any client already has.

Request/reply on ``$MINIJS.>``, JSON in, JSON out, so tests in any language get the powers
of the in-process API:

===============================================  ============================================
``$MINIJS.CLOCK.NOW``                            ``{"virtual", "time", "unix_nano", "elapsed"}``
                                                 (``elapsed``: seconds since a virtual clock's
                                                 start, or since a wall-clock server started)
``$MINIJS.CLOCK.ADVANCE`` ``{"seconds": 30}``    replies after the due timers have fired
``$MINIJS.RESET`` ``{"disconnect": false}``      empties the server (streams, KV, faults, clock)
``$MINIJS.STATE.STREAMS``                        ``{"streams": [...]}``
``$MINIJS.STATE.MESSAGES.<stream>``              ``{"messages": [...]}`` (``subject``,
                                                 ``start_seq``, ``limit``)
``$MINIJS.STATE.CONSUMER.<stream>.<consumer>``   one consumer's positions, pending acks, pulls
``$MINIJS.STATE.CONNECTIONS``                    ``{"connections": [...]}``
``$MINIJS.FAULT.ADD`` ``{rule}``                 ``{"rule": {...}}``
``$MINIJS.FAULT.LIST``                           ``{"rules": [...], "log": [...]}``
``$MINIJS.FAULT.CLEAR`` ``{"id": n}`` or ``{}``  ``{"cleared": n}``
``$MINIJS.FAULT.DISCONNECT`` ``{"client": x}``   closes one client (id or name) or all
``$MINIJS.FAULT.SLOW_CONSUMER`` ``{"client": x}`` cuts a client as a slow consumer
``$MINIJS.RESTART`` ``{"crash": false}``         replies, then restarts on the same port
===============================================  ============================================

Invariants:

* the plane exists only when enabled (``control=True``, ``--control``); otherwise nothing
  subscribes to ``$MINIJS.>`` and a request gets the 503 no-responders status, exactly as on
  nats-server; it never changes how other subjects behave, and fault rules never catch it;
* every error is ``{"error": {"code": N, "description": "..."}}`` and changes nothing; bad JSON,
  a body that is not an object, unknown fields and wrong types are errors (400); an unknown
  request, or a stream, consumer, fault rule id or client that is not there, is 404 (a new
  fault rule naming a missing stream or consumer is a bad rule: 400); moving a wall clock is
  409;
* with authentication configured, only connections of the ``control_user`` may use it (403).
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import math
from typing import Any, Callable

from minijs.control.faults import FaultError, FaultRule
from minijs.protocol.gomarshal import dumps
from minijs.protocol.gotime import go_time

PREFIX = b"$MINIJS."


class ControlError(Exception):
    def __init__(self, code: int, description: str) -> None:
        super().__init__(description)
        self.code = code
        self.description = description


def _bad(description: str) -> ControlError:
    return ControlError(400, description)


def _body(payload: bytes, fields: dict[str, tuple[type, ...]]) -> dict[str, Any]:
    """Decode an optional JSON object body with only ``fields`` (name -> accepted types)."""
    if not payload.strip():
        return {}
    try:
        doc = json.loads(payload)
    except (ValueError, RecursionError) as exc:
        raise _bad(f"invalid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise _bad("the request body must be a JSON object")
    for key, value in doc.items():
        if key not in fields:
            known = ", ".join(sorted(fields)) or "none"
            raise _bad(f"unknown field {key!r} (known: {known})")
        types = fields[key]
        if value is not None and (not isinstance(value, types)
                                  or (isinstance(value, bool) and bool not in types)):
            names = "/".join(t.__name__ for t in types)
            raise _bad(f"field {key!r} must be {names}")
    return doc


def _jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if not f.name.startswith("_")}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    return obj


_RULE_FIELDS: dict[str, tuple[type, ...]] = {
    "target": (str,), "action": (str,), "stream": (str,), "consumer": (str,),
    "subject": (str,), "count": (int,), "fraction": (int, float), "seed": (int,),
    "delay": (int, float), "status": (int,), "description": (str,), "error": (int,),
}


class ControlPlane:
    """Serves ``$MINIJS.>`` for one server (which offers the test-control methods). On a node
    of an in-process cluster, ``target`` is the cluster: the node serves its own clients, and
    what they ask acts on the whole cluster (``$MINIJS.CLUSTER.*`` too)."""

    def __init__(self, server: Any, target: Any = None) -> None:
        #: The server whose clients this plane answers.
        self.node = server
        #: What the requests act on: the server itself, or its cluster.
        self.server = target if target is not None else server
        self._subs: list[tuple[Any, Any]] = []
        #: The requester of the request being handled (its account picks the streams).
        self._origin: Any = None
        self._tasks: set[asyncio.Task] = set()
        self._routes: dict[str, Callable[..., Any]] = {
            "CLOCK.NOW": self._clock_now,
            "CLOCK.ADVANCE": self._clock_advance,
            "RESET": self._reset,
            "STATE.STREAMS": self._streams,
            "STATE.CONNECTIONS": self._connections,
            "FAULT.ADD": self._fault_add,
            "FAULT.LIST": self._fault_list,
            "FAULT.CLEAR": self._fault_clear,
            "FAULT.DISCONNECT": self._disconnect,
            "FAULT.SLOW_CONSUMER": self._slow_consumer,
            "RESTART": self._restart,
        }
        if hasattr(self.server, "nodes"):
            self._routes.update({
                "CLUSTER.INFO": self._cluster_info,
                "CLUSTER.KILL": self._cluster_node_op("kill"),
                "CLUSTER.CRASH": self._cluster_node_op("crash"),
                "CLUSTER.RESTART": self._cluster_node_op("restart"),
                "CLUSTER.PARTITION": self._cluster_partition,
                "CLUSTER.HEAL": self._cluster_heal,
            })

    def start(self) -> None:
        """Serve ``$MINIJS.>`` in every account (the global one and each configured one), so
        a test's client reaches it whichever account it logs in to."""
        from minijs.core.sublist import Subscription

        self._subs = []
        for sublist in self.node.account_sublists.values():
            sub = Subscription.internal(PREFIX + b">", self._on_request)
            sub.local_only = True  # each node of a cluster answers its own clients
            sublist.insert(sub)
            self._subs.append((sublist, sub))

    def stop(self) -> None:
        for sublist, sub in self._subs:
            sub.closed = True
            sublist.remove(sub)
        self._subs = []

    # ------------------------------------------------------------------ dispatch

    def _on_request(self, sub: Any, subject: bytes, reply: bytes | None, hdr: bytes | None,
                    payload: bytes, origin: Any) -> None:
        name = subject[len(PREFIX):].decode("utf-8", "replace")
        try:
            if not self._authorized(origin):
                raise ControlError(403, "the control plane answers only the control user "
                                        "(set control_user to a configured user)")
            handler, args = self._route(name)
            self._origin = origin
            try:
                result = handler(payload, *args)
            finally:
                self._origin = None
            if asyncio.iscoroutine(result):
                task = asyncio.get_running_loop().create_task(self._finish(result, reply,
                                                                            origin))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                return
        except ControlError as exc:
            result = {"error": {"code": exc.code, "description": exc.description}}
        except ValueError as exc:  # FaultError too: a bad rule
            result = {"error": {"code": 400, "description": str(exc)}}
        except LookupError as exc:
            result = {"error": {"code": 404, "description": str(exc.args[0])}}
        except Exception as exc:  # keep serving; tell the requester
            self.server.log.error(f"control request $MINIJS.{name} failed: {exc!r}")
            result = {"error": {"code": 500, "description": str(exc)}}
        self._reply(reply, result, origin)

    def _route(self, name: str) -> tuple[Callable[..., Any], tuple]:
        handler = self._routes.get(name)
        if handler is not None:
            return handler, ()
        parts = name.split(".")
        if name.startswith("STATE.CONSUMER.") and len(parts) == 4:
            return self._consumer, (parts[2], parts[3])
        if name.startswith("STATE.MESSAGES.") and len(parts) == 3:
            return self._messages, (parts[2],)
        raise ControlError(404, f"unknown control request $MINIJS.{name}")

    async def _finish(self, coro: Any, reply: bytes | None, origin: Any) -> None:
        try:
            result = await coro
        except ControlError as exc:
            result = {"error": {"code": exc.code, "description": exc.description}}
        except Exception as exc:  # keep serving; tell the requester
            self.server.log.error(f"control request failed: {exc!r}")
            result = {"error": {"code": 500, "description": str(exc)}}
        self._reply(reply, result, origin)
        self.server.settle()

    def _reply(self, reply: bytes | None, result: Any, origin: Any = None) -> None:
        if reply:
            # Past the fault rules: a rule on ``>`` or ``_INBOX.>`` must not eat the answer.
            faults = self.server.faults
            injector = faults.of_server(self.node) if hasattr(faults, "of_server") else faults
            injector.publish_unfaulted(reply, None, None, dumps(_jsonable(result)), origin)

    def _authorized(self, origin: Any) -> bool:
        config = self.server.config
        if not config.auth_required or origin is None or not hasattr(origin, "cid"):
            return True
        user = getattr(origin, "user", None) or (config.user if origin.connected else None)
        return bool(config.control_user) and user == config.control_user

    # ------------------------------------------------------------------ clock

    def _now(self) -> dict[str, Any]:
        clock = self.server.clock
        ns = clock.time_ns()
        virtual = bool(getattr(clock, "virtual", False))
        # Virtual clocks: seconds since the clock's start (0 again after a reset); the wall
        # clock: seconds since the server started.
        elapsed = clock.monotonic() if virtual else clock.time() - self.server.start_time
        return {"virtual": virtual, "time": go_time(ns), "unix_nano": ns, "elapsed": elapsed}

    def _clock_now(self, payload: bytes) -> dict[str, Any]:
        _body(payload, {})
        return self._now()

    def _clock_advance(self, payload: bytes) -> Any:
        doc = _body(payload, {"seconds": (int, float)})
        seconds = doc.get("seconds")
        if seconds is None:
            raise _bad("give the time to move as {\"seconds\": N}")
        if not math.isfinite(seconds):
            raise _bad("seconds must be a finite number")
        if seconds < 0:
            raise _bad("a clock cannot go back: seconds must be >= 0")
        clock = self.server.clock
        if not getattr(clock, "virtual", False):
            raise ControlError(409, "this server runs on the wall clock; start it with "
                                    "--clock virtual (or auto) to move time")

        async def advance() -> dict[str, Any]:
            fired = await clock.advance_async(float(seconds))
            out = self._now()
            out["fired"] = fired
            return out

        return advance()

    # ------------------------------------------------------------------ reset and restart

    def _reset(self, payload: bytes) -> dict[str, Any]:
        doc = _body(payload, {"disconnect": (bool,)})
        server = self.server
        server.reset()
        if doc.get("disconnect"):
            # The requester is among those closed: the reply is written first.
            asyncio.get_running_loop().call_soon(self._close_all)
        return {"reset": True}

    def _close_all(self) -> None:
        for conn in list(self.server.connections.values()):
            conn.flush()
            conn.close()

    def _restart(self, payload: bytes) -> Any:
        doc = _body(payload, {"crash": (bool,)})
        server = self.server
        crash = bool(doc.get("crash"))
        loop = asyncio.get_running_loop()

        def later() -> None:
            task = loop.create_task(server.crash() if crash else server.restart())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        loop.call_later(0.01, later)  # after the reply is written
        return {"restarting": True, "crash": crash}

    # ------------------------------------------------------------------ state

    def _streams(self, payload: bytes) -> dict[str, Any]:
        _body(payload, {})
        return {"streams": self.server.streams()}

    def _messages(self, payload: bytes, stream: str) -> dict[str, Any]:
        doc = _body(payload, {"subject": (str,), "start_seq": (int,), "limit": (int,)})
        return {"messages": self.server.messages(
            stream, subject=doc.get("subject"), start_seq=doc.get("start_seq") or 1,
            limit=doc.get("limit") or 1000, account=self._account())}

    def _consumer(self, payload: bytes, stream: str, consumer: str) -> Any:
        _body(payload, {})
        return self.server.consumer(stream, consumer, account=self._account())

    def _account(self) -> str | None:
        """The requester's account when it has JetStream (its streams are meant), else None
        (the one stream of that name in any account)."""
        account = getattr(self._origin, "account", None)
        return account if account in self.server.engines() else None

    def _connections(self, payload: bytes) -> dict[str, Any]:
        _body(payload, {})
        return {"connections": self.server.connections_info()}

    # ------------------------------------------------------------------ faults

    def _fault_add(self, payload: bytes) -> dict[str, Any]:
        doc = _body(payload, _RULE_FIELDS)
        if "target" not in doc or "action" not in doc:
            raise _bad("a fault rule needs target ('deliveries' or 'requests') and action")
        rule: FaultRule = self.server.faults.add(**{k: v for k, v in doc.items()
                                                   if v is not None or k == "count"})
        return {"rule": rule.to_dict()}

    def _fault_list(self, payload: bytes) -> dict[str, Any]:
        _body(payload, {})
        faults = self.server.faults
        return {"rules": [r.to_dict() for r in faults.rules], "log": list(faults.log)}

    def _fault_clear(self, payload: bytes) -> dict[str, Any]:
        doc = _body(payload, {"id": (int,)})
        faults = self.server.faults
        if doc.get("id") is not None:
            if not faults.remove(doc["id"]):
                raise ControlError(404, f"no fault rule {doc['id']}")
            return {"cleared": 1}
        n = len(faults.rules)
        faults.clear()
        return {"cleared": n}

    def _disconnect(self, payload: bytes) -> Any:
        doc = _body(payload, {"client": (int, str)})
        faults = self.server.faults
        client = doc.get("client")
        self._client_exists(client)  # unknown client: an error now, before anything changes

        async def later() -> dict[str, Any]:
            await asyncio.sleep(0)
            return {"disconnected": faults.disconnect(client)}

        if client is None:
            # Everyone goes, the requester too: answer first, then close.
            n = len(faults._clients(None))
            asyncio.get_running_loop().call_soon(faults.disconnect, None)
            return {"disconnected": n}
        return later()

    def _slow_consumer(self, payload: bytes) -> dict[str, Any]:
        doc = _body(payload, {"client": (int, str)})
        if doc.get("client") is None:
            raise _bad("give the client to cut: {\"client\": <id or name>}")
        self._client_exists(doc["client"])
        return {"slow_consumers": self.server.faults.slow_consumer(doc["client"])}

    def _client_exists(self, client: int | str | None) -> None:
        try:
            self.server.faults._clients(client)
        except FaultError as exc:
            raise ControlError(404, str(exc)) from None

    # ------------------------------------------------------------------ cluster

    def _cluster_info(self, payload: bytes) -> dict[str, Any]:
        _body(payload, {})
        return self.server.cluster()

    def _cluster_node_op(self, op: str) -> Callable[[bytes], Any]:
        def handler(payload: bytes) -> Any:
            doc = _body(payload, {"node": (str,)})
            name = doc.get("node")
            if not name:
                raise _bad('name the node: {"node": "n2"}')
            try:
                node = self.server.node(name)
            except ValueError as exc:
                raise ControlError(404, str(exc)) from None
            if op in ("kill", "crash") and not node.up:
                raise ControlError(409, f"node {name!r} is down already (restart it first)")
            if op == "restart" and node.up and node.server is self.node:
                raise ControlError(409, "restart a running node from a client of another node")
            if node.server is self.node and op in ("kill", "crash"):
                # The requester is on the node going down: answer first.
                loop = asyncio.get_running_loop()

                def later() -> None:
                    task = loop.create_task(getattr(node, op)())
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)

                loop.call_later(0.01, later)
                return {"node": name, op: True}

            async def run() -> dict[str, Any]:
                await getattr(node, op)()
                return {"node": name, op: True}

            return run()
        return handler

    def _cluster_partition(self, payload: bytes) -> dict[str, Any]:
        doc = _body(payload, {"groups": (list,)})
        groups = doc.get("groups")
        if not groups or not all(isinstance(g, list) and all(isinstance(n, str) for n in g)
                                 for g in groups):
            raise _bad('give the groups as {"groups": [["n1"], ["n2", "n3"]]}')
        try:
            self.server.partition(*groups)
        except ValueError as exc:
            text = str(exc)
            raise ControlError(404 if text.startswith("unknown node") else 400, text) from None
        return {"partitioned": groups}

    def _cluster_heal(self, payload: bytes) -> dict[str, Any]:
        _body(payload, {})
        self.server.heal()
        return {"healed": True}
