"""State preloaded at start (``minijs -js --preload FILE``, ``@pytest.mark.minijs(preload=...)``,
``MINIJS_PRELOAD`` in the Docker image): streams, KV buckets, consumers and messages created
before ``Server is ready``, as ElasticMQ creates queues from its config.

The file is JSON; every key may be absent::

    {"streams":   [<$JS.API.STREAM.CREATE request bodies>],
     "kv":        [<bucket configs, named as nats-py's KeyValueConfig names them>],
     "consumers": [<$JS.API.CONSUMER.CREATE request bodies, with "stream_name">],
     "messages":  [{"subject": "...", "data": "<text>", "headers": {"K": "V" or ["V", ...]}}]}

Invariants:

* every entry is a JetStream API request, sent in this order (streams, buckets, consumers,
  messages; each list in its order) to the server's own ``$JS.API`` as a client's request
  would be, so it passes the same validation and defaults: nothing is created another way;
* the first refused entry stops the preload with nats-server's error text and codes, the
  file and the entry's position (``preload.json: consumers[1] (ORDERS > worker): consumer
  name already in use (code 400, err_code 10148)``); what was created before it stays, and the
  server does not start;
* a message goes to the stream whose subjects take it, as a client's publish would, and is
  acked before the next entry; a message no stream takes is an error;
* the same file gives the same result against any JetStream server the applier can send
  requests to (the fixtures apply it to the real nats-server through nats-py).

The applier is given the one thing it needs, ``request(subject, headers, body) -> (status,
body)``; :func:`internal_requester` makes it for an in-process server.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterator

#: What an applier sends requests through: (subject, headers or None, body) -> (status, body),
#: status being the reply's status code (``None`` for a plain reply, 503 for no responders).
Requester = Callable[[str, "dict[str, list[str]] | None", bytes],
                     Awaitable["tuple[int | None, bytes]"]]

SECTIONS = ("streams", "kv", "consumers", "messages")
REQUEST_TIMEOUT = 10.0

#: The fields of a ``kv`` entry (nats-py's ``KeyValueConfig``; ``ttl`` and
#: ``limit_marker_ttl`` in seconds) and what each becomes in the bucket's stream.
KV_FIELDS = ("bucket", "description", "max_value_size", "history", "ttl", "max_bytes",
             "storage", "replicas", "placement", "republish", "direct", "limit_marker_ttl",
             "metadata", "compression")
_NS = 1_000_000_000


class PreloadError(ValueError):
    """A preload file that cannot be read or an entry the server refused; the text names the
    file, the entry's position and, for a refusal, nats-server's error."""


@dataclass(frozen=True)
class Entry:
    """One request of a preload: where it came from (``consumers[1]``), what it names
    (``ORDERS > worker``), and the request itself."""

    position: str
    label: str
    subject: str
    body: bytes
    headers: dict[str, list[str]] | None = None
    kind: str = "api"  # "api": a JSON API reply; "publish": a pub ack


def source_name(source: Any) -> str:
    """How errors name the preload: the file's path, or ``preload`` for an inline mapping."""
    return "preload" if isinstance(source, dict) else os.fspath(source)


