"""``minijs``: a drop-in for the ``nats-server`` command line.

Scripts and harnesses spawn ``nats-server -a HOST -p PORT -js ...`` and wait for
``[INF] Server is ready`` on stderr; ``minijs`` takes the same flags, spelled the way Go's
``flag`` package reads them (one or two dashes, ``-flag value`` or ``-flag=value``, booleans
bare or ``-flag=false``), prints the same log lines and shuts down the same way on SIGTERM and
SIGINT. Flags nats-server has but minijs does not implement are refused by name, never
silently ignored. A config file (``-c``) is read first and flags override it, as in nats-server.

Only ``os`` and ``sys`` are imported up front so ``-h``/``-v`` and the spawn stay fast.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

PROG = "minijs"

USAGE = f"""
Usage: {PROG} [options]
       {PROG} stream|consumer|pub|sub|req|kv ... [-s URL]   (manage any NATS server)
       {PROG} conformance [--url URL] [--junit FILE] [--report DIR]   (check a server)

A drop-in for nats-server (the flags below mean what they mean there).

Server Options:
    -a, --addr, --net <host>         Bind to host address (default: 0.0.0.0)
    -p, --port <port>                Use port for clients (default: 4222, -1: random)
    -n, --name
        --server_name <server_name>  Server name (default: auto)
    -P, --pid <file>                 File to store PID
    -m, --http_port <port>           Use port for http monitoring (-1: random)
    -c, --config <file>              Configuration file
        --ports_file_dir <dir>       Creates a ports file in the specified directory (<exe>_<pid>.ports)
    -t                               Test configuration and exit
        --max_payload <size>         Maximum message payload (minijs extension; e.g. 1MB)

Logging Options:
    -l, --log <file>                 File to redirect log output
    -T, --logtime                    Timestamp log entries (always on; accepted for compatibility)
    -D, --debug                      Enable debugging output
    -V, --trace                      Trace the raw protocol
    -VV                              Verbose trace (same as -V in minijs)
    -DV                              Debug and trace
    -DVV                             Debug and verbose trace

JetStream Options:
    -js, --jetstream                 Enable JetStream functionality
    -sd, --store_dir <dir>           Set the storage directory

Authorization Options:
        --user <user>                User required for connections
        --pass <password>            Password required for connections
        --auth <token>               Authorization token required for connections

Test Control (minijs only):
        --control                    Serve the $MINIJS.> control plane (also MINIJS_CONTROL=1)
        --control_user <user>        With auth configured, the only user the plane answers
        --clock <wall|virtual|auto>  Server time: real, moved by $MINIJS.CLOCK.ADVANCE, or
                                     jumping to the next timer when idle (also MINIJS_CLOCK)
        --preload <file>             Create the streams, KV buckets, consumers and messages
                                     of a JSON file before "Server is ready" (MINIJS_PRELOAD)

Event Loop (minijs only):
        --loop <asyncio|uvloop|auto> asyncio (default), uvloop (pip install 'minijs[uvloop]'),
                                     or uvloop when installed (also MINIJS_LOOP)

Cluster Options (processes joined by routes, as nats-server; core NATS only):
        --routes <rurl-1, rurl-2>    Routes to solicit and connect
        --cluster, --cluster_listen <cluster-url>
                                     Cluster URL for solicited routes (nats://host:port,
                                     port -1: any free port)
        --cluster_name <string>      Cluster Name, if not set one will be dynamically generated
        --no_advertise <bool>        Do not advertise known cluster information to clients
        --cluster_advertise <str>    Cluster URL to advertise to other servers
        --connect_retries <number>   For implicit routes, number of connect retries

Cluster (minijs only: N nodes in this process):
        --cluster_size <n>           Run n nodes (2 to 5) on ports -p, -p+1, ... (each a free
                                     port with -p -1); JetStream streams take num_replicas up
                                     to n (also MINIJS_CLUSTER_SIZE); not with --cluster/--routes
        --cluster_name <name>        The cluster's name (default: minijs)
        --cluster_tags <json>        Each node's server_tags: {{"n1": ["az:1"], ...}}

Signal Options:
    -sl, --signal <signal>[=<pid>]   Send signal to a minijs process (ldm, stop, quit, term,
                                     reopen, reload); <pid> may be a pid file (-P)

