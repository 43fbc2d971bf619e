"""``minijs stream add|ls|info|edit|purge|rm|get``."""
from __future__ import annotations

import argparse
from typing import Any

from minijs.manage._common import (Output, UsageError, enum_value, human_bytes, human_duration,
                                   message_dict, parse_duration, parse_size, print_message)

RETENTION = {"limits": "limits", "interest": "interest", "work": "workqueue",
             "workq": "workqueue", "workqueue": "workqueue"}


def _config_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--subjects", action="append", metavar="SUBJECTS",
                   help="subjects the stream captures (comma separated or repeated; "
                        "default with --defaults: the stream name)")
    p.add_argument("--storage", choices=("file", "memory"), help="storage backend (default file)")
    p.add_argument("--retention", choices=sorted(RETENTION),
                   help="retention policy (default limits)")
    p.add_argument("--discard", choices=("old", "new"), help="discard policy (default old)")
    p.add_argument("--max-msgs", metavar="N", type=int, help="maximum messages (-1 unlimited)")
    p.add_argument("--max-msgs-per-subject", metavar="N", type=int,
                   help="maximum messages per subject (-1 unlimited)")
    p.add_argument("--max-bytes", metavar="SIZE", help="maximum total size (-1 unlimited)")
    p.add_argument("--max-msg-size", metavar="SIZE", help="maximum message size (-1 unlimited)")
    p.add_argument("--max-age", metavar="DURATION", help="maximum message age (0 unlimited)")
    p.add_argument("--dupe-window", metavar="DURATION", help="duplicate detection window")
    p.add_argument("--replicas", type=int, metavar="N", help="replicas (default 1)")
    p.add_argument("--description", help="description")
    p.add_argument("--allow-direct", action="store_true", default=None,
                   help="allow direct message get")


def register(groups: Any, common: argparse.ArgumentParser) -> None:
    top = groups.add_parser("stream", help="manage JetStream streams",
                            description="Manage JetStream streams.")
    sub = top.add_subparsers(dest="action", metavar="ACTION", parser_class=type(top))
    sub.required = True

    p = sub.add_parser("add", parents=[common], help="create a stream",
                       description="Create a stream. --subjects is required unless --defaults.")
    p.add_argument("stream", metavar="STREAM", help="stream name")
    _config_flags(p)
    p.add_argument("--defaults", action="store_true", help="take every default, ask nothing")
    p.set_defaults(handler=add)

    p = sub.add_parser("edit", parents=[common], help="change a stream's configuration",
                       description="Change the flags given; everything else stays.")
    p.add_argument("stream", metavar="STREAM")
    _config_flags(p)
    p.set_defaults(handler=edit)

    p = sub.add_parser("ls", aliases=["list"], parents=[common], help="list streams")
    p.add_argument("--names", "-n", action="store_true", help="only the names")
    p.set_defaults(handler=ls)

    p = sub.add_parser("info", parents=[common], help="a stream's configuration and state")
    p.add_argument("stream", metavar="STREAM")
    p.set_defaults(handler=info)

    p = sub.add_parser("purge", parents=[common], help="remove a stream's messages")
    p.add_argument("stream", metavar="STREAM")
    p.add_argument("--subject", help="only messages on this subject")
    p.add_argument("--seq", type=int, help="only messages below this sequence")
    p.add_argument("--keep", type=int, help="keep this many newest messages")
    p.add_argument("-f", "--force", action="store_true", help="do not refuse")
    p.set_defaults(handler=purge)

    p = sub.add_parser("rm", aliases=["delete"], parents=[common], help="delete a stream")
    p.add_argument("stream", metavar="STREAM")
    p.add_argument("-f", "--force", action="store_true", help="do not refuse")
    p.set_defaults(handler=rm)

    p = sub.add_parser("get", parents=[common], help="one message by sequence (or --last-for)")
    p.add_argument("stream", metavar="STREAM")
    p.add_argument("seq", metavar="SEQ", type=int, nargs="?")
    p.add_argument("--last-for", metavar="SUBJECT", help="the last message on SUBJECT")
    p.set_defaults(handler=get)
    for action in sub.choices.values():
        action.set_defaults(needs_js=True)


def _params(args: argparse.Namespace) -> dict[str, Any]:
    """StreamConfig fields from the flags given (None: not given)."""
    from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType

    params: dict[str, Any] = {}
    if args.subjects:
        params["subjects"] = [s.strip() for v in args.subjects for s in v.split(",") if s.strip()]
    if args.storage:
        params["storage"] = StorageType(args.storage)
    if args.retention:
        params["retention"] = RetentionPolicy(RETENTION[args.retention])
    if args.discard:
        params["discard"] = DiscardPolicy(args.discard)
    if args.max_msgs is not None:
        params["max_msgs"] = args.max_msgs
    if args.max_msgs_per_subject is not None:
        params["max_msgs_per_subject"] = args.max_msgs_per_subject
    if args.max_bytes is not None:
        params["max_bytes"] = parse_size(args.max_bytes, "--max-bytes")
    if args.max_msg_size is not None:
        params["max_msg_size"] = parse_size(args.max_msg_size, "--max-msg-size")
    if args.max_age is not None:
        params["max_age"] = parse_duration(args.max_age, "--max-age")
    if args.dupe_window is not None:
        params["duplicate_window"] = parse_duration(args.dupe_window, "--dupe-window")
    if args.replicas is not None:
        params["num_replicas"] = args.replicas
    if args.description is not None:
        params["description"] = args.description
    if args.allow_direct:
        params["allow_direct"] = True
    return params


