"""Config files: nats-server's syntax and the ServerConfig fields it maps to.

Expected values were taken from the real nats-server 2.15.1 (its /varz for the same file).
"""
from __future__ import annotations

import pytest

from minijs.config import DEFAULT_PORT, RANDOM_PORT, ServerConfig
from minijs.confparse import load_config, parse_config
from minijs.confsyntax import ConfigError, parse_duration, parse_text, to_python


def values(text: str) -> dict:
    return to_python(parse_text(text))


def conf(text: str, **base) -> ServerConfig:
    return parse_config(text, ServerConfig(**base))


# ----------------------------------------------------------------------------- syntax


@pytest.mark.parametrize("text", [
    "port: 4333", "port = 4333", "port 4333", "port:4333", "port=4333", "  port :  4333  ",
    "port: 4333;", "port: 4333 # comment", "port: 4333 // comment", "{ port: 4333 }",
    "\n\n# leading comment\n// and another\nport: 4333\n",
])
def test_key_value_separators_and_comments(text):
    assert values(text) == {"port": 4333}


def test_several_values_on_one_line():
    assert values("a: 1; b: 2, c: 3") == {"a": 1, "b": 2, "c": 3}


def test_strings_quoted_bare_raw_and_escapes():
    got = values(
        'a: "double quoted # not a comment"\n'
        "b: 'single \\n raw'\n"
        "c: bare/path/x.log\n"
        'd: "tab\\tnl\\nquote\\"bs\\\\hex\\x41"\n'
        "e: 127.0.0.1:4222\n"
        "f: 5s\n"
        "g: bar#baz\n")
    assert got == {
        "a": "double quoted # not a comment",
        "b": "single \\n raw",
        "c": "bare/path/x.log",
        "d": 'tab\tnl\nquote"bs\\hexA',
        "e": "127.0.0.1:4222",
        "f": "5s",
        "g": "bar#baz",
    }


def test_block_string():
    assert values("b: (\nline one\n  line two\n)\nc: 1") == {"b": "\nline one\n  line two",
                                                              "c": 1}


@pytest.mark.parametrize("word,expected", [
    ("true", True), ("TRUE", True), ("yes", True), ("on", True), ("On", True),
    ("false", False), ("no", False), ("off", False), ("OFF", False),
])
def test_booleans(word, expected):
    assert values(f"x: {word}") == {"x": expected}


@pytest.mark.parametrize("word,expected", [
    ("42", 42), ("-1", -1), ("0", 0),
    ("1k", 1000), ("1K", 1000), ("1kb", 1024), ("1KB", 1024), ("1ki", 1024), ("1KiB", 1024),
    ("2m", 2_000_000), ("2mb", 2 * 1024 ** 2), ("2MB", 2 * 1024 ** 2), ("2Mi", 2 * 1024 ** 2),
    ("64MB", 64 * 1024 ** 2), ("1g", 10 ** 9), ("1G", 10 ** 9), ("1gb", 1024 ** 3),
    ("1Gi", 1024 ** 3), ("1t", 10 ** 12), ("1tb", 1024 ** 4), ("1p", 10 ** 15),
    ("1pb", 1024 ** 5), ("1e", 10 ** 18), ("1eb", 1024 ** 6),
    ("1.5", 1.5),
    ("1KB_", "1KB_"), ("1e3", "1e3"), ("10.0.0.1", "10.0.0.1"),  # not numbers: strings
])
def test_numbers_and_size_suffixes(word, expected):
    got = values(f"x: {word}")["x"]
    assert got == expected and type(got) is type(expected)


def test_maps_and_arrays_nest_with_any_separator():
    got = values("""
        outer {
          inner: { a: 1, b: [x, "y", 3] }
          list: [
            1
            2,
            { k: v }
          ]
          semi: 1; other = 2
        }
    """)
    assert got == {"outer": {"inner": {"a": 1, "b": ["x", "y", 3]},
                             "list": [1, 2, {"k": "v"}], "semi": 1, "other": 2}}