TLS Options:
        --tls                        Enable TLS, do not verify clients (default: false)
        --tlscert <file>             Server certificate file
        --tlskey <file>              Private key for server certificate
        --tlsverify                  Enable TLS, verify client certificates
        --tlscacert <file>           Client certificate CA for verification

Common Options:
    -h, --help                       Show this message
    -v, --version                    Show version

Gateway, leaf node, syslog and profiling flags of nats-server are refused.

Management Commands (against minijs or nats-server; `{PROG} COMMAND -h` shows their flags):
    stream add|ls|info|edit|purge|rm|get     Manage JetStream streams
    consumer add|ls|info|next|rm             Manage consumers (next fetches and acks)
    pub SUBJECT [BODY] [--count N]           Publish messages
    sub SUBJECT [--count N]                  Print messages on a subject
    req SUBJECT [BODY]                       Send a request, print the reply
    kv add|put|get|del|ls|watch|rm           Key-value buckets
  e.g. {PROG} stream add ORDERS --subjects 'orders.>' --storage memory --defaults -s URL

Conformance (`{PROG} conformance -h`; needs the 'conformance' extra):
    conformance --url URL [--junit FILE] [--report DIR]   Check a running server
"""

#: First words that hand the command line to :mod:`minijs.manage` (kept here, not imported,
#: so the server command does not pay for the management package).
MANAGE_COMMANDS = ("stream", "consumer", "pub", "sub", "req", "request", "kv")


class UsageError(Exception):
    """A command line nats-server's flag parser would reject; the text is Go's wording."""


# name -> (destination, kind); kind: "bool", "str", "int", "size"
_FLAGS: dict[str, tuple[str, str]] = {}


def _flag(names: tuple[str, ...], dest: str, kind: str) -> None:
    for name in names:
        _FLAGS[name] = (dest, kind)


_flag(("a", "addr", "net"), "host", "str")
_flag(("p", "port"), "port", "int")
_flag(("n", "name", "server_name"), "server_name", "str")
_flag(("P", "pid"), "pid_file", "str")
_flag(("m", "http_port"), "http_port", "int")
_flag(("c", "config"), "config", "str")
_flag(("ports_file_dir",), "ports_file_dir", "str")
_flag(("t",), "check_config", "bool")
_flag(("max_payload",), "max_payload", "size")
_flag(("l", "log"), "log_file", "str")
_flag(("T", "logtime"), "logtime", "bool")
_flag(("D", "debug"), "debug", "bool")
_flag(("V", "trace", "VV"), "trace", "bool")
_flag(("DV", "DVV"), "debug_trace", "bool")
_flag(("js", "jetstream"), "jetstream", "bool")
_flag(("sd", "store_dir"), "store_dir", "str")
_flag(("user",), "user", "str")
_flag(("pass",), "password", "str")
_flag(("auth",), "token", "str")
_flag(("tls",), "tls", "bool")
_flag(("tlscert",), "tls_cert", "str")
_flag(("tlskey",), "tls_key", "str")
_flag(("tlscacert",), "tls_ca_cert", "str")
_flag(("tlsverify",), "tls_verify", "bool")
_flag(("control",), "control", "bool")
_flag(("control_user",), "control_user", "str")
_flag(("clock",), "clock", "str")
_flag(("preload",), "preload", "str")
_flag(("loop",), "loop", "str")
_flag(("cluster", "cluster_listen"), "cluster_listen", "str")
_flag(("routes",), "routes", "str")
_flag(("cluster_advertise",), "cluster_advertise", "str")
_flag(("no_advertise",), "no_advertise", "bool")
_flag(("connect_retries",), "connect_retries", "int")
_flag(("cluster_size",), "cluster_size", "int")
_flag(("cluster_name",), "cluster_name", "str")
_flag(("cluster_tags",), "cluster_tags", "str")
_flag(("sl", "signal"), "signal", "str")
_flag(("h", "help"), "help", "bool")
_flag(("v", "version"), "version", "bool")

#: nats-server flags minijs does not implement: refused with a clear message. The kind says
#: whether the flag would consume a value, so the message names the right thing.
_UNSUPPORTED: dict[str, str] = {
    "ms": "int", "https_port": "int",
    "client_advertise": "str", "logtime_utc": "bool",
    "s": "bool", "syslog": "bool", "r": "str", "remote_syslog": "str",
    "log_size_limit": "str", "max_traced_msg_len": "int",
    "profile": "int", "help_tls": "bool",
}

_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def parse_args(argv: list[str]) -> dict[str, Any]:
    """Parse nats-server flags the way Go's ``flag`` package does.

    Returns only the flags given (destination -> value), so a config file's settings survive
    unless a flag overrides them. Raises :class:`UsageError` with Go's message on bad input.
    """
    args = list(argv)
    given: dict[str, Any] = {}
    while args:
        s = args[0]
        if len(s) < 2 or s[0] != "-":
            break
        minuses = 1
        if s[1] == "-":
            minuses = 2
            if len(s) == 2:  # "--" ends the flags
                args.pop(0)
                break
        name = s[minuses:]
        if not name or name[0] in "-=":
            raise UsageError(f"bad flag syntax: {s}")
        args.pop(0)
        has_value = "=" in name
        value = ""
        if has_value:
            name, value = name.split("=", 1)
        if name in _UNSUPPORTED:
            raise UsageError(f"flag -{name} is a nats-server option that {PROG} does not support")
        if name not in _FLAGS:
            raise UsageError(f"flag provided but not defined: -{name}")
        dest, kind = _FLAGS[name]
        if kind == "bool":
            if has_value:
                if value in _TRUE:
                    flag_value = True
                elif value in _FALSE:
                    flag_value = False
                else:
                    raise UsageError(f'invalid boolean value "{value}" for -{name}: parse error')
            else:
                flag_value = True
            if dest == "debug_trace":
                given["debug"] = given["trace"] = flag_value
            else:
                given[dest] = flag_value
            continue
        if not has_value:
            if not args:
                raise UsageError(f"flag needs an argument: -{name}")
            value = args.pop(0)
        given[dest] = _convert(name, kind, value)
    if args:
        command = args[0]
        if command == "version":
            given["version"] = True
        elif command == "help":
            given["help"] = True
        else:
            raise UsageError(f'unrecognized command: "{command}"')
    return given


def _convert(name: str, kind: str, value: str) -> Any:
    if kind == "int":
        try:
            return int(value, 0)
        except ValueError:
            raise UsageError(f'invalid value "{value}" for flag -{name}: parse error') from None
    if kind == "size":
        from minijs.confparse import ConfigError, parse_text

        try:
            node = parse_text(f"v: {value}").entries["v"].node
        except ConfigError:
            node = None
        if node is None or node.kind != "int":
            raise UsageError(f'invalid value "{value}" for flag -{name}: parse error')
        return node.value
    return value


def build_config(given: dict[str, Any]) -> Any:
    """nats-server's defaults, then the config file, then the flags given on the command line."""
    from minijs.config import DEFAULT_PORT, RANDOM_PORT, ServerConfig

    config = ServerConfig(host="0.0.0.0", port=DEFAULT_PORT)
    path = given.get("config")
    if path:
        from minijs.confparse import load_config

        config = load_config(path, config)
    overrides: dict[str, Any] = {}
    for dest in ("host", "server_name", "pid_file", "log_file", "store_dir", "user", "password",
                 "token", "max_payload", "jetstream", "debug", "trace", "control", "control_user",
                 "ports_file_dir", "cluster_name", "preload"):
        if dest in given:
            overrides[dest] = given[dest]
    if "control" not in given and os.environ.get("MINIJS_CONTROL", "") not in ("", "0"):
        if os.environ["MINIJS_CONTROL"] not in _TRUE:
            raise UsageError(f'invalid value "{os.environ["MINIJS_CONTROL"]}" for MINIJS_CONTROL:'
                             " use 1 or 0")
        overrides["control"] = True
    if "preload" not in given and os.environ.get("MINIJS_PRELOAD"):
        overrides["preload"] = os.environ["MINIJS_PRELOAD"]
    # As in nats-server, a port flag of 0 means "not given"; -1 (any negative) means random.
    for dest, flag in (("port", "-p"), ("http_port", "-m")):
        value = given.get(dest, 0)
        if value > 65535:
            raise UsageError(f'invalid value "{value}" for flag {flag}: port out of range')
        if value:
            overrides[dest] = RANDOM_PORT if value < 0 else value
    size = given.get("cluster_size")
    if size is None and os.environ.get("MINIJS_CLUSTER_SIZE", "") != "":
        raw = os.environ["MINIJS_CLUSTER_SIZE"]
        if not raw.strip().isdigit():
            raise UsageError(f'invalid value "{raw}" for MINIJS_CLUSTER_SIZE: a whole number '
                             "from 1 to 5")
        size = int(raw)
    if size is not None:
        if not 1 <= size <= 5:
            raise UsageError(f'invalid value "{size}" for flag -cluster_size: a cluster runs 1 '
                             "to 5 nodes in this process (1 is a single server)")
        overrides["cluster_size"] = size
    if "cluster_tags" in given:
        import json

        raw = given["cluster_tags"]
        try:
            tags = json.loads(raw)
        except ValueError as exc:
            raise UsageError(f'invalid value "{raw}" for flag -cluster_tags: {exc}; give JSON '
                             'like {"n1": ["az:1"], "n2": ["az:2"]}') from None
        if not isinstance(tags, dict) or not all(
                isinstance(v, list) and all(isinstance(t, str) for t in v) for v in tags.values()):
            raise UsageError(f'invalid value "{raw}" for flag -cluster_tags: give JSON like '
                             '{"n1": ["az:1"], "n2": ["az:2"]} (node name -> list of tags)')
        overrides["cluster_tags"] = {k: tuple(v) for k, v in tags.items()}
    if "server_name" in overrides and " " in overrides["server_name"]:
        raise UsageError("server name cannot contain spaces")
    if any(dest.startswith("tls") for dest in given):
        overrides.update(_tls_flags(given, config))
    if "cluster_name" in overrides and " " in overrides["cluster_name"]:
        raise UsageError("cluster name cannot contain spaces")
    _route_overrides(config, given, overrides)
    config = config.with_overrides(**overrides)
    if config.lame_duck_grace_period >= config.lame_duck_duration:  # nats-server's validateOptions
        from minijs.protocol.gotime import go_duration

        raise UsageError(f"lame duck grace period "
                         f"({go_duration(round(config.lame_duck_grace_period * 1e9))}) should be "
                         f"strictly lower than lame duck duration "
                         f"({go_duration(round(config.lame_duck_duration * 1e9))})")
    return config


