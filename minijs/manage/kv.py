"""``minijs kv add|put|get|del|ls|watch|rm``: key-value buckets."""
from __future__ import annotations

import argparse
from typing import Any

from minijs.manage._common import (CommandError, Output, UsageError, enum_value, human_bytes,
                                   human_duration, parse_duration, parse_size)


def register(groups: Any, common: argparse.ArgumentParser) -> None:
    top = groups.add_parser("kv", help="key-value buckets", description="Key-value buckets.")
    sub = top.add_subparsers(dest="action", metavar="ACTION", parser_class=type(top))
    sub.required = True

    p = sub.add_parser("add", parents=[common], help="create a bucket")
    p.add_argument("bucket", metavar="BUCKET")
    p.add_argument("--history", type=int, default=1, metavar="N", help="values kept per key")
    p.add_argument("--ttl", metavar="DURATION", help="how long values live (default forever)")
    p.add_argument("--storage", choices=("file", "memory"), default="file")
    p.add_argument("--max-value-size", metavar="SIZE", help="largest value")
    p.add_argument("--max-bucket-size", metavar="SIZE", help="largest bucket")
    p.add_argument("--description", help="description")
    p.add_argument("--defaults", action="store_true", help="take every default (they are)")
    p.set_defaults(handler=add)

    p = sub.add_parser("put", parents=[common], help="store a value")
    p.add_argument("bucket", metavar="BUCKET")
    p.add_argument("key", metavar="KEY")
    p.add_argument("value", metavar="VALUE")
    p.set_defaults(handler=put)

    p = sub.add_parser("get", parents=[common], help="print a value")
    p.add_argument("bucket", metavar="BUCKET")
    p.add_argument("key", metavar="KEY")
    p.add_argument("--raw", action="store_true", help="only the value")
    p.set_defaults(handler=get)

    p = sub.add_parser("del", aliases=["delete"], parents=[common], help="delete a key")
    p.add_argument("bucket", metavar="BUCKET")
    p.add_argument("key", metavar="KEY")
    p.set_defaults(handler=delete)

    p = sub.add_parser("ls", aliases=["list"], parents=[common],
                       help="buckets, or with BUCKET its keys")
    p.add_argument("bucket", metavar="BUCKET", nargs="?")
    p.set_defaults(handler=ls)

    p = sub.add_parser("watch", parents=[common], help="print updates",
                       description="Print the current values, then updates, until --count "
                                   "entries were printed or --timeout passes without one.")
    p.add_argument("bucket", metavar="BUCKET")
    p.add_argument("key", metavar="KEY", nargs="?", default=">")
    p.add_argument("--count", type=int, default=0, metavar="N", help="stop after N entries")
    p.set_defaults(handler=watch)

    p = sub.add_parser("rm", parents=[common], help="delete a bucket")
    p.add_argument("bucket", metavar="BUCKET")
    p.add_argument("-f", "--force", action="store_true", help="do not refuse")
    p.set_defaults(handler=rm)
    for action in sub.choices.values():
        action.set_defaults(needs_js=True)


def _js(args: argparse.Namespace, nc: Any) -> Any:
    return nc.jetstream(timeout=parse_duration(args.timeout, "--timeout"))


async def _bucket(js: Any, name: str) -> Any:
    from nats.js.errors import BucketNotFoundError

    try:
        return await js.key_value(name)
    except BucketNotFoundError:
        raise CommandError(f"no bucket {name!r}; create it with 'minijs kv add {name}'") from None


def _status(st: Any) -> dict[str, Any]:
    return {"bucket": st.bucket, "values": st.values, "history": st.history,
            "ttl": st.ttl, "bytes": st.stream_info.state.bytes,
            "storage": enum_value(st.stream_info.config.storage)}


async def add(args: argparse.Namespace, nc: Any, out: Output) -> int:
    from nats.js.api import KeyValueConfig, StorageType

    config: dict[str, Any] = {"bucket": args.bucket, "history": args.history,
                              "storage": StorageType(args.storage)}
    if args.ttl:
        config["ttl"] = parse_duration(args.ttl, "--ttl")
    if args.max_value_size:
        config["max_value_size"] = parse_size(args.max_value_size, "--max-value-size")
    if args.max_bucket_size:
        config["max_bytes"] = parse_size(args.max_bucket_size, "--max-bucket-size")
    if args.description:
        config["description"] = args.description
    kv = await _js(args, nc).create_key_value(KeyValueConfig(**config))
    st = await kv.status()
    if out.as_json:
        out.json(_status(st))
    else:
        out.pairs(f"Information for Key-Value Store Bucket {args.bucket}", [
            ("History", st.history), ("TTL", human_duration(st.ttl)),
            ("Storage", enum_value(st.stream_info.config.storage)), ("Values", st.values)])
    return 0


