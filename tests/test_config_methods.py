"""minijs.config's classes take their dataclass methods from the generated minijs.config_methods.

They must behave exactly as ``@dataclass`` would make them: each is compared here with a twin
``@dataclass`` builds from the same fields (signature, repr, equality, hashing, frozenness,
``replace``/``asdict``), and the generated module must be what the generator writes now.
"""
from __future__ import annotations

import copy
import dataclasses
import importlib.util
import inspect
import pickle
import random
from pathlib import Path

import pytest

from minijs import config, config_methods
from minijs.config import AccountLimits, JetStreamLimitOpts, ServerConfig

ROOT = Path(__file__).resolve().parent.parent
CLASSES = [(AccountLimits, True), (JetStreamLimitOpts, True), (ServerConfig, False)]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_config_methods",
                                                  ROOT / "scripts" / "gen_config_methods.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_module_is_current():
    """An edit to a class's fields without running the generator fails here (and at import)."""
    assert _generator().main(["--check"]) == 0
    # the in-process check leaves this process's own modules in place
    import sys

    assert sys.modules["minijs.config"] is config
    assert sys.modules["minijs.config_methods"] is config_methods
    assert config.ServerConfig is ServerConfig


def _twin(cls: type, frozen: bool) -> type:
    """The class @dataclass itself makes from ``cls``'s fields, under the same name."""
    specs = []
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            specs.append((f.name, f.type, dataclasses.field(default_factory=f.default_factory)))
        else:
            specs.append((f.name, f.type, dataclasses.field(default=f.default)))
    twin = dataclasses.make_dataclass(cls.__name__, specs, frozen=frozen)
    twin.__qualname__ = cls.__qualname__
    return twin


def _random_kwargs(cls: type, rng: random.Random) -> dict:
    """Some fields changed to other values (of several types, including unhashable ones)."""
    pool = [0, 1, -1, 2.5, "x", "", None, True, (), ("a", "b"), [1], {"k": 1}]
    return {f.name: rng.choice(pool) for f in dataclasses.fields(cls) if rng.random() < 0.3}


@pytest.mark.parametrize("cls,frozen", CLASSES, ids=lambda v: getattr(v, "__name__", str(v)))
def test_behaves_as_its_dataclass_twin(cls, frozen):
    twin = _twin(cls, frozen)
    assert str(inspect.signature(cls)) == str(inspect.signature(twin))
    assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
    assert cls.__match_args__ == twin.__match_args__
    assert dataclasses.is_dataclass(cls)
    assert (cls.__hash__ is None) == (twin.__hash__ is None) == (not frozen)
    rng = random.Random(7)
    for _ in range(200):
        kwargs = _random_kwargs(cls, rng)
        a, b = cls(**kwargs), twin(**kwargs)
        assert repr(a) == repr(b)
        assert dataclasses.asdict(a) == dataclasses.asdict(b)
        same, same_twin = cls(**kwargs), twin(**kwargs)
        assert (a == same) == (b == same_twin) is True
        other_kwargs = _random_kwargs(cls, rng)
        assert (a == cls(**other_kwargs)) == (b == twin(**other_kwargs))
        assert a != b  # different classes never compare equal, as with @dataclass
        assert (a == 1) is (b == 1) is False
        if frozen:
            try:
                hashable = hash(b)
            except TypeError:
                with pytest.raises(TypeError):
                    hash(a)
            else:
                assert hash(a) == hashable
        else:
            with pytest.raises(TypeError):
                hash(a)
    default, twin_default = cls(), twin()
    assert repr(default) == repr(twin_default)
    for f in dataclasses.fields(cls):  # each field takes part in equality (and the hash)
        changed = cls(**{f.name: "changed"})
        assert changed != default and changed == cls(**{f.name: "changed"})
        if frozen:
            assert hash(changed) == hash(twin(**{f.name: "changed"}))
    for f in dataclasses.fields(cls):  # a factory makes a fresh value for each instance
        if f.default_factory is not dataclasses.MISSING:
            assert getattr(cls(), f.name) is not getattr(default, f.name)
    replaced = dataclasses.replace(default, **{dataclasses.fields(cls)[0].name: 123})
    assert type(replaced) is cls and getattr(replaced, dataclasses.fields(cls)[0].name) == 123
    assert copy.deepcopy(default) == default
    assert pickle.loads(pickle.dumps(default)) == default
    with pytest.raises(TypeError):
        cls(no_such_field=1)
    with pytest.raises(TypeError):
        cls(*range(len(dataclasses.fields(cls)) + 1))