def _tls_flags(given: dict[str, Any], config: Any) -> dict[str, Any]:
    """``--tls``, ``--tlscert``, ``--tlskey``, ``--tlscacert``, ``--tlsverify`` as nats-server
    reads them: any of them replaces the config file's ``tls { }``; ``--tls=false`` removes
    it; the certificate and key are loaded now, with nats-server's refusals."""
    if given.get("tls") is False:
        return {"tls": None}
    from minijs.core.tls import check_files
    from minijs.tlsconfig import TlsConfigError, TlsOptions

    if not given.get("tls_cert"):
        raise UsageError("TLS Server certificate must be present and valid")
    if not given.get("tls_key"):
        raise UsageError("TLS Server private key must be present and valid")
    options = TlsOptions(cert_file=given["tls_cert"], key_file=given["tls_key"],
                         ca_file=given.get("tls_ca_cert", ""),
                         verify=bool(given.get("tls_verify")))
    try:
        check_files(options)
    except TlsConfigError as exc:
        raise UsageError(str(exc)) from None
    out: dict[str, Any] = {"tls": options}
    if config.tls is None and config.auth_timeout == 2.0:
        out["auth_timeout"] = options.timeout + 1.0  # nats-server's default with TLS
    return out


_ROUTE_FLAGS = ("cluster_listen", "routes", "cluster_advertise", "no_advertise",
                "connect_retries")


