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

A stream is :class:`random.Random`'s generator, seeded as ``random.Random(text)`` seeds it
(the text's bytes and their SHA-512 as one integer), so its draws are that class's draws. The
``random`` module itself is loaded by the first draw that needs its Python code
(``randrange()``, ``uniform()``, ``choice()``, ``shuffle()``); ``random()``, ``getrandbits()``
and ``randbytes()`` need only the generator's C core, and a started server that has served no
queue group and named nothing has drawn only those.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, Sequence, TypeVar

import _random

T = TypeVar("T")

#: Seeds the source takes when none is given: 48 bits, short enough to type on a command line.
SEED_BITS = 48


def fresh_seed() -> int:
    """A new seed from the OS's randomness."""
    return int.from_bytes(os.urandom(SEED_BITS // 8), "big")


def _find_sha512() -> Callable[[bytes], Any]:
    """SHA-512 where random.Random takes it from (Python 3.12 renamed the module)."""
    try:
        if sys.version_info >= (3, 12):
            from _sha2 import sha512  # type: ignore[import-not-found,unused-ignore]
        else:
            from _sha512 import sha512  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:  # a Python built without them
        from hashlib import sha512  # type: ignore[assignment,unused-ignore]
    return sha512


_sha512_of: Callable[[bytes], Any] | None = None


def _sha512(data: bytes) -> bytes:
    global _sha512_of
    if _sha512_of is None:
        _sha512_of = _find_sha512()
    return _sha512_of(data).digest()


#: The draws :class:`random.Random` writes in Python, over its generator's ``random()`` and
#: ``getrandbits()``, and the helper they call (``_randbelow``, which draws with ``getrandbits``).
_PYTHON_DRAWS = ("randrange", "uniform", "choice", "shuffle")
_PYTHON_HELPERS = ("_randbelow",)


class _Generator(_random.Random):
    """:class:`random.Random`'s Mersenne Twister seeded from a text as ``random.Random(text)``
    seeds it; its Python-written draws are :class:`random.Random`'s own functions, taken into
    this class by the first of them asked for."""

    def __init__(self, text: str) -> None:
        data = text.encode()
        super().seed(int.from_bytes(data + _sha512(data), "big"))
        self.gauss_next: float | None = None  # as random.Random.seed leaves it

    def __reduce__(self) -> tuple:
        # A copy (or an unpickled one) continues the same stream, as random.Random's does.
        return _generator_at, (self.getstate(), self.gauss_next)

    def randbytes(self, n: int) -> bytes:
        """``n`` random bytes, as :meth:`random.Random.randbytes` draws them."""
        return self.getrandbits(n * 8).to_bytes(n, "little")

    def __getattr__(self, name: str) -> Any:
        if name not in _PYTHON_DRAWS and name not in _PYTHON_HELPERS:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        import random

        for each in _PYTHON_DRAWS + _PYTHON_HELPERS:
            if each in vars(random.Random):
                setattr(_Generator, each, vars(random.Random)[each])
        return object.__getattribute__(self, name)


def _generator_at(state: tuple, gauss_next: float | None) -> _Generator:
    generator = _Generator("")
    generator.setstate(state)
    generator.gauss_next = gauss_next
    return generator


class RandomSource:
    """A seeded stream of random draws (see the module docstring).

    The draw methods are those of :class:`random.Random` (``random()``, ``randrange()``,
    ``uniform()``, ``choice()``, ``getrandbits()``, ``randbytes()``, ``shuffle()``), bound
    once (the Python-written ones when first asked for), so hot paths pay what they would for
    the ``random`` module's own functions.
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
        # A text seed is hashed with SHA-512: stable across runs and processes (unlike
        # hash()), and every path gets an unrelated stream.
        rng = self._rng = _Generator(f"minijs:{self.seed}:{path}")
        self.random: Callable[[], float] = rng.random
        self.getrandbits: Callable[[int], int] = rng.getrandbits
        self.randbytes: Callable[[int], bytes] = rng.randbytes
        self.randrange: Callable[..., int]
        self.uniform: Callable[[float, float], float]
        self.choice: Callable[[Sequence[Any]], Any]
        self.shuffle: Callable[[list], None]

    def __getattr__(self, name: str) -> Any:
        # A Python-written draw, asked for the first time: bind all of them now.
        if name not in _PYTHON_DRAWS:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        rng = self._rng
        for each in _PYTHON_DRAWS:
            setattr(self, each, getattr(rng, each))
        return getattr(self, name)

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
