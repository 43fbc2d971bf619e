"""One seeded source for every choice the server makes at random.

A server draws everything random from its :class:`RandomSource` (``server.randomness``): its
id and xkey, the member of a queue group that gets a message, generated names and ids
(ephemeral consumers, flow-control subjects, advisory and pin ids, response-import subjects),
sampling draws (ack and trace sampling, weighted mappings, ``{{random(n)}}`` transforms), the
jitter of its first PING, lame-duck pauses, fault ``fraction`` draws, and the order of timers
due at the same instant on a virtual clock. Given the same seed, two runs make the same choices
wherever the same things happen in the same order.

Invariants:

* a source is a seed plus a path (``""`` for the root); its draws depend on nothing else, so
  ``RandomSource(7).child("n2")`` draws the same values in every run and every process;
* :meth:`RandomSource.child` derives an independent stream from the root seed and the child's
  path, not from the parent's state: how much one component draws never shifts another
  component's stream (a cluster gives each node ``source.child("n1")``, ``child("n2")``, ...;
  each node's components take children of their node's source);
* a source made without a seed takes a fresh one from the OS and reports it in :attr:`seed`, so
  any run can be repeated (the pytest plugin prints it on a failure);
* :func:`seed_servers` sets the source that servers made without a seed derive theirs from
  (the pytest plugin sets one per test), so servers a test makes itself are repeatable too.

Only a probe file's name in a store directory is not drawn here (``os.urandom``): two servers
started with the same seed on one directory must not pick the same name.
"""
from __future__ import annotations

import os
import random
from typing import Any, Callable, Sequence, TypeVar

T = TypeVar("T")

#: Seeds the source takes when none is given: 48 bits, short enough to type on a command line.
SEED_BITS = 48


def fresh_seed() -> int:
    """A new seed from the OS's randomness."""
    return int.from_bytes(os.urandom(SEED_BITS // 8), "big")


class RandomSource:
    """A seeded stream of random draws (see the module docstring).

    The draw methods are those of :class:`random.Random` (``random()``, ``randrange()``,
    ``uniform()``, ``choice()``, ``getrandbits()``, ``randbytes()``, ``shuffle()``), bound
    once, so hot paths pay what they would for the ``random`` module's own functions.
    """

    __slots__ = ("seed", "path", "_rng", "_children", "random", "randrange", "uniform", "choice",
                 "getrandbits", "randbytes", "shuffle")

    def __init__(self, seed: int | None = None, path: str = "") -> None:
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)
                                 or seed < 0):
            raise ValueError(f"a seed is a non-negative integer, not {seed!r}")
        #: The root seed every stream of this family is derived from.
        self.seed: int = fresh_seed() if seed is None else seed
        #: Where this stream sits below the root: ``""``, ``"timers"``, ``"n2/queue"``, ...
        self.path = path
        self._children: dict[str, RandomSource] = {}
        # A str seed is hashed with SHA-512 by random.Random: stable across runs and processes
        # (unlike hash()), and every path gets an unrelated stream.
        rng = self._rng = random.Random(f"minijs:{self.seed}:{path}")
        self.random: Callable[[], float] = rng.random
        self.randrange: Callable[..., int] = rng.randrange
        self.uniform: Callable[[float, float], float] = rng.uniform
        self.choice: Callable[[Sequence[Any]], Any] = rng.choice
        self.getrandbits: Callable[[int], int] = rng.getrandbits
        self.randbytes: Callable[[int], bytes] = rng.randbytes
        self.shuffle: Callable[[list], None] = rng.shuffle

    def child(self, name: str) -> "RandomSource":
        """The independent stream named ``name`` below this one (same root seed): the same
        object on every call, so a component may ask for its stream wherever it needs it;
        ``child("a").child("b")`` draws as ``child("a/b")`` does."""
        source = self._children.get(name)
        if source is None:
            if not name:
                raise ValueError("a child stream needs a name")
            source = self._children[name] = RandomSource(
                self.seed, f"{self.path}/{name}" if self.path else name)
        return source

    def text(self, alphabet: str, n: int) -> str:
        """``n`` characters drawn from ``alphabet`` (generated names and ids)."""
        choice = self.choice
        return "".join(choice(alphabet) for _ in range(n))

    def __repr__(self) -> str:
        where = f", path={self.path!r}" if self.path else ""
        return f"RandomSource(seed={self.seed}{where})"


# ---------------------------------------------------------------------- servers without a seed

_ambient: RandomSource | None = None
_made = 0


def seed_servers(source: RandomSource | None) -> None:
    """From now on, a server made without a seed takes ``source.child("server1")``, then
    ``child("server2")``, ... (``None``: each takes a fresh seed again). The pytest plugin calls
    this before each test with a source derived from ``--minijs-seed`` and the test's id."""
    global _ambient, _made
    _ambient = source
    _made = 0


def servers_made() -> int:
    """How many servers took a source from :func:`seed_servers`'s since it was last set."""
    return _made


def ambient_seed() -> int | None:
    """The root seed of the source set by :func:`seed_servers`, if any."""
    return _ambient.seed if _ambient is not None else None


def server_source(seed: "int | RandomSource | None" = None) -> RandomSource:
    """The source of a new server: its own ``seed`` (or a given source), else the next child of
    the source set by :func:`seed_servers`, else a fresh seed."""
    global _made
    if isinstance(seed, RandomSource):
        return seed
    if seed is not None:
        return RandomSource(seed)
    if _ambient is not None:
        _made += 1
        return _ambient.child(f"server{_made}")
    return RandomSource()