def _route_overrides(config: Any, given: dict[str, Any], overrides: dict[str, Any]) -> None:
    """The route flags over the config file's ``cluster { }`` block (nats-server's
    ``overrideCluster`` and ``mergeRoutes``), and the refusal of flags that conflict."""
    options = config.route_options
    size = overrides.get("cluster_size", config.cluster_size)
    if any(flag in given for flag in _ROUTE_FLAGS):
        from dataclasses import replace

        from minijs.routeconfig import (RouteOptionError, RouteOptions, parse_listen_url,
                                        parse_routes_flag)

        fields: dict[str, Any] = {}
        try:
            if "cluster_listen" in given:
                if not given["cluster_listen"].strip():
                    options = None  # an empty --cluster turns clustering off
                else:
                    host, port, user, password = parse_listen_url(given["cluster_listen"])
                    if port == 0 and not given["cluster_listen"].strip().endswith(":-1"):
                        options = None  # port 0: no route listener, as nats-server
                    else:
                        fields.update(host=host, port=port, user=user, password=password)
            if "routes" in given:
                fields["routes"] = parse_routes_flag(given["routes"])
        except RouteOptionError as exc:
            raise UsageError(str(exc)) from None
        if "cluster_advertise" in given:
            fields["advertise"] = given["cluster_advertise"]
        if "no_advertise" in given:
            fields["no_advertise"] = given["no_advertise"]
        if "connect_retries" in given:
            fields["connect_retries"] = given["connect_retries"]
        listening = options is not None or "host" in fields
        if not listening:
            if fields.get("routes"):
                raise UsageError("solicited routes require cluster capabilities, e.g. "
                                 "--cluster")
            options = None
        else:
            options = replace(options or RouteOptions(), **fields)
        overrides["route_options"] = options
    if options is not None and size != 1:
        raise UsageError("--cluster_size runs every node in this process and --cluster/--routes "
                         "(or a cluster { listen } block) join separate processes: use one or "
                         "the other (drop --cluster_size to join processes by routes, or drop "
                         "the route options to run the nodes in one process)")