@pytest.mark.parametrize("cls", [AccountLimits, JetStreamLimitOpts])
def test_frozen_classes_refuse_assignment_and_deletion(cls):
    value = cls()
    name = dataclasses.fields(cls)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot assign to field '{name}'"):
        setattr(value, name, 5)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'other'"):
        value.other = 5
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot delete field '{name}'"):
        delattr(value, name)


def test_a_recursive_value_repr_stops_as_dataclass_repr_does():
    cfg = ServerConfig()
    cfg.extra["self"] = cfg
    assert "extra={'self': ...}" in repr(cfg)


def test_install_refuses_a_class_whose_fields_changed():
    class ServerConfig:  # the name of a generated class, with other fields
        host: str = "x"

    with pytest.raises(ImportError, match="run python scripts/gen_config_methods.py"):
        config_methods.install(ServerConfig, False, config._declared_fields(ServerConfig))
    limits = config._declared_fields(AccountLimits)
    with pytest.raises(ImportError, match="not generated for the fields of AccountLimits"):
        config_methods.install(AccountLimits, False, limits)  # frozen differs
    with pytest.raises(ImportError, match="not generated for the fields of AccountLimits"):
        config_methods.install(AccountLimits, True, limits[1:] + limits[:1])  # order differs


def test_the_dataclasses_module_waits_until_a_class_is_inspected():
    """Importing minijs.config, making, comparing, hashing, copying with ``with_overrides``
    and printing configurations need no ``dataclasses``; the first ``fields()`` (or
    ``is_dataclass``, ``replace``, ``asdict``) has ``@dataclass`` process the class, which
    keeps its generated methods and loses its factory fields' class attributes."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import sys
        from minijs.config import AccountLimits, ServerConfig
        cfg = ServerConfig().with_overrides(port=5, jetstream=True)
        same = cfg == ServerConfig(port=5, jetstream=True) and hash(AccountLimits()) is not None
        try:
            cfg.with_overrides(prot=5)
            refused = False
        except TypeError as exc:
            refused = "unknown server option(s): prot" in str(exc)
        repr(cfg), repr(AccountLimits())
        before = "dataclasses" in sys.modules
        import dataclasses
        init = ServerConfig.__init__
        names = [f.name for f in dataclasses.fields(ServerConfig)]
        print(before, same, refused, names == list(ServerConfig.__match_args__),
              ServerConfig.__init__ is init, "extra" not in ServerConfig.__dict__,
              dataclasses.is_dataclass(AccountLimits),
              dataclasses.replace(cfg, port=6).port, dataclasses.asdict(cfg)["port"])
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True", "True", "True", "True", "True", "True",
                                   "6", "5"]


def test_first_inspection_from_many_threads_at_once():
    """Threads inspecting a configuration class for the first time together all get its
    fields (the dataclass information is made on a twin and set whole)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import dataclasses, threading
        from minijs.config import AccountLimits, ServerConfig
        barrier = threading.Barrier(8)
        seen, errors = [], []

        def inspect():
            barrier.wait()
            try:
                seen.append((len(dataclasses.fields(ServerConfig)),
                             dataclasses.fields(AccountLimits)[0].name,
                             dataclasses.is_dataclass(ServerConfig)))
            except Exception as exc:
                errors.append(repr(exc))

        threads = [threading.Thread(target=inspect) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(errors, sorted(set(seen)))
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[] [(66, 'max_memory', True)]"