def load(source: Any) -> dict[str, Any]:
    """The preload document from a path (``str`` or path-like) or an inline mapping, its shape
    checked: an object whose known keys hold lists of objects."""
    name = source_name(source)
    if isinstance(source, dict):
        doc = source
    else:
        try:
            with open(source, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise PreloadError(f"cannot read preload file {name}: {exc.strerror or exc}") \
                from None
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PreloadError(f"{name}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") \
                from None
    if not isinstance(doc, dict):
        raise PreloadError(f"{name}: a preload is a JSON object with the keys "
                           f"{', '.join(SECTIONS)}")
    unknown = sorted(set(doc) - set(SECTIONS))
    if unknown:
        raise PreloadError(f"{name}: unknown key {unknown[0]!r} (known: {', '.join(SECTIONS)})")
    for section in SECTIONS:
        items = doc.get(section, [])
        if not isinstance(items, list):
            raise PreloadError(f"{name}: {section!r} must be a list")
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise PreloadError(f"{name}: {section}[{i}] must be a JSON object")
    return doc


def entries(doc: dict[str, Any], name: str = "preload") -> Iterator[Entry]:
    """The requests of a preload document, in the order they are sent."""
    for i, body in enumerate(doc.get("streams", [])):
        position = f"streams[{i}]"
        stream = _name(body.get("name"), name, position, "a stream needs a \"name\"")
        yield Entry(position, stream, f"$JS.API.STREAM.CREATE.{stream}", _dumps(body))
    for i, bucket in enumerate(doc.get("kv", [])):
        position = f"kv[{i}]"
        config = kv_stream_config(bucket, f"{name}: {position}")
        yield Entry(position, f"bucket {bucket['bucket']}",
                    f"$JS.API.STREAM.CREATE.{config['name']}", _dumps(config))
    for i, body in enumerate(doc.get("consumers", [])):
        position = f"consumers[{i}]"
        stream = _name(body.get("stream_name"), name, position,
                       "a consumer needs \"stream_name\" (the CONSUMER.CREATE request body)")
        config = body.get("config")
        consumer = ""
        if isinstance(config, dict):
            found = config.get("name") or config.get("durable_name")
            consumer = found if isinstance(found, str) else ""
        subject = f"$JS.API.CONSUMER.CREATE.{stream}" + (f".{consumer}" if consumer else "")
        yield Entry(position, f"{stream} > {consumer}" if consumer else stream, subject,
                    _dumps(body))
    for i, msg in enumerate(doc.get("messages", [])):
        position = f"messages[{i}]"
        unknown = sorted(set(msg) - {"subject", "data", "headers"})
        if unknown:
            raise PreloadError(f"{name}: {position}: unknown key {unknown[0]!r} (a message "
                               "has subject, data, headers)")
        subject = _name(msg.get("subject"), name, position, "a message needs a \"subject\"")
        data = msg.get("data", "")
        if not isinstance(data, str):
            raise PreloadError(f"{name}: {position}: \"data\" must be text")
        yield Entry(position, subject, subject, data.encode("utf-8"),
                    _headers(msg.get("headers"), name, position), kind="publish")


def kv_stream_config(bucket: dict[str, Any], where: str) -> dict[str, Any]:
    """The stream a client library creates for a KV bucket (``KV_<bucket>`` on
    ``$KV.<bucket>.>``, one value per key unless ``history``, discard new, rollups, no
    deletes, direct gets), as nats.go and nats.js build it."""
    unknown = sorted(set(bucket) - set(KV_FIELDS))
    if unknown:
        raise PreloadError(f"{where}: unknown bucket field {unknown[0]!r} (known: "
                           f"{', '.join(KV_FIELDS)})")
    name = bucket.get("bucket")
    if not isinstance(name, str) or not name:
        raise PreloadError(f"{where}: a bucket needs a \"bucket\" name")
    # what the client libraries check before they send anything (nats.go's texts)
    if not re.fullmatch(r"[a-zA-Z0-9_-]+", name):
        raise PreloadError(f"{where}: invalid bucket name {name!r} (letters, digits, - and _)")
    ttl = _seconds(bucket.get("ttl"), where, "ttl")
    history = bucket.get("history", 1)
    if isinstance(history, bool) or not isinstance(history, int) or history < 1:
        raise PreloadError(f"{where}: history must be an integer from 1 to 64")
    if history > 64:
        raise PreloadError(f"{where}: history limited to a max of 64")
    config: dict[str, Any] = {
        "name": f"KV_{name}", "subjects": [f"$KV.{name}.>"],
        "max_msgs_per_subject": history, "max_msgs": -1, "max_consumers": -1,
        "discard": "new", "allow_rollup_hdrs": True, "deny_delete": True,
        "allow_direct": bool(bucket.get("direct", True)), "allow_msg_ttl": True,
        "num_replicas": bucket.get("replicas", 1),
        "duplicate_window": min(ttl, 120 * _NS) if ttl else 120 * _NS,
    }
    if ttl:
        config["max_age"] = ttl
    for key, target in (("description", "description"), ("max_bytes", "max_bytes"),
                        ("max_value_size", "max_msg_size"), ("storage", "storage"),
                        ("placement", "placement"), ("republish", "republish"),
                        ("metadata", "metadata")):
        if bucket.get(key) is not None:
            config[target] = bucket[key]
    if bucket.get("compression"):
        config["compression"] = "s2"
    marker = _seconds(bucket.get("limit_marker_ttl"), where, "limit_marker_ttl")
    if marker:
        config["subject_delete_marker_ttl"] = marker
    return config


async def apply(source: Any, request: Requester) -> int:
    """Send every entry of ``source`` (a path or a mapping) through ``request``; return how
    many. Raises :class:`PreloadError` at the first refusal."""
    name = source_name(source)
    doc = load(source)
    count = 0
    for entry in entries(doc, name):
        status, body = await request(entry.subject, entry.headers, entry.body)
        problem = refusal(entry, status, body)
        if problem:
            raise PreloadError(f"{name}: {entry.position} ({entry.label}): {problem}")
        count += 1
    return count


def refusal(entry: Entry, status: int | None, body: bytes) -> str:
    """Why the server refused ``entry`` (its error, with codes), or "" when it took it."""
    if status == 503:
        if entry.kind == "publish":
            return f"no stream takes subject {entry.subject!r} (503 no responders)"
        return "no JetStream API answered (503 no responders): start the server with JetStream"
    if status is not None and status >= 300:
        return f"status {status}"
    try:
        reply = json.loads(body)
    except ValueError:
        return f"unexpected reply {body[:200]!r}"
    error = reply.get("error") if isinstance(reply, dict) else None
    if error:
        return (f"{error.get('description', '')} (code {error.get('code')}, "
                f"err_code {error.get('err_code')})")
    return ""


def internal_requester(server: Any) -> tuple[Requester, Callable[[], None]]:
    """A requester that publishes on the server's own bus (the global account) and waits for
    the reply on a private internal inbox, plus the function that removes that inbox. The
    requests take the path a client's take, past the fault rules' hook."""
    import itertools

    waiting: dict[bytes, asyncio.Future] = {}
    prefix = f"_MINIJS_PRELOAD.{server.server_id}.".encode()
    ids = itertools.count(1)

    def on_reply(sub: Any, subject: bytes, reply: Any, hdr: bytes | None, payload: bytes,
                 origin: Any) -> None:
        future = waiting.pop(subject, None)
        if future is not None and not future.done():
            future.set_result((_status(hdr), bytes(payload)))

    inbox = server.subscribe_internal(prefix + b"*", on_reply)

    async def request(subject: str, headers: dict[str, list[str]] | None,
                      body: bytes) -> tuple[int | None, bytes]:
        reply = prefix + str(next(ids)).encode()
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        waiting[reply] = future
        receivers = server.publish(subject.encode(), reply, _header_block(headers), body)
        server.settle()  # commit what a file stream buffered: its ack goes out now
        if not receivers and not future.done():
            waiting.pop(reply, None)
            return 503, b""
        try:
            return await asyncio.wait_for(future, REQUEST_TIMEOUT)
        except asyncio.TimeoutError:
            waiting.pop(reply, None)
            return 408, b""

    def close() -> None:
        server.unsubscribe_internal(inbox)

    return request, close


def nats_requester(nc: Any) -> Requester:
    """A requester on a nats-py connection (the real nats-server behind the fixtures)."""

    async def request(subject: str, headers: dict[str, list[str]] | None,
                      body: bytes) -> tuple[int | None, bytes]:
        import nats.errors

        flat = {k: v[-1] for k, v in headers.items()} if headers else None
        try:
            msg = await nc.request(subject, body, timeout=REQUEST_TIMEOUT, headers=flat)
        except nats.errors.NoRespondersError:
            return 503, b""
        except nats.errors.TimeoutError:
            return 408, b""
        status = msg.headers.get("Status") if msg.headers else None
        return (int(status) if status else None), msg.data

    return request


# ---------------------------------------------------------------------- helpers


def _dumps(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _name(value: Any, name: str, position: str, missing: str) -> str:
    if not isinstance(value, str) or not value:
        raise PreloadError(f"{name}: {position}: {missing}")
    return value


def _seconds(value: Any, where: str, key: str) -> int:
    """Seconds (a number, as nats-py takes ``ttl``) as nanoseconds; 0 when absent."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise PreloadError(f"{where}: {key!r} is seconds, a number >= 0")
    return round(value * _NS)


def _headers(value: Any, name: str, position: str) -> dict[str, list[str]] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise PreloadError(f"{name}: {position}: \"headers\" must be an object")
    out: dict[str, list[str]] = {}
    for key, v in value.items():
        values = v if isinstance(v, list) else [v]
        if not all(isinstance(x, str) for x in values):
            raise PreloadError(f"{name}: {position}: header {key!r} must be text or a list of "
                               "texts")
        out[key] = list(values)
    return out or None


def _header_block(headers: dict[str, list[str]] | None) -> bytes | None:
    if not headers:
        return None
    lines = ["NATS/1.0"] + [f"{k}: {v}" for k, values in headers.items() for v in values]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def _status(hdr: bytes | None) -> int | None:
    if not hdr or not hdr.startswith(b"NATS/1.0 "):
        return None
    code = hdr[9:12]
    return int(code) if code.isdigit() else None
