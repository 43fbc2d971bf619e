"""A module's ``pytestmark`` configures the module-scoped server; per-test servers still take
each test's own marker."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.minijs(clock="virtual", max_payload=2048)


def test_module_server_takes_the_module_marker(minijs_module_server):
    assert minijs_module_server.clock.virtual is True
    assert minijs_module_server.server.config.max_payload == 2048


def test_the_same_module_server_again(minijs_module_server):
    minijs_module_server.clock.advance(5)
    assert minijs_module_server.clock.monotonic() >= 5


@pytest.mark.minijs(clock="auto")
def test_per_test_marker_wins(minijs_server):
    assert type(minijs_server.clock).__name__ == "AutoClock"