CLOCKS = ("wall", "virtual", "auto")


def clock_choice(given: dict[str, Any]) -> str:
    """The server clock from ``--clock`` or ``MINIJS_CLOCK`` (default: wall)."""
    value = given.get("clock") or os.environ.get("MINIJS_CLOCK") or "wall"
    if value not in CLOCKS:
        raise UsageError(f'invalid value "{value}" for flag -clock: use wall, virtual or auto')
    return value


def event_loop_choice(given: dict[str, Any]) -> str:
    """``asyncio`` or ``uvloop``, from ``--loop`` or ``MINIJS_LOOP`` (default asyncio)."""
    from minijs.eventloop import LoopError, loop_choice

    try:
        return loop_choice(given.get("loop"))
    except LoopError as exc:
        raise UsageError(str(exc)) from None


def version_line() -> str:
    from minijs.config import NATS_SERVER_VERSION

    try:
        from minijs import __version__ as version
    except ImportError:  # pragma: no cover - a partial install
        from importlib.metadata import version as _dist_version

        version = _dist_version("minijs")
    return f"{PROG}: v{version} (nats-server v{NATS_SERVER_VERSION} compatible)"


def main(argv: list[str] | None = None) -> int:
    """Run the server until SIGTERM/SIGINT; return the process exit code.

    Python's cyclic garbage collector is off from here until the server is ready (or the
    start has failed): a start imports some thirty modules and builds the server, allocating
    objects that all live on, so no collection during it can free anything, and the ones
    that would run cost about a sixth of the import time. Then those objects are frozen
    (``gc.freeze()``), out of every later collection's sight: turned back on over them, the
    collector's first pass would walk them all, some 8 ms, just as the first client connects.
    """
    argv = sys.argv[1:] if argv is None else argv
    import gc

    collecting = gc.isenabled()  # (a process that had it off keeps it off)
    frozen = False

    def collect_again() -> None:
        nonlocal frozen
        if collecting:
            if not frozen:
                frozen = True
                gc.freeze()
            gc.enable()

    gc.disable()
    try:
        return _main(argv, collect_again)
    finally:
        collect_again()


