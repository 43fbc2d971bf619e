"""Rebuilding account state by replaying the event stream with an ordered consumer."""
import pytest
from nats.js.errors import APIError

from .app import Ledger, create_stream, rebuild, record

pytestmark = pytest.mark.minijs(clock="virtual")


@pytest.fixture
async def events(js):
    await create_stream(js)
    return js


async def seed(js) -> None:
    await record(js, "alice", "opened", owner="Alice")
    await record(js, "bob", "opened", owner="Bob")
    await record(js, "alice", "deposited", amount=100)
    await record(js, "bob", "deposited", amount=50)
    await record(js, "alice", "withdrawn", amount=30)
    await record(js, "carol", "opened", owner="Carol")
    await record(js, "carol", "deposited", amount=5)
    await record(js, "bob", "withdrawn", amount=50)
    await record(js, "carol", "closed")
    await record(js, "alice", "deposited", amount=7)


async def test_rebuild_replays_every_event_in_order(events):
    await seed(events)

    ledger = await rebuild(events)

    assert ledger.balances() == {"alice": 77, "bob": 0}
    assert ledger.accounts["carol"].closed
    assert ledger.accounts["alice"].history == [0, 100, 70, 77]   # the order events happened
    assert ledger.accounts["bob"].history == [0, 50, 0]
    assert (ledger.last_seq, ledger.applied) == (10, 10)


async def test_catch_up_from_a_snapshot_reads_only_new_events(events):
    await seed(events)
    snapshot = await rebuild(events)

    await record(events, "bob", "deposited", amount=20)
    await record(events, "dave", "opened", owner="Dave")
    await record(events, "alice", "withdrawn", amount=77)

    caught_up = await rebuild(events, since=snapshot)
    full = await rebuild(events)

    assert caught_up.balances() == full.balances() == {"alice": 0, "bob": 20, "dave": 0}
    assert caught_up.accounts == full.accounts
    assert caught_up.applied - snapshot.applied == 3                # the new events only
    assert caught_up.last_seq == full.last_seq == 13
    assert snapshot.balances() == {"alice": 77, "bob": 0}          # the snapshot is untouched
    assert await rebuild(events, since=caught_up) == caught_up      # nothing new: no reading


async def test_rebuild_of_an_empty_stream(events):
    assert await rebuild(events) == Ledger()


async def test_stale_writer_is_rejected_so_replay_stays_consistent(events):
    opened = await record(events, "erin", "opened", owner="Erin", expected_seq=0)
    deposit = await record(events, "erin", "deposited", amount=10, expected_seq=opened)

    # A second writer that also read the account at `opened` loses the race.
    with pytest.raises(APIError) as err:
        await record(events, "erin", "withdrawn", amount=10, expected_seq=opened)
    assert err.value.err_code == 10071               # wrong last sequence

    await record(events, "erin", "withdrawn", amount=4, expected_seq=deposit)
    assert (await rebuild(events)).balances() == {"erin": 6}


async def test_rebuild_of_a_long_history(events):
    await record(events, "big", "opened", owner="Big")
    for i in range(1, 101):
        await record(events, "big", "deposited", amount=i)

    ledger = await rebuild(events)

    assert ledger.balances() == {"big": 100 * 101 // 2}
    assert ledger.accounts["big"].history[-1] == 5050
    assert ledger.applied == 101
