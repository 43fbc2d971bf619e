"""Test control: what a real nats-server cannot do for a test.

Fault injection (:mod:`minijs.control.faults`), read-only snapshots
(:mod:`minijs.control.snapshots`) and the ``$MINIJS.>`` control plane
(:mod:`minijs.control.plane`). The server wires them in; the JetStream engine never imports
this package (faults plug into the router's one hook).
"""
