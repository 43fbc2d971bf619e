"""LMDB durability: a writer process is SIGKILLed mid-stream; everything it reported flushed
must be there after reopening, with the same content.

The writer stores messages in batches whose content is a pure function of the sequence, removes
a deterministic earlier message now and then, calls ``flush()`` and then prints the last flushed
sequence. The test kills it with SIGKILL at a random moment, reopens the store, checks, and runs
another writer on the same directory (recovery + continuing), three rounds in all.
"""
from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minijs.jetstream.store import LmdbStore
from store_crash_content import content, expected_gone

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

#: Where store_crash_content.py is, for the writer process.
TESTS_DIR = Path(__file__).parent

WRITER = r'''
import sys
sys.path.insert(0, sys.argv[2])  # the tests directory: store_crash_content
from minijs.jetstream.store import LmdbStore
from store_crash_content import content, removed_by

store = LmdbStore(sys.argv[1])  # sync=True: fsync on every commit
batch = 0
while True:
    batch += 1
    for _ in range(1 + batch % 9):
        seq = store.last_seq + 1
        subject, hdr, data = content(seq)
        assert store.store_msg(subject, hdr, data, ts=seq * 1000)[0] == seq
        victim = removed_by(seq)
        if victim:
            store.remove(victim)
    store.put_meta("last", str(store.last_seq).encode())
    store.flush()
    print(store.last_seq, flush=True)
'''


def _run_writer(tmp_path, store_dir, min_reports: int) -> list[int]:
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "writer.py"), str(store_dir), str(TESTS_DIR)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, text=True,
    )
    reported: list[int] = []
    deadline = time.monotonic() + 20
    try:
        while len(reported) < min_reports:
            line = proc.stdout.readline()
            if not line:
                pytest.fail(f"writer exited early: {proc.stderr.read()}")
            reported.append(int(line))
            if time.monotonic() > deadline:
                pytest.fail("writer too slow")
        time.sleep(random.uniform(0, 0.02))  # kill somewhere inside a later batch
    finally:
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    # lines printed before the kill were printed after their flush: they count too
    for line in rest.splitlines():
        if line.strip().isdigit():
            reported.append(int(line))
    return reported


def test_sigkill_keeps_flushed_messages(tmp_path):
    (tmp_path / "writer.py").write_text(WRITER)

    store_dir = tmp_path / "jetstream" / "$G" / "streams" / "CRASH"
    previous = 0
    for round_ in range(3):
        reported = _run_writer(tmp_path, store_dir, min_reports=15 + 10 * round_)
        assert reported == sorted(reported) and reported[0] > previous
        flushed = reported[-1]

        store = LmdbStore(store_dir)
        try:
            assert store.last_seq >= flushed
            assert int(store.get_meta("last")) >= flushed
            gone = expected_gone(store.last_seq)
            for seq in range(1, store.last_seq + 1):
                m = store.load(seq)
                if seq in gone:
                    assert m is None, seq
                    continue
                assert m is not None, f"flushed seq {seq} lost (reported up to {flushed})"
                subject, hdr, data = content(seq)
                assert (m.subject, m.hdr, m.data, m.ts) == (subject, hdr, data, seq * 1000)
            st = store.state(deleted_details=True)
            assert st.msgs == store.last_seq - len([g for g in gone if g >= 1])
            assert st.first_seq == 1 and st.deleted == sorted(g for g in gone if g >= 1)
            assert st.bytes == sum(
                store.msg_size(*content(s)) for s in range(1, store.last_seq + 1)
                if s not in gone
            )
            previous = store.last_seq
        finally:
            store.close()