async def put(args: argparse.Namespace, nc: Any, out: Output) -> int:
    kv = await _bucket(_js(args, nc), args.bucket)
    rev = await kv.put(args.key, args.value.encode())
    if out.as_json:
        out.json({"bucket": args.bucket, "key": args.key, "revision": rev})
    else:
        out.line(args.value)
    return 0


async def get(args: argparse.Namespace, nc: Any, out: Output) -> int:
    from nats.js.errors import KeyNotFoundError

    kv = await _bucket(_js(args, nc), args.bucket)
    try:
        entry = await kv.get(args.key)
    except KeyNotFoundError:
        raise CommandError(f"key {args.key!r} not found in bucket {args.bucket!r}") from None
    value = (entry.value or b"").decode(errors="replace")
    if out.as_json:
        out.json({"bucket": args.bucket, "key": entry.key, "value": value,
                  "revision": entry.revision})
    elif args.raw:
        out.line(value)
    else:
        out.line(f"{args.bucket} > {entry.key} revision: {entry.revision}")
        out.line()
        out.line(value)
    return 0


async def delete(args: argparse.Namespace, nc: Any, out: Output) -> int:
    kv = await _bucket(_js(args, nc), args.bucket)
    await kv.delete(args.key)
    if out.as_json:
        out.json({"bucket": args.bucket, "key": args.key, "deleted": True})
    else:
        out.line(f"Deleted {args.bucket} > {args.key}")
    return 0


async def ls(args: argparse.Namespace, nc: Any, out: Output) -> int:
    from nats.js.errors import NoKeysError

    js = _js(args, nc)
    if args.bucket:
        kv = await _bucket(js, args.bucket)
        try:
            keys = sorted(await kv.keys())
        except NoKeysError:
            keys = []
        if out.as_json:
            out.json(keys)
        else:
            for key in keys:
                out.line(key)
            if not keys:
                out.line(f"No keys in bucket {args.bucket}")
        return 0
    names = sorted(i.config.name[3:] for i in await js.streams_info()
                   if (i.config.name or "").startswith("KV_"))
    statuses = [_status(await (await js.key_value(n)).status()) for n in names]
    if out.as_json:
        out.json(statuses)
    elif not statuses:
        out.line("No Key-Value buckets found")
    else:
        out.table(["Bucket", "Values", "History", "TTL", "Size"],
                  [[s["bucket"], s["values"], s["history"], human_duration(s["ttl"]),
                    human_bytes(s["bytes"])] for s in statuses],
                  title=f"Key-Value Buckets ({len(statuses)})")
    return 0


async def watch(args: argparse.Namespace, nc: Any, out: Output) -> int:
    import asyncio

    import nats.errors

    timeout = parse_duration(args.timeout, "--timeout")
    kv = await _bucket(_js(args, nc), args.bucket)
    watcher = await kv.watch(args.key)
    got: list[dict[str, Any]] = []
    try:
        while not args.count or len(got) < args.count:
            try:
                entry = await watcher.updates(timeout=timeout)
            except (asyncio.TimeoutError, nats.errors.TimeoutError):
                break
            if entry is None:  # the initial values are done
                continue
            op = entry.operation or "PUT"
            d = {"bucket": args.bucket, "key": entry.key, "revision": entry.revision,
                 "operation": op, "value": (entry.value or b"").decode(errors="replace")}
            got.append(d)
            if not out.as_json:
                out.line(f"[{op}] {args.bucket} > {entry.key}: {d['value']} "
                         f"(revision {entry.revision})")
                out.out.flush()
    finally:
        await watcher.stop()
    if out.as_json:
        out.json(got)
    if args.count and len(got) < args.count:
        raise CommandError(f"saw {len(got)} of {args.count} entries within {args.timeout}")
    return 0


async def rm(args: argparse.Namespace, nc: Any, out: Output) -> int:
    if not args.force:
        raise UsageError(f"kv rm: refusing to delete bucket {args.bucket} without -f/--force")
    await _js(args, nc).delete_key_value(args.bucket)
    if out.as_json:
        out.json({"success": True, "bucket": args.bucket})
    else:
        out.line(f"Deleted bucket {args.bucket}")
    return 0
