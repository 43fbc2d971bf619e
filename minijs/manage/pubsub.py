"""``minijs pub``, ``minijs sub``, ``minijs req``: core NATS from the shell."""
from __future__ import annotations

import argparse
import json
import time
from typing import Any

from minijs.manage._common import (CommandError, Output, UsageError, message_dict,
                                   parse_duration, print_message)


def _headers(values: list[str] | None) -> dict[str, str] | None:
    if not values:
        return None
    headers: dict[str, str] = {}
    for value in values:
        key, sep, val = value.partition(":")
        if not sep or not key.strip():
            raise UsageError(f'invalid header "{value}" for -H/--header (use KEY:VALUE)')
        headers[key.strip()] = val.strip()
    return headers


def _body(template: str, i: int) -> bytes:
    """``{{Count}}`` (or ``{{.Count}}``) in the body becomes the message number, from 1."""
    for token in ("{{.Count}}", "{{ .Count }}", "{{Count}}", "{{ Count }}"):
        template = template.replace(token, str(i))
    return template.encode()


def register(groups: Any, common: argparse.ArgumentParser) -> None:
    p = groups.add_parser("pub", parents=[common], help="publish messages",
                          description="Publish BODY to SUBJECT. {{Count}} in the body becomes "
                                      "the message number.")
    p.add_argument("subject", metavar="SUBJECT")
    p.add_argument("body", metavar="BODY", nargs="?", default="")
    p.add_argument("--count", type=int, default=1, metavar="N", help="messages to publish")
    p.add_argument("-H", "--header", action="append", metavar="KEY:VALUE", help="a header")
    p.add_argument("--jetstream", "--js", dest="jetstream", action="store_true",
                   help="publish to JetStream and wait for each acknowledgement")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    p.set_defaults(handler=pub)

    p = groups.add_parser("sub", parents=[common], help="print messages on a subject",
                          description="Print messages on SUBJECT until --count messages "
                                      "arrived (or --timeout passes without one, with "
                                      "--count); without --count, until interrupted.")
    p.add_argument("subject", metavar="SUBJECT")
    p.add_argument("--count", type=int, default=0, metavar="N", help="stop after N messages")
    p.add_argument("--queue", metavar="GROUP", help="queue group")
    p.set_defaults(handler=sub)

    p = groups.add_parser("req", aliases=["request"], parents=[common],
                          help="send a request, print the reply")
    p.add_argument("subject", metavar="SUBJECT")
    p.add_argument("body", metavar="BODY", nargs="?", default="")
    p.add_argument("-H", "--header", action="append", metavar="KEY:VALUE", help="a header")
    p.set_defaults(handler=req)


async def pub(args: argparse.Namespace, nc: Any, out: Output) -> int:
    if args.count < 1:
        raise UsageError(f"invalid value {args.count} for --count (must be at least 1)")
    timeout = parse_duration(args.timeout, "--timeout")
    headers = _headers(args.header)
    js = nc.jetstream(timeout=timeout) if args.jetstream else None
    acks: list[dict[str, Any]] = []
    progress = not args.quiet and args.count > 1
    started = last_report = time.monotonic()
    step = max(1, args.count // 10)
    if js is not None:
        args.needs_js = True
    for i in range(1, args.count + 1):
        data = _body(args.body, i)
        if js is not None:
            ack = await js.publish(args.subject, data, headers=headers, timeout=timeout)
            acks.append({"stream": ack.stream, "seq": ack.seq,
                         **({"duplicate": True} if ack.duplicate else {})})
        else:
            await nc.publish(args.subject, data, headers=headers)
        if progress and (i % step == 0 or i == args.count):
            now = time.monotonic()
            if i == args.count or now - last_report >= 0.2 or step > 1:
                out.note(f"Published {i}/{args.count} messages ({100 * i // args.count}%)")
                last_report = now
    await nc.flush(timeout=max(timeout, 1.0))
    elapsed = time.monotonic() - started
    if out.as_json:
        result: dict[str, Any] = {"subject": args.subject, "published": args.count}
        if js is not None:
            result["acks"] = acks
        out.json(result)
        return 0
    if js is not None:
        for ack in acks:
            out.line(f'Stored in stream {ack["stream"]} with sequence {ack["seq"]}')
    if args.count == 1:
        out.line(f'Published {len(_body(args.body, 1))} bytes to "{args.subject}"')
    else:
        out.line(f'Published {args.count} messages to "{args.subject}" in {elapsed:.2f}s')
    return 0


async def sub(args: argparse.Namespace, nc: Any, out: Output) -> int:
    import asyncio

    timeout = parse_duration(args.timeout, "--timeout")
    queue: asyncio.Queue[Any] = asyncio.Queue()
    s = await nc.subscribe(args.subject, queue=args.queue or "", cb=queue.put)
    await nc.flush()
    out.note(f'Subscribing on "{args.subject}"' + (f" ({args.count} messages)" if args.count
                                                    else ""))
    got: list[dict[str, Any]] = []
    try:
        while not args.count or len(got) < args.count:
            try:
                msg = await (asyncio.wait_for(queue.get(), timeout) if args.count
                             else queue.get())
            except asyncio.TimeoutError:
                break
            got.append(message_dict(msg.subject, msg.data, msg.headers, reply=msg.reply or None))
            if out.as_json:
                if not args.count:  # unbounded: one compact JSON object per line
                    out.line(json.dumps(got[-1], sort_keys=True))
            else:
                print_message(out, f"[#{len(got)}] Received on \"{msg.subject}\"", msg.data,
                              msg.headers)
                out.line()
            out.out.flush()
    finally:
        await s.unsubscribe()
    if out.as_json and args.count:
        out.json(got)
    if args.count and len(got) < args.count:
        raise CommandError(f"received {len(got)} of {args.count} messages within "
                           f"{args.timeout} of each other")
    return 0


async def req(args: argparse.Namespace, nc: Any, out: Output) -> int:
    timeout = parse_duration(args.timeout, "--timeout")
    msg = await nc.request(args.subject, args.body.encode(), timeout=timeout,
                           headers=_headers(args.header))
    if out.as_json:
        out.json(message_dict(msg.subject, msg.data, msg.headers))
    else:
        print_message(out, f'Received with reply on "{args.subject}"', msg.data, msg.headers)
    return 0