async def add(args: argparse.Namespace, nc: Any, out: Output) -> int:
    from nats.js.api import StreamConfig

    params = _params(args)
    if "subjects" not in params:
        if not args.defaults:
            raise UsageError("stream add: missing --subjects (the subjects the stream captures); "
                             "pass --defaults to use the stream name")
        params["subjects"] = [args.stream]
    js = nc.jetstream(timeout=parse_duration(args.timeout, "--timeout"))
    info_ = await js.add_stream(StreamConfig(name=args.stream, **params))
    _show(out, info_, f"Stream {args.stream} was created")
    return 0


async def edit(args: argparse.Namespace, nc: Any, out: Output) -> int:
    params = _params(args)
    if not params:
        raise UsageError("stream edit: nothing to change; give at least one flag such as "
                         "--subjects or --max-msgs")
    js = nc.jetstream(timeout=parse_duration(args.timeout, "--timeout"))
    current = await js.stream_info(args.stream)
    info_ = await js.update_stream(current.config.evolve(**params))
    _show(out, info_, f"Stream {args.stream} was updated")
    return 0


async def ls(args: argparse.Namespace, nc: Any, out: Output) -> int:
    js = nc.jetstream(timeout=parse_duration(args.timeout, "--timeout"))
    infos = sorted(await js.streams_info(), key=lambda i: i.config.name or "")
    if out.as_json:
        out.json([i.config.name for i in infos] if args.names else [i.as_dict() for i in infos])
        return 0
    if args.names:
        for i in infos:
            out.line(i.config.name)
        return 0
    if not infos:
        out.line("No streams defined")
        return 0
    out.table(["Name", "Subjects", "Storage", "Messages", "Size", "Last Message"],
              [[i.config.name, ", ".join(i.config.subjects or []),
                enum_value(i.config.storage), i.state.messages, human_bytes(i.state.bytes),
                i.state.last_seq] for i in infos],
              title=f"Streams ({len(infos)})")
    return 0


async def info(args: argparse.Namespace, nc: Any, out: Output) -> int:
    js = nc.jetstream(timeout=parse_duration(args.timeout, "--timeout"))
    _show(out, await js.stream_info(args.stream), f"Information for Stream {args.stream}")
    return 0


def _show(out: Output, si: Any, title: str) -> None:
    if out.as_json:
        out.json(si.as_dict())
        return
    c, s = si.config, si.state
    limit = lambda v: "unlimited" if v is None or v < 0 else v  # noqa: E731
    out.pairs(title, [
        ("Subjects", ", ".join(c.subjects or [])),
        ("Storage", enum_value(c.storage)),
        ("Replicas", c.num_replicas or 1),
        ("Retention", enum_value(c.retention)),
        ("Discard Policy", enum_value(c.discard)),
        ("Maximum Messages", limit(c.max_msgs)),
        ("Maximum Per Subject", limit(c.max_msgs_per_subject)),
        ("Maximum Bytes", limit(c.max_bytes)),
        ("Maximum Age", human_duration(c.max_age)),
        ("Duplicate Window", human_duration(c.duplicate_window)),
        ("", None),
        ("Messages", s.messages),
        ("Bytes", human_bytes(s.bytes)),
        ("First Sequence", s.first_seq),
        ("Last Sequence", s.last_seq),
        ("Active Consumers", s.consumer_count),
    ])


async def purge(args: argparse.Namespace, nc: Any, out: Output) -> int:
    if not args.force:
        raise UsageError(f"stream purge: refusing to purge {args.stream} without -f/--force")
    js = nc.jetstream(timeout=parse_duration(args.timeout, "--timeout"))
    await js.purge_stream(args.stream, seq=args.seq, subject=args.subject, keep=args.keep)
    si = await js.stream_info(args.stream)
    if out.as_json:
        out.json(si.as_dict())
    else:
        out.line(f"Purged stream {args.stream}: {si.state.messages} messages left")
    return 0


async def rm(args: argparse.Namespace, nc: Any, out: Output) -> int:
    if not args.force:
        raise UsageError(f"stream rm: refusing to delete {args.stream} without -f/--force")
    js = nc.jetstream(timeout=parse_duration(args.timeout, "--timeout"))
    await js.delete_stream(args.stream)
    if out.as_json:
        out.json({"success": True, "stream": args.stream})
    else:
        out.line(f"Deleted stream {args.stream}")
    return 0


async def get(args: argparse.Namespace, nc: Any, out: Output) -> int:
    if args.seq is None and not args.last_for:
        raise UsageError("stream get: give a sequence SEQ or --last-for SUBJECT")
    js = nc.jetstream(timeout=parse_duration(args.timeout, "--timeout"))
    if args.last_for:
        msg = await js.get_last_msg(args.stream, args.last_for)
    else:
        msg = await js.get_msg(args.stream, args.seq)
    if out.as_json:
        out.json(message_dict(msg.subject, msg.data, msg.headers, seq=msg.seq,
                              stream=args.stream))
        return 0
    when = f" at {msg.time:%Y-%m-%d %H:%M:%S}" if getattr(msg, "time", None) else ""
    print_message(out, f"Item: {args.stream}#{msg.seq} received{when} on Subject {msg.subject}",
                  msg.data, msg.headers)
    return 0