def _main(argv: list[str], started: Callable[[], None]) -> int:
    if argv and argv[0] in MANAGE_COMMANDS:
        from minijs.manage import main as manage_main

        return manage_main(list(argv))
    if argv and argv[0] == "conformance":
        return _conformance(list(argv[1:]))
    try:
        given = parse_args(argv)
    except UsageError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        print(f"Run '{PROG} -h' for the list of flags.", file=sys.stderr)
        return 1
    if given.get("help"):
        sys.stdout.write(USAGE)
        return 0
    if given.get("version"):
        print(version_line())
        return 0
    if given.get("signal"):  # as nats-server: before the config file is read
        from minijs.signals import SignalError, process_signal

        try:
            process_signal(given["signal"])
        except SignalError as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 1
        return 0
    from minijs.config import ConfigError

    try:
        config = build_config(given)
        clock = clock_choice(given)
        loop = event_loop_choice(given)
    except (ConfigError, UsageError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    if given.get("check_config"):
        path = given.get("config")
        if not path:
            print(f"{PROG}: must specify [-c, --config] option to check configuration file "
                  "syntax", file=sys.stderr)
            return 1
        from minijs.confparse import config_digest

        print(f"{PROG}: configuration file {path} is valid ({config_digest(path)})",
              file=sys.stderr)
        return 0
    from minijs.log import Logger

    logger = Logger(debug=config.debug, trace=config.trace)
    if config.log_file:
        try:
            logger.use_file(config.log_file)  # the logger owns it: SIGUSR1 reopens it
        except OSError as exc:
            print(f"{PROG}: error opening log file {config.log_file}: {exc.strerror}",
                  file=sys.stderr)
            return 1
    try:
        return _run(config, logger, clock, loop, given, started)
    finally:
        logger.use_file(None)


def _conformance(argv: list[str]) -> int:
    """``minijs conformance ...``: the conformance runner shipped beside minijs."""
    try:
        from conformance.__main__ import main as conformance_main
    except ImportError as exc:  # a partial install: the package is in every wheel
        print(f"{PROG} conformance: the conformance package is not installed ({exc}); "
              "reinstall minijs with the 'conformance' extra", file=sys.stderr)
        return 2
    return conformance_main(argv, prog=f"{PROG} conformance")


def _run(config: Any, logger: Any, clock: str = "wall", loop: str = "asyncio",
         given: dict[str, Any] | None = None, started: Callable[[], None] = lambda: None) -> int:
    import asyncio

    from minijs.eventloop import loop_factory

    try:
        with asyncio.Runner(loop_factory=loop_factory(loop)) as runner:
            return runner.run(_serve(config, logger, clock, given, started))
    except KeyboardInterrupt:  # a SIGINT before the handlers were installed
        return 130


async def _serve(config: Any, logger: Any, clock: str = "wall",
                 given: dict[str, Any] | None = None,
                 started: Callable[[], None] = lambda: None) -> int:
    """Start, write the pid file, wait for SIGTERM/SIGINT, stop gracefully; ``started`` is
    called once the start is over, whether the server came up or not."""
    import asyncio
    import signal

    from minijs.server import Server

    server = Server(config, logger=logger, clock=clock)
    if given is not None and given.get("config"):  # SIGHUP reloads the file, flags over it
        server.config_file = given["config"]
        server.config_loader = lambda: build_config(given)
    loop = asyncio.get_running_loop()
    stop_requested = asyncio.Event()
    main_task = asyncio.current_task()

    lame_duck: list[asyncio.Task[None]] = []

    def on_signal(name: str) -> None:
        logger.info(f'Trapped "{name}" signal')
        if name == "terminated" and server.lame_duck:
            return  # nats-server: SIGTERM does not cut a lame duck mode short
        if stop_requested.is_set():  # a second signal: stop waiting for a graceful shutdown
            assert main_task is not None
            main_task.cancel()
        stop_requested.set()

    async def lame_duck_then_stop() -> None:
        await server.lame_duck_mode()
        stop_requested.set()

    def on_lame_duck_signal() -> None:
        logger.info('Trapped "user defined signal 2" signal')
        if server.running and not server.lame_duck:
            lame_duck.append(asyncio.ensure_future(lame_duck_then_stop()))

    def on_reload_signal() -> None:
        logger.info('Trapped "hangup" signal')
        from minijs.reload import ReloadError

        try:
            server.reload()
        except ReloadError:
            pass  # logged by reload(); the server goes on with the configuration it had

    def on_reopen_signal() -> None:
        logger.info('Trapped "user defined signal 1" signal')
        server.reopen_log_file()

    untrap = _trap_signals(loop, ((signal.SIGTERM, on_signal, ("terminated",)),
                                  (signal.SIGINT, on_signal, ("interrupt",)),
                                  (signal.SIGUSR2, on_lame_duck_signal, ()),
                                  (signal.SIGHUP, on_reload_signal, ()),
                                  (signal.SIGUSR1, on_reopen_signal, ())))
    try:
        if config.pid_file:  # before "Server is ready", as nats-server does
            try:
                _write_pid_file(config.pid_file)
            except OSError as exc:
                logger.fatal(f"Could not write pidfile: {exc}")
                return 1
        from minijs.jetstream.storedir import StoreDirError
        from minijs.server import StartupError

        try:
            await server.start()
        except StartupError as exc:
            logger.fatal(str(exc))
            return 1
        except StoreDirError as exc:
            logger.info("Starting JetStream")
            logger.fatal(f"Can't start JetStream: {exc}")
            return 1
        except OSError as exc:
            logger.fatal(_start_error(config, exc))
            return 1
        finally:
            started()
        from minijs.eventloop import describe

        logger.debug(f"Event loop: {describe(loop)}")  # minijs only: nats-server has no such line
        await stop_requested.wait()
        await server.stop()  # logs "Initiating Shutdown..." and "Server Exiting.."
        return 0
    except asyncio.CancelledError:
        return 1
    finally:
        untrap()


def _trap_signals(loop: Any, traps: Any) -> Callable[[], None]:
    """Have each ``(signal, handler, args)`` of ``traps`` call ``handler(*args)`` on ``loop``
    when the signal arrives, as ``loop.add_signal_handler`` does; returns what puts the
    signals' previous handling back. On asyncio's own loops the signal's Python handler hands
    the call to the loop (``call_soon_threadsafe``), and a wakeup fd the loop watches makes
    sure the loop wakes to run that handler: ``add_signal_handler`` does the same, but checks
    the signal against every valid one on each call, about a millisecond of a start. Other
    loops (uvloop) get ``add_signal_handler``."""
    import asyncio
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None  # only the main thread can trap signals (as add_signal_handler)
    if not isinstance(loop, asyncio.BaseEventLoop):
        added = []
        for signum, handler, args in traps:
            try:
                loop.add_signal_handler(signum, handler, *args)
                added.append(signum)
            except (NotImplementedError, RuntimeError, AttributeError):  # pragma: no cover
                pass

        def remove() -> None:
            for signum in added:
                loop.remove_signal_handler(signum)
        return remove

    import socket

    def deliver(handler: Callable[..., None], args: tuple) -> Callable[[int, Any], None]:
        def on_signal(signum: int, frame: Any) -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(handler, *args)
        return on_signal

    # A signal that lands just before the loop blocks in select() sets only a flag: the
    # Python handler would wait for the next wakeup. The wakeup fd, written by the signal's C
    # handler, is that wakeup (as add_signal_handler arranges it).
    wakeup, woken = socket.socketpair()
    wakeup.setblocking(False)
    woken.setblocking(False)
    loop.add_reader(woken.fileno(), _drain, woken)
    wakeup_before = signal.set_wakeup_fd(wakeup.fileno())
    previous = [(signum, signal.signal(signum, deliver(handler, args)))
                for signum, handler, args in traps]

    def untrap() -> None:
        for signum, before in previous:
            signal.signal(signum, signal.SIG_DFL if before is None else before)
        signal.set_wakeup_fd(wakeup_before)
        loop.remove_reader(woken.fileno())
        wakeup.close()
        woken.close()

    return untrap


def _drain(sock: Any) -> None:
    """Read what the signals' C handler wrote (their numbers: the Python handlers say more)."""
    try:
        while sock.recv(4096):
            pass
    except (BlockingIOError, InterruptedError):
        pass


def _start_error(config: Any, exc: OSError) -> str:
    """nats-server's fatal line for a port it cannot bind."""
    from minijs.monitor import MonitorError

    if isinstance(exc, MonitorError):
        return str(exc)
    reason = exc.strerror or str(exc)
    if "): " in reason:  # asyncio: "error while attempting to bind on address (...): why"
        reason = reason.rsplit("): ", 1)[1]
    host = config.host
    port = config.port if config.port > 0 else 0
    hp = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if host.startswith("["):  # "-a [::1]": Go cannot split "[[::1]]:port"
        return f'Error listening on port: {hp}, "listen tcp: address {hp}: missing port in address"'
    return f'Error listening on port: {hp}, "listen tcp {hp}: bind: {reason}"'


def _write_pid_file(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(str(os.getpid()))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
