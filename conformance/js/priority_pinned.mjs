// Priority groups through nats.js: a pinned_client consumer (pinned_ttl 2 s) read by two
// clients with the same group — the first to pull is pinned (Nats-Pin-Id), the other gets
// nothing; after jsm.consumers.unpin the other one can get pinned. An overflow consumer
// (min_pending): a request with min_pending above the pending count gets nothing, one at or
// below it gets messages. A pull without a group / with an unknown group is refused.
import { connect } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { URL, errInfo, recordStatus, scenario, sleep, uniq } from "./lib.mjs";

async function pull(c, opts) {
  const got = [];
  let error = null;
  const iter = await c.fetch({ expires: 1000, ...opts });
  const statuses = recordStatus(iter, ["next", "heartbeat", "discard"]);
  try {
    for await (const m of iter) {
      got.push({ seq: m.seq, pin: m.headers?.has("Nats-Pin-Id") ?? false });
      m.ack();
    }
  } catch (err) {
    error = errInfo(err);
  }
  return { got, error, statuses: statuses.map((s) => s.type === "debug" ? `${s.code} ${s.description}` : s.type) };
}

scenario("priority_pinned", async (nc) => {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const stream = uniq("PRIO");
  const p = stream.toLowerCase();
  await jsm.streams.add({ name: stream, subjects: [`${p}.>`] });
  const nc2 = await connect({ servers: URL, timeout: 3000, reconnect: false });
  const out = {};
  try {
    for (let i = 0; i < 10; i++) await js.publish(`${p}.x`, `m${i + 1}`);
    const ci = await jsm.consumers.add(stream, {
      durable_name: "pin", ack_policy: AckPolicy.Explicit, priority_groups: ["g"],
      priority_policy: "pinned_client", priority_timeout: 2_000_000_000 });
    out.config = { policy: ci.config.priority_policy, groups: ci.config.priority_groups,
                   timeout: ci.config.priority_timeout };
    const a = await js.consumers.get(stream, "pin");
    const b = await jetstream(nc2).consumers.get(stream, "pin");
    await jsm.consumers.add(stream, {
      durable_name: "ovf", ack_policy: AckPolicy.Explicit, priority_groups: ["g"],
      priority_policy: "overflow" });
    const o = await js.consumers.get(stream, "ovf");
    out.a1 = await pull(a, { max_messages: 2, group: "g" });
    // b is not pinned: its request just expires; meanwhile an overflow request whose
    // min_pending is above the pending count expires too
    [out.b1, out.ovf_high] = await Promise.all([
      pull(b, { max_messages: 2, group: "g" }),
      pull(o, { max_messages: 2, group: "g", min_pending: 50 }),
    ]);
    out.a2 = await pull(a, { max_messages: 2, group: "g" });
    const info = await jsm.consumers.info(stream, "pin");
    out.pinned_info = (info.priority_groups ?? []).map((g) => ({ group: g.group, pinned: Boolean(g.pinned_client_id) }));
    await jsm.consumers.unpin(stream, "pin", "g");
    out.b2 = await pull(b, { max_messages: 2, group: "g" });
    out.no_group = await pull(a, { max_messages: 1 }).catch((e) => ({ thrown: errInfo(e) }));
    out.bad_group = await pull(a, { max_messages: 1, group: "zz" }).catch((e) => ({ thrown: errInfo(e) }));
    out.ovf_low = await pull(o, { max_messages: 2, group: "g", min_pending: 5 });
  } finally {
    await jsm.streams.delete(stream).catch(() => {});
    await nc2.close();
  }
  return out;
});