def test_variables_from_scope_and_environment(monkeypatch):
    monkeypatch.setenv("MINIJS_TEST_PORT", "4555")
    got = values("NAME: joe\nuser: $NAME\nport: $MINIJS_TEST_PORT\nm { k: v, x: $k }")
    assert got["user"] == "joe" and got["port"] == 4555 and got["m"]["x"] == "v"


@pytest.mark.parametrize("text,fragment", [
    ("port: 1 GB", "top-level value"),
    ("m { a: 1", "missing '}'"),
    ("a: [1, 2", "missing ']'"),
    ('a: "open', "unterminated string"),
    ("a: $NOPE_NOT_SET_ANYWHERE", "can not be found"),
    ('a: "\\q"', "invalid escape"),
    ("a:\n1", "new line"),
    ("include other.conf", "error parsing include file 'other.conf'"),
])
def test_syntax_errors(text, fragment):
    with pytest.raises(ConfigError) as info:
        parse_text(text, "x.conf")
    assert fragment in str(info.value)
    assert str(info.value).startswith("x.conf:")


def test_error_positions_are_line_and_column():
    with pytest.raises(ConfigError) as info:
        conf("port: 4222\nauthorization { user: a, password: b, bogus: 1 }\n")
    err = info.value
    # nats-server reports this very position: "3:39" for the same text on its line 3.
    assert (err.line, err.col) == (2, 39)
    assert 'unknown field "bogus"' in str(err)


# ----------------------------------------------------------------------------- durations


@pytest.mark.parametrize("text,seconds", [
    ("1s", 1.0), ("500ms", 0.5), ("2m", 120.0), ("1h30m", 5400.0), ("1.5s", 1.5),
    ("100us", 1e-4), ("10ns", 1e-8), ("0", 0.0), ("-1s", -1.0), ("1m30s", 90.0),
])
def test_go_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text,error", [
    ("5", 'time: missing unit in duration "5"'), ("", 'time: invalid duration ""'),
    ("s", 'time: invalid duration "s"'), ("1x", 'time: unknown unit "x" in duration "1x"'),
    ("1.s5", 'time: missing unit in duration "1.s5"'), ("-", 'time: invalid duration "-"'),
    ("9223372037s", 'time: invalid duration "9223372037s"'),
    ("1\u00b5x", 'time: unknown unit "\\xc2\\xb5x" in duration "1\\xc2\\xb5x"'),
    ('"1s', 'time: invalid duration "\\"1s"'),
])
def test_bad_durations(text, error):
    """Go's time.ParseDuration errors, word for word (nats-server prints them)."""
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    assert str(info.value) == error


