"""``minijs consumer add|ls|info|next|rm``."""
from __future__ import annotations

import argparse
from typing import Any

from minijs.manage._common import (CommandError, Output, UsageError, enum_value, human_duration,
                                   message_dict, parse_duration, print_message)


def register(groups: Any, common: argparse.ArgumentParser) -> None:
    top = groups.add_parser("consumer", help="manage JetStream consumers",
                            description="Manage JetStream consumers.")
    sub = top.add_subparsers(dest="action", metavar="ACTION", parser_class=type(top))
    sub.required = True

    p = sub.add_parser("add", parents=[common], help="create a durable consumer",
                       description="Create a durable consumer. Give --pull (or --target "
                                   "SUBJECT for push) unless --defaults (a pull consumer).")
    p.add_argument("stream", metavar="STREAM")
    p.add_argument("consumer", metavar="NAME")
    p.add_argument("--pull", action="store_true", help="a pull consumer")
    p.add_argument("--target", metavar="SUBJECT", help="push: deliver to this subject")
    p.add_argument("--ack", choices=("explicit", "all", "none"),
                   help="acknowledgement policy (default explicit)")
    p.add_argument("--filter", action="append", metavar="SUBJECT",
                   help="only messages on these subjects (repeatable)")
    p.add_argument("--deliver", metavar="POLICY",
                   help="where to start: all (default), last, new, last_per_subject, a stream "
                        "sequence, or a duration back from now (1h)")
    p.add_argument("--replay", choices=("instant", "original"), help="replay policy")
    p.add_argument("--max-deliver", type=int, metavar="N", help="maximum deliveries")
    p.add_argument("--max-pending", type=int, metavar="N", help="maximum unacknowledged")
    p.add_argument("--wait", metavar="DURATION", help="acknowledgement wait (ack_wait)")
    p.add_argument("--description", help="description")
    p.add_argument("--defaults", action="store_true", help="take every default, ask nothing")
    p.set_defaults(handler=add)

    p = sub.add_parser("ls", aliases=["list"], parents=[common], help="list a stream's consumers")
    p.add_argument("stream", metavar="STREAM")
    p.add_argument("--names", "-n", action="store_true", help="only the names")
    p.set_defaults(handler=ls)

    p = sub.add_parser("info", parents=[common], help="a consumer's configuration and state")
    p.add_argument("stream", metavar="STREAM")
    p.add_argument("consumer", metavar="NAME")
    p.set_defaults(handler=info)

    p = sub.add_parser("next", parents=[common], help="fetch (and ack) the next message(s)",
                       description="Fetch the next message from a pull consumer, print it and "
                                   "acknowledge it.")
    p.add_argument("stream", metavar="STREAM")
    p.add_argument("consumer", metavar="NAME")
    p.add_argument("--count", type=int, default=1, metavar="N", help="messages to fetch")
    p.add_argument("--no-ack", dest="ack", action="store_false", help="do not acknowledge")
    p.set_defaults(handler=next_)

    p = sub.add_parser("rm", aliases=["delete"], parents=[common], help="delete a consumer")
    p.add_argument("stream", metavar="STREAM")
    p.add_argument("consumer", metavar="NAME")
    p.add_argument("-f", "--force", action="store_true", help="do not refuse")
    p.set_defaults(handler=rm)
    for action in sub.choices.values():
        action.set_defaults(needs_js=True)


def _deliver(value: str, params: dict[str, Any]) -> None:
    import datetime

    from nats.js.api import DeliverPolicy

    named = {"all": "all", "last": "last", "new": "new", "last_per_subject": "last_per_subject",
             "subject": "last_per_subject"}
    if value in named:
        params["deliver_policy"] = DeliverPolicy(named[value])
    elif value.isdigit():
        params["deliver_policy"] = DeliverPolicy.BY_START_SEQUENCE
        params["opt_start_seq"] = int(value)
    else:
        seconds = parse_duration(value, "--deliver")
        start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=seconds)
        params["deliver_policy"] = DeliverPolicy.BY_START_TIME
        params["opt_start_time"] = start.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def add(args: argparse.Namespace, nc: Any, out: Output) -> int:
    from nats.js.api import AckPolicy, ConsumerConfig, ReplayPolicy

    if args.pull and args.target:
        raise UsageError("consumer add: --pull and --target exclude each other")
    if not args.pull and not args.target and not args.defaults:
        raise UsageError("consumer add: missing --pull (or --target SUBJECT for a push "
                         "consumer); pass --defaults for a pull consumer")
    params: dict[str, Any] = {"durable_name": args.consumer,
                              "ack_policy": AckPolicy(args.ack or "explicit")}
    if args.target:
        params["deliver_subject"] = args.target
    if args.filter:
        subjects = [s.strip() for v in args.filter for s in v.split(",") if s.strip()]
        if len(subjects) == 1:
            params["filter_subject"] = subjects[0]
        else:
            params["filter_subjects"] = subjects
    if args.deliver:
        _deliver(args.deliver, params)
    if args.replay:
        params["replay_policy"] = ReplayPolicy(args.replay)
    if args.max_deliver is not None:
        params["max_deliver"] = args.max_deliver
    if args.max_pending is not None:
        params["max_ack_pending"] = args.max_pending
    if args.wait is not None:
        params["ack_wait"] = parse_duration(args.wait, "--wait")
    if args.description is not None:
        params["description"] = args.description
    js = nc.jetstream(timeout=parse_duration(args.timeout, "--timeout"))
    ci = await js.add_consumer(args.stream, ConsumerConfig(**params))
    _show(out, ci, f"Consumer {args.stream} > {args.consumer} was created")
    return 0


