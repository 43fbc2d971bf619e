"""``/minijs`` on the monitoring port: the server's state at a glance, in a browser.

A plain page rendered on the server, with a little script that fetches the state part again
(``/minijs?part=state``) every ``refresh`` seconds (default 1; ``?refresh=0`` stops it; the
"live" box pauses it) and swaps it in. No front-end build, no external resource: the page is
one HTML document with its CSS and script inline, and without JavaScript it is a snapshot.

What it shows: the server clock (kind, time, timers waiting on a virtual clock), streams,
consumers, pending acks, waiting pull requests, fault rules and the last injected faults, and
the connections count. :func:`cluster_section` is the place for cluster nodes and their
leaders: it renders nothing until minijs has clusters.

Invariants:

* read-only: it reads the server's inspection calls (``streams()``, ``consumer()``,
  ``fault_rules()``, ``fault_log()``, the clock) on the server's own event loop (the
  monitor's), and changes nothing;
* every value that comes from a client or a config (names, subjects, replies, descriptions) is
  HTML-escaped;
* long lists are cut (:data:`MAX_ROWS` rows per table, :data:`MAX_ACKS_PER_CONSUMER` pending
  acks per consumer) and the page says how many rows it left out.
"""
from __future__ import annotations

import html
import time
from typing import Any, Iterable

from minijs.config import NATS_SERVER_VERSION

MAX_ROWS = 500
MAX_ACKS_PER_CONSUMER = 50
MAX_FAULT_EVENTS = 20
DEFAULT_REFRESH = 1.0


class PageError(ValueError):
    """A query the page does not take (answered 400 with this text)."""


def render(server: Any, query: dict[str, str]) -> tuple[int, bytes, tuple]:
    """The answer to ``GET /minijs?...``: status, body, headers."""
    headers = (("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store"))
    try:
        part = query.get("part", "")
        if part not in ("", "state"):
            raise PageError(f"unknown part {part!r}: use part=state (or no part for the page)")
        refresh = _refresh(query.get("refresh"))
        body = state_html(server) if part == "state" else page_html(server, refresh)
    except PageError as exc:
        return 400, str(exc).encode(), (("Content-Type", "text/plain; charset=utf-8"),)
    return 200, body.encode(), headers


def _refresh(value: str | None) -> float:
    if value is None or value == "":
        return DEFAULT_REFRESH
    try:
        seconds = float(value)
    except ValueError:
        raise PageError(f"refresh={value!r}: give seconds (0 stops refreshing)") from None
    if not 0 <= seconds <= 3600:
        raise PageError(f"refresh={value!r}: between 0 and 3600 seconds")
    return seconds