@pytest.mark.parametrize("text,seconds", [
    (".5s", 0.5), ("1.s", 1.0), ("+5s", 5.0), ("1\u00b5s", 1e-6), ("1\u03bcs", 1e-6),
    ("9223372036s", 9223372036.0), ("-9223372036s", -9223372036.0), ("1.0000000001s", 1.0),
])
def test_go_duration_edges(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


# ----------------------------------------------------------------------------- mapping


def test_full_file_maps_to_server_config(tmp_path):
    path = tmp_path / "server.conf"
    path.write_text("""
        # a typical test configuration
        listen: 127.0.0.1:4333
        server_name: "srv-1"
        http: 127.0.0.1:8333
        max_payload: 2MB
        max_control_line: 2KB
        max_pending: 10MB
        max_connections: 100
        max_subscriptions: 50
        ping_interval: "30s"
        ping_max: 3
        write_deadline: "2s"
        debug: true
        trace: false
        logfile: /tmp/minijs.log
        pid_file: /tmp/minijs.pid
        authorization {
          user: joe
          password: "s3cr3t"
          timeout: 1.5
        }
        jetstream {
          store_dir: "/tmp/js data"
          max_mem: 1G
          max_file_store: "2G"
        }
    """)
    cfg = load_config(path, ServerConfig())
    assert (cfg.host, cfg.port, cfg.server_name) == ("127.0.0.1", 4333, "srv-1")
    assert (cfg.http_host, cfg.http_port) == ("127.0.0.1", 8333)
    assert cfg.max_payload == 2 * 1024 * 1024
    assert cfg.max_control_line == 2048
    assert cfg.max_pending == 10 * 1024 * 1024
    assert (cfg.max_connections, cfg.max_subscriptions) == (100, 50)
    assert (cfg.ping_interval, cfg.ping_max, cfg.write_deadline) == (30.0, 3, 2.0)
    assert (cfg.debug, cfg.trace) == (True, False)
    assert (cfg.log_file, cfg.pid_file) == ("/tmp/minijs.log", "/tmp/minijs.pid")
    assert (cfg.user, cfg.password, cfg.auth_timeout) == ("joe", "s3cr3t", 1.5)
    assert cfg.jetstream is True and cfg.store_dir == "/tmp/js data"
    assert cfg.max_memory_store == 10 ** 9
    assert cfg.max_file_store == 2 * 1024 ** 3


def test_file_overrides_base_and_keeps_the_rest():
    base = ServerConfig(host="0.0.0.0", port=4222, max_payload=1234)
    cfg = parse_config("port: 5000", base)
    assert (cfg.host, cfg.port, cfg.max_payload) == ("0.0.0.0", 5000, 1234)
    assert base.port == 4222  # not modified in place


@pytest.mark.parametrize("text,host,port", [
    ("listen: 127.0.0.1:4333", "127.0.0.1", 4333),
    ('listen: ":4333"', "0.0.0.0", 4333),  # no host: keep the base host
    ("listen: 4333", "0.0.0.0", 4333),
    ("listen: 127.0.0.1:-1", "127.0.0.1", RANDOM_PORT),
    ('listen: "[::1]:4333"', "::1", 4333),
    ("net: 127.0.0.2\nport: 4334", "127.0.0.2", 4334),
    ("host: 127.0.0.3\nport: -1", "127.0.0.3", RANDOM_PORT),
    ("port: 0", "0.0.0.0", DEFAULT_PORT),  # nats-server: 0 means the default port
])
def test_listen_host_port(text, host, port):
    cfg = conf(text, host="0.0.0.0", port=4222)
    assert (cfg.host, cfg.port) == (host, port)


def test_bad_listen_is_an_error():
    with pytest.raises(ConfigError, match="could not parse address"):
        conf('listen: "4333"')
    for text in ("port: 70000", "listen: 127.0.0.1:70000", "http_port: 65536"):
        with pytest.raises(ConfigError, match="out of range"):
            conf(text)


@pytest.mark.parametrize("text,http_host,http_port", [
    ("http: 127.0.0.1:8333", "127.0.0.1", 8333),
    ("http: 8333", None, 8333),
    ("http_port: 8333", None, 8333),
    ("monitor_port: 8333", None, 8333),
    ("http_port: -1", None, RANDOM_PORT),
    ("http_port: 0", None, None),  # nats-server: 0 means no monitoring
])
def test_monitoring_port(text, http_host, http_port):
    cfg = conf(text)
    assert (cfg.http_host, cfg.http_port) == (http_host, http_port)


@pytest.mark.parametrize("text,expected", [
    ("jetstream: enabled", True), ("jetstream: enable", True), ("jetstream: true", True),
    ("jetstream: on", True), ("jetstream: {}", True), ("jetstream {}", True),
    ("jetstream: disabled", False), ("jetstream: false", False),
    ("jetstream: { enabled: false }", False),
])
def test_jetstream_forms(text, expected):
    assert conf(text, jetstream=not expected).jetstream is expected


def test_jetstream_store_dir_at_top_level_or_in_block():
    assert conf("store_dir: /a\njetstream: true").store_dir == "/a"
    assert conf("jetstream { storedir: /b }").store_dir == "/b"
    with pytest.raises(ConfigError, match="duplicate 'store_dir'"):
        conf("store_dir: /a\njetstream { store_dir: /b }")


@pytest.mark.parametrize("value,expected", [
    ("1G", 10 ** 9), ("1GB", 1024 ** 3), ('"4K"', 4096), ('"4M"', 4 * 1024 ** 2),
    ("'2G'", 2 * 1024 ** 3), ('"1T"', 1024 ** 4), ("-1", -1),
])
def test_jetstream_sizes(value, expected):
    assert conf(f"jetstream {{ max_memory_store: {value} }}").max_memory_store == expected


@pytest.mark.parametrize("value", ['"1k"', '"10"', '"1GB"', "1.5"])
def test_jetstream_bad_sizes(value):
    with pytest.raises(ConfigError, match="max_file_store"):
        conf(f"jetstream {{ max_file_store: {value} }}")


def test_durations_accept_bare_seconds_but_not_floats():
    assert conf("ping_interval: 5").ping_interval == 5.0
    assert conf("write_deadline: 500ms").write_deadline == 0.5  # bare duration string
    with pytest.raises(ConfigError, match="ping_interval"):
        conf("ping_interval: 2.5")
    with pytest.raises(ConfigError, match="missing unit"):
        conf('ping_interval: "5"')


def test_token_authorization_and_aliases():
    cfg = conf("authorization { token: abc, timeout: 3 }")
    assert (cfg.token, cfg.auth_timeout) == ("abc", 3.0)
    cfg = conf("authorization { username: u, pass: p }")
    assert (cfg.user, cfg.password) == ("u", "p")
    with pytest.raises(ConfigError, match="token and a user"):
        conf("authorization { token: t, user: u, password: p }")


def test_aliases_and_case_insensitive_keys():
    cfg = conf("MAX_CONN: 7\nmax_subs: 8\nLog_File: /l\npidfile: /p\nServer_Name: n\nDEBUG: yes")
    assert (cfg.max_connections, cfg.max_subscriptions) == (7, 8)
    assert (cfg.log_file, cfg.pid_file, cfg.server_name, cfg.debug) == ("/l", "/p", "n", True)


def test_logtime_is_accepted():
    assert conf("logtime: false") == ServerConfig()


def test_used_variable_definitions_are_not_unknown_fields():
    assert conf("P: 4777\nport: $P").port == 4777
    with pytest.raises(ConfigError, match='unknown field "P"'):
        conf("P: 4777\nport: 1")


@pytest.mark.parametrize("text,fragment", [
    ("foo: 1", 'unknown field "foo"'),
    ("http_host: 127.0.0.1", 'unknown field "http_host"'),  # nats-server rejects it too
    ("jetstream { max_memory: 1 }", 'unknown field "max_memory" in jetstream'),
    ("cluster { port: 6222, tls { cert_file: x } }",
     'field "tls" in cluster is a nats-server setting that minijs does not'),
    ("gateway { port: 7222 }", 'field "gateway" is a nats-server setting that minijs does not'),
    ("tls { cert_file: x }", "missing 'key_file' in TLS configuration"),
    ("tls { certs: [] }", 'field "certs" in tls is a nats-server setting'),
    ("jetstream { key: s3cr3t }", 'field "key" in jetstream'),
    ("authorization { nkeys: [] }", 'field "nkeys" in authorization'),
    ("accounts { A: { nkey: UABC } }", 'field "nkey" in account'),
    ("accounts { A: { imports: [ {service: {account: A}} ] } }", "Expect an account name and a subject"),
    ('port: "4222"', "port: expected an integer, got string '4222'"),
    ("max_payload: \"1KB\"", "max_payload: expected an integer"),
    ("debug: 1", "debug: expected a boolean"),
    ("jetstream: maybe", "expected 'enabled' or 'disabled'"),
    ("authorization: 1", "expected a map"),
    ('server_name: "a b"', "server name cannot contain spaces"),
])
def test_unknown_unsupported_and_mistyped_fields_are_errors(tmp_path, text, fragment):
    path = tmp_path / "bad.conf"
    path.write_text("# first line\n" + text + "\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, ServerConfig())
    message = str(info.value)
    assert fragment in message
    assert message.startswith(f"{path}:2:")  # file:line of the offending key


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="error opening config file"):
        load_config(tmp_path / "nope.conf", ServerConfig())