async def ls(args: argparse.Namespace, nc: Any, out: Output) -> int:
    js = nc.jetstream(timeout=parse_duration(args.timeout, "--timeout"))
    infos = sorted(await js.consumers_info(args.stream), key=lambda i: i.name or "")
    if out.as_json:
        out.json([i.name for i in infos] if args.names else [i.as_dict() for i in infos])
        return 0
    if args.names:
        for i in infos:
            out.line(i.name)
        return 0
    if not infos:
        out.line(f"No consumers defined on stream {args.stream}")
        return 0
    out.table(["Name", "Type", "Filter", "Ack Pending", "Unprocessed", "Last Delivered"],
              [[i.name, "push" if i.config.deliver_subject else "pull",
                _filters(i.config), i.num_ack_pending, i.num_pending,
                i.delivered.stream_seq if i.delivered else 0] for i in infos],
              title=f"Consumers on {args.stream} ({len(infos)})")
    return 0


def _filters(config: Any) -> str:
    return ", ".join(config.filter_subjects or ([config.filter_subject]
                                                if config.filter_subject else [])) or "-"


async def info(args: argparse.Namespace, nc: Any, out: Output) -> int:
    js = nc.jetstream(timeout=parse_duration(args.timeout, "--timeout"))
    ci = await js.consumer_info(args.stream, args.consumer)
    _show(out, ci, f"Information for Consumer {args.stream} > {args.consumer}")
    return 0


def _show(out: Output, ci: Any, title: str) -> None:
    if out.as_json:
        out.json(ci.as_dict())
        return
    c = ci.config
    out.pairs(title, [
        ("Durable Name", c.durable_name or "-"),
        ("Pull Mode", "false" if c.deliver_subject else "true"),
        ("Delivery Subject", c.deliver_subject or "-"),
        ("Filter Subject", _filters(c)),
        ("Deliver Policy", enum_value(c.deliver_policy)),
        ("Ack Policy", enum_value(c.ack_policy)),
        ("Ack Wait", human_duration(c.ack_wait)),
        ("Replay Policy", enum_value(c.replay_policy)),
        ("Max Ack Pending", c.max_ack_pending if c.max_ack_pending is not None else "-"),
        ("", None),
        ("Last Delivered Message", f"Consumer sequence: {ci.delivered.consumer_seq} "
                                   f"Stream sequence: {ci.delivered.stream_seq}"),
        ("Acknowledgment Floor", f"Consumer sequence: {ci.ack_floor.consumer_seq} "
                                 f"Stream sequence: {ci.ack_floor.stream_seq}"),
        ("Outstanding Acks", ci.num_ack_pending),
        ("Redelivered Messages", ci.num_redelivered),
        ("Unprocessed Messages", ci.num_pending),
        ("Waiting Pulls", ci.num_waiting),
    ])


async def next_(args: argparse.Namespace, nc: Any, out: Output) -> int:
    import nats.errors

    timeout = parse_duration(args.timeout, "--timeout")
    js = nc.jetstream(timeout=timeout)
    await js.consumer_info(args.stream, args.consumer)  # a clear API error if it is missing
    sub = await js.pull_subscribe_bind(args.consumer, args.stream)
    got: list[dict[str, Any]] = []
    try:
        while len(got) < args.count:
            try:
                msgs = await sub.fetch(args.count - len(got), timeout=timeout)
            except nats.errors.TimeoutError:
                break
            for msg in msgs:
                md = msg.metadata
                if args.ack:
                    await msg.ack_sync(timeout=timeout)
                d = message_dict(msg.subject, msg.data, msg.headers,
                                 stream_seq=md.sequence.stream,
                                 consumer_seq=md.sequence.consumer,
                                 pending=md.num_pending, delivered=md.num_delivered,
                                 acked=args.ack)
                got.append(d)
                if not out.as_json:
                    print_message(out, f"[{md.sequence.consumer}] subject: {msg.subject} "
                                       f"(stream seq {md.sequence.stream}, pending "
                                       f"{md.num_pending})", msg.data, msg.headers)
                    out.line("Acknowledged message" if args.ack else "Not acknowledged")
                    out.line()
    finally:
        try:
            await sub.unsubscribe()
        except Exception:
            pass
    if out.as_json:
        out.json(got[0] if args.count == 1 and got else got)
    if not got:
        raise CommandError(f"no message from {args.stream} > {args.consumer} within "
                           f"{args.timeout}")
    return 0


async def rm(args: argparse.Namespace, nc: Any, out: Output) -> int:
    if not args.force:
        raise UsageError(f"consumer rm: refusing to delete {args.stream} > {args.consumer} "
                         "without -f/--force")
    js = nc.jetstream(timeout=parse_duration(args.timeout, "--timeout"))
    await js.delete_consumer(args.stream, args.consumer)
    if out.as_json:
        out.json({"success": True, "stream": args.stream, "consumer": args.consumer})
    else:
        out.line(f"Deleted consumer {args.stream} > {args.consumer}")
    return 0
