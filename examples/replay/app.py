"""Event sourcing: bank accounts whose state is rebuilt by replaying their events.

Every change is an event on the ``ACCOUNTS`` stream, subject ``accounts.<id>.<kind>`` (kinds:
``opened``, ``deposited``, ``withdrawn``, ``closed``). ``record()`` appends one with optimistic
concurrency (``Nats-Expected-Last-Subject-Sequence`` per account), so two writers cannot both
append to the same account from the same version.

``rebuild(js)`` reads the stream with an ordered consumer (nats-py
``js.subscribe(..., ordered_consumer=True)``: ephemeral, flow-controlled, no acks, recreated by
the client if it sees a gap) and folds the events into a ``Ledger``. ``rebuild(js,
since=ledger)`` continues from a snapshot, reading only the events after ``ledger.last_seq``.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

from nats.js.api import ConsumerConfig, DeliverPolicy, StorageType

STREAM = "ACCOUNTS"


class InsufficientFunds(Exception):
    pass


@dataclass
class Account:
    owner: str
    balance: int = 0
    closed: bool = False
    history: list[int] = field(default_factory=list)   # balance after each event


@dataclass
class Ledger:
    accounts: dict[str, Account] = field(default_factory=dict)
    last_seq: int = 0          # the last stream sequence applied
    applied: int = 0           # how many events this ledger has folded in

    def apply(self, subject: str, event: dict, seq: int) -> None:
        _, account_id, kind = subject.split(".")
        if kind == "opened":
            self.accounts[account_id] = Account(owner=event["owner"])
        else:
            account = self.accounts[account_id]
            if kind == "deposited":
                account.balance += event["amount"]
            elif kind == "withdrawn":
                account.balance -= event["amount"]
            elif kind == "closed":
                account.closed = True
            else:
                raise ValueError(f"unknown event {subject}")
        self.accounts[account_id].history.append(self.accounts[account_id].balance)
        self.last_seq = seq
        self.applied += 1

    def balances(self) -> dict[str, int]:
        return {a: acc.balance for a, acc in self.accounts.items() if not acc.closed}


async def create_stream(js) -> None:
    await js.add_stream(name=STREAM, subjects=["accounts.*.*"], storage=StorageType.MEMORY)


async def record(js, account_id: str, kind: str, *, expected_seq: int | None = None,
                 **data) -> int:
    """Append an event; ``expected_seq``: the account's last event sequence (0 for a new
    account) or None to skip the concurrency check. Returns the event's stream sequence."""
    headers = None
    if expected_seq is not None:
        headers = {"Nats-Expected-Last-Subject-Sequence": str(expected_seq),
                   "Nats-Expected-Last-Subject-Sequence-Subject": f"accounts.{account_id}.*"}
    ack = await js.publish(f"accounts.{account_id}.{kind}", json.dumps(data).encode(),
                           headers=headers)
    return ack.seq


async def rebuild(js, *, since: Ledger | None = None, timeout: float = 5.0) -> Ledger:
    """The ledger after every event now in the stream (after ``since.last_seq`` when given;
    ``since`` itself is not modified)."""
    ledger = copy.deepcopy(since) if since is not None else Ledger()
    state = (await js.stream_info(STREAM)).state
    if state.messages == 0 or state.last_seq <= ledger.last_seq:
        return ledger  # nothing new to read
    config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                            opt_start_seq=ledger.last_seq + 1)
    sub = await js.subscribe("accounts.>", stream=STREAM, ordered_consumer=True, config=config)
    try:
        while True:
            msg = await sub.next_msg(timeout=timeout)
            meta = msg.metadata
            ledger.apply(msg.subject, json.loads(msg.data), meta.sequence.stream)
            if meta.num_pending == 0:   # caught up with the stream as it is now
                return ledger
    finally:
        await sub.unsubscribe()
