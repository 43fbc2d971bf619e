// An ordered push consumer (flow control, idle heartbeats) over 1000 messages; then its
// server-side consumer is deleted and replaced, from another connection, by one with the same
// name and deliver subject that starts the delivery sequence over at 1: a sequence gap. nats.js
// must spot the gap, delete that consumer, recreate its own from the next stream sequence, and
// deliver the rest (1000 more messages) once and in order.
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { URL, recordStatus, scenario, sleep, uniq, within } from "./lib.mjs";

const until = (ms, what, cond) => within(ms, what, (async () => { while (!(await cond())) await sleep(20); })());

scenario("ordered_push_gap", async (nc) => {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const stream = uniq("ORDPUSH");
  const p = stream.toLowerCase();
  await jsm.streams.add({ name: stream, subjects: [`${p}.>`] });
  const admin = await connect({ servers: URL, timeout: 3000, reconnect: false });
  const ajsm = await jetstreamManager(admin);
  const out = {};
  try {
    const publish = async (from, to) => {
      const acks = [];
      for (let i = from; i <= to; i++) acks.push(js.publish(`${p}.${i % 3}`, `m${i}`));
      await Promise.all(acks);
    };
    await publish(1, 1000);
    const c = await js.consumers.getPushConsumer(stream, { name_prefix: "op" });
    const first = await c.info(true);
    out.config = { ack_policy: first.config.ack_policy, flow_control: first.config.flow_control,
                   idle_heartbeat: first.config.idle_heartbeat, max_deliver: first.config.max_deliver,
                   name: first.name, push: typeof first.config.deliver_subject === "string" };
    const iter = await c.consume();
    const statuses = recordStatus(iter, ["next", "heartbeat"]);
    const got = [];
    const reader = (async () => {
      for await (const m of iter) {
        got.push([m.seq, m.info.deliverySequence, m.string() === `m${m.seq}`]);
        if (got.length === 2000) break;
      }
    })();
    await until(5000, "first 1000 messages", () => got.length >= 1000);
    // the gap: same name and deliver subject, delivery sequence back at 1
    await ajsm.consumers.delete(stream, first.name);
    await publish(1001, 1001);
    const impostor = { ...first.config, deliver_policy: "by_start_sequence", opt_start_seq: 1001 };
    await ajsm.consumers.add(stream, impostor);
    await until(5000, "recreated consumer", () => statuses.some((s) => s.type === "ordered_consumer_recreated"));
    const names = async () => (await ajsm.consumers.list(stream).next()).map((ci) => ci.name).sort();
    // the client deletes the consumer it saw the gap on; wait until that is done
    await until(3000, "replaced consumer gone", async () => !(await names()).includes(first.name));
    out.consumers_after_reset = await names();
    await publish(1002, 2000);
    await within(5000, "the rest of the messages", reader);
    await iter.close();
    out.count = got.length;
    out.in_order = got.every(([seq], i) => seq === i + 1);
    out.payloads_ok = got.every(([, , ok]) => ok);
    out.delivery_seqs = { first: got[0][1], at_1000: got[999][1], at_1001: got[1000][1], last: got[1999][1] };
    out.statuses = statuses.map((s) => s.type === "ordered_consumer_recreated" ? { ...s } : s);
  } finally {
    await jsm.streams.delete(stream).catch(() => {});
    await admin.close();
  }
  return out;
});