def page_html(server: Any, refresh: float) -> str:
    """The whole page: head, the state part, the refreshing script."""
    name = _e(getattr(server, "server_name", "") or "")
    live = (f'<label><input type="checkbox" id="live" checked> refresh every {refresh:g} s'
            '</label>' if refresh else "refresh off")
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>minijs {name}</title>
<link rel="icon" href="data:,">
<style>{_CSS}</style>
</head>
<body>
<header>
<h1>minijs <span class="name">{name}</span></h1>
<p class="meta">nats-server v{NATS_SERVER_VERSION} compatible &middot; {live} &middot;
updated <span id="updated">{_e(time.strftime("%H:%M:%S"))}</span> &middot;
<a href="/">monitoring endpoints</a></p>
</header>
<main id="state">
{state_html(server)}
</main>
<script>
(function () {{
  var every = {refresh * 1000:.0f};
  var live = document.getElementById("live");
  var state = document.getElementById("state");
  var updated = document.getElementById("updated");
  if (!every) return;
  function refresh() {{
    if (live && !live.checked) return;
    fetch("/minijs?part=state", {{cache: "no-store"}}).then(function (r) {{
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    }}).then(function (text) {{
      state.innerHTML = text;
      updated.textContent = new Date().toLocaleTimeString();
      document.body.classList.remove("offline");
    }}).catch(function () {{
      updated.textContent = "server unreachable";
      document.body.classList.add("offline");
    }});
  }}
  setInterval(refresh, every);
}})();
</script>
</body>
</html>
"""


def state_html(server: Any) -> str:
    """The part of the page that refreshes: every section, in order."""
    streams = server.streams()
    consumers = []
    for s in streams:
        for name in s.consumers:
            try:
                consumers.append(server.consumer(s.name, name, account=s.account))
            except LookupError:  # removed between the two reads: nothing to show
                continue
    accounts = any(s.account != "$G" for s in streams)
    parts = [
        clock_section(server),
        streams_section(streams, accounts),
        consumers_section(consumers),
        pending_section(consumers, server.clock.time()),
        waiting_section(consumers),
        faults_section(server),
        cluster_section(server),
    ]
    return "\n".join(p for p in parts if p)


# ---------------------------------------------------------------------- sections


def clock_section(server: Any) -> str:
    clock = server.clock
    kind = type(clock).__name__.replace("Clock", "").lower() or "custom"
    now = clock.time()
    rows = [("kind", kind), ("time", _time(now)),
            ("connections", str(sum(1 for c in server.connections.values() if not c.closed)))]
    if getattr(clock, "virtual", False):
        pending = getattr(clock, "pending", None)
        next_due = getattr(clock, "next_due", None)
        if pending is not None:
            rows.append(("timers waiting", str(pending())))
        if next_due is not None:
            due = next_due(include_housekeeping=False)
            rows.append(("next timer", "none" if due is None else f"in {_secs(due)}"))
    cells = "".join(f'<div><dt>{_e(k)}</dt><dd data-key="{_e(k)}">{_e(v)}</dd></div>'
                    for k, v in rows)
    return f'<section id="clock"><h2>Server clock</h2><dl class="clock">{cells}</dl></section>'


def streams_section(streams: list[Any], accounts: bool) -> str:
    head = (["account"] if accounts else []) + [
        "stream", "storage", "subjects", "messages", "bytes", "first seq", "last seq",
        "consumers"]
    rows = []
    for s in streams:
        config = s.config
        subjects = config.get("subjects") or []
        source = ("mirror of " + config["mirror"].get("name", "")) if config.get("mirror") \
            else ", ".join(subjects)
        rows.append(([s.account] if accounts else []) + [
            s.name, config.get("storage", ""), source, s.messages, s.bytes, s.first_seq,
            s.last_seq, ", ".join(s.consumers) or "-"])
    return _table("streams", "Streams", head, rows, empty="no streams")


def consumers_section(consumers: list[Any]) -> str:
    head = ["stream", "consumer", "kind", "filter", "delivered (stream / consumer seq)",
            "ack floor (stream / consumer seq)", "num_pending", "ack pending", "redelivered",
            "waiting pulls", "state"]  # num_pending: not yet delivered, as in consumer info
    rows = []
    for c in consumers:
        config = c.config
        push = bool(config.get("deliver_subject"))
        filters = config.get("filter_subjects") or (
            [config["filter_subject"]] if config.get("filter_subject") else [])
        state = "paused" if c.paused else ("bound" if c.push_bound else
                                           ("unbound" if push else "active"))
        rows.append([c.stream, c.name, "push" if push else "pull", ", ".join(filters) or "-",
                     f"{c.delivered_stream_seq} / {c.delivered_consumer_seq}",
                     f"{c.ack_floor_stream_seq} / {c.ack_floor_consumer_seq}",
                     c.num_pending, c.num_ack_pending, c.num_redelivered,
                     "-" if push else len(c.waiting), state])
    return _table("consumers", "Consumers", head, rows, empty="no consumers")


def pending_section(consumers: list[Any], now: float) -> str:
    head = ["stream", "consumer", "stream seq", "consumer seq", "deliveries", "ack due"]
    rows: list[list[Any]] = []
    cut = 0
    for c in consumers:
        for ack in c.pending[:MAX_ACKS_PER_CONSUMER]:
            due = "queued for redelivery" if ack.due is None else (
                f"in {_secs(ack.due - now)}" if ack.due >= now else
                f"{_secs(now - ack.due)} ago")
            rows.append([c.stream, c.name, ack.stream_seq, ack.consumer_seq, ack.deliveries,
                         due])
        cut += max(len(c.pending) - MAX_ACKS_PER_CONSUMER, 0)
    return _table("pending", "Pending acks", head, rows, empty="no pending acks", cut=cut)


def waiting_section(consumers: list[Any]) -> str:
    head = ["stream", "consumer", "reply subject", "batch", "max bytes", "no wait", "expires"]
    rows = [[c.stream, c.name, w.reply, w.batch, w.max_bytes or "-",
             "yes" if w.no_wait else "no",
             "never" if w.expires_after is None else f"after {_secs(w.expires_after)}"]
            for c in consumers for w in c.waiting]
    return _table("waiting", "Waiting pull requests", head, rows,
                  empty="no pull request waiting")


def faults_section(server: Any) -> str:
    rules = server.fault_rules()
    log = server.fault_log()
    table = _table("fault-rules", "Fault rules", ["id", "rule", "fired"],
                   [[r.id, r.describe(), r.fired] for r in rules], empty="no fault rules")
    recent = log[-MAX_FAULT_EVENTS:]
    events = _table("fault-log", f"Last injected faults ({len(log)} in all)",
                    ["rule", "action", "subject", "detail", "at"],
                    [[f"#{e.rule}" if e.rule else "-", e.action, e.subject or "-", e.detail,
                      _time(e.at)] for e in reversed(recent)],
                    empty="no fault injected", level=3)
    return table.replace("</section>", events + "</section>")


def cluster_section(server: Any) -> str:
    """A cluster's nodes (up or down, the meta leader) and its replicated streams (leader, each
    replica's lag), as the node serving the page knows them. A single server has none, so
    nothing is rendered."""
    membership = getattr(server, "membership", None)
    cluster = getattr(membership, "cluster", None)
    if cluster is None:
        return ""
    snap = cluster.cluster()
    meta = snap.get("meta_leader")
    nodes = _table("cluster-nodes", f"cluster {snap['name']}: nodes",
                   ["node", "state", "client URL", "meta"],
                   ([n["name"], "up" if n["up"] else "down", n["client_url"],
                     "leader" if n["name"] == meta else ""] for n in snap["nodes"]),
                   empty="no nodes")
    streams = _table("cluster-streams", "replicated streams",
                     ["account", "stream", "leader", "replicas (lag)"],
                     ([s["account"], s["name"], s["leader"] or "none (election)",
                       ", ".join(f"{r['name']}" + ("" if r["lag"] in (0, None)
                                                   else f" ({r['lag']})")
                                 + ("" if r["up"] else " down") for r in s["replicas"])]
                      for s in snap["streams"]),
                     empty="no streams")
    return nodes + streams


# ---------------------------------------------------------------------- rendering


def _table(ident: str, title: str, head: list[str], rows: Iterable[list[Any]], *,
           empty: str, cut: int = 0, level: int = 2) -> str:
    rows = list(rows)
    if len(rows) > MAX_ROWS:
        cut += len(rows) - MAX_ROWS
        rows = rows[:MAX_ROWS]
    tag = "section" if level == 2 else "div"
    out = [f'<{tag} id="{ident}"><h{level}>{_e(title)} <span class="count">{len(rows) + cut}'
           f'</span></h{level}>']
    if not rows:
        out.append(f'<p class="empty">{_e(empty)}</p>')
    else:
        out.append("<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head)
                   + "</tr></thead><tbody>")
        for row in rows:
            out.append("<tr>" + "".join(
                f'<td class="num">{v}</td>' if isinstance(v, int) else f"<td>{_e(str(v))}</td>"
                for v in row) + "</tr>")
        out.append("</tbody></table>")
        if cut:
            out.append(f'<p class="more">and {cut} more not shown</p>')
    out.append(f"</{tag}>")
    return "".join(out)


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _time(ts: float) -> str:
    millis = int(round(ts * 1000))
    secs, ms = divmod(millis, 1000)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(secs)) + f".{ms:03d} UTC"


def _secs(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.1f} s"


_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5em 2em; color: #1b1f24; }
header { border-bottom: 2px solid #27aae1; margin-bottom: 1em; }
h1 { margin: .6em 0 .1em; font-size: 1.5em; } h1 .name { font-weight: normal; color: #555; }
h2 { font-size: 1.15em; margin: 1.2em 0 .4em; } h3 { font-size: 1em; margin: 1em 0 .3em; }
.count { background: #e7f5fb; border-radius: 9px; padding: 0 .5em; font-size: .85em; }
.meta { color: #555; margin: 0 0 .6em; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25em .6em; border-bottom: 1px solid #e3e6ea; }
th { background: #f4f6f8; font-weight: 600; vertical-align: bottom; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:hover { background: #fafbfc; }
.empty, .more { color: #777; font-style: italic; margin: .2em 0; }
dl.clock { display: flex; flex-wrap: wrap; gap: .4em 2em; margin: 0; }
dl.clock dt { color: #555; font-size: .85em; } dl.clock dd { margin: 0; font-weight: 600; }
body.offline main { opacity: .45; }
"""
