"""``minijs stream|consumer|pub|sub|req|kv ...``: manage any NATS server from the shell.

The seeds' workflows (add a stream, add a consumer, look at its state, fetch the next
message) without the Go ``nats`` CLI, against minijs or nats-server alike. Flags are named as
the ``nats`` CLI names them. Nothing ever prompts: a missing required value is an error naming
its flag, and ``--defaults`` takes every default. nats-py is imported only when a command runs,
so the server command (``minijs -js``) stays fast.
"""
from __future__ import annotations

import sys
from typing import Any

from minijs.manage._common import (PROG, CommandError, Output, Parser, UsageError, _Exit,
                                   connection_options, server_url)

#: The first words that hand the command line over to this package.
COMMANDS = ("stream", "consumer", "pub", "sub", "req", "request", "kv")



def build_parser() -> Parser:
    from minijs.manage import consumer, kv, pubsub, stream

    common = connection_options()
    parser = Parser(prog=PROG, description="Manage a NATS server.", add_help=True)
    groups = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    groups.required = True
    stream.register(groups, common)
    consumer.register(groups, common)
    pubsub.register(groups, common)
    kv.register(groups, common)
    return parser


def main(argv: list[str], out: Any = None, err: Any = None) -> int:
    """Run one management command; return the exit code (0 ok, 1 any failure)."""
    import asyncio

    err = err or sys.stderr
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except _Exit as exc:  # -h
        return exc.status
    except UsageError as exc:
        err.write(f"{exc}\nRun '{PROG} {argv[0] if argv else ''} -h' for the flags.\n")
        return 1
    output = Output(args.json, out, err)
    try:
        return asyncio.run(_run(args, output)) or 0
    except UsageError as exc:
        err.write(f"{PROG}: {exc}\n")
        return 1
    except CommandError as exc:
        err.write(f"{PROG}: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return 130


async def _run(args: Any, out: Output) -> int:
    import asyncio

    import nats.errors
    from nats.js.errors import APIError, ServiceUnavailableError

    nc = await _connect(args)
    try:
        try:
            return await args.handler(args, nc, out) or 0
        except APIError as exc:
            if exc.code == 503 or isinstance(exc, ServiceUnavailableError):
                raise CommandError(_no_jetstream(args)) from None
            desc = exc.description or type(exc).__name__
            raise CommandError(f"JetStream API error: {desc} (code {exc.code}, "
                               f"err_code {exc.err_code})") from None
        except nats.errors.NoRespondersError:
            if getattr(args, "needs_js", False):
                raise CommandError(_no_jetstream(args)) from None
            raise CommandError(f"no responders on {args.subject!r}") from None
        except (nats.errors.TimeoutError, asyncio.TimeoutError):
            if getattr(args, "needs_js", False):
                raise CommandError(f"timed out waiting for the JetStream API on "
                                   f"{server_url(args)} (is JetStream enabled? -js)") from None
            raise CommandError(f"timed out after {args.timeout}") from None
    finally:
        try:
            await asyncio.wait_for(nc.close(), 2.0)
        except Exception:
            pass


async def _connect(args: Any) -> Any:
    from minijs.manage._common import connect

    return await connect(args)


def _no_jetstream(args: Any) -> str:
    return (f"JetStream is not enabled on {server_url(args)} (no responders for $JS.API); "
            "start the server with -js")
