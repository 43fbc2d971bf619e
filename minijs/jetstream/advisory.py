"""Advisories and ids: the JSON events JetStream publishes under ``$JS.EVENT.>``.

Invariants:

* an advisory is built only when something listens on its subject (as nats-server checks
  interest first), so advisories cost nothing in a quiet server;
* every advisory carries ``type`` (``io.nats.jetstream.<kind>``), a fresh NUID-shaped ``id``
  and a ``timestamp`` from the server clock, then its own fields in nats-server's order.
"""
from __future__ import annotations

from typing import Any

from minijs.jetstream.bus import MessageBus

_NUID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def new_id(bus: Any, n: int = 22) -> str:
    """A NUID-shaped random id (22 base-62 characters), drawn from ``bus``'s seeded source
    (:mod:`minijs.randomness`)."""
    return bus.randomness.child("ids").text(_NUID_ALPHABET, n)


#: Advisories whose Go struct has fields after ``domain``: it goes before these keys.
_DOMAIN_BEFORE = {"error", "batch", "group", "dropped"}


class Advisories:
    """Publishes JetStream advisories on one message bus."""

    def __init__(self, bus: MessageBus, domain: str = "") -> None:
        self.bus = bus
        #: The server's JetStream domain: every advisory carries it (omitted when empty).
        self.domain = domain

    def advise(self, subject: str, event_type: str, fields: dict) -> None:
        """Publish ``io.nats.jetstream.<event_type>`` on ``subject`` if anyone listens."""
        subj = subject.encode()
        bus = self.bus
        if not bus.has_interest(subj):
            return
        from minijs.jetstream import jsonfmt as J  # imported by the first advisory heard

        body = {"type": "io.nats.jetstream." + event_type, "id": new_id(bus),
                "timestamp": J.go_time(bus.clock.time_ns())}
        if self.domain:
            keys = list(fields)
            at = next((i for i, k in enumerate(keys) if k in _DOMAIN_BEFORE), len(keys))
            for k in keys[:at]:
                body[k] = fields[k]
            body["domain"] = self.domain
            for k in keys[at:]:
                body[k] = fields[k]
        else:
            body.update(fields)
        bus.publish(subj, None, None, J.dumps(body))

    def stream_action(self, name: str, action: str) -> None:
        """``STREAM.CREATED`` / ``UPDATED`` / ``DELETED`` for ``create``/``modify``/``delete``."""
        what = {"create": "CREATED", "modify": "UPDATED", "delete": "DELETED"}[action]
        self.advise(f"$JS.EVENT.ADVISORY.STREAM.{what}.{name}", "advisory.v1.stream_action",
                    {"stream": name, "action": action})

    def consumer_action(self, stream: str, consumer: str, action: str) -> None:
        """``CONSUMER.CREATED`` / ``DELETED`` for ``create``/``delete``."""
        what = {"create": "CREATED", "delete": "DELETED"}[action]
        self.advise(f"$JS.EVENT.ADVISORY.CONSUMER.{what}.{stream}.{consumer}",
                    "advisory.v1.consumer_action",
                    {"stream": stream, "consumer": consumer, "action": action})
