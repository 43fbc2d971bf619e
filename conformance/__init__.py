"""Conformance suite: client-side tests proving minijs behaves like nats-server on the wire.

Run with ``minijs conformance [--url nats://host:port] [--targets minijs,nats-server]``
or as part of ``pytest tests conformance``.
"""
