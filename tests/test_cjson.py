"""minijs.protocol.cjson: the C JSON scanner and encoder without the json package, checked
against the json package itself."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from minijs.protocol import cjson

ROOT = Path(__file__).resolve().parent.parent


class _Pairs(list):
    pass


class _Number(str):
    pass


def _refuse(name: str) -> None:
    raise ValueError(name)


HOOKS = dict(object_pairs_hook=_Pairs, parse_int=_Number, parse_float=_Number,
             parse_constant=_refuse)


def _outcome(decode, text: str) -> tuple:
    try:
        value = decode(text)
    except ValueError:
        return ("refused",)
    return ("value", type(value).__name__, repr(value))


EDGES = ['{"a":1}', ' {"a" : [1, 2.5e3, -0, true, false, null, "x\\u00e9"]} \n', "", " ", "{",
         "[1,]", '"\x01"', '{"a" 1}', "NaN", "-Infinity", "1 2", "\x0c1", "1\x0c", "1\xa0",
         '"\\ud800"', "[[[]]]", "01", "1.", ".5", "1e", '{"a":1,}', '{"a":1}{}', "\t\r\n[]\t",
         '"\\x41"', '"a\tb"', "tru", "nulls", '{"a":{"b":{}}}']
ALPHABET = ' \t\n\r{}[]":,1-.e+0truefalsnul\\u\x01\x7f\xe9ab\ud800'


def _texts(n: int) -> list[str]:
    rng = random.Random(20261129)
    return EDGES + ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 14)))
                    for _ in range(n)]


@pytest.fixture(params=["C functions", "json package"])
def functions(request, monkeypatch):
    """Both ways the module works: with CPython's C functions, and without them (as on a Python
    that has none), through the json package."""
    if request.param == "json package":
        monkeypatch.setattr(cjson, "_C", None)
    return request.param


def test_decoder_accepts_and_refuses_what_json_does(functions):
    ours = cjson.decoder(**HOOKS)
    theirs = json.JSONDecoder(**HOOKS).decode
    for text in _texts(30000):
        assert _outcome(ours, text) == _outcome(theirs, text), repr(text)


@pytest.mark.parametrize("value", [
    {"server_id": "N" * 56, "port": 4222, "headers": True, "proto": 1, "max_payload": 1048576,
     "connect_urls": ["127.0.0.1:4222"], "nonce": "ab-_", "client_ip": "::1"},
    {"a": [None, False, 1.5, -0.0, 1e300, 10**30, "é\n\x00\u2028\ud83d\ude00"]}, "x", 7, [], {},
    {"k": {"n": [1, {"z": "<&>"}]}}, float("nan"),
])
def test_dumps_compact_is_json_dumps_compact(functions, value):
    assert cjson.dumps_compact(value) == json.dumps(value, separators=(",", ":"))


def test_dumps_compact_refuses_what_json_cannot_encode(functions):
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        cjson.dumps_compact({"a": object()})


@pytest.mark.parametrize("first", ["{", '"\x01"', "[1,]", "1 2", ""])
def test_first_refused_text_in_a_fresh_process_is_a_value_error(first):
    """The first text the scanner refuses, in a process that has not loaded the json package
    (where CPython 3.11's scanner cannot raise its own error), is a ValueError all the same,
    and so are the ones after it."""
    code = textwrap.dedent(f"""
        import sys
        from minijs.protocol import cjson
        decode = cjson.decoder(object_pairs_hook=list, parse_int=str, parse_float=str,
                               parse_constant=str)
        before = "json" in sys.modules
        outcomes = []
        for text in ({first!r}, "{{", {first!r}):
            try:
                decode(text)
                outcomes.append("value")
            except ValueError:
                outcomes.append("refused")
        print(before, outcomes, decode(' {{"a": [1]}} '))
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("[", 1)[0].strip() == "False"
    assert "['refused', 'refused', 'refused']" in proc.stdout
    assert proc.stdout.strip().endswith("[('a', ['1'])]")
