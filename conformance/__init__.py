"""Conformance suite: client-side tests proving minijs behaves like nats-server on the wire.

Run with ``python -m conformance [--targets minijs,nats-server] [--url nats://host:port]``
or as part of ``pytest tests conformance``.
"""
